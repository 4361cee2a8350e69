"""SQL operators as pyarrow compute calls, with DataFusion's semantics where pyarrow's differ.

Comparisons run in the operands' common type, floats in IEEE total order (NaN equal to itself and
above every number, a negated NaN below; -0 = 0); ``x IN (..., NULL)`` is unknown when nothing
matches; integer ``+ - *`` wrap, ``/`` truncates and fails on a zero divisor, ``%`` takes the
dividend's sign; ``IS [NOT] TRUE/FALSE`` and ``IS [NOT] DISTINCT FROM`` never give NULL.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.errors import SqlError
from lancelot.sql.translate import _ARITHMETIC, _COMPARISONS, Translator, Val, _const, _unparen, is_literal, sql_text
from lancelot.sql.types import arrow_type, as_decimal, comparison_common, is_numeric, numeric_common
from lancelot.util.types import is_string_like

#: a comparison's result from the order of its operands (-1, 0, 1)
_OUTCOME: dict[str, Callable[[int], bool]] = {
    "equal": lambda o: o == 0,
    "not_equal": lambda o: o != 0,
    "greater": lambda o: o > 0,
    "greater_equal": lambda o: o >= 0,
    "less": lambda o: o < 0,
    "less_equal": lambda o: o <= 0,
}
_NULL_BOOL = pa.scalar(None, pa.bool_())
_FLIP = {
    "equal": "equal",
    "not_equal": "not_equal",
    "greater": "less",
    "greater_equal": "less_equal",
    "less": "greater",
    "less_equal": "greater_equal",
}


def compare(t: Translator, fn: str, a: Val, b: Val, node: exp.Expr) -> Val:
    """``a fn b`` (fn: equal, less, ...) in the operands' common type."""
    common = comparison_common(a.type, b.type)
    if common is None:
        raise t.error(f"cannot compare {a.type} with {b.type}", node)
    if pa.types.is_floating(common) and a.const is not None and b.const is None:
        return compare(t, _FLIP[fn], b, a, node)  # ``1 < f`` as ``f > 1``
    a, b = t.cast(a, common, node), t.cast(b, common, node)
    plain = t.call(fn, [a, b], node)
    consts = [v.const for v in (a, b) if v.const is not None and v.const.is_valid]
    if pa.types.is_floating(common) and plain.const is not None and len(consts) == 2:
        x, y = (_total_key(c.as_py()) for c in consts)
        return _const(pa.scalar(_OUTCOME[fn]((x > y) - (x < y))))
    if not pa.types.is_floating(common) or plain.const is not None:
        return plain
    return _nan_order(t, fn, a, b, plain, node)


def _total_key(x: float) -> tuple[int, float]:
    """``x``'s place in IEEE total order (NaN by its sign bit; -0 and 0 equal, as between literals)."""
    if math.isnan(x):
        return (-1 if math.copysign(1.0, x) < 0 else 1, 0.0)
    return (0, x)


def _is_field(e: pc.Expression) -> bool:
    return "(" not in str(e)  # a column reference prints as its name


