"""lancelot.spark's change operations run in a few tasks over groups of fragments, not one task per fragment: on a
dataset of 200 fragments of three rows (many small appends, as streaming ingestion leaves), each operation's Spark
stages count their tasks (the status tracker of the job group it ran in), and the dataset after it equals what
pylance's own operation gives on a twin dataset.  The tasks' byte floor (jobs.MIN_TASK_BYTES) is lowered so that the
fragments make two or three tasks of many fragments each, not one."""

from __future__ import annotations

import functools
import time
import uuid

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
lance = pytest.importorskip("lance")

import lancelot  # noqa: E402
from lancelot.errors import LanceError  # noqa: E402
from lancelot.spark import jobs  # noqa: E402
from lancelot.spark import operations as ops  # noqa: E402
from tests.spark.helpers import dataset_files  # noqa: E402

FRAGMENTS = 200


def _twins(tmp_path, **kw) -> tuple[str, str]:
    """Two equal datasets of ``FRAGMENTS`` fragments of three rows, written by pylance (``kw``: its options)."""
    n = 3 * FRAGMENTS
    t = pa.table(
        {"id": pa.array(range(n), pa.int64()), "x": [i * 0.5 for i in range(n)], "s": [f"s{i}" for i in range(n)]}
    )
    uris = []
    for name in ("spark", "pylance"):
        uri = str(tmp_path / name)
        lance.write_dataset(t, uri, max_rows_per_file=3, **kw)
        uris.append(uri)
    assert len(lance.dataset(uris[0]).get_fragments()) == FRAGMENTS
    return uris[0], uris[1]


@pytest.fixture
def twins(tmp_path, monkeypatch) -> tuple[str, str]:
    """``_twins``; tasks of half the bytes."""
    monkeypatch.setattr(jobs, "MIN_TASK_BYTES", 1)
    return _twins(tmp_path)


def _tasks(spark, run) -> tuple[object, int]:
    """``run()``'s result and the most tasks of one of the Spark stages it ran."""
    sc = spark.sparkContext
    group = f"lancelot-test-{uuid.uuid4().hex}"
    sc.setJobGroup(group, group)
    try:
        out = run()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    sc._jsc.sc().listenerBus().waitUntilEmpty()  # the status tracker has seen every event of the jobs
    tracker = sc.statusTracker()
    stages = [s for j in tracker.getJobIdsForGroup(group) for s in tracker.getJobInfo(j).stageIds]
    assert stages, "the operation ran no Spark job"
    return out, max(tracker.getStageInfo(s).numTasks for s in stages)


def _same(a: str, b: str) -> None:
    """``a`` and ``b`` at the same version with the same rows (pylance reads both, lancelot reads ``a``)."""
    da, db = lance.dataset(a), lance.dataset(b)
    da.validate()
    assert da.version == db.version
    ta = da.to_table().sort_by("id")
    assert ta.equals(db.to_table().sort_by("id"))
    assert lancelot.dataset(a).to_table().sort_by("id").equals(ta)


def test_delete_update_add_columns_run_in_a_few_tasks(spark, twins):
    a, b = twins
    got, tasks = _tasks(spark, lambda: ops.delete(spark, a, "id % 7 = 0"))
    lance.dataset(b).delete("id % 7 = 0")
    assert got == {"num_deleted_rows": 86} and 1 < tasks <= 3
    _same(a, b)

    got, tasks = _tasks(spark, lambda: ops.update(spark, a, {"x": "x * 2", "s": "concat(s, '!')"}, where="id % 3 = 1"))
    assert got == lance.dataset(b).update({"x": "x * 2", "s": "concat(s, '!')"}, where="id % 3 = 1")
    assert 1 < tasks <= 3
    _same(a, b)

    _, tasks = _tasks(spark, lambda: ops.add_columns(spark, a, {"y": "id + 1"}))
    lance.dataset(b).add_columns({"y": "id + 1"})
    assert 1 < tasks <= 3
    _same(a, b)


