"""sqlglot syntax tree -> ``pyarrow.compute.Expression``, typed as pylance (lance + DataFusion) types it.

Two passes, as in the reference's planner (rust/lance-datafusion/src/planner.rs, logical_expr.rs):
1. ``_resolve`` marks the literals that lance converts to a neighbouring column's type (strictly:
   a literal that does not fit is an error);
2. ``Translator.value`` builds the expression bottom-up, every node with its Arrow type; operands
   meet in DataFusion's common type (lancelot/sql/types.py) with explicit casts, so pyarrow never
   guesses.  Constant sub-expressions are computed at once (``1 + 1`` is ``2``; ``'x'::int`` fails
   here, as in pylance's planning).

Semantics kept from DataFusion where pyarrow's kernels differ: float comparisons order NaN above
every number and equal to itself; ``x IN (..., NULL)`` is unknown when nothing matches; integer
``+ - *`` wrap, ``/`` truncates and fails on a zero divisor; ``%`` takes the dividend's sign.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.errors import SqlError
from lancelot.sql.parse import position
from lancelot.sql.types import (
    arrow_type,
    as_decimal,
    coerce_literal,
    comparison_common,
    is_numeric,
    is_string,
    numeric_common,
)

_NULL_BOOL = pa.scalar(None, pa.bool_())


@dataclass(frozen=True)
class Val:
    """A translated node: its expression, its Arrow type, and its value when known at parse time."""

    expr: pc.Expression
    type: pa.DataType
    const: pa.Scalar | None = None


def _const(s: pa.Scalar) -> Val:
    return Val(pc.scalar(s), s.type, s)


_COMPARISONS: dict[type[exp.Expr], str] = {
    exp.EQ: "equal",
    exp.NEQ: "not_equal",
    exp.GT: "greater",
    exp.GTE: "greater_equal",
    exp.LT: "less",
    exp.LTE: "less_equal",
}
_ARITHMETIC: dict[type[exp.Expr], str] = {
    exp.Add: "add",
    exp.Sub: "subtract",
    exp.Mul: "multiply",
    exp.Div: "divide",
    exp.Mod: "mod",
}
#: DataFusion's ``BinaryExpr`` operators (what lance's literal resolution looks through)
_BINARY = (*_COMPARISONS, *_ARITHMETIC, exp.And, exp.Or, exp.DPipe)


def _unparen(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def is_literal(node: exp.Expr) -> bool:
    """A literal as DataFusion's parser makes one: numbers (a minus sign folded in), strings,
    booleans, NULL, hex strings and arrays of those; not ``DATE '...'`` nor casts."""
    node = _unparen(node)
    if isinstance(node, exp.Literal | exp.Boolean | exp.Null | exp.HexString):
        return True
    if isinstance(node, exp.Neg):
        inner = node.this
        return isinstance(inner, exp.Literal) and not inner.is_string
    if isinstance(node, exp.Array):
        return all(is_literal(e) for e in node.expressions)
    return False


def _all_literal(node: exp.Expr) -> bool:
    node = _unparen(node)
    if isinstance(node, _BINARY):
        return _all_literal(node.this) and _all_literal(node.expression)
    return is_literal(node)


def column_parts(node: exp.Expr) -> list[tuple[str, bool]] | None:
    """``[(name, quoted), ...]`` when ``node`` names a column or a field inside struct columns
    (``a``, ``s.a.b``, ``s['a']``), else None."""
    if isinstance(node, exp.Column):
        if not isinstance(node.this, exp.Identifier):
            return None
        return [(p.name, bool(p.args.get("quoted"))) for p in node.parts]
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):
        head = column_parts(node.this)
        if head is None:
            return None
        return [*head, (node.expression.name, True)]
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
        key = node.expressions[0]
        if isinstance(key, exp.Literal) and key.is_string:
            head = column_parts(node.this)
            return None if head is None else [*head, (key.name, True)]
    return None


class Translator:
    """Translate one SQL filter or expression against ``schema``."""

    def __init__(self, sql: str, schema: pa.Schema, what: str) -> None:
        self.sql, self.schema, self.what = sql, schema, what
        self.hints: dict[int, pa.DataType] = {}
        self.boolean: set[int] = set()
        self.columns: list[tuple[str, ...]] = []

    # -- errors and columns -------------------------------------------------------------------
    def error(self, message: str, node: exp.Expr | None) -> SqlError:
        return SqlError(f"{message}, at {position(self.sql, node)} of the SQL {self.what} {self.sql!r}")

    def resolve_path(self, parts: list[tuple[str, bool]], node: exp.Expr) -> tuple[tuple[str, ...], pa.DataType]:
        """The schema path and type of a column reference: an unquoted top-level name matches
        regardless of case when no column has it exactly (as pylance), struct fields match exactly."""
        (name, quoted), rest = parts[0], parts[1:]
        names = self.schema.names
        if name not in names:
            folded = [n for n in names if n.lower() == name.lower()] if not quoted else []
            if len(folded) != 1:
                raise self.error(f"no column named {name!r} (columns: {', '.join(names)})", node)
            name = folded[0]
        t = self.schema.field(name).type
        path = [name]
        for child, _ in rest:
            if not pa.types.is_struct(t):
                raise self.error(f"column {'.'.join(path)!r} is not a struct: no field {child!r} in it", node)
            idx = t.get_field_index(child)
            if idx < 0:
                fields = [t.field(i).name for i in range(t.num_fields)]
                raise self.error(
                    f"struct column {'.'.join(path)!r} has no field {child!r} (fields: {', '.join(fields)})", node
                )
            t = t.field(idx).type
            path.append(child)
        return tuple(path), t

    def column_type(self, node: exp.Expr) -> pa.DataType | None:
        parts = column_parts(_unparen(node))
        if parts is None:
            return None
        try:
            return self.resolve_path(parts, node)[1]
        except SqlError:
            return None

    # -- pass 1: lance's literal resolution --------------------------------------------------
    def _hint(self, node: exp.Expr, t: pa.DataType) -> None:
        node = _unparen(node)
        if isinstance(node, _BINARY):
            self._hint(node.this, t)
            self._hint(node.expression, t)
        elif is_literal(node):
            self.hints[id(node)] = t

    def resolve(self, node: exp.Expr) -> None:
        node = _unparen(node)
        negated = isinstance(node, exp.Not)
        inner = node.this if negated else node  # NOT (x IN ...) is a NOT, not a NOT IN: no resolution
        if isinstance(inner, exp.Between):
            t = self.column_type(inner.this)
            if t is not None:
                self._hint(inner.args["low"], t)
                self._hint(inner.args["high"], t)
        elif isinstance(inner, exp.In) and isinstance(_unparen(inner.this), exp.Column):
            t = self.column_type(inner.this)
            if (
                t is not None
                and column_parts(_unparen(inner.this)) is not None
                and len(column_parts(_unparen(inner.this)) or []) == 1
            ):
                for e in inner.expressions:
                    self._hint(e, t)
        elif negated:
            return
        elif isinstance(node, exp.And | exp.Or):
            self.resolve(node.this)
            self.resolve(node.expression)
        elif isinstance(node, _BINARY):
            left, right = _unparen(node.this), _unparen(node.expression)
            lt = self.column_type(left)
            if lt is not None:
                if is_literal(right) or (isinstance(right, _BINARY) and _all_literal(right)):
                    self._hint(right, lt)
            else:
                rt = self.column_type(right)
                if rt is not None and is_literal(left):
                    self._hint(left, rt)

    def mark_boolean(self, node: exp.Expr) -> None:
        """regexp_match in a boolean position means "matches" (lance's coerce_filter_type_to_boolean)."""
        node = _unparen(node)
        if isinstance(node, exp.Anonymous) and node.name.lower() == "regexp_match":
            self.boolean.add(id(node))
        elif isinstance(node, _BINARY):
            self.mark_boolean(node.this)
            self.mark_boolean(node.expression)
        elif isinstance(node, exp.Not):
            self.mark_boolean(node.this)
        elif isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            self.mark_boolean(node.this)

    # -- pass 2: typed expressions -----------------------------------------------------------
    def call(self, name: str, args: list[Val], node: exp.Expr, options: Any = None) -> Val:
        """``name`` applied to ``args``: computed now when all are constants, else an expression whose
        type pyarrow reports for empty inputs (a kernel that does not exist for them is a SqlError)."""
        try:
            if all(a.const is not None for a in args):
                out = pc.call_function(name, [a.const for a in args], options)
                return _const(out)
            probe = [a.const if a.const is not None else pa.array([], a.type) for a in args]
            t = pc.call_function(name, probe, options).type
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            types = ", ".join(str(a.type) for a in args)
            raise self.error(f"{name} does not apply to ({types}): {e}", node) from None
        except pa.ArrowInvalid as e:
            raise self.error(f"{name}: {e}", node) from None
        return Val(pc.Expression._call(name, [a.expr for a in args], options), t)

    def cast(self, v: Val, t: pa.DataType, node: exp.Expr) -> Val:
        if v.type == t:
            return v
        if pa.types.is_decimal(t) and pa.types.is_integer(v.type) and as_decimal(v.type) != t:
            v = self.cast(v, as_decimal(v.type), node)  # Arrow casts integers only to wide decimals
        if v.const is not None:
            try:
                return _const(v.const.cast(t))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError) as e:
                raise self.error(f"cannot cast {v.const.as_py()!r} to {t}: {e}", node) from None
        try:
            pa.array([], v.type).cast(t)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            raise self.error(f"cannot cast {v.type} to {t}", node) from None
        return Val(v.expr.cast(t), t)

    def boolean_operand(self, v: Val, node: exp.Expr) -> Val:
        if pa.types.is_null(v.type):
            return self.cast(v, pa.bool_(), node)
        if not pa.types.is_boolean(v.type):
            raise self.error(f"expected a boolean, not {v.type}: {node.sql()}", node)
        return v

    def literal(self, node: exp.Expr) -> Val:
        n = _unparen(node)
        if isinstance(n, exp.Null):
            s = pa.scalar(None, pa.null())
        elif isinstance(n, exp.Boolean):
            s = pa.scalar(bool(n.this), pa.bool_())
        elif isinstance(n, exp.HexString):
            s = pa.scalar(bytes.fromhex(n.this if len(n.this) % 2 == 0 else "0" + n.this), pa.binary())
        elif isinstance(n, exp.Array):
            items = [self.literal(e).const for e in n.expressions]
            t = items[0].type if items and items[0] is not None else pa.null()
            coerced = [coerce_literal(i, t) if i is not None else None for i in items]
            values = [c.as_py() for c in coerced if c is not None]
            if len(values) < len(items):
                raise self.error(f"array elements must have one type ({t})", n)
            s = pa.scalar(values, pa.list_(t))
        elif isinstance(n, exp.Literal) and n.is_string:
            s = pa.scalar(n.this, pa.utf8())
        else:
            negative = isinstance(n, exp.Neg)
            text = ("-" if negative else "") + (n.this.this if negative else n.this)
            try:
                value: int | float = int(text)
                s = pa.scalar(value, pa.int64()) if -(2**63) <= value < 2**63 else pa.scalar(float(text))
            except ValueError:
                try:
                    s = pa.scalar(float(text), pa.float64())
                except ValueError:
                    raise self.error(f"{text!r} is not a number", n) from None
        want = self.hints.get(id(n))
        if want is not None:
            c = coerce_literal(s, want)
            if c is None:
                raise self.error(f"the literal {n.sql()} cannot be converted to the column's type {want}", n)
            s = c
        return _const(s)

    def value(self, node: exp.Expr) -> Val:
        """The typed expression of ``node``."""
        node = _unparen(node)
        if is_literal(node):
            return self.literal(node)
        parts = column_parts(node)
        if parts is not None:
            path, t = self.resolve_path(parts, node)
            if path not in self.columns:
                self.columns.append(path)
            return Val(pc.field(*path), t)
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            return handler(self, node)
        if isinstance(node, exp.Anonymous):
            from lancelot.sql.functions import function

            return function(self, node)
        what = type(node).__name__
        raise self.error(f"{what} ({node.sql()}) is not supported in lance SQL", node)

    # -- node kinds ----------------------------------------------------------------------------
    def compare(self, fn: str, a: Val, b: Val, node: exp.Expr) -> Val:
        t = comparison_common(a.type, b.type)
        if t is None:
            raise self.error(f"cannot compare {a.type} with {b.type}", node)
        a, b = self.cast(a, t, node), self.cast(b, t, node)
        plain = self.call(fn, [a, b], node)
        if not pa.types.is_floating(t) or plain.const is not None:
            return plain
        return self._nan_order(fn, a, b, plain, node)

    def _nan_order(self, fn: str, a: Val, b: Val, plain: Val, node: exp.Expr) -> Val:
        """DataFusion orders NaN above all numbers and equal to itself."""
        nan: Callable[[pc.Expression, pc.Expression], pc.Expression] = {
            "equal": lambda x, y: x & y,
            "not_equal": lambda x, y: ~(x & y),
            "greater": lambda x, y: x & ~y,
            "greater_equal": lambda x, y: x,
            "less": lambda x, y: ~x & y,
            "less_equal": lambda x, y: y,
        }[fn]
        bconst = b.const.as_py() if b.const is not None else None
        if b.const is not None and bconst == bconst:  # a number, not NaN: only a NaN ``a`` matters
            if fn in ("greater", "greater_equal"):
                return Val(pc.or_kleene(plain.expr, pc.is_nan(a.expr)), pa.bool_())
            return plain  # IEEE agrees: NaN is not equal to, nor below, a number
        isnan_a, isnan_b = pc.is_nan(a.expr), pc.is_nan(b.expr)
        either = pc.or_kleene(isnan_a, isnan_b)
        return Val(pc.if_else(either, nan(isnan_a, isnan_b), plain.expr), pa.bool_())

    def arithmetic(self, fn: str, a: Val, b: Val, node: exp.Expr) -> Val:
        t = numeric_common(a.type, b.type)
        if pa.types.is_null(a.type) or pa.types.is_null(b.type):
            t = b.type if pa.types.is_null(a.type) else a.type
        if t is None or not (is_numeric(t) or pa.types.is_null(t)):
            raise self.error(f"cannot apply {node.key} to {a.type} and {b.type}", node)
        if pa.types.is_decimal(t) and fn != "mod":
            da = a if pa.types.is_decimal(a.type) else self.cast(a, as_decimal(a.type), node)
            db = b if pa.types.is_decimal(b.type) else self.cast(b, as_decimal(b.type), node)
            return self.call(fn, [da, db], node)
        a, b = self.cast(a, t, node), self.cast(b, t, node)
        if fn != "mod":
            return self.call(fn, [a, b], node)
        quotient = self.call("divide", [a, b], node)
        if pa.types.is_floating(t):
            quotient = self.call("trunc", [quotient], node)
        return self.call("subtract", [a, self.call("multiply", [quotient, b], node)], node)

    def in_list(self, node: exp.In) -> Val:
        if not node.expressions:
            raise self.error("IN needs at least one value", node)
        x = self.value(node.this)
        items = [self.value(e) for e in node.expressions]
        t = x.type
        for i in items:
            c = comparison_common(t, i.type)
            if c is None:
                raise self.error(f"cannot compare {x.type} with {i.type} in IN", node)
            t = c
        if all(i.const is not None for i in items) and not pa.types.is_floating(t) and x.const is None:
            x = self.cast(x, t, node)
            consts = [self.cast(i, t, node).const for i in items]
            values = pa.array([c.as_py() for c in consts if c is not None and c.is_valid], t)
            found = Val(pc.is_in(x.expr, value_set=values, skip_nulls=True), pa.bool_())
            if any(c is not None and not c.is_valid for c in consts):  # no match is unknown
                return Val(pc.or_kleene(found.expr, pc.scalar(_NULL_BOOL)), pa.bool_())
            return Val(pc.if_else(pc.is_valid(x.expr), found.expr, pc.scalar(_NULL_BOOL)), pa.bool_())
        out: Val | None = None
        for i in items:
            eq = self.compare("equal", x, i, node)
            out = eq if out is None else self.call("or_kleene", [out, eq], node)
        assert out is not None
        return out

    def like(self, node: exp.Expr, ignore_case: bool, escape: exp.Expr | None = None) -> Val:
        if escape is not None and not (isinstance(escape, exp.Literal) and escape.this == "\\"):
            raise self.error("LIKE does not support an escape character other than the backslash (\\)", escape)
        x = self.value(node.this)
        pattern = self.value(node.expression)
        if pattern.const is None or not is_string(pattern.type):
            raise self.error("the pattern of LIKE must be a string literal", node.expression)
        if pa.types.is_dictionary(x.type):
            x = self.cast(x, x.type.value_type, node)
        if not is_string(x.type) and not pa.types.is_null(x.type):
            raise self.error(f"LIKE applies to strings, not {x.type}", node)
        p = pattern.const.as_py()
        if p is None:
            return _const(_NULL_BOOL)
        out = self.call("match_like", [x], node, pc.MatchSubstringOptions(p, ignore_case=ignore_case))
        if node.args.get("negate"):
            out = self.call("invert", [out], node)
        return out


