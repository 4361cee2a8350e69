"""More string functions of pylance's SQL (DataFusion's names, semantics and result types) as
pyarrow compute calls: ``repeat``, ``concat_ws``, ``lpad``/``rpad``, ``bit_length``; ``ascii``,
``chr``, ``md5``, ``to_hex``, ``translate`` value by value in Python.

``lpad``/``rpad`` cut a longer string to the width (DataFusion's rule, unlike Arrow's pad,
which never cuts); a fill of other than one character is padded in Python.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.arguments import NullArgument, arity, as_text, literal_int, literal_str, string_arg, string_operand
from lancelot.sql.values import Val, sql_text
from lancelot.util.types import is_string_like

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator

Fn = Callable[["Translator", exp.Expr, "list[Val]"], "Val"]


def _const(v: object, t: pa.DataType) -> Val:
    from lancelot.sql.values import const_val as const

    return const(pa.scalar(v, t))


def _repeat(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    s = string_arg(t, node, args, 2)
    n = args[1]
    if not pa.types.is_integer(n.type):
        raise t.error(f"the count of repeat must be an integer, not {n.type}", node)
    n = t.cast(n, pa.int64(), node)
    zero = _const(0, pa.int64())
    n = t.call("max_element_wise", [n, zero], node)  # a negative count repeats nothing, as DataFusion
    return t.call("binary_repeat", [s, n], node)


def _concat_ws(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    if len(args) < 2:
        raise t.error("concat_ws takes a separator and at least one value", node)
    sep, values = args[0], args[1:]
    if sep.const is not None and not sep.const.is_valid:
        return _const(None, pa.string_view())
    sep = t.cast(sep, pa.utf8(), node)
    # folded pairwise: Arrow's join with null_handling="skip" drops rows whose values are all null
    acc = t.cast(values[0], pa.utf8(), node)
    for v in values[1:]:
        v = t.cast(v, pa.utf8(), node)
        both = t.call("binary_join_element_wise", [acc, v, sep], node)
        acc = t.call("coalesce", [both, acc, v], node)
    out = t.call("coalesce", [acc, _const("", pa.utf8())], node)
    if sep.const is None:  # a null separator: null
        out = t.call("if_else", [t.call("is_null", [sep], node), _const(None, pa.utf8()), out], node)
    # DataFusion's type: a string with any non-text argument or with only strings, else a view
    types = {a.type for a in args}
    if all(is_string_like(x) or pa.types.is_null(x) for x in types) and types != {pa.utf8()}:
        out = t.cast(out, pa.string_view(), node)
    return out


def _pad(kernel: str) -> Fn:
    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        if len(args) not in (2, 3):
            raise t.error(f"{node.name} takes 2 or 3 arguments", node)
        s = as_text(t, args[0], node)
        width = max(literal_int(t, args[1], node, "length"), 0)
        fill = literal_str(t, args[2], node, "fill") if len(args) == 3 else " "
        if len(fill) != 1:  # Arrow pads with one character: the rest in Python
            from lancelot.sql.udfs import pad

            return t.call(pad(kernel == "utf8_lpad", width, fill, s.type), [s], node)
        cut = t.call("utf8_slice_codeunits", [s], node, pc.SliceOptions(0, width))
        return t.call(kernel, [cut], node, pc.PadOptions(width, fill))

    return fn


def _bit_length(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 1)
    n = t.call("binary_length", [string_operand(t, args[0], node)], node)
    return t.call("multiply", [n, _const(8, n.type)], node)


def _arguments(t: Translator, node: exp.Expr, args: list[Val], n: int) -> None:
    """Check the count of ``args``; a NULL literal among them makes the call NULL (``NullArgument``:
    functions.py answers a null of the function's type)."""
    arity(t, node, args, n)
    if any(a.const is not None and not a.const.is_valid for a in args):
        raise NullArgument


def _ascii(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """The code point of the first character (0 for an empty string), an int32."""
    from lancelot.sql.udfs import rowwise

    _arguments(t, node, args, 1)
    s = string_operand(t, args[0], node)
    return t.call(rowwise("ascii", {"s": s.type}, pa.int32(), lambda v: ord(v[0]) if v else 0), [s], node)


def _unicode_char(v: int) -> str:
    if not 0 <= v <= 0x10FFFF or 0xD800 <= v <= 0xDFFF:
        raise ValueError(f"invalid Unicode scalar value: {v}")
    return chr(v)


def _chr(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """The character of a code point (an invalid one fails the query, as in DataFusion)."""
    from lancelot.sql.udfs import rowwise

    _arguments(t, node, args, 1)
    if not pa.types.is_integer(args[0].type):
        raise t.error(f"chr takes an integer, not {args[0].type}", node)
    x = t.cast(args[0], pa.int64(), node)
    return t.call(rowwise("chr", {"x": pa.int64()}, pa.utf8(), _unicode_char), [x], node)


def _md5_hex(v: str | bytes) -> str:
    return hashlib.md5(v.encode() if isinstance(v, str) else v, usedforsecurity=False).hexdigest()


def _md5(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """The MD5 digest of a string's UTF-8 bytes or of binary, as 32 hex digits (a string_view)."""
    from lancelot.sql.udfs import rowwise

    _arguments(t, node, args, 1)
    x = args[0]
    if pa.types.is_string_view(x.type) or pa.types.is_binary_view(x.type):
        x = t.cast(x, pa.utf8() if pa.types.is_string_view(x.type) else pa.binary(), node)
    if not (is_string_like(x.type) or pa.types.is_binary(x.type) or pa.types.is_large_binary(x.type)):
        raise t.error(f"md5 takes a string or binary, not {x.type}", node)
    out = t.call(rowwise("md5", {"x": x.type}, pa.utf8(), _md5_hex), [x], node)
    return t.cast(out, pa.string_view(), node)


def _to_hex(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """An integer in lowercase hex; a negative one as its 64-bit two's complement."""
    from lancelot.sql.udfs import rowwise

    _arguments(t, node, args, 1)
    x = args[0]
    if not pa.types.is_integer(x.type):
        raise t.error(f"to_hex takes an integer, not {x.type}", node)
    return t.call(rowwise("to_hex", {"x": x.type}, pa.utf8(), lambda v: format(v & (2**64 - 1), "x")), [x], node)


def _translated(s: str, old: str, new: str) -> str:
    table: dict[str, str | None] = {}
    for i, c in enumerate(old):
        table.setdefault(c, new[i] if i < len(new) else None)  # the first mapping of a character wins
    return "".join(m for m in (table.get(c, c) for c in s) if m is not None)


def _translate(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """Each character of the second argument replaced by the one at its position in the third (or
    dropped). The first argument's type when the other two are strings, else a string_view (the
    type DataFusion coerces to)."""
    from lancelot.sql.udfs import rowwise

    _arguments(t, node, args, 3)
    args = [as_text(t, args[0], node), *args[1:]]  # a number or boolean as its text
    exact = all(pa.types.is_string(a.type) for a in args[1:])
    vals = [string_operand(t, args[0], node), *(t.cast(a, pa.utf8(), node) for a in args[1:])]
    out_type = vals[0].type if exact else pa.utf8()
    inputs = {f"a{i}": v.type for i, v in enumerate(vals)}
    out = t.call(rowwise("translate", inputs, out_type, _translated), vals, node)
    return out if exact else t.cast(out, pa.string_view(), node)


def _initcapped(s: str) -> str:
    """DataFusion's initcap: a character upper-cased after a non-alphanumeric one (or first),
    lower-cased after an alphanumeric one (digits count: ``1x`` stays)."""
    out, prev = [], False
    for c in s:
        out.append(c.lower() if prev else c.upper())
        prev = c.isalnum()
    return "".join(out)


def _initcap(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    from lancelot.sql.udfs import rowwise

    arity(t, node, args, 1)
    if pa.types.is_null(args[0].type):
        return _const(None, pa.string_view())
    x = string_operand(t, args[0], node)
    return t.call(rowwise("initcap", {"s": x.type}, x.type, _initcapped), [x], node)


def _substr(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """``substr(s, start[, count])``: characters from 1-based ``start`` (a start before 1 eats into
    the count), a string_view. Lance's planner takes it only inside another function's arguments."""
    if node.find_ancestor(exp.Anonymous) is None:
        raise t.error(f"{sql_text(node)} is not supported in lance SQL (only inside a function's arguments)", node)
    if len(args) not in (2, 3):
        raise t.error("substr takes 2 or 3 arguments", node)
    s = string_operand(t, args[0], node)
    start = literal_int(t, args[1], node, "start")
    begin = max(start, 1) - 1
    opts = pc.SliceOptions(begin)
    if len(args) == 3:
        count = literal_int(t, args[2], node, "count")
        if count < 0:  # an error on the rows that reach it
            from lancelot.sql.udfs import failing

            fail = failing(f"negative count not allowed: {count}", pa.string_view())
            return t.call(fail, [t.call("is_valid", [s], node)], node)
        opts = pc.SliceOptions(begin, max(start + count - 1, begin))
    return t.cast(t.call("utf8_slice_codeunits", [s], node, opts), pa.string_view(), node)


def _digest(algorithm: str | None) -> Fn:
    """``sha224`` ... ``sha512`` (``algorithm``), or ``digest(s, 'sha256')`` (None): the digest of a string's UTF-8
    bytes or of binary, as binary."""

    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        from lancelot.sql.udfs import rowwise

        name = algorithm
        if name is None:
            if len(args) != 2:
                raise t.error(f"digest takes 2 arguments, not {len(args)}", node)
            name = literal_str(t, args[1], node, "algorithm").lower()
            if name not in _DIGESTS:
                raise t.error(f"unsupported digest algorithm {name!r} (one of {', '.join(_DIGESTS)})", node)
            args = args[:1]
        _arguments(t, node, args, 1)
        x = as_text(t, args[0], node) if not pa.types.is_binary(args[0].type) else args[0]

        def one(v: str | bytes, h: str = name) -> bytes:
            return hashlib.new(h, v.encode() if isinstance(v, str) else v).digest()

        return t.call(rowwise(f"digest_{name}", {"x": x.type}, pa.binary(), one), [x], node)

    return fn


_DIGESTS = ("md5", "sha224", "sha256", "sha384", "sha512")


def _regexp_count(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """The matches of a pattern in each string, an int64."""
    s = string_arg(t, node, args, 2)
    pattern = literal_str(t, args[1], node, "pattern")
    n = t.call("count_substring_regex", [s], node, pc.MatchSubstringOptions(pattern))
    return t.cast(t.call("coalesce", [n, _const(0, n.type)], node), pa.int64(), node)  # (a null string: 0)


def _levenshtein(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def _find_in_set(x: str, items: str) -> int:
    parts = items.split(",") if items else []
    return parts.index(x) + 1 if x in parts else 0


def _substr_index(s: str, delimiter: str, count: int) -> str:
    if not delimiter or count == 0:
        return ""
    parts = s.split(delimiter)
    return delimiter.join(parts[:count] if count > 0 else parts[count:])


def _text_rows(name: str, out: pa.DataType, fn: Callable[..., object], kinds: str) -> Fn:
    """A function of strings (``kinds``: ``s`` for a string, ``i`` for an integer, per argument) computed row by
    row in Python; int32 results are int64 for large strings, as DataFusion's."""

    def call(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        from lancelot.sql.udfs import rowwise

        _arguments(t, node, args, len(kinds))
        vals = [as_text(t, a, node) if k == "s" else t.cast(a, pa.int64(), node) for a, k in zip(args, kinds)]
        if any(k == "i" and not pa.types.is_integer(a.type) for a, k in zip(args, kinds)):
            raise t.error(f"{name} takes ({', '.join('string' if k == 's' else 'integer' for k in kinds)})", node)
        wide = pa.int64() if any(pa.types.is_large_string(v.type) for v in vals) and out == pa.int32() else out
        inputs = {f"x{k}": v.type for k, v in enumerate(vals)}
        return t.call(rowwise(name, inputs, wide, fn), vals, node)

    return call


def _string_to_array(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """``string_to_array(s, delimiter[, null_string])``: the pieces of a string (none of an empty one; the whole
    string for an empty delimiter), those equal to ``null_string`` null."""
    from lancelot.sql.udfs import rowwise

    if len(args) not in (2, 3):
        raise t.error(f"{node.name} takes 2 or 3 arguments", node)
    s = string_operand(t, args[0], node)
    delimiter = literal_str(t, args[1], node, "delimiter")
    null = literal_str(t, args[2], node, "null string") if len(args) == 3 else None

    def split(v: str) -> list[str | None]:
        parts = (v.split(delimiter) if delimiter else [v]) if v else []
        return [None if p == null else p for p in parts]

    return t.call(
        rowwise(f"string_to_array_{delimiter!r}_{null!r}", {"x": s.type}, pa.list_(pa.utf8()), split), [s], node
    )


STRING_FUNCTIONS: dict[str, Fn] = {
    "sha224": _digest("sha224"),
    "sha256": _digest("sha256"),
    "sha384": _digest("sha384"),
    "sha512": _digest("sha512"),
    "digest": _digest(None),
    "regexp_count": _regexp_count,
    "levenshtein": _text_rows("levenshtein", pa.int32(), _levenshtein, "ss"),
    "find_in_set": _text_rows("find_in_set", pa.int32(), _find_in_set, "ss"),
    "substr_index": _text_rows("substr_index", pa.utf8(), _substr_index, "ssi"),
    "substring_index": _text_rows("substr_index", pa.utf8(), _substr_index, "ssi"),
    "string_to_array": _string_to_array,
    "string_to_list": _string_to_array,
    "repeat": _repeat,
    "concat_ws": _concat_ws,
    "lpad": _pad("utf8_lpad"),
    "rpad": _pad("utf8_rpad"),
    "bit_length": _bit_length,
    "ascii": _ascii,
    "chr": _chr,
    "md5": _md5,
    "to_hex": _to_hex,
    "translate": _translate,
    "initcap": _initcap,
    "substr": _substr,
    "substring": _substr,
}
