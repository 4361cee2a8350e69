"""Blobs inside lists against pylance 14.0.2: pylance writes ``list<blob>`` at 2.0 (2.0 blob
descriptions per item), 2.2 and 2.3 (blob v2 items: one description per item, the list named
"list" by the bytes it was given); lancelot scans them as pylance does (descriptions), reads their
bytes with ``blob_handling="all_binary"``, writes them as pylance does (same descriptions, same
manifest fields, appends both ways) and compacts them keeping the values.  ``take_blobs`` refuses
a list column (ValueError, "not a blob column") as pylance does.  At 2.1 pylance writes blob lists
it cannot read back (a panic): lancelot refuses them; fixed-size lists of blobs crash pylance's
writer: lancelot refuses them too."""

from __future__ import annotations

import warnings

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.errors import UnsupportedTypeError

BLOB = {"lance-encoding:blob": "true"}
LIST = pa.list_(pa.field("item", pa.large_binary(), metadata=BLOB))
VALUES = [[b"a", b"bb"], [], None, [b"c" * 70_000, b""]]


def _table() -> pa.Table:
    return pa.table({"id": [1, 2, 3, 4], "l": pa.array(VALUES, LIST)})


@pytest.mark.parametrize("version", ["2.0", "2.2", "2.3"])
def test_pylance_list_of_blobs(tmp_path, version):
    path = str(tmp_path / "ds")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lance.write_dataset(_table(), path, data_storage_version=version)
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    assert ours.to_table().to_pylist() == theirs.to_table().to_pylist()
    assert ours.take([3, 0], columns=["l"]).to_pylist() == theirs.take([3, 0], columns=["l"]).to_pylist()
    got = ours.to_table(blob_handling="all_binary")
    assert got.equals(theirs.to_table(blob_handling="all_binary"))
    assert got.column("l").to_pylist() == VALUES


def test_compaction_of_2_0_list_of_blobs(tmp_path):
    path = str(tmp_path / "ds")
    lance.write_dataset(_table(), path, data_storage_version="2.0")
    lance.write_dataset(_table(), path, mode="append")
    lancelot.dataset(path).compact_files()
    assert len(lance.dataset(path).get_fragments()) == 1
    want = VALUES * 2
    assert lance.dataset(path).to_table(blob_handling="all_binary").column("l").to_pylist() == want
    assert lancelot.dataset(path).to_table(blob_handling="all_binary").column("l").to_pylist() == want


@pytest.mark.parametrize("version", ["2.2", "2.3"])
def test_lancelot_writes_list_of_blobs_as_pylance(tmp_path, version):
    """Same descriptions (inline, packed and dedicated items, null items and lists) and manifest fields
    as pylance's; pylance reads the bytes; each appends to the other's dataset; take_blobs refuses the
    list column as pylance does."""
    values = [*VALUES, [None, b"d" * 5_000_000]]
    t = pa.table({"id": [1, 2, 3, 4, 5], "l": pa.array(values, LIST)})
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lancelot.write_dataset(t, ours, data_storage_version=version)
        lance.write_dataset(t, theirs, data_storage_version=version)
    a, b = lance.dataset(ours), lance.dataset(theirs)
    assert a.data_storage_version == version
    assert a.to_table().equals(b.to_table())
    assert str(a.lance_schema) == str(b.lance_schema)
    assert a.to_table(blob_handling="all_binary").column("l").to_pylist() == values
    assert lancelot.dataset(ours).take([4], columns=["l"]).to_pylist() == b.take([4], columns=["l"]).to_pylist()
    with pytest.raises(ValueError, match="not a blob column"):
        b.take_blobs("l", indices=[0])
    with pytest.raises(ValueError, match="not a blob column"):
        lancelot.dataset(ours).take_blobs("l", indices=[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lance.write_dataset(_table(), ours, mode="append")
        lancelot.write_dataset(_table(), theirs, mode="append")
    for path in (ours, theirs):
        want = values + VALUES
        assert lance.dataset(path).to_table(blob_handling="all_binary").column("l").to_pylist() == want
        assert lancelot.dataset(path).to_table(blob_handling="all_binary").column("l").to_pylist() == want


def test_compaction_of_2_2_list_of_blobs(tmp_path):
    """A pylance dataset of two fragments compacted by lancelot: one fragment, pylance reads the values."""
    path = str(tmp_path / "theirs")
    lance.write_dataset(_table(), path, data_storage_version="2.2")
    lance.write_dataset(_table(), path, mode="append")
    lancelot.dataset(path).compact_files()
    assert len(lance.dataset(path).get_fragments()) == 1
    assert lance.dataset(path).to_table(blob_handling="all_binary").column("l").to_pylist() == VALUES * 2


def test_blob_lists_refused_where_pylance_fails(tmp_path):
    """2.1 (pylance writes, then cannot read) and fixed-size lists (pylance's writer panics): refused
    naming the field, nothing written."""
    with pytest.raises(UnsupportedTypeError, match=r"'item' inside a list is not writable at 2.1"):
        lancelot.write_dataset(_table(), str(tmp_path / "a"), data_storage_version="2.1")
    fsl = pa.list_(pa.field("item", pa.large_binary(), metadata=BLOB), 2)
    t = pa.table({"l": pa.array([[b"a", b"b"], None], fsl)})
    with pytest.raises(UnsupportedTypeError, match=r"'item' inside a fixed-size list \(column 'l'\)"):
        lancelot.write_dataset(t, str(tmp_path / "b"), data_storage_version="2.2")
    assert not (tmp_path / "b" / "_versions").exists()


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_list_of_structs_with_blobs(tmp_path, version):
    st = pa.struct([pa.field("b", pa.large_binary(), metadata=BLOB), pa.field("i", pa.int32())])
    rows = [[{"b": b"a", "i": 1}], [], None, [{"b": b"c" * 70_000, "i": 2}, {"b": None, "i": 3}]]
    path = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"l": pa.array(rows, pa.list_(st))}), path, data_storage_version=version)
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    assert ours.to_table().to_pylist() == theirs.to_table().to_pylist()
    got = ours.to_table(blob_handling="all_binary")
    assert got.equals(theirs.to_table(blob_handling="all_binary"))
    assert got.column("l").to_pylist() == rows
