"""Writing full-zip pages (lance.encodings21.FullZipLayout; encoding.md, "Full Zip Page Layout").

For values of 256 bytes or more.  Buffer 0 zips, per level entry, a control
word (repetition level above the definition level, in 1, 2 or 4 bytes; none
when the page has no levels) with the entry's value:

* fixed width (``bits_per_value``): the value bytes of every visible entry
  (null items included);
* variable width (``bits_per_offset``): for a visible valid item, its length
  (u32, or u64 for large types) then its bytes; nothing for a null item.  The
  bytes are FSST-compressed per value (one symbol table in the description)
  when the page holds 32 KiB or more and that saves 10%, or General-compressed
  each (``compression`` lz4/zstd: zstd either way, as pylance writes; or without a
  setting when a value exceeds 32 KiB); packed struct rows (VariablePackedStruct,
  2.2) are variable values with u32 lengths.

Buffer 1, the repetition index, holds the position in buffer 0 of every row
start and finally the buffer's size, in the narrowest of 1, 2, 4, 8 bytes that
holds the size.  Fixed-width pages without repetition have none.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelot.encodings.compression.block import FixedWidthBlock, StructBlock, VariableWidthBlock
from lancelot.encodings.compression.fsst import fsst_description
from lancelot.encodings.compression.general import buffer_compression, compress_values, general_encoding
from lancelot.encodings.compression.packed import compress_variable_packed_struct
from lancelot.encodings.compression.variable import variable_encoding
from lancelot.encodings.strategy import EncodingOptions
from lancelot.encodings.structural.write_fixed import DEFAULT_OPTIONS
from lancelot.encodings.structural.write_repdef import PageLevels
from lancelot.encodings.structural.write_strategy import FSST_MAX_RATIO, FSST_MIN_BYTES
from lancelot.encodings.structural.write_values import compress_per_value, has_item_nulls, to_block
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.arrays import to_numpy

#: variable values longer than this are General-compressed (zstd) one by one (pylance's threshold)
GENERAL_MIN_VALUE_BYTES = 32 * 1024


def _word_bytes(bits: int) -> int:
    if bits == 0:
        return 0
    return 1 if bits <= 8 else 2 if bits <= 16 else 4


def _uint(nbytes: int) -> str:
    return {1: "<u1", 2: "<u2", 4: "<u4", 8: "<u8"}[nbytes]


def _rep_index(starts: np.ndarray, total: int) -> np.ndarray:
    width = 1 if total <= 0xFF else 2 if total <= 0xFFFF else 4 if total <= 0xFFFFFFFF else 8
    return np.append(starts, total).astype(_uint(width)).view(np.uint8)


def _variable_values(
    block: VariableWidthBlock, opts: EncodingOptions
) -> tuple[pb.CompressiveEncoding, VariableWidthBlock]:
    """Variable values as they are, General-compressed each (``compression`` lz4/zstd, or values over
    32 KiB in a page of 32 KiB or more, as pylance does), or FSST-compressed per value when the page is big
    enough and it pays."""
    bits = 8 * block.offsets.dtype.itemsize
    plain = variable_encoding(bits)
    size = int(block.offsets[-1]) - int(block.offsets[0])
    huge = (
        opts.compression != "none"
        and size >= FSST_MIN_BYTES
        and block.num_values > 0
        and int(np.diff(np.asarray(block.offsets, np.int64)).max()) > GENERAL_MIN_VALUE_BYTES
    )
    if opts.general or huge:
        # zstd even when lz4 is asked, as pylance does: its reader decompresses null (empty) values
        # too, which an lz4 buffer without its size prefix fails; level 0 (zstd's default) unless asked
        compression = buffer_compression(
            "zstd", opts.compression_level if opts.general == "zstd" and opts.compression_level is not None else 0
        )
        packed = compress_values(compression, block)
        return general_encoding(compression, plain), VariableWidthBlock(
            packed.offsets.astype(block.offsets.dtype), packed.data, packed.num_values
        )
    forced = opts.compression == "fsst"
    if not forced and (size < FSST_MIN_BYTES or opts.compression is not None):
        return plain, block
    from lancelot.encodings.compression.write_fsst import fsst_encode, train_fsst  # numba: load on demand

    table = train_fsst(block, force=forced)
    if not (table.switch_on or forced):
        return plain, block
    packed = fsst_encode(table, block)
    if not forced and int(packed.offsets[-1]) - int(packed.offsets[0]) >= FSST_MAX_RATIO * size:
        return plain, block
    return fsst_description(table, plain), packed


def encode_full_zip(
    values: pa.Array, levels: PageLevels, opts: EncodingOptions = DEFAULT_OPTIONS
) -> tuple[pb.PageLayout, list[np.ndarray]]:
    """The full-zip page of ``values`` (the visible items) with their levels."""
    rep_levels, def_levels = levels.rep, levels.defs
    num_entries = len(rep_levels) if rep_levels is not None else len(values)
    bits_rep = int(rep_levels.max()).bit_length() if rep_levels is not None and num_entries else 0
    bits_def = int(def_levels.max()).bit_length() if def_levels is not None and num_entries else 0
    cw = _word_bytes(bits_rep + bits_def)
    visible: np.ndarray
    if rep_levels is not None and def_levels is not None:
        visible = def_levels <= levels.max_visible
    else:
        visible = np.ones(num_entries, bool)
    valid_item: np.ndarray = def_levels == 0 if def_levels is not None else np.ones(num_entries, bool)
    if int(visible.sum()) != len(values):
        raise UnsupportedEncodingError(f"{len(values)} values for {int(visible.sum())} visible level entries")

    block = to_block(values, has_item_nulls(values))
    zipped: FixedWidthBlock | VariableWidthBlock
    if isinstance(block, VariableWidthBlock):
        encoding, zipped = _variable_values(block, opts)
    elif isinstance(block, StructBlock):  # a packed struct with string/binary children (2.2)
        encoding, zipped = compress_variable_packed_struct(block)
    else:
        encoding, zipped = compress_per_value(block)
    layout = pb.FullZipLayout(
        bits_rep=bits_rep,
        bits_def=bits_def,
        num_items=num_entries,
        num_visible_items=len(values),
        value_compression=encoding,
        layers=levels.layers,
    )
    if isinstance(zipped, FixedWidthBlock):
        if zipped.bits_per_value % 8:
            raise UnsupportedEncodingError(f"full-zip values of {zipped.bits_per_value} bits are not whole bytes")
        layout.bits_per_value = zipped.bits_per_value
        width = zipped.bits_per_value // 8
        payload = np.where(visible, width, 0)
        data = np.asarray(zipped.data, np.uint8)[: len(values) * width]
        lengths: np.ndarray | None = None
        ob = 0
    else:
        assert isinstance(zipped, VariableWidthBlock)
        # the length words are as wide as the Arrow type's offsets (u32 for packed struct rows)
        ob = block.offsets.dtype.itemsize if isinstance(block, VariableWidthBlock) else 4
        layout.bits_per_offset = 8 * ob
        offs = np.asarray(zipped.offsets, np.int64)
        lens = np.diff(offs)
        data = np.asarray(zipped.data, np.uint8)[offs[0] : offs[-1]]
        valid = to_numpy(values.is_valid()) if values.null_count else None
        if valid is not None:
            if (lens[~valid] > 0).any():  # bytes under null slots are not stored
                data = data[np.repeat(valid, lens)]
            lens = lens[valid]
        lengths = np.zeros(num_entries, np.int64)
        lengths[visible & valid_item] = lens
        payload = np.where(visible & valid_item, ob + lengths, 0)

    if cw == 0 and lengths is None:  # fixed-width values without levels: the values are the buffer
        return pb.PageLayout(full_zip_layout=layout), [np.ascontiguousarray(data)]
    # each entry: [control word][length][bytes]; headers (control word + length) scattered, bytes in order
    sizes = cw + payload
    starts = np.cumsum(sizes) - sizes
    total = int(sizes.sum())
    head_len = np.full(num_entries, cw, np.int64)
    if lengths is not None:
        head_len += np.where(visible & valid_item, ob, 0)
    heads = np.zeros((num_entries, cw + ob), np.uint8)
    if cw:
        rep = rep_levels.astype(np.uint32) if rep_levels is not None else np.zeros(num_entries, np.uint32)
        dfn = def_levels.astype(np.uint32) if def_levels is not None else np.zeros(num_entries, np.uint32)
        words = (rep << bits_def) | dfn
        heads[:, :cw] = words.astype(_uint(cw)).view(np.uint8).reshape(num_entries, cw)
    if lengths is not None:  # ob > 0: variable-width values
        heads[:, cw:] = lengths.astype(_uint(ob)).view(np.uint8).reshape(num_entries, ob)
    head_mask = np.arange(cw + ob)[None, :] < head_len[:, None]
    is_head = np.zeros(total, bool)
    pos = np.repeat(starts, head_len) + (
        np.arange(int(head_len.sum())) - np.repeat(np.cumsum(head_len) - head_len, head_len)
    )
    is_head[pos] = True
    out = np.empty(total, np.uint8)
    out[is_head] = heads[head_mask]
    out[~is_head] = data
    buffers = [out]
    if lengths is not None or rep_levels is not None:
        row_starts = starts[rep_levels == levels.max_rep] if rep_levels is not None else starts
        buffers.append(_rep_index(row_starts, total))
    return pb.PageLayout(full_zip_layout=layout), buffers
