"""Dictionary encoding: values as indices into a page dictionary.

What pylance 14 writes is the mini-block form: ``MiniBlockLayout.dictionary``
(a CompressiveEncoding in *block* context: Flat, Variable or General over
one of them) describes the dictionary buffer (page buffer 2) holding
``num_dictionary_items`` items, and ``value_compression`` describes the
indices (u8/u16/u32/u64 integers) in each chunk.  The reader decodes the
dictionary once per page and gathers it with the decoded indices.

The ``lance.encodings21.Dictionary`` CompressiveEncoding variant (indices and
items in one tree) is never written by pylance 14 and its own decoders do not
accept it; we report it as unsupported.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelot.encodings.compression.block import (
    ConstantBlock,
    DataBlock,
    FixedWidthBlock,
    VariableWidthBlock,
)
from lancelot.encodings.compression.buffers import as_u8, check_size, require, uint_dtype
from lancelot.errors import CorruptFileError, UnsupportedEncodingError


def dictionary_indices(indices: DataBlock) -> np.ndarray:
    """The decoded index block as an int64 array."""
    if isinstance(indices, ConstantBlock):
        if indices.value is None:
            raise CorruptFileError("dictionary indices are all null")
        raw = np.frombuffer(indices.value, np.uint8)
        require(len(raw) in (1, 2, 4, 8), f"dictionary index of {len(raw)} bytes")
        return np.full(indices.num_values, int(raw.view(uint_dtype(len(raw) * 8))[0]), dtype=np.int64)
    if not isinstance(indices, FixedWidthBlock):
        raise UnsupportedEncodingError(f"dictionary indices decoded as {type(indices).__name__}")
    return indices.as_dtype(uint_dtype(indices.bits_per_value, "dictionary index")).astype(np.int64)


def take_dictionary(items: DataBlock, indices: DataBlock, num_items: int, valid: np.ndarray | None = None) -> DataBlock:
    """Gather dictionary ``items`` at ``indices``.

    ``valid`` (one bool per index, optional) marks null slots, whose indices may
    be anything: they are read as item 0 (the structural layer masks them).
    """
    idx = dictionary_indices(indices)
    if valid is not None:
        idx = np.where(valid, idx, 0)
    require(
        not (len(idx) and (int(idx.min()) < 0 or int(idx.max()) >= max(num_items, 1) or num_items == 0)),
        f"dictionary index out of range for {num_items} items",
    )
    if isinstance(items, FixedWidthBlock):
        require(items.bits_per_value % 8 == 0, "dictionary of sub-byte items")
        nb = items.bits_per_value // 8
        table = as_u8(items.data)[: num_items * nb].reshape(num_items, nb)
        require(len(table) == num_items, "dictionary items buffer is short")
        return FixedWidthBlock(table[idx].reshape(-1), items.bits_per_value, len(idx))
    if isinstance(items, VariableWidthBlock):
        require(items.num_values == num_items, "dictionary item count differs from the layout's")
        offs = np.asarray(items.offsets, dtype=np.int64)
        lens = (offs[1:] - offs[:-1])[idx]
        out_offs = np.zeros(len(idx) + 1, dtype=np.uint64)
        np.cumsum(lens, out=out_offs[1:])
        total = int(out_offs[-1])
        check_size(total, "dictionary values")
        starts = offs[:-1][idx]
        # byte k of the output comes from starts[value] + (k - out_offs[value])
        src = np.arange(total, dtype=np.int64) - np.repeat(out_offs[:-1].astype(np.int64) - starts, lens)
        return VariableWidthBlock(out_offs, as_u8(items.data)[src], len(idx))
    if isinstance(items, ConstantBlock):
        return ConstantBlock(items.value, len(idx))
    raise UnsupportedEncodingError(f"dictionary of {type(items).__name__} items")


def dictionary_encode(values: DataBlock) -> tuple[FixedWidthBlock, DataBlock]:
    """Split ``values`` into (u32 indices, unique items in first-seen order)."""
    if isinstance(values, FixedWidthBlock):
        nb = values.bits_per_value // 8
        require(values.bits_per_value % 8 == 0 and nb > 0, "dictionary of sub-byte values")
        rows = as_u8(values.data)[: values.num_values * nb].reshape(values.num_values, nb)
        keys = rows.view(np.dtype((np.void, nb))).reshape(-1)
        uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        item_bytes = rows[first[order]].reshape(-1)
        return (
            FixedWidthBlock(rank[inverse].astype("<u4").view(np.uint8), 32, values.num_values),
            FixedWidthBlock(np.ascontiguousarray(item_bytes), values.bits_per_value, len(order)),
        )
    if isinstance(values, VariableWidthBlock):
        offs = np.asarray(values.offsets, dtype=np.int64)
        arr = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), values.num_values, [None, pa.py_buffer(offs), pa.py_buffer(as_u8(values.data))]
        )
        encoded = arr.dictionary_encode()
        idx = np.asarray(encoded.indices, dtype=np.int64)
        uniq = encoded.dictionary
        u_offs = np.frombuffer(uniq.buffers()[1], np.int64)[uniq.offset : uniq.offset + len(uniq) + 1]
        u_data = np.frombuffer(uniq.buffers()[2], np.uint8) if uniq.buffers()[2] is not None else np.zeros(0, np.uint8)
        rebased = (u_offs - u_offs[0]).astype(np.uint32 if u_offs[-1] - u_offs[0] < (1 << 32) else np.uint64)
        items = VariableWidthBlock(rebased, u_data[u_offs[0] : u_offs[-1]], len(uniq))
        return FixedWidthBlock(idx.astype("<u4").view(np.uint8), 32, values.num_values), items
    raise UnsupportedEncodingError(f"dictionary encoding of {type(values).__name__}")
