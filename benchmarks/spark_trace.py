"""Where a Spark point lookup's time goes: the lance source against the one-row Python source, phase by phase.

    python -m benchmarks.spark_trace [--rows N] [--reps R] [--data-dir D] [--conf KEY=VALUE]

Tracing subclasses of both sources append one timestamp per phase, from whichever Python worker runs
it, to a JSON-lines file: ``schema()`` (the data-source worker of ``load()``), ``reader()``,
``pushFilters()`` and ``partitions()`` (the pushdown planner worker), ``read()`` and its first row (the
task's worker), and ``import`` when a worker first imports this module (a new worker mid-run).  The
driver records each query's start and ``collect()``'s return.  Three cases, interleaved in a seeded
random order per repetition on the benchmark's dataset (benchmarks/spark_bench.py, ``dataset:2.2``):
the lance lookup ``id == k`` with pushdown, the one-row source, and the one-row source returning the
lookup's columns.  The report gives, per case, the median of each phase's time from the query's start.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from benchmarks.spark_floor import OneRowDataSource, OneRowReader
from lancelot.spark.reader import LancePushdownReader, LanceReader
from lancelot.spark.source import LanceDataSource, called_by_pushdown_planner

TRACE_ENV = "LANCELOT_SPARK_TRACE"
_T0 = time.time()


def event(name: str, **extra: Any) -> None:
    """Append one timestamped event to the trace file (no-op without one)."""
    path = os.environ.get(TRACE_ENV)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"pid": os.getpid(), "ev": name, "t": time.time(), **extra}) + "\n")


event("import", seconds=time.time() - _T0)


class _Traced:
    """Times a reader's phases (mixed in before the reader class)."""

    __slots__ = ()

    def pushFilters(self, filters: list[Any]) -> Any:
        event("pushFilters")
        out = list(super().pushFilters(filters))
        event("pushFilters done")
        return out

    def partitions(self) -> Any:
        event("partitions")
        parts = super().partitions()
        event("partitions done")
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        event("read")
        first = True
        for batch in super().read(partition):
            if first:
                event("first batch")
                first = False
            yield batch
        from lancelot.util.jit import state

        # numba loaded in this worker, and threads alive (lancelot prepares hot kernels on a background thread)
        event("read done", numba=state["numba_loaded"], threads=threading.active_count())


class TracedLanceReader(_Traced, LanceReader):
    pass


class TracedLancePushdownReader(_Traced, LancePushdownReader):
    pass


class TracedOneRowReader(_Traced, OneRowReader):
    pass


class _TracedSchema:
    """A data source whose ``schema`` call is traced (mixed in before the source)."""

    def schema(self) -> StructType:
        event("schema")
        s: StructType = super().schema()  # type: ignore[misc]
        event("schema done")
        return s


class TracedLanceDataSource(_TracedSchema, LanceDataSource):
    @classmethod
    def name(cls) -> str:
        return "lance_traced"

    def reader(self, schema: StructType) -> DataSourceReader:
        event("reader")
        # LanceDataSource.reader's choice, made without building its reader (which would open the dataset twice)
        choice = str(self.options.get("filter_pushdown", "auto")).lower()
        pushdown = choice == "true" or (choice == "auto" and called_by_pushdown_planner())
        r = (TracedLancePushdownReader if pushdown else TracedLanceReader)(self.options, schema)
        event("reader done")
        return r


class TracedOneRowDataSource(_TracedSchema, OneRowDataSource):
    @classmethod
    def name(cls) -> str:
        return "one_row_traced"

    def reader(self, schema: StructType) -> DataSourceReader:
        event("reader")
        r = TracedOneRowReader(schema)
        event("reader done")
        return r


