"""Writing 2.3 sparse structure planes from a page's rep/def levels (docs/format-2.3.md,
"Sparse structure").

A sparse structure lists one layer per level of the path, outermost first: an item layer
is a validity set (*SparseValiditySet*: the null or the valid positions, chosen as
``_validity`` says), a list layer (*SparseListLayer*) names its child slots, the slots holding a
non-empty list, the item count of each and its own validity.  Slots: the outermost
layer's are the page rows; below an item layer the same slots (a null slot stays null
below it); below a list layer the items of its non-empty lists.

Sequences are coded as pylance 14 codes them: none as ``Constant{}``, one as a ``Constant``
u64, an arithmetic progression as a ``Range`` (case 14), other positions as a ``Delta`` (case 15) whose
deltas are out-of-line bit-packed in a page buffer; list counts all equal as a
``Constant`` u64, others out-of-line bit-packed in a page buffer.  Page buffers follow the
layers' order (outermost first; in a list layer: non-empty positions, counts, validity).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lancelot.encodings.compression.bitpacking import compress_out_of_line_bitpacking
from lancelot.encodings.compression.block import FixedWidthBlock
from lancelot.encodings.planar.write_dense import SPARSE
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util import wire

# CompressiveEncoding cases (3: Constant; 2.3's 14: Range, 15: Delta)
_CONSTANT, _RANGE, _DELTA = 3, 14, 15
NULL_POSITIONS, VALID_POSITIONS = 1, 2
_ITEM_LAYERS = (pb.REPDEF_ALL_VALID_ITEM, pb.REPDEF_NULLABLE_ITEM)


@dataclass
class SparseStructure:
    """A sparse structure plane and the page buffers its sequences need (in order)."""

    plane: bytes
    buffers: list[np.ndarray]
    num_valid: int  # leaf items neither null nor under a null or empty list


def _u64_block(values: np.ndarray) -> FixedWidthBlock:
    v = np.ascontiguousarray(values, dtype="<u8")
    return FixedWidthBlock(v.view(np.uint8), 64, len(v))


def _sequence(values: np.ndarray, buffers: list[np.ndarray], *, positions: bool) -> bytes:
    """A CompressiveEncoding of ascending positions (or, not ``positions``, of list counts)."""
    n = len(values)
    if n == 0:
        return wire.encode((_CONSTANT, b""))
    v = values.astype(np.int64)
    if not positions:
        if (v == v[0]).all():
            return wire.encode((_CONSTANT, wire.encode((1, int(v[0]).to_bytes(8, "little")))))
        enc, bufs = compress_out_of_line_bitpacking(_u64_block(v))
        buffers.extend(bufs)
        return bytes(enc.SerializeToString())
    if n == 1:  # (a Range needs two values)
        return wire.encode((_CONSTANT, wire.encode((1, int(v[0]).to_bytes(8, "little")))))
    steps = np.diff(v)
    if (steps == steps[0]).all():
        return wire.encode((_RANGE, wire.encode((1, 64), (2, wire.nonzero(int(v[0]))), (3, int(steps[0])))))
    enc, bufs = compress_out_of_line_bitpacking(_u64_block(steps))
    buffers.extend(bufs)
    return wire.encode((_DELTA, wire.encode((1, 64), (2, wire.nonzero(int(v[0]))), (3, enc.SerializeToString()))))


def _cheap(pos: np.ndarray) -> bool:
    """No positions, or a range (two or more, evenly spaced): coded in the message alone."""
    if len(pos) == 0:
        return True
    if len(pos) == 1:
        return False
    steps = np.diff(pos)
    return bool((steps == steps[0]).all())


def _validity(null: np.ndarray, buffers: list[np.ndarray]) -> bytes:
    """A validity set over slots (``null``: True for a null slot), choosing as pylance 14 does: the set
    of positions that is empty or a range when only one of the two is, else the smaller set, else the
    shorter message, else the null positions."""
    options = []
    for meaning, pos in ((NULL_POSITIONS, np.flatnonzero(null)), (VALID_POSITIONS, np.flatnonzero(~null))):
        bufs: list[np.ndarray] = []
        msg = wire.encode((1, meaning), (2, _sequence(pos, bufs, positions=True)), (3, wire.nonzero(len(pos))))
        options.append(((not _cheap(pos), len(pos), len(msg)), msg, bufs))
    chosen = options[1] if options[1][0] < options[0][0] else options[0]
    buffers.extend(chosen[2])
    return chosen[1]


def _stops(layers: Sequence[int]) -> dict[int, tuple[int, bool]]:
    """Definition level -> (layer, outermost first, where the entry stops; whether it stops as null
    (else as an empty list)), as 2.1 numbers the levels (innermost layer first)."""
    out: dict[int, tuple[int, bool]] = {}
    k = len(layers)
    level = 0
    for i, layer in enumerate(layers):  # innermost first
        j = k - 1 - i
        if layer == pb.REPDEF_NULLABLE_ITEM or layer == pb.REPDEF_NULLABLE_LIST:
            level += 1
            out[level] = (j, True)
        elif layer == pb.REPDEF_EMPTYABLE_LIST:
            level += 1
            out[level] = (j, False)
        elif layer == pb.REPDEF_NULL_AND_EMPTY_LIST:
            out[level + 1], out[level + 2] = (j, True), (j, False)
            level += 2
        elif layer not in (pb.REPDEF_ALL_VALID_ITEM, pb.REPDEF_ALL_VALID_LIST):
            raise UnsupportedEncodingError(f"rep/def layer {layer} has no sparse form")
    return out


def sparse_structure(
    layers: Sequence[int],
    rep: np.ndarray | None,
    defs: np.ndarray | None,
    num_rows: int,
    fsl_dims: Sequence[int] = (),
) -> SparseStructure:
    """The sparse structure plane of a page with these 2.1 layers (innermost first) and levels.

    ``fsl_dims``: per layer, outermost first, the dimension of a fixed-size list (of structs) whose
    layer it is, else 0; such a layer (*SparseFixedSizeListLayer* ``{1: dimension, 2: validity}``)
    has a slot per list and ``dimension`` child slots per slot, null ones too; its levels (and
    ``num_rows``) count the child entries, as 2.2's do."""
    if any(fsl_dims):
        return _fixed_size_structure(layers, defs, fsl_dims)
    k = len(layers)
    n = len(defs) if defs is not None else len(rep) if rep is not None else num_rows
    d = np.zeros(n, np.int64) if defs is None else defs.astype(np.int64)
    max_rep = sum(x not in _ITEM_LAYERS for x in layers)
    r = np.full(n, max_rep, np.int64) if rep is None else rep.astype(np.int64)
    stops = _stops(layers)
    bad = sorted(set(np.unique(d).tolist()) - set(stops) - {0})
    if bad:
        raise UnsupportedEncodingError(f"definition levels {bad} past the page's layers")
    table_layer = np.full(max(stops, default=0) + 1, k, np.int64)
    table_null = np.zeros(len(table_layer), bool)
    for level, (j, is_null) in stops.items():
        table_layer[level], table_null[level] = j, is_null
    stop_layer, stop_null = table_layer[d], table_null[d]

    starts = np.flatnonzero(r >= max_rep)  # the outermost slots: page rows
    if len(starts) != num_rows:
        raise UnsupportedEncodingError(f"{len(starts)} rows in the levels of a {num_rows}-row page")
    inherited = np.zeros(len(starts), bool)  # null because an outer item layer is
    alive = np.ones(n, bool)  # entries that own a slot of the current layer
    buffers: list[np.ndarray] = []
    out: list[bytes] = []
    depth = 0
    for j, layer in enumerate(reversed(layers)):  # outermost first
        here = stop_layer[starts] == j
        if layer in _ITEM_LAYERS:
            null = inherited | here
            out.append(wire.encode((1, _validity(null, buffers))))
            inherited = null
            continue
        depth += 1
        null = inherited | (here & stop_null[starts])
        empty = ~inherited & here & ~stop_null[starts]
        filled = ~null & ~empty
        alive[starts[~filled]] = False  # a null or empty list's one entry has no slot below it
        slot_of = np.searchsorted(starts, np.arange(n), side="right") - 1  # (of an alive entry: its slot)
        child = np.flatnonzero(alive & (r >= max_rep - depth))
        counts = np.bincount(slot_of[child], minlength=len(starts))[filled]
        non_empty = np.flatnonzero(filled)
        seq_bufs: list[np.ndarray] = []
        ne = _sequence(non_empty, seq_bufs, positions=True)
        cnt = _sequence(counts, seq_bufs, positions=False)
        val = _validity(null, seq_bufs)
        buffers.extend(seq_bufs)
        out.append(
            wire.encode(
                (
                    2,
                    wire.encode(
                        (1, wire.nonzero(len(child))),
                        (2, ne),
                        (3, wire.nonzero(len(non_empty))),
                        (4, cnt),
                        (5, val),
                    ),
                )
            )
        )
        starts, inherited = child, np.zeros(len(child), bool)
    num_valid = int((~inherited & (stop_layer[starts] == k)).sum())
    plane = wire.encode((SPARSE, wire.encode(*[(1, layer) for layer in out])))
    return SparseStructure(plane, buffers, num_valid)


