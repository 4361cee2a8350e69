"""``lancelot.iops_counter()`` / ``bytes_read_counter()`` (pylance's process-wide read counters): every read request
of a data file's bytes advances them by one and by the bytes it brought, local files and object stores alike, from
any thread; a read served from memory (a small file held whole, staged bytes) costs nothing.  The counts are checked
against a ``CountingSource`` wrapped around the same file and against the files' sizes."""

from __future__ import annotations

import os
import threading

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.io import CountingSource, LocalFileSource, open_source


def _counters() -> tuple[int, int]:
    return lancelot.iops_counter(), lancelot.bytes_read_counter()


def _delta(before: tuple[int, int]) -> tuple[int, int]:
    now = _counters()
    return now[0] - before[0], now[1] - before[1]


@pytest.fixture(scope="module")
def big_file(tmp_path_factory) -> str:
    """A Lance file of a few MB (larger than the files sources hold whole)."""
    path = str(tmp_path_factory.mktemp("counters") / "big.lance")
    n = 200_000
    lancelot.write_table(pa.table({"a": np.arange(n), "s": [f"row {i}" for i in range(n)]}), path)
    return path


def test_ranges_counted_as_requested(big_file):
    src = LocalFileSource(big_file)
    before = _counters()
    src.read(1000, 500)
    assert _delta(before) == (1, 500)
    before = _counters()
    src.read_ranges([(0, 100), (200_000, 300), (150, 50)])  # the first and last coalesce: one request of 200 bytes
    assert _delta(before) == (2, 200 + 300)
    before = _counters()
    src.stage([(4096, 8192)])
    src.read_ranges([(5000, 10), (6000, 100)])  # inside the staged bytes: no request
    src.unstage()
    assert _delta(before) == (1, 8192)


def test_small_file_counted_once(tmp_path):
    path = str(tmp_path / "small.lance")
    lancelot.write_table(pa.table({"a": [1, 2, 3]}), path)
    before = _counters()
    f = lancelot.LanceFile(path)
    assert f.read().num_rows == 3
    assert _delta(before) == (1, os.path.getsize(path))  # read whole when opened, then served from memory


@pytest.mark.parametrize("how", ["read", "take", "read_range"])
def test_file_reads_count_what_they_fetch(big_file, how):
    counting = CountingSource(LocalFileSource(big_file))
    before = _counters()
    f = lancelot.LanceFile(counting)
    if how == "read":
        f.read()
    elif how == "take":
        f.take([5, 100_000, 199_999])
    else:
        f.read_range(1000, 3000)
    got = _delta(before)
    assert got == (counting.requests, counting.bytes_read)
    assert 0 < got[1] <= os.path.getsize(big_file) + (64 << 10)  # (the footer's read may overlap the pages')


def test_object_store_reads(big_file):
    import fsspec

    url = "memory://lancelot-counters/big.lance"
    with open(big_file, "rb") as src, fsspec.open(url, "wb") as dst:
        dst.write(src.read())
    counting = CountingSource(open_source(url))
    before = _counters()
    assert lancelot.LanceFile(counting).take([7, 150_000]).num_rows == 2
    assert _delta(before) == (counting.requests, counting.bytes_read) and counting.requests > 0


def test_threads_lose_no_count(big_file):
    src = LocalFileSource(big_file)
    before = _counters()

    def reads(seed: int) -> None:
        for k in range(300):
            src.read((seed * 7919 + k * 104_729) % 1_000_000, 64 + seed)

    threads = [threading.Thread(target=reads, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _delta(before) == (8 * 300, sum(300 * (64 + i) for i in range(8)))


def test_dataset_scan_counts_its_data_files(tmp_path):
    """A scan of small fragments reads each data file whole (dataset/group_fetch.py): one request each, their sizes;
    pylance's counters move too on the same dataset."""
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"a": range(30)}), uri, max_rows_per_file=10)
    data = [os.path.join(uri, "data", n) for n in os.listdir(os.path.join(uri, "data"))]
    before = _counters()
    assert lancelot.dataset(uri).to_table().num_rows == 30
    assert _delta(before) == (len(data), sum(os.path.getsize(p) for p in data))
    theirs = lance.iops_counter(), lance.bytes_read_counter()
    lance.dataset(uri).to_table()
    assert lance.iops_counter() > theirs[0] and lance.bytes_read_counter() > theirs[1]


def test_s3_dataset_reads(s3_dataset):
    """On S3 (moto on localhost) both ways of reading a data file are counted: a scan of small fragments fetches each
    whole (one GET each, its size from the manifest), a take of a large file reads ranges (``CountingSource`` sees
    the same requests)."""
    opts = s3_dataset.lancelot_options()
    lancelot.write_dataset(pa.table({"a": range(30)}), s3_dataset.uri, max_rows_per_file=10, storage_options=opts)
    ds = lancelot.dataset(s3_dataset.uri, storage_options=opts)
    sizes = [f.data_files()[0].file_size_bytes for f in ds.get_fragments()]
    before = _counters()
    assert ds.to_table().num_rows == 30
    assert _delta(before) == (3, sum(sizes))
    url = f"s3://{s3_dataset.bucket}/big.lance"
    lancelot.write_table(pa.table({"a": np.arange(300_000)}), url, storage_options=opts)
    counting = CountingSource(open_source(url, opts))
    before = _counters()
    assert lancelot.LanceFile(counting).take([3, 250_000]).column("a").to_pylist() == [3, 250_000]
    assert _delta(before) == (counting.requests, counting.bytes_read) and counting.requests > 0
