"""Small fragments of one scan task are read together (dataset/fragment_groups.py): one deletion
filter and one filter over the rows of all, the other columns only where rows passed.  Rows,
projections, row ids and row addresses stay those of each row's fragment, as pylance returns them."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> str:
    """60 fragments of 10 rows (two appends), deletion files in most, a whole fragment deleted."""
    uri = str(tmp_path_factory.mktemp("groups") / "ds.lance")
    ids = np.arange(600, dtype=np.int64)
    t = pa.table({"id": ids, "x": (ids * 7 % 101).astype(np.float64), "s": pa.array([f"r{i}" for i in ids])})
    lance.write_dataset(t.slice(0, 300), uri, max_rows_per_file=10)
    lance.write_dataset(t.slice(300), uri, max_rows_per_file=10, mode="append")
    ds = lance.dataset(uri)
    ds.delete("id % 7 = 3 OR (id >= 100 AND id < 110)")
    return uri


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"filter": "x = 7.0"},
        {"filter": "x > 1000"},
        {"filter": "x >= 0", "columns": ["s"]},
        {"columns": ["s"], "filter": "x < 3", "with_row_id": True},
        {"columns": ["id"], "with_row_address": True},
        {"columns": ["s", "id"], "filter": "s LIKE 'r2%' AND x > 50"},
    ],
)
def test_grouped_scans_match_pylance(small: str, kw: dict) -> None:
    got, ref = lancelot.dataset(small).to_table(**kw), lance.dataset(small).to_table(**kw)
    assert got.equals(ref), kw
