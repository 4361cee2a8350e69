"""``blob_handling`` of scans against pylance 14.0.2: ``"all_binary"`` returns blob columns (at the
top level, inside structs, as nested paths) as their bytes, with pylance's field metadata, through
``to_table``, ``to_batches``, ``scanner().projected_schema`` and fragment scans, with filters,
limits, offsets, row ids / addresses and deletions; ``"all_descriptions"`` reads as the default;
another value is pylance's ValueError."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.errors import LanceError

VERSIONS = ["2.0", "2.1", "2.2"]
BLOB = {"lance-encoding:blob": "true"}
STRUCT = pa.struct([pa.field("b", pa.large_binary(), metadata=BLOB), pa.field("i", pa.int32())])
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("b", pa.large_binary(), metadata=BLOB),
        pa.field("p", pa.large_binary()),
        pa.field("s", STRUCT),
    ]
)


def _table(k: int) -> pa.Table:
    return pa.table(
        {
            "id": [k, k + 1, k + 2, k + 3],
            "b": [b"abc" * k, None, b"x" * 70_000, b""],
            "p": [b"x", b"yy", None, b""],
            "s": [{"b": b"q" * k, "i": 1}, {"b": None, "i": 2}, {"b": b"z" * 100_000, "i": 3}, {"b": b"", "i": 4}],
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="module", params=VERSIONS)
def ds_path(request, tmp_path_factory):
    """Two fragments (pylance, then lancelot appending), a deleted row."""
    path = str(tmp_path_factory.mktemp(f"blob_handling_{request.param}") / "ds")
    lance.write_dataset(_table(1), path, data_storage_version=request.param)
    lancelot.write_dataset(_table(10), path, mode="append")
    lance.dataset(path).delete("id = 2")
    return path


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"columns": ["b"]},
        {"columns": ["id", "s"], "filter": "id > 2"},
        {"limit": 3, "offset": 2},
        {"with_row_address": True},
        {"with_row_id": True, "columns": ["s.b", "id"]},
    ],
)
def test_all_binary_to_table(ds_path, kw):
    theirs, ours = lance.dataset(ds_path), lancelot.dataset(ds_path)
    want = theirs.to_table(blob_handling="all_binary", **kw)
    got = ours.to_table(blob_handling="all_binary", **kw)
    assert got.schema == want.schema
    assert [f.metadata for f in got.schema] == [f.metadata for f in want.schema]
    assert got.equals(want)


def test_all_binary_values(ds_path):
    """The bytes themselves (nulls, empty values, packed ones), not only pylance's agreement."""
    got = lancelot.dataset(ds_path).to_table(blob_handling="all_binary")
    want = pa.concat_tables([_table(1), _table(10)])
    keep = [i for i, v in enumerate(want.column("id").to_pylist()) if v != 2]
    assert got.column("b").to_pylist() == [want.column("b")[i].as_py() for i in keep]
    assert got.column("s").to_pylist() == [want.column("s")[i].as_py() for i in keep]
    assert got.column("p").equals(want.column("p").take(keep))


def test_all_binary_batches_schema_and_fragments(ds_path):
    theirs, ours = lance.dataset(ds_path), lancelot.dataset(ds_path)
    assert ours.scanner(blob_handling="all_binary").projected_schema == (
        theirs.scanner(blob_handling="all_binary").projected_schema
    )
    a = [b.to_pylist() for b in ours.to_batches(blob_handling="all_binary", batch_size=2)]
    b = [b.to_pylist() for b in theirs.to_batches(blob_handling="all_binary", batch_size=2)]
    assert a == b
    empty = ours.to_table(blob_handling="all_binary", filter="id > 100")
    assert empty.num_rows == 0 and empty.schema == theirs.to_table(blob_handling="all_binary", filter="id > 100").schema
    f_ours, f_theirs = ours.get_fragments()[1], theirs.get_fragments()[1]
    assert f_ours.to_table(blob_handling="all_binary").equals(f_theirs.to_table(blob_handling="all_binary"))


def test_descriptions_modes_and_bad_mode(ds_path):
    theirs, ours = lance.dataset(ds_path), lancelot.dataset(ds_path)
    for mode in ("all_descriptions", "blobs_descriptions"):
        assert ours.to_table(blob_handling=mode).to_pylist() == theirs.to_table(blob_handling=mode).to_pylist()
    with pytest.raises(ValueError, match="Invalid blob_handling"):
        theirs.to_table(blob_handling="bogus")
    with pytest.raises(ValueError, match="Invalid blob_handling: bogus") as e:
        ours.to_table(blob_handling="bogus")
    assert isinstance(e.value, LanceError)


def test_all_binary_external_blobs(tmp_path):
    """2.2 external blobs: all_binary returns the bytes of the object (or of its range)."""
    ext = tmp_path / "ext.bin"
    ext.write_bytes(bytes(range(256)) * 4)
    uri = "file://" + str(ext)
    path = str(tmp_path / "ds")
    arr = lance.blob_array([b"abc", uri, lance.blob.Blob.from_uri(uri, 5, 7), None])
    lance.write_dataset(pa.table({"blob": arr}), path, allow_external_blob_outside_bases=True)
    want = lance.dataset(path).to_table(blob_handling="all_binary")
    got = lancelot.dataset(path).to_table(blob_handling="all_binary")
    assert got.equals(want)
    assert got.column("blob").to_pylist() == [b"abc", ext.read_bytes(), ext.read_bytes()[5:12], None]
