"""Zero-copy views of Arrow array buffers, shared by the 2.0 and 2.1+ writers."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: numpy arrays of at least this many bytes are allocated from pyarrow's memory pool (``empty``)
POOL_MIN_BYTES = 1 << 17


def empty(n: int, dtype: np.dtype | type = np.uint8) -> np.ndarray:
    """``np.empty(n, dtype)``; one of 128 KiB or more lives in a buffer of pyarrow's memory pool
    (mimalloc or jemalloc), which keeps freed pages for the next allocation: glibc serves numpy's
    large arrays as fresh mmaps (from 128 KiB on, until a free raises its threshold) whose every
    4 KiB page faults in when first written, a cost every large read would pay again.  64-byte
    aligned."""
    dtype = np.dtype(dtype)
    nbytes = int(n) * dtype.itemsize
    if nbytes < POOL_MIN_BYTES:
        return np.empty(n, dtype)
    return np.frombuffer(pa.allocate_buffer(nbytes), dtype, count=int(n))


def numpy_dtype(t: pa.DataType) -> np.dtype:
    """The numpy dtype of an integer, floating-point or boolean Arrow type (``t.to_pandas_dtype()``
    without pandas: on pyarrow 17 that method imports pandas, which the core does not depend on)."""
    if pa.types.is_boolean(t):
        return np.dtype(bool)
    if pa.types.is_floating(t):
        return np.dtype(f"f{t.bit_width // 8}")
    if pa.types.is_integer(t):
        return np.dtype(f"{'i' if pa.types.is_signed_integer(t) else 'u'}{t.bit_width // 8}")
    raise TypeError(f"no numpy dtype for Arrow type {t}")


def is_large(t: pa.DataType) -> bool:
    """A type with 64-bit offsets (large string/binary/list)."""
    return t.id in _LARGE_IDS  # (pa.types' tests compare ids: one lookup, asked per page and column)


_LARGE_IDS = {pa.lib.Type_LARGE_STRING, pa.lib.Type_LARGE_BINARY, pa.lib.Type_LARGE_LIST}


def arrow_offsets(arr: pa.Array) -> np.ndarray:
    """The len+1 offsets of a variable-width or list array, its slice offset applied (not rebased)."""
    dtype = np.int64 if is_large(arr.type) else np.int32
    return np.frombuffer(arr.buffers()[1], dtype)[arr.offset : arr.offset + len(arr) + 1]


def from_numpy(values: np.ndarray, type: pa.DataType | None = None, mask: np.ndarray | None = None) -> pa.Array:
    """``pa.array(values, type, mask=mask)`` for a 1-D numpy array of numbers or booleans, built from its
    buffers: ``pa.array`` on a numpy array imports pandas when it is installed (pyarrow's pandas
    checks), which a fresh process's first read would pay for.  Other inputs go to ``pa.array``."""
    values = np.asarray(values)
    natural = None
    if values.ndim == 1 and values.dtype.kind in "iufb" and values.dtype.byteorder in "=|<":
        natural = pa.bool_() if values.dtype.kind == "b" else pa.from_numpy_dtype(values.dtype)
    if natural is None or (type is not None and type != natural):
        if natural is not None and type is not None and _fits(values, type):
            return from_numpy(values.astype(numpy_dtype(type)), None, mask)
        return pa.array(values, type, mask=mask)
    n = len(values)
    validity, nulls = None, 0
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        nulls = int(mask.sum())
        if nulls:
            validity = pa.py_buffer(np.packbits(~mask, bitorder="little"))
    if values.dtype.kind == "b":
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
    else:
        data = pa.py_buffer(np.ascontiguousarray(values))
    return pa.Array.from_buffers(natural, n, [validity, data], null_count=nulls)


def to_numpy(arr: pa.Array) -> np.ndarray:
    """``arr.to_numpy(zero_copy_only=False)``, read straight from the buffers of a null-free integer,
    floating-point or boolean array (pyarrow's conversion imports pandas: see ``from_numpy``)."""
    t = arr.type
    if arr.null_count == 0 and pa.types.is_boolean(t):
        n, first = len(arr), arr.offset
        if not n:
            return np.zeros(0, bool)
        bits = np.frombuffer(arr.buffers()[1], np.uint8)[first // 8 : (first + n + 7) // 8 + 1]
        return np.unpackbits(bits, bitorder="little")[first % 8 : first % 8 + n].view(bool)
    if arr.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)) and len(arr.buffers()) == 2:
        dtype = numpy_dtype(t)
        return (
            np.frombuffer(arr.buffers()[1], dtype, count=len(arr), offset=arr.offset * dtype.itemsize)
            if len(arr)
            else np.zeros(0, dtype)
        )
    values: np.ndarray = arr.to_numpy(zero_copy_only=False)
    return values


def zero(t: pa.DataType) -> pa.Scalar:
    """The zero (False for booleans) of a fixed-width type as an Arrow scalar, e.g. for ``pc.fill_null``:
    a Python value there becomes ``pa.scalar(value)``, which imports pandas (see ``from_numpy``)."""
    return pa.Array.from_buffers(t, 1, [None, pa.py_buffer(bytes(max(1, t.bit_width // 8)))])[0]


def _fits(values: np.ndarray, type: pa.DataType) -> bool:
    """Whether integers cast to an integer ``type`` (or floats to a floating one) keep every value (else
    ``pa.array`` is left to raise its error)."""
    if pa.types.is_floating(type):
        return values.dtype.kind == "f"
    if not pa.types.is_integer(type) or values.dtype.kind not in "iu":
        return False
    info = np.iinfo(numpy_dtype(type))
    return not len(values) or (int(values.min()) >= info.min and int(values.max()) <= info.max)


def take_table(t: pa.Table, indices: pa.Array) -> pa.Table:
    """``t.take(indices)``, also where a dictionary column's chunks have unlike dictionaries holding a null (2.0 files'
    dictionaries do), which pyarrow cannot unify: such a column is taken decoded and encoded again."""
    try:
        return t.take(indices)
    except pa.ArrowInvalid:
        if not any(pa.types.is_dictionary(f.type) for f in t.schema):
            raise
    cols = []
    for col in t.columns:
        if pa.types.is_dictionary(col.type):
            taken = col.cast(col.type.value_type).take(indices)
            cols.append(pc.dictionary_encode(taken).cast(col.type))
        else:
            cols.append(col.take(indices))
    return pa.Table.from_arrays(cols, schema=t.schema)


def unified_dictionaries(t: pa.Table) -> pa.Table:
    """``t`` with the chunks of each dictionary column sharing one dictionary (Acero's grouping and sorting need
    it); a column pyarrow cannot unify (a dictionary holding a null value: 2.0 files store null as a dictionary
    item, one dictionary per fragment) is encoded anew from its values."""
    if not any(pa.types.is_dictionary(f.type) for f in t.schema):
        return t
    cols = []
    for f, col in zip(t.schema, t.columns, strict=True):
        if pa.types.is_dictionary(f.type) and col.num_chunks > 1:
            try:
                col = col.unify_dictionaries()
            except pa.ArrowInvalid:
                col = pa.chunked_array(
                    [pc.dictionary_encode(col.cast(f.type.value_type).combine_chunks()).cast(f.type)]
                )
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=t.schema)


def combined(t: pa.Table) -> pa.Table:
    """``t.combine_chunks()``, also when pyarrow cannot unify a dictionary column's chunks
    (``unified_dictionaries``)."""
    try:
        return t.combine_chunks()
    except pa.ArrowInvalid:
        return unified_dictionaries(t).combine_chunks()
