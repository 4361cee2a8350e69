"""Round trips and bad input for bitpacking, RLE, BSS, general, FSST, dictionary and packed structs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelot.encodings.compression import (
    FixedWidthBlock,
    StructBlock,
    VariableWidthBlock,
    decompress,
    decompress_block,
    decompress_per_value,
)
from lancelot.encodings.compression.bitpacking import (
    compress_inline_bitpacking,
    compress_out_of_line_bitpacking,
    inline_bitpacking_size,
    pack_chunks,
    pack_inline_chunks,
    unpack_chunks,
)
from lancelot.encodings.compression.byte_stream_split import compress_byte_stream_split
from lancelot.encodings.compression.fsst import SymbolTable, fsst_decode, parse_symbol_table, serialize_symbol_table
from lancelot.encodings.compression.general import (
    buffer_compression,
    compress_buffer,
    compress_values,
    decompress_buffer,
    general_encoding,
)
from lancelot.encodings.compression.packed import compress_packed_struct, compress_variable_packed_struct
from lancelot.encodings.compression.rle import compress_rle, compress_rle_block, rle_size
from lancelot.encodings.compression.variable import variable_encoding
from lancelot.encodings.compression.write_fsst import compress_fsst, compress_fsst_per_value, fsst_encode, train_fsst
from lancelot.errors import CorruptFileError, LanceError, UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from tests.encodings.helpers import fixed, var_block, var_list

DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64]


# ----------------------------------------------------------------------------- bitpacking


@pytest.mark.parametrize("dtype", DTYPES)
def test_fastlanes_kernels_all_widths(dtype):
    t = np.dtype(dtype).itemsize * 8
    rng = np.random.default_rng(t)
    for w in range(1, t + 1):
        full = rng.integers(0, 1 << 63, (3, 1024), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        vals = (full & np.uint64((1 << w) - 1)).astype(dtype)
        packed = pack_chunks(vals, w, t)
        assert len(packed) == 3 * 128 * w
        np.testing.assert_array_equal(unpack_chunks(packed, w, t), vals)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 1023, 1024, 5000])
def test_inline_page_pack_matches_per_chunk_pack(dtype, n):
    """The one-pass page packer (numba) gives the bytes of packing each chunk with ``pack_chunks``: every bit
    width (one per chunk), a zero-width chunk, a zero-padded last chunk."""
    t = np.dtype(dtype).itemsize * 8
    rng = np.random.default_rng(n + t)
    widths = np.arange(n) // 1024 * 7 % (t + 1)  # chunk k: width 7k mod (t + 1), 0 first
    vals = (
        rng.integers(0, 1 << 63, n, dtype=np.uint64) & ((np.uint64(1) << widths.astype(np.uint64)) - np.uint64(1))
    ).astype(dtype)
    packed, starts = pack_inline_chunks(FixedWidthBlock(vals.view(np.uint8), t, n))
    padded = np.zeros(-(-n // 1024) * 1024, dtype)
    padded[:n] = vals
    expected = []
    for chunk in padded.reshape(-1, 1024):
        w = int(chunk.max()).bit_length()
        expected += [np.array([w], dtype).view(np.uint8), pack_chunks(chunk[None, :], w, t)]
    np.testing.assert_array_equal(packed, np.concatenate(expected))
    assert starts[-1] == len(packed)


def test_fastlanes_layout_known_value():
    """Value i of a 1-bit u8 chunk: index FL_ORDER[r//8]*16 + (r%8)*128 + lane -> bit r of byte lane."""
    vals = np.zeros((1, 1024), np.uint8)
    vals[0, 3 * 128 + 5] = 1  # row 3, lane 5 (T=8: one group of 8 rows)
    packed = pack_chunks(vals, 1, 8)
    expected = np.zeros(128, np.uint8)
    expected[5] = 1 << 3
    np.testing.assert_array_equal(packed, expected)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 1000, 1024, 3000])
