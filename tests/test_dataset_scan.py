"""Filters on dataset scans: referenced columns, zone-map conjuncts, rows skipped."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.dataset.scan import filter_columns, zone_filters
from lancelot.errors import LanceError


def test_filter_columns_and_conjuncts():
    names = ["a", "ab", "s", "st"]
    e = (pc.field("a") > 3) & (pc.field("s") == "x and (y)") & (pc.field("st", "x") <= 2.5)
    assert filter_columns(e, names) == ["a", "s", "st"]
    assert zone_filters(e) == [("a", ">", 3), ("s", "=", "x and (y)")]
    assert zone_filters((pc.field("a") > 3) | (pc.field("ab") < 1)) == []  # an OR prunes nothing
    assert zone_filters(pc.field("a").isin([1, 2])) == []
    assert zone_filters(None) == []


def test_zone_maps_skip_rows(tmp_path):
    uri = str(tmp_path / "ds")
    n = 40000
    ds = lancelot.write_dataset(pa.table({"a": np.arange(n, dtype=np.int64), "b": np.arange(n) % 7}), uri)
    (frag,) = ds.get_fragments()
    ranges = frag.zone_ranges(zone_filters(pc.field("a") >= 39000))
    assert sum(b - a for a, b in ranges) < 5000  # only the last zones are read
    assert ranges[-1][1] == n and frag._zone_ranges(zone_filters(pc.field("a") >= 39000)) == ranges  # old name
    ds = ds.delete(pc.field("a") == 39500)
    got = ds.to_table(filter=(pc.field("a") >= 39000) & (pc.field("b") == 3))
    expect = pa.table({"a": np.arange(n, dtype=np.int64), "b": np.arange(n) % 7}).filter(
        (pc.field("a") >= 39000) & (pc.field("b") == 3) & (pc.field("a") != 39500)
    )
    assert got.equals(expect)
    assert ds.count_rows(filter=pc.field("a") < 10) == 10


def test_filter_must_be_an_expression(tmp_path):
    ds = lancelot.write_dataset(pa.table({"a": [1]}), str(tmp_path / "ds"))
    with pytest.raises(TypeError):
        ds.to_table(filter="a > 1")
    with pytest.raises(LanceError, match="filter"):
        ds.to_table(filter=pc.field("nope") > 1)
