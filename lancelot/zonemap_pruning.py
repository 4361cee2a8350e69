"""Pruning with zone maps: the zones (row ranges) of a file that may hold rows passing simple filters.

A null bound in a zone with values means "unbounded on that side", and a filter value the bounds cannot
compare safely (NaN, a naive datetime against a zoned column) decides nothing, so no row a filter could
select is dropped; callers still apply the filter.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from lancelot.zonemap_codec import ColumnZones

#: an ``in`` filter with more values is checked as a [min, max] range
MAX_IN_VALUES = 64

#: a filter: (column, op, value) with op one of OPS; column is a name or a path through structs
Filter = tuple[Any, ...]
OPS = {"=", "!=", "<", "<=", ">", ">=", "in", "is_null", "is_not_null", "starts_with"}


class ZoneMaps:
    """Parsed zone maps of one file (see ``parse_zone_maps``)."""

    def __init__(self, rows: np.ndarray, columns: list[ColumnZones], rows_per_zone: int) -> None:
        self.zone_rows = rows
        self.zone_starts = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64) if len(rows) else rows
        self.num_rows = int(rows.sum())
        self.num_zones = len(rows)
        self.rows_per_zone = rows_per_zone
        self.columns = {c.path: c for c in columns}

    def __repr__(self) -> str:
        cols = [".".join(p) for p in self.columns]
        return f"ZoneMaps(rows={self.num_rows}, zones={self.num_zones}, columns={cols})"

    def column(self, name: str | Sequence[str]) -> ColumnZones | None:
        """The zones of a column given as a name or a path through structs (None if it has no statistics)."""
        path = (name,) if isinstance(name, str) else tuple(name)
        return self.columns.get(path)

    def zones_matching(self, filters: Iterable[Filter]) -> np.ndarray:
        """A boolean per zone: False where the statistics prove no row passes all ``filters``."""
        mask = np.ones(self.num_zones, dtype=bool)
        for f in filters:
            m = self._maybe(f)
            if m is not None:
                mask &= m
        return mask

    def row_ranges_matching(self, filters: Iterable[Filter]) -> list[tuple[int, int]]:
        """Row ranges [start, stop) outside of which no row passes all ``filters`` (AND-ed)."""
        mask = self.zones_matching(filters)
        if not mask.any():
            return []
        edges = np.diff(np.concatenate([[0], mask.view(np.int8), [0]]))
        first, last = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
        stops = self.zone_starts[last] + self.zone_rows[last]
        return [(int(a), int(b)) for a, b in zip(self.zone_starts[first], stops)]

    def _maybe(self, f: Filter) -> np.ndarray | None:
        """Zones that may hold a row passing ``f``; None when the statistics cannot tell."""
        if not isinstance(f, tuple) or len(f) not in (2, 3):
            return None
        name, op = f[0], f[1]
        value = f[2] if len(f) == 3 else None
        col = self.column(name)
        if col is None or op not in OPS:
            return None
        nonnull: NDArray[np.bool_] = (self.zone_rows - col.nulls) > 0
        if op == "is_null":
            return col.nulls > 0
        if op == "is_not_null":
            return nonnull
        lo_unknown: NDArray[np.bool_] = col.min.is_null().to_numpy(zero_copy_only=False)
        hi_unknown: NDArray[np.bool_] = col.max.is_null().to_numpy(zero_copy_only=False)

        def cmp(fn: Callable[[pa.Array, pa.Scalar], pa.Array], bound: pa.Array, v: pa.Scalar) -> NDArray[np.bool_]:
            out: NDArray[np.bool_] = pc.fill_null(fn(bound, v), False).to_numpy(zero_copy_only=False)
            return out

        if op == "in":
            vals = [v for v in (value or ()) if v is not None]
            maybe = [_as_scalar(v, col.min.type) for v in vals]
            scalars = [s for s in maybe if s is not None]
            if len(scalars) < len(maybe):
                return None
            if not scalars:
                return np.zeros(self.num_zones, dtype=bool)
            if len(scalars) > MAX_IN_VALUES:
                arr = pa.array([s.as_py() for s in scalars], col.min.type)
                lo, hi = pc.min_max(arr).values()
                return (
                    nonnull
                    & (lo_unknown | cmp(pc.less_equal, col.min, hi))
                    & (hi_unknown | cmp(pc.greater_equal, col.max, lo))
                )
            out = np.zeros(self.num_zones, dtype=bool)
            for s in scalars:
                out |= (lo_unknown | cmp(pc.less_equal, col.min, s)) & (hi_unknown | cmp(pc.greater_equal, col.max, s))
            return nonnull & out
        s = _as_scalar(value, col.min.type)
        if s is None:
            return None
        if op == "starts_with":
            if not pa.types.is_binary(col.min.type):
                return None
            prefix_len = len(s.as_py())
            lo = pc.binary_slice(col.min, 0, prefix_len)
            return nonnull & (hi_unknown | cmp(pc.greater_equal, col.max, s)) & (lo_unknown | cmp(pc.less_equal, lo, s))
        if op == "=":
            return (
                nonnull
                & (lo_unknown | cmp(pc.less_equal, col.min, s))
                & (hi_unknown | cmp(pc.greater_equal, col.max, s))
            )
        if op == "!=":
            return nonnull & ~(cmp(pc.equal, col.min, s) & cmp(pc.equal, col.max, s))
        if op in ("<", "<="):
            fn = pc.less if op == "<" else pc.less_equal
            return nonnull & (lo_unknown | cmp(fn, col.min, s))
        fn = pc.greater if op == ">" else pc.greater_equal
        return nonnull & (hi_unknown | cmp(fn, col.max, s))


def _as_scalar(value: object, t: pa.DataType) -> pa.Scalar | None:
    """``value`` as a scalar of the bounds' type, or None when it cannot be compared safely."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None  # NaN sorts above everything in Spark: bounds that skip NaN cannot decide
    if pa.types.is_binary(t):
        if isinstance(value, str):
            return pa.scalar(value.encode("utf-8"), pa.binary())
        if isinstance(value, bytes | bytearray | memoryview):
            return pa.scalar(bytes(value), pa.binary())
        return None
    if pa.types.is_timestamp(t) and isinstance(value, _dt.datetime):
        if (value.tzinfo is None) != (t.tz is None):
            return None  # a naive value against a zoned column (or back): the meaning is ambiguous
    if isinstance(value, bool) != pa.types.is_boolean(t):
        return None
    try:
        return pa.scalar(value, t)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        pass
    try:
        return pa.scalar(value).cast(t)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
