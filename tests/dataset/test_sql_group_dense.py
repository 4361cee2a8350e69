"""GROUP BY one integer key in ``ds.sql`` (a dense key's groups counted by numpy: lancelot/dataset/sql_aggregate.py
``_dense``; Acero's hash aggregate otherwise) against pylance on twin datasets: negative, narrow and sparse keys,
``count(*)``, ``count(x)`` and ``min`` / ``max`` of integers, dates and timestamps with nulls (a group of nulls
only), several fragments."""

from __future__ import annotations

import datetime

import lance
import pyarrow as pa
import pytest

import lancelot

N = 500


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    path = tmp_path_factory.mktemp("group_dense") / "ds"
    table = pa.table(
        {
            "k": pa.array([(i * 37) % 41 - 20 for i in range(N)], pa.int64()),
            "u": pa.array([i % 7 for i in range(N)], pa.uint8()),
            "sparse": pa.array([(i % 5) * 10**12 for i in range(N)], pa.int64()),
            "x": pa.array([None if i % 41 == 3 or i % 9 == 0 else i * 3 % 101 for i in range(N)], pa.int32()),
            "day": pa.array(
                [None if i % 13 == 0 else datetime.date(2020, 1, 1) + datetime.timedelta(days=i % 97) for i in range(N)]
            ),
            "ts": pa.array([datetime.datetime(2021, 1, 1) + datetime.timedelta(seconds=i * 71) for i in range(N)]),
        }
    )
    lance.write_dataset(table, str(path), max_rows_per_file=120)
    return lancelot.dataset(path), lance.dataset(str(path))


QUERIES = [
    "SELECT k, count(*) AS n FROM dataset GROUP BY k ORDER BY k",
    "SELECT k, count(x) AS n, min(x) AS lo, max(x) AS hi FROM dataset GROUP BY k ORDER BY k",
    "SELECT k, min(day) AS a, max(day) AS b, max(ts) AS c FROM dataset GROUP BY k ORDER BY k",
    "SELECT u, count(*) AS n, max(x) AS hi FROM dataset GROUP BY u ORDER BY n DESC, u LIMIT 3",
    "SELECT sparse, count(*) AS n, max(day) AS b FROM dataset GROUP BY sparse ORDER BY sparse",
    "SELECT k, max(x) AS hi FROM dataset WHERE x IS NULL GROUP BY k ORDER BY k",  # every group's max is null
    "SELECT k, count(*) AS n FROM dataset WHERE k > 100 GROUP BY k",  # no rows
]


@pytest.mark.parametrize("sql", QUERIES)
def test_group_by_integer_key(twin, sql: str) -> None:
    ours, theirs = twin
    want = theirs.sql(sql).build().to_stream_reader().read_all()
    got = ours.sql(sql).build().to_stream_reader().read_all()
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()


def test_unordered_groups_are_the_same_set(twin) -> None:
    ours, theirs = twin
    sql = "SELECT k, count(*) AS n, min(day) AS a FROM dataset GROUP BY k"
    want = theirs.sql(sql).build().to_stream_reader().read_all()
    got = ours.sql(sql).build().to_stream_reader().read_all()
    assert got.schema == want.schema
    assert sorted(got.to_pylist(), key=repr) == sorted(want.to_pylist(), key=repr)
