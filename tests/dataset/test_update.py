"""``LanceDataset.update`` against pylance 14.0.2: one Update transaction per call (old rows
deleted, new rows in new fragments, stable row ids kept), pylance's stats and errors."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.dataset import CommitConflictError
from lancelot.dataset.commit import list_versions, load_manifest, load_transaction
from tests.dataset.helpers import VERSIONS, assert_same_row_versions, assert_twins, files_of, needs_sql, table, twins

# (pylance's SQL updates and condition, the same as pyarrow Expressions for lancelot)
STEPS = [
    ({"x": "x * 2"}, "id >= 10 AND id < 20", {"x": pc.field("x") * 2}, (pc.field("id") >= 10) & (pc.field("id") < 20)),
    ({"s": "'new'"}, "id > 1000", {"s": pc.scalar("new")}, pc.field("id") > 1000),  # nothing: still a version
    ({"id": "id + 100"}, "id < 15", {"id": pc.field("id") + 100}, pc.field("id") < 15),  # all of fragment 0
    ({"x": "0.5", "s": "'z'"}, "s IS NULL", {"x": pc.scalar(0.5), "s": pc.scalar("z")}, pc.field("s").is_null()),
    ({"x": "x + 1"}, None, {"x": pc.field("x") + 1}, None),  # every row
]


def _run(theirs: str, ours: str, steps=STEPS, sql: bool = False) -> None:
    lt, lo = lance.dataset(theirs), lancelot.dataset(ours)
    for upd_sql, where_sql, upd_expr, where_expr in steps:
        expected = lt.update(upd_sql, where=where_sql)
        got = lo.update(upd_sql, where=where_sql) if sql else lo.update(upd_expr, where=where_expr)
        assert got == expected
        assert lo.version == lt.version


@pytest.mark.parametrize("version", VERSIONS)
def test_update_twins(tmp_path, version):
    theirs, ours = twins(tmp_path, table(), version)
    _run(theirs, ours)
    assert_twins(theirs, ours)


def test_update_keeps_stable_row_ids(tmp_path):
    theirs, ours = twins(tmp_path, table(), stable=True)
    _run(theirs, ours)
    assert_twins(theirs, ours, row_ids=True)
    assert_same_row_versions(theirs, ours)


def test_take_rows_finds_updated_rows_by_stable_id(tmp_path):
    """An updated row keeps its stable id in a new fragment; its old copy is a deleted row:
    ``_take_rows`` returns the live copy, as pylance does (it once returned nothing)."""
    theirs, ours = twins(tmp_path, table(), stable=True)
    _run(theirs, ours, steps=STEPS[:1])
    lt, lo = lance.dataset(theirs), lancelot.dataset(ours)
    ids = lt.to_table(columns=["id"], with_row_id=True).sort_by("id")["_rowid"].to_pylist()
    pick = ids[::7] + ids[10:20]  # includes every updated row
    assert lo._take_rows(pick) == lt._take_rows(pick)
    assert lance.dataset(ours)._take_rows(pick) == lt._take_rows(pick)


def test_update_alternating_with_pylance(tmp_path):
    theirs, ours = twins(tmp_path, table(), "2.1", stable=True)
    lt = lance.dataset(theirs)
    for i, (upd_sql, where_sql, upd_expr, where_expr) in enumerate(STEPS):
        lt.update(upd_sql, where=where_sql)
        if i % 2:
            lance.dataset(ours).update(upd_sql, where=where_sql)
        else:
            lancelot.dataset(ours).update(upd_expr, where=where_expr)
    assert_twins(theirs, ours, row_ids=True)


def test_update_transaction_is_pylance_s(twin_paths):
    _, ours = twin_paths
    lo = lancelot.dataset(ours)
    lo.update({"x": pc.field("x") * 2}, where=(pc.field("id") >= 10) & (pc.field("id") < 20))
    lo.update({"id": pc.field("id") + 100}, where=pc.field("id") < 15)
    ds = lancelot.dataset(ours)
    vs = list_versions(ds.store, ds.uri)
    t2, t3 = (load_transaction(ds.store, load_manifest(ds.store, ds.uri, vs, v)) for v in (2, 3))
    x_id = next(f.id for f in ds.manifest.fields if f.name == "x")
    id_id = next(f.id for f in ds.manifest.fields if f.name == "id")
    assert t2.WhichOneof("operation") == "update"
    assert sorted(f.id for f in t2.update.updated_fragments) == [0, 1]
    assert [f.physical_rows for f in t2.update.new_fragments] == [10]
    assert list(t2.update.fields_for_preserving_frag_bitmap) == [x_id]
    assert list(t3.update.removed_fragment_ids) == [0] and list(t3.update.fields_for_preserving_frag_bitmap) == [id_id]
    assert [f.id for f in ds.manifest.fragments] == [1, 2, 3, 4] and ds.manifest.max_fragment_id == 4


def test_update_returns_the_count_and_moves_the_dataset(twin_paths):
    _, ours = twin_paths
    ds = lancelot.dataset(ours)
    assert ds.update({"x": pc.scalar(1.0)}, where=pc.field("id") < 4) == {"num_rows_updated": 4}
    assert ds.version == 2
    assert ds.to_table(filter=pc.field("id") < 4).column("x").to_pylist() == [1.0] * 4


@needs_sql
@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_update_sql_twins(tmp_path, version):
    theirs, ours = twins(tmp_path, table(), version)
    _run(theirs, ours, sql=True)
    assert_twins(theirs, ours)


# -- ported from the reference's python/python/tests/test_dataset.py (facts, not code) ------------


def test_update_dataset_ported(tmp_path):
    """test_update_dataset: b + 1 everywhere, a * 2 where a < 50, a vector literal everywhere."""
    nrows = 100
    vecs = pa.FixedSizeListArray.from_arrays(pa.array(range(2 * nrows), type=pa.float32()), 2)
    lance.write_dataset(pa.table({"a": range(nrows), "b": range(nrows), "vec": vecs}), tmp_path / "d")
    ds = lancelot.dataset(tmp_path / "d")
    assert ds.update({"b": pc.field("b") + 1}) == {"num_rows_updated": 100}
    assert ds.to_table(columns=["a", "b"]) == pa.table({"a": range(100), "b": range(1, 101)})
    assert ds.update({"a": pc.field("a") * 2}, where=pc.field("a") < 50) == {"num_rows_updated": 50}
    expected = pa.table({"a": [x * 2 if x < 50 else x for x in range(100)], "b": range(1, 101)})
    assert ds.to_table(columns=["a", "b"]).sort_by("b") == expected
    lit = pc.scalar(pa.scalar([42.0, 43.0], pa.list_(pa.float32(), 2)))
    assert ds.update({"vec": lit}) == {"num_rows_updated": 100}
    got = lance.dataset(tmp_path / "d").to_table(columns=["b", "vec"]).sort_by("b")
    assert got == pa.table({"b": range(1, 101), "vec": pa.array([[42.0, 43.0]] * 100, pa.list_(pa.float32(), 2))})
    lance.dataset(tmp_path / "d").validate()


def test_update_of_an_empty_dataset(tmp_path):
    """test_create_update_empty_dataset's empty dataset: an update of nothing is still a version."""
    schema = pa.schema([("a", pa.string()), ("b", pa.int64()), ("c", pa.float64())])
    lance.write_dataset(schema.empty_table(), tmp_path / "d")
    ds = lancelot.dataset(tmp_path / "d")
    assert ds.update({"b": pc.field("b") + 1}) == {"num_rows_updated": 0}
    assert ds.version == 2 and lance.dataset(tmp_path / "d").count_rows() == 0


