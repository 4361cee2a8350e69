"""Reads of several small fragments at once: what a scan of a dataset of many small fragments runs.

``read_group(frags, ...)`` returns what ``[f.read(...) for f in frags]`` returns, but pays each per-read pyarrow call
once for the whole group instead of once per fragment: the physical rows of every fragment (their data files opened and
read one by one, as always) are concatenated, then the deleted rows of all are dropped by one filter, then the scan's
filter (when given) runs once over the rows of all, and only then are the remaining columns read, from the fragments
where rows passed (late materialisation, as ``Fragment.read`` does).  The result is cut back into one table per fragment
(zero-copy slices), in order, so row addresses, row ids and projections stay per fragment.  Over an object store the
group's files are fetched side by side (group_files.py), and fragments read by their own path are read side by side too
(``row_selection.side_by_side``), so a group costs a round trip or so, not one per request."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.fragment_columns import POS, scan_schema
from lancelot.dataset.group_fetch import read_deletions
from lancelot.dataset.group_files import Files, group_files, group_table
from lancelot.dataset.manifest import rows_trusted
from lancelot.dataset.row_selection import side_by_side
from lancelot.util.pools import shared_pool

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.scan import ZoneFilter

_FRAG = "__lancelot_fragment"
#: fragments of at most this many rows read their other columns whole for the rows a filter passed
WHOLE_READ_ROWS = 4096


def _pieces(
    frags: list[Fragment], cols: list[str], zf: list[ZoneFilter], files: Files | None
) -> tuple[pa.Table, list[int]]:
    """The rows each fragment may contribute (all, or the zone-map ranges a filter may match) of ``cols``, live rows
    only, with their physical positions (``POS``) and the group index of their fragment (``_FRAG``), and each
    fragment's first row in that table (and the end)."""
    whole = group_table(frags, files, cols, list(range(len(frags)))) if files is not None else None
    tables: list[pa.Table] = []
    starts: list[int] = []  # each piece's first physical row
    sizes: list[int] = []
    which: list[int] = []
    gone: list[np.ndarray] = []  # deleted rows, as positions in the concatenated table
    at = 0

    def one(f: Fragment) -> tuple[list[tuple[int, int]], np.ndarray | None, list[pa.Table]]:
        """The fragment's ranges to read, its deleted rows (read when it contributes rows: a filter's zone maps may
        prune it whole) and, unless read together, its tables."""
        ranges = [(a, b) for a, b in (f.zone_ranges(zf) if zf and whole is None else [(0, f.physical_rows)]) if b > a]
        deleted = f.deleted_positions() if ranges else None
        return ranges, deleted, [f.read_physical(cols, a, b) for a, b in ranges] if whole is None else []

    # remote: the fragments side by side (their deletion files, footers and pages in flight together)
    per = side_by_side(frags[0].dataset, frags, one) if whole is None else [one(f) for f in frags]
    for k, (f, (ranges, deleted, tabs)) in enumerate(zip(frags, per)):
        tables.extend(tabs)
        for a, b in ranges:
            assert deleted is not None
            starts.append(a)
            sizes.append(b - a)
            which.append(k)
            if len(deleted):
                d = deleted[(deleted >= a) & (deleted < b)] if a or b < f.physical_rows else deleted
                if len(d):
                    gone.append(d.astype(np.int64) + (at - a))
            at += b - a
    if whole is not None:
        tables = [whole]
    if not tables:
        t = frags[0].empty_table(list(cols))
        return t.append_column(POS, pa.array([], pa.int64())).append_column(_FRAG, pa.array([], pa.int32())), []
    t = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    if not cols:  # a filter of no column (``TRUE``): its rows, without columns
        t = pa.table({POS: pa.nulls(at)}).drop_columns([POS])
    # every piece's physical positions at once: the row's index, less its piece's first index, plus its start
    first = np.cumsum([0, *sizes[:-1]])
    shift = np.repeat(np.asarray(starts, dtype=np.int64) - first, sizes)
    t = t.append_column(POS, pa.array(np.arange(at, dtype=np.int64) + shift))
    t = t.append_column(_FRAG, pa.array(np.repeat(np.array(which, dtype=np.int32), sizes)))
    if gone:
        keep = np.ones(at, dtype=bool)
        keep[np.concatenate(gone)] = False
        t = t.filter(pa.array(keep))
    return t, sizes


