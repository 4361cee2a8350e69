"""The reference's test_scalar_index.py (python/python/tests/, lancedb/lance), BTREE and BITMAP parts, re-expressed:
each index is built (and optimized, dropped...) by pylance or by lancelot on the same data, then queried by pylance
(whose filters use the index) and by lancelot (which scans), and the answers must agree with the reference's."""

from __future__ import annotations

import math
from datetime import datetime

import lance
import pyarrow as pa
import pytest

import lancelot

BUILDERS = [lance, lancelot]
IDS = ["pylance-built", "lancelot-built"]


def _counts(uri: str, filters: list[str]) -> list[list[int]]:
    """Each filter's row count, as pylance (using indices) and lancelot (scanning) answer it."""
    theirs, ours = lance.dataset(uri), lancelot.dataset(uri)
    return [[theirs.count_rows(f) for f in filters], [ours.to_table(filter=f).num_rows for f in filters]]


@pytest.mark.parametrize("lib", BUILDERS, ids=IDS)
def test_null_handling(tmp_path, lib) -> None:
    """Nulls among indexed values: IS NULL, ranges and IN lists (a NULL in the list matches nothing)."""
    p = str(tmp_path / "d")
    lib.write_dataset(pa.table({"x": [1, 2, None, 3]}), p)
    filters = ["x IS NULL", "x IS NOT NULL", "x > 0", "x < 5", "x IN (1, 2)", "x IN (1, 2, NULL)"]
    want = [1, 3, 3, 3, 2, 2]
    assert _counts(p, filters) == [want, want]
    for kind in ("BITMAP", "BTREE"):
        lib.dataset(p).create_scalar_index("x", index_type=kind)
        assert _counts(p, filters) == [want, want], kind


_NANS = [1.0, -math.nan, math.inf, -math.inf, 2.0, math.nan, 3.0]
_NAN_FILTERS = ["x IS NULL", "x IS NOT NULL", "x > 0", "x < 5", "x IN (1, 2)"]
_NAN_COUNTS = [0, 7, 5, 5, 2]  # (the reference's: -NaN sorts below every number, NaN above, as DataFusion orders them)


@pytest.mark.parametrize("lib", BUILDERS, ids=IDS)
def test_nan_handling(tmp_path, lib) -> None:
    """NaN (of either sign) and infinities among indexed floats do not disturb ranges and IN lists of the index."""
    p = str(tmp_path / "d")
    lib.write_dataset(pa.table({"x": _NANS}), p)
    assert [lance.dataset(p).count_rows(f) for f in _NAN_FILTERS] == _NAN_COUNTS
    for kind in ("BITMAP", "BTREE"):
        lib.dataset(p).create_scalar_index("x", index_type=kind)
        assert [lance.dataset(p).count_rows(f) for f in _NAN_FILTERS] == _NAN_COUNTS, kind


def test_nan_handling_scan(tmp_path) -> None:
    """The same filters, answered by lancelot's scan."""
    p = str(tmp_path / "d")
    lancelot.write_dataset(pa.table({"x": _NANS}), p)
    assert [lancelot.dataset(p).to_table(filter=f).num_rows for f in _NAN_FILTERS] == _NAN_COUNTS


