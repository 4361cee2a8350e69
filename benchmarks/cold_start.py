"""What the first call costs in a fresh process: lancelot (empty and warm numba cache) against pylance.

Every measurement is a new Python process that imports the library and does one thing:

* ``take``: import, open a Lance 2.2 file written by pylance, take 3 random rows (all columns);
* ``scan``: import, open the same kind of file (``--rows`` rows), read it whole;
* ``scans``: import, then open, read whole and close that file five times (what a dataset scan of
  its first fragments does: every open-and-read is a first read of a freshly opened file);
* ``write``: import, write a ``--rows``-row table as a Lance 2.2 file (the table is loaded from
  Arrow IPC before the clock starts; pyarrow is imported by both libraries and so not timed).

Implementations, interleaved (every repetition runs each once, in ``measure.balanced_order``):
``lancelot-empty`` (``NUMBA_CACHE_DIR`` a new empty directory: a fresh install, a new Spark
executor, a container), ``lancelot-warm`` (a cache directory warmed by an untimed run of each
case) and ``pylance``.  The time is measured inside the process from before the library's
import to the end of the operation (interpreter start-up excluded, the same for both);
the table prints medians and the ratios of medians to pylance, and the same for the process's CPU
time (all threads; steadier than wall time on a loaded machine).  Children may write bytecode
caches (``PYTHONDONTWRITEBYTECODE`` is dropped), as a pip install compiles them.

    .venv/bin/python -m benchmarks.cold_start                 # TPC-H orders (200k rows), 5 repetitions
    .venv/bin/python -m benchmarks.cold_start --reps 3 --dataset constants
    .venv/bin/python -m benchmarks.cold_start --cases scans --dataset part --rows 200000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.measure import balanced_order

BENCH_DIR = Path(__file__).resolve().parent
IMPLS = ("lancelot-empty", "lancelot-warm", "pylance")
CASES = ("take", "scan", "scans", "write")

_CHILD = r"""
import json, sys, time
import numpy as np, pyarrow as pa
impl, case, path, arrow, out, seed = sys.argv[1:7]
if case == "write":
    with pa.memory_map(arrow) as f:
        table = pa.ipc.open_file(f).read_all()
    table = table.combine_chunks()
t0, c0 = time.perf_counter(), time.process_time()
if impl == "pylance":
    import lance.file
    t1 = time.perf_counter()
    if case == "write":
        with lance.file.LanceFileWriter(out, version="2.2") as w:
            w.write_batch(table)
    else:
        for _ in range(5 if case == "scans" else 1):
            r = lance.file.LanceFileReader(path)
            if case == "take":
                n = r.metadata().num_rows
                rows = np.sort(np.random.default_rng(int(seed)).choice(n, 3, replace=False))
                res = r.take_rows(rows.tolist()).to_table()
            else:
                res = r.read_all().to_table()
            del r
else:
    import lancelot
    t1 = time.perf_counter()
    if case == "write":
        lancelot.write_table(table, out, version="2.2")
    else:
        for _ in range(5 if case == "scans" else 1):
            with lancelot.LanceFile(path) as f:
                if case == "take":
                    rows = np.sort(np.random.default_rng(int(seed)).choice(f.num_rows, 3, replace=False))
                    res = f.take(rows)
                else:
                    res = f.read()
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({"import": t1 - t0, "op": t2 - t1, "total": t2 - t0, "cpu": c2 - c0,
                  "numba": "numba" in sys.modules}))
