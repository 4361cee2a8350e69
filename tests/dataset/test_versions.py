"""Versions: ``versions()``, ``version``/``latest_version``, ``checkout_version``, ``asof``,
``restore``, ``data_storage_version`` aliases; ported from the reference's test_dataset.py
(test_versions, test_version_id, test_checkout, test_asof_checkout, test_dataset_restore,
test_restore_with_commit, test_default_storage_version) with pylance 14.0.2 as the oracle."""

import datetime
import time

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset import commit as lancelot_commit
from lancelot.dataset.commit import list_versions, load_manifest, load_transaction
from lancelot.dataset.store import ObjectStore
from tests.dataset.helpers import LIBS


def _txn(uri):
    store = ObjectStore(uri, None)
    vs = list_versions(store, uri)
    return load_transaction(store, load_manifest(store, uri, vs, vs.latest))


@pytest.mark.parametrize("writer", ["lancelot", "pylance"])
def test_versions_keys_and_types_match_pylance(tmp_path, writer):
    """Reference test_versions; pylance 14's version metadata is the manifest summary."""
    w = LIBS[writer]
    base = str(tmp_path / "test")
    w.write_dataset(pa.Table.from_pylist([{"a": 1, "b": 2}, {"a": 10, "b": 20}]), base)
    assert len(lancelot.dataset(base).versions()) == 1
    time.sleep(0.01)
    w.write_dataset(pa.Table.from_pylist([{"s": "one"}, {"s": "two"}]), base, mode="overwrite")
    lance.dataset(base).delete("s = 'one'")
    ours, theirs = lancelot.dataset(base).versions(), lance.dataset(base).versions()
    assert ours == theirs
    v1, v2, v3 = ours
    assert [v["version"] for v in ours] == [1, 2, 3]
    assert isinstance(v1["timestamp"], datetime.datetime) and v1["timestamp"] < v2["timestamp"]
    assert v3["metadata"]["total_deletion_file_rows"] == "1" and v3["metadata"]["total_rows"] == "1"


def test_version_id(tmp_path):
    """Reference test_version_id: an open dataset keeps its version, latest_version moves on."""
    base = str(tmp_path / "test")
    original = lancelot.write_dataset(pa.Table.from_pylist([{"a": 1, "b": 2}]), base)
    assert original.version == 1 and original.latest_version == 1
    updated = lancelot.write_dataset(pa.Table.from_pylist([{"s": "one"}]), base, mode="overwrite")
    assert original.version == 1 and original.latest_version == 2
    assert updated.version == 2 and updated.latest_version == 2


def test_checkout(tmp_path):
    """Reference test_checkout (the delete by pylance: lancelot's delete belongs to another module)."""
    tab = pa.table({"a": range(3)})
    lancelot.write_dataset(tab, tmp_path)
    lance.dataset(tmp_path).delete("a = 1")
    ds1 = lancelot.dataset(tmp_path)
    ds2 = ds1.checkout_version(1)
    assert ds2.version == 1 and ds2.to_table() == tab
    assert ds1.version == 2 and ds1.to_table() == pa.table({"a": [0, 2]})
    assert ds2.checkout_version(ds2.latest_version).version == ds1.version
    with pytest.raises(OSError):  # pylance: OSError from checkout_version
        ds1.checkout_version(9)
    with pytest.raises(OSError):
        lance.dataset(tmp_path).checkout_version(9)


