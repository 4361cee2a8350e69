"""From decoded data blocks to Arrow leaf arrays.

A compressive encoding gives back a DataBlock (compression/block.py) holding
the *visible* items of a page or chunk; the structural layer turns it into an
Arrow array of the leaf type (no validity yet: that comes from the definition
levels, see ``with_validity``).  Mini-block dictionaries (MiniBlockLayout
buffer 2) and constant-layout scalars are decoded here too.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.encodings.compression import block as blocks
from lancelot.encodings.compression import variable_kernel as vk
from lancelot.errors import CorruptFileError, UnsupportedEncodingError
from lancelot.util.arrays import arrow_offsets, empty, from_numpy, numpy_dtype
from lancelot.util.jit import NumpyUntilHot
from lancelot.util.types import is_plain_fixed


def _bitmap(valid: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(np.packbits(np.asarray(valid, dtype=bool), bitorder="little"))


def bit_width(t: pa.DataType) -> int:
    """Bits per value of a fixed-width Arrow type (1 for booleans)."""
    if pa.types.is_boolean(t):
        return 1
    try:
        return int(t.bit_width)
    except ValueError:
        raise UnsupportedEncodingError(f"type {t} is not fixed-width") from None


def _storage(t: pa.DataType) -> pa.DataType:
    return t.storage_type if isinstance(t, pa.ExtensionType) else t


def _fixed(block: blocks.FixedWidthBlock, t: pa.DataType) -> pa.Array:
    bits = bit_width(t)
    n = block.num_values
    if bits == 1 and block.bits_per_value == 8:  # full-zip keeps booleans one per byte
        if len(block.data) < n:
            raise CorruptFileError(f"{n} byte-wide booleans need {n} bytes, block holds {len(block.data)}")
        packed = np.packbits(np.asarray(block.data[:n]) != 0, bitorder="little")
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(packed)])
    if block.bits_per_value != bits:
        raise CorruptFileError(f"values of {block.bits_per_value} bits cannot be {t} ({bits} bits)")
    need = (n * bits + 7) // 8
    if len(block.data) < need:
        raise CorruptFileError(f"{n} values of {bits} bits need {need} bytes, block holds {len(block.data)}")
    return pa.Array.from_buffers(t, n, [None, pa.py_buffer(block.data[:need])])


def _variable(block: blocks.VariableWidthBlock, t: pa.DataType) -> pa.Array:
    n = block.num_values
    offsets = np.asarray(block.offsets)
    if len(offsets) < n + 1:
        raise CorruptFileError(f"{n} variable-width values need {n + 1} offsets, block has {len(offsets)}")
    offsets = offsets[: n + 1]
    if block.ordered:
        increasing = True
    elif n <= 64:  # a take's few values: the checks in Python lists
        listed = offsets.tolist()
        increasing = all(a <= b for a, b in zip(listed, listed[1:]))
    else:
        increasing = not np.any(offsets[1:] < offsets[:-1])
    if n and (not increasing or int(offsets[-1]) > len(block.data)):
        raise CorruptFileError("variable-width offsets are not increasing or point past the data")
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    if not large and n and int(offsets[-1]) - int(offsets[0]) >= 1 << 31:
        raise UnsupportedEncodingError(f"{t} values of more than 2 GiB in one page; read as large_{t}")
    base = int(offsets[0]) if n else 0
    data = block.data[base : int(offsets[-1])] if n else block.data[:0]
    out = empty(n + 1, np.int64 if large else np.int32)
    if base:
        np.subtract(offsets, base, out=out, casting="unsafe")
    else:
        np.copyto(out, offsets, casting="unsafe")
    return pa.Array.from_buffers(t, n, [None, pa.py_buffer(out), pa.py_buffer(np.ascontiguousarray(data))])


def _constant(block: blocks.ConstantBlock, t: pa.DataType) -> pa.Array:
    if block.value is None:
        return pa.nulls(block.num_values, t)
    one = scalar_from_bytes(block.value, t)
    return pa.repeat(one, block.num_values) if block.num_values else one.slice(0, 0)


def block_to_arrow(block: blocks.DataBlock, t: pa.DataType) -> pa.Array:
    """The Arrow array of type ``t`` holding the block's values (no validity)."""
    st = _storage(t)
    if isinstance(block, blocks.ConstantBlock):
        arr = _constant(block, st)
    elif pa.types.is_null(st):
        arr = pa.nulls(block.num_values)
    elif pa.types.is_fixed_size_list(st) and isinstance(block, blocks.FixedSizeListBlock):
        if block.dimension != st.list_size:
            raise CorruptFileError(f"fixed-size list of {block.dimension} items cannot be {st}")
        child = block_to_arrow(block.child, st.value_type)
        if block.validity is not None:
            child = with_validity(child, block.validity[: len(child)])
        arr = pa.FixedSizeListArray.from_arrays(child, type=st)
    elif pa.types.is_struct(st) and isinstance(block, blocks.StructBlock):
        if len(block.children) != st.num_fields:
            raise CorruptFileError(f"packed struct of {len(block.children)} fields cannot be {st}")
        children = [block_to_arrow(c, st.field(i).type) for i, c in enumerate(block.children)]
        if st.num_fields == 0:
            arr = pa.Array.from_buffers(st, block.num_values, [None])
        else:
            arr = pa.StructArray.from_arrays(children, fields=list(st))
    elif isinstance(block, blocks.VariableWidthBlock):
        if not (
            pa.types.is_string(st)
            or pa.types.is_binary(st)
            or pa.types.is_large_string(st)
            or pa.types.is_large_binary(st)
        ):
            raise CorruptFileError(f"variable-width values cannot be {st}")
        arr = _variable(block, st)
    elif isinstance(block, blocks.FixedWidthBlock):
        arr = _fixed(block, st)
    else:
        raise UnsupportedEncodingError(f"a {type(block).__name__} cannot be read as {st}")
    if st is not t:
        arr = pa.ExtensionArray.from_storage(t, arr)
    return arr


