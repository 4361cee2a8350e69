"""Hypothesis strategies for random Arrow schemas and tables (reusable by others).

``arrow_types(version=...)`` draws types the given Lance version can hold; ``tables(...)`` draws a table of such columns
with random nulls and lengths."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

from tests.support.data import gen_array

PRIMITIVES = [
    pa.bool_(),
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.float16(),
    pa.float32(),
    pa.float64(),
    pa.decimal128(9, 2),
    pa.date32(),
    pa.timestamp("us", tz="UTC"),
    pa.time64("us"),
    pa.duration("ms"),
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.binary(4),
]


def arrow_types(max_depth: int = 3) -> st.SearchStrategy[pa.DataType]:
    """Arrow types nested up to ``max_depth`` (lists, large lists, structs, vectors)."""
    leaves = st.sampled_from(PRIMITIVES) | st.builds(
        lambda t, n: pa.list_(t, n), st.sampled_from([pa.float32(), pa.int16(), pa.float64()]), st.integers(1, 6)
    )

    def extend(children: st.SearchStrategy[pa.DataType]) -> st.SearchStrategy[pa.DataType]:
        names = st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=3, unique=True)
        return (
            st.builds(pa.list_, children)
            | st.builds(pa.large_list, children)
            | st.builds(
                lambda ns, ts: pa.struct([(n, t) for n, t in zip(ns, ts)]),
                names,
                st.lists(children, min_size=3, max_size=3),
            )
        )

    return st.recursive(leaves, extend, max_leaves=max_depth + 1)


@st.composite
def tables(draw: st.DrawFn, max_rows: int = 200, max_columns: int = 4, null_structs: bool = True) -> pa.Table:
    """A random table: random types, lengths, null patterns and seed."""
    ncols = draw(st.integers(1, max_columns))
    n = draw(st.integers(0, max_rows))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    cols = {}
    for i in range(ncols):
        t = draw(arrow_types())
        nulls = draw(st.sampled_from(["none", "some", "all"]))
        cols[f"c{i}"] = gen_array(t, n, nulls, rng, null_structs=null_structs)
    return pa.table(cols)
