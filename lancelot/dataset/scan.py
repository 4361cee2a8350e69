"""Filters on dataset scans: which columns a ``pyarrow.compute.Expression`` needs, and the
simple conjuncts zone maps can use to skip rows (lancelot/zonemaps.py).

pyarrow exposes no walk over an Expression, so both are read from its text form, and
conservatively: a column whose name appears in the text is read; only conjuncts of the
shape ``(column op literal)`` joined by ``and`` are given to zone maps (anything else
prunes nothing).  The filter itself is always applied by pyarrow afterwards.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import pyarrow.compute as pc

if TYPE_CHECKING:
    import pyarrow as pa

_CMP = re.compile(r"^\((\w+) (==|!=|<=|>=|<|>) (.+)\)$")
#: (column, operator, literal) conjunct of a filter, as zone maps take it
ZoneFilter = tuple[str, str, str | int | float]
_OPS = {"==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def check_filter(filter: object, schema: pa.Schema | None = None) -> pc.Expression | None:
    """The filter as an Expression: a SQL string (pylance's filter strings, parsed by
    lancelot.sql against ``schema``), an Expression as is, or None."""
    if filter is None or isinstance(filter, pc.Expression):
        return filter
    if isinstance(filter, str):
        if schema is None:
            raise TypeError("a SQL filter string needs the dataset's schema to be parsed")
        from lancelot.sql import parse_filter

        return parse_filter(filter, schema)
    raise TypeError(f"filter must be a SQL string or a pyarrow.compute.Expression, not {type(filter).__name__}")


def filter_columns(filter: pc.Expression, names: list[str]) -> list[str]:
    """Dataset columns the expression may reference (a superset)."""
    text = str(filter)
    out = []
    for n in names:
        if re.search(r"(?<![\w.])" + re.escape(n) + r"(?![\w])", text) or f"FieldRef.Name({n})" in text:
            out.append(n)
    return out


def _split_and(text: str) -> list[str]:
    """Split ``((x) and (y))`` into its top-level conjuncts."""
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        inner = text[1:-1]
        depth, quote, parts, start, i = 0, False, [], 0, 0
        while i < len(inner):
            ch = inner[i]
            if ch == '"' and (i == 0 or inner[i - 1] != "\\"):
                quote = not quote
            elif not quote:
                if ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                elif depth == 0 and inner.startswith(" and ", i):
                    parts.append(inner[start:i])
                    start = i + 5
                    i += 5
                    continue
            i += 1
        if parts:
            parts.append(inner[start:])
            return [p for part in parts for p in _split_and(part)]
    return [text]


def _literal(text: str) -> str | bool | int | float | None:
    if text.startswith('"') and text.endswith('"'):
        s: str = json.loads(text)  # a JSON string literal
        return s
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


def zone_filters(filter: pc.Expression | None) -> list[ZoneFilter]:
    """(column, op, value) conjuncts of the expression that zone maps understand."""
    if filter is None:
        return []
    out: list[ZoneFilter] = []
    for part in _split_and(str(filter)):
        m = _CMP.match(part.strip())
        if not m:
            continue
        value = _literal(m.group(3))
        if value is None or isinstance(value, bool):
            continue
        out.append((m.group(1), _OPS[m.group(2)], value))
    return out


def apply_filter(table: pa.Table, filter: pc.Expression, where: str) -> pa.Table:
    """``table.filter(filter)``; pyarrow's complaints (unknown column, bad types) as a LanceError."""
    import pyarrow as pa

    from lancelot.errors import LanceError

    try:
        return table.filter(filter)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise LanceError(f"{where}: cannot apply the filter {filter}: {e}") from None