def test_compact_runs_in_a_few_tasks(spark, twins):
    a, b = twins
    for uri in (a, b):
        lance.dataset(uri).delete("id % 5 = 0")
    got, tasks = _tasks(spark, lambda: ops.compact(spark, a, target_rows_per_fragment=6))  # ~100 groups
    want = lance.dataset(b).optimize.compact_files(target_rows_per_fragment=6)
    assert (got.fragments_removed, got.fragments_added) == (want.fragments_removed, want.fragments_added)
    assert got.fragments_removed == FRAGMENTS and 1 < tasks <= 3
    _same(a, b)


def test_merge_insert_through_the_join_runs_in_a_few_tasks(spark, twins):
    a, b = twins
    keys = list(range(100, 700, 2))
    src = pa.table({"id": pa.array(keys, pa.int64()), "x": pa.array([-1.0] * len(keys))})
    got, tasks = _tasks(  # deleting by source: the target's key scan and Spark's join
        spark,
        lambda: ops.merge_insert(
            spark.createDataFrame(src.to_pylist(), "id long, x double"), a, "id", when_not_matched_by_source_delete=True
        ),
    )
    want = (
        lance.dataset(b)
        .merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete()
        .execute(src)
    )
    assert {k: got[k] for k in want if k.startswith("num_")} == {k: v for k, v in want.items() if k.startswith("num_")}
    assert got["num_deleted_rows"] == 350 and tasks <= 3
    _same(a, b)


def _with_ids(uri: str) -> pa.Table:
    """The rows of ``uri`` and their row ids (pylance reads them), by id; lancelot reads the same."""
    t = lance.dataset(uri).to_table(with_row_id=True).sort_by("id")
    assert lancelot.dataset(uri).to_table(with_row_id=True).sort_by("id").equals(t)
    return t


def test_update_writes_the_rows_of_a_task_together(spark, tmp_path, monkeypatch):
    """A task's updated rows go to one new fragment (as the library's ``update`` writes all of them), keeping their
    stable row ids: in one task, the fragments, rows and row ids pylance's own update leaves on a twin."""
    a, b = _twins(tmp_path, enable_stable_row_ids=True)
    got, tasks = _tasks(spark, lambda: ops.update(spark, a, {"x": "x + 1"}, where="id % 5 = 0"))
    assert got == lance.dataset(b).update({"x": "x + 1"}, where="id % 5 = 0") == {"num_rows_updated": 120}
    assert tasks == 1 and len(lance.dataset(a).get_fragments()) == len(lance.dataset(b).get_fragments()) == 201
    _same(a, b)
    assert _with_ids(a).equals(_with_ids(b))

    monkeypatch.setattr(jobs, "MIN_TASK_BYTES", 1)  # two or three tasks: a new fragment each, pylance's update one
    got, tasks = _tasks(spark, lambda: ops.update(spark, a, {"s": "concat(s, '!')"}, where="id % 2 = 0"))
    assert got == lance.dataset(b).update({"s": "concat(s, '!')"}, where="id % 2 = 0")
    assert 1 < tasks <= 3
    assert len(lance.dataset(a).get_fragments()) == len(lance.dataset(b).get_fragments()) + tasks - 1
    _same(a, b)
    assert _with_ids(a).equals(_with_ids(b))


@pytest.mark.parametrize("op", ["delete", "update"])
def test_a_failed_task_of_many_fragments_commits_nothing(spark, twins, monkeypatch, op):
    a, _ = twins
    before, version = dataset_files(a), lance.dataset(a).version
    monkeypatch.setenv(jobs.FAULT_ENV, "raise")  # the first task fails once its fragments' files are written
    with pytest.raises(Exception, match="injected fault"):
        if op == "delete":
            ops.delete(spark, a, "id % 2 = 0")
        else:
            ops.update(spark, a, {"x": "x + 1"}, where="id % 2 = 0")
    monkeypatch.delenv(jobs.FAULT_ENV)
    assert lance.dataset(a).version == version
    # Spark marks the job failed and its stage done at once, but a cancelled task's Python worker goes on: it sees the
    # job's end at its next fragment (test_a_task_of_an_ended_job_stops_at_its_next_fragment) and deletes its files,
    # which may be after the call returned.  Nothing else deletes them: they must all be gone without a cleanup.
    deadline = time.monotonic() + 60
    while dataset_files(a) != before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert dataset_files(a) == before  # the deletion (and data) files of every fragment of every task were deleted


