"""Peak-RSS probe: run one operation in a fresh interpreter and report its time and memory.

Usage (by the harness): ``python -m benchmarks.probe '<json spec>'``; the last stdout line is a
JSON result.  Inputs are loaded first, then the peak-RSS mark is reset (Linux
``/proc/self/clear_refs`` = 5), so ``peak_rss - base_rss`` is the memory the operation itself
added.  ``maxrss`` is the process's lifetime peak (``getrusage(RUSAGE_SELF)``).
"""

from __future__ import annotations

import gc
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def _status_kib(key: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            m = re.search(rf"^{key}:\s+(\d+) kB", f.read(), re.M)
        return int(m.group(1)) if m else None
    except OSError:
        return None


def _maxrss_bytes() -> int:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024


def reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS; False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status_kib("VmHWM") is not None
    except OSError:
        return False


def current_rss() -> int:
    v = _status_kib("VmRSS")
    return v * 1024 if v is not None else _maxrss_bytes()


def peak_rss(reset_ok: bool) -> int:
    v = _status_kib("VmHWM") if reset_ok else None
    return v * 1024 if v is not None else _maxrss_bytes()


def _run(spec: dict) -> dict:
    import numpy as np
    import pyarrow as pa

    from benchmarks import adapters, datasets

    adapter = adapters.make_adapter(spec["lib"], spec.get("version"), spec.get("parquet_row_group_rows", 131072))
    op = spec["op"]
    path = Path(spec["path"])
    table = datasets.load_arrow(spec["source"]) if op == "write" else None
    adapter.load()
    # pyarrow's first numpy conversion imports pandas (~0.2 s), which pylance's import (just above) also
    # did: warm it for every library alike, so the clock measures the library, not pyarrow's set-up
    pa.array(np.zeros(1))
    handle: adapters.Handle | None = None
    if op in ("scan", "take", "range", "iter_batches"):
        handle = adapter.open(path)
    gc.collect()
    ok = reset_peak()
    base = current_rss()
    t0 = time.perf_counter()
    rows = 0
    if op == "write":
        adapter.write(table, path)
        rows = table.num_rows
    elif op == "stream_write":
        batches = datasets.synthetic_batches_until(
            int(spec["stream_bytes"]), int(spec.get("seed", 42)), int(spec.get("batch_rows", datasets.BATCH_ROWS))
        )
        counted = _Counted(batches)
        adapter.write_stream(datasets.SYNTHETIC_SCHEMA, counted, path)
        rows, spec["arrow_bytes"] = counted.rows, counted.nbytes
    elif op == "scan":
        rows = handle.scan().num_rows
    elif op == "take":
        rows = handle.take(spec["indices"], None).num_rows
    elif op == "range":
        rows = handle.read_range(int(spec["start"]), int(spec["num_rows"]), None).num_rows
    elif op == "iter_batches":
        for b in handle.iter_batches(int(spec.get("batch_size", 65536))):
            rows += b.num_rows
    else:
        raise ValueError(f"unknown op {op!r}")
    seconds = time.perf_counter() - t0
    peak = peak_rss(ok)
    out = {"seconds": seconds, "rows": rows, "base_rss": base, "peak_rss": peak, "delta_rss": max(0, peak - base)}
    out.update(maxrss=_maxrss_bytes(), hwm_reset=ok)
    if "arrow_bytes" in spec:
        out["arrow_bytes"] = spec["arrow_bytes"]
    if op in ("write", "stream_write"):
        out["file_bytes"] = path.stat().st_size
    return out


class _Counted:
    """Passes batches through, counting rows and Arrow bytes."""

    def __init__(self, batches) -> None:
        self._batches = batches
        self.rows = 0
        self.nbytes = 0

    def __iter__(self):
        for b in self._batches:
            self.rows += b.num_rows
            self.nbytes += b.nbytes
            yield b


def main(argv: list[str] | None = None) -> int:
    spec = json.loads((argv if argv is not None else sys.argv[1:])[0])
    from benchmarks.adapters import Skip

    try:
        out = _run(spec)
    except Skip as e:
        out = {"skip": str(e)}
    except Exception as e:
        out = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out))
    return 0


def run_probe(spec: dict, timeout: float | None = None) -> dict:
    """Run one probe in a fresh interpreter (the parent side); returns its JSON result."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "benchmarks.probe", json.dumps(spec)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(REPO_ROOT), timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        return {"error": f"probe exited with {p.returncode}: {' | '.join(tail)}"}
    return json.loads(lines[-1])


if __name__ == "__main__":
    sys.exit(main())
