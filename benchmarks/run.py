"""The benchmark: lancelot against pylance (the reference) and pyarrow.parquet, in one run.

    python -m benchmarks.run [--rows N] [--sf F] [--quick] [--markdown] ...   (or: lancelot bench ...)

Builds the datasets if missing (benchmarks/data/), writes each one with every implementation
(pylance and lancelot at each format version, and Parquet), then measures, interleaved over
repetitions: random takes (1/10/100/1000 rows; all columns and each column alone), read_range,
full scan, write time, file size and peak RSS (in subprocesses).  By default (``--method fresh``)
every timed read opens the file, reads once and closes it, as a dataset scan or take does per
fragment, so a file's first-read costs are in every figure; ``--method open`` reads through a
file opened once (a long-lived reader's steady state).  Prints medians and ratios and
writes JSON (benchmarks/results/latest.json).  See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import re
import statistics
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from benchmarks import adapters, datasets, measure, memcheck, report  # noqa: E402
from benchmarks.probe import run_probe  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
TAKE_SIZES = (1, 10, 100, 1000)
RANGE_ROWS = 10_000
RSS_GROUPS = ("scan", "take1000", "range")
METHODS = ("fresh", "open")


class FreshHandle(adapters.Handle):
    """Every read opens the file anew, reads once and closes it (``--method fresh``): the
    per-file costs of a first read (metadata decoding, page tables, per-column set-up) are timed
    with the read, as a dataset pays them once per fragment it opens."""

    def __init__(self, adapter: adapters.Adapter, path: Path, num_rows: int) -> None:
        self.adapter, self.path, self.num_rows = adapter, path, num_rows

    def _pylance(self, columns: list[str] | None):
        from lance.file import LanceFileReader

        return LanceFileReader(str(self.path), columns=None if columns is None else list(columns))

    def _once(self, op):
        h = self.adapter.open(self.path)
        try:
            return op(h)
        finally:
            f = getattr(h, "_f", None)  # lancelot's LanceFile
            if f is not None and hasattr(f, "close"):
                f.close()

    def take(self, indices, columns):
        if self.adapter.lib == "pylance":
            return self._pylance(columns).take_rows(np.asarray(indices).tolist()).to_table()
        return self._once(lambda h: h.take(indices, columns))

    def read_range(self, start, num_rows, columns):
        if self.adapter.lib == "pylance":
            return self._pylance(columns).read_range(int(start), int(num_rows)).to_table()
        return self._once(lambda h: h.read_range(start, num_rows, columns))

    def scan(self, columns=None):
        if self.adapter.lib == "pylance":
            return self._pylance(columns).read_all().to_table()
        return self._once(lambda h: h.scan(columns))


def fresh_handles(targets: list[measure.ReadTarget]) -> None:
    """Replace every opened target's handle by a ``FreshHandle`` of the same file."""
    for t in targets:
        if t.handle is not None:
            t.handle = FreshHandle(t.adapter, t.path, t.handle.num_rows)


