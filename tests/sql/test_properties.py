"""Random SQL predicates over random small tables select the same rows through lancelot as
through pylance (or both refuse them with a ValueError).  The grammar covers comparisons of every
column type with literals of the right and of wrong types, integer and float arithmetic, IN with
NULLs, BETWEEN, LIKE patterns, IS [NOT] NULL/TRUE/FALSE/DISTINCT FROM, struct fields, a few
functions, and AND / OR / NOT around them."""

from __future__ import annotations

import datetime
import tempfile

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lancelot.sql import SqlError, parse_filter

ROWS = 12
INT_COLS = ("i", "j")
STRINGS = ["", "a", "ab", "b", "B", "a_b", "a%", "xyz", "Ab"]


def _column(draw: st.DrawFn, values: st.SearchStrategy, nulls: bool) -> list:
    item = st.one_of(st.none(), values) if nulls else values
    return draw(st.lists(item, min_size=ROWS, max_size=ROWS))


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    base = datetime.date(2020, 1, 1)
    return pa.table(
        {
            "n": pa.array(range(ROWS)),
            "i": pa.array(_column(draw, st.integers(-5, 5), True), pa.int32()),
            "j": pa.array(_column(draw, st.integers(-100, 100), draw(st.booleans())), pa.int64()),
            "f": pa.array(
                _column(draw, st.one_of(st.floats(-5, 5, width=32), st.just(float("nan")), st.just(0.0)), True),
                pa.float64(),
            ),
            "s": pa.array(_column(draw, st.sampled_from(STRINGS), True), pa.utf8()),
            "b": pa.array(_column(draw, st.booleans(), True), pa.bool_()),
            "d": pa.array(_column(draw, st.integers(0, 30).map(lambda k: base + datetime.timedelta(k)), True)),
            "ts": pa.array(
                _column(
                    draw,
                    st.integers(0, 48).map(lambda h: datetime.datetime(2020, 1, 1) + datetime.timedelta(hours=h)),
                    True,
                ),
                pa.timestamp("us"),
            ),
            "st": pa.array(
                [
                    None if a is None else {"a": a}
                    for a in _column(draw, st.one_of(st.none(), st.integers(-3, 3)), True)
                ],
                pa.struct([("a", pa.int64())]),
            ),
        }
    )


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


OPS = ["=", "!=", "<>", "<", "<=", ">", ">="]


@st.composite
def int_exprs(draw: st.DrawFn) -> str:
    col = draw(st.sampled_from(INT_COLS))
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return col
    if kind == 1:
        return f"{col} {draw(st.sampled_from(['+', '-', '*']))} {draw(st.integers(-3, 3))}"
    if kind == 2:
        return f"{col} {draw(st.sampled_from(['/', '%']))} {draw(st.sampled_from([1, 2, 3, -2]))}"
    return f"(i {draw(st.sampled_from(['+', '-', '*']))} j)"