def _group(
    frags: list[Fragment], columns: list[str], filter: pc.Expression | None
) -> tuple[pa.Table, list[str], list[str]]:
    """The live rows of the group that pass ``filter`` (the filter's columns, the other columns when the group's files
    were read together, POS and _FRAG), and (columns read, columns still to read)."""
    from lancelot.dataset.scan import apply_filter, filter_columns, zone_filters

    ds = frags[0].dataset
    fcols = filter_columns(filter, ds.schema.names) if filter is not None else list(columns)
    rest = [c for c in columns if c not in fcols]
    zf = zone_filters(filter) if filter is not None else []
    files = group_files(frags, fcols + rest, bool(zf))
    if files is not None:
        read_deletions(frags)
    t, _ = _pieces(frags, fcols, zf, files)
    if filter is not None and t.num_rows:
        where = f"dataset {ds.uri!r} version {ds.version} fragments {frags[0].fragment_id}..{frags[-1].fragment_id}"
        t = apply_filter(t, filter, where)
    if files is not None and rest and t.num_rows:
        more = _rest_group(frags, files, t, rest)
        if more is not None:
            return more, fcols + rest, []
    return t, fcols, rest


def _rest_group(frags: list[Fragment], files: Files, t: pa.Table, rest: list[str]) -> pa.Table | None:
    """``t`` with the columns ``rest`` of its rows, from the files of the fragments it has rows of (decoded together,
    then taken at once); None when they do not decode together."""
    which = t.column(_FRAG).to_numpy()
    ks = np.unique(which)
    more = group_table(frags, files, rest, ks.tolist())
    if more is None:
        return None
    sizes = np.array([frags[k].physical_rows for k in ks.tolist()], dtype=np.int64)
    base = np.zeros(len(frags), dtype=np.int64)
    base[ks] = np.cumsum(sizes) - sizes
    more = more.take(pa.array(base[which] + t.column(POS).to_numpy()))
    schema = scan_schema(frags[0].dataset.schema)
    for c in rest:
        t = t.append_column(schema.field(c), more.column(c))
    return t


def _rest(f: Fragment, piece: pa.Table, rest: list[str], schema: pa.Schema) -> pa.Table:
    """``piece`` (rows of ``f``) with the columns ``rest`` read for its rows."""
    pos = piece.column(POS).to_numpy()
    if len(pos) * 4 < f.physical_rows and f.physical_rows > WHOLE_READ_ROWS:
        more = f.take_physical(rest, pos)
    else:  # a small file: read whole (one fetch, simple pages) and pick the rows
        more = f.read_physical(rest, 0, f.physical_rows).take(pa.array(pos))
    for c in rest:
        piece = piece.append_column(schema.field(c), more.column(c))
    return piece


def read_group(
    frags: list[Fragment], columns: list[str], filter: pc.Expression | None, positions: bool
) -> list[pa.Table]:
    """``[f.read(columns, filter, positions=positions) for f in frags]`` in one pass (module docstring)."""
    return _per_fragment(frags, *_group(frags, columns, filter), columns, positions)


def _per_fragment(
    frags: list[Fragment], t: pa.Table, _: list[str], rest: list[str], columns: list[str], positions: bool
) -> list[pa.Table]:
    """The rows of ``t`` (``_group``'s) per fragment, with the columns ``rest`` read for them."""
    out_cols = list(columns) + [POS] if positions else list(columns)
    which = t.column(_FRAG).to_numpy() if t.num_rows else np.empty(0, np.int32)
    bounds = np.searchsorted(which, np.arange(len(frags) + 1))
    out = []
    schema = scan_schema(frags[0].dataset.schema)  # blobs: descriptions
    empty: pa.Table | None = None
    pieces = {
        k: t.slice(int(bounds[k]), int(bounds[k + 1] - bounds[k]))
        for k in range(len(frags))
        if bounds[k + 1] > bounds[k]
    }
    if rest:  # remote: the fragments' other columns side by side
        done = side_by_side(frags[0].dataset, list(pieces.items()), lambda kp: _rest(frags[kp[0]], kp[1], rest, schema))
        pieces = dict(zip(pieces, done))
    for k, f in enumerate(frags):
        piece = pieces.get(k)
        if piece is None:
            if empty is None:  # from another fragment's rows when there are some (remote: no file opened)
                empty = next(iter(pieces.values())).slice(0, 0).select(out_cols) if pieces else None
            if empty is None:
                empty = f.empty_table(list(columns), positions)
            out.append(empty)
            continue
        out.append(piece.select(out_cols))
    return out


