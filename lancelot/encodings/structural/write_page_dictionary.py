"""The page dictionary of a mini-block page (encoding.md, "Dictionary Encoding": page buffer 2).

Strings and binary, 128-bit values and, at 2.2, 64-bit values take one when a sample says the cardinality is at
most values / ``dict-divisor`` and the indices (write_fixed.py) plus the dictionary (lz4 at 2.2 when smaller)
are under ``dict-size-ratio`` of the plain size; fields of an Arrow dictionary type always do (indices as wide
as their keys), as pylance reads their pages only as dictionary pages.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.encodings.compression.bitpacking import compress_out_of_line_bitpacking
from lancelot.encodings.compression.block import FixedWidthBlock, VariableWidthBlock
from lancelot.encodings.compression.flat import compress_flat
from lancelot.encodings.compression.general import buffer_compression, compress_buffer, general_encoding
from lancelot.encodings.compression.rle import runs
from lancelot.encodings.compression.variable import compress_variable_block
from lancelot.encodings.compression.write_dictionary import dictionary_encode
from lancelot.encodings.strategy import EncodingOptions
from lancelot.encodings.structural.write_fixed import Compressed, MiniBlockValues, fill_positions, fixed_plan
from lancelot.encodings.structural.write_values import storage, to_block, value_bytes
from lancelot.errors import UnsupportedTypeError
from lancelot.util.arrays import from_numpy, to_numpy, zero
from lancelot.util.types import is_variable

#: dictionaries are considered from this many values on
DICT_MIN_VALUES = 100
#: the cardinality probe: this many values in 32 runs spread over the page; near-unique samples stop it
DICT_SAMPLE = 4096
DICT_SAMPLE_BLOCKS = 32
DICT_SAMPLE_MIN = 1024
DICT_SAMPLE_UNIQUE = 0.98


def _sample_unique_ratio(arr: pa.Array) -> float | None:
    """Distinct share of a sample of DICT_SAMPLE values taken in 32 runs across the page (None: too few)."""
    n = len(arr)
    if n < DICT_SAMPLE_MIN:
        return None
    per = min(n, DICT_SAMPLE) // DICT_SAMPLE_BLOCKS
    starts = np.arange(DICT_SAMPLE_BLOCKS, dtype=np.int64) * n // DICT_SAMPLE_BLOCKS
    idx = (starts[:, None] + np.arange(per)[None, :]).reshape(-1)
    distinct: int = pc.count_distinct(arr.take(from_numpy(idx)), mode="all").as_py()
    return distinct / len(idx)


def _dictionary_block(items: FixedWidthBlock | VariableWidthBlock, opts: EncodingOptions) -> Compressed:
    """The page dictionary in block context: plain, out-of-line bit-packed (integers) or General, the smallest.

    General (lz4 unless ``dict-values-compression`` says otherwise) only at 2.2, as pylance writes it,
    unless the field asks for it.
    """
    if isinstance(items, VariableWidthBlock):
        candidates = [compress_variable_block(items, 8 * items.offsets.dtype.itemsize)]
    else:
        candidates = [compress_flat(items)]
        if items.bits_per_value == 64 and opts.version.compressed_dictionaries:
            candidates.append(compress_out_of_line_bitpacking(items))
    plain_enc, (plain,) = candidates[0]
    scheme = opts.dict_values_compression
    if scheme is None and opts.version.planar:
        scheme = "lz4"  # pylance 14 compresses every 2.3 page dictionary (lz4 unless asked otherwise)
    if scheme != "none" and (scheme is not None or opts.version.compressed_dictionaries):
        level = opts.dict_values_compression_level if scheme == "zstd" else None
        compression = buffer_compression(scheme or "lz4", level)
        general = (general_encoding(compression, plain_enc), [compress_buffer(compression, plain)])
        if scheme is not None:
            return general
        candidates.append(general)
    if scheme == "none":
        return candidates[0]
    return min(candidates, key=lambda c: len(c[1][0]))


def _sorted_runs_dictionary(fixed: FixedWidthBlock, limit: int | None = None) -> pa.DictionaryArray | int | None:
    """The dictionary encoding of sorted 8..64-bit values (ids, keys) from their runs, without hashing: each
    distinct value is one run, so first-appearance order (pc.dictionary_encode's) is run order.  None when
    the values are not sorted; their number of distinct values when it is over ``limit`` (no dictionary)."""
    nb = fixed.bits_per_value // 8
    if nb not in (1, 2, 4, 8) or fixed.num_values < 2:
        return None
    vals = fixed.as_dtype(f"<u{nb}")
    steps = vals[1:] != vals[:-1]
    if not bool(np.all(vals[1:] >= vals[:-1])):
        return None
    distinct = 1 + int(np.count_nonzero(steps))
    if limit is not None and distinct > limit:
        return distinct  # (unique ids: no need to build the dictionary to refuse it)
    run_values, lengths = runs(vals)
    indices = np.repeat(np.arange(len(run_values), dtype=np.int32), lengths)
    return pa.DictionaryArray.from_arrays(from_numpy(indices), from_numpy(run_values))


def _distinct(fixed: FixedWidthBlock) -> int:
    """The number of distinct 8..64-bit values of a block (sorted: a small page's count without a hash
    table); 0 for other widths (not counted here)."""
    nb = fixed.bits_per_value // 8
    if nb not in (1, 2, 4, 8) or fixed.num_values < 2:
        return 0
    vals = np.sort(fixed.as_dtype(f"<u{nb}"))
    return 1 + int(np.count_nonzero(vals[1:] != vals[:-1]))


def _arrow_page_dictionary(values: pa.DictionaryArray) -> pa.DictionaryArray | None:
    """The page dictionary of an Arrow dictionary page as pylance keeps it: the array's own dictionary, unused
    entries included, without null entries (None when a valid index points at one: re-encoded then)."""
    d = values.dictionary
    if not d.null_count:
        return values
    keep = to_numpy(d.is_valid())
    idx = values.indices
    used = np.asarray(to_numpy(pc.fill_null(idx, zero(idx.type))), np.int64)
    valid = to_numpy(idx.is_valid())
    if not bool(np.all(keep[used[valid]])):
        return None
    remap = (np.cumsum(keep) - 1).astype(np.int64)
    new_idx = from_numpy(remap[used], mask=~valid).cast(values.type.index_type)
    return pa.DictionaryArray.from_arrays(new_idx, d.filter(from_numpy(keep)))


def _keys(arr: pa.Array, fixed: FixedWidthBlock | None) -> pa.Array:
    """What a page dictionary of ``arr`` is keyed on: its values, or the bytes of its ``fixed`` block."""
    if fixed is None:
        return arr
    nb = fixed.bits_per_value // 8
    if nb in (1, 2, 4, 8):
        return from_numpy(fixed.as_dtype(f"<u{nb}"))
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(nb), len(arr), [None, pa.py_buffer(np.asarray(fixed.data))])


def dictionary_page(
    values: pa.Array, opts: EncodingOptions, force: bool, fixed: FixedWidthBlock | None
) -> MiniBlockValues | None:
    """A page dictionary with bit-packed / RLE indices, if the page qualifies (see the module docstring)."""
    arr = storage(values)
    n = len(arr)
    variable = is_variable(arr.type)
    if fixed is not None:
        if not force and fixed.bits_per_value not in ((64, 128) if opts.version.dictionary_64bit else (128,)):
            return None
        nb = fixed.bits_per_value // 8
        plain = n * nb
    elif variable:
        plain = value_bytes(arr)
    else:
        return None
    if not force:
        if n < DICT_MIN_VALUES:
            return None
        limit = n // max(opts.dict_divisor, 1)
        if limit == 0 or (n < DICT_SAMPLE_MIN and fixed is not None and _distinct(fixed) > limit):
            return None  # (a small page, unsampled: counted exactly, without hashing)
        ratio = _sample_unique_ratio(_keys(arr, fixed))
        if ratio is not None and (ratio >= DICT_SAMPLE_UNIQUE or np.ceil(ratio * n) > limit):
            return None
    encoded = _arrow_page_dictionary(values) if pa.types.is_dictionary(values.type) else None
    if encoded is not None:
        fixed = None  # the items are the dictionary's values, not keys derived from them
    elif fixed is not None:
        runs_dict = _sorted_runs_dictionary(fixed, None if force else limit)
        if isinstance(runs_dict, int):  # more distinct values than the limit
            return None
        encoded = runs_dict
    if encoded is None:
        encoded = dictionary_encode(_keys(arr, fixed), n if force else limit)
        if encoded is None:  # more distinct values than the limit
            return None
    c = len(encoded.dictionary)
    if not force and c > limit:
        return None
    # indices as wide as the Arrow key type of a dictionary field (pylance checks), else u32
    bits = values.type.index_type.bit_width if pa.types.is_dictionary(values.type) else 32
    if c > (1 << (bits - 1)):
        raise UnsupportedTypeError(f"a page dictionary of {c} items does not fit {values.type.index_type} keys")
    indices = encoded.indices
    if indices.null_count:
        valid = to_numpy(indices.is_valid())
        indices = to_numpy(pc.fill_null(indices, zero(indices.type)))[fill_positions(valid)]
    else:
        indices = to_numpy(indices)
    indices = indices.astype(f"<u{bits // 8}")
    index_block = FixedWidthBlock(indices.view(np.uint8), bits, n)
    index_plan = fixed_plan(index_block, opts)  # the field's settings (rle-threshold...) hold for the indices
    if not force and index_plan.size >= opts.dict_size_ratio * plain:
        return None
    items = to_block(encoded.dictionary)
    assert isinstance(items, FixedWidthBlock | VariableWidthBlock)  # a dictionary of fixed or variable values
    if fixed is not None:
        items = FixedWidthBlock(items.data, fixed.bits_per_value, c)
    dict_enc, (dict_buf,) = _dictionary_block(items, opts)
    size = index_plan.size + len(dict_buf)
    if not force and size >= opts.dict_size_ratio * plain:
        return None
    costs = (
        index_plan.costs
        if index_plan.costs is not None
        else (lambda: np.arange(0, (n + 1) * (bits // 8), bits // 8, dtype=np.int64))
    )
    return MiniBlockValues(
        costs, index_plan.max_items, index_plan.chunk, size, dict_enc, dict_buf, c, bulk=index_plan.bulk
    )
