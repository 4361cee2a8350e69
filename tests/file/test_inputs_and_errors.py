"""The file API's inputs and errors: inputs write_table takes and refuses, fsspec URL
writes, and errors that name the user's path, missing files, truncation, take indices, ranges."""

from __future__ import annotations

import os

import fsspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import lancelot
from lancelot.errors import LanceError, LanceFileNotFoundError, OutOfRangeError, TruncatedFileError

T = pa.table({"a": pa.array(np.arange(10), pa.int64()), "s": [f"v{i}" for i in range(10)]})


def _inputs():
    b = T.to_batches()[0]
    return {
        "table": T,
        "record_batch": b,
        "reader": lambda: pa.RecordBatchReader.from_batches(T.schema, T.to_batches(max_chunksize=3)),
        "list_of_batches": T.to_batches(max_chunksize=4),
        "generator": lambda: (x for x in T.to_batches(max_chunksize=4)),
        "list_of_tables": [T.slice(0, 5), T.slice(5)],
        "pandas_dataframe": T.to_pandas(),
        "table_from_pandas": pa.Table.from_pandas(T.to_pandas()),
    }


@pytest.mark.parametrize("kind", list(_inputs()))
def test_write_table_inputs(tmp_path, kind):
    data = _inputs()[kind]
    data = data() if callable(data) else data
    p = tmp_path / "in.lance"
    lancelot.write_table(data, p)
    got = lancelot.read_table(p)
    assert got.select(["a", "s"]).equals(T) if kind != "table_from_pandas" else got.column("a").equals(T.column("a"))


@pytest.mark.parametrize(
    "bad, name", [({"a": [1, 2]}, "dict"), ("a.parquet", "str"), (42, "int"), (b"bytes", "bytes"), (None, "NoneType")]
)
def test_write_table_refuses_with_type_error(tmp_path, bad, name):
    with pytest.raises(TypeError, match=f"expects a pyarrow Table.*got {name}"):
        lancelot.write_table(bad, tmp_path / "x.lance")
    assert not os.listdir(tmp_path)


def test_write_table_refuses_bad_items(tmp_path):
    with pytest.raises(TypeError, match="item 1 is dict"):
        lancelot.write_table([T.to_batches()[0], {"a": 1}], tmp_path / "x.lance")
    assert not os.listdir(tmp_path)  # nothing half-written, no temporary file


def test_writer_write_refuses_non_arrow(tmp_path):
    with lancelot.LanceWriter(tmp_path / "w.lance", T.schema) as w:
        with pytest.raises(TypeError, match="Table or RecordBatch, got dict"):
            w.write({"a": [1]})
    with pytest.raises(TypeError, match="pyarrow Schema, got dict"):
        lancelot.LanceWriter(tmp_path / "w2.lance", {"a": pa.int64()})


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_write_to_memory_url(version):
    url = f"memory://lancelot-tests/{version}/sub/t.lance"
    lancelot.write_table(T, url, version=version)
    assert lancelot.read_table(url).equals(T)
    fs = fsspec.filesystem("memory")
    assert [os.path.basename(p) for p in fs.ls(f"/lancelot-tests/{version}/sub", detail=False)] == ["t.lance"]


def test_write_to_file_url(tmp_path):
    url = "file://" + str(tmp_path / "u.lance")
    lancelot.write_table(T, url)
    assert lancelot.read_table(url).equals(T)
    assert os.listdir(tmp_path) == ["u.lance"]


def test_failed_url_write_leaves_target_untouched():
    url = "memory://lancelot-tests/atomic/t.lance"
    lancelot.write_table(T, url)
    before = fsspec.filesystem("memory").cat_file("/lancelot-tests/atomic/t.lance")
    with pytest.raises(LanceError):
        with lancelot.LanceWriter(url, T.schema) as w:
            w.write(T)
            w.write(pa.table({"zzz": [1]}))  # wrong schema: the write is abandoned
    assert fsspec.filesystem("memory").cat_file("/lancelot-tests/atomic/t.lance") == before


def test_write_errors_name_the_users_path(tmp_path, monkeypatch):
    missing = tmp_path / "no" / "such" / "dir" / "t.lance"
    with pytest.raises(LanceFileNotFoundError, match=f"file '{missing}'.*does not exist") as e:
        lancelot.write_table(T, missing)
    assert isinstance(e.value, FileNotFoundError)
    with pytest.raises(LanceError, match=f"file '{tmp_path}': is a directory"):
        lancelot.write_table(T, tmp_path)

    from lancelot.io import sink

    def full(self, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sink.BackgroundWriter, "write", full)
    target = tmp_path / "full.lance"
    with pytest.raises(LanceError) as e:
        lancelot.write_table(T, target)
    assert f"file '{target}'" in str(e.value) and "No space left on device" in str(e.value)
    assert ".lancelot-" not in str(e.value) and ".tmp" not in str(e.value)
    assert os.listdir(tmp_path) == []  # no temporary file left behind


