"""The aggregate calls of a SQL query (``LanceDataset.sql``) as pyarrow hash aggregations, typed as DataFusion does.

Each call (``sum(x)``, ``count(DISTINCT s)``, ``median(x)``, ``avg(d) FILTER (WHERE flag)``) becomes a column of
its argument's values and one or more of pyarrow's hash aggregations of that column; a finishing step makes the
call's result of theirs.  A FILTER makes the argument null where its condition is not true.  pyarrow has no hash
kernel for a DISTINCT sum, avg, ... nor for an exact median: those collect each group's values (``distinct`` or
``list``) and reduce the lists here.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.dataset.sql_plan import Select
from lancelot.sql.errors import SqlError

#: translates an expression of the scanned rows: its pyarrow expression, type and nullability
Typed = Callable[..., tuple[pc.Expression, pa.DataType, bool]]
#: what makes a call's result column of its aggregations' columns
Finish = Callable[[list[pa.ChunkedArray]], pa.ChunkedArray | pa.Array]
#: one aggregate call: its column, its pyarrow aggregations, its field, and its finish
Call = tuple[str, list[Any], pa.Field, Finish]

_ONLY_VALID = pc.CountOptions("only_valid")
#: pyarrow's hash aggregate for each SQL aggregate of one value per row
_KERNELS: dict[str, tuple[str, Any]] = {
    "sum": ("sum", None),
    "min": ("min", None),
    "max": ("max", None),
    "avg": ("mean", None),
    "mean": ("mean", None),
    **{f: ("stddev", pc.VarianceOptions(ddof=1)) for f in ("stddev", "stddev_samp")},
    "stddev_pop": ("stddev", pc.VarianceOptions(ddof=0)),
    **{f: ("variance", pc.VarianceOptions(ddof=1)) for f in ("var", "var_samp")},
    "var_pop": ("variance", pc.VarianceOptions(ddof=0)),
    "bool_and": ("all", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)),
    "bool_or": ("any", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)),
}


#: the aggregates DataFusion computes of DISTINCT values (stddev too, but only where its single-distinct rewrite, see
#: sums_twice, makes it an aggregate of groups)
_DISTINCT = frozenset(
    {"count", "sum", "avg", "mean", "min", "max", "median", "approx_distinct", "bool_and", "bool_or"}
    | {"var", "var_samp", "var_pop"}
)


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def sums_twice(calls: list[exp.Expr]) -> bool:
    """Whether DataFusion sums twice (its single_distinct_aggregation_to_group_by rule: every DISTINCT aggregate of
    one argument, the others sum / min / max, none with a FILTER, as an aggregate of the groups by that argument); a
    sum of decimals then widens twice."""
    distinct, others = set(), set()
    for node in calls:
        if isinstance(node, exp.Filter):
            return False
        operands = node.expressions
        if len(operands) == 1 and isinstance(operands[0], exp.Distinct):
            distinct.add(",".join(a.sql() for a in operands[0].expressions))
        else:
            others.add(str(node.name).lower())
    return len(distinct) == 1 and others <= {"sum", "min", "max"}


def aggregation(
    q: Select, node: exp.Expr, j: int, args: dict[str, pc.Expression], typed: Typed, twice: bool = False
) -> Call:
    """One aggregate call (an ``exp.Anonymous``, or the ``exp.Filter`` around one): its argument added to ``args``
    (named ``\\x00agg{j}``), its pyarrow aggregations, its result field and how its result is made of theirs."""
    condition = None
    if isinstance(node, exp.Filter):
        condition = typed(node.expression.this, filter=True)[0]
        node = node.this
    fn = str(node.name).lower()
    col = f"\x00agg{j}"
    operands = node.expressions
    distinct = len(operands) == 1 and isinstance(operands[0], exp.Distinct)
    if distinct:
        operands = operands[0].expressions
    if len(operands) != 1:
        raise SqlError(f"{fn} takes one argument, not {len(operands)}: {node.sql()} in {q.sql!r}")
    arg = operands[0]
    if fn == "count" and not distinct and isinstance(arg, exp.Star | exp.Literal):
        if condition is None:
            return col, [([], "count_all")], pa.field(col, pa.int64(), False), _first
        args[col] = pc.if_else(condition, True, pa.scalar(None, pa.bool_()))
        return col, [(col, "count", _ONLY_VALID)], pa.field(col, pa.int64(), False), _first
    if isinstance(arg, exp.Star):
        raise SqlError(f"{fn}(*) is not an aggregate ({q.sql!r})")
    if distinct and fn not in _DISTINCT and not twice:  # (stddev / var of the groups of the rewrite: no error)
        raise SqlError(f"This feature is not implemented: {fn.upper()}(DISTINCT) aggregations are not available")
    e, t, _ = typed(arg)
    if fn == "median" and (pa.types.is_integer(t) or pa.types.is_floating(t) and t.bit_width == 16):
        e, t = e.cast(pa.float64()), pa.float64()  # (DataFusion's median of integers is of doubles)
    args[col] = e if condition is None else pc.if_else(condition, e, pa.scalar(None, t))
    if fn == "approx_distinct":
        if not (pa.types.is_integer(t) or pa.types.is_temporal(t) or pa.types.is_string(t) or _is_text(t)):
            raise SqlError(f"This feature is not implemented: Support for 'approx_distinct' for data type {t}")
        if not pa.types.is_string(t) and _is_text(t):  # (pyarrow counts no distinct string_views)
            args[col], t = args[col].cast(pa.large_string()), pa.large_string()
    if fn in ("count", "approx_distinct"):
        kernel = "count_distinct" if distinct or fn == "approx_distinct" else "count"
        if fn == "count":
            return col, [(col, kernel, _ONLY_VALID)], pa.field(col, pa.int64(), False), _first
        return col, [(col, kernel, _ONLY_VALID)], pa.field(col, pa.uint64(), True), lambda c: c[0].cast(pa.uint64())
    field = pa.field(col, _result_type(fn, t, q, node), True)
    if twice and fn == "sum" and not distinct and pa.types.is_decimal(field.type):
        field = pa.field(col, _result_type(fn, field.type, q, node), True)
    if fn in ("min", "max", "bool_and", "bool_or") or not (distinct or fn == "median"):
        specs, finish = _plain(fn, col, t, field.type)
        return col, specs, field, finish
    # each group's (distinct) values as a list, reduced here
    spec = (col, "distinct", _ONLY_VALID) if distinct else (col, "list", None)
    return col, [spec], field, lambda cols: _per_list(cols[0], fn, t, field.type)


def grouped(table: pa.Table, keys: list[str], specs: list[Any]) -> tuple[list[pa.ChunkedArray], pa.Table]:
    """The hash aggregations ``specs`` of ``table``'s rows grouped by the columns ``keys`` (all rows one group
    without keys): one column per spec, and the groups' keys (a table of the ``keys`` columns)."""
    if keys:
        dense = _dense(table, keys, specs)
        if dense is not None:
            return dense
        out = table.group_by(keys, use_threads=False).aggregate(specs)
        # (pyarrow puts the keys first or last, by version)
        return [out.column(i) for i, n in enumerate(out.schema.names) if n not in keys], out.select(keys)
    # pyarrow has no scalar "list" / "distinct" aggregate: the whole column is the one group's list
    lists = [s for s in specs if s[1] in ("list", "distinct")]
    out = table.group_by([], use_threads=False).aggregate([s for s in specs if s not in lists])
    others = iter(out.columns)
    columns = []
    for s in specs:
        if s in lists:
            values = table.column(s[0]).combine_chunks()
            values = pc.unique(values.drop_null()) if s[1] == "distinct" else values
            columns.append(pa.chunked_array([pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values)]))
        else:
            columns.append(next(others))
    return columns, out.select([])