def _fixed_size_structure(layers: Sequence[int], defs: np.ndarray | None, fsl_dims: Sequence[int]) -> SparseStructure:
    """The sparse structure of a path of item and fixed-size-list layers (no lists): layer ``j``'s slots
    are the page's entries in groups of the dimensions at or below it."""
    k = len(layers)
    if len(fsl_dims) != k or any(x not in _ITEM_LAYERS for x in layers):
        raise UnsupportedEncodingError("fixed-size-list layers need item layers only")
    if defs is None:
        raise UnsupportedEncodingError("a sparse fixed-size-list page without definition levels")
    d = defs.astype(np.int64)
    stops = _stops(layers)
    table = np.full(max(stops, default=0) + 1, k, np.int64)
    for level, (j, _) in stops.items():
        table[level] = j
    stop_layer = table[d]
    n = len(d)
    buffers: list[np.ndarray] = []
    out: list[bytes] = []
    for j in range(k):
        group = int(np.prod([x for x in fsl_dims[j:] if x], dtype=np.int64))
        if n % group:
            raise UnsupportedEncodingError(f"{n} entries are not whole fixed-size lists of {group}")
        null = stop_layer[::group] <= j  # a slot is null where it or a slot above it is
        validity = _validity(null, buffers)
        if fsl_dims[j]:
            out.append(wire.encode((3, wire.encode((1, int(fsl_dims[j])), (2, validity)))))
        else:
            out.append(wire.encode((1, validity)))
    num_valid = int((stop_layer == k).sum())
    plane = wire.encode((SPARSE, wire.encode(*[(1, layer) for layer in out])))
    return SparseStructure(plane, buffers, num_valid)