@pytest.mark.parametrize("where", ["local", "file_url", "memory_url"])
def test_missing_file_is_file_not_found(tmp_path, where):
    path = {
        "local": str(tmp_path / "nope.lance"),
        "file_url": "file://" + str(tmp_path / "nope.lance"),
        "memory_url": "memory://lancelot-tests/nope.lance",
    }[where]
    with pytest.raises(FileNotFoundError) as e:
        lancelot.LanceFile(path)
    assert isinstance(e.value, LanceError) and isinstance(e.value, LanceFileNotFoundError)
    assert path in str(e.value) and "[Errno" not in str(e.value)


@pytest.mark.parametrize("cut", [1, 7, 16])
def test_truncated_footer_is_named_with_sizes(tmp_path, cut):
    p = tmp_path / "t.lance"
    lancelot.write_table(T, p)
    data = p.read_bytes()
    p.write_bytes(data[:-cut])
    with pytest.raises(TruncatedFileError, match=f"truncated.*{len(data)} bytes, found {len(data) - cut}") as e:
        lancelot.LanceFile(p)
    assert (e.value.expected, e.value.actual) == (len(data), len(data) - cut)


def test_truncated_deeper_says_truncated_or_not_lance(tmp_path):
    p = tmp_path / "t.lance"
    lancelot.write_table(T, p)
    p.write_bytes(p.read_bytes()[:-100])
    with pytest.raises(lancelot.NotALanceFileError, match="truncated or not a Lance file"):
        lancelot.LanceFile(p)


def test_file_truncated_after_open(tmp_path):
    p = tmp_path / "t.lance"
    lancelot.write_table(pa.table({"a": np.arange(100_000)}), p)
    f = lancelot.LanceFile(p)
    size = os.path.getsize(p)
    with open(p, "r+b") as fh:
        fh.truncate(1000)
    with pytest.raises(TruncatedFileError, match=f"expected {size} bytes.*found 1000"):
        f.read()


def test_take_names_the_bad_index(tmp_path):
    p = tmp_path / "t.lance"
    lancelot.write_table(T, p)
    f = lancelot.LanceFile(p)
    with pytest.raises(OutOfRangeError, match="take index 1000000000 .*10 rows"):
        f.take([1, 10**9])
    with pytest.raises(IndexError, match="take index -1 "):
        f.take([-1])


@pytest.mark.parametrize(
    "start, stop, why", [(-5, 3, "start is negative"), (5, 3, "stop is before start"), (-1, -1, "start is negative")]
)
def test_bad_read_range_raises(tmp_path, start, stop, why):
    p = tmp_path / "t.lance"
    lancelot.write_table(T, p)
    with pytest.raises(OutOfRangeError, match=why):
        lancelot.LanceFile(p).read_range(start, stop)


def test_read_range_past_the_end_is_clipped(tmp_path):
    p = tmp_path / "t.lance"
    lancelot.write_table(T, p)
    f = lancelot.LanceFile(p)
    assert f.read_range(8, 100).equals(T.slice(8))
    assert f.read_range(50, 60).num_rows == 0


def test_pandas_metadata_round_trips(tmp_path):
    df = pd.DataFrame({"x": [1.5, 2.5], "y": ["a", "b"]})
    p = tmp_path / "pd.lance"
    lancelot.write_table(df, p)
    assert lancelot.read_table(p).to_pandas().equals(df)


def test_write_and_read_s3_url(s3_dataset):  # noqa: F811 - the fixture
    """An object store (moto's S3 on localhost): one put of the finished file, read back by both."""
    from lance.file import LanceFileReader

    url = f"s3://{s3_dataset.bucket}/files/t.lance"
    opts = s3_dataset.lancelot_options()
    lancelot.write_table(T, url, version="2.1", storage_options=opts)
    assert lancelot.read_table(url, storage_options=opts).equals(T)
    assert LanceFileReader(url, storage_options=s3_dataset.pylance_options()).read_all().to_table().equals(T)
    with pytest.raises(LanceError):  # a failed write leaves the object as it was
        with lancelot.LanceWriter(url, T.schema, storage_options=opts) as w:
            w.write(pa.table({"zzz": [1]}))
    assert lancelot.read_table(url, storage_options=opts).equals(T)
    with pytest.raises(FileNotFoundError):
        lancelot.LanceFile(f"s3://{s3_dataset.bucket}/files/nope.lance", storage_options=opts)
