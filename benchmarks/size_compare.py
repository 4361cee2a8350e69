"""File sizes, per table and per column: lancelot and pylance against Parquet (snappy and zstd).

    python -m benchmarks.size_compare --sf 1 --tables lineitem,orders --version 2.2 [--profile compact] [--speed]

Each table is written once by each writer at default settings (pylance at the same data storage
version; Parquet with pyarrow's defaults, snappy, and again with zstd).  Prints the total sizes and
ratios against Parquet, then one row per top-level column: bytes per value in each file and the
encoding lancelot chose (``lancelot inspect`` words).  Parquet's column bytes are its column chunks'
compressed sizes summed over row groups; Lance's are the column's page and column buffers.  A last
row holds the bytes outside the columns (Parquet: its footer; Lance: schema, zone maps, metadata and
alignment padding, broken down for lancelot's file), which decide the size of a tiny table.

``--speed`` also writes the table with each lancelot profile and times, interleaved in rotating order,
takes of 10 new random rows per call (all columns) and full reads: lancelot on each profile's file
against pylance on its own file (medians, ratios to pylance and to the balanced profile), after
WARM_TAKES takes and the kernels' background preparation (steady state).
"""

from __future__ import annotations

import argparse
import inspect as _inspect
import os
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.datasets import tpch_table
from lancelot import write_table
from lancelot.inspect import FileView
from lancelot.reader import LanceFile
from lancelot.util.jit import wait_for_warm_ups

DATA_DIR = Path(__file__).parent / "data"
#: the row of the bytes outside the columns (Lance: schema, zone maps, metadata, padding; Parquet: footer)
OUTSIDE = "(not columns)"
#: takes before the timed ones: the kernels a take uses are prepared in the background once a path gets hot
WARM_TAKES = 40


def lance_columns(path: str) -> tuple[dict[str, int], dict[str, str]]:
    """Stored bytes and the most common encoding words per top-level column of a Lance file; the
    bytes outside the columns under OUTSIDE (with ``lancelot inspect``'s breakdown as its words)."""
    with LanceFile(path) as f:
        view = FileView(f)
        rows, _ = view.columns()
        outside = view.overhead(rows)
    size: dict[str, int] = defaultdict(int)
    enc: dict[str, str] = {}
    for r in rows:
        top = r.path.split(".", 1)[0].split("#", 1)[0]
        size[top] += r.stored
        enc.setdefault(top, r.encoding)
    size[OUTSIDE] = sum(outside.values())
    enc[OUTSIDE] = ", ".join(f"{k} {v:,}" for k, v in outside.items() if v)
    return dict(size), enc


def parquet_columns(path: str) -> dict[str, int]:
    """Compressed column-chunk bytes per top-level column, summed over row groups."""
    md = pq.ParquetFile(path).metadata
    size: dict[str, int] = defaultdict(int)
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for c in range(rg.num_columns):
            col = rg.column(c)
            size[col.path_in_schema.split(".", 1)[0]] += col.total_compressed_size
    size[OUTSIDE] = os.path.getsize(path) - sum(size.values())
    return dict(size)


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n:,} B"


def write_all(table: pa.Table, out: str, version: str, profile: str | None) -> dict[str, str]:
    """Write the table with every writer; the paths by writer name."""
    import lance  # the peer, never imported by the library

    paths = {
        k: os.path.join(out, f"{k}.{'parquet' if k.startswith('parquet') else 'lance'}")
        for k in ("lancelot", "pylance", "parquet", "parquet-zstd")
    }
    kwargs = {"version": version}
    if profile is not None:
        if "profile" not in _inspect.signature(write_table).parameters:
            raise SystemExit("this lancelot has no writer profiles yet")
        kwargs["profile"] = profile
    write_table(table, paths["lancelot"], **kwargs)
    with lance.file.LanceFileWriter(paths["pylance"], table.schema, version=version) as w:
        w.write_batch(table)
    pq.write_table(table, paths["parquet"])
    pq.write_table(table, paths["parquet-zstd"], compression="zstd")
    return paths


