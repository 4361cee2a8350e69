"""lancelot.spark operations racing pylance writers and each other lose nothing: a commit that
conflicts re-plans on the latest version, so the dataset ends as if the writers had run one after
the other (compared with a twin dataset changed in sequence by pylance and the library), every
version readable and valid."""

from __future__ import annotations

import os
import threading
import time

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
lance = pytest.importorskip("lance")

import lancelot  # noqa: E402
from lancelot.spark import operations as ops  # noqa: E402
from tests.spark.helpers import pylance_twins  # noqa: E402

#: rows pylance appends: matched by no operation below (ids not multiples of 7, not in any source)
EXTRA = pa.table({"id": pa.array([5000, 5001], pa.int64()), "x": [1.0, 2.0]})


def _pylance_writes(uri: str) -> None:
    """Two pylance commits: an append, and a delete in the fragments the operations change."""
    lance.write_dataset(EXTRA, uri, mode="append")
    lance.dataset(uri).delete("id = 10 OR id = 410")


def _same(a: str, b: str) -> list[int]:
    da, db = lance.dataset(a), lance.dataset(b)
    da.validate()
    assert len(da.versions()) == len(db.versions())
    ta = da.to_table().sort_by("id")
    assert ta.equals(db.to_table().sort_by("id"))
    assert lancelot.dataset(a).to_table().sort_by("id").equals(ta)
    ids = ta.column("id").to_pylist()
    assert 5000 in ids and 5001 in ids  # pylance's append
    return ids


def test_pylance_commits_while_a_spark_merge_insert_runs(spark, tmp_path):
    """pylance appends and deletes while the merge's first job runs (from the source's own UDF, in
    a Spark task): the merge's commit conflicts, re-plans, and keeps both pylance commits."""
    from pyspark.sql import functions as F  # noqa: N812

    a, b = pylance_twins(tmp_path, ("spark", "sequential"))
    marker = str(tmp_path / "written")

    @F.udf("double")
    def with_writes(x: float) -> float:
        try:  # the first evaluation commits twice with pylance, once
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
            _pylance_writes(a)
        except FileExistsError:
            pass
        return x

    src = pa.table({"id": pa.array([5, 10, 205, 410, 9000], pa.int64()), "x": [-1.0] * 5})
    df = spark.createDataFrame(src.to_pylist(), "id long, x double").withColumn("x", with_writes("x"))
    got = ops.merge_insert(df, a, "id")
    _pylance_writes(b)
    want = lancelot.dataset(b).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    assert got == want == {"num_inserted_rows": 3, "num_updated_rows": 2, "num_deleted_rows": 0}
    _same(a, b)  # 10 and 410 were deleted by pylance before the merge committed: inserted again
    assert lance.dataset(a).to_table(filter="id IN (10, 410)").column("x").to_pylist() == [-1.0, -1.0]


def test_spark_operations_and_pylance_writers_in_threads(spark, tmp_path):
    """A Spark delete, a Spark update and pylance's two commits, started together: whatever the
    order their commits land in, each one's change is in the final version."""
    a, b = pylance_twins(tmp_path, ("spark", "sequential"))
    tracker = spark.sparkContext.statusTracker()
    errors: list[BaseException] = []

    def run(fn) -> None:
        try:
            # Spark looks Python data sources up in the JVM thread's active session (docs/SPARK.md)
            spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
            fn()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def pylance_once_a_job_runs() -> None:
        deadline = time.monotonic() + 60
        while not tracker.getActiveJobsIds() and time.monotonic() < deadline:
            time.sleep(0.002)
        _pylance_writes(a)

    threads = [
        threading.Thread(target=run, args=(lambda: ops.delete(spark, a, "id % 7 = 0"),)),
        threading.Thread(target=run, args=(lambda: ops.update(spark, a, {"x": "-x"}, "id > 300 AND id < 500"),)),
        threading.Thread(target=run, args=(pylance_once_a_job_runs,)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    _pylance_writes(b)
    lib = lancelot.dataset(b)
    lib.delete("id % 7 = 0")
    lancelot.dataset(b).update({"x": "-x"}, "id > 300 AND id < 500")
    ids = _same(a, b)
    assert 10 not in ids and 410 not in ids and 7 not in ids and 302 in ids  # pylance's and Spark's deletes
    assert lance.dataset(a).to_table(filter="id = 302").column("x").to_pylist() == [-151.0]  # Spark's update
