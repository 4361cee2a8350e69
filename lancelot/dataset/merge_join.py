"""The join of ``merge_insert``: which live rows of a target fragment match which source rows on the key columns (SQL
inner-join semantics: a null key matches nothing).

Only the key columns of the target are read.  When the first key column is an integer column and the source's keys of it
span a modest range, a lookup table over that range (one byte per key value) first keeps the target rows whose first key
any source row has: the hash join then runs over those candidates only, not over every row of the fragment (an upsert of
a few source rows into a large table reads its keys once and joins a few of them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.changes import (
    SCAN_ROWS,
    ChangeInputError,
    by_fragment,
    fragment_map,
    matching_positions,
    matching_rows,
    row_groups,
)
from lancelot.dataset.scan import apply_filter, filter_columns
from lancelot.errors import LanceError

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment

SRC = "__lancelot_src"
POS = "__lancelot_pos"

#: the widest range of first-key values the candidate lookup covers (one byte per value)
LOOKUP_SPAN = 1 << 26
_EMPTY = np.empty(0, np.int64)


class KeyJoin:
    """The source's keys, joined with each fragment's in turn; with ``kept`` (merge_insert's by-source condition), the
    live rows that hold it too, found by the same scan of the keys (``kept_rows``)."""

    def __init__(self, src: pa.Table, on: list[str], kept: pc.Expression | None = None) -> None:
        self.on = on
        self.keys = src.select(on).append_column(SRC, pa.array(np.arange(src.num_rows, dtype=np.int64)))
        self._lo, self._table = _lookup(src.column(on[0]))
        self._kept = kept
        #: fragment id -> the live positions ``kept`` holds for (int64, ascending), filled as ``matches`` yields
        self.kept_rows: dict[int, np.ndarray] = {}

    def matches(self, frags: list[Fragment]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per fragment, in order: (live positions, matched positions, their source rows), the matched pairs in no
        particular order (int64 arrays); a large fragment alone (fragments side by side), small ones joined by
        groups of ``SCAN_ROWS`` rows (one scan of their keys and one join per group, not one per fragment)."""
        groups = list(row_groups(frags, SCAN_ROWS))
        if all(len(g) == 1 for g in groups):
            yield from fragment_map(self._match, frags)
            return
        for g in groups:
            yield from (self._match(g[0]),) if len(g) == 1 else self._match_group(g)

    def _match_group(self, frags: list[Fragment]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        ds = frags[0].dataset
        kept = filter_columns(self._kept, ds.schema.names) if self._kept is not None else []
        more = [c for c in kept if c not in self.on]
        tk = matching_rows(ds, None, self.on + more, frags)
        addr = tk.column("_rowaddr").to_numpy().astype(np.uint64, copy=False)
        if self._kept is not None:
            self._keep_group(tk, f"dataset {ds.uri!r} version {ds.version}")
        tk = tk.select(self.on)
        live = dict(by_fragment(np.sort(addr)))
        if self._table is not None:  # the candidates only
            cand = np.flatnonzero(self._candidates(tk.column(0)))
            tk, addr = tk.take(pa.array(cand)), addr[cand]
        pos, srow = self._join(tk.append_column(POS, pa.array(addr.astype(np.int64))), self.keys)
        order = np.argsort(pos, kind="stable")
        pos, srow = pos[order].astype(np.uint64), srow[order]
        ids = (pos >> np.uint64(32)).astype(np.int64)
        for f in frags:
            fid = f.fragment_id
            lo, hi = np.searchsorted(ids, [fid, fid + 1])
            p = (pos[lo:hi] & np.uint64(0xFFFFFFFF)).astype(np.int64)
            yield live.get(fid, _EMPTY), p, srow[lo:hi]

    def _keep_group(self, tk: pa.Table, where: str) -> None:
        """``kept_rows`` of the fragments of ``tk`` (their live rows' columns and ``_rowaddr``)."""
        assert self._kept is not None
        try:
            hit = apply_filter(tk, self._kept, where).column("_rowaddr").to_numpy()
        except LanceError as e:
            raise ChangeInputError(e.message) from None
        self.kept_rows.update(by_fragment(np.sort(hit.astype(np.uint64, copy=False))))

    def _match(self, f: Fragment) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._kept is not None:
            self.kept_rows[f.fragment_id] = matching_positions(f, self._kept)
        live = matching_positions(f, None)
        if not len(live):
            return live, live, live
        n = f.physical_rows
        if self._table is None:
            tk = f.read_physical(self.on, 0, n)
            if len(live) != n:  # deleted rows out (a read of the whole key column beats a take)
                tk = tk.take(pa.array(live))
            return live, *self._join(tk.append_column(POS, pa.array(live)), self.keys)
        first = f.read_physical(self.on[:1], 0, n).column(0)
        mask = self._candidates(first)
        if len(live) != n:
            mask[f.deleted_positions()] = False
        cand = np.flatnonzero(mask)
        if not len(cand):
            return live, _EMPTY, _EMPTY
        tk = pa.table({self.on[0]: first.take(pa.array(cand))})
        if len(self.on) > 1:
            rest = f.take_physical(self.on[1:], cand)
            for name, col in zip(rest.column_names, rest.columns):
                tk = tk.append_column(name, col)
        # the source's keys within the candidates' range of the first key (a table clustered by its
        # key, as most are, holds a slice of the source's keys per fragment): a smaller hash table
        mm = pc.min_max(tk.column(0))
        k0 = self.keys.column(0)
        keys = self.keys.filter(pc.and_(pc.greater_equal(k0, mm["min"]), pc.less_equal(k0, mm["max"])))
        return live, *self._join(tk.append_column(POS, pa.array(cand)), keys)

    def _join(self, tk: pa.Table, keys: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        j = tk.join(keys, self.on, join_type="inner", use_threads=False)
        return j.column(POS).to_numpy().astype(np.int64), j.column(SRC).to_numpy().astype(np.int64)

    def _candidates(self, col: pa.ChunkedArray) -> np.ndarray:
        """A writable bool mask: rows whose value (not null) some source row's first key has."""
        assert self._table is not None
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        valid = None
        if arr.null_count:
            valid = arr.is_valid().to_numpy(zero_copy_only=False)
            arr = pc.fill_null(arr, 0)
        # true matches land in [1, span]; overflow (values near the type's ends) and out-of-range values
        # are clipped onto the False ends or hit a false candidate, which the join then drops
        d = np.subtract(arr.to_numpy(), np.int64(self._lo - 1), dtype=np.int64, casting="unsafe")
        mask: np.ndarray = np.take(self._table, d, mode="clip")
        if valid is not None:
            mask &= valid
        return mask


def _lookup(col: pa.ChunkedArray) -> tuple[int, np.ndarray | None]:
    """(lowest value, table) of the source's first key: ``table[1 + v - lowest]`` says whether a source row has value
    ``v``; the first and last entries are False (every value out of range is clipped onto them).  No table for a
    non-integer column or too wide a range."""
    if not pa.types.is_integer(col.type):
        return 0, None
    vals = col.drop_null()
    if not len(vals):
        return 0, None
    mm = pc.min_max(vals)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    span = hi - lo + 1
    if span > LOOKUP_SPAN or lo <= -(1 << 63) + 1 or hi >= 1 << 63:
        return 0, None
    v = vals.combine_chunks() if isinstance(vals, pa.ChunkedArray) else vals
    table = np.zeros(span + 2, dtype=bool)
    table[np.subtract(v.to_numpy(), np.int64(lo - 1), dtype=np.int64, casting="unsafe")] = True
    return lo, table
