"""Repetition and definition levels back into Arrow structure (encoding.md,
"Repetition and Definition Levels"; lance.encodings21.RepDefLayer).

``layers`` lists one RepDefLayer per level of nesting, innermost (the item)
first.  Definition levels count up from the inside: 0 is a valid item; each
nullable layer takes one level (a list that is both nullable and emptyable
takes two: null, then empty) on top of the levels of the layers inside it.
Repetition levels count list layers from the inside too: an entry with
repetition ``r > 0`` starts a new list at the r-th list layer (and all inner
ones); the outermost list's level marks the start of a row.

Decoding walks the path from the outside in, keeping ``starts``: the entry
indices where an element of the current level begins.  A list's children are
the entries that start an element one level down (``rep >= r - 1``) and are
not null/empty at this list or above (``def <= levels inside``); its offsets
are ``searchsorted(children, starts)``.  A fixed-size list (2.2, structural)
groups ``dimension`` consecutive elements.  The leaf slots are exactly the
*visible* entries, which own one value each in the page's value data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from lancelot.encodings.structural.paths import ColumnPath
from lancelot.encodings.structural.rows import row_range
from lancelot.errors import CorruptFileError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.arrays import from_numpy

ALL_VALID_ITEM = pb.REPDEF_ALL_VALID_ITEM
ALL_VALID_LIST = pb.REPDEF_ALL_VALID_LIST
NULLABLE_ITEM = pb.REPDEF_NULLABLE_ITEM
NULLABLE_LIST = pb.REPDEF_NULLABLE_LIST
EMPTYABLE_LIST = pb.REPDEF_EMPTYABLE_LIST
NULL_AND_EMPTY_LIST = pb.REPDEF_NULL_AND_EMPTY_LIST

_DEF_LEVELS: dict[int, int] = {  # keyed by plain ints: LevelMeaning.layers holds ints
    ALL_VALID_ITEM: 0,
    ALL_VALID_LIST: 0,
    NULLABLE_ITEM: 1,
    NULLABLE_LIST: 1,
    EMPTYABLE_LIST: 1,
    NULL_AND_EMPTY_LIST: 2,
}
_LISTS = (ALL_VALID_LIST, NULLABLE_LIST, EMPTYABLE_LIST, NULL_AND_EMPTY_LIST)


def is_list_layer(layer: int) -> bool:
    return layer in _LISTS


@dataclass(frozen=True)
class LevelMeaning:
    """What each repetition/definition level of a page means (from its layers)."""

    layers: tuple[int, ...]
    base: tuple[int, ...]  # def levels used by the layers inside layer k
    max_rep: int
    max_def: int
    max_visible: int  # def levels of the layers inside the innermost list

    @classmethod
    def of(cls, layers: Sequence[int]) -> LevelMeaning:
        return _meaning(tuple(map(int, layers)))

    def rep_level(self, k: int) -> int:
        """The repetition level of list layer ``k`` (innermost list = 1)."""
        return sum(1 for layer in self.layers[: k + 1] if layer in _LISTS)

    def null_level(self, k: int) -> int | None:
        layer = self.layers[k]
        if layer in (NULLABLE_ITEM, NULLABLE_LIST, NULL_AND_EMPTY_LIST):
            return self.base[k] + 1
        return None

    def empty_level(self, k: int) -> int | None:
        layer = self.layers[k]
        if layer == EMPTYABLE_LIST:
            return self.base[k] + 1
        if layer == NULL_AND_EMPTY_LIST:
            return self.base[k] + 2
        return None


@lru_cache(maxsize=256)
def _meaning(layers: tuple[int, ...]) -> LevelMeaning:
    """``LevelMeaning.of`` (memoized: every page of a column has the same few layers)."""
    if not layers:
        raise CorruptFileError("page has no rep/def layers")
    base, total = [], 0
    for layer in layers:
        if layer not in _DEF_LEVELS:
            raise CorruptFileError(f"unknown rep/def layer {layer}")
        base.append(total)
        total += _DEF_LEVELS[layer]
    lists = [k for k, layer in enumerate(layers) if layer in _LISTS]
    visible = base[lists[0]] if lists else total
    return LevelMeaning(layers, tuple(base), len(lists), total, visible)


def check_levels(meaning: LevelMeaning, rep: np.ndarray | None, dfn: np.ndarray | None) -> None:
    """Reject levels the layers cannot produce."""
    if rep is not None and len(rep) and int(rep.max()) > meaning.max_rep:
        raise CorruptFileError(f"repetition level {int(rep.max())} exceeds the page's {meaning.max_rep} lists")
    if dfn is not None and len(dfn) and int(dfn.max()) > meaning.max_def:
        raise CorruptFileError(f"definition level {int(dfn.max())} exceeds the page's maximum {meaning.max_def}")
    if meaning.max_rep and rep is None:
        raise CorruptFileError("page has list layers but no repetition levels")
    if rep is not None and dfn is not None and len(rep) != len(dfn):
        raise CorruptFileError(f"{len(rep)} repetition levels but {len(dfn)} definition levels")


def row_starts(meaning: LevelMeaning, rep: np.ndarray | None, num_levels: int) -> np.ndarray:
    """Level index where each page row starts."""
    if meaning.max_rep == 0:
        return row_range(0, num_levels)
    starts = np.flatnonzero(rep == meaning.max_rep)
    if num_levels and (len(starts) == 0 or starts[0] != 0):
        raise CorruptFileError("levels do not start at the beginning of a row")
    return starts


def visible_mask(meaning: LevelMeaning, dfn: np.ndarray | None, num_levels: int) -> np.ndarray | None:
    """Which levels own a value (None: all of them)."""
    if dfn is None or meaning.max_rep == 0:
        return None
    return dfn <= meaning.max_visible


LeafBuilder = Callable[[np.ndarray | None], pa.Array]


def unravel(
    path: ColumnPath,
    meaning: LevelMeaning,
    rep: np.ndarray | None,
    dfn: np.ndarray | None,
    num_levels: int,
    leaf: LeafBuilder,
) -> pa.Array:
    """The column's path array (types pruned to the path) from its levels.

    ``leaf(valid)`` must return the leaf array for the visible entries, in order,
    with validity ``valid`` (None = all valid).
    """
    steps = path.steps
    if len(meaning.layers) != len(steps) + 1:
        raise CorruptFileError(f"page has {len(meaning.layers)} rep/def layers but the field needs {len(steps) + 1}")
    check_levels(meaning, rep, dfn)
    for i, step in enumerate(steps):
        k = len(steps) - i
        if (step.kind == "list") != is_list_layer(meaning.layers[k]):
            raise CorruptFileError(f"rep/def layer {k} does not match the field's {step.kind} level")
    if is_list_layer(meaning.layers[0]):
        raise CorruptFileError("the item layer is a list layer")
    units = row_starts(meaning, rep, num_levels)
    scale = path.row_scale
    if len(units) % scale:
        raise CorruptFileError(f"{len(units)} level rows are not a multiple of the fixed-size list {scale}")
    return _build(_Tree(path, meaning, rep, dfn, leaf), 0, units, scale)


def _defs_at(dfn: np.ndarray | None, idx: np.ndarray) -> np.ndarray | None:
    return None if dfn is None else dfn[idx]


def _mask(invalid: np.ndarray | None) -> pa.Array | None:
    if invalid is None or not invalid.any():
        return None
    return from_numpy(invalid, type=pa.bool_())


class _Tree(NamedTuple):
    """What every level of ``_build`` reads: the path, its levels' meaning, the levels, the leaf."""

    path: ColumnPath
    meaning: LevelMeaning
    rep: np.ndarray | None
    dfn: np.ndarray | None
    leaf: LeafBuilder


