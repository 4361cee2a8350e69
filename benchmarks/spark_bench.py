"""Spark benchmark: the "lance" data source against Spark's Parquet reader and a Python-source floor.

    python -m benchmarks.spark_bench [--rows N] [--reps R] [--markdown]     (or: lancelot bench --spark ...)

One local SparkSession (``local[2]`` by default) scans the synthetic table's scalar columns
(benchmarks/datasets.py; the vector column is left out) through:

* ``lance <writer> <version>``: the "lance" source on a lancelot-written 2.0 file, on 2.1/2.2
  files written by pylance, and on a Lance dataset written by lancelot (``dataset:2.2``: fragments of
  1Mi rows, read through the dataset path: pinned version, live-row ranges) (``--lance-files``);
* ``parquet``: Spark's own (JVM, vectorized) Parquet reader on a pyarrow-written file;
* ``floor``: benchmarks/spark_floor.py, a minimal Python data source that yields pyarrow's batches
  of the same Parquet file, split into as many partitions as the lance source plans.

A scan is materialized with ``df.write.format("noop")``: every row of every column reaches the
JVM, nothing is skipped.  A point lookup ``filter(col("id") == k).collect()`` is measured through
the lance source with filter pushdown (zone maps), without it, and through Spark's Parquet with
its pushdown on (row-group statistics) and off (a full scan), next to three fixed costs: a one-row
Python data source (spark_floor.OneRowDataSource: one ``id`` column, and one returning the lookup's
columns) and ``spark.range(1)``.  Repetitions are interleaved (each
repetition runs every case once, in a seeded random order; lookups use the same random key); the
report gives medians and ratios; JSON goes to benchmarks/results/spark.json.

``--ops`` instead times the operations that change a dataset (its ``--rows`` rows, written by
pylance in fragments of 1Mi rows; restored to that first version, untimed, before every case):
``merge_insert`` of ``rows / 10`` source rows (a Parquet file; half of them keys already in the
dataset, half new) and a backfill (``add_columns`` of ``value * 2 + small``), each through
``lancelot.spark`` (Spark does the join; one task per fragment), pylance's own call in this process,
and lancelot's library call; for the backfill also Spark's Parquet path (read the table, add the
column, write it all again).  Every case's counts and schema are checked against pylance's.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from benchmarks import datasets, report  # noqa: E402
from benchmarks.adapters import PARQUET_ROW_GROUP_ROWS  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
DEFAULT_COLUMNS = "id,small,value,category,text"
DEFAULT_LANCE_FILES = "lancelot:2.0,pylance:2.1,pylance:2.2,dataset:2.2"
REF_SPARK, REF_PYTHON = "spark.range(1) (Spark's fixed cost)", "one-row Python source (fixed cost)"
#: the same source returning the lookup's columns (the fixed cost of a query that returns what the lookup returns)
REF_PYTHON_ROW = "one-row Python source, the lookup's columns"
#: the issue's goals: scan at most this times the floor; lookup at least this times faster than Parquet
SCAN_GOAL, LOOKUP_GOAL = 1.1, 10.0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.spark_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="synthetic rows (default 1,000,000)")
    p.add_argument("--reps", type=int, default=5, help="timed repetitions of every case (default 5)")
    p.add_argument("--columns", default=DEFAULT_COLUMNS, help=f"columns scanned (default {DEFAULT_COLUMNS})")
    p.add_argument(
        "--lance-files",
        default=DEFAULT_LANCE_FILES,
        help=f"writer:version of the Lance files scanned (default {DEFAULT_LANCE_FILES})",
    )
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an extra Spark setting for the session (repeatable), e.g. spark.python.unix.domain.socket.enabled=true",
    )
    p.add_argument("--batch-size", type=int, default=None, help="lance source batch_size option (default: its own)")
    p.add_argument("--floor-threads", action="store_true", help="let pyarrow use threads in the floor source")
    p.add_argument("--no-lookup", action="store_true", help="skip the point lookups")
    p.add_argument("--no-scan", action="store_true", help="skip the scans")
    p.add_argument("--ops", action="store_true", help="time merge_insert and a backfill instead of scans and lookups")
    p.add_argument("--parquet-row-group-rows", type=int, default=PARQUET_ROW_GROUP_ROWS)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data")
    p.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "spark.json")
    p.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    return p


# -- files --------------------------------------------------------------------------------------


class _ParquetSink:
    """A Parquet file written batch by batch in row groups of exactly ``row_group_rows`` (the last one shorter)."""

    def __init__(self, path: str, schema: pa.Schema, row_group_rows: int) -> None:
        import pyarrow.parquet as pq

        self.writer, self.rows, self.pending = pq.ParquetWriter(path, schema), row_group_rows, []

    def write(self, batch: pa.RecordBatch) -> None:
        self.pending.append(batch)
        table = pa.Table.from_batches(self.pending)
        while table.num_rows >= self.rows:
            self.writer.write_table(table.slice(0, self.rows), row_group_size=self.rows)
            table = table.slice(self.rows)
        self.pending = table.combine_chunks().to_batches() if table.num_rows else []

    def close(self) -> None:
        if self.pending:
            self.writer.write_table(pa.Table.from_batches(self.pending), row_group_size=self.rows)
        self.writer.close()


class _PylanceSink:
    def __init__(self, writer) -> None:
        self.writer = writer

    def write(self, batch: pa.RecordBatch) -> None:
        self.writer.write_batch(batch)

    def close(self) -> None:
        self.writer.close()


class _DatasetSink:
    """A lancelot dataset: fragments of ``rows_per_file`` rows (write_fragments), one commit at close."""

    def __init__(self, uri: str, schema: pa.Schema, version: str, rows_per_file: int = 1 << 20) -> None:
        self.uri, self.schema, self.version, self.rows_per_file = uri, schema, version, rows_per_file
        self.pending: list[pa.RecordBatch] = []
        self.rows = 0
        self.fragments: list = []

    def _flush(self) -> None:
        from lancelot.dataset import write_fragments

        if self.pending:
            self.fragments += write_fragments(
                self.pending,
                self.uri,
                schema=self.schema,
                data_storage_version=self.version,
                max_rows_per_file=self.rows_per_file,
            )
        self.pending, self.rows = [], 0

    def write(self, batch: pa.RecordBatch) -> None:
        self.pending.append(batch)
        self.rows += batch.num_rows
        if self.rows >= self.rows_per_file:
            self._flush()

    def close(self) -> None:
        from lancelot.dataset import commit

        self._flush()
        commit(self.uri, "create", fragments=self.fragments, schema=self.schema)


def _sink(name: str, path: str, schema: pa.Schema, a: argparse.Namespace):
    """A writer with ``write(batch)`` / ``close()`` for the file called ``name``."""
    if name == "parquet":
        return _ParquetSink(path, schema, a.parquet_row_group_rows)
    _, writer, version = name.split(" ")
    if writer == "lancelot":
        from lancelot import LanceWriter

        return LanceWriter(path, schema, version=version)
    if writer == "pylance":
        from lance.file import LanceFileWriter

        return _PylanceSink(LanceFileWriter(path, schema, version=version))
    if writer == "dataset":
        return _DatasetSink(path, schema, version)
    raise SystemExit(f"unknown Lance writer {writer!r} (lancelot, pylance, dataset)")


def prepare_files(a: argparse.Namespace, log) -> dict[str, Path]:
    """The Lance and Parquet files of the benchmark, cached under data_dir/spark/.

    Missing files are written in one pass over the synthetic table's batches (the same seeded
    rows as benchmarks/datasets.py's ``synthetic-N``), keeping only the scanned columns.
    """
    cols = [c for c in a.columns.split(",") if c]
    out_dir = a.data_dir / "spark"
    out_dir.mkdir(parents=True, exist_ok=True)
    tag = f"synthetic-{a.rows}-seed{a.seed}-{'_'.join(cols)}"
    files = {
        f"lance {spec.replace(':', ' ')}": out_dir / f"{tag}-{spec.replace(':', '-')}.lance"
        for spec in a.lance_files.split(",")
        if spec
    }
    files["parquet"] = out_dir / f"{tag}-rg{a.parquet_row_group_rows}.parquet"
    missing = {n: p for n, p in files.items() if not p.exists()}
    if missing:
        schema = pa.schema([datasets.SYNTHETIC_SCHEMA.field(c) for c in cols])
        log(f"writing {', '.join(missing)} ({a.rows:,} rows) under {out_dir}")
        tmp = {n: p.with_name(p.name + ".tmp") for n, p in missing.items()}
        sinks = {n: _sink(n, str(t), schema, a) for n, t in tmp.items()}
        for batch in datasets.synthetic_batches(a.rows, a.seed):
            batch = batch.select(cols)
            for sink in sinks.values():
                sink.write(batch)
        for n, sink in sinks.items():
            sink.close()
            os.replace(tmp[n], missing[n])
    return files


# -- Spark --------------------------------------------------------------------------------------


def spark_session(master: str, conf: list[str] | tuple[str, ...] = ()):
    """One local session; workers run this interpreter and can import benchmarks/ and lancelot.
    ``conf``: extra ``key=value`` settings."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    from pyspark.sql import SparkSession

    from benchmarks.spark_floor import OneRowDataSource, ParquetFloorDataSource
    from lancelot.spark.source import LancePushdownDataSource

    builder = (
        SparkSession.builder.master(master)
        .appName("lancelot-spark-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.python.filterPushdown.enabled", "true")
    )
    for kv in conf:
        key, sep, value = kv.partition("=")
        if not sep:
            raise SystemExit(f"--conf takes KEY=VALUE, not {kv!r}")
        builder = builder.config(key.strip(), value.strip())
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(LancePushdownDataSource)  # a new DataFrame per query: pushdown is safe
    spark.dataSource.register(ParquetFloorDataSource)
    spark.dataSource.register(OneRowDataSource)
    return spark