def _compare(t: Translator, node: exp.Expr) -> Val:
    return t.compare(_COMPARISONS[type(node)], t.value(node.this), t.value(node.expression), node)


def _arith(t: Translator, node: exp.Expr) -> Val:
    return t.arithmetic(_ARITHMETIC[type(node)], t.value(node.this), t.value(node.expression), node)


def _logical(t: Translator, node: exp.Expr) -> Val:
    fn = "and_kleene" if isinstance(node, exp.And) else "or_kleene"
    a = t.boolean_operand(t.value(node.this), node.this)
    b = t.boolean_operand(t.value(node.expression), node.expression)
    return t.call(fn, [a, b], node)


def _not(t: Translator, node: exp.Expr) -> Val:
    inner = _unparen(node.this)
    if isinstance(inner, exp.Is):
        return _is(t, inner, negated=True)
    return t.call("invert", [t.boolean_operand(t.value(node.this), node.this)], node)


def _is(t: Translator, node: exp.Expr, negated: bool = False) -> Val:
    x = t.value(node.this)
    what = node.expression
    if isinstance(what, exp.Null):
        return t.call("is_valid" if negated else "is_null", [x], node)
    if not isinstance(what, exp.Boolean):
        raise t.error(f"IS {what.sql()} is not supported", node)
    x = t.boolean_operand(x, node.this)
    truth = bool(what.this)
    # IS TRUE: true only for true; IS NOT TRUE: everything else (null included)
    hit = x if truth else t.call("invert", [x], node)
    if negated:
        return t.call("invert", [t.call("coalesce", [hit, _const(pa.scalar(False))], node)], node)
    return t.call("coalesce", [hit, _const(pa.scalar(False))], node)