# -- bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "updates, where",
    [
        ({"zz": pc.scalar(1)}, None),  # no such column
        ({}, None),  # nothing to update
        ({"id": pc.scalar("text")}, pc.field("id") < 3),  # a value that does not cast
        ({"x": pc.scalar(1.0)}, pc.field("zz") > 1),  # a condition on no such column
    ],
)
def test_update_bad_input_writes_nothing(twin_paths, updates, where):
    _, ours = twin_paths
    ds = lancelot.dataset(ours)
    before = files_of(ours)
    with pytest.raises(ValueError):  # pylance's class for each of these
        ds.update(updates, where=where)
    assert lancelot.dataset(ours).version == 1
    assert {f for f in files_of(ours) - before if not f.startswith("_transactions/")} == set()
    lance.dataset(ours).validate()


@needs_sql
@pytest.mark.parametrize("updates, where", [({"x": "x +"}, None), ({"x": "1"}, "id >")])
def test_update_sql_syntax_error_writes_nothing(twin_paths, updates, where):
    _, ours = twin_paths
    before = files_of(ours)
    with pytest.raises(ValueError):
        lancelot.dataset(ours).update(updates, where=where)
    assert files_of(ours) == before


def test_update_many_rows_roll_into_new_fragments(tmp_path):
    """Updated rows stream into data files; a fragment's rows all updated leave it removed."""
    n = 3000
    lance.write_dataset(pa.table({"id": np.arange(n), "v": np.zeros(n)}), tmp_path / "d", max_rows_per_file=1000)
    ds = lancelot.dataset(tmp_path / "d")
    assert ds.update({"v": pc.field("id") * 2}, where=pc.field("id") >= 500) == {"num_rows_updated": 2500}
    lt = lance.dataset(tmp_path / "d")
    lt.validate()
    t = lt.to_table().sort_by("id")
    assert t.column("v").to_pylist() == [0.0] * 500 + [float(i * 2) for i in range(500, n)]
    assert [f.fragment_id for f in lt.get_fragments()] == [0, 3]


