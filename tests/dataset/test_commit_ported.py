"""The reference's own Python tests of commits, transaction properties, commit locks, detached
commits and shallow clones (python/python/tests/test_dataset.py in lancedb/lance), ported: each runs
with pylance and with lancelot (``lib``), pylance the oracle; what lancelot writes is read back by
pylance. Where pylance 14.0.2 differs from the reference's assertion, the test follows pylance and
says so."""

from __future__ import annotations

import contextlib

import lance
import lance.commit
import pyarrow as pa
import pytest

import lancelot
import lancelot.commit
from lancelot.dataset import write_fragments
from tests.dataset.helpers import API, LIBS

CONFLICT = {"pylance": lance.commit.CommitConflictError, "lancelot": lancelot.commit.CommitConflictError}
KEY = "__lance_commit_message"
AB = pa.Table.from_pydict({"a": range(20), "b": range(20)})


@pytest.mark.parametrize("lib", LIBS)
def test_create_from_commit(tmp_path, lib) -> None:
    mod, cls, ops, _, frag = API[lib]
    base = tmp_path / "test"
    ds = cls.commit(base, ops.Overwrite(AB.schema, [frag.create(base, AB)]))
    assert ds.to_table() == AB and lance.dataset(base).to_table() == AB


@pytest.mark.parametrize("lib", LIBS)
def test_append_with_commit(tmp_path, lib) -> None:
    mod, cls, ops, _, frag = API[lib]
    base = tmp_path / "test"
    ds = mod.write_dataset(AB, base)
    append = ops.Append([frag.create(base, AB)])
    with pytest.raises(ValueError):  # must give the read version
        cls.commit(ds, append)
    ds = cls.commit(ds, append, read_version=1)
    assert ds.to_table() == pa.concat_tables([AB, AB]) and lance.dataset(base).to_table() == ds.to_table()


@pytest.mark.parametrize("lib", LIBS)
def test_custom_commit_lock(tmp_path, lib) -> None:
    mod, cls, ops, _, frag = API[lib]
    called = []

    @contextlib.contextmanager
    def lock(version: int):
        called.append(("lock", version))
        yield
        called.append(("release", version))

    mod.write_dataset(pa.table({"a": range(10)}), tmp_path / "test1", commit_lock=lock)
    assert called == [("lock", 1), ("release", 1)]

    @contextlib.contextmanager
    def failing(_version: int):
        try:
            yield
        finally:
            raise Exception("hello world!")

    with pytest.raises(Exception, match="hello world!"):
        mod.write_dataset(pa.table({"a": range(10)}), tmp_path / "test2", commit_lock=failing)

    @contextlib.contextmanager
    def conflicting(_version: int):
        raise CONFLICT[lib]()

    with pytest.raises(OSError, match="CommitConflictError"):
        mod.write_dataset(pa.table({"a": range(10)}), tmp_path / "test3", commit_lock=conflicting)
    ds = mod.dataset(tmp_path / "test1", commit_lock=conflicting)
    with pytest.raises(OSError, match="CommitConflictError"):
        ds.delete("a < 10")
    # (pylance 14.0.2 does not retry a lock's conflict: the commit fails, an OSError; so does lancelot)
    assert lance.dataset(tmp_path / "test1").version == 1
    assert not list((tmp_path / "test3").glob("_versions/*.manifest"))


@pytest.mark.parametrize("lib", LIBS)
def test_no_detached_v1(tmp_path, lib) -> None:
    """(pylance 14.0.2 names new datasets' manifests V2 by default: the V1 dataset is asked for.)"""
    mod, cls, ops, _, frag = API[lib]
    ds = mod.write_dataset(pa.table({"x": [0]}), tmp_path, enable_v2_manifest_paths=False)
    op = ops.Append([frag.create(ds.uri, pa.table({"x": [1]}))])
    with pytest.raises(OSError, match="v1 manifest paths"):
        cls.commit(ds.uri, op, read_version=ds.version, detached=True)
    assert [p.name for p in (tmp_path / "_versions").glob("*.manifest")] == ["1.manifest"]


@pytest.mark.parametrize("lib", LIBS)
def test_detached_commits(tmp_path, lib) -> None:
    mod, cls, ops, _, frag = API[lib]
    ds = mod.write_dataset(pa.table({"x": [0]}), tmp_path, enable_v2_manifest_paths=True)
    op = ops.Append([frag.create(ds.uri, pa.table({"x": [1]}))])
    detached = cls.commit(ds.uri, op, read_version=ds.version, detached=True)
    assert detached.version & 0x8000000000000000 != 0
    assert detached.to_table() == pa.table({"x": [0, 1]})
    for reader in (lance, lancelot):  # not part of the lineage
        assert reader.dataset(tmp_path).to_table() == pa.table({"x": [0]})
    ds = mod.write_dataset(pa.table({"x": [2]}), tmp_path, mode="append")
    assert ds.to_table() == pa.table({"x": [0, 2]})
    detached = ds.checkout_version(detached.version)
    assert detached.to_table() == pa.table({"x": [0, 1]})
    # a detached commit on top of a detached version
    op = ops.Append([frag.create(detached.uri, pa.table({"x": [3]}))])
    detached2 = cls.commit(ds.uri, op, read_version=detached.version, detached=True)
    assert detached2.to_table() == pa.table({"x": [0, 1, 3]})
    for reader in (lance, lancelot):
        assert reader.dataset(tmp_path).checkout_version(detached2.version).to_table() == pa.table({"x": [0, 1, 3]})


