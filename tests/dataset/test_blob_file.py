"""``BlobFile`` against pylance's ``lance.BlobFile``: the same bytes for 1-byte, middle and tail
reads, the same cursor after seeks and reads, the same errors.

And the memory of its reads: reading one 1 MiB range of a 1 GiB blob through ``BlobFile`` holds
only about that range.  The 1 GiB blobs are sparse files (a hole but for the 1 MiB read), so the
tests stay small and fast: an external blob of a 2.2 dataset (the whole object, and a range of it),
and a ``BlobFile`` over a 1 GiB file at an offset, as an inline blob lies in its data file.  Three
bounds, each of which a read of the whole blob breaks: the bytes requested from the file (counted
at the byte source), the Python allocations (tracemalloc) and, where Linux lets it be reset, the
process's peak RSS.
"""

from __future__ import annotations

import io
import os
import tracemalloc
from contextlib import contextmanager

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset.blob_file import BlobFile
from lancelot.errors import LanceError
from lancelot.io import source as source_mod
from lancelot.io.source import LocalFileSource
from lancelot.util import jit

BLOB = {"lance-encoding:blob": "true"}
#: one value of each 2.2 kind (inline, packed, dedicated) and a small one
SIZES = [1000, 300_000, 4 * 1024 * 1024 + 7, 1]


@pytest.fixture(scope="module", params=["2.0", "2.1", "2.2"])
def pair(request, tmp_path_factory):
    rng = np.random.default_rng(7)
    vals = pa.array([rng.integers(0, 256, s, dtype=np.uint8).tobytes() for s in SIZES], pa.large_binary())
    t = pa.Table.from_arrays([vals], schema=pa.schema([pa.field("blob", pa.large_binary(), metadata=BLOB)]))
    path = str(tmp_path_factory.mktemp(f"blobfile_{request.param}") / "ds")
    lance.write_dataset(t, path, data_storage_version=request.param)
    return lance.dataset(path), lancelot.dataset(path)


def _both(pair, i, **kw):
    theirs, ours = pair
    return theirs.take_blobs("blob", indices=[i], **kw)[0], ours.take_blobs("blob", indices=[i], **kw)[0]


