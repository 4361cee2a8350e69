"""Hypothesis strategies for nested Arrow data rich in empty and null shapes (reusable by others).

``nested_types(version)`` draws lists, large lists, structs and (2.2) maps nested a few levels over small leaves
(vectors and dictionary strings among them); ``nested_values(t)`` draws Python values of such a type where nulls and
empty lists are as likely as items at every level, so batches with no inner item at all (a page with nothing to infer
its items from) come up often; ``nested_tables(version)`` draws a small table of one such column plus an id column, with
the batch sizes to write it in."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from lancelot import versions
from lancelot.versions import FileVersion

LEAVES = [
    pa.int32(),
    pa.int64(),
    pa.string(),
    pa.bool_(),
    pa.float64(),
    pa.large_binary(),
    pa.list_(pa.float32(), 2),
    pa.dictionary(pa.int16(), pa.string()),
]
MAP_KEYS = [pa.string(), pa.int32()]


def nested_types(version: str | FileVersion = "2.2", max_leaves: int = 4) -> st.SearchStrategy[pa.DataType]:
    """Nested types over small leaves (maps only at 2.2, where Lance has them); at least one nested layer."""
    leaves = st.sampled_from(LEAVES)
    maps = versions.parse(version).maps

    def extend(children: st.SearchStrategy[pa.DataType]) -> st.SearchStrategy[pa.DataType]:
        names = st.lists(st.sampled_from("abcde"), min_size=1, max_size=2, unique=True)
        out = (
            st.builds(pa.list_, children)
            | st.builds(pa.large_list, children)
            | st.builds(lambda ns, ts: pa.struct(list(zip(ns, ts))), names, st.lists(children, min_size=2, max_size=2))
        )
        if maps:
            out = out | st.builds(pa.map_, st.sampled_from(MAP_KEYS), children)
        return out

    return st.recursive(leaves, extend, max_leaves=max_leaves).filter(pa.types.is_nested)


def _leaf_values(t: pa.DataType) -> st.SearchStrategy:
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_integer(t):
        return st.integers(-1000, 1000)
    if pa.types.is_floating(t):
        return st.floats(-1e6, 1e6, allow_nan=False)
    if pa.types.is_string(t):
        return st.text("abcxyz", max_size=4)
    return st.binary(max_size=4)


def nested_values(t: pa.DataType, nullable: bool = True, max_len: int = 3) -> st.SearchStrategy:
    """Python values of type ``t``: lists often empty, nulls (where allowed) at every level."""
    inner: st.SearchStrategy[Any]
    empty: st.SearchStrategy[list[Any]]
    if pa.types.is_struct(t):
        inner = st.fixed_dictionaries(
            {t.field(i).name: nested_values(t.field(i).type, t.field(i).nullable, max_len) for i in range(t.num_fields)}
        )
    elif pa.types.is_map(t):
        entry = st.tuples(_leaf_values(t.key_type), nested_values(t.item_type, True, max_len))
        empty = st.just([])
        inner = empty | st.lists(entry, max_size=max_len)
    elif pa.types.is_fixed_size_list(t):
        inner = st.lists(st.none() | _leaf_values(t.value_type), min_size=t.list_size, max_size=t.list_size)
    elif pa.types.is_dictionary(t):
        inner = st.sampled_from(["red", "green", "blue"])
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        empty = st.just([])
        inner = empty | st.lists(nested_values(t.value_type, t.value_field.nullable, max_len), max_size=max_len)
    else:
        inner = _leaf_values(t)
    return (st.none() | inner) if nullable else inner


def _plain(t: pa.DataType) -> pa.DataType:
    """``t`` with dictionaries replaced by their value type."""
    if pa.types.is_dictionary(t):
        return t.value_type
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_plain(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_type, _plain(t.item_type))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_plain(t.value_type)))
    if pa.types.is_list(t) and not pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_plain(t.value_type)))
    return t


def _array(rows: list[Any], t: pa.DataType) -> pa.Array:
    """The values as an array of ``t``; dictionaries are encoded from plain values (pyarrow's converter leaves
    out-of-range indices under null structs)."""
    plain = _plain(t)
    return pa.array(rows, t) if plain == t else pa.array(rows, plain).cast(t)


@st.composite
def nested_tables(draw: st.DrawFn, version: str = "2.2", max_rows: int = 12) -> tuple[pa.Table, list[int]]:
    """A table ``{id: int64, c: <nested>}`` and batch sizes (some batches hold only empty / null rows)."""
    t = draw(nested_types(version))
    rows = draw(st.lists(nested_values(t), min_size=1, max_size=max_rows))
    n = len(rows)
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=3))))
    bounds = [0, *cuts, n]
    sizes = [b - a for a, b in zip(bounds, bounds[1:])]
    table = pa.table({"id": pa.array(range(n), pa.int64()), "c": _array(rows, t)})
    return table, sizes
