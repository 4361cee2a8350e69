"""Transactions as values: ``merge_insert(...).execute_uncommitted`` + ``LanceDataset.commit(uri,
Transaction)``, the LanceOperations Delete / Update / Merge / Project / Restore / DataReplacement /
UpdateConfig, ``commit_batch``, ``read_transaction``. Each is run by lancelot on one dataset and by
pylance on its twin; the two must agree version by version (pylance reads both), and a transaction
pylance planned commits in lancelot as in pylance. Several are the reference's test_dataset.py tests
(test_*_with_commit, test_data_replacement, test_schema_project_*) run against both libraries."""

from __future__ import annotations

import lance
import lance.file
import pyarrow as pa
import pytest
from lance.schema import LanceSchema as PylanceSchema

import lancelot
from lancelot.dataset import CommitConflictError, LanceDataset, LanceOperation, LanceSchema
from tests.dataset.helpers import API, LIBS, VERSIONS, assert_same_row_versions, assert_twins, table, twins


def _upsert(n: int = 6, start: int = 37) -> pa.Table:
    t = table(n, start)
    return t.set_column(1, "s", pa.array([f"new{i}" for i in range(n)]))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("stable", [False, True])
def test_execute_uncommitted_then_commit(tmp_path, version, stable) -> None:
    theirs, ours = twins(tmp_path, table(40), version, stable=stable)
    src = _upsert()
    results = []
    for p, lib in ((theirs, lance), (ours, lancelot)):
        ds = lib.dataset(p)
        txn, stats = (
            ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute_uncommitted(src)
        )
        assert ds.version == 1 and lib.dataset(p).version == 1  # nothing committed yet
        assert type(txn.operation).__name__ == "Update" and txn.read_version == 1
        new = (lance.LanceDataset if lib is lance else LanceDataset).commit(p, txn)
        assert new.version == 2
        results.append((stats, txn))
    assert results[0][0] == results[1][0] == {"num_inserted_rows": 3, "num_updated_rows": 3, "num_deleted_rows": 0}
    assert_twins(theirs, ours, row_ids=stable)
    if stable:
        assert_same_row_versions(theirs, ours)
    # the transaction file is the one planned: pylance reads its uuid and operation
    got = lance.dataset(ours).read_transaction(2)
    assert got.uuid == results[1][1].uuid and isinstance(got.operation, lance.LanceOperation.Update)
    assert got.operation.update_mode == "rewrite_rows"


def test_pylance_transaction_committed_by_lancelot(tmp_path) -> None:
    theirs, ours = twins(tmp_path, table(40), stable=True)
    src = _upsert(8, 20)
    for p in (theirs, ours):
        txn, _ = lance.dataset(p).merge_insert("id").when_matched_update_all().execute_uncommitted(src)
        commit = lance.LanceDataset.commit if p == theirs else LanceDataset.commit
        commit(p, txn)
    assert_twins(theirs, ours, row_ids=True)
    assert lancelot.dataset(ours).read_transaction(2).uuid == lance.dataset(ours).read_transaction(2).uuid


def test_uncommitted_merge_insert_over_concurrent_append(tmp_path) -> None:
    """An append committed between planning and commit: both libraries rebase the Update over it."""
    theirs, ours = twins(tmp_path, table(30))
    for p, lib, cls in ((theirs, lance, lance.LanceDataset), (ours, lancelot, LanceDataset)):
        txn, _ = lib.dataset(p).merge_insert("id").when_matched_update_all().execute_uncommitted(_upsert(4, 2))
        lib.write_dataset(table(5, 100), p, mode="append")
        assert cls.commit(p, txn).version == 3
    assert_twins(theirs, ours)


