"""2.0 ``Dictionary``: indices into a dictionary of items stored in the page.

The items are decoded once per page and cached (``page_items``, shared by the node decoder and the take plans); a null
value is an index that points at a null item."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.encodings.base import Fetch, gather
from lancelot.encodings.structural.leaf import apply_dictionary
from lancelot.encodings.v2_0 import whole
from lancelot.encodings.v2_0.decode import Spans, decode
from lancelot.encodings.v2_0.page import PageBuffers
from lancelot.format.pb import encodings_v2_0_pb2 as pb


def _stored_index_type(enc: pb.ArrayEncoding) -> pa.DataType:
    """Unsigned integer type of the stored indices (pylance picks the narrowest width)."""
    enc = whole.unwrap_no_nulls(enc)
    bits = enc.flat.bits_per_value if enc.WhichOneof("array_encoding") == "flat" else 32
    return {8: pa.uint8(), 16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}.get(bits, pa.uint32())


def page_items(d: pb.Dictionary, pbuf: PageBuffers, value_type: pa.DataType, cache: dict[Any, Any]) -> Fetch[pa.Array]:
    """A dictionary page's items, decoded once per page (cached): items of the Binary shape of whole.py in one round of
    their two buffers (whole.strings), others (or bytes that do not add up, which it reports) by the node decoder."""
    key = ("v2_0-dict", pbuf.column, pbuf.page_index)
    items = cache.get(key)
    if items is None:
        enc, n = whole.unwrap_no_nulls(d.items), d.num_dictionary_items
        s = whole.binary_shape(enc.binary) if enc.WhichOneof("array_encoding") == "binary" else None
        if s is not None and max(s.offsets, s.data) < len(pbuf.page):
            offsets, data = yield [pbuf.page[s.offsets], pbuf.page[s.data]]
            items = whole.shared_strings(s, n, offsets, data, value_type)  # (small ones shared by files)
        if items is None:
            items = yield from decode(d.items, pbuf, [(0, n)], value_type, cache)
        cache[key] = items
    if len(items) != d.num_dictionary_items:
        raise pbuf.error(f"dictionary of {len(items)} items, {d.num_dictionary_items} declared")
    return items


def decode_dictionary(
    d: pb.Dictionary, pbuf: PageBuffers, ranges: Spans, dtype: pa.DataType, cache: dict[Any, Any]
) -> Fetch[pa.Array]:
    value_type = dtype.value_type if pa.types.is_dictionary(dtype) else dtype
    plain = not pa.types.is_dictionary(dtype)
    index_type = _stored_index_type(d.indices) if plain else dtype.index_type
    items, idx = yield from gather(  # the items and the indices in the same rounds
        [page_items(d, pbuf, value_type, cache), decode(d.indices, pbuf, ranges, index_type, cache)]
    )
    if plain:
        # a dictionary chosen by the writer for a plain column: indices are 1-based, 0 is null
        idx_np = idx.to_numpy().astype(np.int64)
        if len(idx_np) and idx_np.max() > len(items):
            raise pbuf.error(f"dictionary index {idx_np.max()} out of range of {len(items)} items")
        idx_np -= 1  # (-1: null, which the lookup reads as out of range)
        if isinstance(items, pa.Array):  # (numpy / kernel gathers where they are faster than Arrow's take)
            return apply_dictionary(idx_np, items, value_type)
        return items.take(pa.array(idx_np, mask=idx_np < 0))
    # an Arrow dictionary column: 0-based indices, nulls point at a null item
    idx_np = idx.to_numpy(zero_copy_only=False)
    if len(idx_np) and (idx_np.min() < 0 or idx_np.max() >= len(items)):
        raise pbuf.error(f"dictionary index out of range of {len(items)} items")
    if items.null_count:
        null_items = np.asarray(items.is_null().to_numpy(zero_copy_only=False))
        mask = null_items[idx_np.astype(np.int64)]
        if mask.any():
            idx = pc.if_else(pa.array(mask), pa.scalar(None, idx.type), idx)
    return pa.DictionaryArray.from_arrays(idx, items)
