"""``BlobFile`` against pylance's ``lance.BlobFile``: the same bytes for 1-byte, middle and tail
reads, the same cursor after seeks and reads, the same errors.  The memory bound of range reads is
tests/dataset/test_blob_memory.py's (1 GiB sparse blobs)."""

from __future__ import annotations

import io

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset.blob_file import BlobFile
from lancelot.errors import LanceError

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
