"""CASE with casts in its branches, against pylance: a cast that cannot fail (widening: a wider integer,
a decimal with room for its digits, to string) lets the CASE run eagerly (Arrow's case_when over all rows);
one that can fail (narrowing, a string to a number) keeps the branches lazy (each on the rows that take
it, as DataFusion), so a CASE guarding it must not fail where pylance does not."""

from __future__ import annotations

from decimal import Decimal
from unittest import mock

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.sql import udfs

N = 30


@pytest.fixture(scope="module")
def twin(pylance_dataset):
    """A dataset written by pylance (two fragments), opened by both libraries."""
    table = pa.table(
        {
            "big": pa.array([i * 20 for i in range(N)], pa.int64()),
            "i8": pa.array([(i * 13) % 120 - 60 for i in range(N)], pa.int8()),
            "u16": pa.array([i * 2000 for i in range(N)], pa.uint16()),
            "d": pa.array([Decimal(i * 7919 % 4000 - 2000) / 100 for i in range(N)], pa.decimal128(15, 2)),
            "s": [str(i) if i % 3 else "apple" for i in range(N)],
            "x": [i * 0.25 for i in range(N)],
        }
    )
    path = pylance_dataset("case_casts", table, max_rows_per_file=16)
    return lancelot.dataset(path), lance.dataset(path)


def _run(ds, sql: str) -> pa.Table:
    return ds.sql(sql).build().to_stream_reader().read_all()


def _compare(twin, sql: str) -> bool:
    """Both libraries' results are equal (as multisets of rows: a string_view column cannot be sorted by lancelot's
    ORDER BY); whether lancelot ran the CASE lazily."""
    ours, theirs = twin
    with mock.patch.object(udfs, "lazy_case", wraps=udfs.lazy_case) as spy:
        got = _run(ours, sql)
    want = _run(theirs, sql)
    assert got.schema == want.schema, sql
    assert sorted(map(repr, got.to_pylist())) == sorted(map(repr, want.to_pylist())), sql
    return spy.called


WIDENING = [
    "SELECT big, sum(CASE WHEN d > 5 THEN 1 ELSE 0 END) AS n FROM dataset GROUP BY big",
    "SELECT big, CASE WHEN d > 5 THEN CAST(d AS DECIMAL(20, 4)) ELSE d END AS w FROM dataset",
    "SELECT big, CASE WHEN i8 > 0 THEN CAST(i8 AS BIGINT) ELSE big END AS w FROM dataset",
    "SELECT big, CASE WHEN u16 > 100 THEN CAST(u16 AS INT) ELSE 0 END AS w FROM dataset",
    "SELECT big, CASE WHEN i8 > 0 THEN CAST(i8 AS DOUBLE) ELSE x END AS w FROM dataset",
    "SELECT big, CASE WHEN big > 100 THEN CAST(big AS VARCHAR) ELSE 'small' END AS w FROM dataset",
]

GUARDED = [  # (each cast fails on some row the guard excludes)
    "SELECT big, CASE WHEN s <> 'apple' THEN CAST(s AS INT) ELSE -1 END AS w FROM dataset",
    "SELECT big, CASE WHEN big < 100 THEN CAST(big AS TINYINT) ELSE 0 END AS w FROM dataset",
    "SELECT big, CASE WHEN u16 < 30000 THEN CAST(u16 AS SMALLINT) ELSE 0 END AS w FROM dataset",
    "SELECT big, CASE WHEN d > -9 AND d < 9 THEN CAST(d AS DECIMAL(3, 2)) END AS w FROM dataset",
    "SELECT big, CASE WHEN i8 >= 0 THEN CAST(i8 AS TINYINT UNSIGNED) END AS w FROM dataset",
    "SELECT big, CASE WHEN big < 3000 THEN CAST(CAST(big AS SMALLINT) AS DOUBLE) END AS w FROM dataset",
]


@pytest.mark.parametrize("sql", WIDENING, ids=range(len(WIDENING)))
def test_widening_cast_runs_eagerly(twin, sql: str) -> None:
    assert not _compare(twin, sql)


@pytest.mark.parametrize("sql", GUARDED, ids=range(len(GUARDED)))
def test_guarded_failing_cast_stays_lazy(twin, sql: str) -> None:
    assert _compare(twin, sql)


def test_unguarded_failing_cast_fails_in_both(twin) -> None:
    """Without the guard the narrowing cast fails in both libraries (the guarded tests' casts can fail)."""
    sql = "SELECT CASE WHEN big >= 0 THEN CAST(big AS TINYINT) ELSE 0 END AS w FROM dataset"
    ours, theirs = twin
    with pytest.raises(Exception) as theirs_error:
        _run(theirs, sql)
    with pytest.raises(type(theirs_error.value)):
        _run(ours, sql)
