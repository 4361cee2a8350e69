"""Pages of the size asked: the default page limit, ``max_page_bytes``, blob columns.

Page counts are compared with pylance 14.0.2's for the same data (its python test_file.py
``test_file_stat`` among them); the paging rule is encodings/paging.py.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.encodings.paging import DEFAULT_MAX_PAGE_BYTES, GATHER_BYTES
from lancelot.format.container import read_metadata
from lancelot.io.source import open_source
from tests.helpers import pylance_write
from tests.support.crosscheck import write_lancelot

lance_file = pytest.importorskip("lance.file", reason="pylance (the test oracle) is not installed")

VERSIONS = ["2.0", "2.1", "2.2"]


def pages(path: str) -> list[list[tuple[int, int]]]:
    """Per column, (rows, bytes) of every page."""
    src = open_source(path)
    try:
        return [[(int(p.length), int(sum(p.buffer_sizes))) for p in c.pages] for c in read_metadata(src).columns]
    finally:
        src.close()


def test_default_is_pylances_page_limit():
    from lancelot import writer

    assert writer.DEFAULT_MAX_PAGE_BYTES == DEFAULT_MAX_PAGE_BYTES == 32 * 1024 * 1024


@pytest.fixture(scope="module")
def file_stat_table() -> pa.Table:
    """test_file_stat's data: 1M int64 and 1M vectors of 8 float64 (64 MB)."""
    n = 1_000_000
    rng = np.random.default_rng(0)
    return pa.table(
        {"a": pa.array(np.arange(n)), "b": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8)), 8)}
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_file_stat(tmp_path, file_stat_table, version):
    """pylance's test_file_stat on lancelot's file: int64 column one page of <= 8 MB, the 64 MB vector
    column at most 2 pages of <= 64.2 MB in all, at default settings; pylance's own file alike."""
    ours = str(tmp_path / "ours.lance")
    lancelot.write_table(file_stat_table, ours, version=version)
    theirs = pylance_write(tmp_path / "theirs.lance", file_stat_table, version)
    for path in (ours, theirs):
        a, b = pages(path)
        assert len(a) == 1 and sum(s for _, s in a) <= 8_000_000, (path, a)
        assert len(b) <= 2 and sum(s for _, s in b) <= 64_200_000, (path, b)
    # pylance: 2 pages at 2.0 (its 32 MiB limit), 1 at 2.1+ (where it ignores the limit); lancelot 2 at all
    assert len(pages(theirs)[1]) == (2 if version == "2.0" else 1)
    assert len(pages(ours)[1]) == 2
    got = lancelot.read_table(ours)
    assert got.column("b").combine_chunks().equals(file_stat_table.column("b").combine_chunks())


def _shapes(n: int, rng: np.random.Generator) -> dict[str, pa.Array]:
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon"])
    return {
        "int64": pa.array(rng.integers(0, 1 << 60, n)),
        "float32 vectors": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 16, np.float32)), 16),
        "strings": pa.array([f"{w}-{i}" for i, w in enumerate(words[rng.integers(0, 5, n)])]),
        "list<int32>": pa.ListArray.from_arrays(
            pa.array(np.arange(0, 4 * n + 1, 4, dtype=np.int32)),
            pa.array(rng.integers(0, 1 << 30, 4 * n).astype(np.int32)),
        ),
    }


SHAPES = ["int64", "float32 vectors", "strings", "list<int32>"]