def _dense(table: pa.Table, keys: list[str], specs: list[Any]) -> tuple[list[pa.ChunkedArray], pa.Table] | None:
    """``grouped`` by numpy for one integer key without nulls whose values span at most about twice the rows
    (the groups indexed by value: no hash table) and the aggregates ``count`` and integer or time ``min`` / ``max``;
    the groups in key order (Acero's are in the order of their first rows; DataFusion's in none).  None for anything
    else."""
    col = table.column(keys[0]) if len(keys) == 1 else None
    n = table.num_rows
    if col is None or not n or not pa.types.is_integer(col.type) or col.null_count:
        return None
    ok = (
        spec == ([], "count_all")
        or (spec[1] == "count" and spec[2] is _ONLY_VALID)
        or (spec[1] in ("min", "max") and spec[2] is None and _ordinal(table.column(spec[0]).type) is not None)
        for spec in specs
    )
    if not all(ok):
        return None
    k = col.to_numpy()
    lo = int(k.min())
    size = int(k.max()) - lo + 1
    if size > max(1024, 2 * n):
        return None
    idx = np.subtract(k, lo, dtype=np.intp)
    rows = np.bincount(idx, minlength=size)
    groups = np.flatnonzero(rows)  # (in key order)
    take = pa.array(groups)
    out = [pa.chunked_array([_dense_one(table, spec, idx, size, rows).take(take)]) for spec in specs]
    key = pa.array((groups + lo).astype(k.dtype), col.type)
    return out, pa.table({keys[0]: key})


