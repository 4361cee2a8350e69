"""Config and metadata: ``update_config``, ``delete_config_keys``, ``update_metadata``,
``update_schema_metadata``, ``update_field_metadata`` (each an UpdateConfig commit as pylance
writes it), overwrite and append metadata rules, non-UTF-8 metadata, ``stats``; ported from
the reference's test_dataset.py (test_schema_metadata, test_metadata, test_table_metadata_updates,
test_config_updates, test_schema_metadata_updates, test_field_metadata_updates,
test_field_metadata_multiple_fields, test_metadata_apis_return_post_image, test_stats,
test_count_fragments, test_count_deleted_rows, test_access_config) with pylance 14.0.2 as
the oracle: the same calls on a pylance copy give the same manifest maps and transactions."""

import base64
import pickle
import shutil

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset.commit import list_versions, load_manifest, load_transaction
from lancelot.dataset.store import ObjectStore
from tests.dataset.helpers import CommitReads


def _state(uri):
    """(config, table metadata, schema metadata, field metadata, transaction operation) of the latest version."""
    store = ObjectStore(uri, None)
    vs = list_versions(store, uri)
    mf = load_manifest(store, uri, vs, vs.latest)
    m = mf.manifest
    txn = load_transaction(store, mf)
    op = getattr(txn, txn.WhichOneof("operation"))
    op_text = str(op)
    return (
        dict(m.config),
        dict(m.table_metadata),
        dict(m.schema_metadata),
        {f.id: dict(f.metadata) for f in m.fields},
        m.reader_feature_flags,
        m.writer_feature_flags,
        txn.WhichOneof("operation"),
        op_text if "update_entries" not in op_text else sorted(op_text.splitlines()),
    )


CALLS = [
    ("update_config", ({"c1": "x", "c2": "y"},), {}),
    ("update_config", ({"c1": None, "c3": "z"},), {}),
    ("update_config", ({"only": "v"},), {"replace": True}),
    ("delete_config_keys", (["only"],), {}),
    ("update_metadata", ({"key1": "value1", "key2": "value2"},), {}),
    ("update_metadata", ({"key2": None, "key4": "value4"},), {}),
    ("update_metadata", ({"new_key": "new_value"},), {"replace": True}),
    ("update_schema_metadata", ({"s1": "1", "s2": "2"},), {}),
    ("update_schema_metadata", ({"s2": None},), {}),
    ("update_schema_metadata", ({"only_schema": "v"},), {"replace": True}),
    ("update_field_metadata", ({"a": {"k1": "1", "k2": "2"}, "s.x": {"g": "2"}},), {}),
    ("update_field_metadata", ({"a": {"k2": None, "k3": "3"}},), {}),
    ("update_field_metadata", ({"a": {"only_field": "v"}},), {"replace": True}),
]


@pytest.mark.parametrize("writer", ["lancelot", "lance"])
def test_updates_commit_what_pylance_commits(tmp_path, writer, monkeypatch):
    mod = lancelot if writer == "lancelot" else lance
    table = pa.table({"a": pa.array([1, 2, 3], pa.int64()), "s": pa.array([{"x": 1}] * 3)})
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    mod.write_dataset(table, ours)
    shutil.copytree(ours, theirs)
    me, pl = lancelot.dataset(ours), lance.dataset(theirs)
    for name, args, kwargs in CALLS:
        with CommitReads(ours, monkeypatch):
            got = getattr(me, name)(*args, **kwargs)
        want = getattr(pl, name)(*args, **kwargs)
        assert got == want, name  # the post-image (or None) as pylance returns it
        assert me.version == pl.version  # the object moved on to the new version
        assert _state(ours) == _state(theirs), name
        assert lance.dataset(ours).schema == pl.schema
        assert me.config() == pl.config() and me.metadata == pl.metadata
        assert me.schema_metadata == pl.schema_metadata
        assert me.schema == pl.schema
    # the other way: lancelot reads what pylance committed
    assert lancelot.dataset(theirs).schema == lance.dataset(theirs).schema
    assert lancelot.dataset(theirs).config() == lance.dataset(theirs).config()


def test_index_and_restore_commits_read_no_manifest_back(tmp_path, monkeypatch):
    """create_scalar_index, drop_index and restore move the dataset to the manifest they built; pylance reads each the
    same."""
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"a": pa.array(range(20), pa.int64())}), uri, max_rows_per_file=10)
    ds = lancelot.dataset(uri)
    for change in (
        lambda d: d.create_scalar_index("a", "BTREE"),
        lambda d: d.drop_index("a_idx"),
        lambda d: d.checkout_version(2).restore(),
    ):
        with CommitReads(uri, monkeypatch):
            change(ds)
        ours = lancelot.dataset(uri)
        theirs = lance.dataset(uri)
        assert theirs.version == ours.version and len(theirs.describe_indices()) == len(ours.describe_indices())
        assert theirs.to_table() == ours.to_table()


def test_deprecated_replace_calls(tmp_path):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"a": [1]}), uri)
    ds = lancelot.dataset(uri)
    with pytest.deprecated_call():
        ds.replace_schema_metadata({"r": "1"})
    with pytest.deprecated_call():
        ds.replace_field_metadata("a", {"f": "2"})
    theirs = lance.dataset(uri)
    assert theirs.schema.metadata == {b"r": b"1"} and theirs.schema.field("a").metadata == {b"f": b"2"}


