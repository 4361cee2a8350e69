"""``ORDER BY ... LIMIT k`` in ``ds.sql`` (a top k on the first key over the fragments' chunks, then a sort of the
rows kept) against pylance on twin datasets: keys with many ties (more rows tied at the edge than are taken one by
one), decimals, integers and dates, ascending and descending, several fragments."""

from __future__ import annotations

import datetime
from decimal import Decimal

import lance
import pyarrow as pa
import pytest

import lancelot

N = 900


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    path = tmp_path_factory.mktemp("order_limit") / "ds"
    table = pa.table(
        {
            "id": pa.array(range(N), pa.int64()),
            "few": pa.array([i % 3 for i in range(N)], pa.int32()),  # 300 rows per value: ties past the edge
            "d": pa.array([Decimal(i * 7919 % 1000 - 500) / 100 for i in range(N)], pa.decimal128(12, 2)),
            "day": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=i % 50) for i in range(N)]),
        }
    )
    lance.write_dataset(table, str(path), max_rows_per_file=200)
    return lancelot.dataset(path), lance.dataset(str(path))


QUERIES = [
    "SELECT id, few FROM dataset ORDER BY few DESC, id LIMIT 5",
    "SELECT id, few FROM dataset ORDER BY few, id DESC LIMIT 7",
    "SELECT id, few FROM dataset ORDER BY few DESC, id LIMIT 400",
    "SELECT id, d FROM dataset ORDER BY d DESC, id LIMIT 10",
    "SELECT id, d FROM dataset ORDER BY d, id LIMIT 10 OFFSET 5",
    "SELECT id, day FROM dataset ORDER BY day DESC, id LIMIT 30",
    "SELECT id FROM dataset ORDER BY id DESC LIMIT 1",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_order_limit(twin, sql: str) -> None:
    ours, theirs = twin
    want = theirs.sql(sql).build().to_stream_reader().read_all()
    got = ours.sql(sql).build().to_stream_reader().read_all()
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()
