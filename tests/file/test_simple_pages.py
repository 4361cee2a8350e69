"""Whole reads of small files whose columns are all-valid mini-block pages (encodings/structural/
simple_pages.py) return what pylance reads, for every type they cover, one chunk or several, one
page or several; files they do not cover (nulls, lists) read through the general path alike."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

import lancelot
from lancelot.encodings.structural import simple_pages


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    big = rng.integers(-(2**62), 2**62, n)
    words = [f"w{int(v)}-" + "x" * int(v % 13) for v in rng.integers(0, 10**9, n)]
    return pa.table(
        {
            "i8": pa.array(rng.integers(-128, 127, n), pa.int8()),
            "i16": pa.array(rng.integers(-(2**15), 2**15 - 1, n), pa.int16()),
            "i32": pa.array(rng.integers(-(2**31), 2**31 - 1, n), pa.int32()),
            "i64": pa.array(big, pa.int64()),
            "u64": pa.array(np.abs(big).astype(np.uint64), pa.uint64()),
            "f32": pa.array(rng.random(n), pa.float32()),
            "f64": pa.array(rng.random(n), pa.float64()),
            "d32": pa.array(rng.integers(0, 40000, n).astype(np.int32), pa.date32()),
            "ts": pa.array(big // 1000, pa.timestamp("us")),
            "s": pa.array(words, pa.string()),
            "ls": pa.array(words, pa.large_string()),
            "b": pa.array([w.encode() for w in words], pa.binary()),
            "lb": pa.array([w.encode() for w in words], pa.large_binary()),
            "small": pa.array(rng.integers(0, 1000, n), pa.int64()),  # inline-bitpacked
            "day": pa.array(rng.integers(9000, 9100, n).astype(np.int32), pa.date32()),
            "u8": pa.array(rng.integers(0, 5, n).astype(np.uint8), pa.uint8()),
            "cat": pa.array([("LOW", "MEDIUM", "HIGH-PRIORITY")[v] for v in rng.integers(0, 3, n)]),  # dictionary
            "key": pa.array(rng.choice(rng.integers(-(2**40), 2**40, 7), n), pa.int64()),
            "dec": pa.array(rng.integers(-(10**12), 10**12, n), pa.int64()).cast(pa.decimal128(20, 0)),
            "dec5": pa.array(rng.integers(-2, 3, n), pa.int64()).cast(pa.decimal128(20, 0)),  # dictionary
            "same": pa.array(np.full(n, -7), pa.int32()),  # constant (2.2)
            "runs": pa.array(np.sort(rng.integers(0, 2**40, n // 4 + 1)).repeat(4)[:n]),  # RLE: 2 buffers a chunk
        }
    )


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Pages the simple path decoded (a count per page it read itself)."""
    calls: list[int] = []
    real = simple_pages.decode_page

    def spy(*args: object) -> object:
        out = real(*args)  # type: ignore[arg-type]
        if out is not None:
            calls.append(1)
        return out

    monkeypatch.setattr(simple_pages, "decode_page", spy)
    return calls


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("rows", [100, 3000])
def test_simple_pages_read_as_pylance(tmp_path, version: str, rows: int, counted: list[int]) -> None:
    t = _table(rows, rows)
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, t.schema, version=version) as w:
        w.write_batch(t)
    ref = LanceFileReader(path).read_all().to_table()
    with lancelot.LanceFile(path) as f:
        assert f.read_range(0, rows).equals(ref)
    assert len(counted) >= 18  # (flat, variable, bitpacked, dictionary, FSST and compressed columns)
    if rows == 100:  # (RLE values and run lengths: two value buffers per chunk)
        meta = lancelot.LanceFile(path).columns["runs"][0].meta.pages[0]
        assert simple_pages.simple_layout(meta.encoding).value_buffers == 2
    with lancelot.LanceFile(path) as f:  # a part of the rows, a selection, reordered
        assert f.read_range(rows // 4, rows, ["s", "i64"]).equals(ref.select(["s", "i64"]).slice(rows // 4))


def test_pages_with_nulls_or_lists_take_the_general_path(tmp_path, counted: list[int]) -> None:
    t = pa.table(
        {
            "n": pa.array([None if i % 3 == 0 else i for i in range(200)], pa.int64()),
            "l": pa.array([[i, i + 1] for i in range(200)], pa.list_(pa.int32())),
        }
    )
    path = str(tmp_path / "g.lance")
    with LanceFileWriter(path, t.schema, version="2.2") as w:
        w.write_batch(t)
    with lancelot.LanceFile(path) as f:
        assert f.read_range(0, 200).equals(LanceFileReader(path).read_all().to_table())
    assert not counted


def test_dataset_of_small_files_with_several_pages(tmp_path) -> None:
    """Files of several pages per column (small max_rows_per_group) read whole through the simple
    path, with deletions, equal to pylance."""
    uri = str(tmp_path / "ds.lance")
    t = _table(1200, 7)
    lance.write_dataset(t, uri, max_rows_per_file=300, max_rows_per_group=100)
    lance.dataset(uri).delete("i8 > 100")
    ds, ref = lancelot.dataset(uri), lance.dataset(uri)
    assert ds.to_table().equals(ref.to_table())
    kw = {"filter": "i16 > 0", "columns": ["lb", "f32"]}
    assert ds.to_table(**kw).equals(ref.to_table(**kw))
