"""zstd_frames: frames with raw literals (standard frames any zstd reads) and the modelled inflate cost."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import zstandard

from lancelot.encodings.compression import zstd_frames as zf

pytestmark = pytest.mark.skipif(not zf.raw_literals_available(), reason="no libzstd with ZSTD_c_literalCompressionMode")


def _text(n: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    words = np.array("lance pylance arrow parquet column page chunk buffer quick brown fox jumps".split())
    return " ".join(words[rng.integers(0, len(words), n)]).encode()


@pytest.mark.parametrize(
    "data",
    [b"", b"x", _text(50), _text(3000), np.random.default_rng(1).bytes(5000), bytes(70_000), _text(60_000)],
    ids=["empty", "one", "short", "text", "random", "zeros", "multi-block"],
)
@pytest.mark.parametrize("raw", [False, True])
def test_frames_are_standard_and_priced(data, raw):
    frame = zf.compress(data, 15, raw_literals=raw)
    assert zstandard.ZstdDecompressor().decompress(frame, max_output_size=len(data) + 1) == data
    assert pa.Codec("zstd").decompress(frame, decompressed_size=len(data)).to_pybytes() == data
    us = zf.inflate_us(frame, len(data))
    assert zf.FRAME_US <= us < 1000


def test_raw_literals_cost_less_to_inflate_and_a_few_more_bytes():
    data = _text(800)
    huffman, raw = zf.compress(data, 15, False), zf.compress(data, 15, True)
    assert len(raw) > len(huffman)
    assert zf.inflate_us(raw, len(data)) < zf.inflate_us(huffman, len(data)) - zf.TABLE_US / 2


def test_what_the_model_reads_from_a_frame():
    """An incompressible buffer is a raw block: the frame's and the bytes' cost only; zeros are an RLE
    block; text costs a compressed block, its sequences and (Huffman) literals."""
    noise = np.random.default_rng(2).bytes(4096)
    assert zf.inflate_us(zf.compress(noise, 15, False), 4096) == pytest.approx(zf.FRAME_US + 4 * zf.KIB_US)
    assert zf.inflate_us(zf.compress(bytes(4096), 15, False), 4096) < zf.FRAME_US + zf.BLOCK_US + 4 * zf.KIB_US
    text = _text(800)
    cost = zf.inflate_us(zf.compress(text, 15, False), len(text))
    assert cost > zf.FRAME_US + zf.BLOCK_US + zf.TABLE_US
    with pytest.raises(ValueError):
        zf.inflate_us(b"not a frame", 10)
