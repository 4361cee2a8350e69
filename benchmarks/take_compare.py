"""Takes of new rows on every call, per table and per column: lancelot against pylance and Parquet.

    .venv/bin/python -m benchmarks.take_compare                       # TPC-H orders + constants, 2.0-2.2
    .venv/bin/python -m benchmarks.take_compare --datasets tpch-orders --versions 2.2 --reps 31

For each dataset and version the table is written by pylance (``LanceFileWriter``) and as Parquet
with pyarrow's default row groups (cached under ``benchmarks/data/take_compare/``). lancelot is
first brought to its steady state (untimed takes until its few-row numpy paths have handed over to
their numba kernels; before the full reads, untimed full reads likewise). Every repetition draws new
rows (``--rows`` of them: random over the file, or clustered in a window of 1,000 rows) and runs
lancelot (``LanceFile.take`` on pylance's file), pylance (``take_rows``) and Parquet (only the row
groups holding the rows) on the same rows, in an order where each follows each other equally often
(``measure.balanced_order``); the table prints medians and the ratios of medians, for all columns and for each
column alone, plus full reads (lancelot ``read`` against pylance ``read_all``, interleaved,
``--scan-reps`` of them or more until ``--scan-seconds``; of each column alone too with
``--scan-columns``). Readers are opened
once, before timing. Results go to ``benchmarks/results/take_compare.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from benchmarks import adapters, datasets
from benchmarks.measure import balanced_order

BENCH_DIR = Path(__file__).resolve().parent
IMPLS = ("lancelot", "pylance", "parquet")


def _files(ds: datasets.Dataset, version: str, work: Path) -> tuple[Path, Path]:
    from lance.file import LanceFileWriter

    lance_path = work / f"{ds.name}-{version}.lance"
    pq_path = work / f"{ds.name}.parquet"
    table = None
    if not lance_path.exists():
        table = ds.load()
        tmp = lance_path.with_suffix(".tmp")
        with LanceFileWriter(str(tmp), version=version) as w:
            for b in table.to_batches(max_chunksize=datasets.BATCH_ROWS):
                w.write_batch(b)
        os.replace(tmp, lance_path)
    if not pq_path.exists():
        table = table if table is not None else ds.load()
        pq.write_table(table, str(pq_path))  # pyarrow's default row groups
    return lance_path, pq_path


def _rows(rng: np.random.Generator, n: int, k: int, clustered: bool) -> np.ndarray:
    if clustered:
        start = int(rng.integers(0, max(n - 1000, 1)))
        return np.sort(start + rng.choice(min(1000, n), min(k, n), replace=False))
    return np.sort(rng.choice(n, min(k, n), replace=False))


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def measure_takes(
    handles: dict, n: int, columns: list[str] | None, k: int, reps: int, clustered: bool, seed: int
) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    times: dict[str, list[float]] = {i: [] for i in handles}
    for rep in range(reps):
        rows = _rows(rng, n, k, clustered)
        for impl in balanced_order(list(handles), rep):
            times[impl].append(_time(lambda h=handles[impl], rows=rows: h.take(rows, columns)))
    return times


def _steady(handle, n: int, names: list[str]) -> None:
    """Untimed: enough lancelot takes (all columns and each alone) for its few-row numpy paths to get
    hot, then wait for their kernels' background preparation: the timed calls are steady state
    (the first calls of a fresh process are benchmarks/cold_start.py's subject)."""
    from lancelot.util import jit

    rng = np.random.default_rng(99)
    for _ in range(jit.HOT_CALLS):
        for columns in (None, *([c] for c in names)):
            handle.take(_rows(rng, n, 10, False), columns)
    jit.wait_for_warm_ups()


def _steady_scans(handle, min_seconds: float = 2.0) -> None:
    """Untimed: full reads until they start no new background kernel preparation, so the timed
    reads are steady state too (a first scan in a fresh process is benchmarks/cold_start.py's
    subject).  A scan's numpy paths hand over to their kernels after ``jit.HOT_CALLS`` calls or
    their ``warm_work`` (16-256 MiB, by path): a small table reaches neither in a few scans, so a
    round that starts nothing ends the warm-up only after ``HOT_CALLS`` rounds or ``min_seconds``
    of scans."""
    from lancelot.util import jit

    start = time.perf_counter()
    for rounds in range(1, jit.HOT_CALLS + 2):
        before = len(jit._THREADS)
        handle.scan(None)
        jit.wait_for_warm_ups()
        quiet = len(jit._THREADS) == before
        if quiet and (rounds > jit.HOT_CALLS or time.perf_counter() - start >= min_seconds):
            return


def _summary(times: dict[str, list[float]]) -> dict:
    med = {i: statistics.median(t) for i, t in times.items()}
    out = {f"{i}_ms": med[i] * 1e3 for i in med}
    for other in ("pylance", "parquet"):
        if other in med and med[other] > 0:
            out[f"x_{other}"] = med["lancelot"] / med[other]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="benchmarks.take_compare", description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default="tpch-orders,constants")
    p.add_argument("--versions", default="2.0,2.1,2.2")
    p.add_argument("--rows", type=int, default=10, help="rows per take (default 10)")
    p.add_argument("--reps", type=int, default=21)
    p.add_argument("--scan-reps", type=int, default=3)
    p.add_argument(
        "--scan-seconds",
        type=float,
        default=1.0,
        help="full reads go on past --scan-reps until they took this long (a small table's read takes ~1 ms: "
        "a median of 7 would say little), up to 1001 per library",
    )
    p.add_argument("--scan-columns", action="store_true", help="also a full read of each column alone")
    p.add_argument("--constants-rows", type=int, default=1_000_000)
    p.add_argument("--no-per-column", action="store_true")
    p.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data")
    p.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "take_compare.json")
    a = p.parse_args(argv)
    work = a.data_dir / "take_compare"
    work.mkdir(parents=True, exist_ok=True)
    results: dict = {"meta": {"argv": argv, "loadavg_start": os.getloadavg(), "rows": a.rows, "reps": a.reps}}
    for name in [d for d in a.datasets.split(",") if d]:
        if name == "constants":
            ds = datasets.constants(a.data_dir, a.constants_rows)
        elif name.startswith("tpch-"):
            ds = datasets.tpch_table(a.data_dir, 1.0, name.removeprefix("tpch-"))
        else:
            ds = datasets.synthetic(a.data_dir, a.constants_rows)
        for version in [v for v in a.versions.split(",") if v]:
            lance_path, pq_path = _files(ds, version, work)
            handles = {
                "lancelot": adapters.LancelotHandle(lance_path),
                "pylance": adapters.PylanceHandle(lance_path),
                "parquet": adapters.ParquetHandle(pq_path),
            }
            n = handles["lancelot"].num_rows
            _steady(handles["lancelot"], n, ds.schema.names)
            key = f"{ds.name} {version}"
            res = results[key] = {}
            cols = [None] + ([] if a.no_per_column else [[c] for c in ds.schema.names])
            for clustered in (False, True):
                for columns in cols:
                    if columns is not None and clustered:
                        break  # clustered takes: all columns only
                    label = ("clustered " if clustered else "random ") + ("ALL" if columns is None else columns[0])
                    times = measure_takes(handles, n, columns, a.rows, a.reps, clustered, seed=len(res))
                    res[label] = _summary(times)
                    s = res[label]
                    print(
                        f"{key:28} {label:30} lancelot {s['lancelot_ms']:8.3f} ms  pylance {s['pylance_ms']:8.3f} "
                        f"ms  parquet {s['parquet_ms']:9.3f} ms  x pylance {s['x_pylance']:5.2f}  "
                        f"x parquet {s['x_parquet']:6.3f}",
                        flush=True,
                    )
            _steady_scans(handles["lancelot"])
            for columns in [None] + ([[c] for c in ds.schema.names] if a.scan_columns else []):
                scans: dict[str, list[float]] = {"lancelot": [], "pylance": []}
                began, rep = time.perf_counter(), 0
                while rep < a.scan_reps or (time.perf_counter() - began < a.scan_seconds and rep < 1001):
                    for impl in ("lancelot", "pylance") if rep % 2 == 0 else ("pylance", "lancelot"):
                        scans[impl].append(_time(lambda h=handles[impl], c=columns: h.scan(c)))
                    rep += 1
                label = "full read" + ("" if columns is None else f" {columns[0]}")
                res[label] = s = _summary(scans)
                print(
                    f"{key:28} {label:30} lancelot {s['lancelot_ms']:8.1f} ms  pylance {s['pylance_ms']:8.1f} ms"
                    f"  x pylance {s['x_pylance']:5.2f}",
                    flush=True,
                )
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(json.dumps(results, indent=1))
    results["meta"]["loadavg_end"] = os.getloadavg()
    a.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
