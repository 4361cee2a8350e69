"""Reads of several small fragments at once: what a scan of a dataset of many small fragments runs.

``read_group(frags, ...)`` returns what ``[f.read(...) for f in frags]`` returns, but pays each
per-read pyarrow call once for the whole group instead of once per fragment: the physical rows of
every fragment (their data files opened and read one by one, as always) are concatenated, then the
deleted rows of all are dropped by one filter, then the scan's filter (when given) runs once over
the rows of all, and only then are the remaining columns read, from the fragments where rows
passed (late materialisation, as ``Fragment.read`` does).  The result is cut back into one table
per fragment (zero-copy slices), in order, so row addresses, row ids and projections stay per
fragment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.fragment import _POS, _scan_schema

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment

_FRAG = "__lancelot_fragment"
#: fragments of at most this many rows read their other columns whole for the rows a filter passed
WHOLE_READ_ROWS = 4096


def _masked(t: pa.Table, frag: Fragment, a: int, b: int) -> np.ndarray | None:
    """Keep-mask of physical rows ``[a, b)`` of ``frag`` (None: none is deleted)."""
    deleted = frag.deleted_positions()
    if not len(deleted):
        return None
    d = deleted[(deleted >= a) & (deleted < b)].astype(np.int64) - a
    if not len(d):
        return None
    mask = np.ones(b - a, dtype=bool)
    mask[d] = False
    return mask


def _pieces(
    frags: list[Fragment], cols: list[str], filter: pc.Expression | None
) -> tuple[list[pa.Table], list[np.ndarray | None]]:
    """Per fragment range to read (all rows, or the zone-map ranges a filter may match): the
    columns with their physical positions and the group index of their fragment, and the keep-mask
    of its deleted rows."""
    from lancelot.dataset.scan import zone_filters

    zf = zone_filters(filter) if filter is not None else []
    tables, masks = [], []
    for k, f in enumerate(frags):
        for a, b in f.zone_ranges(zf) if zf else [(0, f.physical_rows)]:
            if b <= a:
                continue
            t = f._read_physical(cols, a, b)
            t = t.append_column(_POS, pa.array(np.arange(a, b, dtype=np.int64)))
            t = t.append_column(_FRAG, pa.array(np.full(b - a, k, dtype=np.int32)))
            tables.append(t)
            masks.append(_masked(t, f, a, b))
    return tables, masks


def read_group(
    frags: list[Fragment], columns: list[str], filter: pc.Expression | None, positions: bool
) -> list[pa.Table]:
    """``[f.read(columns, filter, positions=positions) for f in frags]`` in one pass (module docstring)."""
    from lancelot.dataset.scan import apply_filter, filter_columns

    ds = frags[0]._ds
    names = ds.schema.names
    fcols = filter_columns(filter, names) if filter is not None else list(columns)
    rest = [c for c in columns if c not in fcols]
    out_cols = list(columns) + [_POS] if positions else list(columns)
    tables, masks = _pieces(frags, fcols, filter)
    if tables:
        t = pa.concat_tables(tables)
        if any(m is not None for m in masks):
            keep = np.concatenate([np.ones(x.num_rows, dtype=bool) if m is None else m for x, m in zip(tables, masks)])
            t = t.filter(pa.array(keep))
        if filter is not None:
            t = apply_filter(t, filter, f"dataset {ds.uri!r} version {ds.version} fragments {frags[0].fragment_id}..")
    else:
        t = frags[0]._empty(list(fcols), False)
        t = t.append_column(_POS, pa.array([], pa.int64())).append_column(_FRAG, pa.array([], pa.int32()))
    which = t.column(_FRAG).to_numpy() if t.num_rows else np.empty(0, np.int32)
    bounds = np.searchsorted(which, np.arange(len(frags) + 1))
    out = []
    schema = _scan_schema(ds.schema)  # blobs: descriptions
    empty: pa.Table | None = None
    for k, f in enumerate(frags):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        if hi == lo:
            if empty is None:
                empty = f._empty(list(columns), positions)
            out.append(empty)
            continue
        piece = t.slice(lo, hi - lo)
        if rest:
            pos = piece.column(_POS).to_numpy()
            if len(pos) * 4 < f.physical_rows and f.physical_rows > WHOLE_READ_ROWS:
                more = f._take_physical(rest, pos)
            else:  # a small file: read whole (one fetch, simple pages) and pick the rows
                more = f._read_physical(rest, 0, f.physical_rows).take(pa.array(pos))
            for c in rest:
                piece = piece.append_column(schema.field(c), more.column(c))
        out.append(piece.select(out_cols))
    return out
