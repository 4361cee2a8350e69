"""Running a parsed SELECT (lancelot/dataset/sql_plan.py) over a dataset: the result of ``LanceDataset.sql``.

The scan does what it can: it reads only the columns the query names, applies WHERE as its filter
and, for a query without grouping, DISTINCT or ordering, LIMIT / OFFSET; such a query streams (each
scan batch projected as the result is read, so a LIMIT stops the reads).  Any other query runs on
the scanned table with pyarrow: expressions (lancelot/sql's translator, typed as DataFusion types
them), grouping and aggregates (``Table.group_by``), HAVING, DISTINCT, ORDER BY (``sort_by``, nulls
placed per key), LIMIT / OFFSET.  The output's fields are nullable as DataFusion's are
(lancelot/sql/nullability.py, and CASE's here).
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.dataset.sql_aggregate import Call, aggregation, grouped, sums_twice
from lancelot.dataset.sql_plan import Select, aggregate_call, is_aggregate, parse_select
from lancelot.sql.comparison import compare
from lancelot.sql.errors import EvaluationError, SqlError
from lancelot.sql.expression_tree import mark_from_sql
from lancelot.sql.nullability import STRICT_OPERATORS, nullable
from lancelot.sql.translate import Translator
from lancelot.sql.udfs import decimal_arith, decimal_widen
from lancelot.sql.values import ARITHMETIC, COMPARISONS, Val, const_val, unparen
from lancelot.util.arrays import unified_dictionaries

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset

_ROW_COLUMNS = {"_rowid": "with_row_id", "_rowaddr": "with_row_address"}
#: the parent a query's expressions are translated under: lancelot/sql takes an expression inside a function call for
#: one DataFusion plans (lance's filter planner hands it only function arguments), and DataFusion plans all of a query
#: (so CASE, SUBSTRING, FLOOR, CAST AS VARCHAR, ... run anywhere in it)
_TEXT_TYPES = frozenset(
    {exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR, exp.DataType.Type.TEXT, exp.DataType.Type.NVARCHAR}
)
_COALESCE = frozenset({"coalesce", "nvl", "ifnull"})
_DATAFUSION = exp.Anonymous(this="datafusion", expressions=[])


class _Typed:
    """Expressions translated against one schema: their pyarrow expressions, types and nullability."""

    def __init__(self, sql: str, schema: pa.Schema) -> None:
        self.sql, self.schema = sql, schema
        #: the conditions two or more output expressions share (see _shared)
        self.shared: frozenset[str] = frozenset()

    def __call__(self, node: exp.Expr, *, filter: bool = False) -> tuple[pc.Expression, pa.DataType, bool]:
        t = self.translated(node, filter=filter)
        v = t.values[id(unparen(node))]
        if filter and not (pa.types.is_boolean(v.type) or pa.types.is_null(v.type)):
            raise SqlError(f"the condition {node.sql()} of the SQL query {self.sql!r} is not a boolean ({v.type})")
        return v.expr, v.type, _nullable(t, node, self.shared)

    def translated(self, node: exp.Expr, *, filter: bool = False) -> Translator:
        """The translator that translated ``node`` (its values: every sub-expression's type)."""
        t = _QueryTranslator(self.sql, self.schema, "query")
        if filter:
            t.mark_boolean(node)
        root = node
        while root.parent is not None:
            root = root.parent
        root.parent = _DATAFUSION  # see _DATAFUSION
        try:
            t.value(node)
        finally:
            root.parent = None
        return t


class _QueryTranslator(Translator):
    """lancelot/sql's translator with DataFusion's SQL types where its planner's differ from lance's: a cast to text
    (``VARCHAR``, ``TEXT``, ``STRING``, ``CHAR``) is to ``Utf8View``.  A column compared with a constant its type
    holds exactly (``l_quantity < 10`` of decimal(15, 2)) is compared in its own type, the constant cast, as
    DataFusion's unwrap-cast rule does: the same answer without casting the column's every value.  Decimal
    ``+ - *`` run in the narrowest types their operands' values fit (``_narrow``), then are cast to DataFusion's."""

    def __init__(self, sql: str, schema: pa.Schema, what: str) -> None:
        super().__init__(sql, schema, what)
        #: a decimal sum, difference or product computed narrow: id(node) -> its Val in that type
        self.narrow: dict[int, Val] = {}

    def _value(self, node: exp.Expr) -> Val:
        node = unparen(node)
        if isinstance(node, exp.Add | exp.Sub | exp.Mul):
            return self._narrow(node, self._capped(node, super()._value(node)))
        if type(node) in COMPARISONS:
            sides = [unparen(node.this), unparen(node.expression)]
            if not any(isinstance(x, exp.Cast | exp.TryCast) for x in sides):  # (lancelot/sql unwraps those)
                a, b = self.value(sides[0]), self.value(sides[1])
                if (a.const is None) != (b.const is None):
                    column, constant = (a, b) if b.const is not None else (b, a)
                    narrow = _exactly(constant.const, column.type)
                    if narrow is not None:
                        a, b = (column, const_val(narrow)) if constant is b else (const_val(narrow), column)
                return compare(self, COMPARISONS[type(node)], a, b, node)
        v = super()._value(node)
        if isinstance(node, exp.Cast) and node.args["to"].this in _TEXT_TYPES:
            return self.cast(v, pa.string_view(), node)
        return v

    def _capped(self, node: exp.Expr, v: Val) -> Val:
        """``v`` as decimal128 (38 digits, its scale) where lancelot/sql made a decimal256 of decimal128 operands
        whose common type is wider than 38 digits: DataFusion's decimal arithmetic of decimal128s stays decimal128
        (``(d / id) * (big * d)``)."""
        if v.const is not None or not pa.types.is_decimal256(v.type):
            return v
        operands = [self.values.get(id(unparen(x))) for x in (node.this, node.expression)]
        if any(o is None or pa.types.is_decimal256(o.type) for o in operands):
            return v
        capped = pa.decimal128(38, v.type.scale)
        return Val(v.expr.cast(capped, safe=False), capped, failed=v.failed)

    def _narrow(self, node: exp.Expr, v: Val) -> Val:
        """``v`` (``node``'s value, in DataFusion's type) computed in the narrowest decimal types that hold its
        operands' values, if that fits 38 digits: a constant integer is as wide as its digits (DataFusion gives
        ``1`` 20), so ``l_extendedprice * (1 - l_discount)`` multiplies decimal128 (15, 2) by (16, 2), not
        decimal256 (15, 2) by (23, 2); the values are the same (exact, no overflow), cast to DataFusion's type."""
        if v.const is not None or v.failed or not pa.types.is_decimal128(v.type):
            return v
        operands = [self._narrowest(x) for x in (node.this, node.expression)]
        if operands[0] is None or operands[1] is None:
            return v
        try:
            out = self.call(ARITHMETIC[type(node)], [operands[0], operands[1]], node)
        except SqlError:  # (wider than 38 digits)
            return v
        if not pa.types.is_decimal128(out.type) or out.type.scale != v.type.scale:
            return v
        if out.const is None:  # on the unscaled integers (udfs.decimal_arith)
            op = decimal_arith(ARITHMETIC[type(node)], operands[0].type, operands[1].type, out.type)
            out = Val(pc.Expression._call(op, [operands[0].expr, operands[1].expr]), out.type)
        self.narrow[id(node)] = out
        if out.type == v.type:
            return out
        if out.const is None and out.type.precision <= v.type.precision:
            return Val(pc.Expression._call(decimal_widen(out.type, v.type), [out.expr]), v.type)
        return Val(out.expr.cast(v.type), v.type)

    def _narrowest(self, node: exp.Expr) -> Val | None:
        """``node``'s value in the narrowest decimal type known to hold it (None: not a decimal, nor an integer
        constant)."""
        node = unparen(node)
        v = self.narrow.get(id(node)) or self.values.get(id(node))
        if v is None or v.failed:
            return None
        if v.const is None:
            return v if pa.types.is_decimal128(v.type) else None
        if not v.const.is_valid or not (pa.types.is_integer(v.type) or pa.types.is_decimal128(v.type)):
            return None
        sign, digits, exponent = decimal.Decimal(v.const.as_py()).as_tuple()
        scale = max(0, -int(exponent))
        t = pa.decimal128(max(len(digits), scale, 1), scale)
        return const_val(pa.scalar(decimal.Decimal(v.const.as_py()), t)) if int(exponent) <= 0 else None


def _exactly(value: pa.Scalar, t: pa.DataType) -> pa.Scalar | None:
    """An integer or decimal constant as a value of the integer or decimal type ``t``, if that holds it exactly."""
    exact = (pa.types.is_integer, pa.types.is_decimal128)
    if value.type == t or not value.is_valid or not any(k(t) for k in exact) or not any(k(value.type) for k in exact):
        return None
    try:  # (through Python: pyarrow casts an int64 only to decimals of 19 digits or more)
        narrow = pa.scalar(value.as_py(), t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError, TypeError, ValueError):
        return None
    return narrow if narrow.as_py() == value.as_py() else None


def _nullable(t: Translator, node: exp.Expr, shared: frozenset[str]) -> bool:
    """DataFusion's nullability (lancelot/sql/nullability.py), and a CASE's: it may be null when it has no ELSE or a
    branch may be, but for a branch its WHEN guards (``WHEN x > 0 THEN x``) unless the guard is ``shared``; coalesce
    as the CASE DataFusion makes of it (``CASE WHEN a IS NOT NULL THEN a ... ELSE z END``, up to its first argument
    that is never null)."""
    node = unparen(node)
    if isinstance(node, exp.Case):
        default = node.args.get("default")
        if default is None or _nullable(t, default, shared):
            return True
        case = t.values.get(id(node))
        for w in node.args["ifs"]:
            then = w.args["true"]
            if _nullable(t, then, shared) and not (_same_type(t, then, case) and _guards(w.this, then, shared)):
                return True
        return False
    v = t.values.get(id(node))
    plain = v is None or (not v.failed and v.const is None)
    if plain and isinstance(node, STRICT_OPERATORS) and not isinstance(node, exp.Is | exp.Not):
        children = [node.this, node.args.get("expression"), node.args.get("low"), node.args.get("high")]
        children += node.expressions if isinstance(node, exp.In) else []
        return any(
            _nullable(t, c, shared) for c in children if isinstance(c, exp.Expr) and not isinstance(c, exp.DataType)
        )
    if plain and isinstance(node, exp.Anonymous) and str(node.name).lower() in _COALESCE and node.expressions:
        for a in node.expressions:
            if not _nullable(t, a, shared):
                return False
            if _coalesce_guard(t, node, a) in shared:
                return True
        return True
    return nullable(t, node)


def _coalesce_guard(t: Translator, call: exp.Expr, arg: exp.Expr) -> str:
    """The text of the ``IS NOT NULL`` DataFusion's CASE for coalesce tests ``arg`` with (of ``arg`` cast to the
    result's type when it is not of it)."""
    v, out = t.values.get(id(unparen(arg))), t.values.get(id(call))
    if v is None or out is None or v.type == out.type:
        return f"NOT {arg.sql()} IS NULL"
    return f"NOT CAST({arg.sql()} AS {out.type}) IS NULL"


def _shared(typed: _Typed, nodes: list[exp.Expr]) -> frozenset[str]:
    """The conditions that occur twice or more in ``nodes`` (one projection), coalesce's implied ones included:
    DataFusion's common-subexpression pass takes them out, and a CASE's nullability no longer sees them guard.  An
    expression that occurs twice is taken out whole, once: the conditions in it count once."""
    from collections import Counter

    if not any(isinstance(n, exp.Case) or _is_coalesce(n) for node in nodes for n in node.walk()):
        return frozenset()  # (only a CASE's and coalesce's nullability asks)
    texts = Counter(n.sql() for node in nodes for n in node.walk())
    seen: Counter[str] = Counter()
    done: set[str] = set()

    def visit(t: Translator, n: exp.Expr) -> None:
        text = n.sql()
        condition = isinstance(n, exp.Not | exp.EQ | exp.NEQ | exp.GT | exp.GTE | exp.LT | exp.LTE)
        if texts[text] > 1 and not isinstance(n, exp.Column | exp.Literal | exp.Identifier):
            if condition:  # (itself taken out)
                seen[text] += 2
            if text in done:
                return
            done.add(text)
        if isinstance(n, exp.Anonymous) and str(n.name).lower() in _COALESCE:
            seen.update(_coalesce_guard(t, n, a) for a in n.expressions[:-1])
        elif condition:
            seen[text] += 1
        for child in n.iter_expressions():
            visit(t, child)

    for node in nodes:
        visit(typed.translated(node), node)
    return frozenset(k for k, c in seen.items() if c > 1)


def _is_coalesce(n: exp.Expr) -> bool:
    return isinstance(n, exp.Anonymous) and str(n.name).lower() in _COALESCE


def _same_type(t: Translator, then: exp.Expr, case: Val | None) -> bool:
    """Whether a CASE branch is of the CASE's type (else DataFusion casts it, and sees no guard of the cast)."""
    v = t.values.get(id(then.this if isinstance(then, exp.Paren) else then))
    return case is not None and v is not None and v.type == case.type


def _guards(when: exp.Expr, then: exp.Expr, shared: frozenset[str]) -> bool:
    """Whether a searched CASE's ``WHEN`` is never true where its ``THEN`` is null: DataFusion's nullability puts
    null for the THEN in the WHEN and asks whether that folds to false or null (``WHEN x IS NOT NULL THEN x``,
    ``WHEN x > 0 THEN x``, ``WHEN x IS NOT NULL AND y THEN x``; not ``WHEN x > 0 AND y THEN x``)."""
    return _folds(when, then.sql(), shared) is not None


def _folds(when: exp.Expr, key: str, shared: frozenset[str]) -> str | None:
    """What ``when`` folds to ("false", "null") with the expression ``key`` null, if it folds (not a ``shared``
    condition, which DataFusion has made a column)."""
    when = unparen(when)
    if when.sql() in shared:
        return None
    if isinstance(when, exp.And):
        folds = (_folds(when.this, key, shared), _folds(when.expression, key, shared))
        return "false" if "false" in folds else None
    if isinstance(when, exp.Not) and isinstance(when.this, exp.Is) and isinstance(when.this.expression, exp.Null):
        return "false" if when.this.this.sql() == key else None
    if isinstance(when, exp.EQ | exp.NEQ | exp.GT | exp.GTE | exp.LT | exp.LTE):
        return "null" if key in (when.this.sql(), when.expression.sql()) else None
    return None


def _project(table: pa.Table, exprs: dict[str, pc.Expression]) -> pa.Table:
    """``{name: expr}`` over ``table``'s rows (``_projector``)."""
    return _projector(exprs, table.schema.names)(table)


def _projector(exprs: dict[str, pc.Expression], names: list[str]) -> Callable[[pa.Table], pa.Table]:
    """``{name: expr}`` over the rows of tables of the columns ``names``: a column named as it is taken as it is, the
    rest computed (their kernels called directly where lancelot/sql/direct.py can, else through Acero)."""
    from lancelot.dataset.changes import evaluate
    from lancelot.sql.direct import direct

    refs = {n: pc.field(n) for n in names}
    taken = {k: n for k, e in exprs.items() for n, ref in refs.items() if e.equals(ref)}
    fns = {k: fn for k, e in exprs.items() if k not in taken and (fn := direct(e)) is not None}

    def run(table: pa.Table) -> pa.Table:
        values: dict[str, Any] = {k: table.column(n) for k, n in taken.items()}
        for k, fn in fns.items():
            try:
                value = fn(table)
            except pa.ArrowInvalid as err:
                raise EvaluationError(f"cannot evaluate {exprs[k]}: {err}") from None
            except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
                continue  # (Acero's own error)
            if not isinstance(value, pa.Scalar):
                values[k] = value
        computed = {k: e for k, e in exprs.items() if k not in values}
        out = evaluate(table, computed) if computed else None
        columns = [values[k] if k in values else out.column(k) for k in exprs]  # type: ignore[union-attr]
        if not columns:
            return table.select([])
        return pa.Table.from_arrays(columns, names=list(exprs))

    return run


def _projected(tables: Iterator[pa.Table], exprs: dict[str, pc.Expression], schema: pa.Schema) -> Iterator[pa.Table]:
    """``{name: expr}`` over each of ``tables`` (of one schema), named and typed as ``schema``."""
    run = None
    for t in tables:
        run = run or _projector(exprs, t.schema.names)
        yield _result(run(t), schema)


def _scan_schema(ds: LanceDataset, with_row_id: bool, with_row_addr: bool) -> pa.Schema:
    schema = ds.schema
    for name, on in (("_rowid", with_row_id), ("_rowaddr", with_row_addr)):
        if on:
            schema = schema.append(pa.field(name, pa.uint64()))
    return schema


def _columns(trees: list[exp.Expr | None], schema: pa.Schema) -> list[str]:
    """The top-level columns of ``schema`` the trees name, in schema order."""
    named = {str(c.parts[0].name) for t in trees if t is not None for c in t.find_all(exp.Column)}
    return [n for n in schema.names if n in named]


def run_select(
    ds: LanceDataset,
    sql: str,
    table_name: str,
    *,
    with_row_id: bool = False,
    with_row_addr: bool = False,
    batch_size: int | None = None,
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The result of the SELECT ``sql`` over ``ds`` (named ``table_name`` in FROM): its schema, and its batches.

    A query without grouping, DISTINCT or ORDER BY streams: each batch of the scan (with WHERE as its filter and
    LIMIT / OFFSET as its own, so a LIMIT stops the reads) is projected as the iterator advances.  Any other query
    is computed in full here.  Errors of planning are raised here, errors of evaluation (``1 / 0`` over a row) may
    come from the iterator.

    Args:
        ds: The dataset (its version).
        sql: The query.
        table_name: The table name FROM gives.
        with_row_id: The query may read ``_rowid`` (and ``*`` includes it).
        with_row_addr: The query may read ``_rowaddr`` (and ``*`` includes it).
        batch_size: The most rows a batch of the scan holds (None: the scan's default).

    Returns:
        The result's schema and an iterator of its batches (some may be empty).

    Raises:
        SqlError: A query pylance refuses, or one outside the subset (``UnsupportedQueryError``).
    """
    schema = _scan_schema(ds, with_row_id, with_row_addr)
    q = parse_select(sql, table_name, schema)
    typed = _Typed(sql, schema)
    where = mark_from_sql(typed(q.where, filter=True)[0]) if q.where is not None else None  # (may name _rowid)
    grouped = q.is_aggregate()
    plain = not grouped and not q.distinct and not q.order
    if q.qualifier is None:  # SELECT 1: one row, no columns
        if where is not None:
            raise SqlError(f"WHERE needs a table (FROM) in {sql!r}")
        scanned: Iterator[pa.Table] = iter([pa.table({"_": [None]}).select([])])
    else:
        scanned = _scan(ds, q, schema, where, plain, batch_size, with_row_id, with_row_addr)
    if plain:
        exprs, fields = _outputs(q, typed)
        out_schema = pa.schema(fields)
        out = _projected(scanned, exprs, out_schema)
        return out_schema, (b for t in out for b in t.to_batches(max_chunksize=batch_size or _BATCH_ROWS))
    (base,) = scanned  # one table (see _scan)
    base = unified_dictionaries(base)
    out, fields, hidden = _aggregate(q, base, typed) if grouped else _rows(q, base, typed)
    if q.distinct:
        if hidden:
            raise SqlError(f"for SELECT DISTINCT, ORDER BY expressions must appear in the select list ({sql!r})")
        out = out.group_by([f.name for f in fields], use_threads=False).aggregate([])
    if q.order:
        out = _sort(out, q, None if q.limit is None else q.offset + q.limit)
    if q.limit is not None or q.offset:
        out = out.slice(q.offset, q.limit)
    out_schema = pa.schema(fields)
    return out_schema, iter(_result(out, out_schema).combine_chunks().to_batches())


def _scan(
    ds: LanceDataset,
    q: Select,
    schema: pa.Schema,
    where: pc.Expression | None,
    plain: bool,
    batch_size: int | None,
    with_row_id: bool,
    with_row_addr: bool,
) -> Iterator[pa.Table]:
    """The scan's batches (as tables of the columns the query names): WHERE is its filter and, for a ``plain``
    query, LIMIT / OFFSET are its own (a filtered one of few rows reads the filter's columns, then takes its rows'
    other columns: ``_taken``)."""
    trees = [e for _, e in q.items] + [e for e, _, _ in q.order] + (q.group or []) + [q.having]
    columns = _columns(trees, schema)
    few = q.limit is not None and q.limit <= _TAKE_LIMIT
    if plain and few and where is not None and not (with_row_id or with_row_addr) and _takes(ds, q, schema, columns):
        return _taken(ds, q, where, columns)
    options: dict[str, Any] = {n: True for c, n in _ROW_COLUMNS.items() if c in columns}
    if where is not None and with_row_id:
        options["with_row_id"] = True
    if where is not None and with_row_addr:
        options["with_row_address"] = True
    if plain:
        options.update(limit=q.limit, offset=q.offset or None)
    if batch_size is not None or plain:
        options["batch_size"] = batch_size or _stream_batch(ds)
    scanner = ds.scanner(columns=[c for c in columns if c not in _ROW_COLUMNS], filter=where, **options)
    if not plain:
        return iter([scanner.to_table().select(columns)])
    return (pa.Table.from_batches([b]).select(columns) for b in scanner.to_batches())


#: the rows of a result batch (DataFusion's batch size) unless the query's builder sets one
_BATCH_ROWS = 8192


def _stream_batch(ds: LanceDataset) -> int:
    """The rows of a scan batch of a streamed query: the dataset in about 16 batches or more (the result is read as
    it is asked for), from 8,192 to 65,536 rows (each scan batch costs a fixed amount besides its rows' values: the
    bigger, the cheaper, up to a point; docs/performance.md)."""
    return max(_BATCH_ROWS, min(65_536, ds.count_rows() // 16))


#: the most rows of a filtered LIMIT that are taken by row id after a scan of the filter's columns
_TAKE_LIMIT = 10_000


def _takes(ds: LanceDataset, q: Select, schema: pa.Schema, columns: list[str]) -> bool:
    """Whether to read a filtered LIMIT / OFFSET in two steps (``_taken``): not where the filter names every column
    (nothing to take later), nor for blob or other columns with metadata (which takes may return otherwise)."""
    filtered = set(_columns([q.where], schema))
    fields = [ds.schema.field(c) for c in columns]
    return bool(columns) and not set(columns) <= filtered and not any(_has_metadata(f) for f in fields)


def _taken(ds: LanceDataset, q: Select, where: pc.Expression, columns: list[str]) -> Iterator[pa.Table]:
    """The rows of a filtered LIMIT / OFFSET (the ``columns`` it names) read in two steps, as pylance's late
    materialisation: the row ids of the rows the filter keeps (a scan of the filter's columns, which stops at the
    LIMIT), then those rows' columns taken by id.  Read as the result is (a failing filter fails there)."""
    ids = ds.scanner(columns=[], filter=where, with_row_id=True, limit=q.limit, offset=q.offset or None).to_table()
    yield ds._take_rows(ids.column("_rowid"), columns=columns).select(columns)


def _has_metadata(field: pa.Field) -> bool:
    t = field.type
    nested = pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
    return bool(field.metadata) or nested and any(_has_metadata(t.field(i)) for i in range(t.num_fields))


def _result(out: pa.Table, schema: pa.Schema) -> pa.Table:
    """The output columns of ``out`` as ``schema`` names and types them."""
    return pa.Table.from_arrays([out.column(f.name) for f in schema], schema=schema)


def _outputs(q: Select, typed: _Typed) -> tuple[dict[str, pc.Expression], list[pa.Field]]:
    """The output expressions over the scanned rows, and their fields."""
    typed.shared = _shared(typed, [node for _, node in q.items])
    exprs, fields = {}, []
    for name, node in q.items:
        e, t, null = typed(node)
        exprs[name] = e
        fields.append(pa.field(name, t, null))
    return exprs, fields


def _rows(q: Select, base: pa.Table, typed: _Typed) -> tuple[pa.Table, list[pa.Field], list[str]]:
    """The output expressions (and the ORDER BY keys not among them, hidden) over the scanned rows."""
    exprs, fields = _outputs(q, typed)
    hidden = _order_keys(q, exprs, lambda n: typed(n)[0])
    return _project(base, exprs), fields, hidden


def _order_keys(q: Select, exprs: dict[str, pc.Expression], value: Callable[[exp.Expr], pc.Expression]) -> list[str]:
    """Add to ``exprs`` the ORDER BY terms that are not output columns (named ``\\x00order{i}``)."""
    hidden = []
    for i, (node, _, _) in enumerate(q.order):
        if _output_of(q, node) is None:
            name = f"\x00order{i}"
            exprs[name] = value(node)
            hidden.append(name)
    return hidden


def _output_of(q: Select, node: exp.Expr) -> str | None:
    """The output column ``node`` is (the same expression), if any."""
    key = node.sql()
    return next((n for n, e in q.items if e is node or e.sql() == key), None)


def _sort(out: pa.Table, q: Select, first: int | None) -> pa.Table:
    """``out`` in the query's order (``_sort_plain``).  View columns (``CAST(x AS VARCHAR)`` is a string_view, as
    DataFusion's) are sorted and taken as their large type, then cast back: pyarrow's ``take`` has no kernel for
    them, and its ``select_k_unstable`` crashes the process on a string_view key."""
    views = {f.name: f.type for f in out.schema if pa.types.is_string_view(f.type) or pa.types.is_binary_view(f.type)}
    if not views:
        return _sort_plain(out, q, first)
    plain = pa.Table.from_arrays(
        [
            c.cast(_LARGE[pa.types.is_string_view(c.type)]) if f.name in views else c
            for f, c in zip(out.schema, out.columns)
        ],
        names=out.column_names,
    )
    done = _sort_plain(plain, q, first)  # (with the sort's helper columns, which the caller drops)
    cols = [c.cast(views[n]) if n in views else c for n, c in zip(done.column_names, done.columns)]
    return pa.Table.from_arrays(cols, names=done.column_names)


#: the large type a view column is sorted as: binary_view's, string_view's
_LARGE = (pa.large_binary(), pa.large_string())


def _sort_plain(out: pa.Table, q: Select, first: int | None) -> pa.Table:
    """``out`` in the query's order (nulls placed per key by a flag column, only for a key that has nulls); with
    ``first``, only the first rows (a top-k selection, then those sorted: ties at its edge are taken in no set
    order, as by DataFusion's TopK)."""
    keys: list[tuple[str, str]] = []
    for i, (node, desc, nulls_first) in enumerate(q.order):
        name = _output_of(q, node) or f"\x00order{i}"
        if any(k == name for k, _ in keys):  # (a column already sorted on: ``ORDER BY c0, big`` of ``big AS c0``)
            continue
        if pa.types.is_dictionary(out.schema.field(name).type):  # (Arrow sorts no dictionaries: by their values)
            out = out.append_column(f"\x00values{i}", out.column(name).cast(out.schema.field(name).type.value_type))
            name = f"\x00values{i}"
        if out.column(name).null_count:
            flag = f"\x00null{i}"
            out = out.append_column(flag, pc.is_null(out.column(name)))
            keys.append((flag, "descending" if nulls_first else "ascending"))
        negative_nan, negative_zero = _negatives(out.column(name))
        if negative_nan is not None:  # DataFusion orders floats totally: -NaN before all, -0.0 before 0.0
            out = out.append_column(f"\x00nan{i}", negative_nan)
            keys.append((f"\x00nan{i}", "ascending" if desc else "descending"))
        keys.append((name, "descending" if desc else "ascending"))
        if negative_zero is not None:
            out = out.append_column(f"\x00sign{i}", negative_zero)
            keys.append((f"\x00sign{i}", "ascending" if desc else "descending"))
    if first is not None and first < out.num_rows:
        if first == 0:
            return out.slice(0, 0)
        out = _leading(out, keys[0], first)
        if first < out.num_rows:
            out = out.take(pc.select_k_unstable(out.select([k for k, _ in keys]).combine_chunks(), first, keys))
    return out.sort_by(keys)


def _leading(out: pa.Table, key: tuple[str, str], first: int) -> pa.Table:
    """The rows of ``out`` whose first sort key is not past the ``first``-th row's (a superset of the first rows,
    ties kept): one column's top k and a comparison cost less than a top k of all the keys of all the rows.  Only
    for keys without nulls (a null flag is a key of its own) or NaNs, of the types compared in order."""
    name, how = key
    col = out.column(name)
    t = col.type
    ordered = pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_temporal(t) or pa.types.is_boolean(t)
    if not (ordered or pa.types.is_string(t) or pa.types.is_large_string(t)) or col.null_count:
        return out
    parts = [p for c in col.chunks if (p := _numbers(c)) is not None]
    if parts and len(parts) == col.num_chunks:  # (numpy's selection and comparison: Arrow's of decimals cost more)
        numbers = np.concatenate(parts) if len(parts) > 1 else np.array(parts[0])
        k = len(numbers) - first if how == "descending" else first - 1
        numbers.partition(k)  # (in place: ``numbers`` is a copy; the comparison reads ``parts``)
        edge = numbers[k]
        kept = np.concatenate([p >= edge if how == "descending" else p <= edge for p in parts])
        rows = np.flatnonzero(kept)
        if len(rows) <= 256:  # (a take of a chunked table joins its chunks first)
            return pa.concat_tables([out.slice(int(r), 1) for r in rows])
        return out.filter(pa.array(kept))
    values = col.combine_chunks()
    edge = values.take(pc.select_k_unstable(values, first, [("", how)]))
    if how == "descending":
        return out.filter(pc.greater_equal(col, pc.min(edge)))
    return out.filter(pc.less_equal(col, pc.max(edge)))


def _numbers(values: pa.Array) -> np.ndarray | None:
    """``values`` (no nulls) as numbers numpy orders as they order: integers and times as they are, decimals of up
    to 18 digits as their unscaled int64 (the low half of each 16 bytes); None for other types."""
    t = values.type
    if pa.types.is_decimal128(t) and t.precision <= 18:
        words = np.frombuffer(values.buffers()[1], dtype=np.int64, count=2 * (values.offset + len(values)))
        return words[2 * values.offset :: 2]
    if pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return np.asarray(values.to_numpy(zero_copy_only=False))
    return None


def _negatives(col: pa.ChunkedArray) -> tuple[pa.ChunkedArray | None, pa.ChunkedArray | None]:
    """Where a float column is a NaN with its sign bit set, and where it is -0.0 (each None when it is not a float
    column or has none)."""
    if not pa.types.is_floating(col.type):
        return None, None
    signs = pa.chunked_array([pa.array(np.signbit(c.to_numpy(zero_copy_only=False))) for c in col.chunks], pa.bool_())
    nan = pc.and_(pc.is_nan(col), signs)
    zero = pc.and_(pc.equal(col, 0), signs)
    return (nan if pc.any(nan).as_py() else None), (zero if pc.any(zero).as_py() else None)


def _aggregate(q: Select, base: pa.Table, typed: _Typed) -> tuple[pa.Table, list[pa.Field], list[str]]:
    """Group ``base`` by the GROUP BY keys, compute the aggregates, keep the groups HAVING accepts, and evaluate
    the output expressions (and hidden ORDER BY keys) over the groups."""
    group = q.group or []
    keys = {g.sql(): f"\x00key{i}" for i, g in enumerate(group)}
    args: dict[str, pc.Expression] = {}
    key_fields = []
    for g in group:
        if any(is_aggregate(n) for n in g.walk()):
            raise SqlError(f"an aggregate in GROUP BY ({g.sql()}) in {q.sql!r}")
        e, t, null = typed(g)
        args[keys[g.sql()]] = e
        key_fields.append(pa.field(keys[g.sql()], t, null))
    calls: dict[str, Call] = {}  # aggregate text -> its column, pyarrow aggregations, field, finish
    trees = [e for _, e in q.items] + [e for e, _, _ in q.order] + ([q.having] if q.having is not None else [])
    found = {(c := aggregate_call(n)).sql(): c for tree in trees for n in tree.walk() if is_aggregate(n)}
    twice = sums_twice(list(found.values()))
    for text, call in found.items():
        calls[text] = aggregation(q, call, len(calls), args, typed, twice)
    key_names = [f.name for f in key_fields]
    try:
        columns, groups = grouped(
            _project(base, args), key_names, [s for _, specs, _, _ in calls.values() for s in specs]
        )
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid) as e:
        raise SqlError(f"cannot compute the aggregates of {q.sql!r}: {e}") from None
    agg_fields = [f for _, _, f, _ in calls.values()]
    results = iter(columns)
    cols = [finish([next(results) for _ in specs]) for _, specs, _, finish in calls.values()]
    cols += [groups.column(k) for k in key_names]
    table = pa.Table.from_arrays(cols, schema=pa.schema(agg_fields + key_fields))
    over = _Typed(q.sql, table.schema)

    def rewrite(node: exp.Expr) -> exp.Expr:
        def swap(n: exp.Expr) -> exp.Expr:
            if is_aggregate(n) or (isinstance(n, exp.Filter) and is_aggregate(n.this)):
                return exp.column(calls[n.sql()][0], quoted=True)
            k = keys.get(n.sql())
            return exp.column(k, quoted=True) if k is not None else n

        out = node.transform(swap)
        stray = next((c for c in out.find_all(exp.Column) if not str(c.name).startswith("\x00")), None)
        if stray is not None:
            raise SqlError(
                f"Error during planning: column {stray.sql()} must appear in the GROUP BY clause or be part of an "
                f"aggregate function (in {q.sql!r})"
            )
        return out

    if q.having is not None:
        table = table.filter(_project(table, {"h": over(rewrite(q.having), filter=True)[0]}).column("h"))
    exprs, fields = {}, []
    for name, node in q.items:
        value, t, null = over(rewrite(node))
        exprs[name] = value
        fields.append(pa.field(name, t, null))
    hidden = _order_keys(q, exprs, lambda n: over(rewrite(n))[0])
    return _project(table, exprs), fields, hidden