"""


def prepare(data_dir: Path, dataset: str, rows: int, work: Path, log=print) -> tuple[Path, Path, Path]:
    """(the big file for takes, the ``rows``-row file for scans, the ``rows``-row Arrow IPC table)."""
    import lance.file
    import pyarrow as pa

    from benchmarks import datasets

    if dataset in ("orders", "part", "lineitem"):
        ds = datasets.tpch_table(data_dir, 1.0, dataset, log=log)
    elif dataset == "constants":
        ds = datasets.constants(data_dir, max(rows, 1_000_000), log=log)
    else:
        ds = datasets.synthetic(data_dir, max(rows, 1_000_000), log=log)
    table = ds.load()
    big, small = work / f"{ds.name}-2.2.lance", work / f"{ds.name}-{rows}-2.2.lance"
    arrow = work / f"{ds.name}-{rows}.arrow"
    part = table.slice(0, rows)
    for path, t in ((big, table), (small, part)):
        if not path.exists():
            with lance.file.LanceFileWriter(str(path), version="2.2") as w:
                w.write_batch(t)
    if not arrow.exists():
        with pa.OSFile(str(arrow), "wb") as f, pa.ipc.new_file(f, part.schema) as w:
            w.write_table(part)
    return big, small, arrow


def run_once(impl: str, case: str, files: tuple[Path, Path, Path], cache_dir: Path, out: Path, seed: int) -> dict:
    big, small, arrow = files
    env = dict(os.environ)
    # bytecode caches as after a pip install (the untimed warm-up runs write lancelot's): a process that
    # may not write them recompiles every changed module on every start
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if impl.startswith("lancelot"):
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    path = big if case == "take" else small
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, impl.split("-")[0], case, str(path), str(arrow), str(out), str(seed)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{impl} {case} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="benchmarks.cold_start", description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", choices=("orders", "part", "lineitem", "constants", "synthetic"), default="orders")
    p.add_argument("--rows", type=int, default=200_000, help="rows of the written and scanned table")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data")
    p.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "cold_start.json")
    a = p.parse_args(argv)
    cases = [c for c in a.cases.split(",") if c]
    work = a.data_dir / "cold_start"
    work.mkdir(parents=True, exist_ok=True)
    files = prepare(a.data_dir, a.dataset, a.rows, work)
    samples: dict[str, dict[str, list[dict]]] = {c: {i: [] for i in IMPLS} for c in cases}
    with tempfile.TemporaryDirectory(prefix="cold_start_") as tmp:
        tmp = Path(tmp)
        warm = tmp / "warm-cache"
        for case in cases:  # untimed: warm the shared cache
            run_once("lancelot-warm", case, files, warm, tmp / "w.lance", 0)
        for rep in range(a.reps):
            for case in cases:
                for impl in balanced_order(list(IMPLS), rep):
                    empty = tmp / f"empty-{rep}-{case}"
                    cache = warm if impl == "lancelot-warm" else empty
                    out = tmp / f"out-{impl}.lance"
                    res = run_once(impl, case, files, cache, out, 1000 + rep)
                    samples[case][impl].append(res)
                    shutil.rmtree(empty, ignore_errors=True)
                    if out.exists():
                        out.unlink()
            print(f"rep {rep + 1}/{a.reps} done", file=sys.stderr)
    summary = {}
    lines = [
        f"{'case':6} {'implementation':15} {'median s':>9} {'import s':>9} {'x pylance':>10} {'cpu s':>7} "
        f"{'cpu x':>6} numba imported"
    ]
    for case in cases:
        med = {i: statistics.median(s["total"] for s in samples[case][i]) for i in IMPLS}
        cpu = {i: statistics.median(s["cpu"] for s in samples[case][i]) for i in IMPLS}
        summary[case] = {}
        for impl in IMPLS:
            imp = statistics.median(s["import"] for s in samples[case][impl])
            ratio = med[impl] / med["pylance"]
            loaded = any(s["numba"] for s in samples[case][impl])
            summary[case][impl] = {
                "median_s": med[impl],
                "import_median_s": imp,
                "ratio_to_pylance": ratio,
                "cpu_median_s": cpu[impl],
                "cpu_ratio_to_pylance": cpu[impl] / cpu["pylance"],
                "numba_imported": loaded,
            }
            lines.append(
                f"{case:6} {impl:15} {med[impl]:9.3f} {imp:9.3f} {ratio:10.2f} {cpu[impl]:7.3f} "
                f"{cpu[impl] / cpu['pylance']:6.2f} {loaded}"
            )
    print("\n".join(lines))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "dataset": a.dataset,
        "rows": a.rows,
        "reps": a.reps,
        "loadavg": os.getloadavg(),
        "command": " ".join([sys.executable, "-m", "benchmarks.cold_start", *(argv or sys.argv[1:])]),
    }
    a.out.write_text(json.dumps({"meta": meta, "summary": summary, "samples": samples}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