def test_inline_bitpacking_round_trip(dtype, n):
    rng = np.random.default_rng(n)
    vals = (rng.integers(0, 1000, n) * rng.integers(0, 2, n)).astype(dtype)
    enc, bufs = compress_inline_bitpacking(fixed(vals))
    assert len(bufs[0]) == inline_bitpacking_size(fixed(vals))
    np.testing.assert_array_equal(decompress(enc, bufs, n).as_dtype(dtype), vals)
    np.testing.assert_array_equal(decompress_block(enc, bufs[0], n).as_dtype(dtype), vals)


def test_inline_bitpacking_zero_width_chunk():
    vals = np.concatenate([np.zeros(1024), np.arange(1024)]).astype(np.uint32)
    enc, bufs = compress_inline_bitpacking(fixed(vals))
    assert len(bufs[0]) == 4 + 4 + 1024 * 10 // 8
    np.testing.assert_array_equal(decompress(enc, bufs, 2048).as_dtype(np.uint32), vals)


def test_inline_bitpacking_bad_input():
    enc, bufs = compress_inline_bitpacking(fixed(np.arange(1024, dtype=np.uint16)))
    bad = bufs[0].copy()
    bad[0] = 17  # width > 16
    with pytest.raises(CorruptFileError):
        decompress(enc, [bad], 1024)
    with pytest.raises(CorruptFileError):
        decompress(enc, [bufs[0][:100]], 1024)
    with pytest.raises(CorruptFileError):
        decompress(enc, [bufs[0]], 2000)  # asks for a second chunk that is not there
    bad_enc = pb.CompressiveEncoding(inline_bitpacking=pb.InlineBitpacking(uncompressed_bits_per_value=12))
    with pytest.raises(UnsupportedEncodingError):
        decompress(bad_enc, bufs, 1024)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,hi", [(5, 3), (1024, 50), (1100, 2), (2000, 1000), (3000, 200)])
def test_out_of_line_round_trip(dtype, n, hi):
    vals = np.random.default_rng(n).integers(0, hi, n).astype(dtype)
    enc, bufs = compress_out_of_line_bitpacking(fixed(vals))
    np.testing.assert_array_equal(decompress_block(enc, bufs[0], n).as_dtype(dtype), vals)


def test_out_of_line_bad_input():
    enc, bufs = compress_out_of_line_bitpacking(fixed(np.arange(3000, dtype=np.uint16) % 7))
    with pytest.raises(CorruptFileError):
        decompress_block(enc, bufs[0][:50], 3000)
    enc.out_of_line_bitpacking.values.flat.bits_per_value = 40
    with pytest.raises(CorruptFileError):
        decompress_block(enc, bufs[0], 3000)


# ----------------------------------------------------------------------------- RLE and BSS


