"""The parts of a take (one table per fragment) joined into one chunk per column, as pylance's take joins them with
arrow-rs's ``concat``: a dictionary column's dictionaries are merged into the values its rows use (when their summed
lengths reach the rows' count), else laid end to end; so a take returns the same dictionary as pylance's."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def concat_parts(parts: list[pa.Table]) -> pa.Table:
    """``parts`` (same schema) as one table of one chunk per column."""
    t = pa.concat_tables(parts)
    columns = [
        _concat_dictionaries([c for p in parts for c in p.column(i).chunks])
        if pa.types.is_dictionary(t.schema.field(i).type)
        else t.column(i).combine_chunks()
        for i in range(t.num_columns)
    ]
    return pa.Table.from_arrays(columns, schema=t.schema)


def _concat_dictionaries(chunks: list[pa.DictionaryArray]) -> pa.DictionaryArray:
    """arrow-rs's concat of dictionary arrays (one per fragment, so never one shared dictionary): merged when they
    hold at least as many values as the rows (or their indices would overflow), else laid one after another."""
    index_type = chunks[0].type.index_type
    total = sum(len(c.dictionary) for c in chunks)
    rows = sum(len(c) for c in chunks)
    overflow = total > np.iinfo(index_type.to_pandas_dtype()).max
    if len(chunks) > 1 and (total >= rows or overflow):  # (each fragment's file has its own dictionary in pylance)
        return _merged(chunks, index_type)
    offset, indices = 0, []
    for c in chunks:
        indices.append(pc.add(c.indices.cast(pa.int64()), offset))
        offset += len(c.dictionary)
    joined = pa.concat_arrays(indices).cast(index_type)
    return pa.DictionaryArray.from_arrays(joined, pa.concat_arrays([c.dictionary for c in chunks]))


def _merged(chunks: list[pa.DictionaryArray], index_type: pa.DataType) -> pa.DictionaryArray:
    """One dictionary of the values the chunks' rows use, each once, in chunk order then dictionary order."""
    seen: dict[object, int] = {}
    picks: list[pa.Array] = []
    out: list[np.ndarray] = []
    for c in chunks:
        keys = c.indices.to_numpy(zero_copy_only=False) if c.null_count == 0 else c.indices.fill_null(0).to_numpy()
        valid = np.asarray(c.is_valid()) if c.null_count else None
        used = np.unique(keys if valid is None else keys[valid])
        mapping = np.zeros(len(c.dictionary), np.int64)
        fresh = []
        for k, v in zip(used.tolist(), c.dictionary.take(pa.array(used, pa.int64())).to_pylist()):
            key = (type(v).__name__, v) if not isinstance(v, (list, dict)) else repr(v)
            if key not in seen:
                seen[key] = len(seen)
                fresh.append(k)
            mapping[k] = seen[key]
        if fresh:
            picks.append(c.dictionary.take(pa.array(fresh, pa.int64())))
        out.append(mapping[keys] if len(keys) else np.zeros(0, np.int64))
    values = pa.concat_arrays(picks) if picks else chunks[0].dictionary.slice(0, 0)
    mask = np.concatenate([np.asarray(c.is_null()) for c in chunks]) if any(c.null_count for c in chunks) else None
    indices = pa.array(np.concatenate(out), type=pa.int64(), mask=mask).cast(index_type)
    return pa.DictionaryArray.from_arrays(indices, values)