def parse_size(text: str) -> int:
    """'4GiB', '512MiB', '100MB', '12345' -> bytes."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([KMGT]?)(i?)B?\s*", text, re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}")
    power = "KMGT".find(m.group(2).upper()) + 1 if m.group(2) else 0
    base = 1024 if m.group(3) or not m.group(2) else 1000
    return int(float(m.group(1)) * base**power)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lancelot bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=None, help="synthetic rows (default 1,000,000; --quick: 3,000)")
    p.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor for lineitem (default 1)")
    p.add_argument(
        "--datasets",
        default=None,
        help="comma list of synthetic, tpch (lineitem), tpch-TABLE (e.g. tpch-orders), constants "
        "(constant and nearly constant columns, --rows rows) (default synthetic,tpch; --quick: synthetic)",
    )
    p.add_argument("--quick", action="store_true", help="smoke run: tiny data, 2 repetitions, small memory checks")
    p.add_argument("--reps", type=int, default=None, help="timed repetitions per read (default 5)")
    p.add_argument(
        "--write-reps", type=int, default=None, help="writes per implementation (default 3; 0 = reuse files)"
    )
    p.add_argument("--versions", default=",".join(adapters.LANCE_VERSIONS), help="Lance versions (default 2.0,2.1,2.2)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument(
        "--case-budget",
        type=float,
        default=60.0,
        help="seconds one implementation may spend on one read measurement: a slow one gets fewer "
        "repetitions, at least 1 (default 60; 0 = no cap)",
    )
    p.add_argument(
        "--cache",
        choices=measure.CACHE_MODES,
        default="warm",
        help="page cache for timed takes and ranges: warm (an untimed call of the same rows first; "
        "default), cold (the file dropped from the OS cache first) or as-is",
    )
    p.add_argument(
        "--method",
        choices=METHODS,
        default="fresh",
        help="fresh: every timed read opens the file, reads once and closes it (what a dataset does per "
        "fragment; default); open: reads through a file opened once",
    )
    p.add_argument("--no-per-column", action="store_true", help="skip the per-column takes")
    p.add_argument("--rss-groups", default=None, help=f"peak-RSS groups (default {','.join(RSS_GROUPS)}; '' = none)")
    p.add_argument("--stream-bytes", type=parse_size, default=None, help="streaming-write check size (default 4GiB)")
    p.add_argument("--no-memcheck", action="store_true", help="skip the streaming-write / iter_batches checks")
    p.add_argument("--parquet-row-group-rows", type=int, default=adapters.PARQUET_ROW_GROUP_ROWS)
    p.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data")
    p.add_argument(
        "--out", type=Path, default=None, help="JSON results path (default results/latest.json; --quick: quick.json)"
    )
    p.add_argument("--markdown", action="store_true", help="print the tables as Markdown (for the README)")
    p.add_argument("--verbose", action="store_true", help="print the per-column takes of every size")
    return p


def _defaults(a: argparse.Namespace) -> argparse.Namespace:
    q = a.quick
    a.rows = a.rows if a.rows is not None else (3_000 if q else 1_000_000)
    a.reps = a.reps if a.reps is not None else (2 if q else 5)
    a.write_reps = a.write_reps if a.write_reps is not None else (1 if q else 3)
    a.datasets = [d for d in (a.datasets or ("synthetic" if q else "synthetic,tpch")).split(",") if d]
    a.rss_groups = [g for g in (a.rss_groups if a.rss_groups is not None else ",".join(RSS_GROUPS)).split(",") if g]
    a.stream_bytes = a.stream_bytes if a.stream_bytes is not None else parse_size("4MiB" if q else "4GiB")
    a.versions = [v for v in a.versions.split(",") if v]
    a.out = a.out or BENCH_DIR / "results" / ("quick.json" if q else "latest.json")
    return a


def _meta(a: argparse.Namespace, argv: list[str]) -> dict:
    from importlib.metadata import PackageNotFoundError, version

    def ver(pkg: str) -> str | None:
        try:
            return version(pkg)
        except PackageNotFoundError:
            return None

    try:
        commit = subprocess.run(
            ["git", "-C", str(BENCH_DIR), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "command": "python -m benchmarks.run " + " ".join(argv),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": commit or None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "versions": {p: ver(p) for p in ("pylance", "pyarrow", "numpy", "lancelot")},
        "settings": {
            k: getattr(a, k)
            for k in (
                "rows",
                "sf",
                "reps",
                "write_reps",
                "case_budget",
                "cache",
                "method",
                "seed",
                "rss_groups",
                "stream_bytes",
                "parquet_row_group_rows",
            )
        },
        "take_sizes": list(TAKE_SIZES),
        "range_rows": RANGE_ROWS,
    }


def _writers(a: argparse.Namespace, write_skips: dict[str, str]) -> list[tuple[adapters.Adapter, str | None]]:
    out: list[tuple[adapters.Adapter, str | None]] = [(adapters.PylanceAdapter(v), None) for v in a.versions]
    out += [(adapters.LancelotAdapter(v), write_skips.get(v)) for v in a.versions]
    out.append((adapters.ParquetAdapter(a.parquet_row_group_rows), None))
    return out


def write_all(ds: datasets.Dataset, a, write_skips, log) -> tuple[dict, dict, dict[str, Path]]:
    """Write the dataset with every writer (interleaved reps, each in a probe subprocess)."""
    writers = _writers(a, write_skips)
    paths = {w.name: a.data_dir / f"{ds.name}-{w.name.replace(' ', '-')}{w.suffix}" for w, _ in writers}
    write: dict[str, dict] = {w.name: ({"skip": s} if s else {"samples": []}) for w, s in writers}
    live = [w for w, s in writers if not s]
    for rep in range(a.write_reps):
        k = rep % max(1, len(live))
        for w in live[k:] + live[:k]:
            if "samples" not in write[w.name]:
                continue
            spec = {"op": "write", "lib": w.lib, "version": w.version, "path": str(paths[w.name])}
            spec.update(source=str(ds.arrow_path), parquet_row_group_rows=a.parquet_row_group_rows)
            r = run_probe(spec)
            if "seconds" not in r:
                write[w.name] = r
                log(f"  write {w.name}: {r}")
                continue
            write[w.name]["samples"].append(r["seconds"])
            for key in ("peak_rss", "delta_rss"):
                write[w.name][key] = max(write[w.name].get(key, 0), r[key])
            log(f"  write {w.name}: {r['seconds']:.2f} s, +{r['delta_rss'] / 1e6:.0f} MB RSS")
    for w in live:
        s = write[w.name].get("samples")
        if s:
            write[w.name]["median"] = statistics.median(s)
        elif s is not None and paths[w.name].exists():
            write[w.name] = {"skip": "not measured (--write-reps 0): existing file reused"}
    files = {
        name: ({"path": str(p), "size_bytes": p.stat().st_size} if p.exists() else {"skip": "not written"})
        for name, p in paths.items()
    }
    return write, files, paths


def bench_dataset(ds: datasets.Dataset, a, write_skips: dict, read_skips: dict, log) -> dict:
    log(f"== {ds.name}: {ds.num_rows:,} rows")
    write, files, paths = write_all(ds, a, write_skips, log)
    targets: list[measure.ReadTarget] = []
    for v in a.versions:
        targets.append(measure.ReadTarget(f"pylance {v}", adapters.PylanceAdapter(v), paths[f"pylance {v}"]))
    for v in a.versions:
        own, ref = paths[f"lancelot {v}"], paths[f"pylance {v}"]
        no_file = (
            None if own.exists() else f"no lancelot {v} file ({write[f'lancelot {v}'].get('skip', 'write failed')})"
        )
        targets.append(
            measure.ReadTarget(f"lancelot {v}", adapters.LancelotAdapter(v), own, skip=read_skips.get(v) or no_file)
        )
        targets.append(
            measure.ReadTarget(f"lancelot {v} (pl)", adapters.LancelotAdapter(v), ref, skip=read_skips.get(v))
        )
    targets.append(measure.ReadTarget("parquet", adapters.ParquetAdapter(), paths["parquet"]))
    for t in targets:
        if t.skip is None and not t.path.exists():
            t.skip = "file missing"
    table = ds.load()
    interop = _interop(a, paths, table)
    measure.open_targets(targets)
    if a.method == "fresh":
        fresh_handles(targets)
    cases = measure.build_cases(table.schema, TAKE_SIZES, min(RANGE_ROWS, table.num_rows), not a.no_per_column)
    reads = measure.time_cases(cases, targets, table, a.reps, a.seed, log=log, budget_s=a.case_budget, cache=a.cache)
    num_rows, arrow_bytes = table.num_rows, table.nbytes
    del table
    for t in targets:
        t.handle = None
    gc.collect()
    rss = _rss_groups(a, targets, num_rows, log)
    return {
        "name": ds.name,
        "num_rows": num_rows,
        "arrow_bytes": arrow_bytes,
        "columns": ds.schema.names,
        "targets": {t.name: {"file": str(t.path), "skip": t.skip} for t in targets},
        "write": write,
        "files": files,
        "reads": reads,
        "rss": rss,
        "interop": interop,
    }


def _interop(a, paths: dict[str, Path], table) -> dict[str, object]:
    """Does pylance read lancelot's files back exactly? (a sanity check, not a timing)"""
    out: dict[str, object] = {}
    for v in a.versions:
        p = paths[f"lancelot {v}"]
        if not p.exists():
            continue
        try:
            out[f"pylance reads lancelot {v}"] = adapters.same_data(adapters.PylanceAdapter(v).open(p).scan(), table)
        except Exception as e:  # noqa: BLE001
            out[f"pylance reads lancelot {v}"] = f"{type(e).__name__}: {e}"
    return out


