"""Small changes to large datasets: lancelot vs pylance, interleaved, on the datasets of
``benchmarks.scale`` (built by pylance, cached under ``--data-dir``).

A change of one row should cost what the row costs, not what the dataset's size costs: finding
the row (one filtered scan of the predicate's columns) and committing (a fresh version hint
instead of listing ``_versions/``).  For each dataset (``--sizes`` fragments of ``--rows`` rows
with a delete, and ``--versions`` one-fragment appends) this times per library, each call on a
fresh hard-linked clone (made untimed):

- ``delete1``: ``delete("id = K")``, one live row;
- ``update1``: ``update({"x": "x + 1"}, where="id = K")``, one live row;
- ``update_config``: one config key set (a commit that changes no data).

The first call of each is checked equal between the libraries (live rows and version after).
Prints medians of wall and CPU time (every thread's; on a loaded machine the wall time mostly
measures the scheduler) and the lancelot / pylance ratios.  The timing quoted in
docs/performance.md ("Delete of one row ...", 28 November 2026) was taken with an earlier
script of the same steps.

    python -m benchmarks.small_changes [--sizes 10,1000] [--versions 1000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.dataset_bench import clone
from benchmarks.scale import CpuBench, build, build_versions

OPS = ("delete1", "update1", "update_config")


def _calls(op: str, target: dict[str, Path], key: int) -> dict[str, Callable[[int], Any]]:
    """Each library's call of ``op`` on its own clone (``target``), returning what the check compares."""
    import lance

    import lancelot

    libs = {"lancelot": lancelot, "pylance": lance}

    def after(p: Path) -> tuple[int, int]:
        ds = lance.dataset(str(p))
        return ds.count_rows(), ds.version

    def one(mod: Any, p: Path) -> Callable[[int], Any]:
        if op == "delete1":
            return lambda r: mod.dataset(str(p)).delete(f"id = {key}")
        if op == "update1":
            return lambda r: mod.dataset(str(p)).update({"x": "x + 1"}, where=f"id = {key}")
        return lambda r: mod.dataset(str(p)).update_config({"bench": str(r)})

    calls = {n: one(m, target[n]) for n, m in libs.items()}
    return {n: (lambda r, c=c, p=target[n]: (c(r), after(p) if r < 0 else None)[1]) for n, c in calls.items()}


def run(bench: CpuBench, path: Path, ops: list[str], work: Path) -> None:
    """Each of ``ops`` on fresh clones of ``path`` (under ``work``, removed after)."""
    import lance

    key = int(lance.dataset(str(path)).to_table(columns=["id"], limit=1, offset=7)["id"][0].as_py())
    target = {n: work / n for n in ("lancelot", "pylance")}
    try:
        for op in ops:
            bench.run(
                op,
                _calls(op, target, key),
                check=lambda res: res["lancelot"] == res["pylance"],
                setup=lambda n, r: clone(path, target[n]),
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10,1000", help="fragment counts")
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--versions", type=int, default=1000, help="a dataset of this many versions too (0: none)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "lancelot-scale")
    args = ap.parse_args(argv)
    ops = [o for o in args.ops.split(",") if o]
    print(f"load {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for n in (int(x) for x in args.sizes.split(",") if x):
        per_append = max(10, n // 100)
        path = args.data_dir / f"f{n}-r{args.rows}-a{per_append}"
        live = build(path, n, args.rows, per_append)
        print(f"{path}: {n} fragments, {live} live rows, {args.repeats} interleaved repetitions")
        run(CpuBench(args.repeats), path, ops, args.data_dir / "small_changes")
    if args.versions:
        path = args.data_dir / f"v{args.versions}-r{args.rows}"
        live = build_versions(path, args.versions, args.rows)
        print(f"{path}: {args.versions} versions, {live} rows, {args.repeats} interleaved repetitions")
        run(CpuBench(args.repeats), path, ops, args.data_dir / "small_changes")
    print(f"load {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