def _distinct(t: Translator, node: exp.Expr) -> Val:
    a, b = t.value(node.this), t.value(node.expression)
    ne = t.compare("not_equal", a, b, node)
    one_null = t.call("xor", [t.call("is_null", [a], node), t.call("is_null", [b], node)], node)
    out = t.call("coalesce", [ne, one_null], node) if ne.const is None or not ne.const.is_valid else ne
    if isinstance(node, exp.NullSafeEQ):
        out = t.call("invert", [out], node)
    return out


def _between(t: Translator, node: exp.Expr) -> Val:
    x, lo, hi = t.value(node.this), t.value(node.args["low"]), t.value(node.args["high"])
    ge = t.compare("greater_equal", x, lo, node)
    le = t.compare("less_equal", x, hi, node)
    return t.call("and_kleene", [ge, le], node)


def _neg(t: Translator, node: exp.Expr) -> Val:
    x = t.value(node.this)
    if not is_numeric(x.type):
        raise t.error(f"cannot negate {x.type}", node)
    return t.call("negate", [x], node)


def _cast(t: Translator, node: exp.Expr) -> Val:
    to = arrow_type(node.args["to"])
    if to is None:
        raise t.error(f"unsupported type {node.args['to'].sql()} in CAST", node)
    x = t.value(node.this)
    if x.const is not None and is_string(x.type) and (pa.types.is_timestamp(to) or pa.types.is_date(to)):
        return _const(_temporal(t, x.const.as_py(), to, node))
    return t.cast(x, to, node)


