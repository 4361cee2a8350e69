"""List functions of pylance's SQL (DataFusion's names): membership, position, length, elements.

pyarrow has no kernel that looks inside each list for a value: ``array_has`` and
``array_position`` are scalar UDFs registered with pyarrow on first use, one per (list type,
value type), under a name that says the types (an expression holding one can only be evaluated
in a process that registered it: lancelot.sql registers it while parsing).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.arguments import arity
from lancelot.sql.types import comparison_common, is_list
from lancelot.sql.values import const_val

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator
    from lancelot.sql.values import Val

_REGISTERED: set[str] = set()
_LOCK = threading.Lock()
_Impl = Callable[[pa.Array, pa.Array | pa.Scalar, int], pa.Array]


def _register(kind: str, list_type: pa.DataType, value_type: pa.DataType, out: pa.DataType, impl: _Impl) -> str:
    name = f"lancelot_{kind}<{list_type}|{value_type}>"
    with _LOCK:
        if name not in _REGISTERED:
            _register_now(name, kind, list_type, value_type, out, impl)
            _REGISTERED.add(name)
    return name


def _register_now(
    name: str, kind: str, list_type: pa.DataType, value_type: pa.DataType, out: pa.DataType, impl: _Impl
) -> None:
    """Register ``impl`` with pyarrow as the scalar function ``name``."""

    def udf(ctx: pc.UdfContext, lists: pa.Array | pa.Scalar, value: pa.Array | pa.Scalar) -> pa.Array:
        n = len(lists) if isinstance(lists, pa.Array) else ctx.batch_length
        if isinstance(lists, pa.Scalar):
            lists = pa.array([lists.as_py()] * n, list_type)
        return impl(lists, value, n)

    doc = {"summary": kind, "description": f"DataFusion's {kind} on {list_type}"}
    pc.register_scalar_function(udf, name, doc, {"lists": list_type, "value": value_type}, out)


def _matches(lists: pa.Array, value: pa.Array | pa.Scalar, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(parent row of each element, element equals the row's value, value is valid per row)."""
    flat = pc.list_flatten(lists)
    parents = pc.list_parent_indices(lists).to_numpy()
    if isinstance(value, pa.Scalar):
        other: pa.Array | pa.Scalar = value
        valid = np.full(n, value.is_valid)
    else:
        other = pc.take(value, pa.array(parents))
        valid = value.is_valid().to_numpy(zero_copy_only=False)
    hits = pc.fill_null(pc.equal(flat, other), False).to_numpy(zero_copy_only=False)
    return parents, hits, valid


def _has(lists: pa.Array, value: pa.Array | pa.Scalar, n: int) -> pa.Array:
    parents, hits, valid = _matches(lists, value, n)
    out = np.zeros(n, dtype=bool)
    out[parents[hits]] = True
    mask = ~(lists.is_valid().to_numpy(zero_copy_only=False) & valid)
    return pa.array(out, pa.bool_(), mask=mask)


def _position(lists: pa.Array, value: pa.Array | pa.Scalar, n: int) -> pa.Array:
    parents, hits, valid = _matches(lists, value, n)
    first = np.full(n, -1, dtype=np.int64)
    where = np.flatnonzero(hits)[::-1]  # the last write wins: visit matches backwards
    first[parents[where]] = where
    row_start = np.searchsorted(parents, np.arange(n))  # parents ascend: each row's first element
    mask = (first < 0) | ~(lists.is_valid().to_numpy(zero_copy_only=False) & valid)
    return pa.array(np.where(mask, 0, first - row_start + 1), pa.uint64(), mask=mask)


def _from_end(lists: pa.Array, value: pa.Array | pa.Scalar, n: int) -> pa.Array:
    """Element ``len + k`` of each list (k < 0, a literal), null where the list is shorter."""
    k = value.as_py() if isinstance(value, pa.Scalar) else value[0].as_py()
    flat = pc.list_flatten(lists)
    parents = pc.list_parent_indices(lists).to_numpy()
    row_start = np.searchsorted(parents, np.arange(n))
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    ok = lengths >= -k
    picked = flat.take(pa.array((row_start + lengths + k)[ok]))
    out = np.full(n, -1, dtype=np.int64)
    out[ok] = np.arange(int(ok.sum()))
    return picked.take(pa.array(out, mask=~ok))


def _list_arg(t: Translator, node: exp.Expr, v: Val) -> Val:
    if not is_list(v.type):
        raise t.error(f"{node.name} needs a list, not {v.type}", node)
    return v


def _value_for(t: Translator, node: exp.Expr, lists: Val, value: Val) -> Val:
    item = lists.type.value_type
    if comparison_common(item, value.type) is None:
        raise t.error(f"cannot look for {value.type} in {lists.type}", node)
    return t.cast(value, item, node)


def array_has(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 2)
    lists = _list_arg(t, node, args[0])
    value = _value_for(t, node, lists, args[1])
    return t.call(_register("array_has", lists.type, value.type, pa.bool_(), _has), [lists, value], node)


def _has_many(all_of: bool) -> Callable[[Translator, exp.Expr, list[Val]], Val]:
    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        arity(t, node, args, 2)
        lists, wanted = _list_arg(t, node, args[0]), args[1]
        if wanted.const is None or not is_list(wanted.type):
            raise t.error(f"the second argument of {node.name} must be a list literal", node)
        values = wanted.const.values if wanted.const.is_valid else None
        if values is None:
            return const_val(pa.scalar(None, pa.bool_()))
        out: Val | None = None
        for v in values:
            has = array_has(t, node, [lists, const_val(v)])
            out = has if out is None else t.call("and_kleene" if all_of else "or_kleene", [out, has], node)
        if out is None:  # an empty list: all of nothing holds, any of nothing does not (null lists: null)
            size = t.call("list_value_length", [lists], node)
            return t.call("equal" if all_of else "not_equal", [size, size], node)
        return out

    return fn