def _nan_order(t: Translator, fn: str, a: Val, b: Val, plain: Val, node: exp.Expr) -> Val:
    """DataFusion compares floats in IEEE total order: NaN equal to itself, above every number, but
    a NaN with its sign bit set (as negation, or an operation making a NaN, makes one) below every
    number; -0 below 0 between two columns, -0 = 0 against a literal."""
    from lancelot.sql.udfs import sign_bit

    if b.const is not None and not b.const.is_valid:
        return plain  # against NULL: unknown, NaN or not
    test = _OUTCOME[fn]
    isnan_a = pc.is_nan(a.expr)
    # a NaN's place: above every number unless its sign bit is set
    high_a = pc.invert(pc.Expression._call(sign_bit(a.type), [a.expr]))
    above, below = pc.scalar(test(1)), pc.scalar(test(-1))
    a_only = pc.if_else(high_a, above, below)  # a NaN ``a`` against a number
    if b.const is not None and not math.isnan(b.const.as_py()):
        if _is_field(a.expr):  # a stored NaN is above every number: the form zone maps prune by
            only = test(-1 if a.nan_low else 1)
            return Val(pc.or_kleene(plain.expr, isnan_a), pa.bool_()) if only and fn != "not_equal" else plain
        return Val(pc.if_else(isnan_a, a_only, plain.expr), pa.bool_())
    isnan_b = pc.is_nan(b.expr)
    high_b = pc.invert(pc.Expression._call(sign_bit(b.type), [b.expr]))
    b_only = pc.if_else(high_b, below, above)
    both = pc.Expression._call(fn, [high_a, high_b])
    nan = pc.if_else(isnan_a, pc.if_else(isnan_b, both, a_only), b_only)
    either = pc.or_kleene(isnan_a, isnan_b)
    # two zeros of a column against a column compare by sign too (-0 below 0); only with a literal is -0 = 0
    zero = pc.scalar(pa.scalar(0, a.type))
    both_zero = pc.and_kleene(pc.equal(a.expr, zero), pc.equal(b.expr, zero))
    one = pc.scalar(pa.scalar(1, a.type))
    positive_a, positive_b = (pc.greater(pc.divide(one, x.expr), zero) for x in (a, b))
    signed = pc.if_else(both_zero, pc.Expression._call(fn, [positive_a, positive_b]), plain.expr)
    out = pc.if_else(either, nan, signed)
    valid = pc.Expression._call("and", [pc.is_valid(a.expr), pc.is_valid(b.expr)])  # NULL against NaN: unknown
    return Val(pc.if_else(valid, out, pc.scalar(pa.scalar(None, pa.bool_()))), pa.bool_())


def arithmetic(t: Translator, fn: str, a: Val, b: Val, node: exp.Expr) -> Val:
    """``a fn b`` (fn: add, subtract, multiply, divide, mod) in the operands' common number type."""
    if fn == "subtract" and _temporal_kind(a.type) and _temporal_kind(a.type) == _temporal_kind(b.type):
        return _time_difference(t, a, b, node)
    if fn in ("add", "subtract") and pa.types.is_duration(b.type) or fn == "add" and pa.types.is_duration(a.type):
        from lancelot.sql.temporal import shift

        return shift(t, fn, b, a, node) if pa.types.is_duration(a.type) else shift(t, fn, a, b, node)
    common = numeric_common(a.type, b.type)
    if pa.types.is_null(a.type) or pa.types.is_null(b.type):
        common = b.type if pa.types.is_null(a.type) else a.type
    if common is None or not (is_numeric(common) or pa.types.is_null(common)):
        symbols: dict[type[exp.Expr], str] = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}
        symbol = symbols.get(type(node), node.key)
        raise t.error(f"cannot apply {symbol} to {a.type} and {b.type}", node)
    if pa.types.is_decimal(common):
        both_int = pa.types.is_integer(a.type) and pa.types.is_integer(b.type)  # uint64 with a signed integer
        da = a if pa.types.is_decimal(a.type) else t.cast(a, common if both_int else as_decimal(a.type), node)
        db = b if pa.types.is_decimal(b.type) else t.cast(b, common if both_int else as_decimal(b.type), node)
        if fn == "mod":
            return _decimal_mod(t, da, db, node)
        try:
            out = t.call(fn, [da, db], node)
        except SqlError:  # a result wider than decimal128: computed wide, then capped at 38 digits
            wide = [t.cast(v, pa.decimal256(v.type.precision, v.type.scale), node) for v in (da, db)]
            out = t.call(fn, wide, node)
        if pa.types.is_decimal256(out.type) and not pa.types.is_decimal256(common):  # DataFusion caps at 38
            capped = pa.decimal128(38, out.type.scale)
            out = Val(out.expr.cast(capped, safe=False), capped) if out.const is None else t.cast(out, capped, node)
        if fn == "divide" and out.const is None:  # DataFusion: 4 more digits of scale than the dividend's
            p1, s1, s2 = da.type.precision, da.type.scale, db.type.scale
            want = pa.decimal128(min(38, p1 + s2 + 4), s1 + 4)
            if want != out.type:
                return Val(out.expr.cast(want, safe=False), want)
        return out
    a, b = t.cast(a, common, node), t.cast(b, common, node)
    if fn != "mod":
        out = t.call(fn, [a, b], node)
        if (a.nan_low or b.nan_low) and out.const is None:  # a NaN operand passes on with its sign
            return Val(out.expr, out.type, None, True)
        return out
    if pa.types.is_floating(common):  # C's fmod: exact, with the dividend's sign (-0.0 % 2 is -0.0)
        from lancelot.sql.udfs import fmod

        return t.call(fmod(common), [a, b], node)
    quotient = t.call("divide", [a, b], node)
    return t.call("subtract", [a, t.call("multiply", [quotient, b], node)], node)


