"""The JSON functions of lance SQL, as pylance 14 evaluates them over JSON columns (``arrow.json``
text) and over ``json_get``'s results (JSONB, lancelot/jsonb.py):

* ``json_extract(doc, path)``: the value at a JSONPath (``$``, ``.key``, ``[n]``) as compact JSON
  text (``'"Alice"'``, ``'30'``, ``'{"k":1}'``), null where the path leads nowhere;
* ``json_exists(doc, path)``: whether the path leads somewhere (a JSON null counts);
* ``json_get(doc, key)``: an object's member, or an array's element when ``key`` is a number, as
  JSONB (``large_binary``);
* ``json_get_string`` / ``_int`` / ``_float`` / ``_bool(doc, key)``: the member as that type:
  numbers and booleans as text; text, floats (rounded) and booleans as integers; text, integers
  and booleans as floats; ``"true"``/``"false"`` as booleans; anything else an error;
* ``json_array_contains(doc, path, value)``: whether the array there holds an element whose text
  (a string's own characters, a number's, boolean's or null's JSON) is ``value``;
* ``json_array_length(doc, path)``: the length of the array there, 0 for any other value.

A null document gives null; so does a missing member (or a JSON null, for ``json_get_*``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlglot import exp

from lancelot import jsonb
from lancelot.sql.arguments import arity
from lancelot.sql.errors import SqlError
from lancelot.sql.udfs import register
from lancelot.sql.values import Val

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator

_MISSING = object()
_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def _load(doc: str | bytes) -> Any:
    """A document's value: JSON text, or JSONB bytes."""
    return json.loads(jsonb.decode(doc) if isinstance(doc, bytes) else doc)


def _path(path: str, t: Translator, node: exp.Expr) -> list[str | int]:
    """The steps of a JSONPath: ``$`` then ``.key`` and ``[n]``."""
    rest = path.strip()
    if not rest.startswith("$"):
        raise t.error(f"a JSONPath starts with '$', not {path!r}", node)
    steps: list[str | int] = []
    pos = 1
    while pos < len(rest):
        m = _STEP.match(rest, pos)
        if m is None:
            raise t.error(f"cannot read the JSONPath {path!r} at character {pos + 1}", node)
        steps.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    return steps


def _walk(value: Any, steps: list[str | int]) -> Any:
    """The value the steps lead to, or ``_MISSING``."""
    for step in steps:
        if isinstance(step, int) and isinstance(value, list) and step < len(value):
            value = value[step]
        elif isinstance(step, str) and isinstance(value, dict) and step in value:
            value = value[step]
        else:
            return _MISSING
    return value


def _member(value: Any, key: str) -> Any:
    """``json_get``'s step: an object's member ``key``, or an array's element ``int(key)``."""
    if isinstance(value, dict):
        return value.get(key, _MISSING)
    if isinstance(value, list) and key.isdigit() and int(key) < len(value):
        return value[int(key)]
    return _MISSING


def _text(value: Any) -> str:
    """A value as compact JSON text, as pylance writes it (keys sorted, pylance's numbers)."""
    return jsonb.decode(jsonb.encode(json.dumps(value)))


def _scalar_text(value: Any) -> str:
    """A string's characters, or any other value's JSON."""
    return value if isinstance(value, str) else _text(value)


def _bad(kind: str) -> SqlError:
    return SqlError(f"Failed to convert to {kind}: InvalidCast")


def _as_string(v: Any) -> str:
    if isinstance(v, (dict, list)):
        raise _bad("string")
    return _scalar_text(v)


def _as_int(v: Any) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v + 0.5) if v >= 0 else -int(-v + 0.5)  # half away from zero
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            pass
    raise _bad("integer")