@given(
    st.lists(st.tuples(st.integers(-3, 3), st.integers(1, 700)), min_size=1, max_size=30),
    st.sampled_from([np.int8, np.int16, np.int32, np.float64]),
)
@settings(max_examples=40, deadline=None)
def test_rle_round_trip(runs, dtype):
    vals = np.repeat([v for v, _ in runs], [k for _, k in runs]).astype(dtype)
    enc, bufs = compress_rle(fixed(vals))
    assert len(bufs[1]) * (vals.itemsize + 1) == rle_size(fixed(vals))
    assert int(bufs[1].max()) <= 255
    np.testing.assert_array_equal(decompress(enc, bufs, len(vals)).as_dtype(dtype), vals)
    # fewer values than the runs cover: the surplus is dropped
    np.testing.assert_array_equal(decompress(enc, bufs, len(vals) // 2).as_dtype(dtype), vals[: len(vals) // 2])


def test_rle_bad_input():
    enc, bufs = compress_rle(fixed(np.repeat(np.arange(5, dtype=np.int32), 10)))
    with pytest.raises(CorruptFileError):
        decompress(enc, bufs, 51)  # runs cover only 50
    with pytest.raises(CorruptFileError):
        decompress(enc, [bufs[0][:-1], bufs[1]], 50)
    with pytest.raises(CorruptFileError):
        decompress(enc, [bufs[0], bufs[1][:-1]], 40)
    with pytest.raises(CorruptFileError):
        decompress(enc, bufs[:1], 40)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_byte_stream_split_round_trip(dtype):
    vals = np.random.default_rng(1).random(999).astype(dtype)
    enc, bufs = compress_byte_stream_split(fixed(vals))
    assert bufs[0][:999].tobytes() == vals.view(np.uint8)[0 :: vals.itemsize].tobytes()
    np.testing.assert_array_equal(decompress(enc, bufs, 999).as_dtype(dtype), vals)
    with pytest.raises(CorruptFileError):
        decompress(enc, bufs, 998)


# ----------------------------------------------------------------------------- general


@pytest.mark.parametrize("scheme", ["lz4", "zstd"])
def test_general_buffer_round_trip(scheme):
    bc = buffer_compression(scheme)
    data = np.frombuffer(b"lance " * 5000 + bytes(range(256)), np.uint8)
    packed = compress_buffer(bc, data)
    prefix = 4 if scheme == "lz4" else 8
    assert int.from_bytes(packed[:prefix].tobytes(), "little") == len(data)
    assert decompress_buffer(bc, packed).tobytes() == data.tobytes()
    assert len(decompress_buffer(bc, compress_buffer(bc, data[:0]))) == 0


def test_general_bare_zstd_frame():
    import pyarrow as pa

    data = b"abc" * 1000
    frame = np.frombuffer(pa.Codec("zstd").compress(data, asbytes=True), np.uint8)
    assert decompress_buffer(buffer_compression("zstd"), frame).tobytes() == data


@pytest.mark.parametrize("scheme", ["lz4", "zstd"])
def test_general_corrupt(scheme):
    bc = buffer_compression(scheme)
    packed = compress_buffer(bc, np.frombuffer(b"x" * 10000, np.uint8))
    with pytest.raises(CorruptFileError):
        decompress_buffer(bc, packed[:-5])
    huge = packed.copy()
    huge[:4] = 0xFF  # claims gigabytes
    with pytest.raises(CorruptFileError):
        decompress_buffer(bc, huge)
    garbage = packed.copy()
    garbage[12:] = 7
    with pytest.raises(LanceError):
        decompress_buffer(bc, garbage)
    with pytest.raises(UnsupportedEncodingError):
        decompress_buffer(pb.BufferCompression(scheme=0), packed)


def test_general_miniblock_and_per_value():
    bc = buffer_compression("zstd", 3)
    vals = np.arange(3000, dtype=np.int64) % 17
    inner, bufs = compress_rle(fixed(vals))
    enc = general_encoding(bc, inner)
    out = decompress(enc, [compress_buffer(bc, bufs[0]), bufs[1]], 3000)  # only the first buffer is wrapped
    np.testing.assert_array_equal(out.as_dtype(np.int64), vals)
    strings = [bytes([i % 256]) * (i * 7 % 300) for i in range(100)]
    enc = general_encoding(bc, variable_encoding(32))
    out = decompress_per_value(enc, compress_values(bc, var_block(strings)))
    assert var_list(out) == strings


# ----------------------------------------------------------------------------- FSST


def sample_strings(n: int, seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    vocab = [b"alpha", b"beta", b"\xff\xff", b"gamma delta", b"\x00", b"epsilon", b"\xffz"]
    return [
        b" ".join(rng.choice(vocab, rng.integers(0, 8)))
        + bytes(rng.integers(0, 256, rng.integers(0, 3), dtype=np.uint8))
        for _ in range(n)
    ]


def test_fsst_round_trip_and_table_serialization():
    strings = sample_strings(8000)
    table = train_fsst(var_block(strings))
    assert table.switch_on and 0 < table.n_symbols <= 255
    raw = serialize_symbol_table(table)
    assert len(raw) == 2312
    again = parse_symbol_table(raw)
    np.testing.assert_array_equal(again.symbols, table.symbols)
    compressed = fsst_encode(table, var_block(strings))
    assert len(compressed.data) < sum(map(len, strings)) / 2
    assert var_list(fsst_decode(again, compressed)) == strings
    enc, bufs = compress_fsst(var_block(strings[:300]), table)
    assert var_list(decompress(enc, bufs, 300)) == strings[:300]
    enc, values = compress_fsst_per_value(var_block(strings), table)
    assert var_list(decompress_per_value(enc, values)) == strings


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 9, 1001])
def test_fsst_encode_groups_edges(n):
    """The encoder parses strings in interleaved groups: any count (fewer than the groups too), empty strings,
    strings ending in the last bytes of the data, and blocks whose offsets do not start at 0."""
    table = train_fsst(var_block(sample_strings(4000, seed=3)))
    strings = [b"", *sample_strings(n, seed=n), b"alpha\x00"][: n + 2 if n else 0]
    offs = np.concatenate([[0], np.cumsum([len(x) for x in strings], dtype=np.int64)]).astype(np.uint32)
    data = np.frombuffer(b"".join(strings), np.uint8)
    for shift in (0, 5):  # offsets starting at 5 within the data buffer
        block = VariableWidthBlock(offs + shift, np.concatenate([np.full(shift, 7, np.uint8), data]), len(strings))
        assert var_list(fsst_decode(table, fsst_encode(table, block))) == strings


def test_fsst_small_input_switch_off():
    strings = [b"tiny", b"strings"]
    table = train_fsst(var_block(strings))
    assert not table.switch_on
    enc, bufs = compress_fsst(var_block(strings))
    assert var_list(decompress(enc, bufs, 2)) == strings


def test_fsst_handmade_table():
    table = SymbolTable(
        np.array([list(b"hello\0\0\0"), list(b"ab\0\0\0\0\0\0")], np.uint8), np.array([5, 2], np.uint8), True
    )
    codes = bytes([0, 255, 0xFF, 1, 255, ord("!")])  # hello, escaped 0xFF, ab, escaped !
    block = VariableWidthBlock(np.array([0, 6], np.uint32), np.frombuffer(codes, np.uint8), 1)
    assert var_list(fsst_decode(parse_symbol_table(serialize_symbol_table(table)), block)) == [b"hello\xffab!"]


def test_fsst_corrupt():
    table = SymbolTable(np.array([list(b"hello\0\0\0")], np.uint8), np.array([5], np.uint8), True)
    raw = serialize_symbol_table(table)

    def run(codes: bytes, offsets=None, tab=raw):
        offs = np.array(offsets if offsets is not None else [0, len(codes)], np.uint32)
        block = VariableWidthBlock(offs, np.frombuffer(codes, np.uint8), len(offs) - 1)
        return fsst_decode(parse_symbol_table(tab), block)

    with pytest.raises(CorruptFileError):
        run(bytes([3]))  # code beyond the table
    with pytest.raises(CorruptFileError):
        run(bytes([0, 255]))  # ends with an escape
    with pytest.raises(CorruptFileError):
        run(bytes([255, 65, 0]), [0, 1, 3])  # first string ends inside an escape
    with pytest.raises(CorruptFileError):
        run(bytes([0]), [0, 5])  # offsets past the data
    with pytest.raises(CorruptFileError):
        run(bytes([0]), tab=b"\0" * 2312)  # bad magic
    with pytest.raises(CorruptFileError):
        run(bytes([0]), tab=raw[:12])  # truncated table
    bad_len = bytearray(raw)
    bad_len[8 + 8] = 9  # symbol length 9
    with pytest.raises(CorruptFileError):
        run(bytes([0]), tab=bytes(bad_len))


# ----------------------------------------------------------------------------- packed structs


def test_packed_struct_round_trips():
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, 9, 100).astype(np.int16), rng.random(100)
    enc, bufs = compress_packed_struct(StructBlock([fixed(a), fixed(b)], 100))
    out = decompress(enc, bufs, 100)
    np.testing.assert_array_equal(out.children[0].as_dtype(np.int16), a)
    np.testing.assert_array_equal(out.children[1].as_dtype(np.float64), b)
    strings = [b"x" * int(k) for k in rng.integers(0, 9, 100)]
    enc, rows = compress_variable_packed_struct(StructBlock([fixed(a), var_block(strings), fixed(b)], 100))
    out = decompress_per_value(enc, rows)
    np.testing.assert_array_equal(out.children[0].as_dtype(np.int16), a)
    assert var_list(out.children[1]) == strings
    np.testing.assert_array_equal(out.children[2].as_dtype(np.float64), b)
    # a row cut short: the variable field overruns it
    cut = VariableWidthBlock(np.asarray(rows.offsets).copy(), rows.data, 100)
    cut.offsets[1] -= 1
    with pytest.raises(CorruptFileError):
        decompress_per_value(enc, cut)
    with pytest.raises(CorruptFileError):
        decompress(
            pb.CompressiveEncoding(
                packed_struct=pb.PackedStruct(
                    bits_per_value=[16, 64], values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=72))
                )
            ),
            [bufs[0]],
            100,
        )


