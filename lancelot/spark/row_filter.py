"""Pushed filters applied to the rows a task reads, with late materialisation (docs/SPARK.md, pushdown).

Zone maps only narrow a scan to 4,096-row zones.  A point lookup then still read a whole zone of every column and handed
all of it to Spark, which filtered it down to one row.  A task that has received filters now reads the filters' columns
first, keeps the rows that pass, and reads the other columns only for those (a take when few pass).  The reader hands
these filters back to Spark as applied (Spark does not apply them again), so each must keep exactly the rows Spark would
keep; this is therefore limited to tests whose Arrow semantics equal Spark's exactly, on columns Spark sees with their
own type (not cast by a user schema), and ignores any other filter (handed back):

* integers (signed and unsigned), ``date32`` and booleans: compared in numpy (a value that does not fit the column's
  type is not used);
* strings (Spark's default binary collation is byte order, as Arrow's): pyarrow.compute;
* ``IS [NOT] NULL`` on any of those.

Floating-point columns are left out (Spark treats NaN as equal to itself and above every number; Arrow does not), as are
decimals, timestamps and nested fields.  A null never passes a comparison, as in Spark's three-valued logic."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

if TYPE_CHECKING:
    from pyspark.sql.types import DataType

    from lancelot.zonemap_pruning import Filter

#: comparisons this module evaluates, per kind of column
_COMPARE = ("=", "!=", "<", "<=", ">", ">=")
_NULL_TESTS = ("is_null", "is_not_null")
_EPOCH = dt.date(1970, 1, 1)


@dataclass(frozen=True)
class RowFilter:
    """Conjunctive tests ``(column, op, value)`` on top-level columns, each exact for Spark."""

    tests: tuple[tuple[str, str, object], ...]

    @property
    def columns(self) -> list[str]:
        """The columns the tests read, in first-use order."""
        return list(dict.fromkeys(c for c, _, _ in self.tests))

    def matching(self, table: pa.Table) -> np.ndarray:
        """Positions (int64, ascending) of the rows of ``table`` (which holds ``columns``) passing every test."""
        keep = np.ones(table.num_rows, dtype=bool)
        for name, op, value in self.tests:
            if not keep.any():
                break
            col = table.column(name)
            arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
            keep &= _test(arr, op, value)
        return np.flatnonzero(keep).astype(np.int64)


def _valid(arr: pa.Array) -> np.ndarray:
    """The validity of ``arr`` as numpy booleans (no pandas import)."""
    n = len(arr)
    if not arr.null_count:
        return np.ones(n, dtype=bool)
    if arr.null_count == n:
        return np.zeros(n, dtype=bool)
    bits = np.frombuffer(arr.buffers()[0], np.uint8)
    first = arr.offset
    return np.unpackbits(bits[first // 8 : (first + n + 7) // 8 + 1], bitorder="little")[
        first % 8 : first % 8 + n
    ].view(bool)


def _values(arr: pa.Array) -> np.ndarray:
    """The data buffer of a fixed-width (integer, date32, boolean) array as numpy (null slots hold anything)."""
    n, first = len(arr), arr.offset
    if pa.types.is_boolean(arr.type):
        bits = np.frombuffer(arr.buffers()[1], np.uint8)
        return np.unpackbits(bits[first // 8 : (first + n + 7) // 8 + 1], bitorder="little")[
            first % 8 : first % 8 + n
        ].view(bool)
    dtype = np.dtype(np.int32) if pa.types.is_date32(arr.type) else np.dtype(arr.type.to_pandas_dtype())
    if not n:
        return np.zeros(0, dtype)
    return np.frombuffer(arr.buffers()[1], dtype, count=n, offset=first * dtype.itemsize)


def _numeric(op: str, values: np.ndarray, value: Any) -> NDArray[np.bool_]:
    mask: NDArray[np.bool_]
    if op == "in":
        mask = np.isin(values, np.asarray(value, dtype=values.dtype))
    elif op == "=":
        mask = values == value
    elif op == "!=":
        mask = values != value
    elif op == "<":
        mask = values < value
    elif op == "<=":
        mask = values <= value
    elif op == ">":
        mask = values > value
    else:
        mask = values >= value
    return mask


def _strings(op: str, arr: pa.Array, value: Any) -> NDArray[np.bool_]:
    import pyarrow.compute as pc

    if op == "in":
        mask = pc.is_in(arr, value_set=pa.array(list(value), arr.type), skip_nulls=True)
    elif op == "starts_with":
        mask = pc.starts_with(arr, pattern=value)
    else:
        fn = {
            "=": pc.equal,
            "!=": pc.not_equal,
            "<": pc.less,
            "<=": pc.less_equal,
            ">": pc.greater,
            ">=": pc.greater_equal,
        }[op]
        mask = fn(arr, pa.array([value], arr.type)[0])
    passing: NDArray[np.bool_] = _values(mask) & _valid(mask)
    return passing


def _test(arr: pa.Array, op: str, value: object) -> NDArray[np.bool_]:
    """Rows of ``arr`` passing ``op value`` (``exact_test`` checked the combination)."""
    valid: NDArray[np.bool_] = _valid(arr)
    if op == "is_null":
        return ~valid
    if op == "is_not_null":
        return valid
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        return _strings(op, arr, value)
    passing: NDArray[np.bool_] = _numeric(op, _values(arr), value) & valid
    return passing


def _fits(t: pa.DataType, v: object) -> bool:
    """Whether ``v`` is a value of an integer (or date32, or boolean) column of type ``t``, exactly."""
    if pa.types.is_boolean(t):
        return isinstance(v, bool)
    if pa.types.is_date32(t):
        return isinstance(v, dt.date) and not isinstance(v, dt.datetime)
    if isinstance(v, bool) or not isinstance(v, int):
        return False
    info = np.iinfo(t.to_pandas_dtype())
    return info.min <= v <= info.max


def _as_number(t: pa.DataType, v: Any) -> object:
    return (v - _EPOCH).days if pa.types.is_date32(t) else v


def exact_test(
    zone_filter: Filter, schema: pa.Schema, spark_types: dict[str, DataType]
) -> tuple[str, str, object] | None:
    """A zone-map filter tuple as a test this module evaluates exactly as Spark does, or None.

    ``spark_types``: the Spark type of each column the reader returns (a column a user schema gives another type, which
    the reader casts to, and a string column with a non-default collation are left to Spark)."""
    path, op = zone_filter[0], zone_filter[1]
    name = path[0] if isinstance(path, tuple) and len(path) == 1 else path
    if not isinstance(name, str) or name not in schema.names:
        return None
    t = schema.field(name).type
    string = pa.types.is_string(t) or pa.types.is_large_string(t)
    fixed = pa.types.is_integer(t) or pa.types.is_date32(t) or pa.types.is_boolean(t)
    if not (string or fixed):
        return None
    st = spark_types.get(name)
    if st is not None:
        from lancelot.spark.types import spark_type

        if st != spark_type(t):
            return None  # cast by a user schema, or a collation other than Spark's default (byte order)
    if op in _NULL_TESTS:
        return (name, op, None)
    value = zone_filter[2]
    if string:
        if op in (*_COMPARE, "starts_with") and isinstance(value, str):
            return (name, op, value)
        if op == "in" and all(isinstance(v, str) or v is None for v in value):
            return (name, op, tuple(v for v in value if v is not None))
        return None
    if pa.types.is_boolean(t) and op not in ("=", "!="):
        return None
    if op in _COMPARE and _fits(t, value):
        return (name, op, _as_number(t, value))
    if op == "in":
        vals = [v for v in value if v is not None]
        if all(_fits(t, v) for v in vals):
            return (name, op, tuple(_as_number(t, v) for v in vals))
    return None


def row_filter(zone_filters: Sequence[Filter], schema: pa.Schema, spark_types: dict[str, DataType]) -> RowFilter | None:
    """The exact part of the pushed filters (None: none of them)."""
    tests = [t for t in (exact_test(f, schema, spark_types) for f in zone_filters) if t is not None]
    return RowFilter(tuple(tests)) if tests else None


def filtered_read(
    read: Callable[..., pa.Table],  # (start, stop, cols); dataset_scan passes a lambda binding its fragment
    take: Callable[[NDArray[np.int64], list[str]], pa.Table],
    start: int,
    stop: int,
    columns: list[str],
    rf: RowFilter,
) -> pa.Table | None:
    """Rows ``[start, stop)`` of ``columns`` that pass ``rf``: the filter's columns first, then the others only for the
    passing rows (``take`` when under a quarter pass).  ``read(start, stop, cols)`` and ``take(positions, cols)`` read
    the source.  None when no row passes."""
    key = read(start, stop, rf.columns)
    idx = rf.matching(key)
    if not len(idx):
        return None
    n = stop - start
    rest = [c for c in columns if c not in rf.columns]
    if len(idx) == n:
        other = read(start, stop, rest) if rest else None
        kept = key
    else:
        from lancelot.util.arrays import from_numpy

        sel = from_numpy(idx)
        if not rest:
            other = None
        elif len(idx) * 4 < n:
            other = take(start + idx, rest)
        else:
            other = read(start, stop, rest).take(sel)
        kept = key.take(sel)
    if other is None:  # every column is one of the filter's: ``other`` is not consulted
        other = kept
    cols = [kept.column(c) if c in rf.columns else other.column(c) for c in columns]
    fields = [kept.schema.field(c) if c in rf.columns else other.schema.field(c) for c in columns]
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))
