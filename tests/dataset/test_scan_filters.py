"""Filters on dataset scans: referenced columns, zone-map conjuncts, rows skipped."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.dataset.scan import filter_columns, zone_filters
from lancelot.errors import LanceError
from lancelot.sql import parse_filter


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
    assert ranges[-1][1] == n
    ds = ds.delete(pc.field("a") == 39500)
    got = ds.to_table(filter=(pc.field("a") >= 39000) & (pc.field("b") == 3))
    expect = pa.table({"a": np.arange(n, dtype=np.int64), "b": np.arange(n) % 7}).filter(
        (pc.field("a") >= 39000) & (pc.field("b") == 3) & (pc.field("a") != 39500)
    )
    assert got.equals(expect)
    assert ds.count_rows(filter=pc.field("a") < 10) == 10


def test_filter_must_be_an_expression_or_sql(tmp_path):
    ds = lancelot.write_dataset(pa.table({"a": [1]}), str(tmp_path / "ds"))
    with pytest.raises(TypeError):
        ds.to_table(filter=1)
    with pytest.raises(LanceError, match="filter"):
        ds.to_table(filter=pc.field("nope") > 1)


def test_segments_cover_rows_and_keep_long_clean_runs():
    from lancelot.dataset.fragment_reads import CLEAN_RUN_ROWS, deletion_segments

    n = 5 * CLEAN_RUN_ROWS
    deleted = np.array([3, 10, 2 * CLEAN_RUN_ROWS + 5, n - 1])
    segs = deletion_segments(deleted, n)
    assert segs[0][0] == 0 and segs[-1][1] == n
    assert all(segs[i][1] == segs[i + 1][0] for i in range(len(segs) - 1))  # contiguous, in order
    for a, b, dirty in segs:  # every deletion in a segment that is filtered; clean segments are long
        inside = deleted[(deleted >= a) & (deleted < b)]
        assert dirty or (not len(inside) and b - a >= CLEAN_RUN_ROWS)
    assert [d for a, b, d in segs] == [True, False, True, False, True]
    assert deletion_segments(np.array([], np.int64), n) == [(0, n, False)]
    assert deletion_segments(np.array([0, 1, 2]), 3) == [(0, 3, True)]


@pytest.mark.parametrize("where", ["head", "tail", "middle", "spread"])
def test_scan_drops_deleted_rows_wherever_they_are(tmp_path, where):
    """Deletions clustered in one region (the rest kept as zero-copy slices) or spread over the
    fragment: the scan equals the source minus the deleted rows, strings and nulls included."""
    n = 200_000
    rng = np.random.default_rng(3)
    src = pa.table(
        {
            "i": np.arange(n, dtype=np.int64),
            "s": pa.array([f"v{k % 997}" for k in range(n)]),
            "m": pa.array(rng.integers(0, 9, n), mask=rng.random(n) < 0.1),
        }
    )
    ds = lancelot.write_dataset(src, str(tmp_path / "ds"))
    lo, hi = {"head": (0, 3000), "tail": (n - 3000, n), "middle": (90_000, 93_000), "spread": (0, n)}[where]
    gone = (pc.field("i") >= lo) & (pc.field("i") < hi) & pc.equal(pc.bit_wise_and(pc.field("i"), 7), 2)
    ds = ds.delete(gone)
    expect = src.filter(~gone)
    got = ds.to_table()
    assert got.num_rows == expect.num_rows < n
    assert got.equals(expect)
    assert ds.to_table(columns=["s"]).column("s").equals(expect.column("s"))


@pytest.mark.parametrize(("sql", "zone"), [("x > 2.5", ">"), ("x >= 2.5", ">="), ("x < 2.5", "<"), ("x <= 2.5", "<=")])
def test_float_comparisons_keep_their_nan_order_and_prune(sql, zone, tmp_path):
    """A float column against a number: a stored NaN is above every number, a -NaN below (DataFusion's total
    order, as pylance answers), and the comparison still prunes zones by their bounds."""
    schema = pa.schema([("x", pa.float64())])
    assert zone_filters(parse_filter(sql, schema)) == [("x", zone, 2.5)]
    values = [1.0, -float("nan"), float("inf"), -float("inf"), 2.5, float("nan"), 3.0, None]
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"x": pa.array(values, pa.float64())}), uri)
    theirs = lance.dataset(uri).to_table(filter=sql)
    ours = lancelot.dataset(uri).to_table(filter=sql)
    assert str(ours.column("x").to_pylist()) == str(theirs.column("x").to_pylist())
    assert lancelot.dataset(uri).count_rows(sql) == theirs.num_rows


def test_a_filter_naming_a_column_the_table_lacks_is_a_sql_error():
    """The direct evaluation of a filter meets a column the read table lacks: the error is Acero's, as a SqlError
    (a ValueError and OSError as pylance's), not a KeyError (found by the differential sequences, seed 569)."""
    from lancelot.dataset.scan import apply_filter

    expr = parse_filter("r4 > 40", pa.schema([("r4", pa.int64()), ("id", pa.int64())]))
    with pytest.raises(LanceError) as info:
        apply_filter(pa.table({"id": [1, 2]}), expr, "fragment 0")
    assert isinstance(info.value, OSError) and not isinstance(info.value, KeyError)
