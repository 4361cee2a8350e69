"""Seeded generators of Arrow arrays for any type, with a chosen null pattern.

``gen_array(type, n, nulls, rng)`` where nulls is "none", "some" or "all"; nested types recurse, so lists get empty and
null lists, structs null children. Used by the conformance tests against pylance and by the benchmarks."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def _mask(n: int, nulls: str, rng: np.random.Generator) -> np.ndarray | None:
    if nulls == "none" or n == 0:
        return None
    if nulls == "all":
        return np.ones(n, bool)
    return rng.random(n) < 0.3


def _words(n: int, rng: np.random.Generator, max_len: int = 12) -> list[str]:
    alphabet = np.array(list("abcdefghijklmnopqrstuvwxyz äöü€"))
    lens = rng.integers(0, max_len + 1, n)
    chars = rng.choice(alphabet, lens.sum())
    out, pos = [], 0
    for ln in lens.tolist():
        out.append("".join(chars[pos : pos + ln]))
        pos += ln
    return out


def gen_array(
    t: pa.DataType,
    n: int,
    nulls: str = "some",
    rng: np.random.Generator | None = None,
    child_nulls: str | None = None,
    null_structs: bool = True,
) -> pa.Array:
    """A seeded array of type ``t`` and length ``n`` with the given null pattern.

    ``null_structs=False`` keeps every struct valid (file version 2.0 holds no null structs); their children still
    follow the pattern."""
    rng = rng or np.random.default_rng(0)
    child_nulls = child_nulls or nulls
    if pa.types.is_struct(t) and not null_structs:
        nulls = "none"
    mask = _mask(n, nulls, rng)
    m = None if mask is None else pa.array(mask)
    if pa.types.is_null(t):
        return pa.nulls(n)
    if pa.types.is_boolean(t):
        return pa.array(rng.random(n) < 0.5, mask=mask)
    if pa.types.is_integer(t):
        info = np.iinfo(t.to_pandas_dtype())
        lo, hi = max(info.min, -(10**6)), min(info.max, 10**6)
        return pa.array(rng.integers(lo, hi, n, endpoint=True).astype(t.to_pandas_dtype()), type=t, mask=mask)
    if pa.types.is_floating(t):
        vals = rng.normal(0, 1000, n)
        if pa.types.is_float16(t):
            return pa.array(vals.astype(np.float16), type=t, mask=mask)
        return pa.array(vals.astype(t.to_pandas_dtype()), type=t, mask=mask)
    if pa.types.is_decimal(t):
        scale = t.scale
        ints = rng.integers(-(10**6), 10**6, n)
        decimals = [decimal.Decimal(int(i)).scaleb(-scale) for i in ints]
        return pa.array(decimals, type=t, mask=mask)
    if pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t):
        storage = pa.int32() if t.bit_width == 32 else pa.int64()
        hi = {
            pa.time32("s"): 86399,
            pa.time32("ms"): 86399999,
            pa.time64("us"): 86399999999,
            pa.time64("ns"): 86399999999999,
        }.get(t, 10**9)
        ticks = rng.integers(0, hi, n)
        if getattr(t, "unit", "") == "ns":
            ticks = ticks // 1000 * 1000  # keep values convertible to datetime for readable diffs
        return pa.array(ticks, type=storage, mask=mask).cast(t)
    if pa.types.is_fixed_size_binary(t):
        raw = rng.integers(0, 256, n * t.byte_width, dtype=np.uint8).tobytes()
        return pa.array([raw[i * t.byte_width : (i + 1) * t.byte_width] for i in range(n)], type=t, mask=mask)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.array(_words(n, rng), type=t, mask=mask)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.array([w.encode() for w in _words(n, rng)], type=t, mask=mask)
    if pa.types.is_dictionary(t):
        values = gen_array(t.value_type, 5, "none", rng)
        idx = pa.array(rng.integers(0, 5, n), type=t.index_type, mask=mask)
        return pa.DictionaryArray.from_arrays(idx, values)
    if pa.types.is_fixed_size_list(t):
        items = gen_array(t.value_type, n * t.list_size, child_nulls, rng, null_structs=null_structs)
        return pa.FixedSizeListArray.from_arrays(items, type=t, mask=m)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        lens = rng.integers(0, 4, n)
        offsets = np.concatenate([[0], np.cumsum(lens)])
        if pa.types.is_map(t):
            keys = gen_array(t.key_type, int(offsets[-1]), "none", rng)
            items = gen_array(t.item_type, int(offsets[-1]), child_nulls, rng, null_structs=null_structs)
            return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), keys, items, type=t, mask=m)
        items = gen_array(t.value_type, int(offsets[-1]), child_nulls, rng, null_structs=null_structs)
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        off_t = pa.int64() if pa.types.is_large_list(t) else pa.int32()
        return cls.from_arrays(pa.array(offsets, off_t), items, type=t, mask=m)
    if pa.types.is_struct(t):
        kids = [
            gen_array(
                t.field(i).type, n, child_nulls if t.field(i).nullable else "none", rng, null_structs=null_structs
            )
            for i in range(t.num_fields)
        ]
        return pa.StructArray.from_arrays(kids, fields=list(t), mask=m)
    raise NotImplementedError(f"no generator for {t}")


def gen_table(schema: pa.Schema, n: int, nulls: str = "some", seed: int = 0, null_structs: bool = True) -> pa.Table:
    rng = np.random.default_rng(seed)
    cols = [gen_array(f.type, n, nulls if f.nullable else "none", rng, null_structs=null_structs) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


def logical(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """Dictionary arrays decoded to their values (for comparing what readers return)."""
    if pa.types.is_dictionary(col.type):
        return pc.cast(col, col.type.value_type)
    return col


def tables_equal(a: pa.Table, b: pa.Table) -> bool:
    """Equal values and types, dictionary columns compared by value."""
    if a.column_names != b.column_names or a.num_rows != b.num_rows:
        return False
    return all(logical(a[c]).equals(logical(b[c])) for c in a.column_names)