def _ordinal(t: pa.DataType) -> pa.DataType | None:
    """The integer type a min / max of ``t`` is computed in by numpy (None: not computed so)."""
    if pa.types.is_integer(t):
        return t
    if pa.types.is_date32(t):
        return pa.int32()
    if pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return pa.int64()
    return None


def _dense_one(table: pa.Table, spec: Any, idx: np.ndarray, size: int, rows: np.ndarray) -> pa.Array:
    """One aggregate of ``_dense`` for every key value (indexed by value - the smallest)."""
    if spec == ([], "count_all"):
        return pa.array(rows, pa.int64())
    col = table.column(spec[0])
    valid = col.is_valid().to_numpy(zero_copy_only=False) if col.null_count else None
    at = idx if valid is None else idx[valid]
    if spec[1] == "count":
        return pa.array(np.bincount(at, minlength=size), pa.int64())
    work = _ordinal(col.type)
    assert work is not None
    numbers = pa.chunked_array([c.view(work) for c in col.chunks], work)  # (times as their integers: no copy)
    values = (numbers if valid is None else numbers.drop_null()).to_numpy()
    info = np.iinfo(values.dtype)
    acc = np.full(size, info.min if spec[1] == "max" else info.max, values.dtype)
    (np.maximum if spec[1] == "max" else np.minimum).at(acc, at, values)
    counted = rows if valid is None else np.bincount(at, minlength=size)
    return pa.array(acc, work, mask=counted == 0).view(col.type)


def _plain(fn: str, col: str, t: pa.DataType, out: pa.DataType) -> tuple[list[Any], Finish]:
    """The hash aggregations of ``fn`` over the column ``col`` of type ``t`` (not median), and its finish."""
    if pa.types.is_decimal(t) and fn in ("sum", "avg", "mean"):  # summed exactly (to 38 digits; pyarrow's mean rounds)
        if fn == "sum":
            return [(col, "sum", None)], lambda cols: cols[0].cast(out)
        specs = [(col, "sum", None), (col, "count", _ONLY_VALID)]
        return specs, lambda cols: _decimal_mean(cols[0], cols[1], out)
    kernel, options = _KERNELS[fn]
    return [(col, kernel, options)], lambda cols: cols[0].cast(out)


def _per_list(lists: pa.ChunkedArray, fn: str, t: pa.DataType, out: pa.DataType) -> pa.Array:
    """``fn`` of each list's valid values (null for a list of none): one value per group."""
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    values, parents = pc.list_flatten(lists), pc.list_parent_indices(lists)
    valid = pc.is_valid(values)
    values, parents = values.filter(valid), parents.filter(valid)
    if fn == "median":
        return _median(values, parents, len(lists), out)
    specs, finish = _plain(fn, "v", t, out)
    table = pa.table({"p": parents, "v": values}).group_by("p", use_threads=False).aggregate(specs)
    groups = table.column("p")
    results = finish([table.column(i) for i, n in enumerate(table.schema.names) if n != "p"])
    at = np.full(len(lists), -1, np.int64)
    at[np.asarray(groups)] = np.arange(table.num_rows)
    return pc.take(results, pa.array(at, mask=at < 0))


