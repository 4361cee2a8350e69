"""The query vector of ``nearest`` in every form pylance 14.0.2 takes (numpy arrays of any number dtype, lists,
tuples, pandas Series, Arrow arrays of floats or integers, fixed-size-list scalars, ``arrow.fixed_shape_tensor``
scalars), searched against float32, float64 and tensor columns: the same rows and distances as pylance; what pylance
refuses, refused with its builtin error class; several query vectors at once (a 2-D array, a list of vectors):
pylance's batch search, each searched for its ``k`` rows, a ``query_index`` column first."""

from __future__ import annotations

import lance
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import lancelot
from tests.dataset.helpers import assert_same_search

RNG = np.random.default_rng(11)
VECS = RNG.standard_normal((120, 4)).astype(np.float32)
FSL = pa.FixedSizeListArray.from_arrays(pa.array(VECS.ravel()), 4)
TENSOR = pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(pa.float32(), [4]), FSL)
F64 = pa.FixedSizeListArray.from_arrays(pa.array(VECS.ravel().astype(np.float64)), 4)
Q = VECS[3] + 0.01


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The same table written by each library (three fragments, a deletion); lancelot's dataset, pylance's."""
    t = pa.table({"id": range(120), "v": FSL, "t": TENSOR, "v64": F64})
    out = []
    for name, mod in [("lancelot", lancelot), ("pylance", lance)]:
        uri = str(tmp_path_factory.mktemp(f"queries_{name}") / "ds")
        mod.write_dataset(t, uri, max_rows_per_file=50)
        mod.dataset(uri).delete("id = 27")
        out.append(mod.dataset(uri))
    return out


QUERIES = {
    "numpy float32": Q,
    "numpy float64": Q.astype(np.float64),
    "numpy float16": Q.astype(np.float16),
    "numpy int": np.array([1, 0, -1, 2]),
    "list": Q.tolist(),
    "tuple": tuple(Q.tolist()),
    "list of ints": [1, 0, -1, 2],
    "series": pd.Series(Q),
    "arrow float32": pa.array(Q),
    "arrow int8": pa.array([1, 0, -1, 2], pa.int8()),
    "chunked": pa.chunked_array([pa.array(Q[:2]), pa.array(Q[2:])]),
    "fixed-size-list scalar": FSL[7],
    "tensor scalar": TENSOR[7],
}


@pytest.mark.parametrize("column", ["v", "t", "v64"])
@pytest.mark.parametrize("form", list(QUERIES))
def test_query_forms(pair, form, column):
    ours, theirs = pair
    for metric in ("l2", "cosine"):
        kw = {"nearest": {"column": column, "q": QUERIES[form], "k": 4, "metric": metric}, "columns": ["id"]}
        assert_same_search(ours.to_table(**kw), theirs.to_table(**kw))


def test_float64_arrow_query_on_float64_column(pair):
    """(pylance panics on an Arrow float64 query for a float32 column; lancelot rounds it to float32.)"""
    ours, theirs = pair
    kw = {"nearest": {"column": "v64", "q": pa.array(Q.astype(np.float64)), "k": 4}, "columns": ["id"]}
    assert_same_search(ours.to_table(**kw), theirs.to_table(**kw))
    got = ours.to_table(nearest={"column": "v", "q": pa.array(Q.astype(np.float64)), "k": 4}, columns=["id"])
    assert got.column("id") == ours.to_table(nearest={"column": "v", "q": Q, "k": 4}, columns=["id"]).column("id")


BAD = {
    "float scalar": (pa.scalar(1.0), TypeError),
    "list scalar": (pa.scalar(Q.tolist()), TypeError),
    "string": ("abcd", TypeError),
    "string array": (pa.array(list("abcd")), TypeError),
    "bool array": (pa.array([True] * 4), TypeError),
    "decimal array": (pa.array([1, 2, 3, 4], pa.decimal128(5, 0)), TypeError),
    "fixed-size-list array": (FSL.slice(3, 1), TypeError),
    "None": (None, TypeError),
    "int": (3, TypeError),
    "numpy strings": (np.array(list("abcd")), ValueError),
    "wrong size": ([1.0, 2.0], ValueError),
    "ragged batch": ([Q.tolist(), [1.0, 2.0]], ValueError),
    "batch of wrong size": ([[1.0, 2.0], [3.0, 4.0]], ValueError),
    "empty": ([], IndexError),
    "empty batch": (np.zeros((0, 4)), IndexError),
    "dict": ({"a": 1}, KeyError),
}


@pytest.mark.parametrize("form", list(BAD))
def test_refused_queries(pair, form):
    q, cls = BAD[form]
    for ds in pair:
        with pytest.raises(cls):
            ds.to_table(nearest={"column": "v", "q": q, "k": 2})
    with pytest.raises(lancelot.LanceError):
        pair[0].to_table(nearest={"column": "v", "q": q, "k": 2})


BATCH = np.stack([Q, VECS[10], VECS[90]])


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"limit": 4},
        {"limit": 4, "offset": 2},
        {"filter": "id > 20"},
        {"filter": "id > 20", "prefilter": True},
        {"filter": "id > 1000"},
        {"columns": ["id"], "with_row_id": True},
        {"columns": ["id"], "with_row_address": True, "disable_scoring_autoprojection": True},
        {"q": [Q.tolist(), VECS[10]], "metric": "cosine"},
        {"q": [pa.array(Q), pa.array(VECS[10])], "metric": "dot"},
        {"q": [Q.tolist()], "column": "t"},
    ],
    ids=lambda kw: (
        ",".join(f"{k}={'/'.join(type(q).__name__ for q in v) if k == 'q' else v}" for k, v in kw.items()) or "defaults"
    ),  # stable ids (no object addresses): pytest-xdist workers must collect the same names
)
def test_batch_search(pair, kw):
    ours, theirs = pair
    kw = dict(kw)
    nearest = {"column": kw.pop("column", "v"), "q": kw.pop("q", BATCH), "k": 3}
    if "metric" in kw:
        nearest["metric"] = kw.pop("metric")
    mine, want = ours.to_table(nearest=nearest, **kw), theirs.to_table(nearest=nearest, **kw)
    assert mine.schema.names[0] == "query_index"
    if "_distance" in want.column_names:
        assert_same_search(mine, want)
    else:
        assert mine.equals(want)
    schema = theirs.scanner(nearest=nearest, **kw).projected_schema
    assert ours.scanner(nearest=nearest, **kw).projected_schema.equals(schema)
    if "limit" not in kw:
        assert ours.scanner(nearest=nearest, **kw).count_rows() == want.num_rows