def test_uncommitted_merge_insert_over_concurrent_update_conflicts(tmp_path) -> None:
    """A concurrent update rewrote the same rows: pylance refuses the commit (OSError), so does lancelot."""
    theirs, ours = twins(tmp_path, table(30))
    for p, lib, cls in ((theirs, lance, lance.LanceDataset), (ours, lancelot, LanceDataset)):
        txn, _ = lib.dataset(p).merge_insert("id").when_matched_update_all().execute_uncommitted(_upsert(4, 2))
        lib.dataset(p).update({"x": "x + 1"}, "id < 10")
        with pytest.raises((OSError, CommitConflictError)):  # lancelot's is no OSError (yet)
            cls.commit(p, txn, max_retries=0)
        assert lance.dataset(p).version == 2
    assert_twins(theirs, ours)


def test_update_operation_with_read_version(tmp_path) -> None:
    """The bare LanceOperation.Update (not the Transaction) commits given its read version, and
    needs one (ValueError, as pylance)."""
    theirs, ours = twins(tmp_path, table(30))
    for p, lib, cls in ((theirs, lance, lance.LanceDataset), (ours, lancelot, LanceDataset)):
        txn, _ = lib.dataset(p).merge_insert("id").when_matched_delete().execute_uncommitted(table(5, 3))
        with pytest.raises(ValueError):
            cls.commit(p, txn.operation)
        cls.commit(p, txn.operation, read_version=1)
    assert_twins(theirs, ours)
    assert lancelot.dataset(ours).count_rows() == 25


# -- the reference's test_dataset.py *_with_commit tests, run by both libraries ---------------------------


def _ab(n: int = 100, lo: int = 0) -> pa.Table:
    return pa.Table.from_pydict({"a": range(lo, lo + n), "b": range(lo, lo + n)})


@pytest.mark.parametrize("lib", LIBS)
def test_create_and_append_with_commit(tmp_path, lib) -> None:
    cls, ops, _ = API[lib][1:4]
    base = str(tmp_path / "t")
    ds = cls.commit(base, ops.Overwrite(_ab().schema, [lance.fragment.LanceFragment.create(base, _ab())]))
    assert ds.to_table() == _ab()
    append = ops.Append([lance.fragment.LanceFragment.create(base, _ab())])
    with pytest.raises(ValueError):
        cls.commit(ds, append)
    ds = cls.commit(ds, append, read_version=1)
    assert lance.dataset(base).to_table() == pa.concat_tables([_ab(), _ab()])


@pytest.mark.parametrize("lib", LIBS)
def test_commit_batch_append(tmp_path, lib) -> None:
    cls, ops, txn_cls = API[lib][1:4]
    base = str(tmp_path / "t")
    lance.write_dataset(_ab(), base)
    f2 = lance.fragment.write_fragments(_ab(100, 100), base)
    f3 = lance.fragment.write_fragments(_ab(100, 200), base)
    result = cls.commit_batch(base, [txn_cls(1, ops.Append(f2)), txn_cls(2, ops.Append(f3))])
    ds = result["dataset"]
    assert ds.version == 2 and len(ds.get_fragments()) == 3
    assert lance.dataset(base).to_table() == pa.concat_tables([_ab(), _ab(100, 100), _ab(100, 200)])
    merged = result["merged"]
    assert isinstance(merged, txn_cls) and type(merged.operation).__name__ == "Append"
    assert merged.operation.fragments == f2 + f3
    fr = lance.dataset(base).get_fragments()[0].delete("a < 5")
    with pytest.raises(OSError, match="Only append"):
        cls.commit_batch(base, [txn_cls(2, ops.Delete([fr], [], "a < 5"))])


@pytest.mark.parametrize("lib", LIBS)
def test_delete_with_commit(tmp_path, lib) -> None:
    cls, ops, _ = API[lib][1:4]
    base = str(tmp_path / "t")
    lance.write_dataset(_ab(), base)
    lance.write_dataset(_ab(), base, mode="append")
    frags = lance.dataset(base).get_fragments()
    delete = ops.Delete([frags[0].delete("a >= 50")], [frags[1].fragment_id], "hello")
    ds = cls.commit(base, delete, read_version=2)
    assert ds.version == 3
    assert lance.dataset(base).to_table() == _ab(50)
    assert lancelot.dataset(base).to_table() == _ab(50)
    assert lance.dataset(base).read_transaction(3).operation.predicate == "hello"