def read_group_table(frags: list[Fragment], columns: list[str], filter: pc.Expression | None) -> pa.Table:
    """The rows ``read_group`` returns (without positions) as one table, in fragment order."""
    t, read, rest = _group(frags, columns, filter)
    if not rest:
        return t.select(list(columns))
    parts = [p for p in _per_fragment(frags, t, read, rest, columns, False) if p.num_rows]
    if not parts:
        return frags[0].empty_table(list(columns))
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def count_group(frags: list[Fragment], filter: pc.Expression) -> int:
    """``sum(f.count_rows(filter) for f in frags)`` in one pass: only the filter's columns are read."""
    return int(_group(frags, [], filter)[0].num_rows)


def small_runs(frags: list[Fragment], order: Iterable[int], max_rows: int, max_fragments: int) -> list[list[int]]:
    """The fragments' indices in ``order``, cut into runs of small fragments (fewer than ``max_rows``
    rows each, known from the manifest) of at most ``max_rows`` rows and ``max_fragments``
    fragments together; any other fragment alone."""
    runs: list[list[int]] = []
    run: list[int] = []
    rows = 0
    for i in order:
        f = frags[i]
        n = int(f.data_fragment.physical_rows) if rows_trusted(f.dataset.manifest, f.data_fragment) else None
        if n is None or n >= max_rows:
            if run:
                runs.append(run)
                run, rows = [], 0
            runs.append([i])
            continue
        run.append(i)
        rows += n
        if rows >= max_rows or len(run) >= max_fragments:
            runs.append(run)
            run, rows = [], 0
    if run:
        runs.append(run)
    return runs


class InOrder:
    """``frags[i].read(columns, filter, positions=positions)`` of the fragments asked one after another (a stream of
    batches): each run of small fragments (``small_runs``) is read together when its first fragment is asked, so at most
    one run is read ahead; over an object store the next run is read meanwhile (its requests in flight while this run's
    batches are used)."""

    def __init__(
        self,
        frags: list[Fragment],
        columns: list[str],
        filter: pc.Expression | None,
        positions: bool,
        runs: list[list[int]],
    ) -> None:
        self._frags, self._columns, self._filter, self._positions = frags, columns, filter, positions
        self._run = {run[0]: run for run in runs if len(run) > 1}
        self._next = {a[0]: b for a, b in zip(runs, runs[1:]) if len(b) > 1}
        self._ready: dict[int, pa.Table] = {}
        self._pending: dict[int, Future[list[pa.Table]]] = {}
        self._remote = bool(frags) and not frags[0].dataset.store.is_local

    def _group(self, run: list[int]) -> list[pa.Table]:
        return read_group([self._frags[k] for k in run], self._columns, self._filter, self._positions)

    def read(self, i: int) -> pa.Table:
        t = self._ready.pop(i, None)
        if t is not None:
            return t
        run = self._run.get(i)
        f = self._frags[i]
        if run is None or not self._columns:
            return f.read(self._columns, self._filter, positions=self._positions)
        pending = self._pending.pop(i, None)
        following = self._next.get(i)
        if self._remote and following is not None and following[0] not in self._pending:
            self._pending[following[0]] = shared_pool("scan-ahead", 2).submit(self._group, following)
        tables = pending.result() if pending is not None else self._group(run)
        self._ready.update(zip(run[1:], tables[1:]))
        return tables[0]