def phase_medians(events: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per case, the median milliseconds from each query's start to each of its events."""
    out: dict[str, dict[str, list[float]]] = {}
    start: dict[str, Any] | None = None
    for e in events:
        if e["ev"] == "query":
            start = e
        elif start is not None and e["ev"] != "import":
            out.setdefault(start["case"], {}).setdefault(e["ev"], []).append((e["t"] - start["t"]) * 1000)
    return {case: {ev: statistics.median(v) for ev, v in phases.items()} for case, phases in out.items()}


def main(argv: list[str] | None = None) -> int:
    from benchmarks import spark_bench

    p = argparse.ArgumentParser(prog="python -m benchmarks.spark_trace", description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--data-dir", type=Path, default=spark_bench.BENCH_DIR / "data")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    a = p.parse_args(argv)
    bench = spark_bench.build_parser().parse_args(
        ["--rows", str(a.rows), "--lance-files", "dataset:2.2", "--data-dir", str(a.data_dir)]
    )
    path = str(spark_bench.prepare_files(bench, print)["lance dataset 2.2"])
    trace = Path(tempfile.mkdtemp()) / "trace.jsonl"
    os.environ[TRACE_ENV] = str(trace)  # before the JVM starts: its Python workers inherit it
    spark = spark_bench.spark_session("local[2]", a.conf)
    from pyspark.sql.functions import col

    # registered from the module by its name, not from __main__ (``python -m``): cloudpickle ships classes
    # of __main__ by value, and pickling them again with every read function cost ~7 ms per query
    from benchmarks import spark_trace

    spark.dataSource.register(spark_trace.TracedLanceDataSource)
    spark.dataSource.register(spark_trace.TracedOneRowDataSource)
    cols = spark_bench.DEFAULT_COLUMNS
    wide = spark.read.format("lance").option("columns", cols).load(path).schema
    rng = random.Random(a.rows)
    key = [0]
    cases = {
        "lance lookup, pushdown": lambda: (
            spark.read.format("lance_traced").option("columns", cols).load(path).filter(col("id") == key[0]).collect()
        ),
        spark_bench.REF_PYTHON: lambda: spark.read.format("one_row_traced").load().filter(col("id") == 0).collect(),
        spark_bench.REF_PYTHON_ROW: lambda: (
            spark.read.format("one_row_traced").schema(wide).load().filter(col("id") == 0).collect()
        ),
    }
    try:
        # warm-up as spark_bench's: a full read in the task workers loads lancelot's numba kernels (a lookup
        # alone runs numpy paths, whose kernels would load on a background thread mid-run), then every case
        spark.read.format("lance").option("columns", cols).option("filter_pushdown", "false").load(path).filter(
            col("id") == -1
        ).collect()
        for fn in list(cases.values()) * 3:
            key[0] = rng.randrange(a.rows)
            fn()
        trace.write_text("")
        walls: dict[str, list[float]] = {n: [] for n in cases}
        for rep in range(a.reps):
            key[0] = rng.randrange(a.rows)
            for n in random.Random(rep).sample(list(cases), len(cases)):
                event("query", case=n)
                t0 = time.perf_counter()
                cases[n]()
                walls[n].append(time.perf_counter() - t0)
                event("collect() returned")
    finally:
        spark.stop()
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    load = os.getloadavg()[0]
    print(f"{a.rows:,} rows, {a.reps} interleaved repetitions, load {load:.1f}; medians, ms from the query's start")
    for case, phases in phase_medians(events).items():
        print(f"{case}: whole query {statistics.median(walls[case]) * 1000:.0f} ms")
        for ev, ms in sorted(phases.items(), key=lambda kv: kv[1]):
            print(f"  {ev:20s} {ms:8.1f}")
    done = [e for e in events if e["ev"] == "read done"]
    print("tasks in a worker with numba loaded:", sum(e["numba"] for e in done), "of", len(done))
    print("threads alive at the end of a task:", sorted({e["threads"] for e in done}))
    started = [e for e in events if e["ev"] == "import"]
    print(f"Python workers that imported this module during the timed queries: {len(started)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
