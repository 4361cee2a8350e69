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
