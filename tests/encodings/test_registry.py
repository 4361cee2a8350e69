"""The compression registry against the proto: every CompressiveEncoding case has an entry, every
context an entry claims decodes real encoder output, every context it does not claim is refused
with UnsupportedEncodingError (registry.py; encodings_v2_1.proto ``CompressiveEncoding``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from lancelot.encodings.compression import (
    ConstantBlock,
    FixedSizeListBlock,
    StructBlock,
    chunked,
    decompress,
    decompress_block,
    decompress_per_value,
)
from lancelot.encodings.compression.bitpacking import compress_inline_bitpacking, compress_out_of_line_bitpacking
from lancelot.encodings.compression.byte_stream_split import compress_byte_stream_split
from lancelot.encodings.compression.constant import compress_constant
from lancelot.encodings.compression.fixed_size_list import compress_fsl, compress_fsl_per_value
from lancelot.encodings.compression.flat import compress_flat
from lancelot.encodings.compression.general import (
    buffer_compression,
    compress_buffer,
    compress_values,
    general_encoding,
)
from lancelot.encodings.compression.packed import compress_packed_struct, compress_variable_packed_struct
from lancelot.encodings.compression.registry import CONTEXTS, TECHNIQUES
from lancelot.encodings.compression.rle import compress_rle, compress_rle_block
from lancelot.encodings.compression.variable import compress_variable, compress_variable_block, variable_encoding
from lancelot.encodings.compression.write_fsst import compress_fsst, compress_fsst_per_value
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from tests.encodings.helpers import fixed, var_block, var_list

DECODING_CONTEXTS = ("mini_block", "block", "per_value")
INTS = (np.arange(3000, dtype=np.int64) * 7919) % 1000
RUNS = np.repeat(np.arange(12, dtype=np.int32), 250)
STRINGS = [b"lance " * (i % 5) + str(i).encode() for i in range(700)]


def ints_equal(out, vals=INTS) -> None:
    np.testing.assert_array_equal(out.as_dtype(vals.dtype), vals)


def strings_equal(out) -> None:
    assert var_list(out) == STRINGS


def lz4() -> pb.BufferCompression:
    return buffer_compression("lz4")


# (technique, context) -> a check that encodes a sample with lancelot's encoder and decodes it
# through the dispatcher of that context
def _flat_mini():
    enc, bufs = compress_flat(fixed(INTS))
    ints_equal(decompress(enc, bufs, len(INTS)))


def _flat_block():
    enc, bufs = compress_flat(fixed(INTS))
    ints_equal(decompress_block(enc, bufs[0], len(INTS)))


def _flat_per_value():
    enc, _ = compress_flat(fixed(INTS))
    ints_equal(decompress_per_value(enc, fixed(INTS)))


def _variable_mini():
    enc, bufs = compress_variable(var_block(STRINGS))
    strings_equal(decompress(enc, bufs, len(STRINGS)))


def _variable_block():
    enc, bufs = compress_variable_block(var_block(STRINGS))
    strings_equal(decompress_block(enc, bufs[0], len(STRINGS)))


def _variable_per_value():
    strings_equal(decompress_per_value(variable_encoding(32), var_block(STRINGS)))


def _constant(decode: Callable) -> Callable[[], None]:
    def check():
        enc, _ = compress_constant(b"\x07\x00\x00\x00")
        out = decode(enc)
        assert isinstance(out, ConstantBlock) and out.value == b"\x07\x00\x00\x00" and out.num_values == 5

    return check


def _out_of_line_block():
    enc, bufs = compress_out_of_line_bitpacking(fixed(INTS.astype(np.uint16)))
    ints_equal(decompress_block(enc, bufs[0], len(INTS)), INTS.astype(np.uint16))


def _inline_mini():
    enc, bufs = compress_inline_bitpacking(fixed(INTS.astype(np.uint32)))
    ints_equal(decompress(enc, bufs, len(INTS)), INTS.astype(np.uint32))


def _inline_block():
    enc, bufs = compress_inline_bitpacking(fixed(INTS.astype(np.uint32)))
    ints_equal(decompress_block(enc, bufs[0], len(INTS)), INTS.astype(np.uint32))


def _fsst_mini():
    enc, bufs = compress_fsst(var_block(STRINGS))
    strings_equal(decompress(enc, bufs, len(STRINGS)))


def _fsst_per_value():
    enc, block = compress_fsst_per_value(var_block(STRINGS))
    strings_equal(decompress_per_value(enc, block))


def _rle_mini():
    enc, bufs = compress_rle(fixed(RUNS))
    ints_equal(decompress(enc, bufs, len(RUNS)), RUNS)


def _rle_block():
    enc, buf = compress_rle_block(fixed(RUNS))
    ints_equal(decompress_block(enc, buf, len(RUNS)), RUNS)


def _bss_mini():
    vals = np.linspace(0, 1, 999, dtype=np.float32)
    enc, bufs = compress_byte_stream_split(fixed(vals))
    ints_equal(decompress(enc, bufs, len(vals)), vals)


def _general_mini():
    inner, bufs = compress_rle(fixed(RUNS))
    enc = general_encoding(lz4(), inner)
    ints_equal(decompress(enc, [compress_buffer(lz4(), bufs[0]), bufs[1]], len(RUNS)), RUNS)


def _general_block():
    inner, bufs = compress_flat(fixed(INTS))
    enc = general_encoding(lz4(), inner)
    ints_equal(decompress_block(enc, compress_buffer(lz4(), bufs[0]), len(INTS)))


def _general_per_value():
    enc = general_encoding(lz4(), variable_encoding(32))
    strings_equal(decompress_per_value(enc, compress_values(lz4(), var_block(STRINGS))))


def _fsl_block_of_rows() -> FixedSizeListBlock:
    return FixedSizeListBlock(fixed(INTS[:3000]), 4, 750)


def _fsl_check(out) -> None:
    assert isinstance(out, FixedSizeListBlock) and out.dimension == 4 and out.num_values == 750
    ints_equal(out.child)


def _fsl_mini():
    enc, bufs = compress_fsl(_fsl_block_of_rows())
    _fsl_check(decompress(enc, bufs, 750))


def _fsl_block():
    enc, bufs = compress_fsl(_fsl_block_of_rows())
    _fsl_check(decompress_block(enc, bufs[0], 750))


def _fsl_per_value():
    enc, rows = compress_fsl_per_value(_fsl_block_of_rows())
    _fsl_check(decompress_per_value(enc, rows))


def _packed_mini():
    a, b = INTS[:100].astype(np.int16), np.linspace(0, 1, 100)
    enc, bufs = compress_packed_struct(StructBlock([fixed(a), fixed(b)], 100))
    out = decompress(enc, bufs, 100)
    ints_equal(out.children[0], a)
    ints_equal(out.children[1], b)


def _variable_packed_per_value():
    a = INTS[:100].astype(np.int32)
    strings = STRINGS[:100]
    enc, rows = compress_variable_packed_struct(StructBlock([fixed(a), var_block(strings)], 100))
    out = decompress_per_value(enc, rows)
    ints_equal(out.children[0], a)
    assert var_list(out.children[1]) == strings


SAMPLES: dict[tuple[str, str], Callable[[], None]] = {
    ("flat", "mini_block"): _flat_mini,
    ("flat", "block"): _flat_block,
    ("flat", "per_value"): _flat_per_value,
    ("variable", "mini_block"): _variable_mini,
    ("variable", "block"): _variable_block,
    ("variable", "per_value"): _variable_per_value,
    ("constant", "mini_block"): _constant(lambda e: decompress(e, [], 5)),
    ("constant", "block"): _constant(lambda e: decompress_block(e, np.zeros(0, np.uint8), 5)),
    ("constant", "per_value"): _constant(lambda e: decompress_per_value(e, fixed(np.zeros(5, np.int32)))),
    ("out_of_line_bitpacking", "block"): _out_of_line_block,
    ("inline_bitpacking", "mini_block"): _inline_mini,
    ("inline_bitpacking", "block"): _inline_block,
    ("fsst", "mini_block"): _fsst_mini,
    ("fsst", "per_value"): _fsst_per_value,
    ("rle", "mini_block"): _rle_mini,
    ("rle", "block"): _rle_block,
    ("byte_stream_split", "mini_block"): _bss_mini,
    ("general", "mini_block"): _general_mini,
    ("general", "block"): _general_block,
    ("general", "per_value"): _general_per_value,
    ("fixed_size_list", "mini_block"): _fsl_mini,
    ("fixed_size_list", "block"): _fsl_block,
    ("fixed_size_list", "per_value"): _fsl_per_value,
    ("packed_struct", "mini_block"): _packed_mini,
    ("variable_packed_struct", "per_value"): _variable_packed_per_value,
}


def proto_cases() -> list[str]:
    return [f.name for f in pb.CompressiveEncoding.DESCRIPTOR.oneofs_by_name["compression"].fields]


def test_every_proto_case_has_an_entry():
    assert set(proto_cases()) == set(TECHNIQUES), "add the new CompressiveEncoding case to registry.TECHNIQUES"
    for name, t in TECHNIQUES.items():
        assert t.name == name
        missing = [c for c in DECODING_CONTEXTS if not t.supports(c)]
        assert not missing or t.note, f"{name}: say in `note` why {missing} are not decoded"


def test_every_supported_context_has_a_sample():
    supported = {(n, c) for n, t in TECHNIQUES.items() for c in DECODING_CONTEXTS if t.supports(c)}
    assert supported == set(SAMPLES)


@pytest.mark.parametrize("key", sorted(SAMPLES), ids=lambda k: f"{k[0]}-{k[1]}")
def test_supported_context_round_trips(key):
    SAMPLES[key]()


def _empty_case(kind: str) -> pb.CompressiveEncoding:
    enc = pb.CompressiveEncoding()
    getattr(enc, kind).SetInParent()
    return enc


UNSUPPORTED = [(n, c) for n in proto_cases() for c in DECODING_CONTEXTS if not TECHNIQUES[n].supports(c)]


@pytest.mark.parametrize("key", UNSUPPORTED, ids=lambda k: f"{k[0]}-{k[1]}")
def test_unsupported_context_is_refused(key):
    kind, context = key
    enc = _empty_case(kind)
    with pytest.raises(UnsupportedEncodingError, match=kind):
        if context == "mini_block":
            decompress(enc, [np.zeros(8, np.uint8)], 1)
        elif context == "block":
            decompress_block(enc, np.zeros(8, np.uint8), 1)
        else:
            decompress_per_value(enc, var_block([b"x"]))
            decompress_per_value(enc, fixed(np.zeros(1, np.int64)))


def test_chunk_batch_claims_match_the_batch_decoder():
    claimed = {n for n, t in TECHNIQUES.items() if t.chunk_batch}
    assert claimed == set(chunked._KERNELS)


def test_supports_rejects_unknown_contexts():
    assert set(CONTEXTS) >= set(DECODING_CONTEXTS)
    with pytest.raises(ValueError):
        TECHNIQUES["flat"].supports("everywhere")
