"""Datasets of many fragments and versions: lancelot vs pylance, interleaved, on the same dataset.

Real datasets grow by many small appends (streaming ingestion, one LanceDB ``table.add`` per
request, Spark jobs with many tasks) and reach thousands of fragments and versions before anyone
compacts them.  For each size in ``--sizes`` this builds, with pylance, a dataset of that many
fragments of ``--rows`` rows each (one append per ``max(10, size // 100)`` fragments) and a
delete, then times per library (medians of interleaved repetitions, ratio lancelot / pylance):

- ``open_count``: open the latest version and count its live rows;
- ``take10``: open, then 10 new random live rows (all columns);
- ``take10_new``: the same on a hard-linked copy of the dataset neither library opened before in
  this process (one per repetition per library, made untimed): every file's first take;
- ``scan``: open, then the whole dataset as one table;
- ``filter``: open, then a selective filter (``x = 7.0``: one row in 1013);
- ``versions``: ``versions()`` of the dataset;
- ``append``: append 100 rows (each library to its own hard-linked clone).

With ``--versions V`` (0: none) a dataset of V versions (one one-fragment append each) is timed
too: ``open_count``, ``versions``, ``checkout`` (open version V / 2 and count it), ``asof`` (open
the version committed just before a time half-way through the history and count it), ``cleanup``
(``cleanup_old_versions(retain_versions=V / 2)`` on a fresh clone each time) and ``append``.

With ``--config-versions V`` the same on a dataset of V versions made by config updates (one
small fragment; a history of appends this long would hold tens of GB of manifests).

``--ops changes`` (or any of ``CHANGE_OPS``) times the dataset-changing operations on the datasets
of many fragments, each call on the library's own fresh hard-linked clone, opened untimed:
``update_all`` (``x + 1`` where ``id % 5 = 0``: every fragment), ``delete_all`` (``id % 5 = 1``),
``merge_spread`` (upsert on ``id`` of 500 rows spread over the dataset and 500 new ones),
``merge_one`` (upsert of the first fragment's rows), ``merge_by_source`` (1,000 spread rows
updated, unmatched rows with ``id % 7 = 2`` deleted), ``add_columns`` (one SQL column),
``alter_columns`` (a rename, made nullable), ``drop_columns``, ``compact``
(``optimize.compact_files()``) and ``cleanup_frags`` (``cleanup_old_versions`` of the older half
of the versions).  Checked equal: each call's result, then both clones read by pylance.

Wall clock and the process's CPU time (every thread's) are both recorded: on a loaded machine
the wall-clock ratio of single-threaded Python against pylance's thread pool mostly measures
the scheduler.

Every first call is checked equal between the two libraries.  The medians go to ``--out`` (JSON)
and, per operation, the cost against the number of fragments to ``--plot`` (an SVG, matplotlib).

    python -m benchmarks.scale [--sizes 10,1000,10000] [--versions 1000] [--config-versions 10000]
        [--rows 100] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.changes import steady
from benchmarks.dataset_bench import Bench, clone


class CpuBench(Bench):
    """``Bench`` that also records the process's CPU time (every thread's) per call, waits for
    lancelot's background kernel preparation after the warm-up call, and can prepare each call
    untimed (``setup(library, repetition)``: a fresh clone for a cleanup)."""

    def run(self, op, calls, check=None, warm=True, repeats=None, setup=None) -> None:  # type: ignore[override]
        import statistics
        import time

        from lancelot.util.jit import wait_for_warm_ups

        names = list(calls)
        verified = True
        if warm:
            first = {}
            for n in names:
                if setup is not None:
                    setup(n, -1)
                first[n] = calls[n](-1)
            verified = check(first) if check is not None else True
            del first
            wait_for_warm_ups()
        wall: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, list[float]] = {n: [] for n in names}
        for r in range(repeats or self.repeats):
            for n in names[r % len(names) :] + names[: r % len(names)]:
                if setup is not None:
                    setup(n, r)
                c0, t0 = time.process_time(), time.perf_counter()
                calls[n](r)
                wall[n].append(time.perf_counter() - t0)
                cpu[n].append(time.process_time() - c0)
        med = {n: statistics.median(v) for n, v in wall.items()}
        cmed = {n: statistics.median(v) for n, v in cpu.items()}
        ratio = med["lancelot"] / med["pylance"]
        cratio = cmed["lancelot"] / cmed["pylance"] if cmed["pylance"] else float("nan")
        self.results[op] = {
            "median_s": med,
            "ratio": ratio,
            "cpu_median_s": cmed,
            "cpu_ratio": cratio,
            "verified": verified,
            "repeats": len(wall[names[0]]),
        }
        flag = "" if verified else "  (NOT VERIFIED: results differ)"
        self.log(
            f"{op:>12}  lancelot {med['lancelot'] * 1e3:9.2f} ms (cpu {cmed['lancelot'] * 1e3:9.2f})   "
            f"pylance {med['pylance'] * 1e3:9.2f} ms (cpu {cmed['pylance'] * 1e3:9.2f})   "
            f"ratio {ratio:5.2f}x, cpu {cratio:5.2f}x{flag}"
        )


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


def build_versions(path: Path, versions: int, rows: int, log=print) -> int:
    """A dataset of ``versions`` versions, one append of one ``rows``-row fragment each (rebuilt
    if its shape differs); returns its row count."""
    import lance

    if path.exists():
        try:
            ds = lance.dataset(str(path))
            if ds.version == versions:
                return ds.count_rows()
        except Exception:  # noqa: BLE001 - a half-built cache is rebuilt
            pass
        shutil.rmtree(path)
    log(f"writing {path}: {versions} appends of {rows} rows, with pylance")
    for k in range(versions):
        lance.write_dataset(_table(k * rows, rows), str(path), mode="append" if k else "create")
    return versions * rows


def build_config_versions(path: Path, versions: int, log=print) -> int:
    """A dataset of ``versions`` versions: one 100-row fragment, then config updates (pylance's
    ``update_config``: a commit each, the manifest stays small), rebuilt if its shape differs;
    returns its row count.  A history this long built by appends would hold tens of GB of
    manifests."""
    import lance

    if path.exists():
        try:
            if lance.dataset(str(path)).version == versions:
                return 100
        except Exception:  # noqa: BLE001 - a half-built cache is rebuilt
            pass
        shutil.rmtree(path)
    log(f"writing {path}: {versions} versions by config updates, with pylance")
    ds = lance.write_dataset(_table(0, 100), str(path))
    for k in range(versions - 1):
        ds.update_config({"k": str(k)})
    return 100


def _append(bench: CpuBench, path: Path, work: Path) -> None:
    """``append``: 100 rows, each library to its own hard-linked clone of ``path``, verified after;
    the writer's kernels first made ready by untimed appends to a scratch dataset (``_warm``), then
    one untimed append each."""
    import lance

    import lancelot

    targets = {"lancelot": work / "lancelot", "pylance": work / "pylance"}
    for t in targets.values():
        clone(path, t)
    small = _table(10**9, 100)
    try:
        _warm(lambda k: lancelot.write_dataset(small, str(work / "scratch"), mode="append"))
        bench.run(
            "append",
            {
                "lancelot": lambda r: lancelot.write_dataset(small, str(targets["lancelot"]), mode="append"),
                "pylance": lambda r: lance.write_dataset(small, str(targets["pylance"]), mode="append"),
            },
        )
        a, b = (lance.dataset(str(t)) for t in targets.values())
        bench.results["append"]["verified"] = a.count_rows() == b.count_rows() and a.version == b.version
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_size(bench: CpuBench, path: Path, live: int, ops: set[str], work: Path) -> None:
    """The operations of ``ops`` on the dataset at ``path`` (``live`` rows)."""
    import lance

    import lancelot

    uri = str(path)
    rng = np.random.default_rng(36)
    repeats = bench.repeats
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
        picks = [np.sort(rng.choice(live, 10, replace=False)) for _ in range(repeats + 1)]
        ds = lancelot.dataset(uri)
        _warm(lambda k: ds.take(picks[k % len(picks)]))
        bench.run(
            "take10",
            {
                "lancelot": lambda r: lancelot.dataset(uri).take(picks[r]),
                "pylance": lambda r: lance.dataset(uri).take(picks[r]),
            },
            check=lambda res: res["lancelot"].equals(res["pylance"]),
        )
    if "take10_new" in ops:
        _take10_new(bench, path, live, rng, work)
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
    if "checkout" in ops:
        half = max(1, lance.dataset(uri).version // 2)
        bench.run(
            "checkout",
            {
                "lancelot": lambda r: lancelot.dataset(uri, version=half).count_rows(),
                "pylance": lambda r: lance.dataset(uri, version=half).count_rows(),
            },
            check=lambda res: res["lancelot"] == res["pylance"],
        )
    if "asof" in ops:
        import datetime as _dt

        hist = lance.dataset(uri).versions()
        when = hist[len(hist) // 2]["timestamp"] + _dt.timedelta(microseconds=1)
        bench.run(
            "asof",
            {
                "lancelot": lambda r: lancelot.dataset(uri, asof=when).count_rows(),
                "pylance": lambda r: lance.dataset(uri, asof=when).count_rows(),
            },
            check=lambda res: res["lancelot"] == res["pylance"],
        )
    if "cleanup" in ops:
        _cleanup(bench, path, work)
    if "append" in ops:
        _append(bench, path, work)
    for op in CHANGE_OPS:
        if op in ops:
            _change(bench, op, path, work)


def _warm(call) -> None:
    """``call(k)`` for k = 0..39 untimed, then the kernels' background preparation awaited: a numpy
    path hands over to its kernel after 32 calls, prepared in the background, whose CPU would land
    in whichever library is timed."""
    from lancelot.util.jit import wait_for_warm_ups

    for k in range(40):
        call(k)
    wait_for_warm_ups()


def _take10_new(bench: CpuBench, path: Path, live: int, rng: np.random.Generator, work: Path) -> None:
    """``take10_new``: open and take 10 rows of a copy never opened in this process (its files'
    first take: no open file or parsed deletion file to reuse); the take kernels made ready first
    by 40 untimed takes of ``path`` (their preparation would land in whatever is timed)."""
    import lance

    import lancelot

    libs = {"lancelot": lancelot, "pylance": lance}
    picks = [np.sort(rng.choice(live, 10, replace=False)) for _ in range(bench.repeats + 1)]
    ds = lancelot.dataset(str(path))
    _warm(lambda k: ds.take(picks[k % len(picks)]))
    try:
        for n in libs:
            for r in range(-1, bench.repeats):
                clone(path, work / f"{n}{r}")
        bench.run(
            "take10_new",
            {n: (lambda r, n=n, m=m: m.dataset(str(work / f"{n}{r}")).take(picks[r])) for n, m in libs.items()},
            check=lambda res: res["lancelot"].equals(res["pylance"]),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _cleanup(bench: CpuBench, path: Path, work: Path) -> None:
    """``cleanup``: ``cleanup_old_versions(retain_versions=half)``, each call on a fresh hard-linked
    clone (made untimed); the removed versions and bytes checked equal."""
    import lance

    import lancelot

    half = max(1, lance.dataset(str(path)).version // 2)
    target = work / "cleanup"
    libs = {"lancelot": lancelot, "pylance": lance}
    try:
        bench.run(
            "cleanup",
            {
                n: (lambda r, m=m: _stats(m.dataset(str(target)).cleanup_old_versions(retain_versions=half)))
                for n, m in libs.items()
            },
            check=lambda res: res["lancelot"] == res["pylance"],
            setup=lambda n, r: clone(path, target),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _changes(ds, live: int) -> dict:
    """The dataset-changing operations (``CHANGE_OPS``) as calls on an open dataset of either library;
    the source tables of the upserts are made once here (``_table``'s rows: ``id``, ``x``, ``s``)."""
    rows = ds.get_fragments()[0].physical_rows
    ids = np.unique(np.linspace(0, live * 1.01, 1000).astype(np.int64))  # over every fragment (1,000 of them)
    x = (ids * 7 % 1013 + 0.5).astype(np.float64)
    spread = pa.table({"id": ids, "x": x, "s": pa.array([f"u{i}" for i in ids])})
    one = _table(0, rows).set_column(1, "x", pa.array(np.arange(rows) + 0.25))  # the first fragment's ids
    new = _table(10**9, 500)
    both = pa.concat_tables([spread.slice(0, 500), new])
    return {
        "update_all": lambda: ds.update({"x": "x + 1"}, where="id % 5 = 0"),
        "delete_all": lambda: ds.delete("id % 5 = 1"),
        "merge_spread": lambda: (
            ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(both)
        ),
        "merge_one": lambda: ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(one),
        "merge_by_source": lambda: (
            ds.merge_insert("id")
            .when_matched_update_all()
            .when_not_matched_by_source_delete("id % 7 = 2")
            .execute(spread)
        ),
        "add_columns": lambda: ds.add_columns({"y": "x * 2 + id"}),
        "alter_columns": lambda: ds.alter_columns({"path": "s", "name": "t", "nullable": True}),
        "drop_columns": lambda: ds.drop_columns(["s"]),
        "compact": lambda: _metrics(ds.optimize.compact_files()),
        "cleanup_frags": lambda: _stats(ds.cleanup_old_versions(retain_versions=max(1, ds.version // 2))),
    }


def _metrics(m) -> tuple[int, int, int, int]:
    return (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added)


def _change(bench: CpuBench, op: str, path: Path, work: Path) -> None:
    """One of ``CHANGE_OPS``, each call on the library's own fresh hard-linked clone of ``path``
    opened untimed; checked equal: the call's result, then both clones read by pylance (version,
    rows sorted by ``id``); lancelot's kernels first brought to their steady state (``changes.steady``:
    untimed appends, reads and takes, once per process).  The fragments and data files each library's
    first call wrote are logged."""
    import lance

    import lancelot

    libs = {"lancelot": lancelot, "pylance": lance}
    live = lance.dataset(str(path)).count_rows()
    if not _STEADY:
        steady(_table(0, 100), work / "steady", rows=100)
        _STEADY.append(True)
    opened: dict[str, dict] = {}

    def setup(n: str, r: int) -> None:
        clone(path, work / n)
        opened[n] = _changes(libs[n].dataset(str(work / n)), live)

    def check(res: dict) -> bool:
        a, b = (lance.dataset(str(work / n)) for n in libs)
        ta, tb = (d.to_table() for d in (a, b))
        ta, tb = (t.sort_by("id") if "id" in t.column_names else t for t in (ta, tb))
        for n, d in zip(libs, (a, b)):
            files = sum(len(f.data_files()) for f in d.get_fragments())
            bench.log(f"{op:>12}  {n}: {len(d.get_fragments())} fragments, {files} data files, v{d.version}")
        return _same(res["lancelot"], res["pylance"]) and a.version == b.version and ta.equals(tb)

    try:
        bench.run(op, {n: (lambda r, n=n: opened[n][op]()) for n in libs}, check=check, setup=setup)
    finally:
        shutil.rmtree(work, ignore_errors=True)


#: whether lancelot's kernels were brought to their steady state (``changes.steady``) in this process
_STEADY: list[bool] = []


def _same(a, b) -> bool:
    """Results of the two libraries equal (dicts compared on pylance's keys)."""
    if isinstance(b, dict):
        return isinstance(a, dict) and all(a.get(k) == v for k, v in b.items())
    return a == b


def _stats(s) -> tuple[int, int, int]:
    return (s.old_versions, s.bytes_removed, s.data_files_removed)


def plot(results: dict, out: Path) -> None:
    """Per operation, milliseconds against the number of fragments (log-log), both libraries."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted(int(n) for n in results["fragments"])
    ops = [op for op in OPS if any(op in results["fragments"][str(n)] for n in sizes)]
    cols = 3
    rows = -(-len(ops) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    for ax, op in zip(axes.flat, ops):
        for lib, style in (("lancelot", "o-"), ("pylance", "s--")):
            xs = [n for n in sizes if op in results["fragments"][str(n)]]
            ys = [results["fragments"][str(n)][op]["median_s"][lib] * 1e3 for n in xs]
            ax.plot(xs, ys, style, label=lib)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(op)
        ax.set_xlabel("fragments")
        ax.set_ylabel("ms per operation")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(ops) :]:
        ax.axis("off")
    axes.flat[0].legend()
    fig.suptitle("Datasets of many fragments: lancelot vs pylance 14.0.2 (interleaved medians; loads in scale.json)")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="svg", metadata={"Date": None})
    plt.close(fig)


OPS = ("open_count", "take10", "take10_new", "scan", "filter", "versions", "append")
#: the dataset-changing operations (``--ops changes``), each on a fresh clone: an update and a delete
#: touching every fragment, upserts of rows spread over every fragment and of one fragment's rows,
#: an upsert deleting unmatched rows, schema evolution, compaction and cleanup of the older half
CHANGE_OPS = (
    "update_all",
    "delete_all",
    "merge_spread",
    "merge_one",
    "merge_by_source",
    "add_columns",
    "alter_columns",
    "drop_columns",
    "compact",
    "cleanup_frags",
)
#: the operations timed on the dataset of many versions
VERSION_OPS = ("open_count", "versions", "checkout", "asof", "cleanup", "append")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10,1000,10000", help="fragment counts (100000 too, if you have the time)")
    ap.add_argument("--fragments", type=int, default=None, help="one size only (as --sizes N)")
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--per-append", type=int, default=None, help="fragments per append (default max(10, size/100))")
    ap.add_argument("--versions", type=int, default=1000, help="a dataset of this many versions too (0: none)")
    ap.add_argument(
        "--config-versions",
        type=int,
        default=0,
        help="a dataset of this many versions made by config updates (one small fragment; 0: none)",
    )
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "lancelot-scale")
    ap.add_argument("--ops", default=",".join(dict.fromkeys(OPS + VERSION_OPS)))
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "scale.json")
    ap.add_argument(
        "--plot",
        type=lambda s: Path(s) if s else None,
        default=Path(__file__).parent.parent / "docs" / "img" / "scale.svg",
        help='SVG of the cost per operation against the number of fragments ("" for none)',
    )
    ap.add_argument("--merge", action="store_true", help="keep the other sizes' results already in --out")
    args = ap.parse_args(argv)

    sizes = [args.fragments] if args.fragments else [int(x) for x in args.sizes.split(",") if x]
    ops = set(args.ops.split(","))
    if "changes" in ops:
        ops |= set(CHANGE_OPS)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    results: dict = {"rows_per_fragment": args.rows, "repeats": args.repeats, "load": load, "fragments": {}}
    if args.merge and args.out.exists():
        old = json.loads(args.out.read_text())
        results["fragments"] = old.get("fragments", {})
        for key in ("versions", "config_versions"):
            if key in old:
                results[key] = old[key]
    for n in sizes:
        per_append = args.per_append or max(10, n // 100)
        path = args.data_dir / f"f{n}-r{args.rows}-a{per_append}"
        live = build(path, n, args.rows, per_append)
        print(f"{path}: {n} fragments, {live} live rows, {args.repeats} interleaved repetitions")
        bench = CpuBench(args.repeats)
        run_size(bench, path, live, ops - {"checkout", "asof", "cleanup"}, args.data_dir / "append")
        results["fragments"][str(n)] = dict(bench.results, load=", ".join(f"{x:.1f}" for x in os.getloadavg()))
    if args.versions:
        path = args.data_dir / f"v{args.versions}-r{args.rows}"
        live = build_versions(path, args.versions, args.rows)
        print(f"{path}: {args.versions} versions, {live} rows, {args.repeats} interleaved repetitions")
        bench = CpuBench(args.repeats)
        run_size(bench, path, live, set(VERSION_OPS) & ops, args.data_dir / "append")
        results["versions"] = {
            str(args.versions): dict(bench.results, load=", ".join(f"{x:.1f}" for x in os.getloadavg()))
        }
    if args.config_versions:
        path = args.data_dir / f"c{args.config_versions}"
        live = build_config_versions(path, args.config_versions)
        print(f"{path}: {args.config_versions} versions (config updates), {args.repeats} interleaved repetitions")
        bench = CpuBench(args.repeats)
        vops = set(VERSION_OPS) & ops
        run_size(bench, path, live, vops, args.data_dir / "append")
        results.setdefault("config_versions", {})[str(args.config_versions)] = dict(
            bench.results, load=", ".join(f"{x:.1f}" for x in os.getloadavg())
        )
    results["load_after"] = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, default=str) + "\n")
    print(f"results: {args.out}")
    if args.plot and results["fragments"]:
        plot(results, args.plot)
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
