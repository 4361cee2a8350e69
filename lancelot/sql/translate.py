"""sqlglot syntax tree -> ``pyarrow.compute.Expression``, typed as pylance (lance + DataFusion) types it.

Two passes, as in the reference's planner (rust/lance-datafusion/src/planner.rs, logical_expr.rs):
1. ``Translator.resolve`` marks the literals that lance converts to a neighbouring column's type (strictly:
   a literal that does not fit is an error);
2. ``Translator.value`` builds the expression bottom-up, every node with its Arrow type; operands
   meet in DataFusion's common type (lancelot/sql/types.py) with explicit casts, so pyarrow never
   guesses.  Constant sub-expressions are computed at once (``1 + 1`` is ``2``; ``'x'::int`` fails
   here, as in pylance's planning); one whose kernel fails (``1 / 0``) is left for the scan to raise
   on its rows, as DataFusion's simplifier leaves it (``Val.failed``).

Operators live in lancelot/sql/operators.py (which dispatches to comparison.py, arithmetic.py, casts.py,
string_operators.py, special_forms.py), functions in functions.py, lists.py, temporal.py.  Each
handler is given this ``Translator`` and translates its arguments through ``t.value``: the handler
modules import only lancelot/sql/values.py (``Val`` and the syntax helpers), never this module.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.errors import SqlError
from lancelot.sql.parse import position
from lancelot.sql.types import as_decimal, coerce_literal
from lancelot.sql.values import BINARY, Val, column_parts, const_val, is_literal, sql_text, unparen
from lancelot.util.types import is_string_like

_TYPES: dict[tuple[Any, ...], pa.DataType] = {}
#: DataFusion's binary operators, NULL when an operand is the NULL literal
_NULL_OPERATORS = frozenset(
    f"{op}{checked}" for op in ("add", "subtract", "multiply", "divide") for checked in ("", "_checked")
) | {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
#: kernels whose result is null only where an argument is (DataFusion's binary, negation and NOT)
_KEEPS_NULLS = frozenset(
    f"{op}{checked}"
    for op in ("add", "subtract", "multiply", "divide", "negate", "power", "abs")
    for checked in ("", "_checked")
) | {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "and_kleene", "or_kleene", "invert"}


def _result_type(name: str, types: tuple[pa.DataType, ...], options: Any) -> pa.DataType:
    """The type ``name`` returns for arguments of ``types`` (pyarrow's answer for empty arrays)."""
    key = (name, types, None if options is None else str(options))
    t = _TYPES.get(key)
    if t is None:
        t = pc.call_function(name, [pa.array([], x) for x in types], options).type
        if len(_TYPES) < 4096:
            _TYPES[key] = t
    return t


def _all_literal(node: exp.Expr) -> bool:
    node = unparen(node)
    if isinstance(node, BINARY):
        return _all_literal(node.this) and _all_literal(node.expression)
    return is_literal(node)


class Translator:
    """Translate one SQL filter or expression against ``schema``."""

    def __init__(self, sql: str, schema: pa.Schema, what: str) -> None:
        self.sql, self.schema, self.what = sql, schema, what
        self.hints: dict[int, pa.DataType] = {}
        self.boolean: set[int] = set()
        self.columns: list[tuple[str, ...]] = []
        self.values: dict[int, Val] = {}

    # -- errors and columns -------------------------------------------------------------------
    def error(self, message: str, node: exp.Expr | None) -> SqlError:
        return SqlError(f"{message}, at {position(node)} of the SQL {self.what} {self.sql!r}")

    def resolve_path(self, parts: list[tuple[str, bool]], node: exp.Expr) -> tuple[tuple[str, ...], pa.DataType]:
        """The schema path and type of a column reference: an unquoted top-level name matches
        regardless of case when no column has it exactly (as pylance), struct fields match exactly."""
        (name, quoted), rest = parts[0], parts[1:]
        names = self.schema.names
        if name not in names:
            folded = [n for n in names if n.lower() == name.lower()] if not quoted else []
            if len(folded) != 1:
                raise self.error(f"No field named {name} (columns: {', '.join(names)})", node)
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
        parts = column_parts(unparen(node))
        if parts is None:
            return None
        try:
            return self.resolve_path(parts, node)[1]
        except SqlError:
            return None

    # -- pass 1: lance's literal resolution --------------------------------------------------
    def _hint(self, node: exp.Expr, t: pa.DataType) -> None:
        node = unparen(node)
        if isinstance(node, BINARY):
            self._hint(node.this, t)
            self._hint(node.expression, t)
        elif is_literal(node):
            self.hints[id(node)] = t

    def resolve(self, node: exp.Expr) -> None:
        node = unparen(node)
        negated = isinstance(node, exp.Not)
        inner = node.this if negated else node  # NOT (x IN ...) is a NOT, not a NOT IN: no resolution
        if isinstance(inner, exp.Between):
            t = self.column_type(inner.this)
            if t is not None:
                self._hint(inner.args["low"], t)
                self._hint(inner.args["high"], t)
        elif isinstance(inner, exp.In) and isinstance(unparen(inner.this), exp.Column):
            t = self.column_type(inner.this)
            if (
                t is not None
                and column_parts(unparen(inner.this)) is not None
                and len(column_parts(unparen(inner.this)) or []) == 1
            ):
                for e in inner.expressions:
                    self._hint(e, t)
        elif negated:
            return
        elif isinstance(node, exp.And | exp.Or):
            self.resolve(node.this)
            self.resolve(node.expression)
        elif isinstance(node, BINARY):
            left, right = unparen(node.this), unparen(node.expression)
            lt = self.column_type(left)
            if lt is not None:
                if is_literal(right) or (isinstance(right, BINARY) and _all_literal(right)):
                    self._hint(right, lt)
            else:
                rt = self.column_type(right)
                if rt is not None and is_literal(left):
                    self._hint(left, rt)

    def mark_boolean(self, node: exp.Expr) -> None:
        """regexp_match as the filter, or under its AND / OR / NOT, means "matches" (lance's
        coerce_filter_type_to_boolean); elsewhere (``IS NULL``, a comparison) it is the list of matches."""
        node = unparen(node)
        if isinstance(node, exp.Anonymous) and node.name.lower() == "regexp_match":
            self.boolean.add(id(node))
        elif isinstance(node, exp.And | exp.Or):
            self.mark_boolean(node.this)
            self.mark_boolean(node.expression)
        elif isinstance(node, exp.Not):
            self.mark_boolean(node.this)

    # -- pass 2: typed expressions -----------------------------------------------------------
    def call(self, name: str, args: list[Val], node: exp.Expr, options: Any = None) -> Val:
        """``name`` applied to ``args``: computed now when all are constants, else an expression whose
        type pyarrow reports for empty inputs (a kernel that does not exist for them is a SqlError).
        A constant whose kernel fails is ``failed``, and so is what keeps its nulls from failed and
        constant arguments only (``(1 / 0) + 1``), as DataFusion's nullability reasons."""
        failed = False
        try:
            if all(a.const is not None for a in args):
                try:
                    return const_val(pc.call_function(name, [a.const for a in args], options))
                except pa.ArrowInvalid:
                    failed = True
            t = _result_type(name, tuple(a.type for a in args), options)
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            types = ", ".join(str(a.type) for a in args)
            raise self.error(f"{name} does not apply to ({types}): {e}", node) from None
        except pa.ArrowInvalid as e:
            raise self.error(f"{name}: {e}", node) from None
        if name in _NULL_OPERATORS and any(a.const is not None and not a.const.is_valid for a in args):
            return const_val(pa.scalar(None, t))  # DataFusion's simplifier: ``NULL - x`` is NULL, x never run
        if not failed and any(a.failed for a in args) and name in _KEEPS_NULLS:
            failed = all(a.failed or (a.const is not None and a.const.is_valid) for a in args)
        return Val(pc.Expression._call(name, [a.expr for a in args], options), t, failed=failed)

    def cast(self, v: Val, t: pa.DataType, node: exp.Expr) -> Val:
        if v.type == t:
            return v
        if pa.types.is_decimal(t) and pa.types.is_integer(v.type) and as_decimal(v.type) != t:
            v = self.cast(v, as_decimal(v.type), node)  # Arrow casts integers only to wide decimals
        if pa.types.is_timestamp(t) and pa.types.is_integer(v.type) and not pa.types.is_int64(v.type):
            v = self.cast(v, pa.int64(), node)  # arrow-rs reads any integer as ticks; Arrow C++ only int64
        if pa.types.is_timestamp(t) and t.tz is not None:
            return self._to_zoned(v, t, node)
        if is_string_like(t) and pa.types.is_decimal(v.type) and v.type.scale > 6:
            from lancelot.sql.udfs import rowwise  # Arrow C++ writes 0E-15 where arrow-rs writes digits

            if v.const is not None:
                d = v.const.as_py()
                return self.cast(const_val(pa.scalar(None if d is None else format(d, "f"), pa.utf8())), t, node)
            text = self.call(rowwise("decimal_text", {"x": v.type}, pa.utf8(), lambda d: format(d, "f")), [v], node)
            return self.cast(text, t, node)
        if is_string_like(t) and (pa.types.is_floating(v.type) or pa.types.is_timestamp(v.type)):
            from lancelot.sql.udfs import float_to_text, timestamp_to_text

            udf = float_to_text(v.type) if pa.types.is_floating(v.type) else timestamp_to_text(v.type)
            return self.cast(self.call(udf, [v], node), t, node)  # as arrow-rs writes them
        if pa.types.is_floating(t) and pa.types.is_decimal(v.type):  # arrow-rs: unscaled / 10^scale
            if v.const is not None:
                unscaled = int(v.const.as_py().scaleb(v.type.scale)) if v.const.is_valid else None
                exact = None if unscaled is None else float(unscaled) / 10.0**v.type.scale
                return self.cast(const_val(pa.scalar(exact, pa.float64())), t, node)
            from lancelot.sql.udfs import decimal_to_double

            return self.cast(self.call(decimal_to_double(v.type), [v], node), t, node)
        if pa.types.is_decimal(t) and is_string_like(v.type):
            return self._text_to_decimal(v, t, node)
        if pa.types.is_decimal(t) and pa.types.is_floating(v.type):  # arrow-rs: x * 10^scale, rounded
            from lancelot.sql.udfs import float_decimals, float_to_decimal

            if v.const is not None:
                try:
                    return const_val(float_decimals(pa.array([v.const.as_py()], v.type), t)[0])
                except ValueError as e:
                    raise self.error(f"cannot cast {v.const.as_py()!r} to {t}: {e}", node) from None
            return self.call(float_to_decimal(v.type, t), [v], node)
        if pa.types.is_date32(t) and pa.types.is_int64(v.type):  # arrow-rs: days that must fit int32
            v = self.cast(v, pa.int32(), node)
        if pa.types.is_timestamp(t) and is_string_like(v.type) and v.const is None:
            return self._text_to_timestamp(v, t, node)
        to_number = pa.types.is_integer(t) or pa.types.is_floating(t)
        days = pa.types.is_date(v.type) and t in (pa.int32(), pa.int64())
        if (pa.types.is_timestamp(v.type) and to_number) or days:
            storage = pa.int32() if pa.types.is_date32(v.type) else pa.int64()
            if storage != t:  # arrow-rs casts a time to a number by its ticks (days), then the number
                const = None if v.const is None else v.const.cast(storage)
                return self.cast(Val(v.expr.cast(storage), storage, const), t, node)
        v = self._round_for_cast(v, t, node)
        unsafe = pa.types.is_integer(v.type) and pa.types.is_floating(t)  # arrow-rs rounds big integers
        if v.const is not None:
            try:
                return const_val(pc.cast(v.const, t, safe=not unsafe))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError) as e:
                raise self.error(f"cannot cast {v.const.as_py()!r} to {t}: {e}", node) from None
        try:
            pa.array([], v.type).cast(t)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            raise self.error(f"cannot cast {v.type} to {t}", node) from None
        keeps_sign = pa.types.is_floating(v.type) and pa.types.is_floating(t)
        return Val(v.expr.cast(t, safe=not unsafe), t, None, v.nan_low and keeps_sign)

    def _round_for_cast(self, v: Val, t: pa.DataType, node: exp.Expr) -> Val:
        """``v`` rounded as arrow-rs (DataFusion) rounds in a cast that loses digits, where Arrow
        C++ refuses (or rounds half to even): to an integer the fraction is dropped; to a
        decimal of fewer digits, half away from zero. An overflow or NaN stays an error."""
        src = v.type
        if (pa.types.is_floating(src) or pa.types.is_decimal(src)) and pa.types.is_integer(t):
            return self.call("round", [v], node, pc.RoundOptions(0, "towards_zero"))
        lossy_decimal = pa.types.is_decimal(src) and pa.types.is_decimal(t) and t.scale < src.scale
        if lossy_decimal or (pa.types.is_floating(src) and pa.types.is_decimal(t)):
            return self.call("round", [v], node, pc.RoundOptions(t.scale, "half_towards_infinity"))
        return v

    def _text_to_decimal(self, v: Val, t: pa.DataType, node: exp.Expr) -> Val:
        """Text to a decimal as arrow-rs parses it (lancelot/sql/udfs.py: text_decimal)."""
        from lancelot.sql.udfs import text_decimal, text_to_decimal

        if t.scale < 0:
            raise self.error(f"cannot cast text to {t}: a decimal of negative scale", node)
        if v.const is None:
            return self.call(text_to_decimal(v.type, t), [v], node)
        try:
            return const_val(pa.scalar(None if not v.const.is_valid else text_decimal(v.const.as_py(), t), t))
        except ValueError as e:
            raise self.error(str(e), node) from None

    def _text_to_timestamp(self, v: Val, t: pa.DataType, node: exp.Expr) -> Val:
        """Text to a timestamp as arrow-rs parses it (lancelot/sql/udfs.py: text_to_timestamp)."""
        from lancelot.sql.udfs import text_to_timestamp

        plain = pa.types.is_string(v.type) or pa.types.is_large_string(v.type)
        text = v if plain else self.cast(v, pa.utf8(), node)
        return self.call(text_to_timestamp(text.type, t), [text], node)

    def _to_zoned(self, v: Val, t: pa.DataType, node: exp.Expr) -> Val:
        """To a zoned timestamp as arrow-rs casts: a naive time is a wall-clock time in the zone,
        a date is midnight UTC."""
        if pa.types.is_timestamp(v.type) and v.type.tz is None:
            naive = self.cast(v, pa.timestamp(t.unit), node)
            if naive.const is not None:
                local = pc.assume_timezone(pa.array([naive.const.as_py()], naive.type), timezone=t.tz)
                return const_val(local[0].cast(t))
            zoned = self.call("assume_timezone", [naive], node, pc.AssumeTimezoneOptions(t.tz))
            return self.cast(zoned, t, node)
        if pa.types.is_date(v.type):
            v = self.cast(v, pa.timestamp(t.unit), node)
        if v.type == t:
            return v
        if is_string_like(v.type) and v.const is None:
            return self._text_to_timestamp(v, t, node)
        if is_string_like(v.type) and v.const is not None and v.const.is_valid:
            try:
                return const_val(v.const.cast(t))
            except pa.ArrowInvalid:  # no offset: a wall-clock time in the zone, as arrow-rs reads it
                return self._to_zoned(self.cast(v, pa.timestamp(t.unit), node), t, node)
        v = self._round_for_cast(v, t, node)
        if v.const is not None:
            try:
                return const_val(v.const.cast(t))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as e:
                raise self.error(f"cannot cast {v.const} to {t}: {e}", node) from None
        return Val(v.expr.cast(t), t)

    def boolean_operand(self, v: Val, node: exp.Expr) -> Val:
        if pa.types.is_null(v.type):
            return self.cast(v, pa.bool_(), node)
        if not pa.types.is_boolean(v.type):
            raise self.error(f"expected a boolean, not {v.type}: {sql_text(node)}", node)
        return v

    def literal(self, node: exp.Expr) -> Val:
        return const_val(self.literal_scalar(node))

    def literal_scalar(self, node: exp.Expr) -> pa.Scalar:
        """The value of a literal node, converted to its column's type where lance does that."""
        n = unparen(node)
        if isinstance(n, exp.Null):
            s = pa.scalar(None, pa.null())
        elif isinstance(n, exp.Boolean):
            s = pa.scalar(bool(n.this), pa.bool_())
        elif isinstance(n, exp.HexString):
            digits = n.this or ""
            s = pa.scalar(bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits), pa.binary())
        elif isinstance(n, exp.Array):
            items = [self.literal_scalar(e) for e in n.expressions]
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
                # lance's planner needs the magnitude to fit first (-9223372036854775808 is a float);
                # DataFusion's, which plans a function's arguments, reads the smallest int64 whole
                fits = abs(value) < 2**63 or value == -(2**63) and n.find_ancestor(exp.Anonymous) is not None
                s = pa.scalar(value, pa.int64()) if fits else pa.scalar(float(text))
            except ValueError:
                try:
                    s = pa.scalar(float(text), pa.float64())
                except ValueError:
                    raise self.error(f"{text!r} is not a number", n) from None
        want = self.hints.get(id(n))
        if want is not None and want != s.type:  # (to its own type a literal is itself)
            c = coerce_literal(s, want)
            if c is None:
                raise self.error(f"the literal {sql_text(n)} cannot be converted to the column's type {want}", n)
            s = c
        return s

    def value(self, node: exp.Expr) -> Val:
        """The typed expression of ``node`` (remembered by node: lancelot/sql/nullability.py reads them)."""
        v = self._value(node)
        self.values[id(unparen(node))] = v
        return v

    def _value(self, node: exp.Expr) -> Val:
        node = unparen(node)
        if is_literal(node):
            return self.literal(node)
        parts = column_parts(node)
        if parts is not None:
            path, t = self.resolve_path(parts, node)
            if path not in self.columns:
                self.columns.append(path)
            return Val(pc.field(*path), t)
        if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
            from lancelot.sql.lists import element

            base, key = self.value(node.this), node.expressions[0]
            if pa.types.is_struct(base.type) and isinstance(key, exp.Literal) and key.is_string:
                return self.struct_field(base, key.name, node)  # ``list_struct[1]['x']``
            return element(self, node, base, self.value(key))
        from lancelot.sql.operators import HANDLERS

        handler = HANDLERS.get(type(node))
        if handler is not None:
            return handler(self, node)
        if isinstance(node, exp.Anonymous):
            from lancelot.sql.functions import function

            return function(self, node)
        what = type(node).__name__
        raise self.error(f"{what} ({sql_text(node)}) is not supported in lance SQL", node)

    def struct_field(self, base: Val, name: str, node: exp.Expr) -> Val:
        """Field ``name`` of the struct value ``base`` (matched exactly, as a struct column's fields)."""
        idx = base.type.get_field_index(name)
        if idx < 0:
            raise self.error(f"{base.type} has no field {name!r}", node)
        return self.call("struct_field", [base], node, pc.StructFieldOptions([idx]))

    def compare(self, fn: str, a: Val, b: Val, node: exp.Expr) -> Val:
        """``a fn b`` (fn: equal, less, ...) in the operands' common type (lancelot/sql/comparison.py)."""
        from lancelot.sql.comparison import compare

        return compare(self, fn, a, b, node)
