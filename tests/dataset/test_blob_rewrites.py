"""lancelot operations that rewrite rows of blob datasets (update, merge_insert) keep the blobs'
bytes, at 2.0, 2.1 and 2.2: the rewritten rows carry their values (not their scanned descriptions,
which written as values lost the bytes at 2.2), checked through pylance and lancelot."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset.blob_write import logical_values
from lancelot.errors import LanceError

VERSIONS = ["2.0", "2.1", "2.2"]
BLOB = {"lance-encoding:blob": "true"}
SCHEMA = pa.schema(
    [pa.field("id", pa.int64()), pa.field("b", pa.large_binary(), metadata=BLOB), pa.field("x", pa.int64())]
)


def _values(version: str) -> list[bytes | None]:
    """inline, null, packed (> 64 KiB), empty; at 2.2 a dedicated (> 4 MiB) one too."""
    return [b"abc", None, b"y" * 70_000, b"", b"z" * (4 * 1024 * 1024 + 1) if version == "2.2" else b"zz"]


def _make(tmp_path, version: str) -> str:
    path = str(tmp_path / "ds")
    vals = _values(version)
    t = pa.table({"id": range(len(vals)), "b": pa.array(vals, pa.large_binary()), "x": range(len(vals))}, schema=SCHEMA)
    lance.write_dataset(t, path, data_storage_version=version)
    return path


def _by_id(path: str) -> dict[int, bytes | None]:
    """id -> blob bytes as pylance reads them, checked equal to lancelot's."""
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    n = theirs.count_rows()
    ids = theirs.to_table(columns=["id"]).column("id").to_pylist()
    a = [None if f is None else f.readall() for f in theirs.take_blobs("b", indices=range(n))]
    b = [None if f is None else f.readall() for f in ours.take_blobs("b", indices=range(n))]
    assert a == b
    return dict(zip(ids, a))


@pytest.mark.parametrize("version", VERSIONS)
def test_update_other_column_keeps_blobs(tmp_path, version):
    path = _make(tmp_path, version)
    assert lancelot.dataset(path).update({"x": "x + 100"}, where="id >= 1")["num_rows_updated"] == 4
    assert _by_id(path) == dict(enumerate(_values(version)))
    assert lance.dataset(path).to_table(columns=["x"]).column("x").to_pylist() == [0, 101, 102, 103, 104]


@pytest.mark.parametrize("version", VERSIONS)
def test_update_blob_column(tmp_path, version):
    path = _make(tmp_path, version)
    lancelot.dataset(path).update({"b": "NULL"}, where="id = 2")
    want = dict(enumerate(_values(version)))
    want[2] = None
    assert _by_id(path) == want


@pytest.mark.parametrize("version", VERSIONS)
def test_merge_insert_keeps_and_replaces_blobs(tmp_path, version):
    """Full rows (new bytes for a matched row, an inserted row) and partial rows (the blob column
    left out: the matched rows keep theirs), as pylance does."""
    path = _make(tmp_path, version)
    src = pa.table({"id": [1, 9], "b": pa.array([b"new", b"nine"], pa.large_binary()), "x": [1, 9]}, schema=SCHEMA)
    lancelot.dataset(path).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    want = dict(enumerate(_values(version)))
    want[1], want[9] = b"new", b"nine"
    assert _by_id(path) == want
    partial = pa.table({"id": [2, 4], "x": [20, 40]})
    lancelot.dataset(path).merge_insert("id").when_matched_update_all().execute(partial)
    assert _by_id(path) == want
    x = dict(zip(*lance.dataset(path).to_table(columns=["id", "x"]).to_pydict().values()))
    assert (x[2], x[4]) == (20, 40)


def test_descriptions_are_never_written_as_values():
    """The safety net: scanned descriptions offered as a blob column's values are refused."""
    from lancelot.dataset.blob import DESCRIPTION_V2

    logical = pa.struct([("data", pa.large_binary()), ("uri", pa.string())])
    field = pa.field("b", logical, metadata={"ARROW:extension:name": "lance.blob.v2"})
    col = pa.array([{"kind": 0, "position": 0, "size": 3, "blob_id": 0, "blob_uri": ""}], DESCRIPTION_V2)
    with pytest.raises(LanceError, match="descriptions"):
        logical_values(col, field)
    as_struct = logical_values(pa.array([b"ab", None], pa.large_binary()), field)
    assert as_struct.to_pylist() == [{"data": b"ab", "uri": None}, None]
