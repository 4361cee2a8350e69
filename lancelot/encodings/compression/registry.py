"""One entry per case of ``CompressiveEncoding.compression`` (encodings_v2_1.proto), with the contexts lancelot decodes
it in.

The 2.1+ structural layer meets a compression tree in three contexts (see the package docstring): the buffers of one
mini-block chunk, one whole block (dictionaries, rep/def levels), and per value (full-zip).  Two faster paths serve
subsets: ``chunked`` decodes all the chunks of a mini-block page in one pass (``chunk_batch``), and the numba point
kernel (structural/miniblock_points.py) reads single values where a technique lays them out (``point``).  A context a
technique does not support is ``None`` and the dispatcher raises UnsupportedEncodingError naming it; ``note`` says why
it is missing.

tests/encodings/test_registry.py walks the proto descriptor: a new oneof case without an entry here fails that test, not
a user."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lancelot.encodings.compression.bitpacking import decompress_inline_bitpacking, decompress_out_of_line_bitpacking
from lancelot.encodings.compression.block import DataBlock, FixedWidthBlock, VariableWidthBlock
from lancelot.encodings.compression.buffers import require
from lancelot.encodings.compression.byte_stream_split import decompress_byte_stream_split
from lancelot.encodings.compression.chunked import symbol_table
from lancelot.encodings.compression.constant import decompress_constant
from lancelot.encodings.compression.fixed_size_list import (
    decompress_fsl,
    decompress_fsl_block,
    decompress_fsl_per_value,
)
from lancelot.encodings.compression.flat import decompress_flat
from lancelot.encodings.compression.fsst import fsst_decode
from lancelot.encodings.compression.general import decompress_buffer, decompress_values
from lancelot.encodings.compression.packed import decompress_packed_struct, decompress_variable_packed_struct
from lancelot.encodings.compression.rle import decompress_rle, decompress_rle_block
from lancelot.encodings.compression.variable import decompress_variable, decompress_variable_block
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

Buffers = list[np.ndarray]
#: decode the nested encoding of a chunk / block / value set (the dispatcher, one level deeper)
Recurse = Callable[[pb.CompressiveEncoding, Buffers, int], DataBlock]
RecurseBlock = Callable[[pb.CompressiveEncoding, np.ndarray, int], DataBlock]
RecursePerValue = Callable[[pb.CompressiveEncoding, FixedWidthBlock | VariableWidthBlock], DataBlock]

MiniBlockDecoder = Callable[[pb.CompressiveEncoding, Buffers, int, Recurse], DataBlock]
BlockDecoder = Callable[[pb.CompressiveEncoding, np.ndarray, int, RecurseBlock], DataBlock]
PerValueDecoder = Callable[[pb.CompressiveEncoding, FixedWidthBlock | VariableWidthBlock, RecursePerValue], DataBlock]

#: the contexts a technique can be decoded in
CONTEXTS = ("mini_block", "block", "per_value", "chunk_batch", "point")


@dataclass(frozen=True)
class Technique:
    """How lancelot decodes one CompressiveEncoding case."""

    name: str  # the oneof case
    mini_block: MiniBlockDecoder | None = None  # one mini-block chunk's buffers
    block: BlockDecoder | None = None  # one whole buffer
    per_value: PerValueDecoder | None = None  # full-zip values
    chunk_batch: bool = False  # compression/chunked.py decodes a page's chunks in one pass
    point: bool = False  # the point kernel reads single values (as the value technique)
    note: str = ""  # why a context is missing

    def supports(self, context: str) -> bool:
        """Whether this technique decodes in ``context`` (one of CONTEXTS)."""
        if context not in CONTEXTS:
            raise ValueError(f"unknown context {context!r}")
        value = getattr(self, context)
        return bool(value) if isinstance(value, bool) else value is not None


def _variable(block: DataBlock) -> VariableWidthBlock:
    if not isinstance(block, VariableWidthBlock):
        raise UnsupportedEncodingError(f"expected variable-width values, the encoding gives {type(block).__name__}")
    return block


def _general_chunk(enc: pb.CompressiveEncoding, buffers: Buffers, n: int, rec: Recurse) -> DataBlock:
    require(len(buffers) >= 1, "general compression expects at least one buffer")
    first = decompress_buffer(enc.general.compression, buffers[0])
    return rec(enc.general.values, [first, *buffers[1:]], n)


def _fsst_chunk(enc: pb.CompressiveEncoding, buffers: Buffers, n: int, rec: Recurse) -> DataBlock:
    return fsst_decode(symbol_table(bytes(enc.fsst.symbol_table)), _variable(rec(enc.fsst.values, buffers, n)))


def _fsst_values(enc: pb.CompressiveEncoding, block: VariableWidthBlock, rec: RecursePerValue) -> DataBlock:
    return fsst_decode(symbol_table(bytes(enc.fsst.symbol_table)), _variable(rec(enc.fsst.values, block)))


def _variable_packed_struct(enc: pb.CompressiveEncoding, block: VariableWidthBlock, rec: RecursePerValue) -> DataBlock:
    return decompress_variable_packed_struct(enc.variable_packed_struct, block, rec)


def _only(
    width: type[FixedWidthBlock] | type[VariableWidthBlock],
    kind: str,
    fn: Callable[[pb.CompressiveEncoding, Any, RecursePerValue], DataBlock],
) -> PerValueDecoder:
    """A per-value decoder of values of one width (``FixedWidthBlock`` or ``VariableWidthBlock``) only."""
    other = "variable-width" if width is FixedWidthBlock else "fixed-width"

    def decode(
        enc: pb.CompressiveEncoding, block: FixedWidthBlock | VariableWidthBlock, rec: RecursePerValue
    ) -> DataBlock:
        if not isinstance(block, width):
            raise UnsupportedEncodingError(f"compressive encoding {kind!r} is not supported in {other} full-zip")
        return fn(enc, block, rec)

    return decode


#: a technique whose chunks compression/chunked.py decodes in one pass, and whose values the point kernel reads
_fast = functools.partial(Technique, chunk_batch=True, point=True)
Kernel = Callable[[Any, Any, int], DataBlock]


def _simple(
    case: str,
    chunk: Kernel | None,
    block: Kernel | None = None,
    per_value: PerValueDecoder | None = None,
    *,
    fast: bool = True,
    note: str = "",
) -> Technique:
    """A technique whose kernels take the case's own message: ``chunk(message, buffers, n)`` for a mini-block
    chunk, ``block(message, buffer, n)`` for a whole buffer (None: no such context); ``fast``: as ``_fast``."""
    mini: MiniBlockDecoder | None = None if chunk is None else (lambda e, b, n, r: chunk(getattr(e, case), b, n))
    whole: BlockDecoder | None = None if block is None else (lambda e, b, n, r: block(getattr(e, case), b, n))
    return Technique(case, mini, whole, per_value, chunk_batch=fast, point=fast, note=note)


def _entries() -> dict[str, Technique]:
    t = [
        _simple(
            "flat",
            decompress_flat,
            lambda m, b, n: decompress_flat(m, [b], n),
            _only(FixedWidthBlock, "flat", lambda e, v, r: decompress_flat(e.flat, [v.data], v.num_values)),
        ),
        _simple(
            "variable",
            decompress_variable,
            decompress_variable_block,
            _only(VariableWidthBlock, "variable", lambda e, v, r: v),
        ),
        Technique(
            "constant",
            lambda e, b, n, r: decompress_constant(e.constant, n),
            lambda e, b, n, r: decompress_constant(e.constant, n),
            lambda e, blk, r: decompress_constant(e.constant, blk.num_values),
            note="a constant page is a layout (structural/constant.py), which takes rows without any kernel",
        ),
        _simple(
            "out_of_line_bitpacking",
            None,
            decompress_out_of_line_bitpacking,
            fast=False,
            note="pylance writes it for whole blocks only (rep/def levels); the point kernel reads it as def levels",
        ),
        _simple(
            "inline_bitpacking",
            decompress_inline_bitpacking,
            lambda m, b, n: decompress_inline_bitpacking(m, [b], n),
            note="full-zip values are never bitpacked",
        ),
        _fast(
            "fsst",
            _fsst_chunk,
            None,
            _only(VariableWidthBlock, "fsst", _fsst_values),
            note="FSST compresses values, never a block of levels or a dictionary buffer pylance writes",
        ),
        Technique(
            "dictionary",
            note="the reference neither writes nor reads this case; 2.1+ dictionaries are MiniBlockLayout.dictionary",
        ),
        _simple("rle", decompress_rle, decompress_rle_block, note="full-zip values are never run-length encoded"),
        Technique(
            "byte_stream_split",
            lambda e, b, n, r: decompress_byte_stream_split(e.byte_stream_split, b, n),
            chunk_batch=True,
            note="pylance writes it for float mini-block chunks only; points read such pages chunk by chunk",
        ),
        _fast(
            "general",
            _general_chunk,
            lambda e, b, n, r: r(e.general.values, decompress_buffer(e.general.compression, b), n),
            _only(
                VariableWidthBlock,
                "general",
                lambda e, v, r: r(e.general.values, decompress_values(e.general.compression, v)),
            ),
        ),
        _simple(
            "fixed_size_list",
            decompress_fsl,
            decompress_fsl_block,
            _only(FixedWidthBlock, "fixed_size_list", lambda e, v, r: decompress_fsl_per_value(e.fixed_size_list, v)),
            fast=False,
        ),
        _simple(
            "packed_struct",
            decompress_packed_struct,
            fast=False,
            note="fixed-width packed structs are mini-block values; variable ones are variable_packed_struct",
        ),
        Technique(
            "variable_packed_struct",
            per_value=_only(VariableWidthBlock, "variable_packed_struct", _variable_packed_struct),
            note="pylance writes variable packed structs as full-zip only",
        ),
    ]
    return {x.name: x for x in t}


#: every CompressiveEncoding case, by name
TECHNIQUES: dict[str, Technique] = _entries()