def test_variable_packed_struct_zero_length_rows():
    """A row of no bytes (a null item in full-zip) decodes as zeros / an empty value; other rows as written."""
    rng = np.random.default_rng(3)
    a, b = rng.integers(1, 9, 50).astype(np.int32), rng.random(50)
    strings = [b"z" * int(k) for k in rng.integers(0, 5, 50)]
    enc, rows = compress_variable_packed_struct(StructBlock([fixed(a), var_block(strings), fixed(b)], 50))
    offs = np.asarray(rows.offsets, np.int64)
    null = rng.random(50) < 0.3
    null[[0, 49]] = True
    keep = np.repeat(~null, np.diff(offs))
    lens = np.where(null, 0, np.diff(offs))
    new_offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.uint32)
    out = decompress_per_value(enc, VariableWidthBlock(new_offs, rows.data[keep], 50))
    np.testing.assert_array_equal(out.children[0].as_dtype(np.int32), np.where(null, 0, a))
    assert var_list(out.children[1]) == [b"" if z else s for s, z in zip(strings, null)]
    np.testing.assert_array_equal(out.children[2].as_dtype(np.float64), np.where(null, 0.0, b))
    every = decompress_per_value(enc, VariableWidthBlock(np.zeros(51, np.uint32), np.zeros(0, np.uint8), 50))
    assert every.children[0].as_dtype(np.int32).tolist() == [0] * 50 and var_list(every.children[1]) == [b""] * 50
    # a row with bytes after its last field is corrupt
    longer = offs.copy()
    longer[1:] += 1
    padded = np.concatenate([rows.data[: offs[1]], [0], rows.data[offs[1] :]]).astype(np.uint8)
    with pytest.raises(CorruptFileError, match="past its last field"):
        decompress_per_value(enc, VariableWidthBlock(longer.astype(np.uint32), padded, 50))


