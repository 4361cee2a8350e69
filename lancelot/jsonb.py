"""JSONB: the binary JSON pylance stores for JSON columns (the ``lance.json`` extension).

pylance 14 writes an ``arrow.json`` column (``pa.json_()``) as ``large_binary`` values in the binary
JSON layout of the ``jsonb`` Rust crate (Databend's), logical type ``json``, and turns the values
back into JSON text when a dataset is read.  The layout, as pylance writes it (all integers
big-endian):

* a value is a *container*: a u32 header, whose top 3 bits say scalar (``0x20000000``), array
  (``0x80000000``) or object (``0x40000000``) and whose low 29 bits count the entries (0 for a
  scalar, which holds one); then one u32 *entry* per value (an object: all keys', then all
  values'), whose top 4 bits are the type (null 0, string 1, number 2, false 3, true 4, nested
  container 5) and low 28 bits the payload's length; then the payloads in the same order;
* object keys are sorted by their UTF-8 bytes (duplicate keys are refused);
* a number is a tag byte and its bytes: ``0x00`` zero (no bytes); ``0x50`` a positive integer in
  the fewest of 1, 2, 4 or 8 unsigned bytes; ``0x40`` a negative one in the fewest of 1, 2, 4 or 8
  two's complement bytes; ``0x60`` any other number as an IEEE double (integers beyond 64 bits too).

As text, values are written without spaces, strings with JSON's escapes (other characters as they
are), and doubles in the shortest form that reads back the same: plain decimals (``.0`` added to
whole numbers) for decimal exponents -5 to 15, else ``1.5e-7`` / ``1e+16``.
"""

from __future__ import annotations

import json
import struct
from decimal import Decimal
from typing import Any

import pyarrow as pa

from lancelot.errors import CorruptFileError, LanceError

SCALAR, ARRAY, OBJECT = 0x20000000, 0x80000000, 0x40000000
NULL, STRING, NUMBER, FALSE, TRUE, CONTAINER = 0x00000000, 0x10000000, 0x20000000, 0x30000000, 0x40000000, 0x50000000
_LEN_MASK = 0x0FFFFFFF
_COUNT_MASK = 0x1FFFFFFF
_ZERO, _INT, _UINT, _FLOAT = 0x00, 0x40, 0x50, 0x60


class JsonValueError(LanceError, ValueError):
    """A JSON text that cannot be stored (not JSON, or too large for a JSONB entry)."""


# -- encoding -------------------------------------------------------------------------------


def _number(v: int | float) -> bytes:
    if isinstance(v, int) and not isinstance(v, bool):
        if v == 0:
            return bytes([_ZERO])
        if 0 < v < 1 << 64:
            for width in (1, 2, 4, 8):
                if v < 1 << (8 * width):
                    return bytes([_UINT]) + v.to_bytes(width, "big")
        if -(1 << 63) <= v < 0:
            for width in (1, 2, 4, 8):
                if v >= -(1 << (8 * width - 1)):
                    return bytes([_INT]) + v.to_bytes(width, "big", signed=True)
        v = float(v)
    return bytes([_FLOAT]) + struct.pack(">d", v)


def _entry(v: Any) -> tuple[int, bytes]:
    """(type tag, payload) of one value inside a container."""
    if v is None:
        return NULL, b""
    if v is True:
        return TRUE, b""
    if v is False:
        return FALSE, b""
    if isinstance(v, str):
        return STRING, v.encode("utf-8")
    if isinstance(v, (int, float)):
        return NUMBER, _number(v)
    return CONTAINER, _container(v)


def _pack(header: int, entries: list[tuple[int, bytes]]) -> bytes:
    heads = []
    for tag, payload in entries:
        if len(payload) > _LEN_MASK:
            raise JsonValueError(f"a JSON value of {len(payload)} bytes is too large for a JSONB entry")
        heads.append(tag | len(payload))
    return struct.pack(f">{1 + len(heads)}I", header, *heads) + b"".join(p for _, p in entries)


def _container(v: Any) -> bytes:
    if isinstance(v, list):
        if len(v) > _COUNT_MASK:
            raise JsonValueError(f"a JSON array of {len(v)} values is too long for JSONB")
        return _pack(ARRAY | len(v), [_entry(x) for x in v])
    if isinstance(v, dict):
        keys = sorted((k.encode("utf-8"), k) for k in v)
        if len(keys) > _COUNT_MASK:
            raise JsonValueError(f"a JSON object of {len(keys)} keys is too long for JSONB")
        entries = [(STRING, kb) for kb, _ in keys] + [_entry(v[k]) for _, k in keys]
        return _pack(OBJECT | len(keys), entries)
    raise JsonValueError(f"{type(v).__name__} is no JSON value")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        dup = next(k for i, (k, _) in enumerate(pairs) if any(k == j for j, _ in pairs[:i]))
        raise JsonValueError(f"duplicate object key {dup!r}")
    return out


