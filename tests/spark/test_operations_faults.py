"""Task failures during lancelot.spark operations on local-cluster (two executor JVMs; Spark retries a
failed task once, spark.task.maxFailures=2): a task that fails after writing its files, or whose
Python worker dies there, is retried and the operation commits exactly one version equal to the
library's on a twin dataset, with no file of the failed attempt left; a job whose tasks all fail
commits nothing and leaves no file.  Faults are injected through jobs.FAULT_ENV (read on the
driver, pickled to the tasks)."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
lance = pytest.importorskip("lance")

import lancelot  # noqa: E402
from lancelot.spark import operations as ops  # noqa: E402
from lancelot.spark.jobs import FAULT_ENV  # noqa: E402
from tests.spark.helpers import FILE_DIRS, dataset_files, pylance_twins  # noqa: E402
from tests.spark.sessions import classic_session  # noqa: E402


@pytest.fixture
def spark():
    return classic_session("local-cluster[2,1,1024]")


def _files(uri: str) -> dict[str, set[str]]:
    """``dataset_files`` by directory."""
    return {d: dataset_files(uri, (d,)) for d in FILE_DIRS}


def _same(a: str, b: str) -> None:
    """Equal rows and version history (pylance reads both; lancelot reads ``a``), as many deletion
    files on disk, and every data file on disk named by one of ``a``'s versions: the failed
    attempts' files are gone (a Spark merge may write its new rows as more fragments than the
    library's)."""
    da, db = lance.dataset(a), lance.dataset(b)
    da.validate()
    assert [v["version"] for v in da.versions()] == [v["version"] for v in db.versions()]
    ta = da.to_table().sort_by("id")
    assert ta.equals(db.to_table().sort_by("id"))
    assert lancelot.dataset(a).to_table().sort_by("id").equals(ta)
    fa, fb = _files(a), _files(b)
    assert len(fa["_deletions"]) == len(fb["_deletions"])
    named = {
        os.path.join(a, "data", f.path)
        for v in da.versions()
        for frag in lance.dataset(a, version=v["version"]).get_fragments()
        for f in frag.metadata.files
    }
    assert fa["data"] == named
    assert not fa["_lancelot_spark"]


def test_a_retried_task_or_a_killed_worker_commits_once(spark, tmp_path, monkeypatch):
    a, b = pylance_twins(tmp_path)
    lib = lancelot.dataset(b)
    monkeypatch.setenv(FAULT_ENV, "raise")  # the first task's first attempt fails after writing its file
    assert ops.delete(spark, a, "id % 3 = 0") == lib.delete("id % 3 = 0") == {"num_deleted_rows": 200}
    _same(a, b)
    monkeypatch.setenv(FAULT_ENV, "exit")  # ... its Python worker dies (os._exit) after writing its files
    src = pa.table({"id": pa.array([1, 2, 5, 900, 901], pa.int64()), "x": [-1.0] * 5})
    got = ops.merge_insert(spark.createDataFrame(src.to_pylist(), "id long, x double"), a, "id")
    assert got == lib.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    assert got == {"num_inserted_rows": 2, "num_updated_rows": 3, "num_deleted_rows": 0}
    _same(a, b)


def test_a_job_whose_tasks_all_fail_commits_nothing(spark, tmp_path, monkeypatch):
    a, _ = pylance_twins(tmp_path)
    before, version = _files(a), lance.dataset(a).version
    monkeypatch.setenv(FAULT_ENV, "raise-all")
    with pytest.raises(Exception, match="injected fault"):
        ops.add_columns(spark, a, {"y": "x * 2"})
    monkeypatch.delenv(FAULT_ENV)
    assert lance.dataset(a).version == version
    assert _files(a) == before  # every attempt's data file was deleted
    lance.dataset(a).validate()