class Cases:
    """The DataFrames of every case; each call builds a fresh one (planning is part of the cost)."""

    def __init__(self, spark, files: dict[str, Path], a: argparse.Namespace) -> None:
        self.spark, self.files, self.a = spark, files, a
        self.cols = [c for c in a.columns.split(",") if c]
        self.floor_partitions = 2

    def df(self, name: str, **lance_options):
        s, path = self.spark, str(self.files["parquet" if name in ("parquet", "floor") else name])
        if name == "parquet":
            return s.read.parquet(path).select(*self.cols)
        if name == "floor":
            r = s.read.format("parquet_floor").option("num_partitions", self.floor_partitions)
            return (
                r.option("columns", ",".join(self.cols)).option("threads", str(self.a.floor_threads).lower()).load(path)
            )
        r = s.read.format("lance").option("columns", ",".join(self.cols))
        if self.a.batch_size:
            r = r.option("batch_size", self.a.batch_size)
        for k, v in lance_options.items():
            r = r.option(k, v)
        return r.load(path)

    def scan(self, name: str) -> Callable[[], None]:
        return lambda: self.df(name).write.format("noop").mode("overwrite").save()

    def lookup(self, name: str, key: list[int]) -> Callable[[], object]:
        """A lookup of ``key[0]`` (read when called, so every case of a repetition looks up the same key)."""
        from pyspark.sql.functions import col

        def go():
            if name.startswith("parquet"):
                pushdown = name == "parquet pushdown"
                self.spark.conf.set("spark.sql.parquet.filterPushdown", str(pushdown).lower())
                try:
                    rows = self.df("parquet").filter(col("id") == key[0]).collect()
                finally:
                    self.spark.conf.set("spark.sql.parquet.filterPushdown", "true")
            else:
                pushdown = name.endswith(" pushdown")
                lance_name = name.removesuffix(" pushdown").removesuffix(" full scan")
                df = self.df(lance_name, filter_pushdown="auto" if pushdown else "false")
                rows = df.filter(col("id") == key[0]).collect()
            if len(rows) != 1 or rows[0]["id"] != key[0]:
                raise AssertionError(f"{name}: lookup of id {key[0]} returned {rows[:3]}")
            return rows

        return go

    def fixed_cost(self, name: str, schema=None) -> Callable[[], object]:
        """The reference costs of any query: Spark's own, and a Python data source's (one row, filtered;
        with ``schema``, a row of those columns)."""
        from pyspark.sql.functions import col

        if name == REF_SPARK:
            return lambda: self.spark.range(1).filter(col("id") == 0).collect()
        reader = self.spark.read.format("one_row")
        if schema is not None:
            reader = reader.schema(schema)
        return lambda: reader.load().filter(col("id") == 0).collect()

    def fingerprint(self, name: str) -> list:
        """Rows, and a hash of every value of every column (the same data must give the same numbers)."""
        from pyspark.sql import functions as F

        df = self.df(name)
        r = df.agg(F.count("*"), F.sum(F.xxhash64(*self.cols).cast("decimal(38,0)"))).collect()[0]
        return [int(r[0]), str(r[1])]