def _median(values: pa.Array, parents: pa.Array, n: int, out: pa.DataType) -> pa.Array:
    """The median of each group's values (``parents``: the group of each, ``n`` groups): the middle value, or the
    mean of the two middle ones (of decimals: their sum halved, truncated toward zero, as DataFusion's)."""
    p = np.asarray(parents, np.int64)
    counts = np.bincount(p, minlength=n)
    starts = np.cumsum(counts) - counts
    has = counts > 0
    lo_at, hi_at = (starts + (counts - 1) // 2)[has], (starts + counts // 2)[has]
    if pa.types.is_decimal(out):
        vs = values.to_pylist()
        order = sorted(range(len(vs)), key=lambda i: (p[i], vs[i]))
        unscaled = [int(vs[i].scaleb(out.scale)) for i in order]
        halves = [_halve(unscaled[a] + unscaled[b]) for a, b in zip(lo_at, hi_at, strict=True)]
        medians: list[decimal.Decimal | None] = [None] * n
        for g, h in zip(np.flatnonzero(has), halves, strict=True):
            medians[g] = decimal.Decimal(h).scaleb(-out.scale)
        return pa.array(medians, out)
    v = np.asarray(values)
    v = v[np.lexsort((v, p))]
    result = np.zeros(n, v.dtype)
    result[has] = (v[lo_at] + v[hi_at]) / v.dtype.type(2)
    return pa.array(result, out, mask=~has)


def _halve(v: int) -> int:
    return v // 2 if v >= 0 else -(-v // 2)


def _first(cols: list[pa.ChunkedArray]) -> pa.ChunkedArray:
    return cols[0]


def _decimal_mean(sums: pa.ChunkedArray, counts: pa.ChunkedArray, t: pa.DataType) -> pa.Array:
    """DataFusion's avg of decimals: the sum scaled to ``t``'s scale, divided by the count, truncated
    (toward zero)."""
    out: list[decimal.Decimal | None] = []
    for total, n in zip(sums.to_pylist(), counts.to_pylist(), strict=True):
        if total is None or not n:
            out.append(None)
            continue
        sign, digits, exponent = total.as_tuple()
        v = int("".join(map(str, digits)) or "0") * 10 ** (t.scale + int(exponent))
        out.append(decimal.Decimal((sign, tuple(map(int, str(v // n))), -t.scale)))
    return pa.array(out, t)


def _result_type(fn: str, t: pa.DataType, q: Select, node: exp.Expr) -> pa.DataType:
    """The type DataFusion gives ``fn`` of a ``t``: sum widens integers to 64 bits, floats to float64 and decimals
    by 10 digits, avg widens decimals by 4 digits (of scale too), avg, stddev and var are otherwise float64, min and
    max keep ``t``, median keeps floats and decimals (its argument's integers are doubles), bool_and / bool_or take
    and give booleans."""
    if fn in ("min", "max"):
        return t
    if fn in ("bool_and", "bool_or"):
        if not (pa.types.is_boolean(t) or pa.types.is_null(t)):
            raise SqlError(f"Error during planning: {fn} does not apply to {t} ({node.sql()} in {q.sql!r})")
        return pa.bool_()
    numeric = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal128(t)
    if not numeric:
        raise SqlError(f"Error during planning: {fn} does not apply to {t} ({node.sql()} in {q.sql!r})")
    if fn == "median":
        return t
    if pa.types.is_decimal(t) and fn == "sum":
        return pa.decimal128(min(38, t.precision + 10), t.scale)
    if pa.types.is_decimal(t) and fn in ("avg", "mean"):
        return pa.decimal128(min(38, t.precision + 4), min(38, t.scale + 4))
    if fn not in ("sum", "min", "max"):  # avg, stddev, var
        return pa.float64()
    if pa.types.is_floating(t):
        return pa.float64()
    return pa.uint64() if pa.types.is_unsigned_integer(t) else pa.int64()
