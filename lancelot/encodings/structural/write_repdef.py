"""Shredding Arrow arrays into leaf columns with repetition/definition levels (writer side).

(encoding.md, "Repetition and Definition Levels"; lance.encodings21.RepDefLayer.)
Every leaf of a top-level field owns one column.  For each leaf we walk its path
from the top-level array down (struct, list, fixed-size-list-of-values leaf)
and produce one *level entry* per leaf item, plus one entry per null or empty
list (a "special": it owns no item):

* repetition: list layers count from the inside (innermost list = 1); an entry
  that starts a list at layer ``r`` (and every layer inside it) has rep ``r``,
  the outermost list's level marking a new row;
* definition: 0 is a valid item; the outermost null wins.

Levels are first computed with *canonical* definition codes that reserve one
code per item layer and two per list layer (null, empty), numbered from the
inside.  The codes a page really uses are only known when the page is cut, so
``page_levels`` maps the canonical codes of one page onto the compact levels
and ``RepDefLayer`` list pylance expects (a list layer without empties is
``NULLABLE_LIST``, one without nulls or empties ``ALL_VALID_LIST``...).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancelot import field_metadata
from lancelot.encodings.dictionary_pages import join_values
from lancelot.errors import UnsupportedTypeError
from lancelot.field_metadata import is_list_like, is_variable_width
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.arrays import from_numpy, to_numpy
from lancelot.versions import FileVersion


def is_packed(field: pa.Field) -> bool:
    """A struct stored row by row in one column (``field_metadata.is_packed_struct`` at 2.1+)."""
    return field_metadata.is_packed_struct(field, FileVersion.V2_1)


def is_leaf(field: pa.Field) -> bool:
    """Whether a field owns a column itself (``field_metadata.owns_column`` at 2.1+).

    The writer also takes a fixed-size list of strings / binary as one leaf (all-null pages only; the
    reader walks it as a fixed-size list over a string leaf: the same one column)."""
    t = field.type
    if pa.types.is_fixed_size_list(t) and is_variable_width(t.value_type):
        return True
    return field_metadata.owns_column(field, FileVersion.V2_1)


@dataclass(frozen=True)
class Step:
    """One node on the path to a leaf: ``kind`` is item, struct, list or fsl; ``child`` the struct child
    taken, ``size`` the list size of a fixed-size list (of structs)."""

    kind: str
    child: int = 0
    nullable: bool = True
    size: int = 1


@dataclass(frozen=True)
class LeafPath:
    """The path from a top-level field to one leaf and its canonical level codes."""

    steps: tuple[Step, ...]  # outer first; the last step is the leaf ("item")
    leaf: pa.Field
    max_rep: int
    codes: tuple[tuple[int, ...], ...]  # per step: (null,) for items, (null, empty) for lists
    visible_codes: int  # canonical codes <= this own an item (layers inside the first list)
    #: every page declares the layers the schema allows, not just those its data uses
    stable_layers: bool = False

    @functools.cached_property  # (paths are made once per schema: write_field.plan_leaves)
    def max_code(self) -> int:
        return max((c for cs in self.codes for c in cs), default=0)

    @functools.cached_property
    def items_per_row(self) -> int:
        """Level entries per row below fixed-size lists (of structs): pylance counts a page's rows in them."""
        return int(np.prod([s.size for s in self.steps if s.kind == "fsl"], dtype=np.int64))


def _walk(field: pa.Field, prefix: list[Step], out: list[tuple[list[Step], pa.Field]]) -> None:
    t = field.type
    nullable = field.nullable
    if is_leaf(field):  # a struct leaf is packed, or has no children
        out.append((prefix + [Step("item", 0, nullable)], field))
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            _walk(t.field(i), prefix + [Step("struct", i, nullable)], out)
    elif pa.types.is_map(t):
        # a map is a list of non-null (key, value) entries structs
        for i, child in enumerate((t.key_field, t.item_field)):
            _walk(child, prefix + [Step("list", 0, nullable), Step("struct", i, False)], out)
    elif is_list_like(t):
        _walk(t.value_field, prefix + [Step("list", 0, nullable)], out)
    elif pa.types.is_fixed_size_list(t) and _fsl_of_struct(t):
        # (2.2) a layer that multiplies the entries, no repetition level: pylance reads it only with structs
        _walk(t.value_field, prefix + [Step("fsl", 0, nullable, t.list_size)], out)
    else:
        raise UnsupportedTypeError(f"{t} ({field.name!r}) is not yet writable at 2.1+")