def time_interleaved(
    cases: dict[str, Callable[[], object]], reps: int, before_rep=None, log=print, before_case=None
) -> dict:
    """Median seconds per case: each repetition runs every case once, in a new (seeded) random order.

    Not a rotation: in a rotation each case always follows the same one, and a Spark query's time
    depends on its predecessor (two traced runs at load ~4-5, docs/SPARK.md: whichever of two Python-source
    lookups ran right after Parquet's full scan was the faster one, by 37 and 61 ms in medians)."""
    names = list(cases)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for rep in range(reps):
        if before_rep is not None:
            before_rep(rep)
        for n in random.Random(rep).sample(names, len(names)):
            if before_case is not None:
                before_case(n)  # untimed
            t0 = time.perf_counter()
            cases[n]()
            samples[n].append(time.perf_counter() - t0)
        log(f"  rep {rep + 1}/{reps}: " + ", ".join(f"{n} {samples[n][-1]:.2f}s" for n in names))
    return {n: {"median": statistics.median(v), "samples": v} for n, v in samples.items()}


# -- operations (--ops) -------------------------------------------------------------------------

BACKFILL = {"backfill": "value * 2 + small"}


def prepare_ops(a: argparse.Namespace, log) -> tuple[Path, Path]:
    """The dataset the operations change (pylance-written, fragments of 1Mi rows) and the merge
    source (Parquet: ``rows // 10`` rows, half of them keys of the dataset drawn at random, half
    new keys, in a shuffled order), cached under data_dir/spark/."""
    import lance
    import pyarrow.parquet as pq

    cols = [c for c in a.columns.split(",") if c]
    out_dir = a.data_dir / "spark"
    out_dir.mkdir(parents=True, exist_ok=True)
    tag = f"synthetic-{a.rows}-seed{a.seed}-{'_'.join(cols)}"
    uri, src = out_dir / f"{tag}-ops.lance", out_dir / f"{tag}-ops-source.parquet"
    schema = pa.schema([datasets.SYNTHETIC_SCHEMA.field(c) for c in cols])
    if not uri.exists():
        log(f"writing {uri} ({a.rows:,} rows)")
        tmp = uri.with_name(uri.name + ".tmp")
        reader = pa.RecordBatchReader.from_batches(
            schema, (b.select(cols) for b in datasets.synthetic_batches(a.rows, a.seed))
        )
        lance.write_dataset(reader, str(tmp), max_rows_per_file=1 << 20, data_storage_version="2.2")
        os.replace(tmp, uri)
    if not src.exists():
        m = max(2, a.rows // 10)
        rng = np.random.default_rng(a.seed + 1)
        ids = np.concatenate([rng.choice(a.rows, m - m // 2, replace=False), np.arange(a.rows, a.rows + m // 2)])
        rng.shuffle(ids)
        t = pa.Table.from_batches([datasets.synthetic_batch(0, m, a.seed + 1).select(cols)])
        t = t.set_column(t.column_names.index("id"), schema.field("id"), pa.array(ids, pa.int64()))
        pq.write_table(t.cast(schema), src.with_name(src.name + ".tmp"))
        os.replace(src.with_name(src.name + ".tmp"), src)
    return uri, src


def run_ops(spark, a: argparse.Namespace, parquet: Path, results: dict, log) -> None:
    """merge_insert and the backfill through lancelot.spark, pylance and lancelot (and the backfill
    through Spark's Parquet path), verified against pylance's result, then timed interleaved."""
    import lance
    import pyarrow.parquet as pq

    import lancelot
    import lancelot.spark as ops

    uri, src = prepare_ops(a, log)
    u = str(uri)
    out_parquet = str(a.data_dir / "spark" / "ops-backfill-out.parquet")

    def merge_spark() -> object:
        return ops.merge_insert(spark.read.parquet(str(src)), u, "id")

    def merge_pylance() -> object:
        b = lance.dataset(u).merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        return b.execute(pq.read_table(src))

    def merge_lancelot() -> object:
        b = lancelot.dataset(u).merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        return b.execute(pq.read_table(src))

    def backfill_parquet() -> object:
        df = spark.read.parquet(str(parquet)).selectExpr("*", f"{BACKFILL['backfill']} AS backfill")
        df.write.mode("overwrite").parquet(out_parquet)
        return None

    cases: dict[str, Callable[[], object]] = {
        "merge_insert, lancelot.spark": merge_spark,
        "merge_insert, pylance": merge_pylance,
        "merge_insert, lancelot": merge_lancelot,
        "backfill, lancelot.spark": lambda: ops.add_columns(spark, u, BACKFILL),
        "backfill, pylance": lambda: lance.dataset(u).add_columns(BACKFILL),
        "backfill, lancelot": lambda: lancelot.dataset(u).add_columns(BACKFILL),
        "backfill, Spark Parquet rewrite": backfill_parquet,
    }

    def restore(_name: str = "") -> None:
        lance.dataset(u, version=1).restore()  # the dataset as written: no backfill column, no merge

    log("warm-up and verification (each against pylance's result):")
    want: dict[str, object] = {}
    for n, fn in cases.items():
        restore()
        got = fn()
        ds = lance.dataset(u)
        check = got if n.startswith("merge") else ds.schema.names if "Parquet" not in n else None
        kind = n.split(",")[0]
        want.setdefault(kind, check)
        if check is not None and check != want[kind]:
            raise SystemExit(f"{n}: {check} differs from {want[kind]}")
        log(f"  {n}: {check}, {ds.count_rows():,} rows")
    results["ops_check"] = want
    log("operations (the dataset restored to its first version before each, untimed):")
    results["ops"] = time_interleaved(cases, a.reps, log=log, before_case=restore)
    restore()


def lookup_rows_planned(path: Path, cols: list[str], key: int) -> dict:
    """What the lance source plans for ``id == key``: partitions and rows it will read (driver-side)."""
    from pyspark.sql.datasource import EqualTo

    from lancelot.spark.reader import LancePushdownReader
    from lancelot.spark.source import LanceDataSource

    options = {"path": str(path), "columns": ",".join(cols)}
    reader = LancePushdownReader(options, LanceDataSource(options).schema())
    reader.pushFilters([EqualTo(("id",), key)])
    parts = reader.partitions()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        rows = sum(b.num_rows for p in parts for b in reader.read(p))
        times.append(time.perf_counter() - t0)
    return {
        "partitions": len(parts),
        "rows": sum(p.num_rows for p in parts),
        "rows_read": rows,
        "python_read_ms": round(statistics.median(times) * 1000, 3),
    }


def run_scans(c: Cases, results: dict, log) -> None:
    """Every file scanned through its source: verified first (same rows, same values), then timed."""
    lance_names = [n for n in c.files if n.startswith("lance ")]
    c.floor_partitions = c.df(lance_names[0]).rdd.getNumPartitions()
    scans = {n: c.scan(n) for n in lance_names + ["parquet", "floor"]}
    results["partitions"]["scan"] = {n: c.df(n).rdd.getNumPartitions() for n in scans}
    log("warm-up and verification (row count and a hash of every value):")
    prints = results["fingerprints"] = {n: c.fingerprint(n) for n in scans}
    for n, fp in prints.items():
        log(f"  {n}: {fp}")
    if len({json.dumps(fp) for fp in prints.values()}) != 1:
        raise SystemExit(f"the sources disagree on the data: {prints}")
    log("scans (df.write.format('noop')):")
    results["scan"] = time_interleaved(scans, c.a.reps, log=log)


def run_lookups(c: Cases, results: dict, log) -> None:
    """``id == k`` through the first Lance file (with and without pushdown), Parquet, and the fixed costs."""
    from pyspark.sql.functions import col

    rng = np.random.default_rng(c.a.seed)
    key = [int(rng.integers(0, c.a.rows))]
    lance = [n for n in c.files if n.startswith("lance ")][0]
    names = [f"{lance} pushdown", f"{lance} full scan", "parquet pushdown", "parquet full scan"]
    lookups: dict[str, Callable[[], object]] = {n: c.lookup(n, key) for n in names}
    lookups.update({n: c.fixed_cost(n) for n in (REF_PYTHON, REF_SPARK)})
    lookups[REF_PYTHON_ROW] = c.fixed_cost(REF_PYTHON_ROW, c.df(lance).schema)
    for fn in lookups.values():  # warm-up; each lookup checks its one row
        fn()
    results["partitions"]["lookup"] = {
        f"{lance} pushdown": c.df(lance).filter(col("id") == key[0]).rdd.getNumPartitions(),
        f"{lance} full scan": c.df(lance, filter_pushdown="false").rdd.getNumPartitions(),
    }
    results["lookup_plan"] = lookup_rows_planned(c.files[lance], c.cols, key[0])
    log(f"lookups (filter(col('id') == k).collect()); lance plans {results['lookup_plan']}:")

    def new_key(rep: int) -> None:
        key[0] = int(rng.integers(0, c.a.rows))

    results["lookup"] = time_interleaved(lookups, c.a.reps, before_rep=new_key, log=log)


def goal_notes(r: dict[str, float], lance: str) -> list[str]:
    """The issue's two goals, against the measured ratios."""
    notes = []
    k = f"scan {lance} / floor"
    if k in r:
        notes.append(f"scan goal (lance / floor <= {SCAN_GOAL}): {lance}: {r[k]:.2f}x")
    k = f"lookup speedup: parquet pushdown / {lance} pushdown"
    if k in r:
        notes.append(
            f"lookup goal (>= {LOOKUP_GOAL}x faster than Spark's Parquet): {r[k]:.1f}x vs its pushdown, "
            f"{r[f'lookup speedup: parquet full scan / {lance} pushdown']:.1f}x vs its full scan; the "
            f"lookup takes {r[f'lookup {lance} pushdown / {REF_PYTHON}']:.2f}x the fixed cost of a "
            f"one-row Python source query"
            + (
                f" ({r[k2]:.2f}x that of one returning the lookup's columns)"
                if (k2 := f"lookup {lance} pushdown / {REF_PYTHON_ROW}") in r
                else ""
            )
        )
    return notes


# -- report -------------------------------------------------------------------------------------


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def _table(rows: list[list[str]], header: list[str], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = lambda r: "  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w) for i, (x, w) in enumerate(zip(r, widths)))
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def ratios_of(res: dict) -> dict[str, float]:
    """The headline ratios (scan: < 1 is faster than the reference; lookup: speedups, > 1 is faster)."""
    scan = {k: v["median"] for k, v in res.get("scan", {}).items()}
    look = {k: v["median"] for k, v in res.get("lookup", {}).items()}
    out: dict[str, float] = {}
    for name in scan:
        for ref in ("floor", "parquet"):
            if name.startswith("lance ") and ref in scan:
                out[f"scan {name} / {ref}"] = scan[name] / scan[ref]
    if "floor" in scan and "parquet" in scan:
        out["scan floor / parquet"] = scan["floor"] / scan["parquet"]
    op = {k: v["median"] for k, v in res.get("ops", {}).items()}
    for kind in ("merge_insert", "backfill"):
        mine = op.get(f"{kind}, lancelot.spark")
        for ref in ("pylance", "lancelot", "Spark Parquet rewrite"):
            if mine and f"{kind}, {ref}" in op:
                out[f"{kind}: lancelot.spark / {ref}"] = mine / op[f"{kind}, {ref}"]
    for name in look:
        if name.endswith(" pushdown") and name.startswith("lance "):
            for ref in ("parquet pushdown", "parquet full scan", name.replace(" pushdown", " full scan")):
                if ref in look:
                    out[f"lookup speedup: {ref} / {name}"] = look[ref] / look[name]
            for ref in (REF_PYTHON, REF_PYTHON_ROW):
                if ref in look:
                    out[f"lookup {name} / {ref}"] = look[name] / look[ref]
    return out


def render(results: dict, markdown: bool) -> str:
    m = results["meta"]
    parts = [
        f"Spark benchmark: {m['rows']:,} rows, columns {m['columns']}, {m['master']}, "
        + "".join(f"{c}, " for c in m.get("conf", []))
        + f"{m['reps']} interleaved repetitions (medians, seconds)",
        "",
    ]
    for kind in ("scan", "lookup", "ops"):
        cases = results.get(kind)
        if not cases:
            continue
        rows = [
            [
                n,
                _num(c["median"]),
                _num(min(c["samples"])),
                _num(max(c["samples"])),
                str(results["partitions"].get(kind, {}).get(n, "-")),
            ]
            for n, c in cases.items()
        ]
        parts += [_table(rows, [kind, "median s", "min s", "max s", "partitions"], markdown), ""]
    rows = [[k, _num(v)] for k, v in results["ratios"].items()]
    parts += [_table(rows, ["ratio", "x"], markdown), ""]
    plan = results.get("lookup_plan")
    if plan:
        parts.append(
            f"- the lance lookup (zone maps) plans {plan['partitions']} partition(s), {plan['rows']:,} of "
            f"{m['rows']:,} rows; reading them in Python (filters applied: {plan['rows_read']:,} rows returned) "
            f"takes {plan['python_read_ms']} ms"
        )
    for line in results.get("notes", []):
        parts.append(f"- {line}")
    return "\n".join(parts).rstrip() + "\n"


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


def _size(p: Path) -> int:
    """A file's size, or the sum of the files under a directory (a dataset)."""
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    a = build_parser().parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr if a.markdown else sys.stdout, flush=True)

    from importlib.metadata import version

    results: dict = {
        "meta": {
            "command": "python -m benchmarks.spark_bench " + " ".join(argv),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "git_commit": _git_commit(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "versions": {p: version(p) for p in ("pyspark", "pylance", "pyarrow", "lancelot")},
            "rows": a.rows,
            "columns": a.columns,
            "master": a.master,
            "conf": list(a.conf),
            "reps": a.reps,
            "seed": a.seed,
            "batch_size": a.batch_size,
            "parquet_row_group_rows": a.parquet_row_group_rows,
            "floor_threads": a.floor_threads,
            "loadavg_start": list(os.getloadavg()),
        }
    }
    files = prepare_files(argparse.Namespace(**{**vars(a), "lance_files": ""}) if a.ops else a, log)
    results["file_mb"] = {n: round(_size(p) / 1e6, 2) for n, p in files.items()}
    spark = spark_session(a.master, a.conf)
    try:
        c = Cases(spark, files, a)
        results["partitions"] = {}
        if a.ops:
            run_ops(spark, a, files["parquet"], results, log)
        if not a.no_scan and not a.ops:
            run_scans(c, results, log)
        if not a.no_lookup and not a.ops:
            run_lookups(c, results, log)
    finally:
        spark.stop()
    results["ratios"] = ratios_of(results)
    lance_names = [n for n in files if n.startswith("lance ")]
    results["notes"] = goal_notes(results["ratios"], lance_names[0]) if lance_names else []
    results["meta"]["loadavg_end"] = list(os.getloadavg())
    report.save_json(results, a.out)
    print(render(results, a.markdown), flush=True)
    log(f"results written to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
