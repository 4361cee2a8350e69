"""lancelot.spark.merge_insert's other matched clauses (when_matched_delete, when_matched_fail)
against the library's builder and pylance's on triplet datasets: same counts, same rows, same
version history; a when_matched_fail that finds a match raises and commits nothing."""

from __future__ import annotations

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
lance = pytest.importorskip("lance")

import lancelot  # noqa: E402
from lancelot.dataset.changes import ChangeInputError  # noqa: E402
from lancelot.dataset.merge_insert import MergeInsertError  # noqa: E402
from lancelot.spark import operations as ops  # noqa: E402
from tests.spark.helpers import dataset_files  # noqa: E402
from tests.spark.sessions import spark_session  # noqa: E402

SCHEMA = "id long, x double"


@pytest.fixture
def spark():
    return spark_session()  # the shared local[2] session


def _triplets(tmp_path, n: int = 600) -> tuple[str, str, str]:
    """Three equal datasets written by pylance (Spark's, the library's, pylance's): two fragments
    of 300 rows, a few rows deleted."""
    t = pa.table({"id": pa.array(range(n), pa.int64()), "x": pa.array([i * 0.5 for i in range(n)])})
    uris = []
    for name in ("spark", "library", "pylance"):
        uri = str(tmp_path / name)
        lance.write_dataset(t, uri, max_rows_per_file=300).delete("id % 50 = 3")
        uris.append(uri)
    return uris[0], uris[1], uris[2]


def _same(*uris: str) -> pa.Table:
    """The datasets read equal by pylance (and the first by lancelot), validated, same versions."""
    tables = []
    for u in uris:
        ds = lance.dataset(u)
        ds.validate()
        assert [v["version"] for v in ds.versions()] == [v["version"] for v in lance.dataset(uris[0]).versions()]
        tables.append(ds.to_table().sort_by("id"))
    for t in tables[1:]:
        assert t.equals(tables[0])
    assert lancelot.dataset(uris[0]).to_table().sort_by("id").equals(tables[0])
    return tables[0]


def test_when_matched_delete_as_the_library_and_pylance(spark, tmp_path):
    a, b, c = _triplets(tmp_path)
    keys = [*range(100, 120), 153, 900, 901, None]  # 103 and 153 were deleted: inserted again
    src = pa.table({"id": pa.array(keys, pa.int64()), "x": pa.array([-1.0] * len(keys))})
    got = ops.merge_insert(
        spark.createDataFrame(src.to_pylist(), SCHEMA),
        a,
        "id",
        when_matched_delete=True,
        when_not_matched_by_source_delete="id >= 500",
    )
    lib = (
        lancelot.dataset(b)
        .merge_insert("id")
        .when_matched_delete()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete("id >= 500")
    )
    ref = (
        lance.dataset(c)
        .merge_insert("id")
        .when_matched_delete()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete("id >= 500")
    )
    want = {"num_inserted_rows": 5, "num_updated_rows": 0, "num_deleted_rows": 19 + 98}
    assert got == lib.execute(src) == ref.execute(src) == want
    t = _same(a, b, c)
    ids = t.column("id").to_pylist()
    assert 110 not in ids and 550 not in ids and ids.count(103) == 1 and None in ids

    # delete only: nothing inserted, unmatched rows stay; a second source row for one target is refused
    only = pa.table({"id": pa.array([0, 1, 2, 7000], pa.int64()), "x": [0.0, 0.0, 0.0, 0.0]})
    got = ops.merge_insert(
        spark.createDataFrame(only.to_pylist(), SCHEMA),
        a,
        "id",
        when_matched_delete=True,
        when_not_matched_insert_all=False,
    )
    assert got == lancelot.dataset(b).merge_insert("id").when_matched_delete().execute(only)
    assert got == lance.dataset(c).merge_insert("id").when_matched_delete().execute(only)
    assert got == {"num_inserted_rows": 0, "num_updated_rows": 0, "num_deleted_rows": 3}
    _same(a, b, c)
    dup = spark.createDataFrame([(10, 1.0), (10, 2.0)], SCHEMA)
    with pytest.raises(Exception, match="ambiguous merge insert"):
        ops.merge_insert(dup, a, "id", when_matched_delete=True)
    assert lance.dataset(a).version == lance.dataset(c).version


def test_when_matched_fail_raises_and_commits_nothing(spark, tmp_path):
    a, b, c = _triplets(tmp_path)
    files, version = dataset_files(a), lance.dataset(a).version
    src = pa.table({"id": pa.array([5000, 5001, 250], pa.int64()), "x": [1.0, 2.0, 3.0]})  # 250 matches
    df = spark.createDataFrame(src.to_pylist(), SCHEMA)
    with pytest.raises(MergeInsertError, match=r"found a matching row with key values \{'id': 250\}") as e:
        ops.merge_insert(df, a, "id", when_matched_fail=True)
    assert isinstance(e.value, OSError)  # as pylance's error, and the library's
    with pytest.raises(OSError, match="id = 250"):
        lance.dataset(c).merge_insert("id").when_matched_fail().when_not_matched_insert_all().execute(src)
    with pytest.raises(MergeInsertError, match="'id': 250"):
        lancelot.dataset(b).merge_insert("id").when_matched_fail().when_not_matched_insert_all().execute(src)
    assert lance.dataset(a).version == version
    assert dataset_files(a) == files  # the inserting task's data files were deleted too
    _same(a, b, c)

    new = src.slice(0, 2)
    got = ops.merge_insert(spark.createDataFrame(new.to_pylist(), SCHEMA), a, "id", when_matched_fail=True)
    assert got == lancelot.dataset(b).merge_insert("id").when_matched_fail().when_not_matched_insert_all().execute(new)
    assert got == lance.dataset(c).merge_insert("id").when_matched_fail().when_not_matched_insert_all().execute(new)
    assert got == {"num_inserted_rows": 2, "num_updated_rows": 0, "num_deleted_rows": 0}
    _same(a, b, c)


def test_matched_clauses_exclude_each_other(spark, tmp_path):
    a, _, _ = _triplets(tmp_path)
    df = spark.createDataFrame([(1, 1.0)], SCHEMA)
    with pytest.raises(ChangeInputError, match="excludes when_matched_delete"):
        ops.merge_insert(df, a, "id", True, when_matched_delete=True)
    with pytest.raises(ChangeInputError, match="exclude each other"):
        ops.merge_insert(df, a, "id", when_matched_delete=True, when_matched_fail=True)
    with pytest.raises(ChangeInputError, match="not configured to change"):
        ops.merge_insert(df, a, "id", False, False)
    assert lance.dataset(a).version == 2
