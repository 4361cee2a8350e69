"""SQL functions of pylance's filters (DataFusion's names) as pyarrow compute calls.

Each entry takes the translator, the call node and its translated arguments.  Options that pyarrow
takes as constants (patterns, flags) must be literals, as they are in practice.  ``array_has``
has no pyarrow kernel: it is a scalar UDF registered with pyarrow per element type, on first use.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.arguments import (
    NullArgument,
    arity,
    as_common,
    as_text,
    literal_int,
    literal_str,
    string_arg,
    string_operand,
)
from lancelot.sql.conditionals import lazy_coalesce, total_equal
from lancelot.sql.lists import LIST_FUNCTIONS, element
from lancelot.sql.numeric import NUMERIC_FUNCTIONS
from lancelot.sql.string_functions import STRING_FUNCTIONS
from lancelot.sql.structs import STRUCT_FUNCTIONS
from lancelot.sql.temporal import TEMPORAL_FUNCTIONS
from lancelot.sql.types import comparison_common, is_int, is_numeric
from lancelot.sql.values import Val, const_val
from lancelot.util.types import is_string_like

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator


def _unary_text(kernel: str) -> Callable[[Translator, exp.Expr, list[Val]], Val]:
    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        arity(t, node, args, 1)
        return t.call(kernel, [as_text(t, args[0], node)], node)

    return fn


def _regex(t: Translator, node: exp.Expr, args: list[Val], boolean: bool) -> Val:
    if len(args) not in (2, 3):
        raise t.error(f"{node.name} takes 2 or 3 arguments", node)
    s = string_operand(t, args[0], node)
    if boolean and args[1].const is not None and not args[1].const.is_valid:
        return const_val(pa.scalar(False))
    pattern = literal_str(t, args[1], node, "pattern")
    flags = literal_str(t, args[2], node, "flags") if len(args) == 3 else ""
    if set(flags) - {"i"}:
        raise t.error(f"unsupported regular expression flags {flags!r} (only 'i')", node)
    out = t.call("match_substring_regex", [s], node, pc.MatchSubstringOptions(pattern, ignore_case="i" in flags))
    if boolean:  # regexp_match(...) IS NOT NULL: a null string does not match
        out = t.call("coalesce", [out, const_val(pa.scalar(False))], node)
    return out


def _pattern_fn(kernel: str) -> Callable[[Translator, exp.Expr, list[Val]], Val]:
    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        s = string_arg(t, node, args, 2)
        return t.call(kernel, [s], node, pc.MatchSubstringOptions(literal_str(t, args[1], node, "pattern")))

    return fn


def _unary(
    kernel: str, accepts: Callable[[pa.DataType], bool] | None = None, to: pa.DataType | None = None
) -> Callable[[Translator, exp.Expr, list[Val]], Val]:
    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        arity(t, node, args, 1)
        x = args[0]
        if accepts is is_string_like:
            x = string_operand(t, x, node)
        elif accepts is not None and not accepts(x.type):
            raise t.error(f"{node.name} does not apply to {x.type}", node)
        if to is not None and x.type != to and pa.types.is_integer(x.type):
            x = t.cast(x, to, node)
        return t.call(kernel, [x], node)

    return fn


def _is_valid(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 1)
    return t.call("is_valid", args, node)


def _isnan(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 1)
    x = args[0]
    if pa.types.is_integer(x.type):
        x = t.cast(x, pa.float64(), node)
    return t.call("is_nan", [x], node)


def _coalesce(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    vals = as_common(t, node, args, "coalesce")
    # DataFusion's simplifier: null literals dropped, nothing after a literal (which alone is the answer)
    vals = [v for v in vals if v.const is None or v.const.is_valid] or vals[:1]
    known = next((k for k, v in enumerate(vals) if v.const is not None), len(vals))
    vals = vals[: known + 1]
    if len(vals) == 1:
        return as_view_with_views(t, node, args, vals[0])
    if pa.types.is_string_view(vals[0].type):  # Arrow's coalesce takes no views: as strings, a view after
        vals = [t.cast(v, pa.utf8(), node) for v in vals]
    out = lazy_coalesce(t, node, vals) or t.call("coalesce", vals, node)
    return as_view_with_views(t, node, args, out)


def as_view_with_views(t: Translator, node: exp.Expr, args: list[Val], out: Val) -> Val:
    """DataFusion's text meets a string_view as a view: ``out`` (computed in Arrow C++'s plain
    string types, which its kernels take) cast back to a view when an argument is one."""
    if is_string_like(out.type) and any(pa.types.is_string_view(a.type) for a in args):
        return t.cast(out, pa.string_view(), node)
    return out


def _concat(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    strings = [t.cast(a, pa.utf8(), node) for a in args]
    opts = pc.JoinOptions(null_handling="replace", null_replacement="")
    out = t.call("binary_join_element_wise", [*strings, const_val(pa.scalar(""))], node, opts)
    # DataFusion's type: a string with any non-text argument; else a view with a view; else the
    # arguments' own when all are of one string type, a view when several (NULL counts as one)
    types = {a.type for a in args}
    if all(is_string_like(x) or pa.types.is_null(x) for x in types):
        if any(pa.types.is_string_view(x) for x in types):
            return t.cast(out, pa.string_view(), node)
        one = next(iter(types)) if len(types) == 1 else pa.null()
        return t.cast(out, one if is_string_like(one) else pa.string_view(), node)
    return out


def _replace(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    s = string_arg(t, node, args, 3)
    old = literal_str(t, args[1], node, "search string")
    new = literal_str(t, args[2], node, "replacement")
    if old == "":  # Rust's str::replace puts ``new`` around every character, as an empty regex does
        if new == "":
            return s
        opts = pc.ReplaceSubstringOptions("", new.replace("\\", "\\\\"))
        return t.call("replace_substring_regex", [s], node, opts)
    return t.call("replace_substring", [s], node, pc.ReplaceSubstringOptions(old, new))


def _abs(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 1)
    if not is_numeric(args[0].type):
        raise t.error(f"abs does not apply to {args[0].type}", node)
    # arrow-rs fails on the smallest integer (no positive counterpart), as Arrow's checked kernel
    return t.call("abs_checked" if is_int(args[0].type) else "abs", args, node)


def _float_fn(kernel: str) -> Callable[[Translator, exp.Expr, list[Val]], Val]:
    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        arity(t, node, args, 1)
        if not is_numeric(args[0].type):
            raise t.error(f"{node.name} does not apply to {args[0].type}", node)
        x = args[0] if pa.types.is_floating(args[0].type) else t.cast(args[0], pa.float64(), node)
        out = t.call(kernel, [x], node)
        if kernel == "sqrt":  # Rust's sqrt of a negative is a NaN with its sign bit set
            negative = t.call("less", [x, const_val(pa.scalar(0.0, x.type))], node)
            out = t.call("if_else", [negative, const_val(pa.scalar(-math.nan, x.type)), out], node)
        return out

    return fn


def _round(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    if len(args) not in (1, 2):
        raise t.error("round takes 1 or 2 arguments", node)
    digits = 0
    if len(args) == 2:
        if args[1].const is None or not pa.types.is_integer(args[1].type):
            raise t.error("the digits of round must be an integer literal", node)
        digits = args[1].const.as_py()
    opts = pc.RoundOptions(digits, round_mode="half_towards_infinity")
    d = args[0].type
    if not is_numeric(d) and not pa.types.is_null(d):
        raise t.error(f"round does not apply to {d}", node)
    if pa.types.is_decimal(d):  # DataFusion keeps a decimal, of at most ``digits`` places (>= 0)
        make = pa.decimal256 if d.bit_width == 256 else pa.decimal128
        x = args[0]
        if d.precision < (76 if d.bit_width == 256 else 38):  # Arrow wraps a carry into a new digit: round wider
            x = t.cast(x, make(d.precision + 1, d.scale), node)
        out = t.call("round", [x], node, opts)
        return t.cast(out, make(d.precision, max(0, min(digits, d.scale))), node)
    x = args[0] if pa.types.is_floating(d) else t.cast(args[0], pa.float64(), node)
    return t.call("round", [x], node, opts)


def _nullif(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 2)
    a, b = args
    common = comparison_common(a.type, b.type)
    if common is None:
        raise t.error(f"nullif of {a.type} and {b.type}", node)
    a = t.cast(a, common, node)
    same = t.call("coalesce", [total_equal(t, a, b, node), const_val(pa.scalar(False))], node)  # -0 is not 0
    return as_view_with_views(t, node, args, t.call("if_else", [same, const_val(pa.scalar(None, a.type)), a], node))


def _iszero(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 1)
    if not is_numeric(args[0].type):
        raise t.error(f"iszero does not apply to {args[0].type}", node)
    x = t.cast(args[0], pa.float64(), node) if not pa.types.is_floating(args[0].type) else args[0]
    return t.call("equal", [x, const_val(pa.scalar(0.0, x.type))], node)


def _strpos(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """1-based character position of the first occurrence, 0 when absent: the characters before it
    are the first piece of a split at it."""
    s = string_arg(t, node, args, 2)
    sub = literal_str(t, args[1], node, "substring")
    if sub == "":  # 1; an int64 for a large_string, as its lengths
        n = pa.int64() if pa.types.is_large_string(s.type) else pa.int32()
        return t.call("if_else", [t.call("is_valid", [s], node), const_val(pa.scalar(1, n)), _null(n)], node)
    pieces = t.call("split_pattern", [s], node, pc.SplitPatternOptions(sub, max_splits=1))
    found = t.call("greater", [t.call("list_value_length", [pieces], node), const_val(pa.scalar(1, pa.int32()))], node)
    before = t.call("utf8_length", [t.call("list_element", [pieces, const_val(pa.scalar(0))], node)], node)
    at = t.call("add", [before, const_val(pa.scalar(1, before.type))], node)
    return t.call("if_else", [found, at, const_val(pa.scalar(0, before.type))], node)


def _null(t: pa.DataType) -> Val:
    return const_val(pa.scalar(None, t))


def _left_right(left: bool) -> Callable[[Translator, exp.Expr, list[Val]], Val]:
    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        arity(t, node, args, 2)
        s = as_text(t, args[0], node)
        n = literal_int(t, args[1], node, "length")
        if left:
            opts = pc.SliceOptions(0, n)
        elif n:  # the last n characters, or all but the first -n
            opts = pc.SliceOptions(-n)
        else:
            empty = const_val(pa.scalar("", s.type))  # of the string's own type: mixed ones crash Acero
            out = t.call("if_else", [t.call("is_valid", [s], node), empty, _null(s.type)], node)
            return t.cast(out, pa.string_view(), node)
        return t.cast(t.call("utf8_slice_codeunits", [s], node, opts), pa.string_view(), node)  # DataFusion's type

    return fn


def _trim(kernel: str) -> Callable[[Translator, exp.Expr, list[Val]], Val]:
    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        if len(args) not in (1, 2):
            raise t.error(f"{node.name} takes 1 or 2 arguments", node)
        s = string_operand(t, args[0], node)
        chars = literal_str(t, args[1], node, "characters") if len(args) == 2 else " "
        return t.call(kernel, [s], node, pc.TrimOptions(chars))

    return fn


def _regexp_replace(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    if len(args) not in (3, 4):
        raise t.error(f"{node.name} takes 3 or 4 arguments", node)
    text = is_string_like(args[0].type) or pa.types.is_null(args[0].type) or pa.types.is_dictionary(args[0].type)
    # DataFusion reads any other value as large text, and keeps that type
    s = string_operand(t, args[0], node) if text else t.cast(t.cast(args[0], pa.utf8(), node), pa.large_utf8(), node)
    pattern = literal_str(t, args[1], node, "pattern")
    replacement = literal_str(t, args[2], node, "replacement")
    flags = literal_str(t, args[3], node, "flags") if len(args) == 4 else ""
    if set(flags) - {"g", "i"}:
        raise t.error(f"unsupported regular expression flags {flags!r} (only 'g', 'i')", node)
    if "$" in replacement or "\\" in replacement:
        raise t.error("group references in the replacement are not supported", node)
    if "i" in flags:
        pattern = "(?i)" + pattern
    opts = pc.ReplaceSubstringOptions(pattern, replacement, max_replacements=None if "g" in flags else 1)
    out = t.call("replace_substring_regex", [s], node, opts)
    if text and pa.types.is_large_string(out.type):  # DataFusion's type for a large_string: a view
        return t.cast(out, pa.string_view(), node)
    return out


def _split_part(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    s = string_arg(t, node, args, 3)
    delimiter = literal_str(t, args[1], node, "delimiter")
    k = literal_int(t, args[2], node, "part number")
    if k <= 0:
        raise t.error("split_part counts parts from 1", node)
    pieces = t.call("split_pattern", [s], node, pc.SplitPatternOptions(delimiter))
    part = element(t, node, pieces, const_val(pa.scalar(k)))
    # past the last part: an empty string (null strings stay null)
    return t.call(
        "if_else",
        [t.call("is_valid", [s], node), t.call("coalesce", [part, const_val(pa.scalar(""))], node), _null(pa.utf8())],
        node,
    )


FUNCTIONS: dict[str, Callable[[Translator, exp.Expr, list[Val]], Val]] = {
    "nullif": _nullif,
    "iszero": _iszero,
    "strpos": _strpos,
    "instr": _strpos,
    "left": _left_right(True),
    "right": _left_right(False),
    "btrim": _trim("utf8_trim"),
    "ltrim": _trim("utf8_ltrim"),
    "rtrim": _trim("utf8_rtrim"),
    "regexp_replace": _regexp_replace,
    "split_part": _split_part,
    "lower": _unary("utf8_lower", is_string_like),
    "upper": _unary("utf8_upper", is_string_like),
    "length": _unary_text("utf8_length"),
    "char_length": _unary_text("utf8_length"),
    "character_length": _unary_text("utf8_length"),
    "octet_length": _unary("binary_length", is_string_like),
    "reverse": _unary_text("utf8_reverse"),
    "starts_with": _pattern_fn("starts_with"),
    "ends_with": _pattern_fn("ends_with"),
    "contains": _pattern_fn("match_substring"),
    "regexp_like": lambda t, node, args: _regex(t, node, args, False),
    "is_valid": _is_valid,
    "isnan": _isnan,
    "coalesce": _coalesce,
    "concat": _concat,
    "replace": _replace,
    "abs": _abs,
    "sqrt": _float_fn("sqrt"),
    "round": _round,
}


#: string functions whose result is a string_view when their first argument is one
_VIEW_KEEPING = frozenset(
    "lower upper initcap reverse btrim ltrim rtrim trim repeat regexp_replace translate split_part".split()
)

#: numeric functions whose untyped NULL arguments are doubles
_MATH = frozenset(
    "abs sqrt cbrt ln log log2 log10 exp ceil floor signum sin cos tan cot asin acos atan sinh cosh tanh "
    "asinh acosh atanh degrees radians round trunc power pow".split()
)

#: result types of functions called with a literal NULL where they take a constant (default utf8)
NULL_RESULT = {
    "starts_with": pa.bool_(),
    "ends_with": pa.bool_(),
    "contains": pa.bool_(),
    "regexp_like": pa.bool_(),
    "strpos": pa.int32(),
    "instr": pa.int32(),
    "substr": pa.string_view(),
    "substring": pa.string_view(),
    "initcap": pa.string_view(),
    "ascii": pa.int32(),
    "md5": pa.string_view(),
    "translate": pa.string_view(),
}


def function(t: Translator, node: exp.Anonymous) -> Val:
    """A call of a named function (sqlglot's ``Anonymous`` node: our dialect keeps every call so)."""
    name = node.name.lower()
    args = [t.value(a) for a in node.expressions]
    if name in _MATH:  # DataFusion coerces an untyped NULL to a double here
        args = [t.cast(a, pa.float64(), node) if pa.types.is_null(a.type) else a for a in args]
    if name == "regexp_match":
        if id(node) not in t.boolean:
            raise t.error("regexp_match returns a list of matches: use regexp_like for a condition", node)
        return _regex(t, node, args, True)
    from lancelot.sql.json_functions import JSON_FUNCTIONS

    registries = (
        FUNCTIONS,
        LIST_FUNCTIONS,
        TEMPORAL_FUNCTIONS,
        NUMERIC_FUNCTIONS,
        STRING_FUNCTIONS,
        STRUCT_FUNCTIONS,
        JSON_FUNCTIONS,
    )
    fn = next((r[name] for r in registries if name in r), None)
    if fn is None:
        known = ", ".join(sorted({*(n for r in registries for n in r), "regexp_match"}))
        raise t.error(f"unknown function {node.name!r} (functions: {known})", node)
    try:
        out = fn(t, node, args)
        if name in _VIEW_KEEPING and args and pa.types.is_string_view(args[0].type) and pa.types.is_string(out.type):
            out = t.cast(out, pa.string_view(), node)  # DataFusion's kernel returns a view for a view
        return out
    except NullArgument:
        return const_val(pa.scalar(None, NULL_RESULT.get(name, pa.utf8())))
