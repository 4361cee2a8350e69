"""Writing blob pages (lance.encodings21.BlobLayout; encoding.md, "Blob Page Layout").

For large_binary fields with the ``lance-encoding:blob`` metadata key (pylance
accepts no other type).  The values' bytes go out of line: each batch's bytes are
written to the file as one buffer when the batch arrives (``blob_relative``), so a
value sits at that buffer's position + its offset, and pages, which hold only the
descriptions, are cut like pylance's (by description bytes, encodings/paging.py).  The page
itself is the ``inner_layout``: a mini-block page (one all-valid item per
level entry, no levels) of descriptions, a packed struct of u64 ``position``
(absolute file offset) and u64 ``size``.  The blob layout's own ``layers``
give the meaning of the definition levels smuggled into the descriptions:

* a valid value: its position and size (position 0, size 0 when empty);
* a null: size 0 and position ``def << 16 | rep`` (never 0: def >= 1).

Blobs inside lists are not written (lancelot does not read them either).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelot.encodings.structural.write_miniblock import encode_miniblock
from lancelot.encodings.structural.write_repdef import PageLevels
from lancelot.encodings.structural.write_values import storage
from lancelot.errors import UnsupportedTypeError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.arrays import arrow_offsets, from_numpy, to_numpy

DESCRIPTION = pa.struct([("position", pa.uint64()), ("size", pa.uint64())])


def check_blob_type(t: pa.DataType, name: str, max_rep: int) -> None:
    """Blob fields are large_binary (as pylance requires), outside lists."""
    if not pa.types.is_large_binary(t):
        raise UnsupportedTypeError(f"blob field {name!r} must be large_binary, not {t} (pylance reads no other)")
    if max_rep:
        raise UnsupportedTypeError(
            f"blob field {name!r} inside a list is not writable at 2.1 (pylance 14 writes such pages but cannot "
            "read them back); lists of blobs are written at 2.0 and at 2.2 or later"
        )


#: a blob value as a page holds it until its batch's bytes have a file position
RELATIVE = pa.struct([("start", pa.uint64()), ("size", pa.uint64()), ("part", pa.int64())])


#: out-of-line blob values start on this alignment (pylance's page buffer alignment)
ALIGN = 64
#: the byte pylance pads page buffers with (so blob regions are byte-identical to pylance's)
PAD_BYTE = 0x48


def padded(raw: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The values ``raw[starts[i] : starts[i] + sizes[i]]`` laid out as pylance writes out-of-line blob buffers:
    each at a multiple of 64 bytes, padded to the next with pylance's pad byte (``PAD_BYTE``; no padding after the
    last); their starts in the result and the result.  Empty values take no room (their start is the next value's)."""
    slots = -(-sizes // ALIGN) * ALIGN
    out_starts = np.zeros(len(sizes), np.int64)
    np.cumsum(slots[:-1], out=out_starts[1:])
    keep = np.flatnonzero(sizes > 0)
    if not len(keep):
        return out_starts, np.zeros(0, np.uint8)
    out = np.full(int(out_starts[keep[-1]] + sizes[keep[-1]]), PAD_BYTE, np.uint8)
    for i in keep.tolist():  # one slice copy per value: cheaper than per-byte index arrays past ~100 bytes
        o, s, n = int(out_starts[i]), int(starts[i]), int(sizes[i])
        out[o : o + n] = raw[s : s + n]
    return out_starts, out


def blob_relative(values: pa.Array, part: int) -> tuple[pa.StructArray, np.ndarray | None]:
    """One batch of blob values as (start in the batch's bytes, size, batch number) and those bytes (None
    when there are none; each value 64-byte aligned in them, ``padded``): the bytes are written at once, the
    page keeps the small part."""
    arr = storage(values)
    n = len(arr)
    offs = arrow_offsets(arr).astype(np.int64)
    valid = to_numpy(arr.is_valid()) if arr.null_count else np.ones(n, bool)
    sizes = np.where(valid, offs[1:] - offs[:-1], 0)
    size = sizes.astype(np.uint64)
    data = None
    start = np.zeros(n, np.uint64)
    if int(sizes.sum()):
        at, data = padded(np.frombuffer(arr.buffers()[2], np.uint8), offs[:-1], sizes)
        start = at.astype(np.uint64)
    rel = pa.StructArray.from_arrays(
        [from_numpy(start), from_numpy(size), from_numpy(np.full(n, part, np.int64))],
        fields=list(RELATIVE),
        mask=from_numpy(~valid) if not valid.all() else None,
    )
    return rel, data


def encode_blob(
    values: pa.StructArray, levels: PageLevels, large_chunks: bool, bases: dict[int, int]
) -> tuple[pb.PageLayout, list[np.ndarray]]:
    """The blob page of ``values`` (``blob_relative`` rows, one per level entry); ``bases`` gives the file
    position of each batch's bytes (written before this page is committed)."""
    n = len(values)
    start = np.asarray(to_numpy(values.field("start")), np.uint64)
    size = np.asarray(to_numpy(values.field("size")), np.uint64)
    part = np.asarray(to_numpy(values.field("part")), np.int64)
    if values.null_count:
        size = np.where(to_numpy(values.is_valid()), size, 0).astype(np.uint64)
    position = np.zeros(n, np.uint64)
    has = size > 0
    if has.any():
        used = np.unique(part[has])
        table = np.zeros(int(used.max()) + 1, np.uint64)
        table[used] = [bases[int(k)] for k in used]
        position[has] = table[part[has]] + start[has]
    if levels.defs is not None:
        null = levels.defs > 0
        position[null] = levels.defs[null].astype(np.uint64) << np.uint64(16)
    desc = pa.StructArray.from_arrays([from_numpy(position), from_numpy(size)], fields=list(DESCRIPTION))
    inner_levels = PageLevels(None, None, [pb.REPDEF_ALL_VALID_ITEM], 0, 0, 0)
    inner, buffers = encode_miniblock(desc, inner_levels, large_chunks)
    layout = pb.BlobLayout(inner_layout=inner, layers=levels.layers)
    return pb.PageLayout(blob_layout=layout), buffers
