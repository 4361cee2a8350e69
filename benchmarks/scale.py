"""Datasets of many fragments and versions: lancelot vs pylance, interleaved, on the same dataset.

Real datasets grow by many small appends (streaming ingestion, one LanceDB ``table.add`` per
request, Spark jobs with many tasks) and reach thousands of fragments and versions before anyone
compacts them.  This builds, with pylance, a dataset of ``--fragments`` fragments of ``--rows``
rows each (one append per ``--per-append`` fragments, so ``fragments / per-append`` versions) and a
delete, then times per library (medians of interleaved repetitions, ratio lancelot / pylance):

- ``open_count``: open the latest version and count its live rows;
- ``take10``: open, then 10 new random live rows (all columns);
- ``scan``: open, then the whole dataset as one table;
- ``filter``: open, then a selective filter (``x = 7.0``: one row in 1013);
- ``versions``: ``versions()`` of the dataset;
- ``append``: append 100 rows (each library to its own hard-linked clone).

Every first call is checked equal between the two libraries.

    python -m benchmarks.scale [--fragments 1000] [--rows 100] [--per-append 10] [--repeats 5]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.dataset_bench import Bench, clone


def _table(start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "x": (ids * 7 % 1013).astype(np.float64), "s": pa.array([f"r{i}" for i in ids])})


def build(path: Path, fragments: int, rows: int, per_append: int, log=print) -> int:
    """The dataset (rebuilt if its shape differs); returns its live row count."""
    import lance

    want = fragments // per_append + 1  # appends, then one delete
    if path.exists():
        try:
            ds = lance.dataset(str(path))
            if ds.version == want and len(ds.get_fragments()) == fragments:
                return ds.count_rows()
        except Exception:  # noqa: BLE001 - a half-built cache is rebuilt
            pass
        shutil.rmtree(path)
    log(f"writing {path}: {fragments} fragments of {rows} rows, {fragments // per_append} appends, with pylance")
    chunk = per_append * rows
    for k in range(fragments // per_append):
        t = _table(k * chunk, chunk)
        lance.write_dataset(t, str(path), mode="append" if k else "create", max_rows_per_file=rows)
    ds = lance.dataset(str(path))
    ds.delete("id % 97 = 3")
    return ds.count_rows()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fragments", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--per-append", type=int, default=10, help="fragments written per append (one version each)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "lancelot-scale")
    ap.add_argument("--ops", default="open_count,take10,scan,filter,versions,append")
    args = ap.parse_args(argv)

    import lance

    import lancelot

    path = args.data_dir / f"f{args.fragments}-r{args.rows}-a{args.per_append}"
    live = build(path, args.fragments, args.rows, args.per_append)
    uri = str(path)
    rng = np.random.default_rng(36)
    bench = Bench(args.repeats)
    ops = set(args.ops.split(","))
    print(f"{uri}: {args.fragments} fragments, {live} live rows, {args.repeats} interleaved repetitions")
    if "open_count" in ops:
        bench.run(
            "open_count",
            {
                "lancelot": lambda r: lancelot.dataset(uri).count_rows(),
                "pylance": lambda r: lance.dataset(uri).count_rows(),
            },
            check=lambda res: res["lancelot"] == res["pylance"] == live,
        )
    if "take10" in ops:
        picks = [np.sort(rng.choice(live, 10, replace=False)) for _ in range(args.repeats + 1)]
        bench.run(
            "take10",
            {
                "lancelot": lambda r: lancelot.dataset(uri).take(picks[r]),
                "pylance": lambda r: lance.dataset(uri).take(picks[r]),
            },
            check=lambda res: res["lancelot"].equals(res["pylance"]),
        )
    if "scan" in ops:
        bench.run(
            "scan",
            {
                "lancelot": lambda r: lancelot.dataset(uri).to_table(),
                "pylance": lambda r: lance.dataset(uri).to_table(),
            },
            check=lambda res: res["lancelot"].equals(res["pylance"]),
        )
    if "filter" in ops:
        expr = pc.field("x") == 7.0
        bench.run(
            "filter",
            {
                "lancelot": lambda r: lancelot.dataset(uri).to_table(filter=expr),
                "pylance": lambda r: lance.dataset(uri).to_table(filter="x = 7.0"),
            },
            check=lambda res: res["lancelot"].equals(res["pylance"]),
        )
    if "versions" in ops:
        bench.run(
            "versions",
            {
                "lancelot": lambda r: lancelot.dataset(uri).versions(),
                "pylance": lambda r: lance.dataset(uri).versions(),
            },
            check=lambda res: [v["version"] for v in res["lancelot"]] == [v["version"] for v in res["pylance"]],
        )
    if "append" in ops:
        work = args.data_dir / "append"
        targets = {"lancelot": work / "lancelot", "pylance": work / "pylance"}
        for t in targets.values():
            clone(path, t)
        small = _table(10**9, 100)
        try:
            bench.run(
                "append",
                {
                    "lancelot": lambda r: lancelot.write_dataset(small, str(targets["lancelot"]), mode="append"),
                    "pylance": lambda r: lance.write_dataset(small, str(targets["pylance"]), mode="append"),
                },
                warm=False,
            )
            a, b = (lance.dataset(str(t)) for t in targets.values())
            bench.results["append"]["verified"] = a.count_rows() == b.count_rows() and a.version == b.version
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
