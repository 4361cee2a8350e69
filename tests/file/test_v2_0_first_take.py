"""The first take of a freshly opened 2.0 file (encodings/v2_0/take_plans.py): dictionary pages
fetch their items with their indices in one round, null items included, equal to pylance."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.encodings.v2_0 import whole
from lancelot.encodings.v2_0.take_plans import DictionaryPlan
from tests.helpers import pylance_write

ROWS = 300


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    rng = np.random.default_rng(7)
    flags = rng.choice(["A", "N", "R", None], ROWS).tolist()
    batches = [
        pa.table(
            {
                "i": pa.array(np.arange(s, s + 100, dtype=np.int64)),
                "s": pa.array(flags[s : s + 100], pa.string()),  # dictionary pages: index 0 a null
                "n": pa.array([None] * 100, pa.string()),  # a dictionary of one null item
                "t": pa.array([f"comment {k} " * (k % 5) for k in range(s, s + 100)]),  # binary pages
                "d": pa.array([None if k % 7 == 0 else k / 2 for k in range(s, s + 100)]),
            }
        )
        for s in range(0, ROWS, 100)
    ]
    return pylance_write(tmp_path_factory.mktemp("first_take") / "f.lance", batches, "2.0", data_cache_bytes=1024)


def _pylance(path, rows):
    from lance.file import LanceFileReader

    return LanceFileReader(path).take_rows(rows).to_table()


@pytest.mark.parametrize("rows", [[0], [3, 4, 250], [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233], "many"])
def test_first_take_of_a_fresh_file_equals_pylance(path, rows):
    rows = sorted(np.random.default_rng(1).choice(ROWS, 60, replace=False).tolist()) if rows == "many" else rows
    f = lancelot.LanceFile(path)
    got = f.take(rows)
    assert got.equals(_pylance(path, rows))
    plans = [f._reader(f.schema.field(name))._plan for name in ("s", "n")]
    assert all(isinstance(p, DictionaryPlan) and p._items is not None for p in plans)
    assert plans[1]._items.null_count
    assert f.take(rows).equals(got)  # later takes: the loaded items


def test_items_that_do_not_add_up_go_to_the_node_decoder(path, monkeypatch):
    monkeypatch.setattr(whole, "strings", lambda *a: None)
    rows = [2, 150, 299]
    f = lancelot.LanceFile(path)
    assert f.take(rows, columns=["s"]).column(0).equals(_pylance(path, rows).column("s"))