def test_unknown_field_refused(tmp_path):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"a": [1]}), uri)
    with pytest.raises(ValueError, match="zz"):
        lancelot.dataset(uri).update_field_metadata({"zz": {"k": "v"}})
    assert lancelot.dataset(uri).version == 1


@pytest.mark.parametrize("writer", ["lancelot", "lance"])
def test_schema_metadata_and_overwrite(tmp_path, writer):
    """Reference test_schema_metadata: overwrite takes the new data's schema and field metadata;
    (pylance keeps the table metadata and config across an overwrite, so does lancelot)."""
    mod = lancelot if writer == "lancelot" else lance
    schema = pa.schema(
        [
            pa.field("a", pa.int64(), metadata={b"thisis": "a"}),
            pa.field("b", pa.int64(), metadata={b"thisis": "b"}),
        ],
        metadata={b"foo": b"bar", b"baz": b"qux"},
    )
    table = pa.Table.from_pydict({"a": range(10), "b": range(10)}, schema=schema)
    uri = str(tmp_path / "ds")
    mod.write_dataset(table, uri)
    ds = lancelot.dataset(uri)
    assert ds.schema.metadata == {b"foo": b"bar", b"baz": b"qux"}
    assert ds.schema.field("a").metadata == {b"thisis": b"a"}
    ds.update_schema_metadata({"foo": "baz"}, replace=True)
    assert ds.schema.metadata == {b"foo": b"baz"} and ds.schema.field("b").metadata == {b"thisis": b"b"}
    ds.update_field_metadata({"a": {"thisis": "c"}}, replace=True)
    assert ds.schema.field("a").metadata == {b"thisis": b"c"}
    ds.update_metadata({"tm": "1"})
    ds.update_config({"c": "1"})
    ds = lancelot.write_dataset(table, uri, mode="overwrite")
    assert ds.schema.metadata == {b"foo": b"bar", b"baz": b"qux"}
    assert ds.schema.field("a").metadata == {b"thisis": b"a"}
    plain = pa.table({"a": pa.array([1], pa.int64()), "b": pa.array([2], pa.int64())})
    ds = lancelot.write_dataset(plain, uri, mode="overwrite")
    theirs = lance.dataset(uri)
    assert ds.schema == theirs.schema and not ds.schema.metadata and not ds.schema.field("a").metadata
    assert ds.metadata == theirs.metadata == {"tm": "1"} and ds.config() == theirs.config() == {"c": "1"}


def test_overwrite_metadata_as_pylance(tmp_path):
    """The same overwrite by each library leaves the same manifest maps."""
    meta = pa.schema([pa.field("a", pa.int64(), metadata={"f": "1"})], metadata={"s": "1"})
    plain = pa.table({"a": pa.array([2], pa.int64())})
    states = []
    for mod in (lancelot, lance):
        uri = str(tmp_path / mod.__name__)
        lancelot.write_dataset(pa.table({"a": pa.array([1], pa.int64())}, schema=meta), uri)
        lancelot.dataset(uri).update_metadata({"t": "1"})
        mod.write_dataset(plain, uri, mode="overwrite")
        states.append(_state(uri)[:4])
    assert states[0] == states[1]


def test_non_utf8_metadata_refused(tmp_path):
    """Reference test_metadata: pickled bytes are not UTF-8, a ValueError; base64 is fine."""
    data = pa.table({"a": range(10)}).replace_schema_metadata({"foo": pickle.dumps("foo")})
    with pytest.raises(ValueError):
        lance.write_dataset(data, str(tmp_path / "p"))
    with pytest.raises(ValueError, match="UTF-8"):
        lancelot.write_dataset(data, str(tmp_path / "l"))
    assert not (tmp_path / "l" / "_versions").exists()
    field_meta = pa.table({"a": pa.array([1])}).cast(pa.schema([pa.field("a", pa.int64(), metadata={"k": b"\xff"})]))
    with pytest.raises(ValueError):
        lancelot.write_dataset(field_meta, str(tmp_path / "f"))
    ok = data.replace_schema_metadata({"foo": base64.b64encode(pickle.dumps("foo"))})
    lancelot.write_dataset(ok, str(tmp_path / "ok"))
    assert lance.dataset(str(tmp_path / "ok")).schema.metadata == ok.schema.metadata


@pytest.mark.parametrize("writer", ["lancelot", "lance"])
def test_stats(tmp_path, writer):
    """Reference test_stats, test_count_fragments, test_count_deleted_rows."""
    mod = lancelot if writer == "lancelot" else lance
    uri = str(tmp_path / "ds")
    table = pa.table({"a": range(3000), "b": [str(i) for i in range(3000)], "s": [{"x": i} for i in range(3000)]})
    mod.write_dataset(table, uri, max_rows_per_file=1000)
    mod.write_dataset(table.slice(0, 10), uri, mode="append")
    lance.dataset(uri).delete("a < 15")
    ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
    assert ours.stats.dataset_stats() == theirs.stats.dataset_stats()
    assert ours.stats.dataset_stats(max_rows_per_group=2000) == theirs.stats.dataset_stats(max_rows_per_group=2000)
    assert ours.stats.dataset_stats()["num_deleted_rows"] == 15  # the appended fragment went whole
    mine, want = ours.stats.data_stats(), theirs.stats.data_stats()
    assert [(f.id, f.bytes_on_disk) for f in mine.fields] == [(f.id, f.bytes_on_disk) for f in want.fields]
