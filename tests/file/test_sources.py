"""Byte sources: local paths, file:// and memory:// URLs through the same range interface."""

from __future__ import annotations

import fsspec
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.io.source import coalesce


def test_coalesce_merges_near_ranges():
    merged = coalesce([(100, 10), (0, 10), (15, 5), (5000, 1)], gap=10)
    assert [(o, n) for o, n, _ in merged] == [(0, 20), (100, 10), (5000, 1)]
    assert merged[0][2] == [1, 2]


def test_memory_and_file_urls(tmp_path):
    t = pa.table({"a": np.arange(5000), "s": [str(i) for i in range(5000)]})
    local = tmp_path / "t.lance"
    lancelot.write_table(t, local)
    assert lancelot.read_table(f"file://{local}").equals(t)
    with fsspec.open("memory://bucket/t.lance", "wb") as f:
        f.write(local.read_bytes())
    lf = lancelot.LanceFile("memory://bucket/t.lance")
    assert lf.read().equals(t)
    assert lf.take([4999, 3, 3]).equals(t.take([4999, 3, 3]))


def test_large_local_reads_land_in_pooled_memory(tmp_path):
    """Ranges of POOLED_READ_BYTES or more are read into pyarrow's memory pool (through RWF_NOWAIT or
    not): same bytes, and a file cut short after opening still reports the truncation."""
    from lancelot.errors import TruncatedFileError
    from lancelot.io.source import POOLED_READ_BYTES, LocalFileSource

    data = np.random.default_rng(3).integers(0, 256, 3 * POOLED_READ_BYTES, dtype=np.uint8).tobytes()
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    src = LocalFileSource(path)
    ranges = [(7, POOLED_READ_BYTES + 5), (2 * POOLED_READ_BYTES + 100, 64), (POOLED_READ_BYTES * 2, 3)]
    got = src.read_ranges(ranges)
    assert [bytes(g) for g in got] == [data[o : o + n] for o, n in ranges]
    with open(path, "r+b") as f:
        f.truncate(POOLED_READ_BYTES)
    with pytest.raises(TruncatedFileError):
        src.read_ranges([(10, 2 * POOLED_READ_BYTES)])
    src.close()


def test_small_local_file_is_read_whole_when_opened(tmp_path):
    """A file of at most KEEP_WHOLE_BYTES (its metadata read would read it all) is read once when
    opened: later reads and read-ahead hints cost no syscall."""
    from lancelot.io.source import KEEP_WHOLE_BYTES, LocalFileSource

    data = bytes(range(256)) * (KEEP_WHOLE_BYTES // 256)
    path = tmp_path / "small.bin"
    path.write_bytes(data)
    src = LocalFileSource(path)
    src._read = src._read_cached = lambda off, ln: pytest.fail("read the file again")
    src._fadvise = lambda ranges: pytest.fail("hinted")
    src.will_need([(0, 8), (40_000, 16)])
    assert [bytes(b) for b in src.read_ranges([(40_000, 16), (5, 3)])] == [data[40_000:40_016], data[5:8]]
    src.close()
    big = tmp_path / "big.bin"
    big.write_bytes(data + b"x")
    assert LocalFileSource(big)._kept == ()


def test_a_large_will_need_of_a_cached_file_is_not_hinted(tmp_path, monkeypatch):
    """will_need of many blocks probes the first, middle and last one with RWF_NOWAIT: all cached,
    it hints nothing (thousands of WILLNEED calls on cached pages cost more than a take); a probe
    that misses hints them all as before."""
    import os

    from lancelot.io import source
    from lancelot.io.source import PROBE_MIN_BLOCKS, LocalFileSource

    gap = 1 << 16  # farther apart than any coalescing gap: one block per range
    n = PROBE_MIN_BLOCKS + 6
    path = tmp_path / "spread.bin"
    path.write_bytes(bytes(range(256)) * (n * gap // 256 + 16))
    path.read_bytes()  # in the page cache
    src = LocalFileSource(path)
    if not src._nowait:
        pytest.skip("this kernel or file system has no preadv RWF_NOWAIT")
    ranges = [(i * gap, 100) for i in range(n)]
    hinted: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, off, ln, advice: hinted.append((off, ln)))
    src.will_need(ranges)
    assert hinted == []
    assert [bytes(b) for b in src.read_ranges(ranges[:2])] == [bytes(range(100))] * 2
    monkeypatch.setattr(source.LocalFileSource, "_read_cached", lambda self, off, ln: None)
    src.will_need(ranges)
    assert sorted(off for off, _ in hinted) == [off for off, _ in ranges]
    src.close()


def test_cached_small_ranges_read_per_merged_block(tmp_path):
    """Small ranges of a cached local file (a take's round) are read one block of near ranges at a time, in any
    order, overlapping or empty, with the bytes a memory source gives; a file cut short after opening still reports
    the truncation."""
    from lancelot.errors import TruncatedFileError
    from lancelot.io.source import KEEP_WHOLE_BYTES, LocalFileSource, MemorySource

    data = np.random.default_rng(5).integers(0, 256, 4 * KEEP_WHOLE_BYTES, dtype=np.uint8).tobytes()
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    src = LocalFileSource(path)
    reads = []
    cached = src._read_cached
    src._read_cached = lambda off, ln: reads.append((off, ln)) or cached(off, ln)
    ranges = [(200_000, 64), (10, 5), (0, 8), (12, 0), (150_000, 0), (100, 20), (200_010, 100)]
    got = src.read_ranges(ranges)
    assert [bytes(g) for g in got] == [bytes(g) for g in MemorySource(data).read_ranges(ranges)]
    assert reads in ([(0, 120), (200_000, 110)], [])  # ([]: a file system without RWF_NOWAIT reads them plainly)
    with open(path, "r+b") as f:
        f.truncate(100_000)
    with pytest.raises(TruncatedFileError):
        src.read_ranges([(10, 5), (150_000, 8)])
    src.close()
