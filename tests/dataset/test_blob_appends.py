"""Blob datasets written by both libraries in turn, with deletes by both (issue 32, "blob datasets
with deletes and appends", at 2.0, 2.1 and 2.2): after each step both readers scan the same
descriptions, ``take`` / filters agree, ``take_blobs`` by indices, addresses and row ids (stable
ones too) and ``read_blobs`` return the same bytes, deleted rows' blobs are never returned, and
``BlobFile`` reads of 1 byte, the middle and the tail match pylance's ``BlobFile``."""

from __future__ import annotations

import io

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot

VERSIONS = ["2.0", "2.1", "2.2"]
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


def _bytes(files) -> list[bytes | None]:
    return [None if f is None else f.readall() for f in files]


def _storage(col: pa.ChunkedArray) -> pa.Array:
    return pa.chunked_array([c.storage if isinstance(c, pa.ExtensionArray) else c for c in col.chunks]).combine_chunks()


def _agree(path: str, want: dict[int, bytes | None]) -> None:
    """Both readers over the dataset at ``path`` agree with each other and with ``want`` (id -> value)."""
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    a, b = theirs.to_table(with_row_address=True), ours.to_table(with_row_address=True)
    assert b.column("id").to_pylist() == a.column("id").to_pylist() == list(want)
    assert _storage(b.column("blob")).equals(_storage(a.column("blob")))
    assert b.column("_rowaddr").equals(a.column("_rowaddr"))
    n = len(want)
    idx = list(range(n))[::-1]
    values = list(want.values())
    got = _bytes(ours.take_blobs("blob", indices=idx))
    assert got == _bytes(theirs.take_blobs("blob", indices=idx)) == values[::-1]
    addresses = a.column("_rowaddr").to_pylist()
    assert _bytes(ours.take_blobs("blob", addresses=addresses[1::2])) == values[1::2]
    assert _bytes(theirs.take_blobs("blob", addresses=addresses[1::2])) == values[1::2]
    row_ids = theirs.to_table(with_row_id=True).column("_rowid").to_pylist()
    assert _bytes(ours.take_blobs("blob", ids=row_ids[::3])) == _bytes(theirs.take_blobs("blob", ids=row_ids[::3]))
    assert ours.read_blobs("blob", indices=idx[:5]) == theirs.read_blobs("blob", indices=idx[:5])
    expr = "id % 3 = 1"
    filtered = ours.to_table(filter=expr).column("blob")
    assert _storage(filtered).equals(_storage(theirs.to_table(filter=expr).column("blob")))
    take = [n - 1, 0, n // 2]
    assert _storage(ours.take(take, columns=["blob"]).column(0)).equals(
        _storage(theirs.take(take, columns=["blob"]).column(0))
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
    assert _bytes(ours.take_blobs("blob", ids=ids)) == _bytes(theirs.take_blobs("blob", ids=ids)) == want
    with pytest.raises(ValueError):
        ours.take_blobs("blob", ids=[0])  # the deleted row's id
