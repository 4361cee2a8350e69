"""Exact vector search (``nearest=``) against pylance 14.0.2's flat (index-free) search: same
rows, same order (ties by row id), same schema (``_distance`` float32 after the projection,
before the row-id columns), distances equal to float32 rounding; on datasets written by
lancelot and by pylance, with deletions, null vectors, prefilters and postfilters."""

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from tests.dataset.helpers import assert_same_search

RNG = np.random.default_rng(7)
VECS = RNG.standard_normal((300, 8)).astype(np.float32)
VECS[17] = VECS[16]  # a tie: the smaller row id comes first
Q = VECS[3] + 0.01


def _table(dtype=None):
    dtype = dtype or pa.float32()
    vec = pa.FixedSizeListArray.from_arrays(pa.array(VECS.ravel().astype(dtype.to_pandas_dtype()), dtype), 8)
    mask = np.zeros(300, bool)
    mask[[5, 250]] = True  # null vectors are never returned
    vec = pa.FixedSizeListArray.from_arrays(vec.values, 8, mask=pa.array(mask))
    return pa.table({"id": pa.array(range(300), pa.int64()), "vec": vec, "cat": [i % 3 for i in range(300)]})


@pytest.fixture(scope="module", params=["lancelot", "lance"])
def pair(request, tmp_path_factory):
    uri = str(tmp_path_factory.mktemp(f"knn_{request.param}") / "ds")
    (lancelot if request.param == "lancelot" else lance).write_dataset(_table(), uri, max_rows_per_file=70)
    lance.dataset(uri).delete("id IN (44, 120)")
    return lancelot.dataset(uri), lance.dataset(uri)


QUERIES = [
    {"nearest": {"column": "vec", "q": Q, "k": 5}},
    {"nearest": {"column": "vec", "q": Q, "k": 5, "metric": "cosine"}},
    {"nearest": {"column": "vec", "q": Q, "k": 5, "metric": "dot"}},
    {"nearest": {"column": "vec", "q": Q, "k": 5, "metric": "Euclidean"}},
    {"nearest": {"column": "vec", "q": list(map(float, VECS[16])), "k": 3}},
    {"nearest": {"column": "vec", "q": Q}},
    {"nearest": {"column": "vec", "q": Q, "k": 400}},
    {"columns": ["id"], "nearest": {"column": "vec", "q": Q, "k": 8}, "filter": "cat = 1", "prefilter": True},
    {"columns": ["id"], "nearest": {"column": "vec", "q": Q, "k": 8}, "filter": "cat = 1", "prefilter": False},
    {"columns": ["id"], "nearest": {"column": "vec", "q": Q, "k": 8}, "with_row_id": True, "limit": 3},
    {"columns": {"twice": "id * 2"}, "nearest": {"column": "vec", "q": Q, "k": 4}, "offset": 1},
    {"columns": ["id"], "nearest": {"column": "vec", "q": Q, "k": 4}, "filter": "id < 0", "prefilter": True},
    {"columns": ["id"], "nearest": {"column": "vec", "q": Q, "k": 4}, "filter": "id < 0", "prefilter": False},
]


@pytest.mark.parametrize("query", QUERIES, ids=[str(i) for i in range(len(QUERIES))])
def test_nearest_matches_pylance(pair, query):
    ours, theirs = pair
    assert_same_search(ours.to_table(**query), theirs.to_table(**query))
    assert ours.scanner(**query).projected_schema.equals(theirs.scanner(**query).projected_schema)


def test_nearest_batches_and_scanner(pair):
    ours, theirs = pair
    q = {"nearest": {"column": "vec", "q": Q, "k": 7}, "columns": ["id"]}
    assert pa.Table.from_batches(list(ours.to_batches(**q))).column("id") == theirs.to_table(**q).column("id")
    assert ours.scanner(**q).count_rows() == theirs.scanner(**q).count_rows() == 7
    assert "vec" in ours.scanner(**q).explain_plan()


def test_float64_vectors(tmp_path):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(_table(pa.float64()), uri)
    q = {"nearest": {"column": "vec", "q": Q.astype(np.float64), "k": 4}}
    assert_same_search(lancelot.dataset(uri).to_table(**q), lance.dataset(uri).to_table(**q))


@pytest.mark.parametrize("shape", [(16,), (4, 4)])
def test_fixed_shape_tensor_vectors(tmp_path, shape):
    """An ``arrow.fixed_shape_tensor`` column is searched by its values in row-major order, as pylance
    does (lancelot writes it, both read it)."""
    rng = np.random.default_rng(1)
    t = pa.table(
        {"id": range(40), "vec": pa.FixedShapeTensorArray.from_numpy_ndarray(rng.random((40, *shape), np.float32))}
    )
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(t, uri)
    for metric in ("l2", "cosine"):
        q = {"nearest": {"column": "vec", "q": rng.random(16, np.float32), "k": 4, "metric": metric}}
        assert_same_search(lancelot.dataset(uri).to_table(**q), lance.dataset(uri).to_table(**q))


def test_bad_queries(pair):
    ours, theirs = pair
    for bad, cls in [
        ({"column": "vec", "q": Q[:3], "k": 2}, ValueError),
        ({"column": "id", "q": Q, "k": 2}, TypeError),
        ({"column": "vec", "q": Q, "k": 0}, ValueError),
        ({"column": "vec", "q": Q, "k": 2, "metric": "foo"}, ValueError),
    ]:
        with pytest.raises(cls):
            theirs.to_table(nearest=bad)
        with pytest.raises(cls):
            ours.to_table(nearest=bad)


def test_memory_bounded_chunks(pair, monkeypatch):
    """The search reads vectors a chunk at a time and keeps only k candidates between chunks."""
    from lancelot.dataset import vector_search as vs

    ours, theirs = pair
    monkeypatch.setattr(vs, "CHUNK_ROWS", 16)
    q = {"nearest": {"column": "vec", "q": Q, "k": 6}, "columns": ["id"]}
    assert_same_search(ours.to_table(**q), theirs.to_table(**q))


def test_scoring_column_placement(tmp_path):
    """Reference test_scoring_columns: _distance after the projection and before the row-id columns
    added by with_row_id/with_row_address; after explicitly projected row-id columns; absent with
    disable_scoring_autoprojection."""
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"vec": pa.array([[i, i] for i in range(100)], pa.list_(pa.float32(), 2))}), uri)
    nearest = {"column": "vec", "q": pa.array([1, 1], pa.float32()), "k": 10, "use_index": False}
    ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
    for kw in [
        {},
        {"with_row_id": True},
        {"with_row_address": True},
        {"with_row_address": True, "with_row_id": True},
        {"columns": ["_rowid", "vec"]},
        {"columns": ["vec", "_rowaddr"]},
        {"columns": ["vec"], "disable_scoring_autoprojection": True},
    ]:
        mine, want = ours.scanner(nearest=nearest, **kw).to_table(), theirs.scanner(nearest=nearest, **kw).to_table()
        assert mine.schema.names == want.schema.names, kw
        assert mine.column("vec").equals(want.column("vec"))