def _decimal_mod(t: Translator, a: Val, b: Val, node: exp.Expr) -> Val:
    """DataFusion's decimal remainder: the larger scale, the smaller count of whole digits."""
    from lancelot.sql.udfs import decimal_mod

    (p1, s1), (p2, s2) = (a.type.precision, a.type.scale), (b.type.precision, b.type.scale)
    scale = max(s1, s2)
    out = pa.decimal128(min(38, min(p1 - s1, p2 - s2) + scale), scale)
    return t.call(decimal_mod(a.type, b.type, out), [a, b], node)


def _temporal_kind(t: pa.DataType) -> str:
    return "date" if pa.types.is_date(t) else "timestamp" if pa.types.is_timestamp(t) else ""


def _time_difference(t: Translator, a: Val, b: Val, node: exp.Expr) -> Val:
    """DataFusion: date - date is a number of days (int64), timestamp - timestamp a duration."""
    if pa.types.is_date(a.type):
        days = [t.cast(t.cast(v, pa.date32(), node), pa.int32(), node) for v in (a, b)]
        return t.call("subtract", [t.cast(d, pa.int64(), node) for d in days], node)
    common = comparison_common(a.type, b.type)
    if common is None:
        raise t.error(f"cannot subtract {b.type} from {a.type}", node)
    return t.call("subtract", [t.cast(a, common, node), t.cast(b, common, node)], node)


def in_list(t: Translator, node: exp.In) -> Val:
    """``x IN (a, b, ...)``: one set lookup when the list holds only literals (unknown when nothing
    matches and the list holds NULL; -0 and 0 are one number), else ``x = a OR x = b ...``."""
    if not node.expressions:
        raise t.error("IN needs at least one value", node)
    x = t.value(node.this)
    if x.const is None and all(is_literal(e) and not isinstance(_unparen(e), exp.Array) for e in node.expressions):
        return _in_set(t, node, x, [t.literal_scalar(e) for e in node.expressions])
    items = [t.value(e) for e in node.expressions]
    out: Val | None = None
    for i in items:
        eq = compare(t, "equal", x, i, node)
        out = eq if out is None else t.call("or_kleene", [out, eq], node)
    assert out is not None
    return out


def _in_set(t: Translator, node: exp.Expr, x: Val, scalars: list[pa.Scalar]) -> Val:
    common = x.type
    for item_type in {s.type for s in scalars}:
        c = comparison_common(common, item_type)
        if c is None:
            raise t.error(f"cannot compare {x.type} with {item_type} in IN", node)
        common = c
    x = t.cast(x, common, node)
    values, has_null = [], False
    for s in scalars:
        if not s.is_valid:
            has_null = True
            continue
        try:
            unsafe = pa.types.is_integer(s.type) and pa.types.is_floating(common)  # big integers round
            values.append(pc.cast(s, common, safe=not unsafe).as_py() if s.type != common else s.as_py())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError) as e:
            raise t.error(f"cannot cast {s.as_py()!r} to {common}: {e}", node) from None
    value_set = pa.array(values, common)
    probe = x.expr
    if pa.types.is_floating(common):  # DataFusion: -0 = 0 (adding +0 makes every zero +0)
        zero = pc.scalar(pa.scalar(0.0, common))
        probe = pc.add(probe, zero)
        value_set = pc.add(value_set, pa.scalar(0.0, common))
    found = pc.is_in(probe, value_set=value_set, skip_nulls=True)
    if has_null:  # no match is unknown
        return Val(pc.or_kleene(found, pc.scalar(_NULL_BOOL)), pa.bool_())
    return Val(pc.if_else(pc.is_valid(x.expr), found, pc.scalar(_NULL_BOOL)), pa.bool_())


