"""Flat, variable, constant and fixed-size-list: round trips and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from lancelot.encodings.compression import (
    ConstantBlock,
    FixedSizeListBlock,
    FixedWidthBlock,
    decompress,
    decompress_block,
    decompress_per_value,
)
from lancelot.encodings.compression.constant import compress_constant
from lancelot.encodings.compression.fixed_size_list import compress_fsl, compress_fsl_per_value
from lancelot.encodings.compression.flat import compress_flat
from lancelot.encodings.compression.variable import compress_variable, compress_variable_block
from lancelot.errors import CorruptFileError, UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from tests.encodings.helpers import var_block, var_list


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.float64])
def test_flat_round_trip(dtype):
    vals = np.random.default_rng(0).integers(-100, 100, 777).astype(dtype)
    enc, bufs = compress_flat(FixedWidthBlock(vals.view(np.uint8), vals.itemsize * 8, len(vals)))
    out = decompress(enc, bufs, len(vals))
    np.testing.assert_array_equal(out.as_dtype(dtype), vals)
    np.testing.assert_array_equal(decompress_block(enc, bufs[0], len(vals)).as_dtype(dtype), vals)


def test_flat_bits():
    bits = np.random.default_rng(1).random(1001) < 0.5
    enc, bufs = compress_flat(FixedWidthBlock(np.packbits(bits, bitorder="little"), 1, len(bits)))
    out = decompress(enc, bufs, len(bits))
    assert out.bits_per_value == 1
    np.testing.assert_array_equal(np.unpackbits(out.data, bitorder="little", count=1001).astype(bool), bits)


def test_flat_short_buffer_is_corrupt():
    enc = pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=32))
    with pytest.raises(CorruptFileError):
        decompress(enc, [np.zeros(10, np.uint8)], 3)
    with pytest.raises(CorruptFileError):
        decompress(enc, [], 3)
    with pytest.raises(CorruptFileError):
        decompress(pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=0)), [np.zeros(10, np.uint8)], 3)


@pytest.mark.parametrize("bits", [32, 64])
def test_variable_round_trip(bits):
    vals = [b"", b"a", b"hello", b"x" * 300, b"", b"end"]
    enc, bufs = compress_variable(var_block(vals, bits), bits)
    assert len(bufs[0]) % (bits // 8) == 0
    assert var_list(decompress(enc, bufs, len(vals))) == vals
    enc, bufs = compress_variable_block(var_block(vals, bits), bits)
    assert var_list(decompress_block(enc, bufs[0], len(vals))) == vals
    blk = var_block(vals, bits)
    assert decompress_per_value(enc, blk) is blk


def test_variable_empty():
    enc, bufs = compress_variable(var_block([]))
    assert var_list(decompress(enc, bufs, 0)) == []


def test_variable_bad_offsets_are_corrupt():
    enc, bufs = compress_variable(var_block([b"ab", b"cd"]))
    bad = bufs[0].copy()
    bad[4:8] = np.array([100000], "<u4").view(np.uint8)  # offset past the buffer
    with pytest.raises(CorruptFileError):
        decompress(enc, [bad], 2)
    bad = bufs[0].copy()
    bad[4:8] = np.array([1], "<u4").view(np.uint8)  # decreasing
    with pytest.raises(CorruptFileError):
        decompress(enc, [bad], 2)
    with pytest.raises(CorruptFileError):
        decompress(enc, [bufs[0][:6]], 2)
    enc_b, bufs_b = compress_variable_block(var_block([b"ab", b"cd"]))
    for cut in (3, 9, 12):
        with pytest.raises(CorruptFileError):
            decompress_block(enc_b, bufs_b[0][:cut], 2)
    bad = bufs_b[0].copy()
    bad[4:8] = np.array([7], "<u4").view(np.uint8)  # bytes_start misaligned
    with pytest.raises(CorruptFileError):
        decompress_block(enc_b, bad, 2)


def test_variable_unsupported_offsets():
    enc = pb.CompressiveEncoding(variable=pb.Variable(offsets=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=16))))
    with pytest.raises(UnsupportedEncodingError):
        decompress(enc, [np.zeros(16, np.uint8)], 1)


def test_constant():
    enc, bufs = compress_constant(b"\x07\x00\x00\x00")
    assert bufs == []
    out = decompress(enc, [], 5)
    assert isinstance(out, ConstantBlock) and out.value == b"\x07\x00\x00\x00" and out.num_values == 5
    enc, _ = compress_constant(None)
    assert decompress_block(enc, np.zeros(0, np.uint8), 3).value is None


def test_fsl_round_trip_with_validity():
    rng = np.random.default_rng(3)
    rows, d0, d1 = 37, 3, 2
    items = rng.integers(0, 1000, rows * d0 * d1).astype(np.int32)
    v_outer = rng.random(rows * d0) < 0.8
    v_inner = rng.random(rows * d0 * d1) < 0.7
    inner = FixedSizeListBlock(FixedWidthBlock(items.view(np.uint8), 32, rows * d0 * d1), d1, rows * d0, v_inner)
    block = FixedSizeListBlock(inner, d0, rows, v_outer)
    for compress_fn in ("mini", "zip"):
        if compress_fn == "mini":
            enc, bufs = compress_fsl(block)
            assert len(bufs) == 3
            out = decompress(enc, bufs, rows)
        else:
            enc, zipped = compress_fsl_per_value(block)
            assert zipped.num_values == rows
            out = decompress_per_value(enc, zipped)
        assert out.dimension == d0 and out.num_values == rows
        np.testing.assert_array_equal(out.validity, v_outer)
        assert out.child.dimension == d1 and out.child.num_values == rows * d0
        np.testing.assert_array_equal(out.child.validity, v_inner)
        np.testing.assert_array_equal(out.child.child.as_dtype(np.int32), items)


def test_fsl_wrong_buffer_count_is_corrupt():
    enc = pb.CompressiveEncoding(
        fixed_size_list=pb.FixedSizeList(
            items_per_value=2, has_validity=True, values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=8))
        )
    )
    with pytest.raises(CorruptFileError):
        decompress(enc, [np.zeros(8, np.uint8)], 4)
    with pytest.raises(CorruptFileError):
        decompress(enc, [np.zeros(0, np.uint8), np.zeros(8, np.uint8)], 4)
