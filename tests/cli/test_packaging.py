"""Dependency bounds that hold: the generated protobuf modules load on the declared
lowest protobuf, `make test` runs the smoke tests on the lowest versions, Java is checked before
anything heavy is installed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import min_constraints  # scripts/ (tests/cli/conftest.py puts it on sys.path)
import tomllib

ROOT = Path(__file__).resolve().parents[2]


def _deps() -> list[str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]


def _bound(name: str, op: str) -> tuple[int, ...]:
    spec = next(d for d in _deps() if re.match(rf"{name}\b", d))
    m = re.search(rf"{re.escape(op)}\s*([\d.]+)", spec)
    assert m, f"{name} has no {op} bound: {spec}"
    return tuple(int(x) for x in m.group(1).split("."))


def test_protobuf_gencode_is_the_declared_lower_bound():
    """Generated code refuses runtimes older than its gencode: the gencode must be the lower bound."""
    low = _bound("protobuf", ">=")
    high = _bound("protobuf", "<")
    files = sorted((ROOT / "lancelot" / "format" / "pb").glob("*_pb2.py"))
    assert files
    for f in files:
        m = re.search(r"# Protobuf Python Version: ([\d.]+)", f.read_text())
        assert m, f
        gencode = tuple(int(x) for x in m.group(1).split("."))
        assert gencode == low + (0,) * (3 - len(low)), (f.name, gencode, low)
        # gencode of major N is supported by runtimes N and N+1: the upper bound is the next-but-one major
        assert high == (gencode[0] + 2,), high
    protos = sorted(p.stem for p in (ROOT / "lancelot" / "format" / "protos").glob("*.proto"))
    assert sorted(f.name.removesuffix("_pb2.py") for f in files) == protos  # every .proto has its module


def test_min_constraints_pin_every_lower_bound():
    pins = min_constraints.lowest_pins(_deps() + ["pyspark[connect]>=4.1", "pandas>=2.2,<3"])
    for name in ("pyarrow", "numpy", "protobuf", "fsspec", "numba", "tqdm"):
        assert name in pins, name
    assert pins["pyspark"] == "4.1"
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "min_constraints.py"), "spark"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert f"protobuf=={'.'.join(map(str, _bound('protobuf', '>=')))}" in out
    assert any(line.startswith("pyspark==4.1") for line in out)


def _dry_run(target: str) -> list[str]:
    p = subprocess.run(["make", "-n", "-B", "-C", str(ROOT), target], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return [ln for ln in p.stdout.splitlines() if ln.strip()]


def test_java_is_checked_before_anything_heavy_is_installed():
    for target in ("demo", "test"):
        lines = _dry_run(target)
        java = next(i for i, ln in enumerate(lines) if "ensure_java.sh" in ln)
        installs = [i for i, ln in enumerate(lines) if "pip install" in ln or " -m venv" in ln]
        assert installs and java < min(installs), (target, lines[:6])


def test_make_test_runs_the_smoke_tests_on_the_lowest_versions():
    lines = _dry_run("smoke-min")
    text = "\n".join(lines)
    assert "min_constraints.py spark > .venv-min/constraints.txt" in text
    assert "-c .venv-min/constraints.txt -e '.[spark]'" in text and "pylance==14.0.2" in text
    assert "min_constraints.py --check .venv-min/constraints.txt" in text
    assert "-m smoke" in text
    assert any("smoke-min" in ln for ln in _dry_run("test"))
