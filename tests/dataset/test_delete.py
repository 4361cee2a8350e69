"""``LanceDataset.delete`` against pylance 14.0.2: one Delete transaction per call (also when no
row matches, so version numbers stay in step), pylance's return value and errors."""

from __future__ import annotations

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.dataset.transaction import operation
from tests.dataset.helpers import VERSIONS, assert_twins, files_of, needs_sql, table, twins

# (pylance's SQL, the same as a pyarrow Expression for lancelot)
STEPS = [
    ("id > 1000", pc.field("id") > 1000),  # matches nothing: still a version
    ("id = 3 OR id = 4", (pc.field("id") == 3) | (pc.field("id") == 4)),
    ("id < 15", pc.field("id") < 15),  # the rest of fragment 0: the fragment goes
    ("x >= 30 AND x < 45", (pc.field("x") >= 30) & (pc.field("x") < 45)),  # across fragments 1 and 2
    ("s IS NULL", pc.field("s").is_null()),
]


@pytest.mark.parametrize("version", VERSIONS)
def test_delete_twins(tmp_path, version):
    theirs, ours = twins(tmp_path, table(), version)
    lt, lo = lance.dataset(theirs), lancelot.dataset(ours)
    for sql, expr in STEPS:
        assert lo.delete(expr) == lt.delete(sql)
        assert lo.version == lt.version
    assert_twins(theirs, ours)


def test_delete_transactions_are_pylance_s(twin_paths):
    theirs, ours = twin_paths
    lo = lancelot.dataset(ours)
    lo.delete(pc.field("id") > 1000)
    lo.delete(pc.field("id") < 15)
    lo.delete(pc.field("id") == 20)
    ds = lancelot.dataset(ours)
    from lancelot.dataset.commit import list_versions, load_manifest, load_transaction

    vs = list_versions(ds.store, ds.uri)
    txns = [load_transaction(ds.store, load_manifest(ds.store, ds.uri, vs, v)) for v in (2, 3, 4)]
    assert [operation(t) for t in txns] == ["delete"] * 3
    assert not txns[0].delete.updated_fragments and not txns[0].delete.deleted_fragment_ids
    assert list(txns[1].delete.deleted_fragment_ids) == [0]
    assert [f.id for f in txns[2].delete.updated_fragments] == [1]
    assert txns[2].delete.updated_fragments[0].deletion_file.num_deleted_rows == 1
    assert [t.read_version for t in txns] == [1, 2, 3]


def test_delete_stable_row_ids(tmp_path):
    theirs, ours = twins(tmp_path, table(), stable=True)
    for sql, expr in STEPS[:3]:
        lancelot.dataset(ours).delete(expr)
        lance.dataset(theirs).delete(sql)
    assert_twins(theirs, ours, row_ids=True)


@pytest.mark.parametrize("version", ["2.1"])
def test_delete_alternating_with_pylance(tmp_path, version):
    """lancelot and pylance take turns on one dataset; a twin gets every step from pylance."""
    theirs, ours = twins(tmp_path, table(), version)
    for i, (sql, expr) in enumerate(STEPS):
        lance.dataset(theirs).delete(sql)
        if i % 2:
            lance.dataset(ours).delete(sql)
        else:
            lancelot.dataset(ours).delete(expr)
    assert_twins(theirs, ours)


def test_delete_returns_the_count_and_moves_the_dataset(twin_paths):
    _, ours = twin_paths
    ds = lancelot.dataset(ours)
    r = ds.delete(pc.field("id") < 5)
    assert r == {"num_deleted_rows": 5} and isinstance(r, dict)
    assert ds.version == 2 and ds.count_rows() == 35
    assert r.count_rows() == 35  # lancelot's earlier API returned the dataset: still reachable


@needs_sql
@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_delete_sql_twins(tmp_path, version):
    theirs, ours = twins(tmp_path, table(), version)
    for sql, _ in STEPS:
        assert lancelot.dataset(ours).delete(sql) == lance.dataset(theirs).delete(sql)
    assert_twins(theirs, ours)


# -- ported from the reference's python/python/tests/test_dataset.py (facts, not code) ------------


def _non_nullable(tmp_path):
    schema = pa.schema([pa.field("a", pa.int64()), pa.field("b", pa.int64(), nullable=False)])
    tab = pa.table({"a": range(100), "b": range(100)}, schema=schema)
    lance.write_dataset(tab, tmp_path / "dataset")
    return schema, str(tmp_path / "dataset")


def test_delete_data_ported(tmp_path):
    """test_delete_data: two deletes make version 3; an Expression works; deleting every row."""
    schema, uri = _non_nullable(tmp_path)
    ds = lancelot.dataset(uri)
    ds.delete(pc.field("a") < 10)
    ds.delete(pc.field("b").isin([98, 99]))
    assert ds.version == 3
    assert ds.to_table() == pa.table({"a": range(10, 98), "b": range(10, 98)}, schema=schema)
    ds.delete(pc.field("a") < 20)
    assert ds.version == 4
    assert ds.to_table() == pa.table({"a": range(20, 98), "b": range(20, 98)}, schema=schema)
    ds.delete(pc.field("b").is_valid())
    assert ds.count_rows() == 0
    assert lance.dataset(uri).count_rows() == 0
    lance.dataset(uri).validate()


def test_count_deleted_rows_ported(tmp_path):
    """test_count_deleted_rows: a fragment's metadata counts its deleted rows."""
    lance.write_dataset(pa.table({"a": range(100)}), tmp_path / "d")
    ds = lancelot.dataset(tmp_path / "d")
    ds.delete(pc.field("a") < 10)
    assert ds.get_fragments()[0].metadata.num_deleted_rows == 10
    assert lance.dataset(tmp_path / "d").get_fragments()[0].count_rows() == 90


# -- bad input --------------------------------------------------------------------------------------


def test_delete_of_an_unknown_column_writes_nothing(twin_paths):
    _, ours = twin_paths
    before = files_of(ours)
    # pylance's classes for the same mistake: OSError in SQL text, pyarrow's ArrowInvalid in an Expression
    for lib in (lancelot, lance):
        with pytest.raises(OSError, match="zz"):
            lib.dataset(ours).delete("zz > 1")
        with pytest.raises(pa.ArrowInvalid, match="zz"):
            lib.dataset(ours).delete(pc.field("zz") > 1)
    assert files_of(ours) == before and lancelot.dataset(ours).version == 1


@needs_sql
def test_delete_sql_syntax_error_writes_nothing(twin_paths):
    _, ours = twin_paths
    before = files_of(ours)
    with pytest.raises(OSError):
        lancelot.dataset(ours).delete("id >")
    assert files_of(ours) == before


def test_delete_needs_a_predicate(twin_paths):
    _, ours = twin_paths
    with pytest.raises(TypeError):
        lancelot.dataset(ours).delete(42)
