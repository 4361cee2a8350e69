"""Interop: our compression decoders read the value buffers pylance 14.0.2 writes.

Each test writes one column with pylance (LanceFileWriter) at 2.1 and 2.2 with
data that makes pylance choose a given technique, checks that it did choose it,
cuts the page into mini-block chunks (a small test-only parser of the chunk
envelope; the real one lives in encodings/structural) and checks that our
decoders give back the source values.  Only non-null, non-nested columns, so
the chunks carry no rep/def buffers.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pyarrow as pa
import pytest

from lancelot.encodings.compression import (
    FixedSizeListBlock,
    VariableWidthBlock,
    decompress,
    decompress_block,
    decompress_per_value,
)
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from tests.encodings.helpers import dictionary_lookup, fixed_values, miniblock_chunks, read_pages, variable_values
from tests.helpers import pylance_write_column

VERSIONS = ["2.1", "2.2"]
#: a non-nullable column: its chunks carry no def buffer
write_column = partial(pylance_write_column, nullable=False)


# ----------------------------------------------------------------------------- helpers


def decode_miniblock_page(layout: pb.PageLayout, bufs):
    mb = layout.mini_block_layout
    blocks = [decompress(mb.value_compression, vbufs, n) for n, vbufs in miniblock_chunks(mb, bufs)]
    if mb.HasField("dictionary"):
        items = decompress_block(mb.dictionary, bufs[2], mb.num_dictionary_items)
        blocks = [dictionary_lookup(items, b) for b in blocks]
    return blocks


def only_page(path):
    pages = read_pages(path)
    assert len(pages) == 1
    return pages[0]


# ----------------------------------------------------------------------------- flat / variable / constant


@pytest.mark.parametrize("version", VERSIONS)
def test_flat_booleans(tmp_path, version):
    rng = np.random.default_rng(1)
    src = rng.random(5000) < 0.3
    _, layout, bufs = only_page(write_column(tmp_path / "b.lance", pa.array(src), version))
    assert layout.mini_block_layout.value_compression.flat.bits_per_value == 1
    got = np.concatenate([fixed_values(b, bool) for b in decode_miniblock_page(layout, bufs)])
    np.testing.assert_array_equal(got, src)


@pytest.mark.parametrize("version", VERSIONS)
def test_variable_strings(tmp_path, version):
    src = [str(i) for i in range(9000)]  # max length < 5: no FSST
    _, layout, bufs = only_page(write_column(tmp_path / "s.lance", pa.array(src), version))
    assert layout.mini_block_layout.value_compression.WhichOneof("compression") == "variable"
    blocks = decode_miniblock_page(layout, bufs)
    assert len(blocks) > 1
    got = [v for b in blocks for v in variable_values(b)]
    assert got == [s.encode() for s in src]


@pytest.mark.parametrize("version", VERSIONS)
def test_variable_large_binary(tmp_path, version):
    src = [bytes([i % 251]) * (i % 17) for i in range(3000)]
    _, layout, bufs = only_page(write_column(tmp_path / "lb.lance", pa.array(src, pa.large_binary()), version))
    enc = layout.mini_block_layout.value_compression
    assert enc.variable.offsets.flat.bits_per_value == 64
    got = [v for b in decode_miniblock_page(layout, bufs) for v in variable_values(b)]
    assert got == src


@pytest.mark.parametrize("version", VERSIONS)
def test_fixed_size_list_flat(tmp_path, version):
    rng = np.random.default_rng(2)
    items = rng.random(3000 * 4).astype(np.float32)
    arr = pa.FixedSizeListArray.from_arrays(pa.array(items), 4)
    _, layout, bufs = only_page(write_column(tmp_path / "fsl.lance", arr, version))
    assert layout.mini_block_layout.value_compression.fixed_size_list.items_per_value == 4
    blocks = decode_miniblock_page(layout, bufs)
    assert all(isinstance(b, FixedSizeListBlock) and b.dimension == 4 for b in blocks)
    got = np.concatenate([fixed_values(b.child, np.float32) for b in blocks])
    np.testing.assert_array_equal(got, items)


# ----------------------------------------------------------------------------- bitpacking


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "dtype,hi", [(np.int8, 50), (np.uint16, 3000), (np.int32, 1 << 20), (np.int64, 1 << 40), (np.uint64, 1 << 50)]
)
def test_inline_bitpacking(tmp_path, version, dtype, hi):
    rng = np.random.default_rng(4)
    src = rng.integers(0, hi, 5000, dtype=np.uint64).astype(dtype)
    src[1234] = 0
    _, layout, bufs = only_page(write_column(tmp_path / "bp.lance", pa.array(src), version))
    enc = layout.mini_block_layout.value_compression
    assert enc.inline_bitpacking.uncompressed_bits_per_value == np.dtype(dtype).itemsize * 8
    got = np.concatenate([fixed_values(b, dtype) for b in decode_miniblock_page(layout, bufs)])
    np.testing.assert_array_equal(got, src)


@pytest.mark.parametrize("version", VERSIONS)
def test_inline_bitpacking_mixed_widths(tmp_path, version):
    """Chunks of different widths (and a negative outlier: full width)."""
    src = np.concatenate([np.arange(1024) % 3, np.arange(1024) * 1000, np.full(1024, -5), np.arange(999)])
    src = src.astype(np.int32)
    _, layout, bufs = only_page(write_column(tmp_path / "bpm.lance", pa.array(src), version))
    assert layout.mini_block_layout.value_compression.WhichOneof("compression") == "inline_bitpacking"
    got = np.concatenate([fixed_values(b, np.int32) for b in decode_miniblock_page(layout, bufs)])
    np.testing.assert_array_equal(got, src)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "n,kind", [(800, "inline_bitpacking"), (5000, "out_of_line_bitpacking"), (70000, "out_of_line_bitpacking")]
)
def test_definition_levels_block_bitpacking(tmp_path, version, n, kind):
    """Def levels of mini-block chunks are block-compressed: inline or out-of-line bitpacking."""
    rng = np.random.default_rng(5)
    vals = rng.integers(0, 100, n).astype(np.int32)
    nulls = rng.random(n) < 0.3
    path = pylance_write_column(tmp_path / "nl.lance", pa.array(vals, mask=nulls), version)
    for _, layout, bufs in read_pages(path):
        mb = layout.mini_block_layout
        assert mb.def_compression.WhichOneof("compression") == kind
        got_nulls, got_vals = [], []
        for num, num_levels, _, def_buf, vbufs in miniblock_chunks(mb, bufs, with_levels=True):
            assert num_levels == num
            levels = decompress_block(mb.def_compression, def_buf, num_levels)
            got_nulls.append(levels.as_dtype("<u2") != 0)
            got_vals.append(fixed_values(decompress(mb.value_compression, vbufs, num), np.int32))
        got_nulls = np.concatenate(got_nulls)
        np.testing.assert_array_equal(got_nulls, nulls[: len(got_nulls)])
        np.testing.assert_array_equal(np.concatenate(got_vals)[~got_nulls], vals[: len(got_nulls)][~got_nulls])


# ----------------------------------------------------------------------------- FSST, RLE, BSS, general


def text_values(rng, n: int, words: int = 8) -> list[str]:
    vocab = np.array(["lorem", "ipsum", "dolor", "sit", "amet", "ünïcødé", "x\xff", "consectetur", "42"])
    return [" ".join(rng.choice(vocab, rng.integers(0, words))) for _ in range(n)]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("large", [False, True])
def test_fsst_miniblock(tmp_path, version, large):
    rng = np.random.default_rng(6)
    src = text_values(rng, 8000)
    arr = pa.array(src, pa.large_string() if large else pa.string())
    _, layout, bufs = only_page(write_column(tmp_path / "f.lance", arr, version))
    enc = layout.mini_block_layout.value_compression
    assert enc.WhichOneof("compression") == "fsst"
    got = [v for b in decode_miniblock_page(layout, bufs) for v in variable_values(b)]
    assert got == [s.encode() for s in src]


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_binary_all_bytes(tmp_path, version):
    """Binary data with every byte value (0xFF runs exercise the escape parsing)."""
    rng = np.random.default_rng(7)
    base = [b"\xff\xff\xffabc", b"\xff", b"hello world", b"\x00\xff\x01", b"\xff" * 9]
    src = [base[i % 5] + bytes(rng.integers(0, 256, rng.integers(0, 12), dtype=np.uint8)) for i in range(6000)]
    meta = {"lance-encoding:compression": "fsst"}  # pylance picks FSST for binary only when asked
    _, layout, bufs = only_page(write_column(tmp_path / "fb.lance", pa.array(src, pa.binary()), version, meta))
    assert layout.mini_block_layout.value_compression.WhichOneof("compression") == "fsst"
    got = [v for b in decode_miniblock_page(layout, bufs) for v in variable_values(b)]
    assert got == src


def full_zip_variable_values(layout: pb.PageLayout, bufs) -> VariableWidthBlock:
    """Unzip a full-zip page of variable values without rep/def (test-only)."""
    fz = layout.full_zip_layout
    assert fz.bits_rep == 0 and fz.bits_def == 0 and fz.bits_per_offset == 32
    width = len(bufs[1]) // (fz.num_items + 1)  # the repetition index is u16/u32/u64 as the data size needs
    data, index = bufs[0], bufs[1].view(f"<u{width}")
    starts, ends = index[:-1].astype(np.int64) + 4, index[1:].astype(np.int64)
    offs = np.zeros(len(starts) + 1, np.uint64)
    offs[1:] = np.cumsum(ends - starts)
    body = np.concatenate([data[a:b] for a, b in zip(starts, ends)])
    return VariableWidthBlock(offs, body, len(starts))


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_full_zip(tmp_path, version):
    src = [(f"abc {i} " * 100).encode() for i in range(300)]
    _, layout, bufs = only_page(write_column(tmp_path / "fz.lance", pa.array(src, pa.string()), version))
    enc = layout.full_zip_layout.value_compression
    assert enc.WhichOneof("compression") == "fsst"
    out = decompress_per_value(enc, full_zip_variable_values(layout, bufs))
    assert variable_values(out) == src


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("meta", [None, {"lance-encoding:compression": "lz4"}])
def test_general_zstd_full_zip(tmp_path, version, meta):
    """Large values: each value zstd-compressed separately (pylance picks zstd even when lz4 is asked)."""
    rng = np.random.default_rng(8)
    src = [rng.bytes(100) * 400 + bytes([i]) for i in range(25)]
    _, layout, bufs = only_page(write_column(tmp_path / "g.lance", pa.array(src, pa.binary()), version, meta))
    enc = layout.full_zip_layout.value_compression
    assert enc.general.compression.scheme == pb.COMPRESSION_ALGORITHM_ZSTD
    out = decompress_per_value(enc, full_zip_variable_values(layout, bufs))
    assert variable_values(out) == src


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.float64])
def test_rle(tmp_path, version, dtype):
    rng = np.random.default_rng(9)
    src = np.repeat(rng.integers(-100, 100, 120), rng.integers(1, 600, 120)).astype(dtype)
    _, layout, bufs = only_page(write_column(tmp_path / "r.lance", pa.array(src), version))
    enc = layout.mini_block_layout.value_compression
    assert enc.rle.run_lengths.flat.bits_per_value == 8
    got = np.concatenate([fixed_values(b, dtype) for b in decode_miniblock_page(layout, bufs)])
    np.testing.assert_array_equal(got, src)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scheme", ["zstd", "lz4"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_byte_stream_split_general(tmp_path, version, scheme, dtype):
    rng = np.random.default_rng(10)
    src = np.cumsum(rng.random(20000)).astype(dtype)
    meta = {"lance-encoding:compression": scheme, "lance-encoding:bss": "on"}
    _, layout, bufs = only_page(write_column(tmp_path / "bss.lance", pa.array(src), version, meta))
    enc = layout.mini_block_layout.value_compression
    assert enc.general.compression.scheme == (
        pb.COMPRESSION_ALGORITHM_ZSTD if scheme == "zstd" else pb.COMPRESSION_ALGORITHM_LZ4
    )
    assert enc.general.values.WhichOneof("compression") == "byte_stream_split"
    got = np.concatenate([fixed_values(b, dtype) for b in decode_miniblock_page(layout, bufs)])
    np.testing.assert_array_equal(got, src)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scheme", ["zstd", "lz4"])
def test_general_over_bitpacking(tmp_path, version, scheme):
    rng = np.random.default_rng(11)
    src = rng.integers(0, 1 << 30, 20000).astype(np.int32)
    _, layout, bufs = only_page(
        write_column(
            tmp_path / "gb.lance", pa.array(src), version, {"lance-encoding:compression": scheme}, nullable=False
        )
    )
    enc = layout.mini_block_layout.value_compression
    assert enc.general.values.WhichOneof("compression") == "inline_bitpacking"
    got = np.concatenate([fixed_values(b, np.int32) for b in decode_miniblock_page(layout, bufs)])
    np.testing.assert_array_equal(got, src)


# ----------------------------------------------------------------------------- dictionary


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("meta", [None, {"lance-encoding:compression": "zstd"}])
def test_dictionary_strings(tmp_path, version, meta):
    rng = np.random.default_rng(12)
    words = np.array([f"category-{i}" for i in range(300)])
    src = list(rng.choice(words, 20000))
    _, layout, bufs = only_page(write_column(tmp_path / "d.lance", pa.array(src), version, meta))
    mb = layout.mini_block_layout
    assert mb.HasField("dictionary") and mb.num_dictionary_items == len(set(src))
    if version == "2.2":
        assert mb.dictionary.general.compression.scheme == pb.COMPRESSION_ALGORITHM_LZ4
    else:
        assert mb.dictionary.WhichOneof("compression") == "variable"
    got = [v for b in decode_miniblock_page(layout, bufs) for v in variable_values(b)]
    assert got == [s.encode() for s in src]


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_dictionary_fixed_width_2_2(tmp_path, dtype):
    rng = np.random.default_rng(9)
    src = np.repeat(rng.integers(-100, 100, 120), rng.integers(1, 600, 120)).astype(dtype)
    _, layout, bufs = only_page(write_column(tmp_path / "df.lance", pa.array(src), "2.2"))
    mb = layout.mini_block_layout
    assert mb.HasField("dictionary")
    assert mb.value_compression.WhichOneof("compression") == "rle"
    got = np.concatenate([fixed_values(b, dtype) for b in decode_miniblock_page(layout, bufs)])
    np.testing.assert_array_equal(got, src)


@pytest.mark.parametrize("version", VERSIONS)
def test_dictionary_with_nulls(tmp_path, version):
    rng = np.random.default_rng(13)
    words = np.array([f"w{i:04d}" for i in range(50)])
    src = rng.choice(words, 6000)
    nulls = rng.random(6000) < 0.2
    arr = pa.array(src, mask=nulls)
    for _, layout, bufs in read_pages(pylance_write_column(tmp_path / "dn.lance", arr, version)):
        mb = layout.mini_block_layout
        assert mb.HasField("dictionary")
        items = decompress_block(mb.dictionary, bufs[2], mb.num_dictionary_items)
        got_valid, got = [], []
        for num, num_levels, _, def_buf, vbufs in miniblock_chunks(mb, bufs, with_levels=True):
            valid = decompress_block(mb.def_compression, def_buf, num_levels).as_dtype("<u2") == 0
            block = dictionary_lookup(items, decompress(mb.value_compression, vbufs, num), valid)
            got_valid.append(valid)
            got += variable_values(block)
        valid = np.concatenate(got_valid)
        np.testing.assert_array_equal(valid, ~nulls[: len(valid)])
        assert [g for g, v in zip(got, valid) if v] == [s.encode() for s, v in zip(src, valid) if v]


# ----------------------------------------------------------------------------- packed structs


@pytest.mark.parametrize("version", VERSIONS)
def test_packed_struct(tmp_path, version):
    rng = np.random.default_rng(14)
    a, b, c = rng.integers(0, 1000, 3000).astype(np.int32), rng.random(3000), rng.integers(0, 9, 3000).astype(np.int8)
    arr = pa.StructArray.from_arrays([pa.array(a), pa.array(b), pa.array(c)], ["a", "b", "c"])
    _, layout, bufs = only_page(write_column(tmp_path / "ps.lance", arr, version, {"packed": "true"}))
    enc = layout.mini_block_layout.value_compression
    assert list(enc.packed_struct.bits_per_value) == [32, 64, 8]
    blocks = decode_miniblock_page(layout, bufs)
    for i, (src, dt) in enumerate([(a, np.int32), (b, np.float64), (c, np.int8)]):
        np.testing.assert_array_equal(np.concatenate([fixed_values(blk.children[i], dt) for blk in blocks]), src)


def test_variable_packed_struct_2_2(tmp_path):
    rng = np.random.default_rng(15)
    a = rng.integers(0, 1000, 3000).astype(np.int32)
    c = [("x" * int(k)) + str(i) for i, k in enumerate(rng.integers(0, 20, 3000))]
    d = rng.random(3000)
    arr = pa.StructArray.from_arrays([pa.array(a), pa.array(c), pa.array(d)], ["a", "c", "d"])
    _, layout, bufs = only_page(write_column(tmp_path / "vps.lance", arr, "2.2", {"packed": "true"}))
    enc = layout.full_zip_layout.value_compression
    assert enc.WhichOneof("compression") == "variable_packed_struct"
    out = decompress_per_value(enc, full_zip_variable_values(layout, bufs))
    np.testing.assert_array_equal(fixed_values(out.children[0], np.int32), a)
    assert variable_values(out.children[1]) == [s.encode() for s in c]
    np.testing.assert_array_equal(fixed_values(out.children[2], np.float64), d)
