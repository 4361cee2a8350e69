"""Decimal ``+ - *`` in ``ds.sql`` (computed on the unscaled integers when they fit: lancelot/sql/udfs.py
``decimal_arith``) against pylance on twin datasets: negative values, nulls on either side, several fragments,
a column whose values need more than 64 bits (Arrow's kernel then), constants on either side."""

from __future__ import annotations

from decimal import Decimal

import lance
import pyarrow as pa
import pytest

import lancelot

N = 300


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    path = tmp_path_factory.mktemp("decimal_arith") / "ds"
    table = pa.table(
        {
            "a": pa.array(
                [None if i % 7 == 3 else Decimal(i * 7919 % 20000 - 10000) / 100 for i in range(N)],
                pa.decimal128(15, 2),
            ),
            "b": pa.array([None if i % 5 == 1 else Decimal(i % 100) / 1000 for i in range(N)], pa.decimal128(6, 3)),
            "w": pa.array(  # beyond int64 for some rows
                [Decimal(10**25 + i) if i % 9 == 0 else Decimal(i - 150) for i in range(N)], pa.decimal128(30, 0)
            ),
            "k": pa.array(range(N), pa.int64()),
        }
    )
    lance.write_dataset(table, str(path), max_rows_per_file=70)
    return lancelot.dataset(path), lance.dataset(str(path))


QUERIES = [
    "SELECT a * 2 AS x FROM dataset",
    "SELECT 3 * a AS x FROM dataset",
    "SELECT a * b AS x FROM dataset",
    "SELECT a + b AS x, a - b AS y FROM dataset",
    "SELECT a * (1 - b) AS x FROM dataset",
    "SELECT (a + 1) * (b - 2) AS x FROM dataset",
    "SELECT w * 2 AS x, w + a AS y, w - 1 AS z FROM dataset",
    "SELECT a * 2 AS x FROM dataset WHERE k % 3 = 0",
    "SELECT a * b AS x FROM dataset WHERE b IS NOT NULL",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_decimal_arithmetic(twin, sql: str) -> None:
    ours, theirs = twin
    want = theirs.sql(sql).build().to_stream_reader().read_all()
    got = ours.sql(sql).build().to_stream_reader().read_all()
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()


def test_overflow_fails(twin) -> None:
    """A product beyond 38 digits fails in both."""
    ours, theirs = twin
    sql = "SELECT w * w * w AS x FROM dataset"
    with pytest.raises(ValueError):
        theirs.sql(sql).build().to_batch_records()
    with pytest.raises(ValueError):
        ours.sql(sql).build().to_batch_records()