@pytest.mark.parametrize("writer", ["lancelot", "pylance"])
def test_asof_checkout(tmp_path, writer):
    """Reference test_asof_checkout, also through ``lancelot.dataset`` (the function)."""
    w = LIBS[writer]
    table = pa.table({"colA": [1, 2, 3], "colB": [4, 5, 6]})
    base = str(tmp_path / "test")
    stamps = []
    for i in range(3):
        w.write_dataset(table, base, mode="append" if i else "create")
        time.sleep(0.02)
        stamps.append(datetime.datetime.now())
        time.sleep(0.02)
    for i, ts in enumerate(stamps):
        ds = lancelot.dataset(base, asof=ts)
        assert ds.version == i + 1 == lance.dataset(base, asof=ts).version
        assert ds.count_rows() == 3 * (i + 1)
    from lancelot.dataset import dataset

    assert dataset(base, asof=stamps[0]).version == 1
    # a timezone-aware time means the same instant
    assert lancelot.dataset(base, asof=stamps[1].astimezone(datetime.timezone.utc)).version == 2
    # an asof before the first version: pylance's ValueError
    with pytest.raises(ValueError, match="earlier than the first version"):
        lance.dataset(base, asof=datetime.datetime(2000, 1, 1))
    with pytest.raises(ValueError, match="earlier than the first version"):
        lancelot.dataset(base, asof=datetime.datetime(2000, 1, 1))


def test_asof_string(tmp_path):
    base = str(tmp_path / "test")
    lancelot.write_dataset(pa.table({"a": [1]}), base)
    later = (datetime.datetime.now() + datetime.timedelta(seconds=2)).strftime("%Y-%m-%d %H:%M:%S")
    assert lancelot.dataset(base, asof=later).version == lance.dataset(base, asof=later).version == 1


@pytest.mark.parametrize("writer", ["lancelot", "pylance"])
def test_dataset_restore(tmp_path, writer):
    """Reference test_dataset_restore: restore commits the old content as a new version."""
    data = pa.table({"a": range(100)})
    LIBS[writer].write_dataset(data, tmp_path)
    lance.dataset(tmp_path).delete("a >= 50")
    assert lancelot.dataset(tmp_path).count_rows() == 50
    ds = lancelot.dataset(tmp_path, version=1)
    ds.restore()
    assert ds.version == 3 and ds.count_rows() == 100
    theirs = lance.dataset(tmp_path)
    assert theirs.version == 3 and theirs.to_table() == data
    txn = _txn(str(tmp_path))
    assert txn.WhichOneof("operation") == "restore" and txn.restore.version == 1 and txn.read_version == 2
    # pylance appends on top of the restored version, with fresh fragment ids
    lance.write_dataset(data, tmp_path, mode="append")
    ids = [f.fragment_id for f in lancelot.dataset(tmp_path).get_fragments()]
    assert len(set(ids)) == len(ids) and lancelot.dataset(tmp_path).count_rows() == 200


def test_restore_of_pylance_restore(tmp_path):
    """Reference test_restore_with_commit, the restore by pylance, read by lancelot."""
    table = pa.table({"a": range(100), "b": range(100)})
    lancelot.write_dataset(table, tmp_path)
    lancelot.write_dataset(table, tmp_path, mode="append")
    lance.LanceDataset.commit(str(tmp_path), lance.LanceOperation.Restore(1))
    assert lancelot.dataset(tmp_path).to_table() == table


@pytest.mark.parametrize("alias", ["stable", "STABLE", "2.1", "2.0"])
def test_data_storage_version_aliases(tmp_path, alias):
    """Reference test_default_storage_version: an alias is resolved before it reaches the manifest."""
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"a": [1, 2]}), uri, data_storage_version=alias)
    want = {"stable": "2.2", "STABLE": "2.2"}.get(alias, alias)
    assert lancelot.dataset(uri).data_storage_version == want
    assert lance.dataset(uri).data_storage_version == want  # pylance opens it (it could not with "stable")
    assert lance.dataset(uri).to_table().column("a").to_pylist() == [1, 2]
    lancelot.write_dataset(pa.table({"a": [3]}), uri, mode="append", data_storage_version=alias)
    assert lance.dataset(uri).count_rows() == 3


def test_data_storage_version_next_is_2_3(tmp_path):
    """pylance 14.0.2 resolves "next" to its unstable 2.3; lancelot writes 2.3 for it too (with the
    warning), recorded as "2.3" in the manifest (tests/file/test_format_v2_3_write.py reads it both ways)."""
    assert lance.write_dataset(pa.table({"a": [1]}), str(tmp_path / "p"), data_storage_version="next")
    assert lance.dataset(str(tmp_path / "p")).data_storage_version == "2.3"
    with pytest.warns(UserWarning, match="unstable"):
        lancelot.write_dataset(pa.table({"a": [1]}), str(tmp_path / "n"), data_storage_version="next")
    assert lance.dataset(str(tmp_path / "n")).data_storage_version == "2.3"


