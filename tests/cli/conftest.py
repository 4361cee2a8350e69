"""Shared set-up of the tests of the command line, the docs, the benchmarks' harness and the packaging: the
repository's benchmarks/ package and scripts/ modules are importable (neither is installed).  Standard library
only: tests/cli/test_smoke_min.py also runs in the minimal venvs (make smoke-min)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT, ROOT / "scripts"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
