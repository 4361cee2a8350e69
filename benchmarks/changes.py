"""Changing data in place: lancelot vs pylance on TPC-H lineitem written by pylance (issue 30).

Each repetition gives each library a fresh hard-linked clone of the same dataset (built once by
pylance, several fragments) and times one operation on it, the libraries interleaved in a
rotating order:

- ``merge_insert``: an upsert on (l_orderkey, l_linenumber) of ``--source-rows`` rows, half
  matching existing rows, half new;
- ``update``: ``l_linenumber + 10`` on about 1% of the rows (``l_orderkey % 100 = 7``);
- ``add_columns``: one SQL-computed column (``l_partkey + l_suppkey``).

Each library runs each operation ``--warmups`` times untimed first (imports, the OS's file cache,
lancelot's kernels of the operation's own paths getting hot); before that,
lancelot is brought to its steady state as the other benchmarks do (``steady``: untimed appends,
full reads and takes until its numpy paths have handed over to their numba kernels,
``jit.HOT_CALLS`` calls each;
``--cold-kernels`` skips it and times the numpy paths of a short-lived process).  The first
timed run's results are checked equal between the libraries (row counts and stats).
Prints medians and the lancelot / pylance ratios, of the wall time and of the process's CPU time
(every thread's: on a loaded machine the wall time mostly measures the scheduler).

``--settle`` waits before each timed call (the other library's threads may still be busy).

    python -m benchmarks.changes [--sf 0.1] [--fragments 4] [--repeats 3] [--ops update] [--warmups 4]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from benchmarks.datasets import tpch_lineitem

DEFAULT_DATA_DIR = Path(__file__).parent / "data"
OPS = ("merge_insert", "update", "add_columns")


def build(data_dir: Path, sf: float, fragments: int) -> tuple[Path, pa.Table]:
    import lance

    src = tpch_lineitem(data_dir, sf)
    opts = pa.ipc.IpcReadOptions(ensure_alignment=pa.ipc.Alignment.At64Byte)
    with pa.OSFile(str(src.arrow_path), "rb") as f:
        table = pa.ipc.open_file(f, options=opts).read_all()
    path = data_dir / f"changes-tpch-sf{sf:g}-f{fragments}"
    if not path.exists():
        lance.write_dataset(table, str(path), max_rows_per_file=-(-table.num_rows // fragments))
    return path, table


def source(table: pa.Table, n: int) -> pa.Table:
    """``n`` rows: half copies of existing rows (changed quantity), half with new order keys."""
    rng = np.random.default_rng(7)
    half = n // 2
    old = table.take(pa.array(rng.choice(table.num_rows, half, replace=False)))
    new = table.slice(0, n - half)
    top = int(np.max(table.column("l_orderkey").to_numpy())) + 1
    new = new.set_column(0, table.schema.field(0), pa.array(new.column("l_orderkey").to_numpy() + top))
    return pa.concat_tables([old, new]).combine_chunks()


def steady(table: pa.Table, scratch: Path, rows: int = 4096) -> None:
    """Untimed lancelot appends of ``rows`` rows, ``jit.HOT_CALLS`` + 1 of them, then as many full
    reads and takes of the result, then waits for the kernels' background preparation: a
    long-running process's state (the writer's and the reader's numpy paths, e.g. FSST training or
    bit unpacking, have handed over to their kernels, as the read benchmarks' steady calls do)."""
    import lancelot
    from lancelot.util import jit

    shutil.rmtree(scratch, ignore_errors=True)
    chunk = table.slice(0, rows)
    for _ in range(jit.HOT_CALLS + 1):
        lancelot.write_dataset(chunk, str(scratch), mode="append")
    ds = lancelot.dataset(str(scratch))
    some = np.arange(0, ds.count_rows(), 97)
    for _ in range(jit.HOT_CALLS + 1):
        ds.to_table()
        ds.take(some)
    jit.wait_for_warm_ups()
    shutil.rmtree(scratch, ignore_errors=True)


def clone(src: Path, dst: Path) -> str:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, copy_function=os.link)
    return str(dst)


def ops(src: pa.Table) -> dict[str, Callable[[Any], Any]]:
    return {
        "merge_insert": lambda ds: (
            ds.merge_insert(["l_orderkey", "l_linenumber"])
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(src)
        ),
        "update": lambda ds: ds.update({"l_linenumber": "l_linenumber + 10"}, where="l_orderkey % 100 = 7"),
        "add_columns": lambda ds: ds.add_columns({"l_sum": "l_partkey + l_suppkey"}),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=0.1)
    ap.add_argument("--fragments", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--source-rows", type=int, default=10_000)
    ap.add_argument("--ops", nargs="*", default=list(OPS), choices=OPS)
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--cold-kernels", action="store_true", help="no steady-state warm-up of lancelot's kernels")
    ap.add_argument("--warmups", type=int, default=1, help="untimed calls of each operation per library first")
    ap.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="seconds to wait before each timed call, so that the other library's threads still busy after "
        "its call (the process's CPU time counts them) are done",
    )
    args = ap.parse_args()

    import lance

    import lancelot

    path, table = build(args.data_dir, args.sf, args.fragments)
    src = source(table, args.source_rows)
    libs = {"lancelot": lancelot.dataset, "pylance": lance.dataset}
    work = args.data_dir / "changes-work"
    if not args.cold_kernels:
        steady(table, work / "steady")
    kernels = "cold (numpy paths)" if args.cold_kernels else "steady"
    print(
        f"TPC-H lineitem SF{args.sf:g}: {table.num_rows} rows, {args.fragments} fragments; repeats {args.repeats}; "
        f"source {args.source_rows} rows; lancelot kernels {kernels}"
    )
    for op in args.ops:
        fn = ops(src)[op]
        times: dict[str, list[float]] = {k: [] for k in libs}
        cpu: dict[str, list[float]] = {k: [] for k in libs}  # the process's CPU time, every thread's
        results: dict[str, Any] = {}
        for _ in range(args.warmups):  # untimed: imports, JIT kernels (hot after a few calls), the OS's file cache
            for lib in libs:
                fn(libs[lib](clone(path, work / lib)))
        for r in range(args.repeats):
            order = list(libs)[r % 2 :] + list(libs)[: r % 2]
            for lib in order:
                uri = clone(path, work / lib)
                ds = libs[lib](uri)
                if args.settle:
                    time.sleep(args.settle)
                t0, c0 = time.perf_counter(), time.process_time()
                out = fn(ds)
                times[lib].append(time.perf_counter() - t0)
                cpu[lib].append(time.process_time() - c0)
                if r == 0:
                    results[lib] = (out, lance.dataset(uri).count_rows(), lance.dataset(uri).version)
        same = results["lancelot"] == results["pylance"]
        a, b = statistics.median(times["lancelot"]), statistics.median(times["pylance"])
        ca, cb = statistics.median(cpu["lancelot"]), statistics.median(cpu["pylance"])
        print(
            f"{op:13s} lancelot {a * 1000:8.1f} ms  pylance {b * 1000:8.1f} ms  ratio {a / b:5.2f}x"
            f"   cpu: lancelot {ca * 1000:7.1f} ms  pylance {cb * 1000:7.1f} ms  ratio {ca / cb:5.2f}x"
            f"{'' if same else '  RESULTS DIFFER: ' + repr(results)}"
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