def indices_to_numpy(block: blocks.DataBlock) -> np.ndarray:
    """Dictionary indices (a fixed-width block of unsigned ints) as int64."""
    if isinstance(block, blocks.ConstantBlock):
        v = int.from_bytes(block.value or b"\0", "little")
        return np.full(block.num_values, v, dtype=np.int64)
    if not isinstance(block, blocks.FixedWidthBlock) or block.bits_per_value not in (8, 16, 32, 64):
        raise CorruptFileError("dictionary indices must be 8, 16, 32 or 64-bit integers")
    dt = np.dtype(f"<u{block.bits_per_value // 8}")
    need = block.num_values * dt.itemsize
    if len(block.data) < need:
        raise CorruptFileError("dictionary indices are truncated")
    raw = np.ascontiguousarray(block.data[:need])
    return raw.view(dt).astype(np.int64)


def out_of_range(indices: np.ndarray, n: int) -> np.ndarray | None:
    """Which dictionary indices fall outside ``[0, n)``, or None when none does (two reductions
    rather than three full-size passes in the common case)."""
    if not len(indices) or (int(indices.min()) >= 0 and int(indices.max()) < n):
        return None
    bad: np.ndarray = (indices < 0) | (indices >= n)
    return bad


def apply_dictionary(indices: np.ndarray, dictionary: pa.Array, t: pa.DataType) -> pa.Array:
    """Look indices up in a page dictionary; a dictionary-typed field keeps the encoding.

    Out-of-range indices (which pylance leaves under null items) read as nulls, so
    an empty dictionary serves null items only; the structural layer checks that
    every such slot is a null item (``check_dictionary_slots``).
    """
    n = len(dictionary)
    if n == 0:
        if pa.types.is_dictionary(t):
            return pa.DictionaryArray.from_arrays(pa.nulls(len(indices), t.index_type), dictionary)
        return pa.nulls(len(indices), t)
    bad = out_of_range(indices, n)
    idx = indices if bad is None else np.where(bad, 0, indices)
    if pa.types.is_dictionary(t):
        return pa.DictionaryArray.from_arrays(from_numpy(idx.astype(numpy_dtype(t.index_type)), mask=bad), dictionary)
    rows = fixed_rows(dictionary)
    if rows is not None:  # numpy gathers fixed-width items several times faster than Arrow's take
        validity = None if bad is None else _bitmap(~bad)
        out = np.take(rows, idx, axis=0)
        return pa.Array.from_buffers(dictionary.type, len(idx), [validity, pa.py_buffer(out)])
    if len(idx) >= GATHER_MIN_ROWS:
        looked_up = _dictionary_strings(dictionary, idx, bad)
        if looked_up is not None:
            return looked_up
    return dictionary.take(from_numpy(idx, mask=bad))


#: dictionary lookups of at least this many rows of strings or binaries gather the bytes themselves
#: (variable_kernel.gather_values: 8 bytes at a time, about 5x faster than Arrow's take)
GATHER_MIN_ROWS = 4096
HOT_GATHER = NumpyUntilHot(vk.gather_values, warm_work=16 << 20)