def encode(text: str) -> bytes:
    """The JSONB of one JSON text (an empty text, ``NaN`` and ``Infinity`` are JSON null, as in pylance)."""
    if not text.strip():
        return _pack(SCALAR, [(NULL, b"")])
    try:
        v = json.loads(text, object_pairs_hook=_pairs, parse_constant=lambda _: None)
    except json.JSONDecodeError as e:
        raise JsonValueError(f"not JSON: {e}") from None
    try:
        if isinstance(v, (list, dict)):
            return _container(v)
        return _pack(SCALAR, [_entry(v)])
    except UnicodeEncodeError as e:
        raise JsonValueError(f"a JSON string is not valid Unicode: {e}") from None


def encode_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """JSON texts (a string array, or an ``arrow.json`` one) as a ``large_binary`` array of JSONB."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    return pa.array([None if t is None else encode(t) for t in arr.to_pylist()], pa.large_binary())


# -- decoding -------------------------------------------------------------------------------


def _float_text(x: float) -> str:
    if x != x or x in (float("inf"), float("-inf")):
        return "null"
    sign, digits, exp = Decimal(repr(x)).as_tuple()
    assert isinstance(exp, int)
    ds = "".join(map(str, digits)).lstrip("0") or "0"
    if ds == "0":
        return "-0.0" if sign else "0.0"
    trailing = len(ds) - len(ds.rstrip("0"))
    ds, exp = ds.rstrip("0"), exp + trailing
    e10 = len(ds) - 1 + exp  # the decimal exponent of d.ddd
    neg = "-" if sign else ""
    if -5 <= e10 < 16:
        if exp >= 0:
            return f"{neg}{ds}{'0' * exp}.0"
        point = len(ds) + exp
        if point > 0:
            return f"{neg}{ds[:point]}.{ds[point:]}"
        return f"{neg}0.{'0' * -point}{ds}"
    mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
    return f"{neg}{mant}e{'+' if e10 >= 0 else '-'}{abs(e10)}"


def _number_text(b: bytes) -> str:
    if not b:
        raise CorruptFileError("JSONB number without bytes")
    tag, rest = b[0], b[1:]
    if tag == _ZERO:
        return "0"
    if tag in (_INT, _UINT) and len(rest) in (1, 2, 4, 8):
        return str(int.from_bytes(rest, "big", signed=tag == _INT))
    if tag == _FLOAT and len(rest) == 8:
        return _float_text(struct.unpack(">d", rest)[0])
    if tag in (0x10, 0x20, 0x30):  # NaN, +inf, -inf: no JSON text
        return "null"
    raise CorruptFileError(f"JSONB number of tag {tag:#x} and {len(rest)} bytes")


def _scalar_text(tag: int, payload: bytes, depth: int) -> str:
    if tag == NULL:
        return "null"
    if tag == TRUE:
        return "true"
    if tag == FALSE:
        return "false"
    if tag == STRING:
        return json.dumps(payload.decode("utf-8", "replace"), ensure_ascii=False)
    if tag == NUMBER:
        return _number_text(payload)
    if tag == CONTAINER:
        return _text(payload, 0, len(payload), depth + 1)
    raise CorruptFileError(f"JSONB entry of unknown type {tag >> 28}")


def _text(buf: bytes, start: int, end: int, depth: int = 0) -> str:
    if depth > 512:
        raise CorruptFileError("JSONB nests deeper than 512 levels")
    if end - start < 4:
        raise CorruptFileError("JSONB value shorter than its header")
    (header,) = struct.unpack_from(">I", buf, start)
    kind, count = header & 0xE0000000, header & _COUNT_MASK
    n = 1 if kind == SCALAR else 2 * count if kind == OBJECT else count
    if kind not in (SCALAR, ARRAY, OBJECT) or start + 4 + 4 * n > end:
        raise CorruptFileError("JSONB container header does not fit its value")
    heads = struct.unpack_from(f">{n}I", buf, start + 4)
    pos = start + 4 + 4 * n
    parts: list[tuple[int, bytes]] = []
    for h in heads:
        ln = h & _LEN_MASK
        if pos + ln > end:
            raise CorruptFileError("JSONB entry runs past its value")
        parts.append((h & 0x70000000, buf[pos : pos + ln]))
        pos += ln
    if kind == SCALAR:
        return _scalar_text(*parts[0], depth)
    if kind == ARRAY:
        return "[" + ",".join(_scalar_text(t, p, depth) for t, p in parts) + "]"
    keys = [json.dumps(p.decode("utf-8", "replace"), ensure_ascii=False) for _, p in parts[:count]]
    vals = [_scalar_text(t, p, depth) for t, p in parts[count:]]
    return "{" + ",".join(f"{k}:{v}" for k, v in zip(keys, vals)) + "}"


def decode(value: bytes) -> str:
    """The JSON text of one JSONB value, as pylance gives it."""
    return _text(value, 0, len(value))


def decode_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """JSONB values as an ``arrow.json`` array (string storage), as pylance's dataset reads return them."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    texts = pa.array([None if v is None else decode(v) for v in arr.to_pylist()], pa.string())
    return pa.ExtensionArray.from_storage(pa.json_(), texts)