def array_position(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 2)
    lists = _list_arg(t, node, args[0])
    value = _value_for(t, node, lists, args[1])
    return t.call(_register("array_position", lists.type, value.type, pa.uint64(), _position), [lists, value], node)


def element(t: Translator, node: exp.Expr, lists: Val, index: Val) -> Val:
    """``l[k]`` / ``array_element(l, k)``: the k-th element counting from 1, from the end when k < 0;
    null past either end (k must be a literal)."""
    lists = _list_arg(t, node, lists)
    if index.const is None or not pa.types.is_integer(index.type):
        raise t.error("a list index must be an integer literal", node)
    k = index.const.as_py()
    item = lists.type.value_type
    if k is None or k == 0:
        return const_val(pa.scalar(None, item))
    if k < 0:
        name = _register("array_element_from_end", lists.type, pa.int64(), item, _from_end)
        return t.call(name, [lists, const_val(pa.scalar(k, pa.int64()))], node)
    one = t.call("list_slice", [lists], node, pc.ListSliceOptions(k - 1, k, return_fixed_size_list=True))
    return t.call("list_element", [one, const_val(pa.scalar(0, pa.int64()))], node)


def _element_fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 2)
    return element(t, node, args[0], args[1])


def _length(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 1)
    lists = _list_arg(t, node, args[0])
    return t.cast(t.call("list_value_length", [lists], node), pa.uint64(), node)


def _make_array(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """``make_array(a, b, ...)``: a list of its arguments per row, in their common type."""
    from lancelot.sql.arguments import as_common
    from lancelot.sql.udfs import register

    vals = as_common(t, node, args, "make_array")
    item = vals[0].type
    if pa.types.is_null(item):
        raise t.error("make_array of NULLs only is not supported", node)
    out = pa.list_(item)

    def impl(*arrays: pa.Array) -> pa.Array:
        n, k = len(arrays[0]), len(arrays)
        order = (np.arange(n)[:, None] + n * np.arange(k)[None, :]).ravel()
        values = pa.concat_arrays(list(arrays)).take(pa.array(order))
        return pa.ListArray.from_arrays(pa.array(np.arange(0, n * k + 1, k, dtype=np.int32)), values, type=out)

    name = register(f"lancelot_make_array<{item}*{len(vals)}>", {f"x{i}": item for i in range(len(vals))}, out, impl)
    return t.call(name, vals, node)


def _empty(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """Whether a list has no elements (null for a null list)."""
    arity(t, node, args, 1)
    n = t.call("list_value_length", [_list_arg(t, node, args[0])], node)
    return t.call("equal", [n, const_val(pa.scalar(0, n.type))], node)


def _element_text(item: pa.DataType) -> Callable[[object], str]:
    """An element as DataFusion writes it in ``array_to_string``."""
    if pa.types.is_floating(item):
        from lancelot.sql.udfs import float_text

        single = pa.types.is_float32(item)
        return lambda v: float_text(float(v), single)  # type: ignore[arg-type]
    if pa.types.is_boolean(item):
        return lambda v: "true" if v else "false"
    if pa.types.is_integer(item) or pa.types.is_string(item) or pa.types.is_large_string(item):
        return str
    raise ValueError(f"array_to_string of {item} elements is not supported")


def _array_to_string(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """``array_to_string(l, delimiter[, null_string])``: the elements as text joined, nulls skipped (or written as
    ``null_string``)."""
    from lancelot.sql.arguments import literal_str
    from lancelot.sql.udfs import rowwise

    if len(args) not in (2, 3):
        raise t.error(f"{node.name} takes 2 or 3 arguments", node)
    lists = _list_arg(t, node, args[0])
    delimiter = literal_str(t, args[1], node, "delimiter")
    null = literal_str(t, args[2], node, "null string") if len(args) == 3 else None
    try:
        text = _element_text(lists.type.value_type)
    except ValueError as e:
        raise t.error(str(e), node) from None

    def join(items: list[object]) -> str:
        return delimiter.join(text(v) if v is not None else null for v in items if v is not None or null is not None)  # type: ignore[misc]

    name = rowwise(f"array_to_string_{delimiter!r}_{null!r}", {"l": lists.type}, pa.utf8(), join)
    return t.call(name, [lists], node)


LIST_FUNCTIONS: dict[str, Callable[[Translator, exp.Expr, list[Val]], Val]] = {
    "make_array": _make_array,
    "make_list": _make_array,
    "empty": _empty,
    "array_empty": _empty,
    "array_to_string": _array_to_string,
    "array_join": _array_to_string,
    "list_to_string": _array_to_string,
    "list_join": _array_to_string,
    "array_has": array_has,
    "array_contains": array_has,
    "list_has": array_has,
    "list_contains": array_has,
    "array_has_any": _has_many(False),
    "list_has_any": _has_many(False),
    "array_has_all": _has_many(True),
    "list_has_all": _has_many(True),
    "array_position": array_position,
    "list_position": array_position,
    "array_element": _element_fn,
    "list_element": _element_fn,
    "array_length": _length,
    "cardinality": _length,
}