def _build(tree: _Tree, i: int, starts: np.ndarray, scale: int) -> pa.Array:
    """The array of path step ``i`` whose entries start at levels ``starts`` (``scale`` levels a
    row inside fixed-size lists)."""
    path, meaning, rep, dfn, leaf = tree
    steps = path.steps
    k = len(steps) - i  # layer index of this node
    elems = starts[::scale] if scale > 1 else starts
    d = _defs_at(dfn, elems)
    if i == len(steps):  # the leaf
        null = meaning.null_level(0)
        valid = None if (d is None or null is None) else d < null
        return leaf(valid)
    step = steps[i]
    null_level = meaning.null_level(k)
    invalid = None
    if d is not None and null_level is not None:
        if step.kind == "list":
            invalid = (d == null_level) | (d > meaning.base[k] + _DEF_LEVELS[meaning.layers[k]])
        else:
            invalid = d >= null_level
    elif d is not None and step.kind == "list":
        invalid = d > meaning.base[k] + _DEF_LEVELS[meaning.layers[k]]
    if step.kind == "struct":
        child = _build(tree, i + 1, starts, scale)
        field = step.type.field(0)
        return pa.StructArray.from_arrays([child], fields=[field], mask=_mask(invalid))
    if step.kind == "fsl":
        child = _build(tree, i + 1, starts, scale // step.dimension)
        return pa.FixedSizeListArray.from_arrays(child, type=step.type, mask=_mask(invalid))
    # a list (or map) level
    if scale != 1:
        raise CorruptFileError("a fixed-size list of lists cannot be read")
    if rep is None:  # check_levels rejects such pages
        raise CorruptFileError("page has list layers but no repetition levels")
    r = meaning.rep_level(k)
    inside = meaning.base[k]
    sel = rep >= r - 1
    if dfn is not None:
        sel &= dfn <= inside
    children = np.flatnonzero(sel)
    offsets = np.empty(len(elems) + 1, dtype=np.int64)
    offsets[:-1] = np.searchsorted(children, elems)
    offsets[-1] = len(children)
    child = _build(tree, i + 1, children, 1)
    large = pa.types.is_large_list(step.type)
    if not large and len(children) >= 1 << 31:
        raise CorruptFileError("more than 2^31 list items in one page")
    off = from_numpy(offsets, type=pa.int64() if large else pa.int32())
    t = step.type
    if pa.types.is_map(step.full_type) or pa.types.is_map(t):
        t = pa.list_(pa.field("entries", child.type, nullable=False))
    cls = pa.LargeListArray if large else pa.ListArray
    return cls.from_arrays(off, child, type=t, mask=_mask(invalid))