@pytest.mark.parametrize("kind", ["dictionary", "out_of_line_bitpacking", "variable_packed_struct"])
def test_unsupported_in_mini_block(kind):
    enc = pb.CompressiveEncoding()
    getattr(enc, kind).SetInParent()
    with pytest.raises(UnsupportedEncodingError):
        decompress(enc, [np.zeros(8, np.uint8)], 1)
    with pytest.raises(UnsupportedEncodingError):
        decompress(pb.CompressiveEncoding(), [], 1)


# ----------------------------------------------------------------------------- fuzzing: bad bytes never crash


def _fuzz_cases():
    rng = np.random.default_rng(21)
    ints = rng.integers(0, 500, 3000).astype(np.uint32)
    strings = sample_strings(2000, seed=3)
    table = train_fsst(var_block(strings * 10))
    cases = []
    for mini in (
        compress_inline_bitpacking(fixed(ints[:1024])),
        compress_rle(fixed(np.repeat(ints[:20], 30))),
        compress_byte_stream_split(fixed(rng.random(100))),
        compress_fsst(var_block(strings[:200]), table),
        compress_packed_struct(StructBlock([fixed(ints[:50]), fixed(ints[50:100])], 50)),
    ):
        cases.append(("mini", mini[0], mini[1], 1024 if "inline" in str(mini[0]) else None))
    bc = buffer_compression("lz4")
    inner, bufs = compress_byte_stream_split(fixed(rng.random(100)))
    cases.append(("mini", general_encoding(bc, inner), [compress_buffer(bc, bufs[0])], 100))
    enc, bufs = compress_out_of_line_bitpacking(fixed(ints))
    cases.append(("block", enc, bufs, 3000))
    enc, buf = compress_rle_block(fixed(np.repeat(ints[:40].astype(np.uint16), 30)))
    cases.append(("block", enc, [buf], 1200))
    enc, rows = compress_variable_packed_struct(StructBlock([fixed(ints[:80]), var_block(strings[:80])], 80))
    cases.append(("value", enc, rows, 80))
    enc, vals = compress_fsst_per_value(var_block(strings[:80]), table)
    cases.append(("value", enc, vals, 80))
    return cases