def _as_float(v: Any) -> float:
    if isinstance(v, (bool, int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            pass
    raise _bad("float")


def _as_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if v in ("true", "false"):
        return bool(v == "true")
    raise _bad("boolean")


def _each(docs: pa.Array, fn: Callable[[Any], Any]) -> list[Any]:
    return [None if d is None else fn(_load(d)) for d in docs.to_pylist()]


def _doc(t: Translator, node: exp.Expr, v: Val) -> Val:
    """The document argument as text or JSONB bytes (an ``arrow.json`` column as its text)."""
    typ = v.type.storage_type if isinstance(v.type, pa.BaseExtensionType) else v.type
    if not (pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_large_binary(typ)):
        raise t.error(f"{node.name} needs a JSON value, not {v.type}", node)
    return t.cast(v, typ, node) if typ != v.type else v


def _literal(t: Translator, node: exp.Expr, v: Val, what: str) -> str:
    if v.const is None or not isinstance(v.const.as_py(), str):
        raise t.error(f"the {what} of {node.name} must be a string literal", node)
    return str(v.const.as_py())


def _call(t: Translator, node: exp.Expr, doc: Val, name: str, out: pa.DataType, fn: Callable[[Any], Any]) -> Val:
    """``fn`` of each document's value (``_MISSING`` results and JSON nulls as null)."""
    key = f"lancelot_json_{name}<{doc.type}|{out}>"

    def impl(docs: pa.Array) -> pa.Array:
        return pa.array(_each(docs, fn), out)

    return t.call(register(key, {"doc": doc.type}, out, impl), [doc], node)


def _missing_null(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda v: None if v is _MISSING else fn(v)


def json_extract(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 2)
    steps = _path(_literal(t, node, args[1], "path"), t, node)
    return _call(
        t, node, _doc(t, node, args[0]), f"extract{steps}", pa.utf8(), lambda v: _missing_null(_text)(_walk(v, steps))
    )


def json_exists(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 2)
    steps = _path(_literal(t, node, args[1], "path"), t, node)
    return _call(
        t, node, _doc(t, node, args[0]), f"exists{steps}", pa.bool_(), lambda v: _walk(v, steps) is not _MISSING
    )


def json_get(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 2)
    key = _literal(t, node, args[1], "key")

    def get(v: Any) -> bytes | None:
        m = _member(v, key)
        return None if m is _MISSING else jsonb.encode(json.dumps(m))

    return _call(t, node, _doc(t, node, args[0]), f"get[{key!r}]", pa.large_binary(), get)


def _get_as(
    kind: str, out: pa.DataType, convert: Callable[[Any], Any]
) -> Callable[[Translator, exp.Expr, list[Val]], Val]:
    def fn(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
        arity(t, node, args, 2)
        key = _literal(t, node, args[1], "key")

        def get(v: Any) -> Any:
            m = _member(v, key)
            return None if m is _MISSING or m is None else convert(m)

        return _call(t, node, _doc(t, node, args[0]), f"get_{kind}[{key!r}]", out, get)

    return fn


def json_array_contains(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 3)
    steps = _path(_literal(t, node, args[1], "path"), t, node)
    wanted = _literal(t, node, args[2], "value")

    def contains(v: Any) -> bool:
        arr = _walk(v, steps)
        return isinstance(arr, list) and any(_scalar_text(e) == wanted for e in arr)

    return _call(t, node, _doc(t, node, args[0]), f"array_contains{steps}[{wanted!r}]", pa.bool_(), contains)


def json_array_length(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 2)
    steps = _path(_literal(t, node, args[1], "path"), t, node)

    def length(v: Any) -> int | None:
        arr = _walk(v, steps)
        return None if arr is _MISSING else len(arr) if isinstance(arr, list) else 0

    return _call(t, node, _doc(t, node, args[0]), f"array_length{steps}", pa.int64(), length)


JSON_FUNCTIONS: dict[str, Callable[[Translator, exp.Expr, list[Val]], Val]] = {
    "json_extract": json_extract,
    "json_exists": json_exists,
    "json_get": json_get,
    "json_get_string": _get_as("string", pa.utf8(), _as_string),
    "json_get_int": _get_as("int", pa.int64(), _as_int),
    "json_get_float": _get_as("float", pa.float64(), _as_float),
    "json_get_bool": _get_as("bool", pa.bool_(), _as_bool),
    "json_array_contains": json_array_contains,
    "json_array_length": json_array_length,
}
