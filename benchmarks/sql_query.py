"""``LanceDataset.sql`` against pylance's ``ds.sql`` (DataFusion) on TPC-H lineitem.

One dataset written by pylance (``--fragments`` fragments) in a scratch directory, opened by both
libraries.  Each query runs through ``ds.sql(q).build().to_stream_reader().read_all()``; the first
run of each side is compared (schema and rows; a fast wrong answer is reported as such), then the
sides alternate (each repetition runs both, in a rotating order), after untimed warm-up calls (of lancelot
until its kernels are prepared: ``_warm``).  Printed per query: the median
process CPU time (all threads: pylance's Rust threads included) and wall time of each side, and
lancelot's ratios.  The machine may be shared: quote the CPU ratios.

    python -m benchmarks.sql_query [--sf 0.1] [--fragments 4] [--repeats 9] [--warm 3] [--queries filter_project,...]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from benchmarks.dataset_bench import DEFAULT_DATA_DIR
from benchmarks.datasets import tpch_lineitem

QUERIES = {
    "project": "SELECT l_quantity * 2 AS q2, l_shipdate FROM dataset",
    "filter_project": "SELECT l_orderkey, l_quantity, l_extendedprice * (1 - l_discount) AS revenue FROM dataset "
    "WHERE l_shipdate >= date '1995-01-01' AND l_quantity < 10",
    "group_by": "SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, sum(l_extendedprice) AS sum_price, "
    "avg(l_discount) AS avg_disc, count(*) AS n FROM dataset WHERE l_shipdate <= date '1998-09-02' "
    "GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus",
    "group_by_many": "SELECT l_suppkey, count(*) AS n, max(l_shipdate) AS last FROM dataset GROUP BY l_suppkey "
    "ORDER BY n DESC, l_suppkey LIMIT 20",
    "order_limit": "SELECT l_orderkey, l_extendedprice FROM dataset ORDER BY l_extendedprice DESC, l_orderkey LIMIT 10",
    "case_when": "SELECT l_shipmode, sum(CASE WHEN l_quantity > 25 THEN 1 ELSE 0 END) AS big FROM dataset "
    "GROUP BY l_shipmode ORDER BY l_shipmode",
    "limit": "SELECT * FROM dataset WHERE l_quantity > 45 LIMIT 20",
    "limit_offset": "SELECT l_orderkey, l_partkey, l_comment FROM dataset WHERE l_quantity > 45 LIMIT 20 OFFSET 30000",
}


def _same(a: pa.Table, b: pa.Table, ordered: bool) -> bool:
    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    if ordered:
        return bool(a.equals(b))
    key = [(n, "ascending") for n in a.schema.names]
    return bool(a.sort_by(key).equals(b.sort_by(key)))


def _measure(call: Callable[[], object]) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    call()
    return time.process_time() - c0, time.perf_counter() - w0


def _warm(calls: dict[str, Callable[[], object]], warm: int) -> None:
    """Untimed calls first: ``warm`` of each side, and of lancelot as many more as get its paths' kernels prepared (a
    path runs numpy for its first ``HOT_CALLS`` calls, then prepares its kernels on a background thread, waited for
    here), within about a second of CPU."""
    from lancelot.util.jit import HOT_CALLS, wait_for_warm_ups

    for side, call in calls.items():
        t0, done = time.process_time(), 0
        while done < warm or (side == "lancelot" and done < HOT_CALLS and time.process_time() - t0 < 1.0):
            call()
            done += 1
    wait_for_warm_ups()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=0.1, help="TPC-H scale factor (default 0.1)")
    ap.add_argument("--fragments", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--warm", type=int, default=3, help="untimed calls of each side per query first (default 3)")
    ap.add_argument("--queries", default=",".join(QUERIES), help="comma-separated names (default: all)")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--scratch", type=Path, default=None, help="where the dataset is written (default: a temp dir)")
    args = ap.parse_args(argv)

    import lance

    import lancelot

    src = tpch_lineitem(args.data_dir, args.sf)
    opts = pa.ipc.IpcReadOptions(ensure_alignment=pa.ipc.Alignment.At64Byte)  # pylance's decimals want 16 bytes
    with pa.OSFile(str(src.arrow_path), "rb") as f:
        table = pa.ipc.open_file(f, options=opts).read_all()
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="sql_query_bench_"))
    path = scratch / f"lineitem-sf{args.sf:g}-f{args.fragments}.lance"
    if not path.exists():
        print(f"writing {path} ({table.num_rows} rows, {args.fragments} fragments) with pylance")
        lance.write_dataset(table, str(path), max_rows_per_file=-(-table.num_rows // args.fragments))
    mine, theirs = lancelot.dataset(str(path)), lance.dataset(str(path))
    ratios: dict[str, float] = {}
    print(f"{'query':>15}  {'lancelot cpu':>12} {'pylance cpu':>12} {'ratio':>6}   {'wall ratio':>10}")
    for name in args.queries.split(","):
        sql = QUERIES[name]
        calls = {
            "lancelot": lambda q=sql: mine.sql(q).build().to_stream_reader().read_all(),
            "pylance": lambda q=sql: theirs.sql(q).build().to_stream_reader().read_all(),
        }
        same = _same(calls["lancelot"](), calls["pylance"](), "ORDER BY" in sql)
        _warm(calls, args.warm)
        cpu: dict[str, list[float]] = {k: [] for k in calls}
        wall: dict[str, list[float]] = {k: [] for k in calls}
        for r in range(args.repeats):
            for side in list(calls)[r % 2 :] + list(calls)[: r % 2]:
                c, w = _measure(calls[side])
                cpu[side].append(c)
                wall[side].append(w)
        mc = {k: statistics.median(v) for k, v in cpu.items()}
        mw = {k: statistics.median(v) for k, v in wall.items()}
        ratios[name] = mc["lancelot"] / mc["pylance"]
        flag = "" if same else "  (NOT VERIFIED: results differ)"
        print(
            f"{name:>15}  {mc['lancelot'] * 1e3:9.1f} ms {mc['pylance'] * 1e3:9.1f} ms {ratios[name]:5.2f}x"
            f"   {mw['lancelot'] / mw['pylance']:9.2f}x{flag}"
        )
    print("CPU ratios (lancelot / pylance): " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
    print(f"median: {statistics.median(ratios.values()):.2f}x")
    if args.scratch is None:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