@pytest.mark.parametrize("batches", [1, 37])
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("shape", SHAPES)
def test_max_page_bytes_honoured(tmp_path, shape, version, batches):
    """An explicit ``max_page_bytes`` gives pages of about that size: every page within 1.5x of it (the last
    may be short), as many as the data needs; pylance at 2.0, which honours it too, writes as many +-1."""
    limit = 96 * 1024
    arr = _shapes(30_000, np.random.default_rng(7))[shape]
    table = pa.table({"c": arr})
    sizes = [len(b) for b in table.to_batches(max_chunksize=-(-len(arr) // batches))]
    ours = write_lancelot(tmp_path / "ours.lance", table, version, sizes, max_page_bytes=limit)
    col = pages(ours)[-1]  # the values column (2.0 lists: the items column comes last)
    total = sum(s for _, s in col)
    # pages are cut by the values' Arrow size; the encoded size differs a little (dictionaries, headers)
    assert all(s <= 1.5 * limit for _, s in col), col
    assert len(col) >= math.ceil(total / (1.5 * limit)) >= 2
    assert len(col) <= math.ceil(1.5 * total / limit) + 1, col
    assert lancelot.read_table(ours).equals(table)
    assert lance_file.LanceFileReader(ours).read_all().to_table().equals(table)


@pytest.mark.parametrize("limit_mib", [1, 3])
def test_max_page_bytes_like_pylance_2_0(tmp_path, limit_mib):
    """pylance honours ``max_page_bytes`` at 2.0 when a batch fills its 8 MiB cache: 8 MB of int64 in one
    batch give the same page count in both writers.  (It writes whatever remains at close as one page,
    whatever the limit, and ignores the limit at 2.1+, so only this case is compared.)"""
    table = pa.table({"c": pa.array(np.arange(1_000_000, dtype=np.int64))})
    limit = limit_mib << 20
    ours = write_lancelot(tmp_path / "ours.lance", table, "2.0", max_page_bytes=limit)
    theirs = pylance_write(tmp_path / "theirs.lance", table, "2.0", max_page_bytes=limit)
    assert len(pages(ours)[0]) == len(pages(theirs)[0]) == math.ceil(8_000_000 / limit)


@pytest.mark.parametrize("version", VERSIONS)
def test_small_batches_gather_to_8_mib(tmp_path, version):
    """Many small batches at default settings: pages of about 8 MiB (pylance's per-column cache), not one
    page per batch nor 32 MiB pages."""
    n = 3_000_000  # 24 MB of int64
    table = pa.table({"c": pa.array(np.arange(n, dtype=np.int64))})
    path = write_lancelot(tmp_path / "ours.lance", table, version, [n // 100] * 100)
    col = pages(path)[0]
    assert len(col) == math.ceil(8 * n / GATHER_BYTES), [r for r, _ in col]
    assert all(s <= GATHER_BYTES + 8 * (n // 100) for _, s in col)


@pytest.mark.parametrize("batches", [1, 10])
@pytest.mark.parametrize("version", VERSIONS)
def test_blob_pages_like_pylance(tmp_path, version, batches):
    """Blob pages hold 16-byte descriptions, the bytes go out of line as batches arrive: 12 MB of blobs in
    one page, as pylance writes them (lancelot once cut them into ~8 MiB pages); both read back."""
    rng = np.random.default_rng(3)
    vals = [rng.bytes(int(s)) if i % 7 else None for i, s in enumerate(rng.integers(50_000, 200_000, 120))]
    field = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    table = pa.Table.from_arrays(
        [pa.array(np.arange(120)), pa.array(vals, pa.large_binary())],
        schema=pa.schema([pa.field("i", pa.int64()), field]),
    )
    sizes = [len(b) for b in table.to_batches(max_chunksize=-(-120 // batches))]
    ours = write_lancelot(tmp_path / "ours.lance", table, version, sizes)
    theirs = pylance_write(tmp_path / "theirs.lance", table.to_batches(max_chunksize=-(-120 // batches)), version)
    assert [len(c) for c in pages(ours)] == [len(c) for c in pages(theirs)] == [1, 1]
    for path in (ours, theirs):
        assert lancelot.read_table(path).equals(table)
        assert lance_file.LanceFileReader(path).read_all().to_table().equals(table)
    # with a small page limit the descriptions are cut into pages, the values still read back
    small = write_lancelot(tmp_path / "small.lance", table, version, sizes, max_page_bytes=16 * 40)
    levels = 0 if version == "2.0" else 2  # 2.0 marks nulls in the descriptions, 2.1+ with definition levels
    assert len(pages(small)[1]) >= math.ceil(120 * (16 + levels) / (16 * 40)) - 1 >= 2
    assert lancelot.read_table(small).equals(table)
    assert lance_file.LanceFileReader(small).read_all().to_table().equals(table)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_vector_batch_of_the_page_limit_is_one_page(tmp_path, version):
    """Vectors without nulls count their bytes only (no item validity is stored): batches of exactly
    ``max_page_bytes`` are one page each, not pages cut short whose rest waits for the next batch (each
    then joined two batches and held the previous one).  With a null item the validity counts."""
    rows, dim, limit = 1024, 128, 512 * 1024  # 1024 vectors of 128 float32 = the limit
    rng = np.random.default_rng(5)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(4 * rows * dim, np.float32)), dim)
    table = pa.table({"v": vec})
    path = write_lancelot(tmp_path / "ours.lance", table, version, [rows] * 4, max_page_bytes=limit)
    assert pages(path)[0] == [(rows, rows * dim * 4)] * 4
    assert lancelot.read_table(path).equals(table)
    items = pa.array(rng.random(4 * rows * dim, np.float32), mask=np.arange(4 * rows * dim) == 5)
    nulls = pa.table({"v": pa.FixedSizeListArray.from_arrays(items, dim)})
    path = write_lancelot(tmp_path / "nulls.lance", nulls, version, [rows] * 4, max_page_bytes=limit)
    assert pages(path)[0][0][0] < rows  # 128 validity bits a row more: the first page is cut short
    assert lancelot.read_table(path).equals(nulls)