def _dictionary_strings(dictionary: pa.Array, idx: np.ndarray, bad: np.ndarray | None) -> pa.Array | None:
    """``dictionary.take(idx)`` (``bad`` rows null) for a string or binary dictionary without nulls,
    built from its buffers by the kernel; None when it does not apply, or while the kernel is not
    loaded (a fresh process: Arrow's take, 6x faster than a numpy gather of the bytes)."""
    t = dictionary.type
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    if dictionary.null_count or not (large or pa.types.is_string(t) or pa.types.is_binary(t)):
        return None
    offs = arrow_offsets(dictionary).astype(np.int64)
    data_buf = dictionary.buffers()[2]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    starts = np.ascontiguousarray(offs[:-1])
    if not HOT_GATHER.ready():
        z = np.zeros(0, np.int64)
        HOT_GATHER.numpy_call(
            lambda: vk.gather_values(data, starts, z, np.zeros(1, np.int64), np.zeros(8, np.uint8), 0),
            work=len(idx) * 8,
        )
        return None
    lens = offs[1:] - offs[:-1]
    out_lens = lens[idx]
    if bad is not None:
        out_lens[bad] = 0
    n = len(idx)
    out_offs = empty(n + 1, np.int64)
    out_offs[0] = 0
    np.cumsum(out_lens, out=out_offs[1:])
    total = int(out_offs[-1])
    if not large and total >= 2**31:
        return None  # Arrow's take says what it does with that
    longest = int(lens.max()) if len(lens) else 0
    words = -(-longest // 8) if longest <= 32 and len(data) <= max(n, 1 << 16) else 0
    if words:  # short values: each copied as a fixed number of words from a padded copy
        data = np.concatenate([data, np.zeros(8 * words, np.uint8)])
    out = empty(total + 8 * max(words, 1), np.uint8)
    vk.gather_values(data, starts, np.ascontiguousarray(idx, dtype=np.int64), out_offs, out, words)
    out = out[:total]
    if large:
        offsets = out_offs
    else:
        offsets = empty(n + 1, np.int32)
        np.copyto(offsets, out_offs, casting="unsafe")
    validity = None if bad is None else _bitmap(~bad)
    nulls = 0 if bad is None else int(bad.sum())
    return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(offsets), pa.py_buffer(out)], null_count=nulls)


