"""Blob fields inside structs against pylance 14.0.2: pylance's nested blob
datasets read by lancelot (``take_blobs`` / ``read_blobs`` / ``read_blob_ranges`` by the path
``"s.b"``, by indices, addresses and ids, deletes in place), lancelot's written the way pylance
writes them (2.2: a ``lance.blob.v2`` field under the struct), compaction of both; and the blob
field types each version takes (``binary`` at 2.2, ``lance.blob.v2`` only from 2.2)."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset.blob import NoSuchColumnError
from lancelot.errors import LanceError
from tests.dataset.helpers import blob_bytes

VERSIONS = ["2.0", "2.1", "2.2", "2.3"]
BLOB = {"lance-encoding:blob": "true"}
STRUCT = pa.struct([pa.field("b", pa.large_binary(), metadata=BLOB), pa.field("i", pa.int32())])
#: the values of ``s.b`` of each row: inline, null, packed (> 64 KiB at 2.2), empty, dedicated (> 4 MiB)
VALUES = [b"abc", None, b"x" * 70_000, b"", b"y" * (4 * 1024 * 1024 + 3), b"q"]


def _table(version: str, first: int = 0) -> pa.Table:
    """``s`` (a struct holding the blob ``b``; a null struct row but at 2.0, which holds none) and ``n``."""
    rows = [{"b": v, "i": first + k} for k, v in enumerate(VALUES)]
    if version != "2.0":
        rows[5] = None
    return pa.table({"s": pa.array(rows, STRUCT), "n": pa.array(range(first, first + len(rows)), pa.int64())})


@pytest.fixture(scope="module", params=VERSIONS)
def nested(request, tmp_path_factory):
    """A pylance dataset with a blob inside a struct: two fragments, a deletion in each."""
    v = request.param
    path = str(tmp_path_factory.mktemp(f"nested_{v}") / "ds")
    lance.write_dataset(_table(v), path, data_storage_version=v)
    lance.write_dataset(_table(v, first=10), path, mode="append")
    lance.dataset(path).delete("n = 0 or n = 13")
    return path, v


def test_scan_and_take_blobs_by_path(nested):
    path, _ = nested
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    assert ours.to_table().to_pylist() == theirs.to_table().to_pylist()
    assert ours.take([7, 0, 3], columns=["s"]).to_pylist() == theirs.take([7, 0, 3], columns=["s"]).to_pylist()
    n = theirs.count_rows()
    idx = list(range(n))[::-1]
    want = blob_bytes(theirs.take_blobs("s.b", indices=idx))
    assert blob_bytes(ours.take_blobs("s.b", indices=idx)) == want
    assert None in want and b"" in want and len(max((w or b"" for w in want), key=len)) > 4 * 1024 * 1024
    addresses = theirs.to_table(with_row_address=True).column("_rowaddr").to_pylist()[1::2]
    assert blob_bytes(ours.take_blobs("s.b", addresses=addresses)) == blob_bytes(
        theirs.take_blobs("s.b", addresses=addresses)
    )
    assert blob_bytes(ours.take_blobs("s.b", ids=addresses)) == blob_bytes(theirs.take_blobs("s.b", ids=addresses))


def test_read_blobs_and_ranges_by_path(nested):
    path, _ = nested
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    idx = [0, 1, 2, 5, 8]
    assert ours.read_blobs("s.b", indices=idx) == theirs.read_blobs("s.b", indices=idx)
    reqs = [(1, 0, 1), (1, 69_999, 1), (0, 1, 2), (3, 4 * 1024 * 1024, 3), (2, 0, 0)]
    assert ours.read_blob_ranges("s.b", reqs, selector="indices") == theirs.read_blob_ranges(
        "s.b", reqs, selector="indices"
    )


def test_nested_path_errors(nested):
    """pylance's errors: an unknown path is a RuntimeError, a field that is no blob a ValueError."""
    path, _ = nested
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    for bad in ("s.nope", "nope.b"):
        with pytest.raises(RuntimeError):
            theirs.take_blobs(bad, indices=[0])
        with pytest.raises(NoSuchColumnError, match="not found"):
            ours.take_blobs(bad, indices=[0])
    for bad in ("s", "s.i"):
        with pytest.raises(ValueError):
            theirs.take_blobs(bad, indices=[0])
        with pytest.raises(ValueError, match="not a blob column") as e:
            ours.take_blobs(bad, indices=[0])
        assert isinstance(e.value, LanceError)


def _fields(path: str) -> list[tuple]:
    m = lancelot.dataset(path).manifest
    return [(f.name, f.id, f.parent_id, f.logical_type, f.extension_name) for f in m.fields]