def report(name: str, table: pa.Table, paths: dict[str, str]) -> list[str]:
    total = {k: os.path.getsize(p) for k, p in paths.items()}
    ours, enc = lance_columns(paths["lancelot"])
    theirs, _ = lance_columns(paths["pylance"])
    pqs, pqz = parquet_columns(paths["parquet"]), parquet_columns(paths["parquet-zstd"])
    n = max(table.num_rows, 1)
    lines = [
        f"{name}: {table.num_rows:,} rows; " + ", ".join(f"{k} {_size(v)}" for k, v in total.items()),
        f"  lancelot / parquet-snappy {total['lancelot'] / total['parquet']:.2f}x, "
        f"/ parquet-zstd {total['lancelot'] / total['parquet-zstd']:.2f}x, "
        f"/ pylance {total['lancelot'] / total['pylance']:.2f}x",
        f"  {'column':<18} {'lancelot':>9} {'pylance':>9} {'pq-snappy':>9} {'pq-zstd':>9}  bytes/value; encoding",
    ]
    for c in [*table.schema.names, OUTSIDE]:
        lines.append(
            f"  {c:<18} {ours.get(c, 0) / n:>9.2f} {theirs.get(c, 0) / n:>9.2f} "
            f"{pqs.get(c, 0) / n:>9.2f} {pqz.get(c, 0) / n:>9.2f}  {enc.get(c, '-')}"
        )
    return lines


def _median_times(fns: dict[str, object], reps: int, make_arg) -> dict[str, float]:
    """Median seconds of each ``fn(arg)``, every repetition a new ``arg`` for all, in rotating order."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(reps):
        arg = make_arg(r)
        for k in names[r % len(names) :] + names[: r % len(names)]:
            t0 = time.perf_counter()
            fns[k](arg)
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def speed(table: pa.Table, out: str, version: str, paths: dict[str, str], reps: int) -> list[str]:
    """Takes of 10 new rows and full reads: each lancelot profile's file against pylance's own."""
    import lance
    import numpy as np

    files = {"pylance": paths["pylance"]}
    for profile in ("fast", "balanced", "compact"):
        files[profile] = os.path.join(out, f"lancelot-{profile}.lance")
        write_table(table, files[profile], version=version, profile=profile)
    readers = {k: (lance.file.LanceFileReader(p) if k == "pylance" else LanceFile(p)) for k, p in files.items()}
    takes = {
        k: (
            (lambda rows, r=r: r.take_rows(rows.tolist()).to_table())
            if k == "pylance"
            else (lambda rows, r=r: r.take(rows))
        )
        for k, r in readers.items()
    }
    scans = {
        k: ((lambda _, r=r: r.read_all().to_table()) if k == "pylance" else (lambda _, r=r: r.read()))
        for k, r in readers.items()
    }
    rng = np.random.default_rng(0)
    k = min(10, table.num_rows)  # (TPC-H region has 5 rows)
    rows = [np.sort(rng.choice(table.num_rows, k, replace=False)) for _ in range(reps + WARM_TAKES)]
    for r in rows[:WARM_TAKES]:  # warm-up: footers read, the take kernels prepared (in the background)
        for fn in takes.values():
            fn(r)
    wait_for_warm_ups()
    take = _median_times(takes, reps, lambda i: rows[WARM_TAKES + i])
    scan = _median_times(scans, max(3, reps // 10), lambda _: None)
    lines = [
        f"  {'':<10} {'bytes':>12} {'take10 ms':>10} {'/pylance':>9} {'/balanced':>10} "
        f"{'scan ms':>9} {'/pylance':>9} {'/balanced':>10}"
    ]
    for k in files:
        lines.append(
            f"  {k:<10} {os.path.getsize(files[k]):>12,} {take[k] * 1e3:>10.3f} {take[k] / take['pylance']:>8.2f}x "
            f"{take[k] / take['balanced']:>9.2f}x {scan[k] * 1e3:>9.1f} {scan[k] / scan['pylance']:>8.2f}x "
            f"{scan[k] / scan['balanced']:>9.2f}x"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--tables", default="lineitem,orders,customer,part,partsupp,supplier,nation,region")
    ap.add_argument("--version", default="2.2")
    ap.add_argument("--profile", default=None, help="lancelot writer profile (when the writer has profiles)")
    ap.add_argument("--speed", action="store_true", help="also time takes and full reads of each profile")
    ap.add_argument("--reps", type=int, default=51)
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR, help="where tpch-sf<N>-<table>.arrow are (or go)")
    args = ap.parse_args(argv)
    args.data_dir.mkdir(exist_ok=True)
    for name in args.tables.split(","):
        table = tpch_table(args.data_dir, args.sf, name).load()
        with tempfile.TemporaryDirectory() as out:
            paths = write_all(table, out, args.version, args.profile)
            print("\n".join(report(f"TPC-H {name} SF{args.sf:g} at {args.version}", table, paths)), flush=True)
            if args.speed:
                print("\n".join(speed(table, out, args.version, paths, args.reps)), flush=True)


if __name__ == "__main__":
    main()
