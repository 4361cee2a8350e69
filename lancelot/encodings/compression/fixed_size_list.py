"""FixedSizeList: flattened fixed-size lists of fixed-width items (lance.encodings21.FixedSizeList).

A chain of FixedSizeList messages (outer layer first) ends in a Flat of the items.  ``has_validity`` says the layer's
items (the children of that list layer) carry a validity bitmap.  Layouts:

* mini-block chunk: one buffer per layer with validity (outer first; a chunk of ``rows`` rows holds ``rows * cum_dim``
  bits, cum_dim being the product of the dimensions down to that layer), then the flat items buffer;
* full-zip (per value): each row is zipped as its validity bitmaps (``ceil(cum_dim / 8)`` bytes per layer with validity,
  outer first) followed by its ``cum_dim * bytes_per_item`` item bytes;
* block: the flat items buffer; with validity (2.3 page dictionaries of nullable fixed-size lists) the rows as full-zip
  zips them: each row's validity bitmaps, then its item bytes.

The chain may also end in a ``Constant`` instead of a Flat: every item is that value (``value`` unset: every item is
null, as pylance writes a list whose items are all null); a constant item takes no bytes (no items buffer, nothing
zipped per row).

Decoded as nested FixedSizeListBlocks; ``validity`` is one bool per child item."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lancelot.encodings.compression.block import ConstantBlock, DataBlock, FixedSizeListBlock, FixedWidthBlock
from lancelot.encodings.compression.buffers import as_u8, bitmap_to_bool, bool_to_bitmap, check_size, require
from lancelot.encodings.compression.flat import check_flat, decompress_flat, flat_nbytes
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

MAX_LAYERS = 8


@dataclass
class FslLayer:
    dimension: int
    has_validity: bool


def fsl_layers(fsl: pb.FixedSizeList) -> tuple[list[FslLayer], pb.Flat | pb.Constant]:
    """The layers of a FixedSizeList chain (outer first) and its items' Flat (or Constant)."""
    layers: list[FslLayer] = []
    node = fsl
    while True:
        require(len(layers) < MAX_LAYERS, "fixed-size-list encoding nests too deeply")
        require(0 < node.items_per_value < (1 << 31), f"fixed-size list of dimension {node.items_per_value}")
        layers.append(FslLayer(int(node.items_per_value), bool(node.has_validity)))
        kind = node.values.WhichOneof("compression")
        if kind == "fixed_size_list":
            node = node.values.fixed_size_list
        elif kind == "flat":
            check_flat(node.values.flat)
            return layers, node.values.flat
        elif kind == "constant":
            return layers, node.values.constant
        else:
            raise UnsupportedEncodingError(f"fixed-size-list values compressed with {kind!r}")


def _build(
    layers: list[FslLayer], items: FixedWidthBlock | ConstantBlock, validity: Sequence[np.ndarray | None], num_rows: int
) -> FixedSizeListBlock:
    block: DataBlock = items
    cum = [1]
    for layer in layers:
        cum.append(cum[-1] * layer.dimension)
    for depth in range(len(layers) - 1, -1, -1):
        block = FixedSizeListBlock(block, layers[depth].dimension, num_rows * cum[depth], validity[depth])
    assert isinstance(block, FixedSizeListBlock)  # fsl_layers returns at least one layer
    return block


def _constant_items(const: pb.Constant, n: int) -> ConstantBlock:
    return ConstantBlock(bytes(const.value) if const.HasField("value") else None, n)


def decompress_fsl(fsl: pb.FixedSizeList, buffers: list[np.ndarray], num_rows: int) -> FixedSizeListBlock:
    """Decode one mini-block chunk (validity buffers, then the items buffer)."""
    layers, flat = fsl_layers(fsl)
    n_valid = sum(layer.has_validity for layer in layers)
    n_items = 0 if isinstance(flat, pb.Constant) else 1
    require(
        len(buffers) == n_valid + n_items, f"fixed-size list expects {n_valid + n_items} buffers, got {len(buffers)}"
    )
    cum = 1
    validity: list[np.ndarray | None] = []
    it = iter(buffers[:n_valid])
    for layer in layers:
        cum *= layer.dimension
        check_size(num_rows * cum, "fixed-size-list items")
        validity.append(bitmap_to_bool(as_u8(next(it)), num_rows * cum) if layer.has_validity else None)
    if isinstance(flat, pb.Constant):
        return _build(layers, _constant_items(flat, num_rows * cum), validity, num_rows)
    items = decompress_flat(flat, buffers[n_valid:], num_rows * cum)
    return _build(layers, items, validity, num_rows)


