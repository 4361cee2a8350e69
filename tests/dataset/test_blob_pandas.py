"""``to_pandas(blob_mode=...)`` on blob datasets against pylance 14.0.2: ``"lazy"`` (the default)
gives one ``BlobFile`` per value (None for a null; inside struct values too), ``"bytes"`` the bytes,
``"descriptions"`` the descriptions, at 2.0, 2.1 and 2.2, deleted rows left out."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset.blob_file import BlobFile
from lancelot.errors import LanceError

pytest.importorskip("pandas")

VERSIONS = ["2.0", "2.1", "2.2"]
BLOB = {"lance-encoding:blob": "true"}
STRUCT = pa.struct([pa.field("b", pa.large_binary(), metadata=BLOB), pa.field("i", pa.int32())])


@pytest.fixture(scope="module", params=VERSIONS)
def ds_path(request, tmp_path_factory):
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
def test_to_pandas_matches_pylance(ds_path, kw):
    assert _plain(lancelot.dataset(ds_path).to_pandas(**kw)) == _plain(lance.dataset(ds_path).to_pandas(**kw))


def test_lazy_values_are_blob_files(ds_path):
    df = lancelot.dataset(ds_path).to_pandas()
    b = df["b"].tolist()
    assert isinstance(b[0], BlobFile) and b[1] is None and b[2].size() == 0
    assert b[0].read(2) == b"ab" and b[0].read() == b"c"
    assert df["s"].tolist()[0]["b"].readall() == b"q"
    assert lancelot.dataset(ds_path).scanner(columns=["b"]).to_pandas()["b"].tolist()[0].readall() == b"abc"


def test_bad_blob_mode(ds_path):
    with pytest.raises(ValueError, match="blob_mode must be one of"):
        lance.dataset(ds_path).to_pandas(blob_mode="x")
    with pytest.raises(ValueError, match="blob_mode must be one of") as e:
        lancelot.dataset(ds_path).to_pandas(blob_mode="x")
    assert isinstance(e.value, LanceError)


@pytest.mark.parametrize("kw", [{}, {"blob_mode": "bytes"}, {"columns": ["b"], "with_row_id": True}])
def test_fragment_to_pandas(ds_path, kw):
    ours, theirs = lancelot.dataset(ds_path).get_fragments()[0], lance.dataset(ds_path).get_fragments()[0]
    assert _plain(ours.to_pandas(**kw)) == _plain(theirs.to_pandas(**kw))