@pytest.mark.parametrize("op", ["delete", "update"])
def test_a_task_of_an_ended_job_stops_at_its_next_fragment(tmp_path, monkeypatch, op):
    """A task still running when its job ends (the driver wrote the end marker: another task failed) stops at its next
    fragment with files, having deleted its own, instead of going through its whole group: no file of it outlives the
    job longer than a fragment's work.  (The task body runs here without Spark, as a Python worker runs it.)"""
    a, _ = _twins(tmp_path)
    before = dataset_files(a)
    with jobs.Job(jobs.open_dataset(a, None, None), None) as job:
        pass  # ended: the marker is written
    opened = []

    def fragment_of(ds, fid):
        opened.append(fid)
        return jobs.fragment_of(ds, fid)

    monkeypatch.setattr(ops, "fragment_of", fragment_of)
    ids = list(range(FRAGMENTS))
    batches = iter([pa.record_batch([pa.array([0], pa.int64())], names=["id"])])
    if op == "delete":
        task = functools.partial(ops._delete_task, "id % 2 = 0")
    else:
        task = functools.partial(ops._update_task, {"x": "x + 1"}, "id % 2 = 0")
    run = jobs.run_items(job.ref, ids, [ids], task, jobs.change_files, op == "update", batches)
    with pytest.raises(LanceError, match="already ended: this task attempt's output was discarded"):
        list(run)
    assert opened == [0]
    assert dataset_files(a) == before


def test_the_default_budget_makes_one_task_of_small_fragments(spark, twins, monkeypatch):
    monkeypatch.setattr(jobs, "MIN_TASK_BYTES", jobs.MIN_PARTITION_BYTES)
    a, b = twins
    got, tasks = _tasks(spark, lambda: ops.delete(spark, a, "id < 10"))
    lance.dataset(b).delete("id < 10")
    assert got == {"num_deleted_rows": 10} and tasks == 1
    _same(a, b)


def test_pack_whole_keeps_units_whole_and_in_order():
    from lancelot.spark.partitions import pack_whole

    units = [("a", 10), ("b", 10), ("big", 500), ("c", 10), ("d", 0), ("e", 10)]
    # budget: min(100, max(20, 540 / 2)) = 100 bytes; the big unit is a task alone, an empty one is kept
    assert pack_whole(units, 100, 2, 20) == [["a", "b"], ["big"], ["c", "d", "e"]]
    assert pack_whole([("a", 10)] * 8, 1000, 4, 1) == [["a", "a"]] * 4  # 80 bytes for 4 cores: 20 a task


def test_update_of_a_dataset_with_blobs_rewrites_their_values(spark, tmp_path):
    """The updated rows' blobs are written as values (scans return descriptions), as pylance's update keeps them."""
    blob = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    schema = pa.schema([pa.field("id", pa.int64()), blob])
    t = pa.table({"id": list(range(20)), "b": [bytes([i]) * (i + 1) for i in range(20)]}, schema=schema)
    a, b = str(tmp_path / "spark"), str(tmp_path / "pylance")
    for uri in (a, b):
        lance.write_dataset(t, uri, max_rows_per_file=5)
    assert ops.update(spark, a, {"id": "id + 100"}, where="id % 3 = 0") == lance.dataset(b).update(
        {"id": "id + 100"}, where="id % 3 = 0"
    )

    def blobs(uri: str) -> list[tuple[int, bytes]]:
        ds = lance.dataset(uri)
        ids = ds.to_table(columns=["id"], with_row_id=True)
        files = ds.take_blobs("b", ids=ids.column("_rowid").to_pylist())
        return sorted(zip(ids.column("id").to_pylist(), [f.readall() for f in files]))

    assert blobs(a) == blobs(b) and len(blobs(a)) == 20