def _mutate_and_decode(context, enc, bufs, n, rng, trial) -> None:
    if context == "value":
        data = bufs.data.copy()
        offs = np.asarray(bufs.offsets).copy()
        if trial % 3 == 0 and len(offs) > 2:
            offs[rng.integers(0, len(offs))] = rng.integers(0, 2 * len(data) + 1)
        else:
            data[rng.integers(0, len(data), 3)] = rng.integers(0, 256, 3, dtype=np.uint8)
        decompress_per_value(enc, VariableWidthBlock(offs, data, bufs.num_values))
        return
    mutated = [b.copy() for b in bufs]
    target = mutated[rng.integers(0, len(mutated))]
    if trial % 4 == 0:
        mutated = [m[: rng.integers(0, len(m) + 1)] for m in mutated]
    elif len(target):
        target[rng.integers(0, len(target), 4)] = rng.integers(0, 256, 4, dtype=np.uint8)
    count = n if n is not None else int(rng.integers(0, 2000))
    if context == "mini":
        decompress(enc, mutated, count)
    else:
        decompress_block(enc, mutated[0], count)


@pytest.mark.parametrize("case", range(10))
def test_fuzzed_buffers_raise_lance_errors_only(case):
    """Random byte flips, truncations and bad offsets: success or a LanceError, nothing else."""
    context, enc, bufs, n = _fuzz_cases()[case]
    rng = np.random.default_rng(case)
    for trial in range(150):
        try:
            _mutate_and_decode(context, enc, bufs, n, rng, trial)
        except LanceError:
            pass


def test_implausible_counts_fail_fast():
    enc, bufs = compress_inline_bitpacking(fixed(np.arange(1024, dtype=np.uint32)))
    with pytest.raises(CorruptFileError):
        decompress(enc, bufs, 1 << 38)  # would be a huge allocation / a long header walk
    flat = pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=1 << 31))
    with pytest.raises(CorruptFileError):
        decompress(flat, [np.zeros(64, np.uint8)], 1 << 20)
    with pytest.raises(CorruptFileError):
        decompress(flat, [np.zeros(64, np.uint8)], -1)