def test_stale_update_and_merge_insert_rerun_after_concurrent_commits(twin_paths):
    """A commit that lost the race re-runs on the latest version (conflict_retries), as pylance's:
    a stale update after a delete and an update of the same fragment, by pylance and lancelot."""
    _, ours = twin_paths
    stale_u = lancelot.dataset(ours)
    stale_m = lancelot.dataset(ours)
    lance.dataset(ours).delete("id = 2")
    lancelot.dataset(ours).update({"x": pc.scalar(-1.0)}, where=pc.field("id") == 3)
    assert stale_u.update({"x": pc.scalar(7.0)}, where=pc.field("id") < 5) == {"num_rows_updated": 4}
    r = stale_m.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    src = table(2, 4).set_column(2, "x", pa.array([9.0, 9.0]))
    assert r.execute(src) == {"num_inserted_rows": 0, "num_updated_rows": 2, "num_deleted_rows": 0}
    got = lance.dataset(ours)
    got.validate()
    assert got.version == 5
    assert rows_x(got) == {0: 7.0, 1: 7.0, 3: 7.0, 4: 9.0, 5: 9.0}
    with pytest.raises(CommitConflictError):  # a row version 5 updated: no retry left to find it again
        lancelot.dataset(ours, version=4).update({"x": pc.scalar(1.0)}, where=pc.field("id") == 4, conflict_retries=0)
    # other rows of the same fragment: rebased, no retry needed (pylance: the same)
    assert lancelot.dataset(ours, version=4).update({"x": "1.0"}, where="id = 0", conflict_retries=0) == {
        "num_rows_updated": 1
    }
    assert rows_x(lance.dataset(ours)) == {0: 1.0, 1: 7.0, 3: 7.0, 4: 9.0, 5: 9.0}


def rows_x(ds) -> dict[int, float]:
    t = ds.to_table(columns=["id", "x"], filter="id < 6")
    return dict(zip(t.column("id").to_pylist(), t.column("x").to_pylist()))


@pytest.mark.parametrize("op", ["update_x", "update_id", "merge_insert", "delete"])
def test_indices_pylance_built_stay_as_pylance_leaves_them(tmp_path, op):
    """An index section pylance wrote comes out of each operation as pylance's own does, and
    pylance's indexed queries agree."""
    from tests.dataset.helpers import index_section, indexed_twins

    theirs, ours = indexed_twins(tmp_path)
    src = table(2, 28).set_column(2, "x", pa.array([0.5, 0.25]))
    for lib, p in (("lance", theirs), ("lancelot", ours)):
        ds = (lance if lib == "lance" else lancelot).dataset(p)
        if op == "update_x":
            ds.update({"x": "x + 1"} if lib == "lance" else {"x": pc.field("x") + 1}, where="id < 15")
        elif op == "update_id":
            ds.update({"id": "id + 100"}, where="id < 15")
        elif op == "merge_insert":
            ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
        else:
            ds.delete("id < 12")
    assert index_section(ours) == index_section(theirs)
    for flt in ("id = 1 OR id = 29 OR id = 110", "x >= 2.0 AND x < 5.0", "x = 0.5"):
        assert lance.dataset(ours).to_table(filter=flt).sort_by("id") == lance.dataset(theirs).to_table(
            filter=flt
        ).sort_by("id")
    assert_twins(theirs, ours)


def test_retry_timeout_stops_retries(twin_paths):
    """pylance's retry_timeout: no retry starts once it has passed (the first try always runs)."""
    from datetime import timedelta

    _, ours = twin_paths
    stale = lancelot.dataset(ours)
    lancelot.dataset(ours).update({"x": pc.scalar(1.0)}, where=pc.field("id") == 1)
    with pytest.raises(CommitConflictError):  # the same row: found again only by a retry
        stale.update({"x": pc.scalar(2.0)}, where=pc.field("id") == 1, retry_timeout=timedelta(0))
    b = stale.merge_insert("id").when_matched_update_all().retry_timeout(timedelta(0))
    with pytest.raises(CommitConflictError):
        b.execute(table(1, 1))
    assert stale.update({"x": pc.scalar(2.0)}, where=pc.field("id") == 1, retry_timeout=timedelta(seconds=30)) == {
        "num_rows_updated": 1
    }


