"""Blobs inside lists against pylance 14.0.2: pylance writes ``list<blob>`` at 2.0 (2.0 blob
descriptions per item) and 2.2 (blob v2 items); lancelot scans them as pylance does (descriptions),
reads their bytes with ``blob_handling="all_binary"``, and compacts the 2.0 layout keeping the
values; at 2.2 lancelot refuses to write blobs inside lists (naming the field) rather than write
what pylance cannot read."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.errors import LanceError

BLOB = {"lance-encoding:blob": "true"}
LIST = pa.list_(pa.field("item", pa.large_binary(), metadata=BLOB))
VALUES = [[b"a", b"bb"], [], None, [b"c" * 70_000, b""]]


def _table() -> pa.Table:
    return pa.table({"id": [1, 2, 3, 4], "l": pa.array(VALUES, LIST)})


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_pylance_list_of_blobs(tmp_path, version):
    path = str(tmp_path / "ds")
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


def test_2_2_list_of_blobs_refused(tmp_path):
    """Writing, and compacting a pylance dataset: refused naming the field, nothing committed."""
    with pytest.raises(LanceError, match=r"'item' inside a list \(column 'l'\)"):
        lancelot.write_dataset(_table(), str(tmp_path / "ours"))
    path = str(tmp_path / "theirs")
    lance.write_dataset(_table(), path)
    lance.write_dataset(_table(), path, mode="append")
    with pytest.raises(LanceError, match="inside a list"):
        lancelot.dataset(path).compact_files()
    assert lance.dataset(path).version == 2
    assert lance.dataset(path).to_table(blob_handling="all_binary").column("l").to_pylist() == VALUES * 2


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
