"""Arrow type predicates and rebuilds that the writers, readers, statistics and SQL layers share
(one definition each: the groups of types the Lance spec treats alike)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa


def is_plain_fixed(t: pa.DataType) -> bool:
    """Numbers, dates and times, decimals and fixed-size binary: a value is ``t.bit_width`` bits in
    one Arrow values buffer (booleans, fixed-size lists and extension types are not)."""
    return bool(
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_temporal(t)
        or pa.types.is_decimal(t)
        or pa.types.is_fixed_size_binary(t)
    )


def is_whole_bytes(t: pa.DataType) -> bool:
    """A plain fixed-width type (``is_plain_fixed``) whose values are whole bytes."""
    return is_plain_fixed(t) and int(t.bit_width) % 8 == 0


def is_variable(t: pa.DataType) -> bool:
    """Strings and binary with offsets, small or large (the views are not: Lance stores them as these)."""
    return t.id in _VARIABLE_IDS  # (pa.types' tests compare ids: one lookup, asked per page and column)


_VARIABLE_IDS = {pa.lib.Type_STRING, pa.lib.Type_BINARY, pa.lib.Type_LARGE_STRING, pa.lib.Type_LARGE_BINARY}


def is_string_like(t: pa.DataType) -> bool:
    """UTF-8 strings: small, large or view."""
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def is_binary_like(t: pa.DataType) -> bool:
    """Variable-width binary: small, large or view (not fixed-size binary)."""
    return bool(pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t))


def is_offsets_list(t: pa.DataType) -> bool:
    """Lists with offsets, small or large (not fixed-size lists, views or maps)."""
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t))


def rebuild(t: pa.DataType, leaf: Callable[[pa.DataType], pa.DataType]) -> pa.DataType:
    """``t`` with ``leaf`` applied to every type below its structs, maps and lists (lists of every
    kind become ``list`` / ``large_list`` / ``fixed_size_list`` again, keeping their item fields)."""
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(rebuild(f.type, leaf)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(rebuild(t.key_type, leaf), rebuild(t.item_type, leaf), t.keys_sorted)
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(rebuild(t.value_type, leaf)), t.list_size)
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(rebuild(t.value_type, leaf)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(rebuild(t.value_type, leaf)))
    return leaf(t)