def _rss_groups(a, targets: list[measure.ReadTarget], num_rows: int, log) -> dict[str, dict[str, dict]]:
    """Peak RSS of one scan / take of 1000 rows / read_range, each in its own subprocess."""
    rng = np.random.default_rng([a.seed, 999])
    idx = np.sort(rng.choice(num_rows, min(1000, num_rows), replace=False)).tolist()
    start = int(rng.integers(0, max(1, num_rows - RANGE_ROWS + 1)))
    out: dict[str, dict[str, dict]] = {}
    for group in a.rss_groups:
        out[group] = {}
        for t in targets:
            if t.skip is not None:
                out[group][t.name] = {"skip": t.skip}
                continue
            spec = {"lib": t.adapter.lib, "version": t.adapter.version, "path": str(t.path)}
            if group == "scan":
                spec["op"] = "scan"
            elif group == "take1000":
                spec.update(op="take", indices=idx)
            elif group == "range":
                spec.update(op="range", start=start, num_rows=min(RANGE_ROWS, num_rows - start))
            else:
                raise SystemExit(f"unknown RSS group {group!r} (choose from {', '.join(RSS_GROUPS)})")
            out[group][t.name] = r = run_probe(spec)
            if "delta_rss" in r:
                log(f"  rss {group} {t.name}: +{r['delta_rss'] / 1e6:.1f} MB (peak {r['peak_rss'] / 1e6:.0f} MB)")
    return out


