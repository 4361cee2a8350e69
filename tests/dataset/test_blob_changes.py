"""Changes to blob datasets, at 2.0, 2.1 and 2.2, against pylance 14.0.2.

Appends and deletes by both libraries in turn: after each step both readers scan the same
descriptions, ``take`` / filters agree, ``take_blobs`` by indices, addresses and row ids (stable
ones too) and ``read_blobs`` return the same bytes, deleted rows' blobs are never returned, and
``BlobFile`` reads of 1 byte, the middle and the tail match pylance's ``BlobFile``.

lancelot operations that rewrite rows (update, merge_insert) keep the blobs' bytes: the rewritten
rows carry their values (not their scanned descriptions, which written as values lost the bytes at
2.2), checked through pylance and lancelot.
"""

from __future__ import annotations

import io

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset.blob_write import logical_values
from lancelot.errors import LanceError
from tests.dataset.helpers import blob_bytes, blob_storage

VERSIONS = ["2.0", "2.1", "2.2", "2.3"]
BLOB = {"lance-encoding:blob": "true"}
#: sizes of each batch: inline, packed (> 64 KiB at 2.2), null, empty, small
SIZES = [[10, 70_000, None, 0, 3, 1000], [5, None, 90_000, 64, 0, 2]]


def _batch(k: int) -> pa.Table:
    rng = np.random.default_rng(k)
    vals = [None if s is None else rng.integers(0, 256, s, dtype=np.uint8).tobytes() for s in SIZES[k % 2]]
    ids = pa.array(range(10 * k, 10 * k + len(vals)), pa.int64())
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("blob", pa.large_binary(), metadata=BLOB)])
    return pa.Table.from_arrays([ids, pa.array(vals, pa.large_binary())], schema=schema)


def _expected(batches: list[int], deleted: set[int]) -> dict[int, bytes | None]:
    out = {}
    for k in batches:
        t = _batch(k)
        for i, v in zip(t.column("id").to_pylist(), t.column("blob").to_pylist()):
            if i not in deleted:
                out[i] = v
    return out


def _agree(path: str, want: dict[int, bytes | None]) -> None:
    """Both readers over the dataset at ``path`` agree with each other and with ``want`` (id -> value)."""
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    a, b = theirs.to_table(with_row_address=True), ours.to_table(with_row_address=True)
    assert b.column("id").to_pylist() == a.column("id").to_pylist() == list(want)
    assert blob_storage(b.column("blob")).equals(blob_storage(a.column("blob")))
    assert b.column("_rowaddr").equals(a.column("_rowaddr"))
    n = len(want)
    idx = list(range(n))[::-1]
    values = list(want.values())
    got = blob_bytes(ours.take_blobs("blob", indices=idx))
    assert got == blob_bytes(theirs.take_blobs("blob", indices=idx)) == values[::-1]
    addresses = a.column("_rowaddr").to_pylist()
    assert blob_bytes(ours.take_blobs("blob", addresses=addresses[1::2])) == values[1::2]
    assert blob_bytes(theirs.take_blobs("blob", addresses=addresses[1::2])) == values[1::2]
    row_ids = theirs.to_table(with_row_id=True).column("_rowid").to_pylist()
    assert blob_bytes(ours.take_blobs("blob", ids=row_ids[::3])) == blob_bytes(
        theirs.take_blobs("blob", ids=row_ids[::3])
    )
    assert ours.read_blobs("blob", indices=idx[:5]) == theirs.read_blobs("blob", indices=idx[:5])
    expr = "id % 3 = 1"
    filtered = ours.to_table(filter=expr).column("blob")
    assert blob_storage(filtered).equals(blob_storage(theirs.to_table(filter=expr).column("blob")))
    take = [n - 1, 0, n // 2]
    assert blob_storage(ours.take(take, columns=["blob"]).column(0)).equals(
        blob_storage(theirs.take(take, columns=["blob"]).column(0))
    )
    for x, y in zip(ours.take_blobs("blob", indices=range(n)), theirs.take_blobs("blob", indices=range(n))):
        assert (x is None) == (y is None)
        if x is None:
            continue
        size = y.size()
        assert x.size() == size
        for op, *args in [
            ("read", 1),
            ("seek", size // 2, io.SEEK_SET),
            ("read", 17),
            ("seek", -1, io.SEEK_END),
            ("read", 5),
            ("read", 1),
        ]:
            if op == "seek" and size == 0 and args[1] == io.SEEK_END:
                args = [0, io.SEEK_END]
            assert getattr(x, op)(*args) == getattr(y, op)(*args), (op, args, size)
            assert x.tell() == y.tell()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("first", ["lancelot", "pylance"])
def test_appends_and_deletes_both_ways(tmp_path, version, first):
    """Create by one library, append by the other, delete by the first, append by the first,
    delete by the other: both readers agree at every step."""
    libs = {"lancelot": lancelot, "pylance": lance}
    one, two = libs[first], libs["pylance" if first == "lancelot" else "lancelot"]
    path = str(tmp_path / "ds")
    one.write_dataset(_batch(0), path, data_storage_version=version)
    two.write_dataset(_batch(1), path, mode="append")
    assert lance.dataset(path).data_storage_version == version
    _agree(path, _expected([0, 1], set()))
    one.dataset(path).delete("id = 1 or id = 12")
    _agree(path, _expected([0, 1], {1, 12}))
    one.write_dataset(_batch(2), path, mode="append")
    two.dataset(path).delete("id = 20 or id = 4")
    _agree(path, _expected([0, 1, 2], {1, 12, 20, 4}))


def test_stable_row_ids_both_ways(tmp_path):
    """A 2.2 dataset with stable row ids: take_blobs by row id after appends and deletes by both."""
    path = str(tmp_path / "ds")
    lancelot.write_dataset(_batch(0), path, enable_stable_row_ids=True)
    lance.write_dataset(_batch(1), path, mode="append")
    lance.dataset(path).delete("id = 0")
    lancelot.write_dataset(_batch(2), path, mode="append")
    lancelot.dataset(path).delete("id = 11 or id = 22")
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    ids = theirs.to_table(with_row_id=True).column("_rowid").to_pylist()
    assert ids == ours.to_table(with_row_id=True).column("_rowid").to_pylist()
    want = list(_expected([0, 1, 2], {0, 11, 22}).values())
    assert blob_bytes(ours.take_blobs("blob", ids=ids)) == blob_bytes(theirs.take_blobs("blob", ids=ids)) == want
    with pytest.raises(ValueError):
        ours.take_blobs("blob", ids=[0])  # the deleted row's id


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
