"""Datasets: lancelot vs pylance's ``lance.dataset`` on one TPC-H lineitem dataset (issue 16).

The dataset (built once, cached under the data directory) is TPC-H lineitem written by pylance
as several fragments, with rows deleted in two later versions (a few rows of the first
fragment, a larger share of the last ones, so both deletion-file forms occur).  Both libraries
then run, interleaved (each repetition runs every library once, in a rotating order):

- ``open``: open the latest version (for information);
- ``count_rows``: open the latest version and count its live rows (``dataset(uri).count_rows()``);
- ``take10``: 10 new random live rows per call, all columns;
- ``scan``: the whole dataset to one Arrow table;
- ``batches``: the whole dataset as ``to_batches()`` (default batch size), two columns, what a streaming
  consumer reads;
- ``append1M``: append 1M rows (each library to its own hard-linked clone of the dataset), steady
  state: lancelot first appends to a scratch clone until its numpy paths have handed over to their
  numba kernels (compiled or loaded in the background; a fresh process's first write is
  benchmarks/cold_start.py's subject).

The first call of each operation is checked equal between the libraries (a fast wrong answer
is reported as such).  Prints medians and the lancelot / pylance ratios.

    python -m benchmarks.dataset_bench [--sf 1] [--fragments 6] [--repeats 7] [--ops append1M] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from benchmarks.datasets import tpch_lineitem

DEFAULT_DATA_DIR = Path(__file__).parent / "data"
OPS = ("open", "count_rows", "take10", "scan", "batches", "append1M")
APPEND_ROWS = 1_000_000
#: deletions: a few rows of the first fragment, then ~2% of the rows of the last fragments
DELETES = ["l_orderkey < 20000 AND l_linenumber = 3", "l_orderkey > {cut} AND l_quantity < 2"]


def build_dataset(data_dir: Path, sf: float, fragments: int, log=print) -> tuple[Path, pa.Table]:
    """The cached benchmark dataset (built by pylance if missing) and the source table."""
    import lance

    src = tpch_lineitem(data_dir, sf, log=log)
    # decimals need 16-byte aligned buffers in pylance (an IPC file guarantees 8)
    opts = pa.ipc.IpcReadOptions(ensure_alignment=pa.ipc.Alignment.At64Byte)
    with pa.OSFile(str(src.arrow_path), "rb") as f:
        table = pa.ipc.open_file(f, options=opts).read_all()
    path = data_dir / f"dataset-tpch-sf{sf:g}-f{fragments}"
    per_file = -(-table.num_rows // fragments)
    if path.exists():
        try:
            if lance.dataset(str(path)).version == 1 + len(DELETES):
                return path, table
        except Exception:  # noqa: BLE001 - a half-built cache is rebuilt
            pass
        shutil.rmtree(path)
    log(f"writing {path} ({table.num_rows} rows, {fragments} fragments of <= {per_file} rows) with pylance")
    ds = lance.write_dataset(table, str(path), max_rows_per_file=per_file, max_rows_per_group=min(per_file, 1 << 20))
    cut = int(table.column("l_orderkey")[table.num_rows - 1].as_py() * 0.8)
    for d in DELETES:
        ds.delete(d.format(cut=cut))
    return path, table


def clone(src: Path, dst: Path) -> None:
    """A copy of a dataset whose files are hard links (they are never modified in place)."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, copy_function=os.link)


def steady_appends(chunk: pa.Table, scratch: Path, rounds: int = 6) -> None:
    """Untimed lancelot appends until one starts no new background kernel preparation (the writer's numpy
    paths hand over to their kernels after 32 calls or some MiB of work), waiting for each preparation."""
    import lancelot
    from lancelot.util import jit

    for _ in range(rounds):
        before = len(jit._THREADS)
        lancelot.write_dataset(chunk, str(scratch), mode="append")
        jit.wait_for_warm_ups()
        if len(jit._THREADS) == before:
            return


def _tables_equal(a: pa.Table, b: pa.Table) -> bool:
    return (
        a.num_rows == b.num_rows
        and a.schema.names == b.schema.names
        and all(a.column(i).equals(b.column(i)) for i in range(a.num_columns))
    )


class Bench:
    """Interleaved medians per operation and library."""

    def __init__(self, repeats: int, log=print) -> None:
        self.repeats = repeats
        self.log = log
        self.results: dict[str, dict] = {}

    def run(
        self,
        op: str,
        calls: dict[str, Callable[[int], object]],
        check: Callable[[dict], bool] | None = None,
        warm: bool = True,
        repeats: int | None = None,
    ) -> None:
        names = list(calls)
        verified = True
        if warm:
            first = {n: calls[n](-1) for n in names}
            verified = check(first) if check is not None else True
            del first
        times: dict[str, list[float]] = {n: [] for n in names}
        for r in range(repeats or self.repeats):
            order = names[r % len(names) :] + names[: r % len(names)]
            for n in order:
                t0 = time.perf_counter()
                calls[n](r)
                times[n].append(time.perf_counter() - t0)
        med = {n: statistics.median(v) for n, v in times.items()}
        ratio = med["lancelot"] / med["pylance"]
        self.results[op] = {"median_s": med, "ratio": ratio, "verified": verified, "repeats": len(times[names[0]])}
        flag = "" if verified else "  (NOT VERIFIED: results differ)"
        self.log(
            f"{op:>12}  lancelot {med['lancelot'] * 1e3:10.3f} ms   pylance {med['pylance'] * 1e3:10.3f} ms"
            f"   ratio {ratio:5.2f}x{flag}"
        )