def decompress_fsl_per_value(fsl: pb.FixedSizeList, block: FixedWidthBlock) -> FixedSizeListBlock:
    """Unzip full-zip rows (validity bitmaps then item bytes per row)."""
    layers, flat = fsl_layers(fsl)
    rows = block.num_values
    constant = isinstance(flat, pb.Constant)
    item_bits = 0 if constant else flat.bits_per_value
    cum, valid_bytes, widths = 1, 0, []
    for layer in layers:
        cum *= layer.dimension
        widths.append(cum)
        if layer.has_validity:
            valid_bytes += (cum + 7) // 8
    if valid_bytes == 0 and constant:
        return _build(layers, _constant_items(flat, rows * cum), [None] * len(layers), rows)
    if valid_bytes == 0:
        return _build(layers, decompress_flat(flat, [block.data], rows * cum), [None] * len(layers), rows)
    require(item_bits % 8 == 0, "zipped fixed-size list with validity needs whole-byte items")
    row_bytes = valid_bytes + cum * item_bits // 8
    require(
        block.bits_per_value == row_bytes * 8,
        f"zipped fixed-size-list rows are {block.bits_per_value} bits, expected {row_bytes * 8}",
    )
    check_size(rows * row_bytes, "fixed-size-list rows")
    data = as_u8(block.data)
    require(len(data) >= rows * row_bytes, "zipped fixed-size-list rows are truncated")
    table = data[: rows * row_bytes].reshape(rows, row_bytes)
    pos = 0
    validity: list[np.ndarray | None] = []
    for layer, width in zip(layers, widths):
        if not layer.has_validity:
            validity.append(None)
            continue
        nb = (width + 7) // 8
        bits = np.unpackbits(table[:, pos : pos + nb], axis=1, bitorder="little")[:, :width]
        validity.append(bits.reshape(-1).astype(bool))
        pos += nb
    if constant:
        return _build(layers, _constant_items(flat, rows * cum), validity, rows)
    items = FixedWidthBlock(np.ascontiguousarray(table[:, pos:]).reshape(-1), item_bits, rows * cum)
    return _build(layers, items, validity, rows)


def _flatten(block: DataBlock) -> tuple[pb.CompressiveEncoding, list[np.ndarray | None], FixedWidthBlock]:
    if isinstance(block, FixedWidthBlock):
        return pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=block.bits_per_value)), [], block
    if not isinstance(block, FixedSizeListBlock):
        raise UnsupportedEncodingError(f"fixed-size list of {type(block).__name__} cannot be flattened")
    inner, validity, items = _flatten(block.child)
    enc = pb.CompressiveEncoding(
        fixed_size_list=pb.FixedSizeList(
            items_per_value=block.dimension, has_validity=block.validity is not None, values=inner
        )
    )
    return enc, [block.validity, *validity], items


def compress_fsl(block: FixedSizeListBlock) -> tuple[pb.CompressiveEncoding, list[np.ndarray]]:
    """One mini-block chunk: the validity bitmaps (outer first), then the items."""
    enc, validity, items = _flatten(block)
    bufs = [bool_to_bitmap(v) for v in validity if v is not None]
    bufs.append(as_u8(items.data)[: flat_nbytes(items.bits_per_value, items.num_values)])
    return enc, bufs


def compress_fsl_per_value(block: FixedSizeListBlock) -> tuple[pb.CompressiveEncoding, FixedWidthBlock]:
    """Full-zip rows: each row's validity bitmaps then its item bytes."""
    enc, validity, items = _flatten(block)
    rows = block.num_values
    cum = items.num_values // max(rows, 1) if rows else 0
    if all(v is None for v in validity):
        return enc, FixedWidthBlock(as_u8(items.data), items.bits_per_value * cum, rows)
    require(items.bits_per_value % 8 == 0, "zipped fixed-size list with validity needs whole-byte items")
    parts = []
    for v in validity:
        if v is not None:
            width = len(v) // max(rows, 1)
            parts.append(np.packbits(np.asarray(v, bool).reshape(rows, width), axis=1, bitorder="little"))
    item_bytes = as_u8(items.data)[: rows * cum * items.bits_per_value // 8].reshape(rows, -1)
    table = np.concatenate([*parts, item_bytes], axis=1)
    return enc, FixedWidthBlock(table.reshape(-1), table.shape[1] * 8, rows)


def decompress_fsl_block(fsl: pb.FixedSizeList, buffer: np.ndarray, num_rows: int) -> FixedSizeListBlock:
    """Decode a block (one whole buffer): the items, or, with validity, rows as full-zip zips them."""
    layers, flat = fsl_layers(fsl)
    if not any(layer.has_validity for layer in layers):
        return decompress_fsl(fsl, [buffer], num_rows)
    cum, valid_bytes = 1, 0
    for layer in layers:
        cum *= layer.dimension
        valid_bytes += (cum + 7) // 8 if layer.has_validity else 0
    item_bits = 0 if isinstance(flat, pb.Constant) else int(flat.bits_per_value)
    row_bits = 8 * valid_bytes + cum * item_bits
    return decompress_fsl_per_value(fsl, FixedWidthBlock(as_u8(buffer), row_bits, num_rows))