@st.composite
def atoms(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 16))
    op = draw(st.sampled_from(OPS))
    if kind == 0:
        return f"{draw(int_exprs())} {op} {draw(st.integers(-6, 6))}"
    if kind == 1:  # sometimes a literal of the wrong type (pylance refuses those)
        lit = draw(st.sampled_from(["1.5", "'2'", "2", "-1", "NULL", "2.0"]))
        return f"{draw(st.sampled_from(INT_COLS))} {op} {lit}"
    if kind == 2:
        lit = draw(st.sampled_from(["1", "-1.5", "0", "2.25", "0.0", "-0.0"]))
        return f"f {op} {lit}" if draw(st.booleans()) else f"{lit} {op} f"
    if kind == 3:
        return f"s {op} {_quote(draw(st.sampled_from(STRINGS)))}"
    if kind == 4:
        day = datetime.date(2020, 1, 1) + datetime.timedelta(draw(st.integers(0, 30)))
        return f"d {op} date '{day.isoformat()}'"
    if kind == 5:
        vals = draw(st.lists(st.one_of(st.integers(-5, 5), st.just("NULL")), min_size=1, max_size=4))
        neg = draw(st.sampled_from(["", "NOT "]))
        return f"i {neg}IN ({', '.join(map(str, vals))})"
    if kind == 6:
        lo = draw(st.integers(-5, 5))
        neg = draw(st.sampled_from(["", "NOT "]))
        return f"{draw(st.sampled_from(INT_COLS))} {neg}BETWEEN {lo} AND {lo + draw(st.integers(0, 6))}"
    if kind == 7:
        pattern = draw(st.sampled_from(["a%", "%b", "_", "a\\_b", "%", "A%", "_b%"]))
        like = draw(st.sampled_from(["LIKE", "ILIKE", "NOT LIKE"]))
        return f"s {like} {_quote(pattern)}"
    if kind == 8:
        col = draw(st.sampled_from(["i", "f", "s", "b", "d"]))
        return f"{col} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if kind == 9:
        return draw(st.sampled_from(["b", "NOT b", "b IS TRUE", "b IS NOT TRUE", "b IS FALSE", "b IS NOT FALSE"]))
    if kind == 10:
        return f"{draw(st.sampled_from(['i < j', 'i = j', 'f > i', 'f <= j', 'j >= i']))}"
    if kind == 12:
        return draw(st.sampled_from([f"st.a {op} {draw(st.integers(-3, 3))}", "st.a IS NULL", "st IS NULL"]))
    if kind == 13:
        stamp = datetime.datetime(2020, 1, 1) + datetime.timedelta(hours=draw(st.integers(0, 48)))
        return f"ts {op} timestamp '{stamp.isoformat(sep=' ')}'"
    if kind == 14:
        other = draw(st.sampled_from(["NULL", "0", "1", "j"]))
        return f"i IS {draw(st.sampled_from(['', 'NOT ']))}DISTINCT FROM {other}"
    if kind == 15:
        return f"coalesce(i, j) {op} {draw(st.integers(-6, 6))}"
    if kind == 16:
        value = draw(st.sampled_from(["f * 2", "f + i", "f - 1", "f / 2"]))
        return f"{value} {op} {draw(st.sampled_from(['0', '1.5', '-2']))}"
    fn = draw(st.sampled_from(["starts_with(s, 'a')", "ends_with(s, 'b')", "lower(s) = 'ab'", "length(s) > 1"]))
    return fn


@st.composite
def predicates(draw: st.DrawFn, depth: int = 2) -> str:
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(atoms())
    kind = draw(st.integers(0, 2))
    if kind == 0:
        return f"NOT ({draw(predicates(depth - 1))})"
    joiner = " AND " if kind == 1 else " OR "
    return f"({draw(predicates(depth - 1))}){joiner}({draw(predicates(depth - 1))})"


def _pylance_rows(ds: lance.LanceDataset, sql: str) -> list[int] | None:
    try:
        return sorted(ds.to_table(filter=sql).column("n").to_pylist())
    except ValueError:  # pylance's errors: invalid input, and ArrowInvalid while filtering
        return None


def _our_rows(table: pa.Table, sql: str) -> list[int] | None:
    try:
        return sorted(table.filter(parse_filter(sql, table.schema)).column("n").to_pylist())
    except SqlError:
        return None
    except pa.ArrowInvalid:  # a cast or division failing on the data, as in pylance
        return None


@pytest.mark.filterwarnings("ignore")
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(table=tables(), sqls=st.lists(predicates(), min_size=12, max_size=12))
def test_random_predicates_select_pylance_rows(table: pa.Table, sqls: list[str]) -> None:
    with tempfile.TemporaryDirectory() as d:
        ds = lance.write_dataset(table, d + "/ds")
        for sql in sqls:
            assert _our_rows(table, sql) == _pylance_rows(ds, sql), sql