def _append(bench: Bench, args, path: Path, table: pa.Table, live: int) -> None:
    """append1M: each library appends the first 1M rows to its own clone, interleaved; the results checked."""
    import lance

    import lancelot

    log = bench.log
    work = args.data_dir / "dataset-bench-append"
    targets = {"lancelot": work / "lancelot", "pylance": work / "pylance"}
    for t in targets.values():
        clone(path, t)
    chunk = table.slice(0, min(APPEND_ROWS, table.num_rows)).combine_chunks()
    appenders = {
        "lancelot": lambda r: lancelot.write_dataset(chunk, str(targets["lancelot"]), mode="append"),
        "pylance": lambda r: lance.write_dataset(chunk, str(targets["pylance"]), mode="append"),
    }
    try:
        clone(path, work / "scratch")
        steady_appends(chunk, work / "scratch")
        # one untimed append each first (thread pools, caches), as for the reads
        bench.run("append1M", appenders, repeats=args.append_repeats)
        after = {n: lance.dataset(str(t)) for n, t in targets.items()}
        ok = (
            after["lancelot"].count_rows()
            == after["pylance"].count_rows()
            == live + (1 + args.append_repeats) * chunk.num_rows
            and after["lancelot"].version == after["pylance"].version
        )
        after["lancelot"].validate()
        bench.results["append1M"]["verified"] = ok
        if not ok:
            log("append1M: NOT VERIFIED (the appended datasets differ)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    ap.add_argument("--fragments", type=int, default=6, help="fragments in the base dataset (default 6)")
    ap.add_argument("--repeats", type=int, default=7, help="repetitions of the read operations (default 7)")
    ap.add_argument(
        "--take-repeats",
        type=int,
        default=51,
        help="repetitions of the quick operations: open, count_rows, 10-row take (default 51)",
    )
    ap.add_argument("--append-repeats", type=int, default=5, help="timed appends of 1M rows per library (default 5)")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--ops", default=",".join(OPS), help=f"comma-separated operations to run (default {','.join(OPS)})")
    ap.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = ap.parse_args(argv)
    ops = set(args.ops.split(","))
    if not ops <= set(OPS):
        ap.error(f"unknown operations {sorted(ops - set(OPS))}")

    import lance

    import lancelot

    log = print
    path, table = build_dataset(args.data_dir, args.sf, args.fragments, log=log)
    uri = str(path)
    rng = np.random.default_rng(args.seed)
    bench = Bench(args.repeats, log=log)
    log(
        f"dataset {uri}: {len(lance.dataset(uri).get_fragments())} fragments, "
        f"{lance.dataset(uri).count_rows()} live rows of {table.num_rows}; interleaved medians"
    )

    if "open" in ops:
        bench.run(
            "open",
            {"lancelot": lambda r: lancelot.dataset(uri), "pylance": lambda r: lance.dataset(uri)},
            repeats=args.take_repeats,
        )
    # count_rows: what a user sees, `lance.dataset(uri).count_rows()`: open the latest version and count
    live = lance.dataset(uri).count_rows()
    if "count_rows" in ops:
        bench.run(
            "count_rows",
            {
                "lancelot": lambda r: lancelot.dataset(uri).count_rows(),
                "pylance": lambda r: lance.dataset(uri).count_rows(),
            },
            check=lambda f: f["lancelot"] == f["pylance"] == live,
            repeats=args.take_repeats,
        )
    mine, theirs = lancelot.dataset(uri), lance.dataset(uri)

    picks = [rng.choice(live, 10, replace=True).astype(np.int64) for _ in range(args.take_repeats + 1)]
    if "take10" in ops:
        bench.run(
            "take10",
            {"lancelot": lambda r: mine.take(picks[r]), "pylance": lambda r: theirs.take(picks[r])},
            check=lambda f: _tables_equal(f["lancelot"], f["pylance"]),
            repeats=args.take_repeats,
        )
    if "scan" in ops:
        bench.run(
            "scan",
            {"lancelot": lambda r: mine.to_table(), "pylance": lambda r: theirs.to_table()},
            check=lambda f: _tables_equal(f["lancelot"], f["pylance"]),
        )
    if "batches" in ops:
        two = ["l_quantity", "l_shipdate"]
        bench.run(
            "batches",
            {
                "lancelot": lambda r: list(mine.to_batches(columns=two)),
                "pylance": lambda r: list(theirs.to_batches(columns=two)),
            },
            check=lambda f: (
                [b.num_rows for b in f["lancelot"]] == [b.num_rows for b in f["pylance"]]
                and _tables_equal(pa.Table.from_batches(f["lancelot"]), pa.Table.from_batches(f["pylance"]))
            ),
        )
    if "append1M" in ops:
        _append(bench, args, path, table, live)

    worst = max((v["ratio"] for k, v in bench.results.items() if k != "open"), default=float("nan"))
    log(
        f"worst ratio ({', '.join(k for k in bench.results if k != 'open')}): {worst:.2f}x pylance "
        f"({'goal met' if worst <= 1.0 else 'goal <= 1.0x missed'})"
    )
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "sf": args.sf,
                    "fragments": args.fragments,
                    "live_rows": live,
                    "python": sys.version.split()[0],
                    "lance": lance.__version__,
                    "results": bench.results,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
