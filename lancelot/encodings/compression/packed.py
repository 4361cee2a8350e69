"""Packed structs: a struct's children stored row by row.

* lance.encodings21.PackedStruct (mini-block): all children fixed width (whole bytes).  ``bits_per_value`` lists each
  child's width; ``values`` is a Flat of their sum: each row is the children's bytes, concatenated in field order.
* lance.encodings21.VariablePackedStruct (2.2, full-zip): children may be variable width.  The page's values are the
  rows (a VariableWidthBlock); in a row each field in order is either ``bits_per_value / 8`` bytes (fixed) or a
  little-endian length of ``bits_per_length`` bits followed by that many bytes (variable).  Each field's bytes are then
  decoded with its own per-value ``value`` encoding.  A zero-length row (a null item) holds no fields."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lancelot.encodings.compression.block import DataBlock, FixedWidthBlock, StructBlock, VariableWidthBlock
from lancelot.encodings.compression.buffers import as_u8, check_size, require, uint_dtype
from lancelot.encodings.compression.flat import decompress_flat
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

MAX_FIELDS = 1 << 16


def decompress_packed_struct(ps: pb.PackedStruct, buffers: list[np.ndarray], num_values: int) -> StructBlock:
    """Split one chunk of packed rows into one FixedWidthBlock per child."""
    widths = [int(b) for b in ps.bits_per_value]
    require(0 < len(widths) <= MAX_FIELDS, f"packed struct with {len(widths)} fields")
    if ps.values.WhichOneof("compression") != "flat":
        raise UnsupportedEncodingError(f"packed struct values compressed with {ps.values.WhichOneof('compression')!r}")
    if any(w % 8 or w <= 0 for w in widths):
        raise UnsupportedEncodingError(f"packed struct with child widths {widths} (not whole bytes)")
    row_bits = sum(widths)
    require(
        ps.values.flat.bits_per_value == row_bits,
        f"packed struct rows of {ps.values.flat.bits_per_value} bits, children add up to {row_bits}",
    )
    rows = decompress_flat(ps.values.flat, buffers, num_values).data.reshape(num_values, row_bits // 8)
    children: list[DataBlock] = []
    pos = 0
    for w in widths:
        nb = w // 8
        children.append(FixedWidthBlock(np.ascontiguousarray(rows[:, pos : pos + nb]).reshape(-1), w, num_values))
        pos += nb
    return StructBlock(children, num_values)


def compress_packed_struct(block: StructBlock) -> tuple[pb.CompressiveEncoding, list[np.ndarray]]:
    """Interleave fixed-width children into rows."""
    cols, widths = [], []
    for child in block.children:
        if not isinstance(child, FixedWidthBlock) or child.bits_per_value % 8:
            raise UnsupportedEncodingError("packed struct children must be whole-byte fixed width")
        nb = child.bits_per_value // 8
        cols.append(as_u8(child.data)[: block.num_values * nb].reshape(block.num_values, nb))
        widths.append(child.bits_per_value)
    rows = np.concatenate(cols, axis=1) if cols else np.zeros((block.num_values, 0), np.uint8)
    enc = pb.CompressiveEncoding(
        packed_struct=pb.PackedStruct(
            bits_per_value=widths, values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=sum(widths)))
        )
    )
    return enc, [rows.reshape(-1)]


def _gather(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate data[starts[i]:starts[i]+lengths[i]]; also return the new offsets."""
    offs = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offs[1:])
    total = int(offs[-1])
    check_size(total, "packed struct field")
    src = np.arange(total, dtype=np.int64) + np.repeat(starts - offs[:-1], lengths)
    return data[src], offs


