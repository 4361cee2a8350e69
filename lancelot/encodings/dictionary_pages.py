"""Joining the Arrow dictionary arrays of one page the way pylance 14.0.2 does (2.0 and 2.1+ writers).

A page made of one array keeps that array's dictionary whole, unused entries included.  A page joined
from several arrays (batches) gets, as pylance's concatenation gives it, a merged dictionary of the values
the arrays use, each array's in its dictionary's order, first occurrence kept (even when the arrays share
one dictionary: tests/file/test_write_dictionary.py).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


def join_values(arrays: list[pa.Array]) -> pa.Array:
    """Concatenate the values of one page (see the module docstring for dictionary arrays)."""
    if len(arrays) == 1:
        return arrays[0]
    if pa.types.is_dictionary(arrays[0].type):
        used = []
        for a in arrays:
            idx = pc.unique(a.indices.drop_null())
            used.append(a.dictionary.take(idx.take(pc.sort_indices(idx))))
        items = pc.unique(pa.concat_arrays(used).drop_null())
        decoded = pa.concat_arrays([a.dictionary_decode() for a in arrays])
        indices = pc.index_in(decoded, value_set=items).cast(arrays[0].type.index_type)
        return pa.DictionaryArray.from_arrays(indices, items)
    return pa.concat_arrays(arrays)
