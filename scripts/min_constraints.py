"""Print a pip constraints file pinning every dependency to its lowest declared version.

Reads pyproject.toml: each ``name>=X`` of the core dependencies and of the extras named on
the command line becomes ``name==X`` (the lowest version lancelot claims to work with), so a
venv installed with ``pip install -c <this> -e '.[spark]'`` proves the claims (Makefile's
``smoke-min`` step; the test oracle pylance 14.0.2 is installed beside them).
Usage: ``python scripts/min_constraints.py [extra ...] > constraints.txt``;
``python scripts/min_constraints.py --check constraints.txt [--absent name ...]`` checks a venv
holds exactly those (and none of the ``--absent`` distributions: the core venv has no pandas).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
_REQ = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(?:\[[^\]]*\])?\s*([^;]*)")


def lowest_pins(requirements: list[str]) -> dict[str, str]:
    """``name -> version`` for every requirement with a ``>=`` or ``==`` lower bound."""
    pins: dict[str, str] = {}
    for req in requirements:
        m = _REQ.match(req)
        if not m:
            continue
        name, spec = m.group(1).lower(), m.group(2)
        for clause in spec.split(","):
            clause = clause.strip()
            if clause.startswith((">=", "==")):
                version = clause[2:].strip()
                # the highest of several lower bounds of one name (core and extra) is the real floor
                old = pins.get(name)
                if old is None or _key(version) > _key(old):
                    pins[name] = version
    return pins


def _key(version: str) -> tuple:
    """A comparable release tuple; trailing zeros do not count (2024.2 == 2024.2.0)."""
    parts = [int(p) if p.isdigit() else 0 for p in version.split(".")]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def check(constraints: str, absent: list[str] | None = None) -> int:
    """Exit status 0 if every pin of the ``constraints`` file is what is installed and no ``absent``
    distribution is installed (else list the others)."""
    from importlib.metadata import PackageNotFoundError, version

    bad = []
    absent = absent or []
    for name in absent:
        try:
            bad.append(f"{name}: want none, installed {version(name)}")
        except PackageNotFoundError:
            pass
    for line in Path(constraints).read_text().split():
        name, want = line.split("==")
        try:
            have = version(name)
        except PackageNotFoundError:
            have = None
        if have is None or _key(have) != _key(want):
            bad.append(f"{name}: want {want}, installed {have}")
    pins = " ".join(Path(constraints).read_text().split())
    print(
        "\n".join(bad)
        if bad
        else f"lowest versions installed: {pins}" + (f"; absent: {' '.join(absent)}" if absent else "")
    )
    return 1 if bad else 0


def main(extras: list[str]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in extras:
        reqs += project["optional-dependencies"][extra]
    for name, version in sorted(lowest_pins(reqs).items()):
        v = version if version.count(".") >= 1 else version + ".0"
        print(f"{name}=={v}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check"]:
        rest = sys.argv[3:]
        sys.exit(check(sys.argv[2], rest[1:] if rest[:1] == ["--absent"] else []))
    main(sys.argv[1:])
