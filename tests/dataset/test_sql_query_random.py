"""``LanceDataset.sql`` against pylance's on random queries: each seed makes one query (expressions, CASE, coalesce,
text and date functions, filters, GROUP BY with aggregates (DISTINCT, FILTER, median), HAVING, DISTINCT, ORDER BY
with NULLS placements, LIMIT / OFFSET) over one dataset of every kind of column lancelot's subset reads, with nulls;
the query runs through both libraries and the results must be equal: schema (names, types, nullability), and rows,
in order where the query orders them totally.  A query pylance refuses must be refused by lancelot with the same
builtin class."""

from __future__ import annotations

import random
from decimal import Decimal

import lance
import pyarrow as pa
import pytest

import lancelot
from tests.helpers import builtin_class

N = 60
NUMBERS = ["id", "big", "x", "i8", "u8", "d"]
COLUMNS = [*NUMBERS, "s", "flag"]
#: the aggregates (a FILTER clause may follow; no var / stddev, whose last bits depend on the order of the sum)
AGGREGATES = [
    *("count(*)", "count({c})", "sum({n})", "min({c})", "max({c})", "avg({n})", "count(DISTINCT {c})"),
    *("sum(DISTINCT {n})", "avg(DISTINCT {n})", "median({n})", "median(DISTINCT {n})", "max(DISTINCT {c})"),
    *("bool_and({b})", "bool_or({b})", "count(*)", "sum({n})"),
]
#: scalar functions of text and dates
FUNCTIONS = [
    *("replace(s, 'a', 'o')", "left(s, 3)", "concat(s, '-', id)", "starts_with(s, 'a')", "lpad(s, 7, '*')"),
    *("strpos(s, 'an')", "initcap(s)", "reverse(s)", "split_part(s, 'a', 2)", "concat_ws('/', s, lower(s))"),
    *("date_trunc('month', dt)", "date_part('day', dt)", "EXTRACT(YEAR FROM dt)", "dt + 3", "greatest(big, id)"),
]


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    path = tmp_path_factory.mktemp("sql_random") / "ds"
    table = pa.table(
        {
            "id": pa.array([i if i % 7 else None for i in range(N)], pa.int32()),
            "big": pa.array([i * 3 - 40 for i in range(N)], pa.int64()),
            "x": [None if i % 5 == 0 else (i - 20) * 0.5 for i in range(N)],
            "i8": pa.array([(i * 13) % 120 - 60 for i in range(N)], pa.int8()),
            "u8": pa.array([(i * 37) % 256 for i in range(N)], pa.uint8()),
            "d": pa.array(
                [None if i % 6 == 1 else Decimal(i * 7919 % 2000 - 1000) / 100 for i in range(N)], pa.decimal128(15, 2)
            ),
            "s": [["apple", "banana", "cherry", None, "Apple"][i % 5] for i in range(N)],
            "flag": [None if i % 11 == 0 else i % 3 == 0 for i in range(N)],
            "dt": pa.array([None if i % 9 == 4 else 19000 + i * 17 for i in range(N)], pa.date32()),
        }
    )
    lancelot.write_dataset(table, path, max_rows_per_file=17)
    lancelot.dataset(path).delete("big = 5")
    return lancelot.dataset(path), lance.dataset(str(path))