@pytest.mark.parametrize("lib", LIBS)
def test_read_transaction_properties(tmp_path, lib) -> None:
    mod, cls, ops, _, frag = API[lib]
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("value", pa.string())])
    batch1 = pa.RecordBatch.from_arrays([pa.array([1, 2, 3]), pa.array(["a", "b", "c"])], schema=schema)
    props1 = {KEY: "First commit", "custom_prop": "custom_value"}
    ds = mod.write_dataset(batch1, tmp_path, transaction_properties=props1)
    assert ds.read_transaction(1).transaction_properties == props1
    batch2 = pa.RecordBatch.from_arrays([pa.array([4, 5]), pa.array(["d", "e"])], schema=schema)
    props2 = {KEY: "Second commit", "another_prop": "another_value"}
    ds = mod.write_dataset(batch2, tmp_path, mode="append", transaction_properties=props2)
    for reader in (ds, lance.dataset(tmp_path), lancelot.dataset(tmp_path)):
        assert reader.read_transaction(2).transaction_properties == props2
        assert reader.read_transaction(1).transaction_properties == props1


@pytest.mark.parametrize("lib", LIBS)
def test_get_properties_with_no_properties(tmp_path, lib) -> None:
    mod, cls, ops, _, frag = API[lib]
    schema = pa.schema([pa.field("id", pa.int32())])
    ds = mod.write_dataset(pa.RecordBatch.from_arrays([pa.array([1, 2, 3])], schema=schema), tmp_path)
    assert ds.read_transaction(1).transaction_properties == {}
    assert lance.dataset(tmp_path).read_transaction(1).transaction_properties == {}


@pytest.mark.parametrize("lib", LIBS)
def test_commit_message_and_get_properties(tmp_path, lib) -> None:
    mod, cls, ops, _, frag = API[lib]
    table = pa.table({"a": [1]})
    ds = mod.write_dataset(table, tmp_path, commit_message="first commit")
    txns = ds.get_transactions()
    assert len(txns) == 1 and txns[0].transaction_properties.get(KEY) == "first commit"
    mod.write_dataset(table, tmp_path, mode="append")
    ds = mod.dataset(tmp_path)
    txns = ds.get_transactions()
    assert len(txns) == 2 and KEY not in txns[0].transaction_properties
    assert txns[1].transaction_properties.get(KEY) == "first commit"
    ds.delete("a > 100")  # a delete matching nothing: still a version, with no properties
    txns = ds.get_transactions()
    assert len(txns) == 3 and txns[0].transaction_properties == {}
    frags = (lance.fragment.write_fragments if lib == "pylance" else write_fragments)(pa.table({"a": [5]}), ds.uri)
    ds = cls.commit(ds.uri, ops.Append(frags), read_version=ds.version, commit_message="Use Dataset.commit")
    for reader in (ds, lance.dataset(tmp_path), lancelot.dataset(tmp_path)):
        txns = reader.get_transactions()
        assert len(txns) == 4 and txns[0].transaction_properties.get(KEY) == "Use Dataset.commit"


@pytest.mark.parametrize("lib", LIBS)
def test_shallow_clone(tmp_path, lib) -> None:
    """(The reference passes ``version=``: pylance 14.0.2 takes the version as ``reference``.)"""
    mod, cls, ops, _, frag = API[lib]
    src = tmp_path / "shallow_src"
    v1 = pa.table({"a": [1, 2, 3], "b": [10, 20, 30]})
    mod.write_dataset(v1, src, mode="create")
    v2 = pa.table({"a": [4, 5, 6], "b": [40, 50, 60]})
    ds = mod.write_dataset(v2, src, mode="overwrite")
    ds.tags.create("v1", 1)
    clone2 = ds.shallow_clone(tmp_path / "clone_v2", 2)
    assert clone2.to_table() == v2
    clone1 = ds.shallow_clone(tmp_path / "clone_v1_tag", "v1")
    assert clone1.to_table() == v1
    for reader in (lance, lancelot):
        assert reader.dataset(tmp_path / "clone_v2").to_table() == v2
        assert reader.dataset(tmp_path / "clone_v1_tag").to_table() == v1