def _temporal(t: Translator, text: str, to: pa.DataType, node: exp.Expr) -> pa.Scalar:
    """``DATE '...'`` / ``TIMESTAMP '...'`` literals: ISO dates, a space or ``T`` before the time."""
    try:
        if pa.types.is_date(to):
            return pa.scalar(_dt.date.fromisoformat(text.strip()), to)
        value = _dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise t.error(f"cannot read {text!r} as a {to}", node) from None
    if value.tzinfo is not None:
        value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return pa.scalar(value, pa.timestamp("us")).cast(to)


def _dpipe(t: Translator, node: exp.Expr) -> Val:
    a, b = t.value(node.this), t.value(node.expression)
    a, b = t.cast(a, pa.utf8(), node), t.cast(b, pa.utf8(), node)
    return t.call("binary_join_element_wise", [a, b, _const(pa.scalar(""))], node)


def _in(t: Translator, node: exp.Expr) -> Val:
    assert isinstance(node, exp.In)
    if node.args.get("query") is not None or node.args.get("unnest") is not None:
        raise t.error("IN takes a list of values", node)
    return t.in_list(node)


def _like(t: Translator, node: exp.Expr) -> Val:
    return t.like(node, isinstance(node, exp.ILike))


def _escape(t: Translator, node: exp.Expr) -> Val:
    inner = node.this
    if not isinstance(inner, exp.Like | exp.ILike):
        raise t.error("ESCAPE applies to LIKE", node)
    return t.like(inner, isinstance(inner, exp.ILike), node.expression)


def _typed_not(t: Translator, node: exp.Expr) -> Val:
    return _not(t, node)


_HANDLERS: dict[type[exp.Expr], Callable[[Translator, exp.Expr], Val]] = {
    **dict.fromkeys(_COMPARISONS, _compare),
    **dict.fromkeys(_ARITHMETIC, _arith),
    exp.And: _logical,
    exp.Or: _logical,
    exp.Not: _typed_not,
    exp.Is: _is,
    exp.NullSafeEQ: _distinct,
    exp.NullSafeNEQ: _distinct,
    exp.Between: _between,
    exp.Neg: _neg,
    exp.Cast: _cast,
    exp.DPipe: _dpipe,
    exp.In: _in,
    exp.Like: _like,
    exp.ILike: _like,
    exp.Escape: _escape,
}
