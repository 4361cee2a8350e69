"""Spark on Lance datasets, in three modes: local[2], local-cluster[2,1,1024] (two executor JVMs) and
Spark Connect, against pylance 14.0.2 (tests/spark/sessions.py starts one session per mode)."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
lance = pytest.importorskip("lance")

from tests.spark.sessions import classic_session, connect_mode, connect_session  # noqa: E402

MODES = ["local", "local-cluster", "connect"]
PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


@pytest.fixture(scope="module", params=MODES)
def mode(request):
    return request.param


@pytest.fixture
def spark(mode):
    if mode == "connect":
        session = connect_session()
        with connect_mode():
            yield session
        return
    yield classic_session("local[2]" if mode == "local" else "local-cluster[2,1,1024]")


def _data_files(uri: str) -> set[str]:
    """The data files under ``uri/data`` (not the hidden temporaries a killed task may leave)."""
    return {f for f in os.listdir(os.path.join(uri, "data")) if not f.startswith(".")}


def _ids(df) -> list[int]:
    return sorted(r.id for r in df.select("id").collect())


def _table(df_rows) -> pa.Table:
    return pa.Table.from_pylist([r.asDict() for r in df_rows])


def _frame(spark, start: int, n: int, parts: int = 2):
    from pyspark.sql import functions as F

    return spark.range(start, start + n, 1, parts).select(
        "id", (F.col("id") * 0.5).alias("x"), F.concat(F.lit("s"), F.col("id").cast("string")).alias("s")
    )


def test_spark_writes_versions_pylance_reads_equal(spark, tmp_path, mode):
    uri = str(tmp_path / "ds")
    jobs = [("append", 0, 300), ("append", 300, 200), ("overwrite", 1000, 50)]
    expected: list[list[int]] = []
    current: list[int] = []
    for write_mode, start, n in jobs:
        _frame(spark, start, n).write.format("lance").mode(write_mode).save(uri)
        current = (current if write_mode == "append" else []) + list(range(start, start + n))
        expected.append(sorted(current))
        ds = lance.dataset(uri)
        assert ds.version == len(expected)  # exactly one version per job
        t = ds.to_table().sort_by("id")
        assert t.column("id").to_pylist() == expected[-1]
        assert t.column("x").to_pylist() == [i * 0.5 for i in expected[-1]]
        assert t.column("s").to_pylist() == [f"s{i}" for i in expected[-1]]
    for v, want in enumerate(expected, 1):  # version by version, pylance and Spark's time travel agree
        assert sorted(lance.dataset(uri, version=v).to_table().column("id").to_pylist()) == want
        assert _ids(spark.read.format("lance").option("version", v).load(uri)) == want
    assert _ids(spark.read.format("lance").load(uri)) == expected[-1]
    spark.conf.set(PUSHDOWN, "true")  # zone maps of lancelot's files prune; the rows stay the same
    try:
        # asked for per read: a new DataFrame per query is safe (docs/SPARK.md, correctness)
        read = lambda: spark.read.format("lance").option("filter_pushdown", "true")  # noqa: E731
        assert _ids(read().option("version", 2).load(uri).filter("id = 123")) == [123]
        assert _ids(read().load(uri).filter("id > 1040")) == list(range(1041, 1050))
        if mode != "connect":  # zone maps drop fragments and row ranges before partitions are planned
            v2 = read().option("version", 2).option("rows_per_partition", 100).load(uri)
            # four fragments of 150, 150, 100, 100 rows (6 partitions); id 123 is in the first one's only
            # zone, so its 2 partitions are left
            assert v2.rdd.getNumPartitions() == 6 and v2.filter("id = 123").rdd.getNumPartitions() == 2
    finally:
        spark.conf.set(PUSHDOWN, "false")
    ts = lance.dataset(uri).versions()[1]["timestamp"].astimezone(dt.timezone.utc)  # pylance: naive, local
    assert _ids(spark.read.format("lance").option("timestamp", ts.isoformat()).load(uri)) == expected[1]
    assert _ids(spark.read.format("lance").option("timestamp", ts.timestamp() - 0.001).load(uri)) == expected[0]


def _pylance_dataset(path: str) -> None:
    """Versions 1-3: two fragments; rows deleted; a column added (fragments of two data files)."""
    t = pa.table({"id": pa.array(np.arange(3000), pa.int64()), "s": [f"s{i}" for i in range(3000)]})
    lance.write_dataset(t, path, max_rows_per_file=2000)
    lance.dataset(path).delete("id % 7 = 0 OR (id >= 100 AND id < 1900)")
    lance.dataset(path).add_columns({"twice": "id * 2"})


def test_spark_reads_a_pylance_dataset_equal(spark, tmp_path):
    from pyspark.sql.types import StructType

    uri = str(tmp_path / "py")
    _pylance_dataset(uri)
    assert all(len(f.data_files()) == 2 for f in lance.dataset(uri).get_fragments())
    for v in (1, 2, 3):
        want = lance.dataset(uri, version=v).to_table().sort_by("id")
        df = spark.read.format("lance").option("version", v).option("rows_per_partition", 500).load(uri)
        got = _table(df.orderBy("id").collect())
        assert got.column_names == want.column_names
        for c in want.column_names:
            assert got.column(c).to_pylist() == want.column(c).to_pylist(), (v, c)
        # a count that asks for no column (an empty schema) reads no column: pylance's count all the same
        none = spark.read.format("lance").schema(StructType()).option("version", v).load(uri)
        assert none.count() == want.num_rows
    # the latest version, filtered: pushdown on or off gives the rows pylance gives
    want = sorted(lance.dataset(uri).to_table(filter="id >= 2990 or id < 5").column("id").to_pylist())
    assert _ids(spark.read.format("lance").load(uri).filter("id >= 2990 or id < 5")) == want
    spark.conf.set(PUSHDOWN, "true")
    try:
        pushed = spark.read.format("lance").option("filter_pushdown", "true").load(uri)
        assert _ids(pushed.filter("id >= 2990 or id < 5")) == want
    finally:
        spark.conf.set(PUSHDOWN, "false")
    # Spark appends to pylance's dataset (its columns are non-null where pylance's are nullable)
    before = lance.dataset(uri).to_table().column("id").to_pylist()
    spark.range(5000, 5003).selectExpr("id", "concat('s', id) as s", "id * 2 as twice").write.format("lance").mode(
        "append"
    ).save(uri)
    ds = lance.dataset(uri)
    assert ds.version == 4 and sorted(ds.to_table().column("id").to_pylist()) == sorted(before + [5000, 5001, 5002])
    assert ds.to_table(filter="id = 5001").to_pylist() == [{"id": 5001, "s": "s5001", "twice": 10002}]


def test_a_failing_task_leaves_the_version_unchanged(spark, tmp_path, mode):
    from pyspark.sql import functions as F

    uri = str(tmp_path / "ds")
    _frame(spark, 0, 10).write.format("lance").mode("append").save(uri)
    files = _data_files(uri)

    @F.udf("long")
    def boom(x):
        if x == 1500:
            raise ValueError("boom in partition 1")
        return x

    bad = spark.range(0, 2000, 1, 2).select(boom("id").alias("id"), F.lit(0.5).alias("x"), F.lit("s").alias("s"))
    for write_mode in ("append", "overwrite"):
        with pytest.raises(Exception, match="boom"):
            bad.write.format("lance").mode(write_mode).save(uri)
        assert lance.dataset(uri).version == 1 and lance.dataset(uri).count_rows() == 10
    # the failed jobs' files are gone (the other task of a failed job is cancelled: it may still be
    # finishing, then it finds the job ended and deletes its own files)
    deadline = time.monotonic() + 20
    while _data_files(uri) != files and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _data_files(uri) == files
    assert _ids(spark.read.format("lance").load(uri)) == list(range(10))
    if mode == "local-cluster":  # spark.task.maxFailures=2 there: a task failing once is retried

        @F.udf("long")
        def flaky(x):
            from pyspark import TaskContext

            if x == 1500 and TaskContext.get().attemptNumber() == 0:
                raise ValueError("first attempt fails")
            return x

        spark.range(0, 2000, 1, 2).select(
            flaky("id").alias("id"), F.lit(0.5).alias("x"), F.lit("s").alias("s")
        ).write.format("lance").mode("append").save(uri)
        ds = lance.dataset(uri)
        assert ds.version == 2 and sorted(ds.to_table().column("id").to_pylist()) == sorted(
            list(range(10)) + list(range(2000))
        )  # the retried partition's rows once
        in_manifest = {f.path for fr in ds.get_fragments() for f in fr.data_files()}
        assert _data_files(uri) == in_manifest


def test_s3_round_trip(spark, s3_dataset):
    uri = s3_dataset.uri
    opts = json.dumps(s3_dataset.lancelot_options())
    _frame(spark, 0, 400).write.format("lance").mode("append").option("storage_options", opts).save(uri)
    _frame(spark, 400, 100).write.format("lance").mode("append").option("storage_options", opts).save(uri)
    ds = lance.dataset(uri, storage_options=s3_dataset.pylance_options())
    assert ds.version == 2 and sorted(ds.to_table().column("id").to_pylist()) == list(range(500))
    back = spark.read.format("lance").option("storage_options", opts)
    assert _ids(back.load(uri)) == list(range(500))
    assert _ids(back.option("version", 1).load(uri)) == list(range(400))


def test_concurrent_appends_all_land(spark, tmp_path, mode):
    uri = str(tmp_path / "ds")
    _frame(spark, 0, 10, 1).write.format("lance").mode("append").save(uri)
    errors: list[BaseException] = []

    def job(i: int) -> None:
        try:
            if mode != "connect":
                # Spark looks Python data sources up in the JVM thread's active session, which a new
                # Python thread's JVM thread lacks (docs/SPARK.md)
                spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
            _frame(spark, 1000 * (i + 1), 100).write.format("lance").mode("append").save(uri)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=job, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    want = list(range(10)) + [v for i in range(3) for v in range(1000 * (i + 1), 1000 * (i + 1) + 100)]
    assert lance.dataset(uri).version == 4
    assert sorted(lance.dataset(uri).to_table().column("id").to_pylist()) == want
    assert _ids(spark.read.format("lance").load(uri)) == want


def _attempts_source(log_path: str):
    """A "lance" source whose partition 1 fails on attempt 0 after writing its data files (the retry,
    attempt 1, writes them again); every attempt logs the files it wrote to ``log_path`` (the executors
    share this machine's disk)."""
    from lancelot.spark.source import LanceDataSource
    from lancelot.spark.writer import LanceDatasetWriter

    class AttemptsWriter(LanceDatasetWriter):
        def write(self, iterator):
            from pyspark import TaskContext

            msg = super().write(iterator)
            ctx = TaskContext.get()
            files = [d["path"] for f in msg.fragments for d in json.loads(f)["files"]]
            with open(log_path, "a") as out:
                out.write(
                    json.dumps({"partition": ctx.partitionId(), "attempt": ctx.attemptNumber(), "files": files}) + "\n"
                )
            if ctx.partitionId() == 1 and ctx.attemptNumber() == 0:
                raise RuntimeError("attempt 0 of partition 1 fails after writing its files")
            return msg

    class AttemptsSource(LanceDataSource):
        @classmethod
        def name(cls) -> str:
            return "lance_attempts"

        def writer(self, schema, overwrite):
            return AttemptsWriter(self.options, schema, overwrite)

    return AttemptsSource


def test_two_attempts_of_a_task_both_write_and_the_version_holds_each_row_once(tmp_path):
    """local-cluster (tasks retried once: tests/spark/sessions.py): both attempts of one task write data
    files (the first fails after writing them); the committed version holds every row once, pylance
    reads it equal, and the failed attempt's files are in no manifest and deleted.  (Speculative copies
    cannot be run here: Spark never starts a copy on a host where the task ran, and local-cluster's
    executors share one host; the writer's unit tests cover uncommitted attempts of any origin.)"""
    spark = classic_session("local-cluster[2,1,1024]")
    uri = str(tmp_path / "ds")
    _frame(spark, 0, 100).write.format("lance").mode("append").save(uri)
    log = tmp_path / "attempts.jsonl"
    spark.dataSource.register(_attempts_source(str(log)))
    _frame(spark, 1000, 2000).write.format("lance_attempts").mode("append").save(uri)
    attempts = [json.loads(line) for line in log.read_text().splitlines()]
    p1 = {a["attempt"]: set(a["files"]) for a in attempts if a["partition"] == 1}
    assert set(p1) == {0, 1} and all(p1.values()), attempts  # both attempts of partition 1 wrote files
    ds = lance.dataset(uri)
    assert ds.version == 2  # one version for the job
    want = list(range(100)) + list(range(1000, 3000))
    got = ds.to_table().sort_by("id")
    assert got.column("id").to_pylist() == want  # each row exactly once
    assert got.column("x").to_pylist() == [i * 0.5 for i in want]
    assert got.column("s").to_pylist() == [f"s{i}" for i in want]
    in_manifest = {f.path for fr in ds.get_fragments() for f in fr.data_files()}
    assert not p1[0] & in_manifest and p1[1] <= in_manifest  # the failed attempt's files are not committed
    assert _data_files(uri) == in_manifest  # ... and the driver's commit deleted them
    assert _ids(spark.read.format("lance").load(uri)) == want
