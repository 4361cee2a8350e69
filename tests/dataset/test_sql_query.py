"""``LanceDataset.sql`` against pylance's: each query runs through both libraries on the same dataset (pylance the
oracle) and the results must be equal, schema (names, types, nullability) included; in order where the query orders,
as multisets of rows where it does not.  Queries pylance refuses must raise the same builtin class in lancelot (and a
LanceError); the queries outside lancelot's subset (joins, subqueries, window functions, set operations) must raise
``UnsupportedQueryError``, never a wrong answer."""

from __future__ import annotations

from unittest import mock

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset import LanceDataset
from lancelot.dataset.sql_plan import UnsupportedQueryError
from lancelot.errors import LanceError

N = 40


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    """One dataset (four fragments, one row deleted, nulls in every column), opened by both libraries."""
    path = tmp_path_factory.mktemp("sql") / "ds"
    table = pa.table(
        {
            "id": pa.array([i if i % 7 else None for i in range(N)], pa.int32()),
            "big": pa.array(range(N), pa.int64()),
            "x": [None if i % 5 == 0 else i * 0.5 for i in range(N)],
            "s": [["apple", "banana", "cherry", None][i % 4] for i in range(N)],
            "flag": [None if i % 11 == 0 else i % 3 == 0 for i in range(N)],
        }
    )
    ours = lancelot.write_dataset(table, path, max_rows_per_file=12)
    ours.delete("big = 5")
    return lancelot.dataset(path), lance.dataset(str(path))


def _run(ds, sql: str, table_name: str | None = None, **flags) -> pa.Table:
    builder = ds.sql(sql)
    if table_name is not None:
        builder = builder.table_name(table_name)
    for name, on in flags.items():
        builder = getattr(builder, name)(on)
    return builder.build().to_stream_reader().read_all()


def _rows(t: pa.Table) -> list:
    return sorted((tuple(r.values()) for r in t.to_pylist()), key=repr)


UNORDERED = [
    "SELECT * FROM dataset",
    "SELECT id, s FROM dataset WHERE id > 10",
    "SELECT id AS user_id, UPPER(s) AS val FROM dataset WHERE id BETWEEN 3 AND 20",
    "SELECT * FROM dataset WHERE s IS NULL",
    "SELECT s, x FROM dataset WHERE s LIKE 'b%' AND x >= 2",
    "SELECT id + 1, big * 2, x / 2, s || '!', -id FROM dataset",
    "SELECT lower(s), length(s), id % 3 = 0, x IS NOT NULL, NOT flag, s NOT LIKE 'a%' FROM dataset",
    "SELECT CAST(id AS BIGINT) AS i64, CAST(big AS DOUBLE) AS f, 1 AS one, 'k' AS k FROM dataset",
    "SELECT d.id, d.s FROM dataset d WHERE d.big < 10",
    "SELECT \"id\", `s` FROM dataset WHERE s = 'apple'",
    "SELECT ID, S FROM dataset WHERE flag",
    "SELECT 1",
    "SELECT count(*) FROM dataset",
    "SELECT count(*), count(id), count(x), count(s), count(1), sum(id), sum(big), sum(x), min(s), max(s), "
    "min(x), max(id), avg(id), avg(x), min(flag) FROM dataset",
    "SELECT count(*) AS n FROM dataset WHERE id > 1000",
    "SELECT sum(id), min(s), avg(x), count(x) FROM dataset WHERE id > 1000",
    "SELECT avg(id) * 2 AS twice, max(big) - min(big) AS range_, COUNT(*) FROM dataset WHERE flag",
    "SELECT count(DISTINCT s) FROM dataset",
    "SELECT s, count(*) AS n, sum(x) AS total FROM dataset GROUP BY s",
    "SELECT s, flag, count(id), max(x) FROM dataset GROUP BY s, flag",
    "SELECT s, count(*) FROM dataset GROUP BY s HAVING count(*) > 9",
    "SELECT flag, sum(big) FROM dataset WHERE big > 3 GROUP BY flag HAVING sum(big) > 100",
    "SELECT upper(s) AS u, avg(big) FROM dataset GROUP BY upper(s)",
    "SELECT s, sum(id) FROM dataset WHERE id > 1000 GROUP BY s",
    "SELECT DISTINCT s FROM dataset",
    "SELECT DISTINCT s, flag FROM dataset",
    "SELECT * FROM dataset LIMIT 0",
    "SELECT s FROM dataset WHERE id > 1000",
]

ORDERED = [
    "SELECT id FROM dataset ORDER BY id",
    "SELECT id, s FROM dataset ORDER BY id DESC, big",
    "SELECT id FROM dataset ORDER BY id NULLS FIRST LIMIT 5",
    "SELECT big FROM dataset ORDER BY big DESC LIMIT 5 OFFSET 3",
    "SELECT x, big FROM dataset ORDER BY x DESC NULLS LAST, big LIMIT 10",
    "SELECT big FROM dataset ORDER BY id, big",
    "SELECT upper(s) FROM dataset ORDER BY upper(s)",
    "SELECT big * 2 AS b2 FROM dataset WHERE s = 'cherry' ORDER BY b2 DESC",
    "SELECT * FROM dataset ORDER BY 4, 2",
    "SELECT s, avg(x) FROM dataset GROUP BY s HAVING sum(id) > 100 ORDER BY s NULLS FIRST",
    "SELECT id % 3 AS r, count(*) FROM dataset GROUP BY id % 3 ORDER BY r",
    "SELECT s AS k, min(big) FROM dataset GROUP BY k ORDER BY k DESC",
    "SELECT flag, count(*) FROM dataset GROUP BY 1 ORDER BY 1",
    "SELECT s, max(x) - min(x) AS spread FROM dataset GROUP BY s ORDER BY spread DESC NULLS LAST, s",
    "SELECT s, count(*) FROM dataset GROUP BY s ORDER BY count(*) DESC, s LIMIT 2",
    "SELECT DISTINCT s, flag FROM dataset ORDER BY s, flag",
    "SELECT big FROM dataset WHERE x > 3 LIMIT 4 OFFSET 2",
    "SELECT id FROM dataset LIMIT 7",
]