def decompress_variable_packed_struct(
    vps: pb.VariablePackedStruct,
    block: VariableWidthBlock,
    per_value: Callable[[pb.CompressiveEncoding, FixedWidthBlock | VariableWidthBlock], DataBlock],
) -> StructBlock:
    """Split full-zip rows into the fields, then decode each with ``per_value``.

    A zero-length row carries no value (pylance writes null items that way): its fixed fields decode as zero bytes and
    its variable fields as empty values; the structural layer's definition levels mark it null.  Every other row must be
    consumed exactly by its fields."""
    require(0 < len(vps.fields) <= MAX_FIELDS, f"variable packed struct with {len(vps.fields)} fields")
    n = block.num_values
    offs = np.asarray(block.offsets, dtype=np.int64)
    require(len(offs) == n + 1, "variable packed struct: offsets do not match the row count")
    data = as_u8(block.data)
    require(
        n == 0 or (int(offs[0]) >= 0 and int(offs[-1]) <= len(data) and bool(np.all(offs[1:] >= offs[:-1]))),
        "variable packed struct: row offsets are out of order or past the data",
    )
    cursor, row_end = offs[:-1].copy(), offs[1:]
    present = row_end > cursor  # rows that hold a value
    children = []
    for field in vps.fields:
        layout = field.WhichOneof("layout")
        if layout == "bits_per_value":
            bits = int(field.bits_per_value)
            if bits % 8 or bits <= 0:
                raise UnsupportedEncodingError(f"variable packed struct field of {bits} bits")
            nb = bits // 8
            widths = np.where(present, nb, 0)
            require(bool(np.all(cursor + widths <= row_end)), "variable packed struct: a fixed field overruns its row")
            gathered, _ = _gather(data, cursor, widths)
            cursor = cursor + widths
            values = np.zeros((n, nb), np.uint8)
            values[present] = gathered.reshape(-1, nb)
            children.append(per_value(field.value, FixedWidthBlock(values.reshape(-1), bits, n)))
        elif layout == "bits_per_length":
            bits = int(field.bits_per_length)
            if bits not in (32, 64):
                raise UnsupportedEncodingError(f"variable packed struct length prefix of {bits} bits")
            pw = bits // 8
            widths = np.where(present, pw, 0)
            require(bool(np.all(cursor + widths <= row_end)), "variable packed struct: a length overruns its row")
            raw, _ = _gather(data, cursor, widths)
            lengths = np.zeros(n, np.int64)
            if len(raw):
                lengths[present] = raw.view(uint_dtype(bits)).astype(np.int64)
            cursor = cursor + widths
            require(
                bool(np.all((lengths >= 0) & (cursor + lengths <= row_end))),
                "variable packed struct: a value overruns its row",
            )
            values, voffs = _gather(data, cursor, lengths)
            cursor = cursor + lengths
            child = VariableWidthBlock(voffs.astype(np.uint64), values, n)
            children.append(per_value(field.value, child))
        else:
            raise UnsupportedEncodingError("variable packed struct field without a layout")
    require(bool(np.all(cursor == row_end)), "variable packed struct: a row holds bytes past its last field")
    return StructBlock(children, n)


def compress_variable_packed_struct(block: StructBlock) -> tuple[pb.CompressiveEncoding, VariableWidthBlock]:
    """Rows of flat fixed-width children and length-prefixed variable children (lengths as wide as offsets)."""
    n = block.num_values
    pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (bytes, starts, lengths) per field
    fields = []
    for child in block.children:
        if isinstance(child, FixedWidthBlock) and child.bits_per_value % 8 == 0:
            nb = child.bits_per_value // 8
            pieces.append((as_u8(child.data), np.arange(n, dtype=np.int64) * nb, np.full(n, nb, np.int64)))
            fields.append(
                pb.VariablePackedStruct.FieldEncoding(
                    value=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=child.bits_per_value)),
                    bits_per_value=child.bits_per_value,
                )
            )
        elif isinstance(child, VariableWidthBlock):
            offs = np.asarray(child.offsets, dtype=np.int64)
            lengths = offs[1:] - offs[:-1]
            nb = np.asarray(child.offsets).dtype.itemsize  # as wide as the Arrow type's offsets (pylance checks)
            prefixes = lengths.astype(f"<u{nb}").view(np.uint8)
            pieces.append((prefixes, np.arange(n, dtype=np.int64) * nb, np.full(n, nb, np.int64)))
            pieces.append((as_u8(child.data), offs[:-1], lengths))
            offsets_enc = pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=8 * nb))
            fields.append(
                pb.VariablePackedStruct.FieldEncoding(
                    value=pb.CompressiveEncoding(variable=pb.Variable(offsets=offsets_enc)), bits_per_length=8 * nb
                )
            )
        else:
            raise UnsupportedEncodingError(f"variable packed struct child {type(child).__name__}")
    lens = np.stack([p[2] for p in pieces], axis=1) if pieces else np.zeros((n, 0), np.int64)
    row_len = lens.sum(axis=1)
    row_offs = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_len, out=row_offs[1:])
    out = np.empty(int(row_offs[-1]), np.uint8)
    field_start = row_offs[:-1, None] + np.cumsum(lens, axis=1) - lens
    for j, (src, starts, lengths) in enumerate(pieces):
        values, _ = _gather(src, starts, lengths)
        dst, _ = _gather(np.arange(len(out), dtype=np.int64), field_start[:, j], lengths)
        out[dst] = values
    enc = pb.CompressiveEncoding(variable_packed_struct=pb.VariablePackedStruct(fields=fields))
    return enc, VariableWidthBlock(row_offs.astype(np.uint32 if len(out) < (1 << 32) else np.uint64), out, n)