def test_data_storage_version_legacy_and_unknown(tmp_path):
    with pytest.raises(ValueError):
        lance.write_dataset(pa.table({"a": [1]}), str(tmp_path / "p"), data_storage_version="bogus")
    with pytest.raises(lancelot.UnsupportedVersionError):
        lancelot.write_dataset(pa.table({"a": [1]}), str(tmp_path / "l"), data_storage_version="legacy")
    with pytest.raises(lancelot.UnsupportedVersionError):
        lancelot.write_dataset(pa.table({"a": [1]}), str(tmp_path / "b"), data_storage_version="bogus")
    assert not (tmp_path / "l" / "_versions").exists() and not (tmp_path / "b" / "_versions").exists()


def test_version_by_number_string_and_missing(tmp_path):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"a": [1]}), uri)
    lancelot.write_dataset(pa.table({"a": [2]}), uri, mode="append")
    assert lancelot.dataset(uri, 1).count_rows() == 1
    assert lancelot.dataset(uri, version=2).count_rows() == 2
    with pytest.raises(ValueError):  # pylance: ValueError "not found"
        lance.dataset(uri, version=5)
    with pytest.raises(ValueError, match="version 5 does not exist"):
        lancelot.dataset(uri, version=5)


def test_dataset_append_and_stable_row_ids(tmp_path):
    """Reference test_dataset_append (append creates; a dataset object names where to write; a
    different schema is an OSError) and test_enable_stable_row_ids (ids 0..3 survive compaction,
    addresses move to the new fragment), written by lancelot, compacted by lancelot and read by both."""
    table = pa.table({"colA": [1, 2, 3], "colB": [4, 5, 6]})
    base = str(tmp_path / "test")
    lancelot.write_dataset(table, base, mode="append")
    ds = lancelot.dataset(base)
    assert ds.to_table() == table == lance.dataset(base).to_table()
    with pytest.raises(OSError):
        lancelot.write_dataset(pa.table({"COLUMN-C": [1, 2, 3], "colB": [4, 5, 6]}), ds, mode="append")
    lancelot.write_dataset(table, ds, mode="append")
    assert lance.dataset(base).count_rows() == 6

    people = pa.Table.from_pylist([{"name": "Alice", "age": 20}, {"name": "Bob", "age": 30}])
    uri = str(tmp_path / "ids")
    lancelot.write_dataset(people, uri, enable_stable_row_ids=True)
    ds = lancelot.write_dataset(people, uri, enable_stable_row_ids=True, mode="append")
    before = ds.scanner(with_row_id=True, with_row_address=True).to_table()
    assert before["_rowid"].to_pylist() == [0, 1, 2, 3]
    assert before["_rowaddr"].to_pylist() == [0, 1, 1 << 32, (1 << 32) + 1]
    assert before.equals(lance.dataset(uri).scanner(with_row_id=True, with_row_address=True).to_table())
    ds.optimize.compact_files()
    after = ds.scanner(with_row_id=True, with_row_address=True).to_table()
    assert after["_rowid"].to_pylist() == [0, 1, 2, 3]
    assert after["_rowaddr"].to_pylist() == [(2 << 32) + i for i in range(4)]
    assert after.equals(lance.dataset(uri).scanner(with_row_id=True, with_row_address=True).to_table())


def test_storage_version_alias_through_write_fragments_and_commit(tmp_path):
    uri = str(tmp_path / "ds")
    frags = lancelot.write_fragments(pa.table({"a": [1, 2]}), uri, data_storage_version="stable")
    schema = pa.schema([("a", pa.int64())])
    lancelot_commit(uri, "create", fragments=frags, schema=schema, data_storage_version="stable")
    assert lance.dataset(uri).data_storage_version == "2.2" and lance.dataset(uri).count_rows() == 2
