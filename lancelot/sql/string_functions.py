"""More string functions of pylance's SQL (DataFusion's names, semantics and result types) as
pyarrow compute calls: ``repeat``, ``concat_ws``, ``lpad``/``rpad``, ``bit_length``.

``lpad``/``rpad`` cut a longer string to the width (DataFusion's rule, unlike Arrow's pad,
which never cuts); a fill of other than one character is padded in Python.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator, Val

Fn = Callable[["Translator", exp.Expr, "list[Val]"], "Val"]


def _const(v: object, t: pa.DataType) -> Val:
    from lancelot.sql.translate import _const as const

    return const(pa.scalar(v, t))


def _text(t: Translator, node: exp.Expr, v: Val) -> Val:
    from lancelot.sql.functions import _string

    return _string(t, v, node)


def _repeat(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    if len(args) != 2:
        raise t.error("repeat takes 2 arguments", node)
    s = _text(t, node, args[0])
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
    if any(v.const is not None and not v.const.is_valid for v in values):  # DataFusion's type with a NULL
        out = t.cast(out, pa.string_view(), node)
    return out


def _pad(kernel: str) -> Fn:
    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        from lancelot.sql.functions import _literal_int, _literal_str

        if len(args) not in (2, 3):
            raise t.error(f"{node.name} takes 2 or 3 arguments", node)
        s = _text(t, node, args[0])
        width = max(_literal_int(t, args[1], node, "length"), 0)
        fill = _literal_str(t, args[2], node, "fill") if len(args) == 3 else " "
        if len(fill) != 1:  # Arrow pads with one character: the rest in Python
            from lancelot.sql.udfs import pad

            return t.call(pad(kernel == "utf8_lpad", width, fill, s.type), [s], node)
        cut = t.call("utf8_slice_codeunits", [s], node, pc.SliceOptions(0, width))
        return t.call(kernel, [cut], node, pc.PadOptions(width, fill))

    return fn


def _bit_length(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    if len(args) != 1:
        raise t.error("bit_length takes 1 argument", node)
    n = t.call("binary_length", [_text(t, node, args[0])], node)
    return t.call("multiply", [n, _const(8, n.type)], node)


STRING_FUNCTIONS: dict[str, Fn] = {
    "repeat": _repeat,
    "concat_ws": _concat_ws,
    "lpad": _pad("utf8_lpad"),
    "rpad": _pad("utf8_rpad"),
    "bit_length": _bit_length,
}
