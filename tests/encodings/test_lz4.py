"""LZ4 chunk buffers (General/LZ4 in mini-block chunks) inflated by one kernel call for a whole read
(lz4_kernel.py): the same bytes as pyarrow's codec chunk by chunk, and a bad block left to it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lancelot.encodings.compression import chunked, lz4_kernel
from lancelot.encodings.compression.general import buffer_compression, compress_buffer, decompress_buffer
from lancelot.errors import CorruptFileError
from tests.encodings.helpers import segments


def _chunks(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """Raw chunk contents: random bytes, long runs (matches overlapping their output), short
    repeats (offsets under 8), repeated phrases and empty chunks."""
    out = []
    for k in range(n):
        kind = k % 5
        size = int(rng.integers(0, 6000))
        if kind == 0:
            raw = rng.integers(0, 256, size, dtype=np.uint8)
        elif kind == 1:
            raw = np.full(size, 7, np.uint8)
        elif kind == 2:
            raw = np.tile(rng.integers(0, 256, int(rng.integers(1, 8)), dtype=np.uint8), size // 4 + 1)[:size]
        elif kind == 3:
            words = [rng.integers(97, 123, int(rng.integers(2, 30)), dtype=np.uint8) for _ in range(12)]
            raw = np.concatenate([words[int(i)] for i in rng.integers(0, 12, size // 8 + 1)])[:size]
        else:
            raw = np.zeros(0, np.uint8)
        out.append(raw)
    return out


@pytest.fixture(scope="module", autouse=True)
def _kernel_loaded():
    z = np.zeros(0, np.int64)
    lz4_kernel._inflate(np.zeros(0, np.uint8), z, z, np.zeros(1, np.int64), np.zeros(8, np.uint8))
    assert lz4_kernel.HOT_LZ4.ready()


@pytest.mark.parametrize("seed", range(3))
def test_kernel_inflates_like_the_codec(seed: int) -> None:
    rng = np.random.default_rng(seed)
    raw = _chunks(rng, 60)
    lz4 = buffer_compression("lz4")
    seg = segments([compress_buffer(lz4, r) for r in raw])
    fast = chunked._lz4_chunks(seg)
    assert fast is not None
    assert np.array_equal(np.asarray(fast.sizes), [len(r) for r in raw])
    assert np.array_equal(fast.data, np.concatenate(raw))
    one_by_one = np.concatenate([decompress_buffer(lz4, seg.chunk(k)) for k in range(len(seg))])
    assert np.array_equal(chunked._general(lz4, seg).data, one_by_one)


def test_a_bad_block_is_reported_by_the_codec() -> None:
    rng = np.random.default_rng(9)
    lz4 = buffer_compression("lz4")
    bufs = [compress_buffer(lz4, r) for r in _chunks(rng, 10)]
    bad = bufs[3].copy()
    bad[4:] = 0xFF  # literal lengths that run past the block
    bufs[3] = bad
    seg = segments(bufs)
    assert chunked._lz4_chunks(seg) is None
    with pytest.raises(CorruptFileError):
        chunked._general(lz4, seg)


def test_general_lz4_pages_read_like_pylance(tmp_path, monkeypatch) -> None:
    """A decimal column the balanced profile compresses with LZ4 reads back equal (kernel path)."""
    from lance.file import LanceFileReader

    from lancelot import LanceFile, write_table

    rng = np.random.default_rng(4)
    values = pa.array([int(v) for v in rng.integers(0, 10**9, 200_000)], pa.decimal128(15, 2))
    table = pa.table({"d": values})
    path = str(tmp_path / "d.lance")
    write_table(table, path, version="2.2", profile="balanced")
    served = []
    real = chunked._lz4_chunks
    monkeypatch.setattr(chunked, "_lz4_chunks", lambda seg: served.append(real(seg)) or served[-1])
    got = LanceFile(path).read()
    assert got.equals(table)
    assert served and all(s is not None for s in served)  # the balanced profile's LZ4 chunks, by the kernel
    assert LanceFileReader(path).read_all().to_table().equals(got)
