"""The 2.1+ compression techniques (lance.encodings21.CompressiveEncoding) and their dispatcher.

A CompressiveEncoding tree describes how a data block became buffers.  The same technique can be laid out differently
depending on where the buffers live, so there are three entry points, one per context the structural layer meets:

* ``decompress(enc, buffers, num_values)``: the buffers of ONE mini-block chunk (``MiniBlockLayout.value_compression``),
  consumed in order;
* ``decompress_block(enc, buffer, num_values)``: one whole buffer holding a block (mini-block dictionaries, rep/def
  levels of mini-block chunks and of constant layouts);
* ``decompress_per_value(enc, block)``: full-zip values, after the structural layer has unzipped them into a
  FixedWidthBlock (``bits_per_value`` layout) or a VariableWidthBlock (``bits_per_offset`` layout).

Which technique decodes in which context is one table, ``registry.TECHNIQUES``.  Bad input raises CorruptFileError; an
encoding pylance 14 never writes raises UnsupportedEncodingError.

Encoders live beside their decoders and return ``(CompressiveEncoding, buffers)`` for one mini-block chunk, one block,
or the per-value form of full-zip; General wrapping is ``general.compress_buffer`` + ``general.general_encoding``; the
mini-block dictionary split is ``write_dictionary.dictionary_encode``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lancelot.encodings.compression.block import (
    ConstantBlock,
    DataBlock,
    FixedSizeListBlock,
    FixedWidthBlock,
    StructBlock,
    VariableWidthBlock,
)
from lancelot.encodings.compression.buffers import require
from lancelot.encodings.compression.chunked import symbol_table
from lancelot.encodings.compression.fsst import fsst_decode_spans
from lancelot.encodings.compression.registry import TECHNIQUES
from lancelot.encodings.compression.segments import gather
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
    kind: str | None = enc.WhichOneof("compression")
    if kind is None:
        raise UnsupportedEncodingError("empty CompressiveEncoding")
    return kind


def _unsupported(kind: str, context: str) -> UnsupportedEncodingError:
    return UnsupportedEncodingError(f"compressive encoding {kind!r} is not supported in {context} context")


def _enter(num_values: int, depth: int) -> None:
    require(0 <= num_values < (1 << 40), f"implausible value count {num_values}")
    require(depth < MAX_DEPTH, "compressive encoding nests too deeply")


def _decoder(kind: str, context: str, label: str) -> Callable[..., DataBlock]:
    """The technique's decoder for ``context`` (a registry.Technique field: MiniBlockDecoder etc.)."""
    fn: Callable[..., DataBlock] | None = getattr(TECHNIQUES[kind], context) if kind in TECHNIQUES else None
    if fn is None:
        raise _unsupported(kind, label)
    return fn


def decompress(enc: pb.CompressiveEncoding, buffers: list[np.ndarray], num_values: int, _depth: int = 0) -> DataBlock:
    """Decode ``num_values`` values from the buffers of one mini-block chunk."""
    _enter(num_values, _depth)
    fn = _decoder(technique(enc), "mini_block", "mini-block")
    return fn(enc, buffers, num_values, lambda e, b, n: decompress(e, b, n, _depth + 1))


def decompress_block(enc: pb.CompressiveEncoding, buffer: np.ndarray, num_values: int, _depth: int = 0) -> DataBlock:
    """Decode ``num_values`` values from one whole buffer (block context)."""
    _enter(num_values, _depth)
    fn = _decoder(technique(enc), "block", "block")
    return fn(enc, buffer, num_values, lambda e, b, n: decompress_block(e, b, n, _depth + 1))


def decompress_per_value(
    enc: pb.CompressiveEncoding, block: FixedWidthBlock | VariableWidthBlock, _depth: int = 0
) -> DataBlock:
    """Undo per-value (full-zip) compression of an unzipped block of values."""
    _enter(block.num_values, _depth)
    width = "fixed-width" if isinstance(block, FixedWidthBlock) else "variable-width"
    fn = _decoder(technique(enc), "per_value", f"{width} full-zip")
    return fn(enc, block, lambda e, b: decompress_per_value(e, b, _depth + 1))


def decompress_per_value_spans(
    enc: pb.CompressiveEncoding, data: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> DataBlock:
    """``decompress_per_value`` of the variable-width values ``data[starts[i]:starts[i] + lengths[i]]`` (full-zip rows
    in their fetched buffer): FSST strings are decoded where they lie (no gathered copy of the compressed bytes, whose
    size can approach the page's); others are gathered first."""
    if technique(enc) == "fsst" and technique(enc.fsst.values) == "variable":
        return fsst_decode_spans(symbol_table(bytes(enc.fsst.symbol_table)), data, starts, lengths)
    offsets = np.zeros(len(lengths) + 1, dtype=np.uint64)
    np.cumsum(lengths, out=offsets[1:])
    return decompress_per_value(enc, VariableWidthBlock(offsets, gather(data, starts, lengths), len(lengths)))