@pytest.mark.parametrize("sql", UNORDERED)
def test_query_matches_pylance(twin, sql) -> None:
    ours, theirs = twin
    got, want = _run(ours, sql), _run(theirs, sql)
    assert got.schema == want.schema
    assert _rows(got) == _rows(want)


@pytest.mark.parametrize("sql", ORDERED)
def test_ordered_query_matches_pylance(twin, sql) -> None:
    ours, theirs = twin
    got, want = _run(ours, sql), _run(theirs, sql)
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize(
    ("sql", "flags"),
    [
        ("SELECT _rowid, id FROM dataset WHERE _rowid > 20", {"with_row_id": True}),
        ("SELECT * FROM dataset WHERE big < 3", {"with_row_id": True, "with_row_addr": True}),
        ("SELECT _rowaddr FROM dataset WHERE s = 'apple'", {"with_row_addr": True}),
    ],
)
def test_row_columns_match_pylance(twin, sql, flags) -> None:
    ours, theirs = twin
    got, want = _run(ours, sql, **flags), _run(theirs, sql, **flags)
    assert got.schema == want.schema and _rows(got) == _rows(want)


def test_table_name_and_batches(twin) -> None:
    ours, theirs = twin
    sql = "SELECT big, s FROM items WHERE big < 30"
    want = _run(theirs, sql, "items")
    assert _rows(_run(ours, sql, "items")) == _rows(want)
    batches = ours.sql(sql).table_name("items").batch_size(7).build().to_batch_records()
    assert batches and all(b.num_rows <= 7 for b in batches)
    assert _rows(pa.Table.from_batches(batches)) == _rows(want)
    assert ours.sql("SELECT s FROM dataset WHERE id > 1000").build().to_batch_records() == []
    assert theirs.sql("SELECT s FROM dataset WHERE id > 1000").build().to_batch_records() == []


def test_scan_reads_only_what_the_query_needs(twin) -> None:
    """WHERE goes to the scan as its filter, and the scan reads only the columns the query names."""
    ours, _ = twin
    seen = []
    real = LanceDataset.scanner

    def spy(self, *args, **kwargs):
        seen.append(kwargs)
        return real(self, *args, **kwargs)

    with mock.patch.object(LanceDataset, "scanner", spy):
        ours.sql("SELECT s, count(*) FROM dataset WHERE x > 2 GROUP BY s").build().to_batch_records()
        ours.sql("SELECT big FROM dataset WHERE x > 2 LIMIT 3").build().to_batch_records()
    assert seen[0]["columns"] == ["s"] and seen[0]["filter"] is not None
    assert seen[1]["columns"] == ["big"] and seen[1]["limit"] == 3


@pytest.mark.parametrize(
    ("sql", "table_name"),
    [
        ("SELECT * FROM other", None),
        ("SELECT * FROM dataset", "items"),
        ("SELECT nope FROM dataset", None),
        ("SELEC x", None),
        ("SELECT id FROM dataset WHERE s", None),
        ("SELECT s, id FROM dataset GROUP BY s", None),
        ("SELECT sum(s) FROM dataset", None),
        ("SELECT id, id FROM dataset", None),
        ("SELECT _rowid FROM dataset", None),
        ("SELECT ds.id FROM dataset", None),
    ],
)
def test_errors_match_pylance(twin, sql, table_name) -> None:
    ours, theirs = twin
    for run in ("to_batch_records", "to_stream_reader"):
        with pytest.raises(Exception) as want:
            getattr(theirs.sql(sql).table_name(table_name or "dataset").build(), run)()
        with pytest.raises(type(want.value)) as got:
            getattr(ours.sql(sql).table_name(table_name or "dataset").build(), run)()
        assert isinstance(got.value, LanceError) and str(got.value).startswith("Invalid user input: ")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a.id FROM dataset a JOIN dataset b ON a.id = b.id",
        "SELECT id, row_number() OVER (ORDER BY id) FROM dataset",
        "SELECT id FROM dataset WHERE id IN (SELECT id FROM dataset WHERE big < 3)",
        "SELECT * FROM (SELECT id FROM dataset) t",
        "SELECT id FROM dataset UNION SELECT id FROM dataset",
        "WITH t AS (SELECT id FROM dataset) SELECT id FROM t",
    ],
)
def test_outside_the_subset_is_refused(twin, sql) -> None:
    """pylance answers these; lancelot refuses them clearly (a ValueError and an OSError, as pylance's refusals)."""
    ours, theirs = twin
    theirs.sql(sql).build().to_batch_records()
    with pytest.raises(UnsupportedQueryError, match="does not run") as e:
        ours.sql(sql).build().to_batch_records()
    assert isinstance(e.value, ValueError) and isinstance(e.value, OSError)