def _fsl_of_struct(t: pa.DataType) -> bool:
    """A fixed-size list whose items are structs (pylance supports no other nested fixed-size list)."""
    return bool(pa.types.is_struct(t.value_type))


def leaf_paths(field: pa.Field) -> list[LeafPath]:
    """The leaf columns of a top-level field, in file (pre-order) order."""
    found: list[tuple[list[Step], pa.Field]] = []
    _walk(field, [], found)
    paths = []
    for steps, leaf in found:
        codes: list[tuple[int, ...]] = [()] * len(steps)
        nxt, visible, seen_list = 1, 0, False
        for i in range(len(steps) - 1, -1, -1):  # inside out
            if steps[i].kind == "list":
                codes[i] = (nxt, nxt + 1)
                nxt += 2
                seen_list = True
            else:
                codes[i] = (nxt,)
                nxt += 1
                if not seen_list:
                    visible = nxt - 1
        max_rep = sum(s.kind == "list" for s in steps)
        if max_rep and any(s.kind == "fsl" for s in steps):
            raise UnsupportedTypeError(
                f"{field.name!r}: a fixed-size list of structs with lists above or below "
                "it is not writable (pylance writes none)"
            )
        # pylance 14 misreads a struct above a list when its pages declare different layers, or declare a
        # list below the struct all-valid where its Arrow array has nulls (under null structs), so such paths
        # declare every layer the schema allows
        last_list = max((i for i, s in enumerate(steps) if s.kind == "list"), default=-1)
        stable = max_rep > 0 and any(s.kind == "struct" for s in steps[:last_list])
        paths.append(LeafPath(tuple(steps), leaf, max_rep, tuple(codes), visible, stable))
    return paths


@dataclass
class Shred:
    """One batch of one leaf column: levels (None when absent) and the visible values."""

    rep: np.ndarray | None  # uint16 per level entry
    defc: np.ndarray | None  # canonical codes (uint16) per level entry; None = all valid
    values: pa.Array  # one per visible entry (null where any layer is null)
    num_rows: int

    @property
    def num_levels(self) -> int:
        if self.rep is not None:
            return len(self.rep)
        return len(self.defc) if self.defc is not None else len(self.values)