@pytest.mark.parametrize("i", range(len(SIZES)))
def test_reads_match_pylance(pair, i):
    a, b = _both(pair, i)
    assert isinstance(b, BlobFile) and isinstance(b, io.BufferedIOBase)
    n = a.size()
    assert b.size() == n and repr(b) == repr(a)
    steps = [
        ("read", 1),  # one byte
        ("seek", n // 2, io.SEEK_SET),
        ("read", 17),  # the middle
        ("seek", -1, io.SEEK_CUR),
        ("read", 5),
        ("seek", -1, io.SEEK_END),
        ("read", 10),  # the tail: one byte, then nothing
        ("read", 10),
        ("seek", n + 5, io.SEEK_SET),
        ("read", 3),
        ("seek", 0, io.SEEK_SET),
        ("read", 600_000),
        ("read", -1),
    ]
    for op, *args in steps:
        assert getattr(b, op)(*args) == getattr(a, op)(*args), (op, args)
        assert b.tell() == a.tell()
    b.seek(0)
    a.seek(0)
    assert b.readall() == a.readall()
    ranges = [(0, 1), (n // 3, min(100, n - n // 3)), (n - 1, 1), (n, 0)]
    assert b.read_ranges(ranges) == a.read_ranges(ranges)
    assert [b.read_range(o, ln) for o, ln in ranges] == [a.read_range(o, ln) for o, ln in ranges]
    assert b.tell() == a.tell()


def test_readinto_and_buffering(pair):
    a, b = _both(pair, 1, buffer_size=4096)
    ba, bb = bytearray(1000), bytearray(1000)
    assert b.readinto(bb) == a.readinto(ba) and ba == bb
    view = memoryview(bytearray(50))
    assert b.readinto(view) == 50 and bytes(view) == a.read(50)
    with pytest.raises(TypeError):
        b.readinto(b"readonly")
    c = pair[1].take_blobs("blob", indices=[1], buffer_size=0)[0]
    c.seek(1050)
    a.seek(1050)
    assert c.read(7) == a.read(7) and c.read1(3) == a.read1(3)


def test_range_errors_match_pylance(pair):
    a, b = _both(pair, 0)
    n = a.size()
    for off, ln in [(n - 1, 2), (n + 1, 0)]:
        with pytest.raises(ValueError):
            a.read_range(off, ln)
        with pytest.raises(ValueError, match="exceeds blob size") as e:
            b.read_range(off, ln)
        assert isinstance(e.value, LanceError)
    with pytest.raises(ValueError, match="negative seek"):
        b.seek(-1)
    with pytest.raises(ValueError):
        b.seek(0, 7)


def test_close_and_context_manager(pair):
    a, b = _both(pair, 2)
    with b as f:
        assert f.read(4) == a.read(4)
    assert b.closed
    a.close()
    for fh in (a, b):
        with pytest.raises(ValueError, match="closed file"):
            fh.read(1)
    assert b.size() == a.size()  # the size stays known (as pylance's)
    assert b.readable() and b.seekable() and not b.writable()


def test_null_and_empty(tmp_path):
    t = pa.Table.from_arrays(
        [pa.array([None, b""], pa.large_binary())],
        schema=pa.schema([pa.field("blob", pa.large_binary(), metadata=BLOB)]),
    )
    path = str(tmp_path / "ds")
    lance.write_dataset(t, path)
    got = lancelot.dataset(path).take_blobs("blob", indices=[0, 1])
    assert got[0] is None and got[1] is not None and got[1].size() == 0 and got[1].read() == b""
    assert [x is None for x in lance.dataset(path).take_blobs("blob", indices=[0, 1])] == [True, False]


def test_blob_file_outlives_the_open_data_file(pair):
    """A BlobFile reads through a source of its own: closing the dataset's cached data files
    (a bounded cache) does not break it."""
    import sys

    theirs, ours = pair
    files = ours.take_blobs("blob", indices=[0, 1, 2])
    cache = sys.modules["lancelot.dataset.open_files"]._FILES
    with sys.modules["lancelot.dataset.open_files"]._LOCK:
        for lf in cache.values():
            lf.close()
        cache.clear()
    assert [f.read(100) for f in files] == [f.read(100) for f in theirs.take_blobs("blob", indices=[0, 1, 2])]


GIB = 1 << 30
RANGE = 1 << 20
MIDDLE = GIB // 2 + 12345  # not aligned to anything


@pytest.fixture(scope="module")
def sparse(tmp_path_factory) -> tuple[str, bytes]:
    """A 1 GiB sparse file holding 1 MiB of data at ``MIDDLE`` (zeros elsewhere)."""
    path = str(tmp_path_factory.mktemp("sparse") / "big.bin")
    data = np.random.default_rng(5).integers(0, 256, RANGE, dtype=np.uint8).tobytes()
    with open(path, "wb") as fh:
        fh.truncate(GIB)
        fh.seek(MIDDLE)
        fh.write(data)
    if os.stat(path).st_blocks * 512 > 64 * RANGE:
        pytest.skip("the file system does not keep sparse files sparse")
    return path, data


def _peak_rss() -> int | None:
    """VmHWM in bytes (None where /proc has none)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
        return True
    except OSError:
        return False


@contextmanager
def bounded(monkeypatch, limit: int):
    """Count the bytes read from local files and the peak allocations inside the block; assert both,
    and the peak RSS growth when measurable, stay under ``limit``."""
    requested = [0]
    inner = LocalFileSource.read_ranges

    def counting(self, ranges):
        requested[0] += sum(n for _, n in ranges)
        return inner(self, ranges)

    monkeypatch.setattr(source_mod.LocalFileSource, "read_ranges", counting)
    rss = _peak_rss() if _reset_peak_rss() else None
    jit.wait_for_warm_ups()  # (no background compile while tracemalloc starts or stops: CPython 3.11)
    tracemalloc.start()
    try:
        yield requested
    finally:
        _, peak = tracemalloc.get_traced_memory()
        jit.wait_for_warm_ups()
        tracemalloc.stop()
        monkeypatch.undo()
    assert requested[0] < limit, f"{requested[0]} bytes read from the file"
    assert peak < limit, f"{peak} bytes allocated"
    after = _peak_rss()
    if rss is not None and after is not None:
        assert after - rss < limit + (32 << 20), f"peak RSS grew by {after - rss} bytes"


def test_external_1_gib_blob(tmp_path, sparse, monkeypatch):
    """A 2.2 dataset whose blob is a 1 GiB external object (and one 600 MiB range of it): a 1 MiB
    read from its middle reads and holds about 1 MiB, the bytes pylance's BlobFile reads."""
    path, data = sparse
    uri = "file://" + path
    ds_path = str(tmp_path / "ds")
    arr = lance.blob_array([uri, lance.blob.Blob.from_uri(uri, GIB // 4, 600 << 20)])
    lance.write_dataset(pa.table({"blob": arr}), ds_path, allow_external_blob_outside_bases=True)
    theirs = lance.dataset(ds_path).take_blobs("blob", indices=[0, 1])
    ours = lancelot.dataset(ds_path)
    ours.take_blobs("blob", indices=[0, 1])  # warm: the first one imports fsspec for the file:// URI
    with bounded(monkeypatch, 3 * RANGE) as requested:
        whole, part = ours.take_blobs("blob", indices=[0, 1])
        assert (whole.size(), part.size()) == (GIB, 600 << 20) == (theirs[0].size(), theirs[1].size())
        whole.seek(MIDDLE)
        got = whole.read(RANGE)
        assert got == data
        del got
        ranged = part.read_range(MIDDLE - GIB // 4, RANGE)
        assert ranged == data
        del ranged
    assert requested[0] >= 2 * RANGE  # the two ranges, nothing else of size
    theirs[0].seek(MIDDLE)
    assert theirs[0].read(RANGE) == data
    assert theirs[1].read_range(MIDDLE - GIB // 4, RANGE) == data
    part.seek(MIDDLE - GIB // 4 - 1)
    theirs[1].seek(MIDDLE - GIB // 4 - 1)
    assert part.read(3) == theirs[1].read(3) == b"\0" + data[:2]  # one byte before the data, and into it


@pytest.mark.parametrize("buffer_size", [0, 512 * 1024])
def test_blob_file_over_a_1_gib_range(sparse, monkeypatch, buffer_size):
    """A BlobFile over a 1 GiB range of a file at an offset (an inline blob in its data file): seeks,
    sequential reads of 1 byte and of 1 MiB, a tail read, read_ranges; reads hold about what they return
    plus the read-ahead buffer."""
    path, data = sparse
    offset = 4096 + 7
    size = GIB - offset
    with bounded(monkeypatch, 3 * RANGE + buffer_size):
        f = BlobFile(lambda: LocalFileSource(path), offset, size, buffer_size=buffer_size)
        assert f.size() == size
        f.seek(MIDDLE - offset - 1)
        assert f.read(1) == b"\0"
        assert f.read(RANGE) == data
        f.seek(-5, os.SEEK_END)
        assert f.read(100) == b"\0" * 5 and f.tell() == size
        assert f.read_ranges([(MIDDLE - offset, 10), (0, 1), (size - 1, 1)]) == [data[:10], b"\0", b"\0"]
        f.close()


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2", "2.3"])
def test_inline_blob_range_reads_only_that_range(tmp_path, monkeypatch, version):
    """take_blobs of an inline blob (in the data file at every version) reads only the ranges asked
    for from the data file: 4 KiB from the middle of a 3 MiB blob costs 4 KiB of file reads."""
    rng = np.random.default_rng(9)
    value = rng.integers(0, 256, 3 * RANGE, dtype=np.uint8).tobytes()
    field = pa.field("blob", pa.large_binary(), metadata=BLOB)
    if version == "2.2":  # inline up to 4 MiB: the value stays in the data file
        field = lance.blob_field("blob", inline_size_threshold=4 * RANGE, dedicated_size_threshold=8 * RANGE)
        col = lance.blob_array([value])
    else:
        col = pa.array([value], pa.large_binary())
    path = str(tmp_path / "ds")
    lance.write_dataset(pa.Table.from_arrays([col], schema=pa.schema([field])), path, data_storage_version=version)
    if version == "2.2":
        assert lance.dataset(path).to_table().column("blob").combine_chunks().field("kind").to_pylist() == [0]
    f = lancelot.dataset(path).take_blobs("blob", indices=[0], buffer_size=0)[0]
    with bounded(monkeypatch, 64 * 1024) as requested:
        f.seek(RANGE + 3)
        assert f.read(4096) == value[RANGE + 3 : RANGE + 3 + 4096]
        assert f.read_range(len(value) - 1, 1) == value[-1:]
    assert requested[0] == 4096 + 1