def like(t: Translator, node: exp.Expr, ignore_case: bool, escape: exp.Expr | None = None) -> Val:
    if escape is not None and not (isinstance(escape, exp.Literal) and escape.this == "\\"):
        raise t.error("LIKE does not support an escape character other than the backslash (\\)", escape)
    x = t.value(node.this)
    pattern = t.value(node.expression)
    if pattern.const is None or not is_string_like(pattern.type):
        raise t.error("the pattern of LIKE must be a string literal", node.expression)
    if pa.types.is_dictionary(x.type):
        x = t.cast(x, x.type.value_type, node)
    if not is_string_like(x.type) and not pa.types.is_null(x.type):
        raise t.error(f"LIKE applies to strings, not {x.type}", node)
    p = pattern.const.as_py()
    if p is None:
        return _const(_NULL_BOOL)
    out = t.call("match_like", [x], node, pc.MatchSubstringOptions(p, ignore_case=ignore_case))
    if node.args.get("negate"):
        out = t.call("invert", [out], node)
    return out


def _compare(t: Translator, node: exp.Expr) -> Val:
    return compare(t, _COMPARISONS[type(node)], t.value(node.this), t.value(node.expression), node)


def _arith(t: Translator, node: exp.Expr) -> Val:
    return arithmetic(t, _ARITHMETIC[type(node)], t.value(node.this), t.value(node.expression), node)


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
        raise t.error(f"IS {sql_text(what)} is not supported", node)
    x = t.boolean_operand(x, node.this)
    truth = bool(what.this)
    # IS TRUE: true only for true; IS NOT TRUE: everything else (null included)
    hit = x if truth else t.call("invert", [x], node)
    if negated:
        return t.call("invert", [t.call("coalesce", [hit, _const(pa.scalar(False))], node)], node)
    return t.call("coalesce", [hit, _const(pa.scalar(False))], node)


def _distinct(t: Translator, node: exp.Expr) -> Val:
    a, b = t.value(node.this), t.value(node.expression)
    ne = compare(t, "not_equal", a, b, node)
    one_null = t.call("xor", [t.call("is_null", [a], node), t.call("is_null", [b], node)], node)
    out = t.call("coalesce", [ne, one_null], node) if ne.const is None or not ne.const.is_valid else ne
    if isinstance(node, exp.NullSafeEQ):
        out = t.call("invert", [out], node)
    return out


def _between(t: Translator, node: exp.Expr) -> Val:
    x, lo, hi = t.value(node.this), t.value(node.args["low"]), t.value(node.args["high"])
    ge = compare(t, "greater_equal", x, lo, node)
    le = compare(t, "less_equal", x, hi, node)
    return t.call("and_kleene", [ge, le], node)


def _neg(t: Translator, node: exp.Expr) -> Val:
    x = t.value(node.this)
    if not is_numeric(x.type) or pa.types.is_unsigned_integer(x.type):  # DataFusion: no unsigned negation
        raise t.error(f"cannot negate {x.type}", node)
    out = t.call("negate", [x], node)
    if pa.types.is_floating(x.type) and out.const is None:
        return Val(out.expr, out.type, None, not x.nan_low)
    return out


def _cast_type(t: Translator, node: exp.Expr) -> pa.DataType:
    dt = node.args["to"]
    to = arrow_type(dt)
    # lance's own planner knows no VARCHAR; DataFusion's, which plans function arguments, does
    in_function = node.find_ancestor(exp.Anonymous) is not None
    if to is None or (dt.this in (exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR) and not in_function):
        raise t.error(f"unsupported type {sql_text(dt)} in CAST", node)
    if in_function and pa.types.is_timestamp(to):  # DataFusion's TIMESTAMP is in nanoseconds
        return pa.timestamp("ns", to.tz)
    return to


