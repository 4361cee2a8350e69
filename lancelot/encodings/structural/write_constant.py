"""Writing constant and all-null pages (lance.encodings21.ConstantLayout; 2.1: AllNullLayout).

(encoding.md, "All Null Page Layout" and 2.2's "Constant Page Layout".)

All-null pages (every visible item null, or no visible item: only null or
empty lists) keep nothing but their levels:

* a single ``NULLABLE_ITEM`` layer and no repetition: no buffer at all;
* otherwise two buffers, the repetition levels then the definition levels
  (either may be empty), as u16 values.  2.1 stores them raw (its
  AllNullLayout has only ``layers``); 2.2 describes them with
  ``rep_compression``/``def_compression`` (Flat 16) and their counts, as
  pylance 2.2 writes.

Constant pages (2.2 only: every valid visible item holds the same value) keep
the value and the levels, as pylance 2.2 writes them:

* a fixed-width value (booleans as one byte 0/1) in ``inline_value``, its
  little-endian bytes;
* a string or binary value in a value buffer (page buffer 0): u32 buffer
  count (2), u32 size of each, then the Arrow offsets (two, 32 or 64 bits) and
  the bytes;
* then, when the page has nulls or lists, the raw u16 repetition and
  definition levels (two more buffers, either may be empty).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot import versions
from lancelot.encodings.structural.write_repdef import PageLevels
from lancelot.encodings.structural.write_values import storage
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.arrays import arrow_offsets, from_numpy, is_large, to_numpy
from lancelot.util.types import is_plain_fixed, is_variable


def encode_all_null(levels: PageLevels, version: str) -> tuple[pb.PageLayout, list[np.ndarray]]:
    """The all-null page of these levels."""
    layout = pb.ConstantLayout(layers=levels.layers)
    if levels.rep is None and list(levels.layers) == [pb.REPDEF_NULLABLE_ITEM]:
        return pb.PageLayout(constant_layout=layout), []
    rep = levels.rep.astype("<u2") if levels.rep is not None else np.zeros(0, "<u2")
    defs = levels.defs.astype("<u2") if levels.defs is not None else np.zeros(0, "<u2")
    if versions.parse(version).flat_null_levels:
        flat16 = pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=16))
        if len(rep):
            layout.rep_compression.CopyFrom(flat16)
            layout.num_rep_values = len(rep)
        if len(defs):
            layout.def_compression.CopyFrom(flat16)
            layout.num_def_values = len(defs)
    return pb.PageLayout(constant_layout=layout), [rep.view(np.uint8), defs.view(np.uint8)]


def _fixed_rows(arr: pa.Array) -> np.ndarray | None:
    """The valid values of a fixed-width array as (n, bytes) rows (booleans one byte each), or None."""
    t = arr.type
    if arr.null_count == 0 and len(arr) > 2 and arr[0] != arr[len(arr) - 1]:
        return None  # the common case, decided without a copy
    valid = arr.drop_null() if arr.null_count else arr
    if pa.types.is_boolean(t):
        return to_numpy(valid).astype(np.uint8).reshape(-1, 1)
    if not is_plain_fixed(t):
        return None
    width = t.bit_width // 8
    raw = np.frombuffer(valid.buffers()[1], np.uint8)
    return raw[valid.offset * width : (valid.offset + len(valid)) * width].reshape(len(valid), width)


#: values compared before a page is checked in full for one constant value
CONSTANT_SAMPLE = 256


def _sample_varies(arr: pa.Array) -> bool:
    """Do evenly spaced values of ``arr`` (nulls ignored) hold two different values?  A cheap no-go for
    constant pages; a False proves nothing."""
    n = len(arr)
    if n <= 2 * CONSTANT_SAMPLE:
        return False
    sample = arr.take(from_numpy(np.linspace(0, n - 1, CONSTANT_SAMPLE).astype(np.int64)))
    try:
        distinct: int = pc.count_distinct(sample, mode="only_valid").as_py()
        return distinct > 1
    except pa.ArrowException:  # a type without a distinct-count kernel: the full check decides
        return False


def constant_value(values: pa.Array) -> tuple[bytes | None, np.ndarray | None] | None:
    """(inline value, value buffer) when every valid value of the page is the same one, else None.

    Only for pages with at least one valid value; fixed-width values go inline, strings and
    binary to a value buffer; other types (vectors, dictionaries) are never constant pages.
    """
    if pa.types.is_dictionary(values.type) or values.null_count == len(values):
        return None
    arr = storage(values)
    if arr.null_count == 0 and len(arr) > 2 and arr[0] != arr[len(arr) - 1]:
        return None  # the common case, decided on two values
    if _sample_varies(arr):
        return None  # decided on a few hundred values
    if is_variable(arr.type):
        lengths = pc.binary_length(arr)
        lo_hi = pc.min_max(lengths).as_py()
        if lo_hi["min"] != lo_hi["max"] or pc.count_distinct(arr).as_py() != 1:
            return None
        one = arr.drop_null().slice(0, 1) if arr.null_count else arr.slice(0, 1)
        offs = arrow_offsets(one)
        size = int(offs[1] - offs[0])
        wide = "<i8" if is_large(arr.type) else "<i4"
        data = np.frombuffer(one.buffers()[2], np.uint8)[int(offs[0]) : int(offs[1])] if size else np.zeros(0, np.uint8)
        offsets = np.array([0, size], wide).view(np.uint8)
        head = np.array([2, len(offsets), size], "<u4").view(np.uint8)
        return None, np.concatenate([head, offsets, data])
    rows = _fixed_rows(arr)
    if rows is None or len(rows) == 0 or not (rows[-1] == rows[0]).all() or not (rows == rows[0]).all():
        return None
    return rows[0].tobytes(), None


def encode_constant(
    levels: PageLevels, inline: bytes | None, buffer: np.ndarray | None
) -> tuple[pb.PageLayout, list[np.ndarray]]:
    """The 2.2 constant page of one value (``constant_value``'s result) with these levels."""
    layout = pb.ConstantLayout(layers=levels.layers)
    buffers: list[np.ndarray] = []
    if inline is not None:
        layout.inline_value = inline
    else:
        assert buffer is not None  # constant_value gives either an inline value or a value buffer
        buffers.append(buffer)
    if levels.rep is not None or levels.defs is not None:
        rep = levels.rep.astype("<u2") if levels.rep is not None else np.zeros(0, "<u2")
        defs = levels.defs.astype("<u2") if levels.defs is not None else np.zeros(0, "<u2")
        buffers += [rep.view(np.uint8), defs.view(np.uint8)]
    return pb.PageLayout(constant_layout=layout), buffers