@pytest.mark.parametrize("version", VERSIONS)
def test_lancelot_writes_nested_blobs_as_pylance(tmp_path, version):
    """The same manifest fields (2.2: ``lance.blob.v2`` under the struct, its ``data`` / ``uri``
    children), DataFile field lists, descriptions (kinds, positions, blob ids) and bytes."""
    t = _table(version)
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    lance.write_dataset(t, theirs, data_storage_version=version)
    lancelot.write_dataset(t, ours, data_storage_version=version)
    assert _fields(ours) == _fields(theirs)
    a, b = lance.dataset(ours), lance.dataset(theirs)
    assert a.schema == b.schema
    fa, fb = (lancelot.dataset(p).manifest.fragments[0].files[0] for p in (ours, theirs))
    assert list(fa.fields) == list(fb.fields) and list(fa.column_indices) == list(fb.column_indices)
    if version == "2.2":  # the descriptions themselves (2.0 / 2.1 place the bytes elsewhere)
        assert a.to_table().equals(b.to_table())
    live = [k for k in range(len(t)) if t.column("s")[k].is_valid]  # see test_null_struct_rows_by_lancelot
    assert blob_bytes(a.take_blobs("s.b", indices=live)) == [VALUES[k] for k in live]
    assert blob_bytes(lancelot.dataset(ours).take_blobs("s.b", indices=range(len(t)))) == blob_bytes(
        b.take_blobs("s.b", indices=range(len(t)))
    )


def test_null_struct_rows_by_lancelot(tmp_path):
    """A null struct row of a lancelot-written 2.2 dataset: lancelot and pylance scan it as null,
    lancelot's take_blobs gives None (pylance's, reading a child layer written all-valid, b"")."""
    path = str(tmp_path / "ds")
    lancelot.write_dataset(_table("2.2"), path)
    assert lance.dataset(path).to_table().column("s")[5].as_py() is None
    assert lancelot.dataset(path).take_blobs("s.b", indices=[5]) == [None]


def test_appends_both_ways(tmp_path):
    p, q = str(tmp_path / "p"), str(tmp_path / "q")
    lancelot.write_dataset(_table("2.2"), p)
    lance.write_dataset(_table("2.2", first=10), p, mode="append")
    lance.write_dataset(_table("2.2"), q)
    lancelot.write_dataset(_table("2.2", first=10), q, mode="append")
    assert _fields(p) == _fields(q)
    for path in (p, q):
        theirs, ours = lance.dataset(path), lancelot.dataset(path)
        idx = [0, 2, 4, 6, 8, 9, 10]
        assert blob_bytes(ours.take_blobs("s.b", indices=idx)) == blob_bytes(theirs.take_blobs("s.b", indices=idx))


@pytest.mark.parametrize("version", VERSIONS)
def test_compaction_rewrites_nested_blob_values(tmp_path, version):
    """lancelot's compaction of a pylance dataset with a nested blob: the values (not their
    descriptions) are rewritten; pylance and lancelot read the same bytes afterwards."""
    path = str(tmp_path / "ds")
    lance.write_dataset(_table(version).slice(0, 4), path, data_storage_version=version)
    lance.write_dataset(_table(version, first=10).slice(0, 4), path, mode="append")
    lance.dataset(path).delete("n = 1")
    want = blob_bytes(lance.dataset(path).take_blobs("s.b", indices=range(7)))
    lancelot.dataset(path).compact_files(target_rows_per_fragment=100)
    theirs = lance.dataset(path)
    assert len(theirs.get_fragments()) == 1
    assert blob_bytes(theirs.take_blobs("s.b", indices=range(7))) == want
    assert blob_bytes(lancelot.dataset(path).take_blobs("s.b", indices=range(7))) == want


def test_binary_blob_at_2_2(tmp_path):
    """pylance takes a ``binary`` (not large) blob field at 2.2 and writes it as blob v2: so does lancelot."""
    field = pa.field("b", pa.binary(), metadata=BLOB)
    t = pa.Table.from_arrays([pa.array([b"a", b"bb" * 50_000, None])], schema=pa.schema([field]))
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    lance.write_dataset(t, theirs)
    lancelot.write_dataset(t, ours)
    assert _fields(ours) == _fields(theirs)
    assert lance.dataset(ours).to_table().equals(lance.dataset(theirs).to_table())
    assert blob_bytes(lance.dataset(ours).take_blobs("b", indices=[0, 1, 2])) == t.column("b").to_pylist()


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_blob_v2_refused_below_2_2(tmp_path, version):
    """A ``lance.blob.v2`` field (``lance.blob_field``) needs 2.2: both refuse it, lancelot naming the field."""
    t = pa.Table.from_arrays([lance.blob_array([b"abc", b""])], schema=pa.schema([lance.blob_field("img")]))
    with pytest.raises(OSError, match="2.2"):
        lance.write_dataset(t, str(tmp_path / "theirs"), data_storage_version=version)
    with pytest.raises(LanceError, match=r"'img'.*2\.2"):
        lancelot.write_dataset(t, str(tmp_path / "ours"), data_storage_version=version)