@pytest.mark.parametrize("stable", [False, True])
def test_changes_on_multi_file_fragments_with_dropped_columns(tmp_path, stable):
    """update and merge_insert on fragments of several data files, after a drop (field ids with
    gaps), then a rename and a delete: the same versions as pylance's own operations."""
    theirs, ours = twins(tmp_path, table(), "2.1", stable=stable)
    src = pa.table({"id": pa.array([1, 100], pa.int64()), "y": pa.array([-1, -2], pa.int64())})
    for p, lib in ((theirs, lance), (ours, lancelot)):
        ds = lib.dataset(p)
        ds.add_columns({"y": "id * 3"} if lib is lance else {"y": pc.field("id") * 3})
        ds.drop_columns(["s"])
        if lib is lance:
            ds.update({"y": "y + 1", "x": "0.0"}, where="id > 5 AND id < 25")
        else:
            ds.update({"y": pc.field("y") + 1, "x": pc.scalar(0.0)}, where=(pc.field("id") > 5) & (pc.field("id") < 25))
        ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
        ds.alter_columns({"path": "y", "name": "yy"})
        ds.delete("yy < 0" if lib is lance else pc.field("yy") < 0)
    assert_twins(theirs, ours, row_ids=stable)


@pytest.mark.parametrize("stable", [False, True])
def test_count_rows_with_row_id_filters(tmp_path, stable):
    """Filters naming ``_rowid``/``_rowaddr`` count as pylance counts, on the dataset and on a
    fragment (they once failed: the row-id columns were not computed before filtering)."""
    theirs, ours = twins(tmp_path, table(), stable=stable)
    _run(theirs, ours, steps=STEPS[:1])
    lt, lo = lance.dataset(theirs), lancelot.dataset(ours)
    for f in ["_rowid > 12", "_rowaddr >= 4294967296", "_rowid IN (3, 14, 15, 33)"]:
        assert lo.count_rows(f) == lt.count_rows(f)
        assert lo.get_fragments()[-1].count_rows(f) == lt.get_fragments()[-1].count_rows(f)


@pytest.mark.parametrize(
    "value",
    ["d / 3", "d / 2", "d * d", "CAST(id AS DECIMAL(20,4)) / 8", "id / 3", "id", "d * 10", "id * 1000000000"],
)
def test_update_casts_into_a_decimal_column_as_pylance(tmp_path, value):
    """A SET value of more decimal places than its column is rounded half away from zero, an integer or
    wider decimal is checked value by value against the column's precision, as DataFusion casts (pyarrow's
    cast refuses both); a value that does not fit is an OSError in both libraries."""
    import decimal

    d = [decimal.Decimal(x) for x in ("-0.25", "-0.75", "0.05", "0.15", "0.25", "99999999.99")]
    data = pa.table({"id": pa.array([-5, -1, 0, 1, 5, 10**9], pa.int64()), "d": pa.array(d, pa.decimal128(10, 2))})
    theirs, ours = twins(tmp_path, data)
    outcomes = []
    for lib, path in ((lance, theirs), (lancelot, ours)):
        try:
            lib.dataset(path).update({"d": value}, where="id <> 0")
            outcomes.append("updated")
        except OSError:
            outcomes.append("OSError")
    assert outcomes[0] == outcomes[1]
    assert_twins(theirs, ours)


def test_update_data_storage_version(tmp_path) -> None:
    paths = {}
    for who in ("theirs", "ours"):
        paths[who] = p = str(tmp_path / who)
        lance.write_dataset(pa.table({"id": [1, 2, 3]}), p, data_storage_version="2.1")
    for tgt in ("2.1", "bogus", "legacy"):
        res = []
        for lib, p in ((lance, paths["theirs"]), (lancelot, paths["ours"])):
            try:
                res.append(lib.dataset(p).update({"id": "id + 10"}, "id > 1", 10, None, tgt))
            except ValueError:
                res.append(ValueError)
        assert res[0] == res[1], tgt
    assert lance.dataset(paths["ours"]).to_table() == lance.dataset(paths["theirs"]).to_table()
