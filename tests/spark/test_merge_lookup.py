"""lancelot.spark.merge_insert's three paths (lancelot/spark/merge_insert.py, merge_lookup.py): the
matches found and joined in Arrow in the source's tasks (the default), collected first and joined
in the source's tasks, and Spark's join (both forced by zero limits), each against pylance's
merge_insert on a twin; and a source that changes between its two evaluations (the collected
path) commits nothing."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyspark")
lance = pytest.importorskip("lance")

import lancelot  # noqa: E402
from lancelot.dataset.changes import ChangeInputError  # noqa: E402
from lancelot.spark import operations as ops  # noqa: E402

merge_module = __import__("lancelot.spark.merge_insert", fromlist=["LOOKUP_LIMIT"])
#: each path, forced: the matches found in the source's tasks (the default for targets up to
#: TASK_SCAN_LIMIT rows), collected first and joined in Arrow, or Spark's join
PATHS = {
    "task-scan": {},
    "arrow-lookup": {"TASK_SCAN_LIMIT": 0},
    "spark-join": {"TASK_SCAN_LIMIT": 0, "LOOKUP_LIMIT": 0},
}


def _twins(tmp_path) -> tuple[str, str]:
    """Two equal datasets written by pylance (stable row ids): three fragments of 100 rows, a
    two-column key (``id``, ``k``), rows 7 and 150 deleted."""
    t = pa.table(
        {
            "id": pa.array([i // 2 for i in range(300)], pa.int64()),
            "k": [f"k{i % 2}" for i in range(300)],
            "x": pa.array([float(i) for i in range(300)]),
        }
    )
    uris = []
    for name in ("spark", "pylance"):
        uri = str(tmp_path / name)
        lance.write_dataset(t, uri, max_rows_per_file=100, enable_stable_row_ids=True).delete("x = 7 OR x = 150")
        uris.append(uri)
    return uris[0], uris[1]


@pytest.mark.parametrize("path", list(PATHS))
def test_every_path_merges_as_pylance(spark, tmp_path, monkeypatch, path):
    for name, value in PATHS[path].items():
        monkeypatch.setattr(merge_module, name, value)
    a, b = _twins(tmp_path)
    # (3, k0) and (120, k0) matched; (3, k5) new; (75, k0) is row 150, deleted: inserted; a null key matches nothing
    src = pa.table(
        {
            "id": pa.array([3, 3, 75, 120, None, 500], pa.int64()),
            "k": ["k0", "k5", "k0", "k0", "k0", "k1"],
            "x": [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0],
        }
    )
    df = spark.createDataFrame(src.to_pylist(), "id long, k string, x double").repartition(2)
    got = ops.merge_insert(df, a, ["id", "k"])
    want = lance.dataset(b).merge_insert(["id", "k"]).when_matched_update_all().when_not_matched_insert_all()
    assert got == want.execute(src) == {"num_inserted_rows": 4, "num_updated_rows": 2, "num_deleted_rows": 0}
    da, db = lance.dataset(a), lance.dataset(b)
    da.validate()
    assert da.version == db.version
    keys = [("id", "ascending"), ("k", "ascending"), ("x", "ascending")]
    ta = da.to_table().sort_by(keys)
    assert ta.equals(db.to_table().sort_by(keys))
    assert lancelot.dataset(a).to_table().sort_by(keys).equals(ta)

    # updated rows keep their stable row ids
    def updated(ds) -> pa.Table:
        t = ds.to_table(with_row_id=True)
        return t.filter(pc.and_(pc.less(t["x"], 0), pc.less(t["_rowid"], 300))).sort_by("x")

    assert updated(da).equals(updated(db)) and updated(da).num_rows == 2
    if path != "task-scan":
        return  # the update condition and matched deletes: on the default path only (merge_lookup.py's code)
    cond = spark.createDataFrame([(3, "k0", 100.0), (4, "k0", -100.0)], "id long, k string, x double")
    got = ops.merge_insert(cond, a, ["id", "k"], "source.x > target.x", False)
    assert got == {"num_inserted_rows": 0, "num_updated_rows": 1, "num_deleted_rows": 0}
    gone = spark.createDataFrame([(5, "k0"), (6, "k1"), (900, "k0")], "id long, k string")
    got = ops.merge_insert(gone, a, ["id", "k"], when_matched_delete=True, when_not_matched_insert_all=False)
    assert got == {"num_inserted_rows": 0, "num_updated_rows": 0, "num_deleted_rows": 2}
    assert lance.dataset(a).count_rows("id = 3 AND k = 'k0'") == 1
    assert lance.dataset(a).to_table(filter="id = 3 AND k = 'k0'").column("x").to_pylist() == [100.0]
    assert lance.dataset(a).count_rows("(id = 5 AND k = 'k0') OR (id = 6 AND k = 'k1')") == 0
    lance.dataset(a).validate()


def test_a_source_that_changes_between_its_evaluations_commits_nothing(spark, tmp_path, monkeypatch):
    """(Only a large target's merge evaluates its source twice: forced here.)"""
    from pyspark.sql import functions as F  # noqa: N812

    monkeypatch.setattr(merge_module, "TASK_SCAN_LIMIT", 0)

    a, _ = _twins(tmp_path)
    marker = str(tmp_path / "evaluated")

    @F.udf("long")
    def shifting(i: int) -> int:  # 9000 (new) when the keys are collected, then 5 (a key of the dataset)
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
            return i
        except FileExistsError:
            return 5

    df = spark.createDataFrame([(9000, "k0", 1.0)], "id long, k string, x double").withColumn("id", shifting("id"))
    before, files = lance.dataset(a).version, sorted(os.listdir(os.path.join(a, "data")))
    with pytest.raises(ChangeInputError, match="non-deterministic"):
        ops.merge_insert(df.coalesce(1), a, ["id", "k"])
    assert lance.dataset(a).version == before
    assert lance.dataset(a).count_rows("id = 5") == 2
    assert sorted(os.listdir(os.path.join(a, "data"))) == files  # the task's data file was deleted
