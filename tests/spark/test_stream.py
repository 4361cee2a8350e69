"""The "lance" Structured Streaming sink (lancelot/spark/stream.py): one version per micro-batch, exactly once."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

import lance  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from lancelot.spark.stream import committed_batch  # noqa: E402
from tests.spark.sessions import classic_session, spark_session  # noqa: E402


def _exactly_once(spark, tmp_path) -> None:
    """Four files in four triggers over three runs of one query (a restart from the checkpoint
    between them, and a crash injected between batch 2's commit and Spark's record of it): every
    row lands once, one version per batch, each version's transaction naming its query and batch."""
    src, out, ck = tmp_path / "in", str(tmp_path / "out"), str(tmp_path / "ck")
    src.mkdir()

    def arrive(i: int) -> None:  # one file per trigger (maxFilesPerTrigger 1)
        ids = list(range(100 * i, 100 * i + 100))
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "s": [f"r{k}" for k in ids]}), src / f"{i}.parquet")

    def run(**options: str) -> None:
        stream = spark.readStream.schema("id long, s string").option("maxFilesPerTrigger", 1).parquet(str(src))
        writer = stream.writeStream.format("lance").option("checkpointLocation", ck)
        for k, v in options.items():
            writer = writer.option(k, v)
        writer.trigger(availableNow=True).start(out).awaitTermination()

    def ids() -> list[int]:
        return sorted(lance.dataset(out).to_table().column("id").to_pylist())

    arrive(0), arrive(1)
    run()  # batches 0 and 1; the dataset is created empty first (version 1)
    assert lance.dataset(out).version == 3 and ids() == list(range(200))
    arrive(2), arrive(3)
    with pytest.raises(Exception, match="failing after committing batch 2"):
        run(_fail_after_commit_batch="2")  # committed, then "crashed" before Spark's commit log has it
    got = ids()  # batch 2 holds file 2 or 3 (files of one modification time come in either order)
    assert lance.dataset(out).version == 4 and len(got) == len(set(got)) == 300 and got[:200] == list(range(200))
    run()  # the restart runs batch 2 again (skipped: its version is there), then batch 3
    ds = lance.dataset(out)
    assert ds.version == 5 and ids() == list(range(400))  # every row exactly once
    ds.validate()
    assert ds.schema == pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
    # each version's transaction records the query's id (the checkpoint's, kept across restarts) and batch id
    query = json.loads(open(f"{ck}/metadata").read())["id"]
    assert all(committed_batch(out, None, query, b) for b in range(4)) and not committed_batch(out, None, query, 4)


def test_a_file_stream_lands_exactly_once_across_restarts_and_a_crash_after_commit(tmp_path):
    spark = spark_session()
    _exactly_once(spark, tmp_path)
    src = tmp_path / "in"  # the four files

    # complete mode: each micro-batch's whole result overwrites the dataset
    counts = spark.readStream.schema("id long, s string").option("maxFilesPerTrigger", 3).parquet(str(src))
    agg = counts.groupBy((F.col("id") % 3).alias("g")).count()
    out2 = str(tmp_path / "agg")
    q = agg.writeStream.format("lance").outputMode("complete").option("checkpointLocation", str(tmp_path / "ck2"))
    q.trigger(availableNow=True).start(out2).awaitTermination()
    got = lance.dataset(out2).to_table().sort_by("g")
    assert got.column("g").to_pylist() == [0, 1, 2] and sum(got.column("count").to_pylist()) == 400


def test_the_stream_sink_on_executor_jvms_lands_exactly_once(tmp_path):
    """On local-cluster (tests/spark/conftest.py CLUSTER_TESTS): two micro-batches' data files
    written by two executor JVMs' Python workers, each version committed by the driver with its
    query and batch id, every row once; a restart with no new file commits nothing.  (The
    restart-after-crash logic runs on the driver: the local[2] test above.)"""
    spark = classic_session("local-cluster[2,1,1024]")
    src, out, ck = tmp_path / "in", str(tmp_path / "out"), str(tmp_path / "ck")
    src.mkdir()
    for i in range(2):
        ids = list(range(100 * i, 100 * i + 100))
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "s": [f"r{k}" for k in ids]}), src / f"{i}.parquet")
    for _ in range(2):
        stream = spark.readStream.schema("id long, s string").option("maxFilesPerTrigger", 1).parquet(str(src))
        stream.writeStream.format("lance").option("checkpointLocation", ck).trigger(availableNow=True).start(
            out
        ).awaitTermination()
    ds = lance.dataset(out)
    assert ds.version == 3 and sorted(ds.to_table().column("id").to_pylist()) == list(range(200))
    ds.validate()
    query = json.loads(open(f"{ck}/metadata").read())["id"]
    assert all(committed_batch(out, None, query, b) for b in range(2)) and not committed_batch(out, None, query, 2)