@pytest.mark.parametrize("lib", BUILDERS, ids=IDS)
def test_scalar_index_with_nulls(tmp_path, lib) -> None:
    """Half-null columns of strings, booleans and timestamps indexed by BTREE (a few hundred rows here)."""
    n = 400
    t = pa.table(
        {
            "inner_id": list(range(n)),
            "category": ["a", None] * (n // 2),
            "boolean_col": [True, None] * (n // 2),
            "timestamp_col": [datetime(2023, 1, 1), None] * (n // 2),
        }
    )
    p = str(tmp_path / "d")
    ds = lib.write_dataset(t, p)
    for c in ("inner_id", "category", "boolean_col", "timestamp_col"):
        ds.create_scalar_index(c, index_type="BTREE")
    k = n // 2
    theirs, ours = lance.dataset(p), lancelot.dataset(p)
    for f in ("category = 'a'", "boolean_col IS TRUE", "timestamp_col IS NOT NULL"):
        assert len(theirs.to_table(filter=f, limit=k)) == len(ours.to_table(filter=f, limit=k)) == k, f


@pytest.mark.parametrize("lib", BUILDERS, ids=IDS)
def test_bitmap_index(tmp_path, lib) -> None:
    """A BITMAP index is listed with pylance's type name."""
    p = str(tmp_path / "d")
    ds = lib.write_dataset(pa.table({"a": [["a", "b", "c"][i % 3] for i in range(100)]}), p)
    ds.create_scalar_index("a", index_type="BITMAP")
    for reader in (lance, lancelot):
        indices = reader.dataset(p).list_indices()
        assert len(indices) == 1 and indices[0]["type"] == "Bitmap"
    assert _counts(p, ["a = 'b'"]) == [[33], [33]]


@pytest.mark.parametrize("lib", BUILDERS, ids=IDS)
def test_bitmap_remap(tmp_path, lib) -> None:
    """A compaction that rewrites two half fragments keeps every row in the BITMAP index."""
    p = str(tmp_path / "d")
    tbl = pa.table({"a": [["a", "b"][i % 2] for i in range(10)]})
    lib.write_dataset(tbl, p, max_rows_per_file=10)
    ds = lib.write_dataset(tbl, p, max_rows_per_file=5, mode="append")
    ds.create_scalar_index("a", index_type="BITMAP")
    assert ds.optimize.compact_files(target_rows_per_fragment=10).fragments_removed == 2
    assert _counts(p, ["a = 'a'", "a = 'b'"]) == [[10, 10], [10, 10]]


@pytest.mark.parametrize("lib", BUILDERS, ids=IDS)
def test_optimize_no_new_data(tmp_path, lib) -> None:
    """optimize_indices after an empty insert, and after inserts of rows that leave an indexed column null."""
    tbl = pa.table({"btree": pa.array([None], pa.int64()), "bitmap": pa.array([None], pa.int64())})
    p = str(tmp_path / "d")
    ds = lib.write_dataset(tbl, p)
    ds.create_scalar_index("btree", index_type="BTREE")
    ds.create_scalar_index("bitmap", index_type="BITMAP")
    filters = ["btree IS NULL", "bitmap IS NULL"]
    assert _counts(p, filters) == [[1, 1], [1, 1]]
    ds.insert([], schema=tbl.schema)
    ds.optimize.optimize_indices()
    assert _counts(p, filters) == [[1, 1], [1, 1]]
    ds.insert(pa.table({"btree": [2]}))
    ds.optimize.optimize_indices()
    assert _counts(p, filters) == [[1, 2], [1, 2]]
    ds.insert(pa.table({"bitmap": [2]}))
    ds.optimize.optimize_indices()
    assert _counts(p, filters) == [[2, 2], [2, 2]]
    ds.insert(pa.table({"btree": [None], "bitmap": [None]}, schema=tbl.schema))
    assert _counts(p, filters) == [[3, 3], [3, 3]]


@pytest.mark.parametrize("lib", BUILDERS, ids=IDS)
def test_drop_index(tmp_path, lib) -> None:
    """Dropping an unknown index is a RuntimeError naming it not found; dropping each leaves the columns
    searchable."""
    n = 100
    p = str(tmp_path / "d")
    ds = lib.write_dataset(pa.table({"btree": list(range(n)), "bitmap": list(range(n))}), p)
    ds.create_scalar_index("btree", index_type="BTREE")
    ds.create_scalar_index("bitmap", index_type="BITMAP")
    assert len(ds.list_indices()) == 2
    with pytest.raises(RuntimeError, match="not found"):
        ds.drop_index("nonexistent_name")
    for idx in ds.list_indices():
        ds.drop_index(idx["name"])
    assert len(lance.dataset(p).list_indices()) == len(lancelot.dataset(p).list_indices()) == 0
    assert _counts(p, ["btree = 1", "bitmap = 1"]) == [[1, 1], [1, 1]]


@pytest.mark.parametrize("lib", BUILDERS, ids=IDS)
def test_index_after_merge_insert(tmp_path, lib) -> None:
    """A merge_insert that rewrites an indexed column's rows takes them out of the index's coverage."""
    p = str(tmp_path / "d")
    ds = lib.write_dataset(pa.table({"id": range(100), "payload": range(100), "other": range(100)}), p)
    ds.create_scalar_index("id", index_type="BTREE")
    ds.create_scalar_index("payload", index_type="BTREE")
    assert _counts(p, ["payload >= 30"]) == [[70], [70]]
    merge = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    merge.execute(pa.table({"id": range(50, 150), "payload": [0] * 100}))
    assert _counts(p, ["payload >= 30", "id >= 120"]) == [[20, 30], [20, 30]]


@pytest.mark.parametrize("lib", BUILDERS, ids=IDS)
def test_create_index_empty_dataset(tmp_path, lib) -> None:
    """Indices of an empty dataset: searches after an insert, then after optimize_indices, find the new row."""
    schema = pa.schema([pa.field("btree", pa.int32()), pa.field("bitmap", pa.int32())])
    p = str(tmp_path / "d")
    ds = lib.write_dataset([], p, schema=schema)
    for kind in ("BTREE", "BITMAP"):
        ds.create_scalar_index(kind.lower(), index_type=kind)
    ds.insert(pa.table({"btree": pa.array([1], pa.int32()), "bitmap": pa.array([1], pa.int32())}))
    filters = ["btree = 1", "btree = 0", "bitmap = 1", "bitmap = 0"]
    assert _counts(p, filters) == [[1, 0, 1, 0], [1, 0, 1, 0]]
    ds.optimize.optimize_indices()
    assert _counts(p, filters) == [[1, 0, 1, 0], [1, 0, 1, 0]]


@pytest.mark.parametrize("lib", BUILDERS, ids=IDS)
def test_temporal_index(tmp_path, lib) -> None:
    """BTREE indices of timestamps and dates answer equality and range filters."""
    n = 100
    t = pa.table(
        {
            "ts": pa.array([datetime(2023, 1, 1 + i % 28) for i in range(n)], pa.timestamp("us")),
            "d": pa.array([datetime(2023, 1, 1 + i % 28).date() for i in range(n)], pa.date32()),
        }
    )
    p = str(tmp_path / "d")
    ds = lib.write_dataset(t, p)
    ds.create_scalar_index("ts", index_type="BTREE")
    ds.create_scalar_index("d", index_type="BTREE")
    filters = [
        "ts = TIMESTAMP '2023-01-05 00:00:00'",
        "ts > TIMESTAMP '2023-01-20 00:00:00'",
        "d = DATE '2023-01-05'",
        "d <= DATE '2023-01-03'",
    ]
    got = _counts(p, filters)
    assert got[0] == got[1] == [4, 24, 4, 12]


@pytest.mark.parametrize("lib", BUILDERS, ids=IDS)
def test_nested_field_indices(tmp_path, lib) -> None:
    """BTREE and BITMAP indices of struct fields (``meta.id``, ``meta.kind``)."""
    n = 60
    rows = [{"id": i, "kind": ["x", "y", "z"][i % 3]} for i in range(n)]
    p = str(tmp_path / "d")
    ds = lib.write_dataset(pa.table({"meta": pa.array(rows), "v": range(n)}), p)
    ds.create_scalar_index("meta.id", index_type="BTREE")
    ds.create_scalar_index("meta.kind", index_type="BITMAP")
    assert {i["name"] for i in lance.dataset(p).list_indices()} == {"meta.id_idx", "meta.kind_idx"}
    filters = ["meta.id = 7", "meta.id >= 50", "meta.kind = 'y'", "meta.kind = 'y' AND meta.id < 30"]
    got = _counts(p, filters)
    assert got[0] == got[1] == [1, 10, 20, 10]
