"""What a take pays per row for each column, under the balanced and the compact profile.

    python -m benchmarks.take_columns --tables supplier,customer [--version 2.2] [--reps 101] [--data-dir DIR]

Writes each TPC-H SF1 table with both profiles, then times, interleaved (alternating order), takes
of 10 new random rows of one column at a time, and of all columns: medians in microseconds, the
compact file's extra and its ratio to balanced.  The balanced column is what
write_profile.TAKE_BASE_US / VARIABLE_BASE_US model (a take's cost besides inflating); compact's
extra is what its price weighs against bytes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.datasets import tpch_table
from lancelot import LanceFile, write_table
from lancelot.util.jit import wait_for_warm_ups

DATA_DIR = Path(__file__).parent / "data"
PROFILES = ("balanced", "compact")
WARM_TAKES = 60


def table_report(name: str, data_dir: Path, version: str, reps: int) -> list[str]:
    table = tpch_table(data_dir, 1, name).load()
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for profile in PROFILES:
            path = os.path.join(tmp, f"{profile}.lance")
            write_table(table, path, version=version, profile=profile)
            files[profile] = LanceFile(path)
        rng = np.random.default_rng(1)
        k = min(10, table.num_rows)
        rows = [np.sort(rng.choice(table.num_rows, k, replace=False)) for _ in range(reps + WARM_TAKES)]
        for r in rows[:WARM_TAKES]:
            for f in files.values():
                f.take(r)
        wait_for_warm_ups()
        lines = [f"TPC-H {name} SF1 at {version}: us per take of {k} rows (per row: / {k})"]
        lines.append(f"  {'column':<16} {'balanced':>9} {'compact':>9} {'extra':>8} {'ratio':>6}")
        for column in [*table.column_names, None]:
            times: dict[str, list[float]] = {p: [] for p in PROFILES}
            for i, r in enumerate(rows[WARM_TAKES:]):
                for p in PROFILES if i % 2 else PROFILES[::-1]:
                    t0 = time.perf_counter()
                    files[p].take(r, columns=None if column is None else [column])
                    times[p].append(time.perf_counter() - t0)
            m = {p: statistics.median(v) * 1e6 for p, v in times.items()}
            lines.append(
                f"  {column or '(all columns)':<16} {m['balanced']:>9.1f} {m['compact']:>9.1f} "
                f"{m['compact'] - m['balanced']:>8.1f} {m['compact'] / m['balanced']:>6.2f}"
            )
        for f in files.values():
            f.close()
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="supplier,customer")
    ap.add_argument("--version", default="2.2")
    ap.add_argument("--reps", type=int, default=101)
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR, help="where tpch-sf1-<table>.arrow are (or go)")
    args = ap.parse_args(argv)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    for name in args.tables.split(","):
        print("\n".join(table_report(name, args.data_dir, args.version, args.reps)), flush=True)


if __name__ == "__main__":
    main()
