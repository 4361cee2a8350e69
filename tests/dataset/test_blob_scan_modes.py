"""How scans return blob columns, against pylance 14.0.2.

``blob_handling``: ``"all_binary"`` returns blob columns (at the top level, inside structs, as nested
paths) as their bytes, with pylance's field metadata, through ``to_table``, ``to_batches``,
``scanner().projected_schema`` and fragment scans, with filters, limits, offsets, row ids /
addresses and deletions; ``"all_descriptions"`` reads as the default; another value is pylance's
ValueError.

``to_pandas(blob_mode=...)``: ``"lazy"`` (the default) gives one ``BlobFile`` per value (None for a
null; inside struct values too), ``"bytes"`` the bytes, ``"descriptions"`` the descriptions, at 2.0,
2.1 and 2.2, deleted rows left out.
"""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset.blob_file import BlobFile
from lancelot.errors import LanceError

VERSIONS = ["2.0", "2.1", "2.2", "2.3"]
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


@pytest.fixture(scope="module", params=VERSIONS)
def pd_path(request, tmp_path_factory):
    pytest.importorskip("pandas")
    v = request.param
    schema = pa.schema(
        [pa.field("id", pa.int64()), pa.field("b", pa.large_binary(), metadata=BLOB), pa.field("s", STRUCT)]
    )
    structs = [{"b": b"q", "i": 1}, {"b": None, "i": 2}, {"b": b"z" * 100_000, "i": 3}, {"b": b"", "i": 4}]
    if v != "2.0":  # 2.0 holds no null structs
        structs[3] = None
    t = pa.table({"id": [1, 2, 3, 4], "b": [b"abc", None, b"x" * 70_000, b""], "s": structs}, schema=schema)
    path = str(tmp_path_factory.mktemp(f"blob_pandas_{v}") / "ds")
    lance.write_dataset(t, path, data_storage_version=v)
    lance.dataset(path).delete("id = 3")
    return path


def _plain(df) -> tuple[list[str], dict[str, list]]:
    """A frame's columns and values, each BlobFile as ("BlobFile", its bytes)."""

    def one(v):
        if hasattr(v, "readall"):
            return ("BlobFile", v.readall())
        if isinstance(v, dict):
            return {k: one(x) for k, x in v.items()}
        return v

    return list(df.columns), {c: [one(v) for v in df[c].tolist()] for c in df.columns}


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"blob_mode": "bytes"},
        {"blob_mode": "descriptions"},
        {"columns": ["b"]},
        {"columns": ["id"]},
        {"with_row_address": True},
        {"columns": ["s", "id"], "blob_mode": "lazy"},
    ],
)
def test_to_pandas_matches_pylance(pd_path, kw):
    assert _plain(lancelot.dataset(pd_path).to_pandas(**kw)) == _plain(lance.dataset(pd_path).to_pandas(**kw))


def test_lazy_values_are_blob_files(pd_path):
    df = lancelot.dataset(pd_path).to_pandas()
    b = df["b"].tolist()
    assert isinstance(b[0], BlobFile) and b[1] is None and b[2].size() == 0
    assert b[0].read(2) == b"ab" and b[0].read() == b"c"
    assert df["s"].tolist()[0]["b"].readall() == b"q"
    assert lancelot.dataset(pd_path).scanner(columns=["b"]).to_pandas()["b"].tolist()[0].readall() == b"abc"


def test_bad_blob_mode(pd_path):
    with pytest.raises(ValueError, match="blob_mode must be one of"):
        lance.dataset(pd_path).to_pandas(blob_mode="x")
    with pytest.raises(ValueError, match="blob_mode must be one of") as e:
        lancelot.dataset(pd_path).to_pandas(blob_mode="x")
    assert isinstance(e.value, LanceError)


@pytest.mark.parametrize("kw", [{}, {"blob_mode": "bytes"}, {"columns": ["b"], "with_row_id": True}])
def test_fragment_to_pandas(pd_path, kw):
    ours, theirs = lancelot.dataset(pd_path).get_fragments()[0], lance.dataset(pd_path).get_fragments()[0]
    assert _plain(ours.to_pandas(**kw)) == _plain(theirs.to_pandas(**kw))
