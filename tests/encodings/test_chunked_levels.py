"""Rep/def levels of many mini-block chunks decoded at once (chunked.decompress_level_chunks) equal the
chunk-by-chunk decode (compression.decompress_block), RLE in block context included."""

from __future__ import annotations

import numpy as np
import pytest

from lancelot.encodings import compression
from lancelot.encodings.compression import rle_kernel
from lancelot.encodings.compression.block import FixedWidthBlock
from lancelot.encodings.compression.chunked import decompress_level_chunks
from lancelot.encodings.compression.rle import compress_rle_block
from lancelot.encodings.compression.segments import Segments
from lancelot.errors import CorruptFileError


def _chunks(rng: np.random.Generator, n_chunks: int, bits: int):
    """Block-context RLE buffers of chunks of levels (runs of 0-3, some chunks empty), laid out with gaps."""
    dt = np.uint16 if bits == 16 else np.uint8
    parts, starts, sizes, counts, levels, pos = [], [], [], [], [], 0
    enc = None
    for _ in range(n_chunks):
        n = int(rng.integers(0, 3000)) if rng.random() > 0.2 else 0
        vals = np.repeat(rng.integers(0, 4, 40).astype(dt), rng.integers(1, 300, 40))[:n]
        n = len(vals)
        e, buf = compress_rle_block(FixedWidthBlock(vals.view(np.uint8), bits, n))
        enc = enc or e
        gap = int(rng.integers(0, 5))
        parts += [np.full(gap, 9, np.uint8), buf]
        starts.append(pos + gap)
        sizes.append(len(buf))
        pos += gap + len(buf)
        counts.append(n)
        levels.append(vals.astype(np.uint16))
    seg = Segments(np.concatenate(parts), np.array(starts, np.int64), np.array(sizes, np.int64))
    return enc, seg, np.array(counts, np.int64), levels


def _per_chunk(enc, seg: Segments, counts: np.ndarray) -> np.ndarray:
    out = [
        np.frombuffer(compression.decompress_block(enc, seg.chunk(k), int(counts[k])).data, np.uint8)
        for k in range(len(seg))
    ]
    return np.concatenate(out)


@pytest.mark.parametrize("bits", [8, 16])
@pytest.mark.parametrize("kernel", [False, True])
def test_rle_level_chunks_equal_chunk_by_chunk(bits: int, kernel: bool, monkeypatch) -> None:
    monkeypatch.setattr(rle_kernel.HOT_RUNS, "ready", lambda: kernel)  # the kernel, or its numpy twin
    rng = np.random.default_rng(bits)
    enc, seg, counts, levels = _chunks(rng, 60, bits)
    out = decompress_level_chunks(enc, seg, counts)
    assert out is not None and out.dtype == np.uint16
    assert np.array_equal(out, np.concatenate(levels))
    raw = _per_chunk(enc, seg, counts).view(np.uint16 if bits == 16 else np.uint8)
    assert np.array_equal(out, raw.astype(np.uint16))


def test_rle_level_chunks_check_the_values_size() -> None:
    rng = np.random.default_rng(5)
    enc, seg, counts, _ = _chunks(rng, 5, 16)
    k = int(np.flatnonzero(counts)[0])
    data = seg.data.copy()
    data[seg.starts[k] : seg.starts[k] + 8] = np.frombuffer((1 << 40).to_bytes(8, "little"), np.uint8)
    with pytest.raises(CorruptFileError, match="overruns"):
        decompress_level_chunks(enc, Segments(data, seg.starts, seg.sizes), counts)
    sizes = seg.sizes.copy()
    sizes[k] = 5
    with pytest.raises(CorruptFileError, match="no values-size header"):
        decompress_level_chunks(enc, Segments(seg.data, seg.starts, sizes), counts)
