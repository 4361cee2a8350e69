"""lancelot's ``Blob`` / ``blob_array`` / ``blob_field`` / ``BlobColumn`` against pylance 14.0.2's:
the same storage, validation and field metadata; a table built with lancelot's written by
lancelot and by pylance gives the same dataset as one built with pylance's."""

from __future__ import annotations

import io

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset.blob_types import Blob, BlobColumn, BlobType, blob_array, blob_field


def test_blob_array_matches_pylance(tmp_path):
    uri = "file://" + str(tmp_path / "x.bin")
    values = [b"abc", None, uri, b"", bytearray(b"q")]
    ours = blob_array(values + [Blob.from_uri(uri, 3, 4), Blob.empty()])
    theirs = lance.blob_array(values + [lance.blob.Blob.from_uri(uri, 3, 4), lance.blob.Blob.empty()])
    assert ours.type.extension_name == theirs.type.extension_name == "lance.blob.v2"
    assert ours.storage.equals(theirs.storage)
    assert isinstance(ours.type, BlobType)


def test_blob_field_matches_pylance():
    kw = {"inline_size_threshold": 16, "dedicated_size_threshold": 1000, "pack_file_size_threshold": 10**6}
    ours, theirs = blob_field("img", **kw), lance.blob_field("img", **kw)
    assert ours.metadata == theirs.metadata and ours.nullable == theirs.nullable
    assert ours.type.storage_type == theirs.type.storage_type
    assert blob_field("x", nullable=False).nullable is False and blob_field("x").metadata is None


@pytest.mark.parametrize(
    "bad",
    [
        lambda m: m.Blob(data=b"a", uri="s3://b/c"),
        lambda m: m.Blob(),
        lambda m: m.Blob(uri=""),
        lambda m: m.Blob(uri="s3://b/c", position=1),
        lambda m: m.Blob(data=b"a", position=1, size=2),
        lambda m: m.Blob.from_uri("s3://b/c", 0, 0),
        lambda m: m.Blob.from_uri("s3://b/c", -1, 3),
    ],
)
def test_blob_validation(bad):
    with pytest.raises(ValueError):
        bad(lance.blob)
    from lancelot.dataset import blob_types

    with pytest.raises(ValueError):
        bad(blob_types)


@pytest.mark.parametrize("kw", [{"inline_size_threshold": -1}, {"dedicated_size_threshold": 0}])
def test_bad_thresholds(kw):
    with pytest.raises(ValueError):
        lance.blob_field("b", **kw)
    with pytest.raises(ValueError):
        blob_field("b", **kw)
    with pytest.raises(TypeError):
        blob_field("b", inline_size_threshold=1.5)
    with pytest.raises(TypeError):
        blob_array([3])


def test_written_by_both(tmp_path):
    """lancelot's blob_array / blob_field written by lancelot and by pylance: the dataset pylance's gives."""
    ext = tmp_path / "ext.bin"
    ext.write_bytes(bytes(range(200)))
    uri = "file://" + str(ext)
    vals = [b"abc", None, uri, b"z" * 300, b""]
    ours_t = pa.Table.from_arrays(
        [blob_array(vals + [Blob.from_uri(uri, 5, 7)])], schema=pa.schema([blob_field("b", inline_size_threshold=64)])
    )
    theirs_t = pa.Table.from_arrays(
        [lance.blob_array(vals + [lance.blob.Blob.from_uri(uri, 5, 7)])],
        schema=pa.schema([lance.blob_field("b", inline_size_threshold=64)]),
    )
    ref = str(tmp_path / "ref")
    lance.write_dataset(theirs_t, ref, allow_external_blob_outside_bases=True)
    want = lance.dataset(ref).to_table()
    for name, write in [("by_lancelot", lancelot.write_dataset), ("by_pylance", lance.write_dataset)]:
        path = str(tmp_path / name)
        write(ours_t, path, allow_external_blob_outside_bases=True)
        assert lance.dataset(path).to_table().equals(want)
        got = [None if f is None else f.readall() for f in lancelot.dataset(path).take_blobs("b", indices=range(6))]
        assert got == [b"abc", None, ext.read_bytes(), b"z" * 300, b"", ext.read_bytes()[5:12]]


def test_blob_column():
    arr = pa.array([b"ab", None, b""], pa.large_binary())
    ours = [f.read() for f in BlobColumn(arr)]
    assert ours == [f.read() for f in lance.BlobColumn(arr)] == [b"ab", b"", b""]
    assert all(isinstance(f, io.BytesIO) for f in BlobColumn(pa.chunked_array([arr])))
    with pytest.raises(ValueError):
        BlobColumn(pa.array([1]))
    with pytest.raises(ValueError):
        lance.BlobColumn(pa.array([1]))
