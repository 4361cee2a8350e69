"""SQL functions of pylance's filters (DataFusion's names) as pyarrow compute calls.

Each entry takes the translator, the call node and its translated arguments.  Options that pyarrow
takes as constants (patterns, flags) must be literals, as they are in practice.  ``array_has``
has no pyarrow kernel: it is a scalar UDF registered with pyarrow per element type, on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.types import comparison_common, is_list, is_numeric, is_string

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator, Val


def _literal_str(t: Translator, v: Val, node: exp.Expr, what: str) -> str:
    if v.const is None or not is_string(v.type) or not v.const.is_valid:
        raise t.error(f"the {what} must be a string literal", node)
    s: str = v.const.as_py()
    return s


def _string(t: Translator, v: Val, node: exp.Expr) -> Val:
    if pa.types.is_dictionary(v.type):
        v = t.cast(v, v.type.value_type, node)
    if pa.types.is_null(v.type):
        v = t.cast(v, pa.utf8(), node)
    if not is_string(v.type):
        raise t.error(f"expected a string, not {v.type}", node)
    return v


def _regex(t: Translator, node: exp.Expr, args: list[Val], boolean: bool) -> Val:
    if len(args) not in (2, 3):
        raise t.error(f"{node.name} takes 2 or 3 arguments", node)
    s = _string(t, args[0], node)
    pattern = _literal_str(t, args[1], node, "pattern")
    flags = _literal_str(t, args[2], node, "flags") if len(args) == 3 else ""
    if set(flags) - {"i"}:
        raise t.error(f"unsupported regular expression flags {flags!r} (only 'i')", node)
    out = t.call("match_substring_regex", [s], node, pc.MatchSubstringOptions(pattern, ignore_case="i" in flags))
    if boolean:  # regexp_match(...) IS NOT NULL: a null string does not match
        from lancelot.sql.translate import _const

        out = t.call("coalesce", [out, _const(pa.scalar(False))], node)
    return out


def _pattern_fn(kernel: str) -> Callable[[Translator, exp.Expr, list[Val]], Val]:
    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        _arity(t, node, args, 2)
        s = _string(t, args[0], node)
        return t.call(kernel, [s], node, pc.MatchSubstringOptions(_literal_str(t, args[1], node, "pattern")))

    return fn


def _unary(
    kernel: str, accepts: Callable[[pa.DataType], bool] | None = None, to: pa.DataType | None = None
) -> Callable[[Translator, exp.Expr, list[Val]], Val]:
    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        _arity(t, node, args, 1)
        x = args[0]
        if accepts is is_string:
            x = _string(t, x, node)
        elif accepts is not None and not accepts(x.type):
            raise t.error(f"{node.name} does not apply to {x.type}", node)
        if to is not None and x.type != to and pa.types.is_integer(x.type):
            x = t.cast(x, to, node)
        return t.call(kernel, [x], node)

    return fn


def _arity(t: Translator, node: exp.Expr, args: list[Val], n: int) -> None:
    if len(args) != n:
        raise t.error(f"{node.name} takes {n} argument{'s' if n > 1 else ''}, not {len(args)}", node)


def _array_has(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    _arity(t, node, args, 2)
    lists, value = args
    if not is_list(lists.type):
        raise t.error(f"{node.name} needs a list, not {lists.type}", node)
    item = lists.type.value_type
    common = comparison_common(item, value.type)
    if common is None:
        raise t.error(f"cannot look for {value.type} in {lists.type}", node)
    value = t.cast(value, item, node) if common == item or value.const is not None else value
    name = _register_array_has(lists.type, value.type)
    return t.call(name, [lists, value], node)


_REGISTERED: dict[tuple[str, str], str] = {}


def _register_array_has(list_type: pa.DataType, value_type: pa.DataType) -> str:
    """A pyarrow UDF ``array_has(list, value)`` for these types: true when an element equals the
    value, null for a null list or value (as DataFusion's array_has)."""
    key = (str(list_type), str(value_type))
    if key in _REGISTERED:
        return _REGISTERED[key]
    name = f"lancelot_array_has_{len(_REGISTERED)}_{abs(hash(key)) % 10**8}"

    def impl(ctx: pc.UdfContext, lists: pa.Array | pa.Scalar, value: pa.Array | pa.Scalar) -> pa.Array:
        n = len(lists) if isinstance(lists, pa.Array) else ctx.batch_length
        if isinstance(lists, pa.Scalar):
            lists = pa.array([lists.as_py()] * n, list_type)
        flat = pc.list_flatten(lists)
        parents = pc.list_parent_indices(lists).to_numpy()
        if isinstance(value, pa.Scalar):
            hits = pc.fill_null(pc.equal(flat, value), False).to_numpy(zero_copy_only=False)
            valid_value = np.full(n, value.is_valid)
        else:
            per = pc.take(value, pa.array(parents))
            hits = pc.fill_null(pc.equal(flat, per), False).to_numpy(zero_copy_only=False)
            valid_value = value.is_valid().to_numpy(zero_copy_only=False)
        out = np.zeros(n, dtype=bool)
        out[parents[hits]] = True
        mask = ~(lists.is_valid().to_numpy(zero_copy_only=False) & valid_value)
        return pa.array(out, pa.bool_(), mask=mask)

    pc.register_scalar_function(
        impl,
        name,
        {"summary": "array_has", "description": "true where the list holds the value"},
        {"lists": list_type, "value": value_type},
        pa.bool_(),
    )
    _REGISTERED[key] = name
    return name


def _list_length(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    _arity(t, node, args, 1)
    if not is_list(args[0].type):
        raise t.error(f"{node.name} needs a list, not {args[0].type}", node)
    return t.cast(t.call("list_value_length", args, node), pa.uint64(), node)


def _is_valid(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    _arity(t, node, args, 1)
    return t.call("is_valid", args, node)


def _isnan(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    _arity(t, node, args, 1)
    x = args[0]
    if pa.types.is_integer(x.type):
        x = t.cast(x, pa.float64(), node)
    return t.call("is_nan", [x], node)


def _coalesce(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    if not args:
        raise t.error("coalesce needs arguments", node)
    common = args[0].type
    for a in args[1:]:
        c = comparison_common(common, a.type)
        if c is None:
            raise t.error(f"coalesce of {common} and {a.type}", node)
        common = c
    return t.call("coalesce", [t.cast(a, common, node) for a in args], node)


def _concat(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    from lancelot.sql.translate import _const

    strings = [t.cast(a, pa.utf8(), node) for a in args]
    opts = pc.JoinOptions(null_handling="replace", null_replacement="")
    return t.call("binary_join_element_wise", [*strings, _const(pa.scalar(""))], node, opts)


def _replace(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    _arity(t, node, args, 3)
    s = _string(t, args[0], node)
    old = _literal_str(t, args[1], node, "search string")
    new = _literal_str(t, args[2], node, "replacement")
    return t.call("replace_substring", [s], node, pc.ReplaceSubstringOptions(old, new))


def _abs(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    _arity(t, node, args, 1)
    if not is_numeric(args[0].type):
        raise t.error(f"abs does not apply to {args[0].type}", node)
    return t.call("abs", args, node)


def _float_fn(kernel: str) -> Callable[[Translator, exp.Expr, list[Val]], Val]:
    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        _arity(t, node, args, 1)
        if not is_numeric(args[0].type):
            raise t.error(f"{node.name} does not apply to {args[0].type}", node)
        x = args[0] if pa.types.is_floating(args[0].type) else t.cast(args[0], pa.float64(), node)
        return t.call(kernel, [x], node)

    return fn


def _round(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    if len(args) not in (1, 2):
        raise t.error("round takes 1 or 2 arguments", node)
    x = args[0] if pa.types.is_floating(args[0].type) else t.cast(args[0], pa.float64(), node)
    digits = 0
    if len(args) == 2:
        if args[1].const is None or not pa.types.is_integer(args[1].type):
            raise t.error("the digits of round must be an integer literal", node)
        digits = args[1].const.as_py()
    return t.call("round", [x], node, pc.RoundOptions(digits, round_mode="half_towards_infinity"))


def _power(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    _arity(t, node, args, 2)
    a, b = args
    if pa.types.is_integer(a.type) and pa.types.is_integer(b.type):
        return t.call("power", [t.cast(a, pa.int64(), node), t.cast(b, pa.int64(), node)], node)
    return t.call("power", [t.cast(a, pa.float64(), node), t.cast(b, pa.float64(), node)], node)


FUNCTIONS: dict[str, Callable[[Translator, exp.Expr, list[Val]], Val]] = {
    "lower": _unary("utf8_lower", is_string),
    "upper": _unary("utf8_upper", is_string),
    "length": _unary("utf8_length", is_string),
    "char_length": _unary("utf8_length", is_string),
    "character_length": _unary("utf8_length", is_string),
    "octet_length": _unary("binary_length", is_string),
    "reverse": _unary("utf8_reverse", is_string),
    "starts_with": _pattern_fn("starts_with"),
    "ends_with": _pattern_fn("ends_with"),
    "contains": _pattern_fn("match_substring"),
    "regexp_like": lambda t, node, args: _regex(t, node, args, False),
    "array_has": _array_has,
    "array_contains": _array_has,
    "list_has": _array_has,
    "list_contains": _array_has,
    "array_length": _list_length,
    "cardinality": _list_length,
    "is_valid": _is_valid,
    "isnan": _isnan,
    "coalesce": _coalesce,
    "concat": _concat,
    "replace": _replace,
    "abs": _abs,
    "sqrt": _float_fn("sqrt"),
    "round": _round,
    "power": _power,
    "pow": _power,
}


def function(t: Translator, node: exp.Anonymous) -> Val:
    """A call of a named function (sqlglot's ``Anonymous`` node: our dialect keeps every call so)."""
    name = node.name.lower()
    args = [t.value(a) for a in node.expressions]
    if name == "regexp_match":
        if id(node) not in t.boolean:
            raise t.error("regexp_match returns a list of matches: use regexp_like for a condition", node)
        return _regex(t, node, args, True)
    fn = FUNCTIONS.get(name)
    if fn is None:
        known = ", ".join(sorted({*FUNCTIONS, "regexp_match"}))
        raise t.error(f"unknown function {node.name!r} (functions: {known})", node)
    return fn(t, node, args)