def _try_cast(t: Translator, node: exp.Expr) -> Val:
    """TRY_CAST: the cast, null where a value does not convert."""
    from lancelot.sql.udfs import try_cast

    to = _cast_type(t, node)
    x = t.value(node.this)
    # a pair of types with no cast is refused, as DataFusion's planner refuses it (text is parsed)
    plan = _cast_value(t, Val(pc.field("x"), x.type), to, node).expr
    if x.const is not None:
        try:
            return _cast_value(t, x, to, node)
        except SqlError:
            return _const(pa.scalar(None, to))

    def convert(arr: pa.Array) -> pa.Array:
        import pyarrow.dataset as pds

        table = pds.dataset(pa.table({"x": arr})).to_table(columns={"v": plan})
        return table.column("v").combine_chunks()

    return t.call(try_cast(x.type, to, convert), [x], node)


def _cast(t: Translator, node: exp.Expr) -> Val:
    return _cast_value(t, t.value(node.this), _cast_type(t, node), node)


def _cast_value(t: Translator, x: Val, to: pa.DataType, node: exp.Expr) -> Val:
    if x.const is not None and is_string_like(x.type) and (pa.types.is_timestamp(to) or pa.types.is_date(to)):
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
    large = pa.types.is_large_string(a.type) or pa.types.is_large_string(b.type)
    to = pa.large_utf8() if large else pa.utf8()  # DataFusion keeps a large_string operand's type
    view = pa.types.is_string_view(a.type) or pa.types.is_string_view(b.type)  # or a view's
    a, b = t.cast(a, to, node), t.cast(b, to, node)
    out = t.call("binary_join_element_wise", [a, b, _const(pa.scalar("", to))], node)
    return t.cast(out, pa.string_view(), node) if view else out


def _in(t: Translator, node: exp.Expr) -> Val:
    assert isinstance(node, exp.In)
    if node.args.get("query") is not None or node.args.get("unnest") is not None:
        raise t.error("IN takes a list of values", node)
    return in_list(t, node)


def _like(t: Translator, node: exp.Expr) -> Val:
    return like(t, node, isinstance(node, exp.ILike))


def _escape(t: Translator, node: exp.Expr) -> Val:
    inner = node.this
    if not isinstance(inner, exp.Like | exp.ILike):
        raise t.error("ESCAPE applies to LIKE", node)
    return like(t, inner, isinstance(inner, exp.ILike), node.expression)


def _condition(t: Translator, v: Val, node: exp.Expr) -> Val:
    """A WHEN condition as a boolean: numbers are true when not zero (DataFusion casts them)."""
    if pa.types.is_boolean(v.type):
        return v
    return t.cast(v, pa.bool_(), node)


def _common(t: Translator, vals: list[Val], node: exp.Expr) -> pa.DataType | None:
    """The branches' common type: text when any branch is text (a number reads as its digits)."""
    types = [v.type for v in vals if not pa.types.is_null(v.type)]
    if not types:
        return None
    if any(is_string_like(x) for x in types) and not all(is_string_like(x) for x in types):
        return pa.large_utf8() if any(pa.types.is_large_string(x) for x in types) else pa.utf8()
    common = types[0]
    for x in types[1:]:
        c = comparison_common(common, x)
        if c is None:
            raise t.error(f"the branches of CASE have no common type ({common} and {x})", node)
        common = c
    return common


def _case(t: Translator, node: exp.Expr) -> Val:
    """CASE (only inside a function's arguments): the value of the first WHEN that is true (a null
    is not), else ELSE or null; the branches in one type."""
    _in_function(t, node)
    operand = node.this
    subject = t.value(operand) if operand is not None else None
    conds: list[Val] = []
    vals: list[Val] = []
    for branch in node.args.get("ifs") or []:
        when = t.value(branch.this)
        if subject is not None:
            when = t.compare("equal", subject, when, branch)
        conds.append(_condition(t, when, branch.this))
        vals.append(t.value(branch.args["true"]))
    default = node.args.get("default")
    if default is not None:
        vals.append(t.value(default))
    common = _common(t, vals, node)
    if common is None:
        return _const(pa.scalar(None))
    vals = [t.cast(v, common, node) for v in vals]
    names = [f"c{i}" for i in range(len(conds))]
    struct = t.call("make_struct", conds, node, pc.MakeStructOptions(names))
    return t.call("case_when", [struct, *vals], node)


