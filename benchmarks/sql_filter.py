"""SQL filter strings: their parse cost, and filtered scans of TPC-H lineitem against pylance.

Two copies of a small lineitem dataset: one written by pylance (several fragments, rows deleted,
as benchmarks/dataset_bench.py builds it) and the same rows written by lancelot (whose files carry
zone maps).  Measured, interleaved (each repetition runs every side once, in a rotating order),
medians and ratios printed:

- ``parse``: ``lancelot.sql.parse_filter`` alone on a three-conjunct filter, not remembered (for
  information: a scan with a filter string it has seen recently does not parse it again);
- ``sql_vs_expr``: one lancelot scan with a SQL string against the same scan with the equivalent
  ``pyarrow.compute`` expression (the ratio is the price of the SQL front end);
- ``scan_filtered``: a selective filter (``l_quantity < 5 AND l_shipmode = 'AIR'``), all columns,
  lancelot vs pylance, on each copy;
- ``point``: ``l_orderkey = N``, a new N each call, lancelot vs pylance, on each copy.

The first call of each pair is checked equal (a fast wrong answer is reported as such).

    python -m benchmarks.sql_filter [--sf 0.1] [--fragments 4] [--repeats 9] [--point-repeats 31]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.dataset_bench import DEFAULT_DATA_DIR, Bench, build_dataset

SELECTIVE = "l_quantity < 5 AND l_shipmode = 'AIR' AND l_shipdate >= date '1995-01-01'"


def _selective_expr() -> pc.Expression:
    import datetime

    return (
        (pc.field("l_quantity") < pa.scalar(5, pa.decimal128(15, 2)))
        & (pc.field("l_shipmode") == "AIR")
        & (pc.field("l_shipdate") >= datetime.date(1995, 1, 1))
    )


def _same_rows(a: pa.Table, b: pa.Table) -> bool:
    if a.num_rows != b.num_rows or a.schema.names != b.schema.names:
        return False
    key = [(n, "ascending") for n in ("l_orderkey", "l_linenumber")]
    return bool(a.sort_by(key).equals(b.sort_by(key)))


def _versus_pylance(bench: Bench, tag: str, uri: str, picks: list[int], point_repeats: int) -> None:
    import lance

    import lancelot

    mine, theirs = lancelot.dataset(uri), lance.dataset(uri)
    bench.run(
        f"scan_filtered[{tag}]",
        {"lancelot": lambda r: mine.to_table(filter=SELECTIVE), "pylance": lambda r: theirs.to_table(filter=SELECTIVE)},
        check=lambda f: _same_rows(f["lancelot"], f["pylance"]),
    )
    bench.run(
        f"point[{tag}]",
        {
            "lancelot": lambda r: mine.to_table(filter=f"l_orderkey = {picks[r]}"),
            "pylance": lambda r: theirs.to_table(filter=f"l_orderkey = {picks[r]}"),
        },
        check=lambda f: _same_rows(f["lancelot"], f["pylance"]) and f["lancelot"].num_rows > 0,
        repeats=point_repeats,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=0.1, help="TPC-H scale factor (default 0.1)")
    ap.add_argument("--fragments", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=9, help="repetitions of the scans (default 9)")
    ap.add_argument("--point-repeats", type=int, default=31, help="repetitions of the point filter (default 31)")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--seed", type=int, default=29)
    args = ap.parse_args(argv)

    import lance

    import lancelot
    import lancelot.sql
    from lancelot.sql import parse_filter

    log = print
    path, table = build_dataset(args.data_dir, args.sf, args.fragments, log=log)
    ours_path = args.data_dir / f"dataset-tpch-sf{args.sf:g}-lancelot"
    live = lance.dataset(str(path)).to_table()
    if not ours_path.exists():
        log(f"writing {ours_path} with lancelot")
        lancelot.write_dataset(live, str(ours_path), max_rows_per_file=-(-live.num_rows // args.fragments))
    bench = Bench(args.repeats, log=log)
    schema = lancelot.dataset(str(path)).schema

    # parse cost alone (parse_filter remembers recent filters: the cache is cleared before each)
    times = []
    for _ in range(200):
        lancelot.sql._parse_filter.cache_clear()
        t0 = time.perf_counter()
        parse_filter(SELECTIVE, schema)
        times.append(time.perf_counter() - t0)
    log(f"{'parse':>12}  {1e6 * statistics.median(times):10.1f} us (median) per parse_filter of {SELECTIVE!r}")

    mine = lancelot.dataset(str(path))
    expr = _selective_expr()
    bench.run(
        "sql_vs_expr",
        {"lancelot": lambda r: mine.to_table(filter=SELECTIVE), "pylance": lambda r: mine.to_table(filter=expr)},
        check=lambda f: _same_rows(f["lancelot"], f["pylance"]),
    )
    same = parse_filter(SELECTIVE, schema).equals(expr)
    log(
        f"{'':>12}  (here 'pylance' is lancelot given the pyarrow.compute expression; the parsed SQL "
        f"{'equals' if same else 'DIFFERS FROM'} it: past the first (remembered) parse, the same work)"
    )

    keys = live.column("l_orderkey").to_numpy()
    rng = np.random.default_rng(args.seed)
    picks = [int(k) for k in rng.choice(keys, args.point_repeats + 1)]
    for label, uri in (("pylance-written", path), ("lancelot-written", ours_path)):
        log(f"-- {label} copy: {uri}")
        _versus_pylance(bench, label[:3], str(uri), picks, args.point_repeats)
    ratios = {k: v["ratio"] for k, v in bench.results.items()}
    log("ratios (lancelot / other): " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
    log(f"median of all: {statistics.median(ratios.values()):.2f}x")
    if args.data_dir != DEFAULT_DATA_DIR:
        shutil.rmtree(ours_path, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
