"""The 2.1+ compression techniques (lance.encodings21.CompressiveEncoding) and their dispatcher.

A CompressiveEncoding tree describes how a data block became buffers.  The same
technique can be laid out differently depending on where the buffers live, so
there are three entry points, one per context the structural layer meets:

* ``decompress(enc, buffers, num_values)``: the buffers of ONE mini-block chunk
  (``MiniBlockLayout.value_compression``), consumed in order;
* ``decompress_block(enc, buffer, num_values)``: one whole buffer holding a
  block (mini-block dictionaries, rep/def levels of mini-block chunks and of
  constant layouts);
* ``decompress_per_value(enc, block)``: full-zip values, after the structural
  layer has unzipped them into a FixedWidthBlock (``bits_per_value`` layout) or
  a VariableWidthBlock (``bits_per_offset`` layout).

Every failure on bad input raises CorruptFileError; an encoding pylance 14
never writes (or that we do not know) raises UnsupportedEncodingError.

Encoders live beside their decoders and return ``(CompressiveEncoding,
buffers)`` for one mini-block chunk (``compress_flat``, ``compress_variable``,
``compress_inline_bitpacking``, ``compress_rle``, ``compress_byte_stream_split``,
``compress_fsst``, ``compress_fsl``, ``compress_packed_struct``), for one block
(``compress_variable_block``, ``compress_out_of_line_bitpacking``,
``compress_rle_block``), or the
per-value form for full-zip (``compress_fsl_per_value``, ``compress_fsst_per_value``,
``compress_variable_packed_struct``, ``general.compress_values``); General
wrapping is ``general.compress_buffer`` + ``general.general_encoding``, and the
mini-block dictionary split is ``dictionary.dictionary_encode``.
"""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.bitpacking import (
    decompress_inline_bitpacking,
    decompress_out_of_line_bitpacking,
)
from lancelot.encodings.compression.block import (
    ConstantBlock,
    DataBlock,
    FixedSizeListBlock,
    FixedWidthBlock,
    StructBlock,
    VariableWidthBlock,
)
from lancelot.encodings.compression.buffers import require
from lancelot.encodings.compression.byte_stream_split import decompress_byte_stream_split
from lancelot.encodings.compression.chunked import symbol_table
from lancelot.encodings.compression.constant import decompress_constant
from lancelot.encodings.compression.fixed_size_list import decompress_fsl, decompress_fsl_per_value
from lancelot.encodings.compression.flat import decompress_flat
from lancelot.encodings.compression.fsst import fsst_decode, fsst_decode_spans
from lancelot.encodings.compression.general import decompress_buffer, decompress_values
from lancelot.encodings.compression.packed import decompress_packed_struct, decompress_variable_packed_struct
from lancelot.encodings.compression.rle import decompress_rle, decompress_rle_block
from lancelot.encodings.compression.segments import gather
from lancelot.encodings.compression.variable import (
    decompress_variable,
    decompress_variable_block,
)
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

__all__ = [
    "ConstantBlock",
    "DataBlock",
    "FixedSizeListBlock",
    "FixedWidthBlock",
    "StructBlock",
    "VariableWidthBlock",
    "decompress",
    "decompress_block",
    "decompress_per_value",
    "technique",
]

#: nesting bound for encoding trees (a sane tree is 3-4 deep)
MAX_DEPTH = 16


def technique(enc: pb.CompressiveEncoding) -> str:
    """The name of the technique at the root of ``enc`` (the oneof case)."""
    kind = enc.WhichOneof("compression")
    if kind is None:
        raise UnsupportedEncodingError("empty CompressiveEncoding")
    return kind


def _unsupported(kind: str, context: str) -> UnsupportedEncodingError:
    return UnsupportedEncodingError(f"compressive encoding {kind!r} is not supported in {context} context")


def _enter(num_values: int, depth: int) -> None:
    require(0 <= num_values < (1 << 40), f"implausible value count {num_values}")
    require(depth < MAX_DEPTH, "compressive encoding nests too deeply")


def _variable(block: DataBlock) -> VariableWidthBlock:
    if not isinstance(block, VariableWidthBlock):
        raise UnsupportedEncodingError(f"expected variable-width values, the encoding gives {type(block).__name__}")
    return block