def _in_function(t: Translator, node: exp.Expr) -> None:
    """SUBSTRING / TRIM / EXTRACT / CASE: lance's planner hands them to DataFusion only inside a
    function's arguments."""
    if node.find_ancestor(exp.Anonymous) is None:
        raise t.error(f"{type(node).__name__} ({sql_text(node)}) is not supported in lance SQL", node)


def _special_call(t: Translator, node: exp.Expr, name: str, args: list[Val]) -> Val:
    """``name(args)`` as the function call the special syntax stands for."""
    from lancelot.sql.functions import _NULL_RESULT, FUNCTIONS, _NullArgument
    from lancelot.sql.string_functions import STRING_FUNCTIONS
    from lancelot.sql.temporal import TEMPORAL_FUNCTIONS

    fn = {**FUNCTIONS, **STRING_FUNCTIONS, **TEMPORAL_FUNCTIONS}[name]
    try:
        return fn(t, node, args)
    except _NullArgument:
        return _const(pa.scalar(None, _NULL_RESULT.get(name, pa.utf8())))


def _substring(t: Translator, node: exp.Expr) -> Val:
    _in_function(t, node)
    parts = [node.this, node.args["start"], node.args.get("length")]
    return _special_call(t, node, "substr", [t.value(p) for p in parts if p is not None])


def _trim(t: Translator, node: exp.Expr) -> Val:
    _in_function(t, node)
    name = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(str(node.args.get("position") or "").upper(), "btrim")
    parts = [node.this, node.args.get("expression")]
    return _special_call(t, node, name, [t.value(p) for p in parts if p is not None])


def _extract(t: Translator, node: exp.Expr) -> Val:
    _in_function(t, node)
    part = _const(pa.scalar(node.this.name.lower()))
    return _special_call(t, node, "date_part", [part, t.value(node.expression)])


def _rounding(kernel: str) -> Callable[[Translator, exp.Expr], Val]:
    """CEIL / FLOOR (only inside a function's arguments): a float keeps its type, a decimal too,
    an integer becomes a double."""

    def fn(t: Translator, node: exp.Expr) -> Val:
        _in_function(t, node)
        x = t.value(node.this)
        if (
            pa.types.is_null(x.type)
            or is_numeric(x.type)
            and not (pa.types.is_floating(x.type) or pa.types.is_decimal(x.type))
        ):
            x = t.cast(x, pa.float64(), node)
        if not is_numeric(x.type):
            raise t.error(f"{kernel} does not apply to {x.type}", node)
        d = x.type
        if pa.types.is_decimal(d) and d.precision < 38:  # Arrow wraps on overflow: round wider, fit back
            wide = t.call(kernel, [t.cast(x, pa.decimal128(d.precision + 1, d.scale), node)], node)
            return Val(wide.expr.cast(d), d)
        return t.call(kernel, [x], node)

    return fn


def _interval(t: Translator, node: exp.Expr) -> Val:
    from lancelot.sql.temporal import interval

    return interval(t, node)


HANDLERS: dict[type[exp.Expr], Callable[[Translator, exp.Expr], Val]] = {
    **dict.fromkeys(_COMPARISONS, _compare),
    **dict.fromkeys(_ARITHMETIC, _arith),
    exp.And: _logical,
    exp.Or: _logical,
    exp.Not: _not,
    exp.Is: _is,
    exp.NullSafeEQ: _distinct,
    exp.NullSafeNEQ: _distinct,
    exp.Between: _between,
    exp.Neg: _neg,
    exp.Cast: _cast,
    exp.TryCast: _try_cast,
    exp.DPipe: _dpipe,
    exp.In: _in,
    exp.Like: _like,
    exp.ILike: _like,
    exp.Escape: _escape,
    exp.Case: _case,
    exp.Substring: _substring,
    exp.Trim: _trim,
    exp.Extract: _extract,
    exp.Ceil: _rounding("ceil"),
    exp.Interval: lambda t, node: _interval(t, node),
    exp.Floor: _rounding("floor"),
}