def fixed_rows(arr: pa.Array) -> np.ndarray | None:
    """The items of a whole-byte fixed-width array without nulls as an (n, k) array of words."""
    t = arr.type
    if arr.null_count or pa.types.is_boolean(t) or isinstance(t, pa.ExtensionType) or pa.types.is_dictionary(t):
        return None
    try:
        nb = t.bit_width // 8
    except ValueError:
        return None
    if nb == 0 or t.bit_width % 8 or len(arr.buffers()) != 2:
        return None
    word = next(w for w in (8, 4, 2, 1) if nb % w == 0)
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * nb : (arr.offset + len(arr)) * nb]
    return raw.view(f"<u{word}").reshape(len(arr), nb // word)


class PageDictionary:
    """A mini-block page's dictionary (MiniBlockLayout buffer 2) as decoded, its Arrow array made on
    first need: a take of a few rows gathers its items from the block itself (``words``, ``lists``).
    A block that would not make an Arrow array of ``t`` raises here, as ``block_to_arrow`` does."""

    def __init__(self, block: blocks.DataBlock, t: pa.DataType) -> None:
        self.block, self.type, self.size = block, t, block.num_values
        self._arrow: pa.Array | None = None
        self._words: np.ndarray | None = None
        #: "words" (whole-byte fixed-width items), "strings" (string or binary) or "" (the array is made now)
        self.kind = ""
        n = block.num_values
        if isinstance(block, blocks.FixedWidthBlock) and is_plain_fixed(t) and t.bit_width % 8 == 0:
            nb = t.bit_width // 8
            if block.bits_per_value == t.bit_width and len(block.data) >= n * nb and n:
                w = next(w for w in (8, 4, 2, 1) if nb % w == 0)
                self._words = np.ascontiguousarray(block.data[: n * nb]).view(f"<u{w}").reshape(n, nb // w)
                self.kind = "words"
                return
        elif isinstance(block, blocks.VariableWidthBlock) and (pa.types.is_string(t) or pa.types.is_binary(t)):
            offsets = block.offsets
            if block.ordered and len(offsets) > n and int(offsets[n]) <= len(block.data) and int(offsets[n]) < 1 << 31:
                self.kind = "strings"
                return
        self._arrow = block_to_arrow(block, t)

    def __len__(self) -> int:
        return self.size

    @property
    def arrow(self) -> pa.Array:
        if self._arrow is None:
            self._arrow = block_to_arrow(self.block, self.type)
        return self._arrow

    def words(self) -> np.ndarray | None:
        """Its items as an (n, k) array of words (``fixed_rows``), or None."""
        if self.kind:
            return self._words
        return fixed_rows(self.arrow) if self.size else None

    def lists(self) -> tuple[list[int], memoryview]:
        """A "strings" dictionary's offsets and bytes."""
        b = self.block
        assert isinstance(b, blocks.VariableWidthBlock)
        return np.asarray(b.offsets[: self.size + 1]).tolist(), np.ascontiguousarray(b.data).data


def check_dictionary_slots(values: pa.Array, item_valid: np.ndarray | None) -> None:
    """Dictionary lookups that found nothing (nulls in ``values``) must be null items."""
    if values.null_count == 0:
        return
    missing = np.asarray(values.is_null())
    if item_valid is None or bool(np.any(missing & item_valid)):
        raise CorruptFileError("dictionary index beyond the page's dictionary items")


def leaf_value_type(t: pa.DataType) -> pa.DataType:
    """The type the stored values have (a dictionary field stores its value type)."""
    return t.value_type if pa.types.is_dictionary(t) else t


def values_to_arrow(block: blocks.DataBlock, t: pa.DataType) -> pa.Array:
    """Stored values (no dictionary involved) as an array of field type ``t``."""
    if pa.types.is_dictionary(t):
        return block_to_arrow(block, t.value_type).dictionary_encode().cast(t)
    return block_to_arrow(block, t)


def with_validity(arr: pa.Array, valid: np.ndarray | None) -> pa.Array:
    """``arr`` with the given validity (True = valid); None leaves it as is."""
    if valid is None:
        return arr
    valid = np.asarray(valid, dtype=bool)
    if len(valid) != len(arr):
        raise CorruptFileError(f"{len(valid)} validity bits for {len(arr)} values")
    if valid.all() and arr.null_count == 0:
        return arr
    t = arr.type
    if pa.types.is_null(t):
        return arr
    if pa.types.is_dictionary(t):
        ind = with_validity(arr.indices, valid)
        return pa.DictionaryArray.from_arrays(ind, arr.dictionary)
    if arr.null_count:
        valid = valid & np.asarray(arr.is_valid(), dtype=bool)
    simple = (
        pa.types.is_primitive(t)
        or pa.types.is_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_string(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_decimal(t)
    )
    if simple and not isinstance(t, pa.ExtensionType):
        off = arr.offset
        if off:
            valid = np.concatenate([np.zeros(off, dtype=bool), valid])
        bufs = arr.buffers()
        return pa.Array.from_buffers(t, len(arr), [_bitmap(valid), *bufs[1:]], offset=off)
    if pa.types.is_struct(t) and not isinstance(t, pa.ExtensionType):
        children = [arr.field(i) for i in range(t.num_fields)]
        if not children:
            return pa.Array.from_buffers(t, len(arr), [_bitmap(valid)])
        return pa.StructArray.from_arrays(children, fields=list(t), mask=from_numpy(~valid))
    return pc.if_else(from_numpy(valid), arr, pa.scalar(None, type=t))


def scalar_from_bytes(raw: bytes, t: pa.DataType) -> pa.Array:
    """One value of fixed-width type ``t`` from its little-endian bytes (length-1 array)."""
    if pa.types.is_fixed_size_list(t):
        child = scalar_run(raw, t.value_type, t.list_size)
        return pa.FixedSizeListArray.from_arrays(child, type=t)
    return scalar_run(raw, t, 1)


def scalar_run(raw: bytes, t: pa.DataType, n: int) -> pa.Array:
    """``n`` consecutive fixed-width values of type ``t`` from ``raw``."""
    if pa.types.is_fixed_size_list(t):
        child = scalar_run(raw, t.value_type, n * t.list_size)
        return pa.FixedSizeListArray.from_arrays(child, type=t)
    bits = bit_width(t)
    need = (n * bits + 7) // 8
    if len(raw) != need:  # pylance stores exactly one value's bytes
        raise CorruptFileError(f"constant value of {len(raw)} bytes for {n} x {t} (needs {need})")
    return pa.Array.from_buffers(t, n, [None, pa.py_buffer(bytes(raw[:need]))])