def decompress(enc: pb.CompressiveEncoding, buffers: list[np.ndarray], num_values: int, _depth: int = 0) -> DataBlock:
    """Decode ``num_values`` values from the buffers of one mini-block chunk."""
    _enter(num_values, _depth)
    kind = technique(enc)
    if kind == "flat":
        return decompress_flat(enc.flat, buffers, num_values)
    if kind == "variable":
        return decompress_variable(enc.variable, buffers, num_values)
    if kind == "constant":
        return decompress_constant(enc.constant, num_values)
    if kind == "fixed_size_list":
        return decompress_fsl(enc.fixed_size_list, buffers, num_values)
    if kind == "inline_bitpacking":
        return decompress_inline_bitpacking(enc.inline_bitpacking, buffers, num_values)
    if kind == "rle":
        return decompress_rle(enc.rle, buffers, num_values)
    if kind == "byte_stream_split":
        return decompress_byte_stream_split(enc.byte_stream_split, buffers, num_values)
    if kind == "general":
        require(len(buffers) >= 1, "general compression expects at least one buffer")
        first = decompress_buffer(enc.general.compression, buffers[0])
        return decompress(enc.general.values, [first, *buffers[1:]], num_values, _depth + 1)
    if kind == "fsst":
        table = symbol_table(bytes(enc.fsst.symbol_table))
        return fsst_decode(table, _variable(decompress(enc.fsst.values, buffers, num_values, _depth + 1)))
    if kind == "packed_struct":
        return decompress_packed_struct(enc.packed_struct, buffers, num_values)
    raise _unsupported(kind, "mini-block")


def decompress_block(enc: pb.CompressiveEncoding, buffer: np.ndarray, num_values: int, _depth: int = 0) -> DataBlock:
    """Decode ``num_values`` values from one whole buffer (block context)."""
    _enter(num_values, _depth)
    kind = technique(enc)
    if kind == "flat":
        return decompress_flat(enc.flat, [buffer], num_values)
    if kind == "variable":
        return decompress_variable_block(enc.variable, buffer, num_values)
    if kind == "constant":
        return decompress_constant(enc.constant, num_values)
    if kind == "fixed_size_list":
        return decompress_fsl(enc.fixed_size_list, [buffer], num_values)
    if kind == "inline_bitpacking":
        return decompress_inline_bitpacking(enc.inline_bitpacking, [buffer], num_values)
    if kind == "out_of_line_bitpacking":
        return decompress_out_of_line_bitpacking(enc.out_of_line_bitpacking, buffer, num_values)
    if kind == "rle":
        return decompress_rle_block(enc.rle, buffer, num_values)
    if kind == "general":
        inner = decompress_buffer(enc.general.compression, buffer)
        return decompress_block(enc.general.values, inner, num_values, _depth + 1)
    raise _unsupported(kind, "block")


def decompress_per_value(
    enc: pb.CompressiveEncoding, block: FixedWidthBlock | VariableWidthBlock, _depth: int = 0
) -> DataBlock:
    """Undo per-value (full-zip) compression of an unzipped block of values."""
    _enter(block.num_values, _depth)
    kind = technique(enc)
    if kind == "constant":
        return decompress_constant(enc.constant, block.num_values)
    if isinstance(block, FixedWidthBlock):
        if kind == "flat":
            return decompress_flat(enc.flat, [block.data], block.num_values)
        if kind == "fixed_size_list":
            return decompress_fsl_per_value(enc.fixed_size_list, block)
        raise _unsupported(kind, "fixed-width full-zip")
    if kind == "variable":
        return block
    if kind == "general":
        inner = decompress_values(enc.general.compression, block)
        return decompress_per_value(enc.general.values, inner, _depth + 1)
    if kind == "fsst":
        table = symbol_table(bytes(enc.fsst.symbol_table))
        return fsst_decode(table, _variable(decompress_per_value(enc.fsst.values, block, _depth + 1)))
    if kind == "variable_packed_struct":
        return decompress_variable_packed_struct(
            enc.variable_packed_struct, block, lambda e, b: decompress_per_value(e, b, _depth + 1)
        )
    raise _unsupported(kind, "variable-width full-zip")


def decompress_per_value_spans(
    enc: pb.CompressiveEncoding, data: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> DataBlock:
    """``decompress_per_value`` of the variable-width values ``data[starts[i]:starts[i] + lengths[i]]``
    (full-zip rows in their fetched buffer): FSST strings are decoded where they lie (no gathered
    copy of the compressed bytes, whose size can approach the page's); others are gathered first."""
    if technique(enc) == "fsst" and technique(enc.fsst.values) == "variable":
        return fsst_decode_spans(symbol_table(bytes(enc.fsst.symbol_table)), data, starts, lengths)
    offsets = np.zeros(len(lengths) + 1, dtype=np.uint64)
    np.cumsum(lengths, out=offsets[1:])
    return decompress_per_value(enc, VariableWidthBlock(offsets, gather(data, starts, lengths), len(lengths)))
