"""Print a pip constraints file pinning every dependency to its lowest declared version.

Reads pyproject.toml: each ``name>=X`` of the core dependencies and of the extras named on
the command line becomes ``name==X`` (the lowest version lancelot claims to work with), so a
venv installed with ``pip install -c <this> -e '.[spark]'`` proves the claims (Makefile's
``smoke-min`` step).  Pins for the test oracle (pylance) come from the ``dev`` extra as they
are (``==``).  Usage: ``python scripts/min_constraints.py [extra ...] > constraints.txt``.
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
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.]", version))


def main(extras: list[str]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in extras:
        reqs += project["optional-dependencies"][extra]
    for name, version in sorted(lowest_pins(reqs).items()):
        v = version if version.count(".") >= 1 else version + ".0"
        print(f"{name}=={v}")


if __name__ == "__main__":
    main(sys.argv[1:])