def _validity(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return to_numpy(arr.is_valid())


def _list_offsets(arr: pa.Array) -> np.ndarray:
    return to_numpy(arr.offsets).astype(np.int64)


def shred(path: LeafPath, arr: pa.Array) -> Shred:
    """The levels and visible values of one leaf for one batch of the top-level array."""
    n = len(arr)
    if len(path.steps) == 1:  # a top-level leaf: its own nulls are its only levels
        valid = _validity(arr)
        defc = None if valid is None else np.where(valid, 0, path.codes[0][0]).astype(np.uint16)
        return Shred(None, defc, arr, n)
    elem = np.arange(n, dtype=np.int64)
    defc = np.zeros(n, np.uint16)
    rep = np.zeros(n, np.uint16) if path.max_rep else None
    identity = True  # the values are exactly `cur` (no list, no null parent above the leaf)
    cur = arr
    rep_level = path.max_rep
    for step, codes in zip(path.steps, path.codes):
        # entries under a null or empty parent are dead (elem -1): they index nothing, which matters when
        # the layer below has no items at all (e.g. lists of lists whose inner lists are all null or empty)
        valid = _validity(cur)
        live = elem >= 0
        if valid is not None:
            nulls = np.zeros(len(elem), bool)
            nulls[live] = ~valid[elem[live]]
            defc[nulls] = codes[0]
            elem[nulls] = -1
            identity &= step.kind == "item"  # the leaf's own nulls are already nulls of its values
            live &= ~nulls
        if step.kind == "struct":
            cur = cur.field(step.child)
        elif step.kind == "fsl":  # every entry becomes `size` entries (a null one `size` nulls)
            d = step.size
            base = np.repeat(np.where(elem >= 0, (elem + cur.offset) * d, -1), d)
            elem = np.where(base >= 0, base + np.tile(np.arange(d, dtype=np.int64), len(elem)), -1)
            defc = np.repeat(defc, d)
            identity = False
            cur = cur.values
        elif step.kind == "list":
            offs = _list_offsets(cur)
            starts = np.zeros(len(elem), np.int64)
            lens = np.zeros(len(elem), np.int64)
            at = elem[live]
            starts[live] = offs[at]
            lens[live] = offs[at + 1] - starts[live]
            empty = live & (lens == 0)
            defc[empty] = codes[1]
            expand = live & ~empty
            counts = np.where(expand, lens, 1)
            total = int(counts.sum())
            first = np.cumsum(counts) - counts
            assert rep is not None  # a list step means path.max_rep > 0, so `rep` was allocated
            new_rep = np.zeros(total, np.uint16)
            new_rep[first] = np.where(rep != 0, rep, rep_level)
            rep = new_rep
            defc = np.repeat(defc, counts)
            within = np.arange(total, dtype=np.int64) - np.repeat(first, counts)
            elem = np.where(np.repeat(expand, counts), np.repeat(starts, counts) + within, -1)
            rep_level -= 1
            identity = False
            cur = cur.values
    if path.max_rep:
        visible = defc <= path.visible_codes
        idx = elem[visible]
    else:
        idx = elem
    if identity:
        values = cur
    elif len(idx) and idx[0] >= 0 and int(idx[-1] - idx[0]) == len(idx) - 1 and bool(np.all(np.diff(idx) == 1)):
        values = cur.slice(int(idx[0]), len(idx))  # a contiguous run of live items (lists without nulls)
    else:
        values = cur.take(from_numpy(idx, mask=idx < 0))
    return Shred(rep, defc if defc.any() else None, values, n * path.items_per_row)


def concat_shreds(parts: list[Shred]) -> Shred:
    """Join consecutive shreds of one column."""
    if len(parts) == 1:
        return parts[0]
    rep = None if parts[0].rep is None else np.concatenate([p.rep for p in parts])
    if any(p.defc is not None for p in parts):
        defc = np.concatenate([p.defc if p.defc is not None else np.zeros(p.num_levels, np.uint16) for p in parts])
    else:
        defc = None
    values = join_values([p.values for p in parts])
    return Shred(rep, defc, values, sum(p.num_rows for p in parts))


def split_flat_parts(parts: list[Shred], row_bounds: np.ndarray) -> list[list[Shred]]:
    """Cut consecutive shreds of a column without repetition (one level entry and one value per row) at the
    given row boundaries: per page, the slices of the parts it spans, left to be joined where the page is
    encoded."""
    ends = np.cumsum([p.num_rows for p in parts])
    starts = ends - np.array([p.num_rows for p in parts])
    pages = []
    for a, b in zip(row_bounds[:-1].tolist(), row_bounds[1:].tolist()):
        page = []
        for k in range(int(np.searchsorted(ends, a, side="right")), len(parts)):
            p0 = int(starts[k])
            if p0 >= b:
                break
            lo, hi = max(a, p0) - p0, min(b, int(ends[k])) - p0
            part = parts[k]
            page.append(
                part
                if (lo, hi) == (0, part.num_rows)
                else Shred(
                    None, None if part.defc is None else part.defc[lo:hi], part.values.slice(lo, hi - lo), hi - lo
                )
            )
        pages.append(page)
    return pages


def slice_rows(s: Shred, path: LeafPath, row_bounds: np.ndarray) -> list[Shred]:
    """Cut a shred at the given row boundaries (``row_bounds`` ascending, from 0 to num_rows)."""
    if s.rep is None:
        lev = row_bounds
    else:
        starts = np.flatnonzero(s.rep == path.max_rep)
        lev = np.append(starts, len(s.rep))[row_bounds]
    if s.defc is None or not path.max_rep:
        items = lev
    else:
        vis = np.concatenate([[0], np.cumsum(s.defc <= path.visible_codes)])
        items = vis[lev]
    out = []
    for i in range(len(row_bounds) - 1):
        a, b = int(lev[i]), int(lev[i + 1])
        ia, ib = int(items[i]), int(items[i + 1])
        out.append(
            Shred(
                None if s.rep is None else s.rep[a:b],
                None if s.defc is None else s.defc[a:b],
                s.values.slice(ia, ib - ia),
                int(row_bounds[i + 1] - row_bounds[i]),
            )
        )
    return out


@dataclass
class PageLevels:
    """The levels of one page as written: compact definition levels and the layers (innermost first)."""

    rep: np.ndarray | None
    defs: np.ndarray | None
    layers: list[pb.RepDefLayer]
    max_rep: int
    max_def: int
    max_visible: int  # definition levels <= this own an item


def page_levels(path: LeafPath, rep: np.ndarray | None, defc: np.ndarray | None) -> PageLevels:
    """Map canonical codes onto the levels pylance writes for a page with these entries."""
    if rep is None and defc is None and not path.max_rep and not path.stable_layers:  # (no lists, no nulls)
        return PageLevels(None, None, [pb.REPDEF_ALL_VALID_ITEM] * len(path.steps), 0, 0, 0)
    present = np.zeros(path.max_code + 1, bool)
    if defc is not None:
        present[defc] = True
    if path.stable_layers:
        for step, codes in zip(path.steps, path.codes):
            present[codes[0]] |= step.nullable
            if step.kind == "list":
                present[codes[1]] = True
    else:
        # pylance pushes a struct's nulls down into its children (Arrow's flattened validity): each
        # layer below a struct whose nulls this page holds is nullable too, down to the first list
        # (a null list has no items); pylance projects a child alone through these layers
        carry = False
        for step, codes in zip(path.steps, path.codes):  # outside in
            present[codes[0]] |= carry
            carry = step.kind == "struct" and bool(present[codes[0]])
    table = np.zeros(path.max_code + 1, np.uint16)
    layers: list[pb.RepDefLayer] = []
    level, max_visible, seen_list = 0, 0, False
    for step, codes in zip(reversed(path.steps), reversed(path.codes)):  # inside out
        if step.kind == "list":
            has_null, has_empty = present[codes[0]], present[codes[1]]
            if has_null and has_empty:
                table[codes[0]], table[codes[1]] = level + 1, level + 2
                layers.append(pb.REPDEF_NULL_AND_EMPTY_LIST)
                level += 2
            elif has_null:
                table[codes[0]] = level + 1
                layers.append(pb.REPDEF_NULLABLE_LIST)
                level += 1
            elif has_empty:
                table[codes[1]] = level + 1
                layers.append(pb.REPDEF_EMPTYABLE_LIST)
                level += 1
            else:
                layers.append(pb.REPDEF_ALL_VALID_LIST)
            seen_list = True
        else:
            if present[codes[0]]:
                level += 1
                table[codes[0]] = level
                layers.append(pb.REPDEF_NULLABLE_ITEM)
            else:
                layers.append(pb.REPDEF_ALL_VALID_ITEM)
            if not seen_list:
                max_visible = level
    if defc is None and level and rep is not None:  # stable layers (which imply lists) over all-valid entries
        defc = np.zeros(len(rep), np.uint16)
    defs = table[defc] if defc is not None and level else None
    if not path.max_rep:
        max_visible = level
    return PageLevels(rep, defs, layers, path.max_rep, level, max_visible)