class _Query:
    """One random query of the subset (``rng`` decides every choice)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def value(self, depth: int = 0) -> str:
        r, c = self.rng.random(), self.rng.choice
        if depth > 1 or r < 0.35:
            return c(COLUMNS if self.rng.random() < 0.3 else NUMBERS)
        if r < 0.45:
            return str(c([0, 1, 2, 3, -1, 2.5, 100]))
        if r < 0.65:
            return f"({self.value(depth + 1)} {c(['+', '-', '*', '/', '%'])} {self.value(depth + 1)})"
        if r < 0.75:
            return (
                f"CASE WHEN {self.condition(depth + 1)} THEN {self.value(depth + 1)} ELSE {self.value(depth + 1)} END"
            )
        if r < 0.8:
            subject, match = c([("s", "'apple'"), ("flag", "true"), ("i8 % 3", "1")])
            return f"CASE {subject} WHEN {match} THEN {self.value(depth + 1)} END"
        if r < 0.85:
            return f"{c(['abs', 'round', 'floor', 'ceil'])}({c(['x', 'big', 'i8', 'd'])})"
        if r < 0.9:
            return c(
                ["lower(s)", "upper(s)", "length(s)", "nullif(big, 2)", "CAST(big AS DOUBLE)", "CAST(x AS BIGINT)"]
            )
        if r < 0.95:
            return c(FUNCTIONS)
        return f"{c(['coalesce', 'nvl'])}({c(NUMBERS)}, {c(['0', '1.5', 'big', 'x'])})"

    def condition(self, depth: int = 0) -> str:
        r, c = self.rng.random(), self.rng.choice
        if r < 0.5:
            return f"{c(NUMBERS)} {c(['>', '<', '=', '<>', '>=', '<='])} {c(['0', '3', '10', '2.5', '-1'])}"
        if r < 0.6:
            return f"{c(COLUMNS)} IS {c(['', 'NOT '])}NULL"
        if r < 0.7:
            return f"s {c(['=', '<>', '>'])} '{c(['apple', 'banana'])}'"
        if r < 0.75:
            return f"s {c(['LIKE', 'NOT LIKE'])} '{c(['a%', '%e%', 'B_nana'])}'"
        if r < 0.8:
            return f"{c(NUMBERS)} {c(['IN', 'NOT IN'])} (1, 2, 3, -1)"
        if r < 0.85:
            return f"{c(NUMBERS)} BETWEEN -5 AND 10"
        if r < 0.9:
            return "flag" if depth else "NOT flag"
        return f"({self.condition(depth + 1)} {c(['AND', 'OR'])} {self.condition(depth + 1)})"

    def sql(self) -> tuple[str, bool]:
        """The query, and whether it orders its rows totally."""
        r, c = self.rng.random(), self.rng.choice
        where = f" WHERE {self.condition()}" if self.rng.random() < 0.5 else ""
        if r < 0.45:
            items = [f"{self.value()} AS c{j}" for j in range(self.rng.randint(1, 3))]
            if self.rng.random() < 0.5:  # ordered by an output, then by the unique big
                how = c(["", " DESC", " NULLS FIRST", " DESC NULLS LAST", " ASC NULLS LAST"])
                limit = c(["", f" LIMIT {self.rng.randint(0, 12)}", f" LIMIT 5 OFFSET {self.rng.randint(0, 60)}"])
                return f"SELECT {', '.join(items)}, big FROM dataset{where} ORDER BY c0{how}, big{limit}", True
            return f"SELECT {', '.join(items)} FROM dataset{where}", False
        if r < 0.55:
            item = c(["s", "flag", "i8 % 3", "lower(s)", "d > 0", "CASE WHEN big > 10 THEN 'hi' ELSE 'lo' END"])
            order = c(["", " ORDER BY 1", " ORDER BY 1 DESC", " ORDER BY 1 NULLS FIRST"])
            return f"SELECT DISTINCT {item} AS k FROM dataset{where}{order}", bool(order)
        key = c(["s", "flag", "i8 % 3", "id % 4", "d > 0", "upper(s)", "CASE WHEN x > 3 THEN 1 ELSE 0 END"])
        aggs = []
        for j in range(self.rng.randint(1, 3)):
            agg = c(AGGREGATES).format(c=c(COLUMNS), n=c(NUMBERS), b=c(["flag", "big > 10", "s = 'apple'"]))
            if self.rng.random() < 0.2:
                agg += f" FILTER (WHERE {self.condition(1)})"
            aggs.append(f"{agg} AS a{j}")
        having = f" HAVING count(*) > {self.rng.randint(0, 8)}" if self.rng.random() < 0.3 else ""
        order = c([" ORDER BY g NULLS FIRST", " ORDER BY g DESC", " ORDER BY g"])
        limit = c(["", "", " LIMIT 2", " LIMIT 3 OFFSET 1"])
        return f"SELECT {key} AS g, {', '.join(aggs)} FROM dataset{where} GROUP BY {key}{having}{order}{limit}", True


def _run(ds, sql: str) -> pa.Table:
    return ds.sql(sql).build().to_stream_reader().read_all()


def _rows(t: pa.Table, ordered: bool) -> list[str]:
    rows = [repr(tuple(r.values())) for r in t.to_pylist()]  # (repr: a NaN equals a NaN)
    return rows if ordered else sorted(rows)


@pytest.mark.parametrize("seed", range(300))
def test_random_query_matches_pylance(twin, seed) -> None:
    ours, theirs = twin
    sql, ordered = _Query(random.Random(seed)).sql()
    try:
        want = _run(theirs, sql)
    except Exception as e:  # noqa: BLE001 - pylance refuses it: so must lancelot, with the same builtin class
        with pytest.raises(builtin_class(e)):
            _run(ours, sql)
        return
    got = _run(ours, sql)
    assert got.schema == want.schema, sql
    assert _rows(got, ordered) == _rows(want, ordered), sql