@pytest.mark.parametrize("lib", LIBS)
def test_restore_with_commit(tmp_path, lib) -> None:
    cls, ops, _ = API[lib][1:4]
    base = str(tmp_path / "t")
    lance.write_dataset(_ab(), base)
    lance.write_dataset(_ab(), base, mode="append")
    ds = cls.commit(base, ops.Restore(1))
    assert ds.version == 3
    assert lance.dataset(base).to_table() == _ab()


@pytest.mark.parametrize("lib", LIBS)
def test_merge_with_commit(tmp_path, lib) -> None:
    cls, ops, _ = API[lib][1:4]
    base = str(tmp_path / "t")
    lance.write_dataset(_ab(), base)
    merged = (
        lance.dataset(base).get_fragments()[0].merge_columns(lambda _: pa.RecordBatch.from_pydict({"c": range(100)}))
    )
    want = pa.Table.from_pydict({"a": range(100), "b": range(100), "c": range(100)})
    with pytest.deprecated_call():  # a pyarrow schema: ids by position, deprecated in both
        cls.commit(base, ops.Merge([merged[0]], want.schema), read_version=1)
    assert lance.dataset(base).to_table() == want
    assert lancelot.dataset(base).to_table() == want
    lance.dataset(base).validate()


def test_merge_with_lance_schema_twins(tmp_path) -> None:
    """merge_columns' own LanceSchema (pylance's), committed by each library: equal versions."""
    theirs, ours = twins(tmp_path, table(30))
    for p, cls, ops in ((theirs, lance.LanceDataset, lance.LanceOperation), (ours, LanceDataset, LanceOperation)):
        frags, schema = [], None
        for f in lance.dataset(p).get_fragments():
            nf, schema = f.merge_columns(lambda b: pa.record_batch([pa.compute.multiply(b["id"], 3)], ["y"]), ["id"])
            frags.append(nf)
        cls.commit(p, ops.Merge(frags, schema), read_version=1)
    assert_twins(theirs, ours)
    assert lancelot.dataset(ours).lance_schema.field("y").id() == lance.dataset(theirs).lance_schema.field("y").id()


@pytest.mark.parametrize("lib", LIBS)
def test_data_replacement(tmp_path, lib) -> None:
    cls, ops, _ = API[lib][1:4]
    base = str(tmp_path / "t")
    t = pa.Table.from_pydict({"a": range(100), "b": [str(i) for i in range(100)]})
    lance.write_dataset(t, base)
    new = pa.Table.from_pydict({"a": range(100, 200), "b": [str(i) for i in range(100, 200)]})
    data_file = lance.fragment.LanceFragment.create(base, new).files[0]
    cls.commit(base, ops.DataReplacement([ops.DataReplacementGroup(0, data_file)]), read_version=1)
    assert lance.dataset(base).to_table() == new
    assert lancelot.dataset(base).to_table() == new
    lance.dataset(base).validate()
    assert type(lance.dataset(base).read_transaction(2).operation).__name__ == "DataReplacement"