def ratios_of(ds: dict) -> dict[str, dict[str, float | None]]:
    """{metric: {"lancelot/pylance 2.0": x, "lancelot 2.0/parquet": y, ...}} over the measured targets."""
    names = [n for n, t in ds["targets"].items() if not t.get("skip")]
    rows = report.ratio_rows(report.metric_rows(ds, names, list(TAKE_SIZES)), names)
    return {r.key: r.values for r in rows}


def _loadavg() -> list[float] | None:
    """1/5/15-minute load averages: other work on the machine makes timings noisy."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def render(results: dict, markdown: bool, verbose: bool) -> str:
    m = results.get("meta", {})
    v = m.get("versions", {})
    parts = [
        f"`{m.get('command')}` on {m.get('cpus')} CPUs, {m.get('date')} (commit {m.get('git_commit')}); "
        f"pylance {v.get('pylance')}, pyarrow {v.get('pyarrow')}, lancelot {v.get('lancelot')}; "
        f"load average {m.get('loadavg_start')} at start, {m.get('loadavg_end')} at end",
        "",
    ]
    lc = results.get("lancelot", {})
    for kind in ("write", "read"):
        for v, why in lc.get(f"{kind}_skips", {}).items():
            parts.append(f"lancelot cannot {kind} {v}: {why}")
    sizes = list(TAKE_SIZES) if verbose else [100]
    for ds in results["datasets"].values():
        names = [n for n, t in ds["targets"].items() if not t.get("skip")]
        hidden = [n for n in ds["targets"] if n not in names]
        parts += ["", report.render_dataset(ds, names, markdown, sizes)]
        if hidden:
            parts += ["", f"Columns not shown (skipped entirely, reasons above): {', '.join(hidden)}"]
        if ds.get("interop"):
            parts += [""] + [f"- {k}: {v}" for k, v in ds["interop"].items()]
    if results.get("memory_checks"):
        parts += ["", report.render_memcheck(results["memory_checks"], markdown)]
    return "\n".join(parts).strip() + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--spark" in argv:  # `lancelot bench --spark ...`: the Spark benchmark (benchmarks/spark_bench.py)
        from benchmarks.spark_bench import main as spark_main

        return spark_main([x for x in argv if x != "--spark"])
    a = _defaults(build_parser().parse_args(argv))

    def log(msg: str) -> None:
        print(msg, file=sys.stderr if a.markdown else sys.stdout, flush=True)

    results: dict = {"meta": _meta(a, argv), "datasets": {}}
    results["meta"]["loadavg_start"] = _loadavg()
    write_skips, read_skips = adapters.probe_lancelot(a.versions, a.data_dir / "probe")
    results["lancelot"] = {"write_skips": write_skips, "read_skips": read_skips}
    for kind, skips in (("write", write_skips), ("read", read_skips)):
        for v, why in skips.items():
            log(f"lancelot cannot {kind} {v}: {why} -> skipped")
    sets = []
    for name in a.datasets:
        if name == "synthetic":
            sets.append(datasets.synthetic(a.data_dir, a.rows, a.seed, log=log))
        elif name == "tpch":
            sets.append(datasets.tpch_lineitem(a.data_dir, a.sf, log=log))
        elif name.startswith("tpch-"):
            sets.append(datasets.tpch_table(a.data_dir, a.sf, name.removeprefix("tpch-"), log=log))
        elif name == "constants":
            sets.append(datasets.constants(a.data_dir, a.rows, a.seed, log=log))
        else:
            raise SystemExit(f"unknown dataset {name!r} (synthetic, tpch, tpch-TABLE, constants)")
    for ds in sets:
        res = results["datasets"][ds.name] = bench_dataset(ds, a, write_skips, read_skips, log)
        res["ratios"] = ratios_of(res)
        report.save_json(results, a.out)
    if not a.no_memcheck:
        ok = [v for v in a.versions if v not in write_skips]
        version = ok[-1] if ok else a.versions[-1]
        results["memory_checks"] = memcheck.streaming_checks(
            a.data_dir, a.stream_bytes, version, a.seed, batch_rows=1024 if a.quick else datasets.BATCH_ROWS, log=log
        )
    results["meta"]["loadavg_end"] = _loadavg()
    report.save_json(results, a.out)
    print(render(results, a.markdown, a.verbose), flush=True)
    log(f"results written to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
