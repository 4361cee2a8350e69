"""The reference's python/python/tests/test_order_by.py (lancedb/lance: ``order_by`` in scans), ported:
each test runs the same code with pylance and with lancelot (``lib``) on a dataset that library wrote,
pylance the oracle."""

from __future__ import annotations

import pyarrow as pa
import pytest
from lance.dataset import ColumnOrdering as TheirOrdering

from lancelot.dataset import ColumnOrdering as OurOrdering
from tests.dataset.helpers import LIBS

ORDERINGS = {"pylance": TheirOrdering, "lancelot": OurOrdering}


@pytest.mark.parametrize("lib", LIBS)
def test_one_column_order_by(tmp_path, lib) -> None:
    mod, ColumnOrdering = LIBS[lib], ORDERINGS[lib]
    ds = mod.write_dataset(pa.table({"int_col": [2, 1, 3, None, 4], "str_col": ["a", None, "d", "b", "c"]}), tmp_path)
    for kw, ints, strs in [
        ({}, [1, 2, 3, 4, None], [None, "a", "d", "c", "b"]),
        ({"nulls_first": True}, [None, 1, 2, 3, 4], ["b", None, "a", "d", "c"]),
        ({"ascending": False}, [4, 3, 2, 1, None], ["c", "d", "a", None, "b"]),
        ({"ascending": False, "nulls_first": True}, [None, 4, 3, 2, 1], ["b", "c", "d", "a", None]),
    ]:
        got = ds.scanner(order_by=[ColumnOrdering("int_col", **kw)]).to_table()
        assert got == pa.table({"int_col": ints, "str_col": strs}), kw


@pytest.mark.parametrize("lib", LIBS)
def test_two_column_order_by(tmp_path, lib) -> None:
    mod, ColumnOrdering = LIBS[lib], ORDERINGS[lib]
    data = pa.table({"int_col": [2, 1, 3, 3, None, 4, 3], "str_col": ["a", None, "d", None, "b", "c", "e"]})
    ds = mod.write_dataset(data, tmp_path)
    second = ColumnOrdering("str_col", ascending=False, nulls_first=True)
    want = pa.table({"int_col": [1, 2, 3, 3, 3, 4, None], "str_col": [None, "a", None, "e", "d", "c", "b"]})
    assert ds.scanner(order_by=[ColumnOrdering("int_col"), second]).to_table() == want
    assert ds.to_table(order_by=["int_col", second]) == want  # a name: the default ordering


@pytest.mark.parametrize("lib", LIBS)
def test_all_order_by_support_functions(tmp_path, lib) -> None:
    mod, ColumnOrdering = LIBS[lib], ORDERINGS[lib]
    ds = mod.write_dataset(pa.table({"int_col": [2, 1, 3, None, 4], "str_col": ["a", None, "d", "b", "c"]}), tmp_path)
    ordering = ColumnOrdering("int_col")
    want = pa.table({"int_col": [1, 2, 3, 4, None], "str_col": [None, "a", "d", "c", "b"]})
    assert ds.to_table(order_by=[ordering]) == want
    assert pa.Table.from_batches(ds.to_batches(order_by=[ordering])) == want
    assert ds.scanner(order_by=[ordering]).to_table() == want
    fragment = ds.get_fragment(0)
    assert fragment.to_table(order_by=[ordering]) == want
    assert pa.Table.from_batches(fragment.to_batches(order_by=[ordering])) == want
    assert fragment.scanner(order_by=[ordering]).to_table() == want