@pytest.mark.parametrize("lib", LIBS)
def test_data_replacement_fills_all_null_column(tmp_path, lib) -> None:
    """A column added as all-null (no data file) gets its first file by a DataReplacement."""
    cls, ops, _ = API[lib][1:4]
    base = str(tmp_path / "t")
    ds = lance.write_dataset(pa.table({"a": range(10)}), base)
    ds.add_columns(pa.field("b", pa.int64()))
    with lance.file.LanceFileWriter(f"{base}/data/new_b.lance", version="2.2") as w:
        w.write_batch(pa.table({"b": pa.array(range(50, 60), pa.int64())}))
    d = lance.fragment.DataFile("new_b.lance", [1], [0], 2, 2)
    cls.commit(base, ops.DataReplacement([ops.DataReplacementGroup(0, d)]), read_version=2)
    want = pa.table({"a": range(10), "b": pa.array(range(50, 60), pa.int64())})
    assert lance.dataset(base).to_table() == want
    assert lancelot.dataset(base).to_table() == want


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize(
    ("names", "want"),
    [
        (["a"], {"a": range(100, 200)}),
        (["c", "d"], {"c": range(100, 200), "d": range(300, 400)}),
        (["b", "a"], {"b": range(100, 200), "a": range(300, 400)}),
    ],  # fmt: skip
)
def test_schema_project(tmp_path, lib, names, want) -> None:
    """The reference's test_schema_project_{drop,rename,swap}_column: ids by position."""
    cls, ops, _ = API[lib][1:4]
    schema_cls = PylanceSchema if lib == "pylance" else LanceSchema
    base = str(tmp_path / "t")
    ds = lance.write_dataset(pa.Table.from_pydict({"a": range(100, 200), "b": range(300, 400)}), base)
    schema = pa.Table.from_pydict({n: range(1) for n in names}).schema
    cls.commit(ds.uri, ops.Project(schema_cls.from_pyarrow(schema)), read_version=1)
    assert lance.dataset(base).to_table() == pa.Table.from_pydict(want)
    assert lancelot.dataset(base).to_table() == pa.Table.from_pydict(want)


@pytest.mark.parametrize("lib", LIBS)
def test_update_config_operation(tmp_path, lib) -> None:
    cls, ops, _ = API[lib][1:4]
    base = str(tmp_path / "t")
    lance.write_dataset(_ab(10), base)
    op = ops.UpdateConfig(
        config_updates=ops.UpdateMap({"k": "v"}),
        table_metadata_updates=ops.UpdateMap({"owner": "me"}),
        schema_metadata_updates=ops.UpdateMap({"sm": "1"}),
        field_metadata_updates={1: ops.UpdateMap({"unit": "m"})},
    )
    cls.commit(base, op, read_version=1)
    ds = lance.dataset(base)
    assert ds.config()["k"] == "v" and ds.metadata == {"owner": "me"}
    assert ds.schema.metadata == {b"sm": b"1"} and ds.schema.field("b").metadata == {b"unit": b"m"}


def test_read_transaction_and_get_transactions(tmp_path) -> None:
    """lancelot reads the transactions pylance stored, with the same operation kinds and uuids."""
    p = str(tmp_path / "t")
    ds = lance.write_dataset(table(20), p)
    ds.delete("id < 3")
    ds.update({"x": "x * 2"}, "id > 15")
    ds.add_columns({"z": "id + 1"})
    ds.drop_columns(["z"])
    mine, theirs = lancelot.dataset(p).get_transactions(10), lance.dataset(p).get_transactions(10)
    assert [type(t.operation).__name__ for t in mine] == [type(t.operation).__name__ for t in theirs]
    assert [t.uuid for t in mine] == [t.uuid for t in theirs]
    assert [t.read_version for t in mine] == [t.read_version for t in theirs]
    assert mine[-1].operation.new_schema.to_pyarrow() == theirs[-1].operation.new_schema.to_pyarrow()
    assert [t.operation.predicate for t in mine if type(t.operation).__name__ == "Delete"] == ["id < 3"]


def test_transaction_properties_stored(tmp_path) -> None:
    theirs, ours = twins(tmp_path, table(20))
    for p, lib, cls in ((theirs, lance, lance.LanceDataset), (ours, lancelot, LanceDataset)):
        txn, _ = lib.dataset(p).merge_insert("id").when_not_matched_insert_all().execute_uncommitted(table(3, 50))
        txn.transaction_properties = {"lance.commit.message": "upsert", "job": "7"}
        cls.commit(p, txn)
        assert lance.dataset(p).read_transaction(2).transaction_properties == {
            "lance.commit.message": "upsert",
            "job": "7",
        }
    assert lancelot.dataset(ours).read_transaction(2).transaction_properties["job"] == "7"
    assert_twins(theirs, ours)


