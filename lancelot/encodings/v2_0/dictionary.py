"""2.0 ``Dictionary``: indices into a dictionary of items stored in the page.

The items are decoded once per page and cached; a null value is an index that
points at a null item.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.encodings.v2_0.decode import Ranges, decode, unwrap_no_nulls
from lancelot.encodings.v2_0.page import PageBuffers
from lancelot.format.pb import encodings_v2_0_pb2 as pb


def _stored_index_type(enc: pb.ArrayEncoding) -> pa.DataType:
    """Unsigned integer type of the stored indices (pylance picks the narrowest width)."""
    enc = unwrap_no_nulls(enc)
    bits = enc.flat.bits_per_value if enc.WhichOneof("array_encoding") == "flat" else 32
    return {8: pa.uint8(), 16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}.get(bits, pa.uint32())


def decode_dictionary(d: pb.Dictionary, pbuf: PageBuffers, ranges: Ranges, dtype: pa.DataType, cache: dict):
    value_type = dtype.value_type if pa.types.is_dictionary(dtype) else dtype
    key = ("v2_0-dict", pbuf.column, pbuf.page_index)
    items = cache.get(key)
    if items is None:
        items = decode(d.items, pbuf, [(0, d.num_dictionary_items)], value_type, cache)
        cache[key] = items
    index_type = dtype.index_type if pa.types.is_dictionary(dtype) else _stored_index_type(d.indices)
    idx = decode(d.indices, pbuf, ranges, index_type, cache)
    idx_np = idx.to_numpy(zero_copy_only=False)
    if len(idx_np) and (idx_np.min() < 0 or idx_np.max() >= len(items)):
        raise pbuf.error(f"dictionary index out of range of {len(items)} items")
    if items.null_count:
        null_items = np.asarray(items.is_null().to_numpy(zero_copy_only=False))
        mask = null_items[idx_np.astype(np.int64)]
        if mask.any():
            idx = pc.if_else(pa.array(mask), pa.scalar(None, idx.type), idx)
    if pa.types.is_dictionary(dtype):
        return pa.DictionaryArray.from_arrays(idx.cast(dtype.index_type), items)
    return items.take(idx)