@pytest.mark.parametrize("lib", LIBS)
def test_strict_overwrite(tmp_path, lib) -> None:
    """The reference's test_strict_overwrite: an Overwrite planned at a version another Overwrite
    has replaced since is refused (pylance 14.0.2: a retryable conflict, whatever max_retries)."""
    cls, ops, _ = API[lib][1:4]
    base = str(tmp_path / "t")
    op = ops.Overwrite(_ab().schema, [lance.fragment.LanceFragment.create(base, _ab())])
    v1 = cls.commit(base, op, max_retries=0)
    assert cls.commit(base, op, read_version=v1.version, max_retries=0).version == 2
    for retries in (0, 20):
        with pytest.raises((OSError, CommitConflictError), match="[Cc]ommit|conflict"):
            cls.commit(base, op, read_version=v1.version, max_retries=retries)
    assert lance.dataset(base).version == 2
    # an Overwrite over appends and deletes is rebased (the latest wins), unless strict (max_retries=0)
    lance.write_dataset(_ab(5), base, mode="append")
    lance.dataset(base).delete("a = 1")
    with pytest.raises((OSError, CommitConflictError), match="Commit conflict for version 3"):
        cls.commit(base, op, read_version=2, max_retries=0)
    assert cls.commit(base, op, read_version=4, max_retries=0).version == 5
    lance.write_dataset(_ab(5), base, mode="append")
    assert cls.commit(base, op, read_version=5).version == 7
    assert lance.dataset(base).to_table() == _ab()


def test_transaction_pickles_for_a_driver(tmp_path) -> None:
    """A worker plans (execute_uncommitted), pickles the Transaction to the driver, which commits it."""
    import pickle

    theirs, ours = twins(tmp_path, table(30))
    for p, lib, cls in ((theirs, lance, lance.LanceDataset), (ours, lancelot, LanceDataset)):
        txn, _ = lib.dataset(p).merge_insert("id").when_matched_update_all().execute_uncommitted(_upsert(5, 27))
        again = pickle.loads(pickle.dumps(txn))
        assert again == txn
        cls.commit(p, again)
    assert_twins(theirs, ours)


def test_commit_index(tmp_path) -> None:
    """The reference's test_commit_index: an index built on one dataset, its files copied into two
    twins, committed with LanceOperation.CreateIndex by pylance into one and lancelot into the other.
    (pylance 14.0.2 lists the committed index with type 'Unknown', not the source's: both do.)"""
    import shutil
    from pathlib import Path

    from lance.dataset import Index

    t = pa.table({"meta": [f"m{i}" for i in range(300)], "id": range(300)})
    src = lance.write_dataset(t, str(tmp_path / "src"))
    src.create_scalar_index("meta", index_type="BTREE")
    iid = src.list_indices()[0]["uuid"]
    listed = []
    for p, cls in ((str(tmp_path / "theirs"), lance.LanceDataset), (str(tmp_path / "ours"), LanceDataset)):
        d = lance.write_dataset(t, p)
        shutil.copytree(Path(src.uri) / "_indices" / iid, Path(p) / "_indices" / iid)
        field_id = next(f.id() for f in d.lance_schema.fields() if f.name() == "meta")
        frags = {f.fragment_id for f in d.get_fragments()}
        idx = Index(
            uuid=iid, name="meta_idx", fields=[field_id], dataset_version=1, fragment_ids=frags, index_version=0
        )
        cls.commit(p, lance.LanceOperation.CreateIndex(new_indices=[idx], removed_indices=[]), read_version=1)
        got = lance.dataset(p)
        got.validate()
        plan = got.scanner(fast_search=True, prefilter=True, filter="meta = 'hello'").explain_plan()
        assert "ScalarIndexQuery: query=[meta = hello]@meta_idx" in plan
        assert got.to_table(filter="meta = 'm5'").to_pydict() == {"meta": ["m5"], "id": [5]}
        listed.append(got.list_indices())
        assert lancelot.dataset(p).list_indices()[0]["uuid"] == iid
    assert listed[1] == listed[0]
