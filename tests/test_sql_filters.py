"""SQL filter strings: lancelot's parse + filter selects exactly the rows pylance's scan selects,
and rejects what pylance rejects (with a SqlError, a ValueError like pylance's, naming the place)."""

from __future__ import annotations

import datetime
import decimal

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.dataset.scan import check_filter
from lancelot.errors import LanceError
from lancelot.sql import SqlError, parse_expression, parse_filter


def _table() -> pa.Table:
    return pa.table(
        {
            "n": pa.array(range(6)),
            "i": pa.array([1, 2, None, 4, 5, -3], pa.int32()),
            "f": pa.array([1.5, None, 3.0, float("nan"), -2.0, 0.0]),
            "s": pa.array(["ab", "Abc", None, "x_y", "a%b", ""]),
            "b": pa.array([True, False, None, True, False, True]),
            "d": pa.array(
                [
                    datetime.date(2020, 1, 1),
                    datetime.date(2021, 6, 1),
                    None,
                    datetime.date(2019, 1, 1),
                    datetime.date(2020, 1, 2),
                    datetime.date(2020, 1, 1),
                ]
            ),
            "ts": pa.array(
                [
                    datetime.datetime(2020, 1, 1, 12),
                    None,
                    datetime.datetime(2021, 1, 1),
                    datetime.datetime(2020, 1, 1),
                    datetime.datetime(2019, 5, 5),
                    datetime.datetime(2020, 1, 1, 0, 0, 1),
                ],
                pa.timestamp("us"),
            ),
            "dec": pa.array(
                [decimal.Decimal(x) if x else None for x in ["1.25", None, "3.50", "-1.00", "2.00", "0.00"]],
                pa.decimal128(10, 2),
            ),
            "st": pa.array(
                [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}, None, {"a": None, "b": "z"}, {"a": 5, "b": None}, None]
            ),
            "l": pa.array([[1, 2], [3], None, [], [2, 5], [None, 1]]),
            "a b": pa.array([1, 2, 3, 4, 5, 6]),
            "CamelCol": pa.array([1, 2, 3, 4, 5, 6]),
            "i8": pa.array([1, 2, 3, 4, 5, 6], pa.int8()),
            "u": pa.array([1, 2, 3, 4, 5, 6], pa.uint32()),
        }
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[pa.Table, lance.LanceDataset, str]:
    t = _table()
    uri = str(tmp_path_factory.mktemp("sql") / "ds")
    return t, lance.write_dataset(t, uri), uri


FILTERS = [
    # comparisons, both spellings of = and <>
    "i = 2", "i == 2", "i != 2", "i <> 2", "i < 2", "i <= 2", "i > 2", "i >= 2", "1 < i", "i = -3",
    "f > 1", "f < 1", "f >= 0", "f = 3", "f <> 3", "f > -1", "i < f", "i = i",
    "s = 'ab'", 's = "ab"', "s > 'a'", "s < 'B'", "i8 > 3", "u >= 3",
    # boolean logic and NULL
    "i > 1 AND s = 'ab'", "i > 1 OR s = 'ab'", "NOT (i > 2)", "NOT i > 2", "(i > 1 OR f > 1) AND NOT b",
    "b", "NOT b", "b = true", "TRUE", "TRUE AND i > 2", "i > 2 AND NULL", "i = NULL",
    "b IS TRUE", "b IS NOT TRUE", "b IS FALSE", "b IS NOT FALSE", "(i > 2) IS NOT NULL", "(i > 2) = true",
    "s IS NULL", "s IS NOT NULL", "st IS NULL", "i IS NULL IS TRUE",
    "i IS DISTINCT FROM 2", "i IS NOT DISTINCT FROM NULL", "i IS NOT DISTINCT FROM 2",
    # IN, BETWEEN
    "i IN (1, 2)", "i NOT IN (1, 2)", "i IN (1, NULL)", "i NOT IN (1, NULL)", "s IN ('ab', 'x_y')",
    "i IN (1, i)", "NOT (f IN (1, '3'))", "st.a IN (1, 2.5)", "f IN (1.5, 3.0)",
    "i BETWEEN 2 AND 4", "i NOT BETWEEN 2 AND 4", "i BETWEEN 1 AND NULL",
    "d BETWEEN date '2020-01-01' AND date '2020-06-01'",
    # LIKE
    "s LIKE 'a%'", "s ILIKE 'a%'", "s NOT LIKE 'a%'", "s NOT ILIKE 'a%'", "s LIKE '_b'", "s LIKE 'x\\_y'",
    "s LIKE 'a\\%b'", "s LIKE '%'", "s LIKE ''",
    # arithmetic
    "i + 1 > 3", "i * 2 = 4", "i / 2 = 1", "i % 2 = 1", "i % 2 = -1", "-i < -3", "i - 10 / 3 = -1",
    "i + 1 > 1.5", "i + 1.5 > 3", "f % 2 = 1.5", "-7 % 2 = -1", "i + 2147483647 > 0", "i8 + 1 > 4",
    "i + f > 2", "i * u > 3", "i + 0 > '2'",
    # casts and typed literals
    "CAST(i AS double) > 1.5", "i::double > 1.5", "CAST(i AS bigint) = 2", "CAST(i8 AS int) = 1",
    "d > date '2020-01-01'", "d > DATE '2020-01-01'", "d = '2020-01-01'::date", "d = cast('2020-01-01' as date)",
    "ts > timestamp '2020-01-01 00:00:00'", "ts > timestamp '2020-01-01'", "ts > TIMESTAMP '2020-01-01T12:00:00'",
    "ts > timestamp '2020-01-01 11:59:59.999999'", "ts = '2020-01-01 00:00:00'::timestamp",
    "ts > date '2020-01-01'", "d > timestamp '2020-01-01 00:00:00'", "NOT (d > '2020-01-01')",
    # decimals
    "dec > 1", "dec > -1", "dec = CAST(1.25 AS decimal(10,2))", "dec = CAST(1.25 AS decimal(5,3))",
    "dec > CAST(1 AS decimal(3,0))", "dec + 1 > 2", "dec * 2 > 2",
    # nested fields and quoting
    "st.a > 1", "st.b = 'x'", "st['a'] > 1", "st.a IS NULL", "st.b IS NULL", "ST.a > 1",
    "`a b` > 3", "CamelCol > 3", "camelcol > 3", "`CamelCol` > 3",
    # functions
    "regexp_match(s, 'a.')", "NOT regexp_match(s, 'a.')", "regexp_like(s, 'a.')", "regexp_like(s, '^A', 'i')",
    "starts_with(s, 'a')", "ends_with(s, 'b')", "contains(s, 'b')", "lower(s) = 'abc'", "upper(s) = 'ABC'",
    "length(s) = 2", "char_length(s) = 2", "octet_length(s) = 2", "reverse(s) = 'ba'",
    "replace(s, 'a', 'z') = 'zb'", "concat(s, 'x') = 'abx'", "s || 'x' = 'abx'",
    "array_has(l, 2)", "array_contains(l, 2)", "NOT array_has(l, 2)", "array_length(l) = 2", "cardinality(l) = 2",
    "is_valid(s)", "isnan(f)", "coalesce(i, 0) = 0", "abs(i) = 3", "round(f) = 2", "power(i, 2) = 4",
]  # fmt: skip


def _rows(t: pa.Table) -> list[int]:
    return sorted(t.column("n").to_pylist())


@pytest.mark.parametrize("sql", FILTERS)
def test_filter_rows_match_pylance(data, sql):
    table, ds, _ = data
    expected = _rows(ds.to_table(filter=sql))
    assert _rows(table.filter(parse_filter(sql, table.schema))) == expected


def test_dataset_scans_take_sql_strings(data):
    table, ds, uri = data
    ours = lancelot.dataset(uri)
    for sql in ["i > 1 AND s = 'ab'", "st.a > 1", "s LIKE 'a%' OR f > 1", "array_has(l, 2)"]:
        expected = _rows(ds.to_table(filter=sql))
        assert _rows(ours.to_table(filter=sql)) == expected, sql
        assert ours.count_rows(filter=sql) == len(expected), sql
        batches = list(ours.to_batches(filter=sql))
        assert sorted(n for b in batches for n in b.column("n").to_pylist()) == expected, sql
    assert check_filter(None, table.schema) is None
    e = pc.field("i") > 1
    assert check_filter(e, table.schema).equals(e)
    with pytest.raises(TypeError):
        check_filter("i > 1")  # no schema to parse against
    with pytest.raises(TypeError):
        check_filter(3, table.schema)


def test_delete_takes_a_sql_string(tmp_path):
    t = pa.table({"a": pa.array([1, 2, 3, 4]), "s": ["x", "y", "z", "w"]})
    ours = lancelot.write_dataset(t, str(tmp_path / "ours"))
    ref = lance.write_dataset(t, str(tmp_path / "ref"))
    ours = ours.delete("a > 2 OR s = 'x'")
    ref.delete("a > 2 OR s = 'x'")
    assert ours.to_table().equals(ref.to_table())
    assert lance.dataset(str(tmp_path / "ours")).to_table().equals(ref.to_table())


# -- bad input --------------------------------------------------------------------------------

BAD = [
    # (sql, words the message must hold)
    ("i > ", ["line 1", "column"]),
    ("i = 2 AND AND", ["line 1", "column", "AND"]),
    ("(i > 1", ["line 1"]),
    ("i > 1 AND\n  (s = 'x'", ["line 2"]),
    ("nope = 1", ["nope", "columns:", "i, f, s"]),
    ("i > 1 AND\n   nope = 1", ["nope", "line 2, column 4"]),
    ("st.zz = 1", ["zz", "fields: a, b"]),
    ("`camelcol` > 3", ["camelcol", "CamelCol"]),
    ("i > 1.5", ["1.5", "int32"]),
    ("i = 'abc'", ["'abc'", "int32"]),
    ("i > '2'", ["'2'"]),
    ("s > 1", ["1", "string"]),
    ("d > '2020-01-01'", ["2020-01-01", "date32"]),
    ("ts > '2020-01-01 00:00:00'", ["timestamp"]),
    ("dec > 1.5", ["1.5", "decimal"]),
    ("b = 1", ["bool"]),
    ("i8 > 300", ["300", "int8"]),
    ("i = 3000000000", ["3000000000"]),
    ("i IN (1, 2.5)", ["2.5"]),
    ("i BETWEEN 1.5 AND 3", ["1.5"]),
    ("i IN ()", []),
    ("NULL", ["boolean"]),
    ("i + 1", ["boolean"]),
    ("NOT (i = 'x')", ["'x'"]),
    ("s LIKE 'x!_y' ESCAPE '!'", ["escape"]),
    ("frobnicate(s)", ["frobnicate"]),
    ("i = 1 +", []),
]


@pytest.mark.parametrize(("sql", "words"), BAD)
def test_bad_sql_raises_like_pylance(data, sql, words):
    table, ds, _ = data
    with pytest.raises(ValueError):  # what pylance raises
        ds.to_table(filter=sql)
    with pytest.raises(SqlError) as info:
        parse_filter(sql, table.schema)
    assert isinstance(info.value, ValueError) and isinstance(info.value, LanceError)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_bad_sql_through_a_dataset(data):
    _, _, uri = data
    ours = lancelot.dataset(uri)
    with pytest.raises(ValueError, match="nope"):
        ours.to_table(filter="nope > 1")
    with pytest.raises(SqlError, match="column 5"):
        ours.count_rows(filter="i > 'x'")


# -- value expressions ------------------------------------------------------------------------

EXPRESSIONS = [
    "i * 2",
    "i + 1",
    "i + i8",
    "f * 2",
    "i / 2",
    "i % 3",
    "-i",
    "f + 1.5",
    "lower(s)",
    "s",
    "st.a + 1",
    "dec + 1",
]


@pytest.mark.parametrize("sql", EXPRESSIONS)
def test_expressions_match_pylance_projections(data, sql):
    table, ds, _ = data
    expected = ds.to_table(columns={"x": sql}).column("x")
    import pyarrow.dataset as pds

    got = pds.dataset(table).to_table(columns={"x": parse_expression(sql, table.schema)}).column("x")
    assert got.type == expected.type, (got.type, expected.type)
    assert got.to_pylist() == expected.to_pylist() or str(got) == str(expected)


def test_expression_literals_take_the_column_type(data):
    table, ds, _ = data
    with pytest.raises(ValueError):
        ds.to_table(columns={"x": "i + 1.5"})
    with pytest.raises(SqlError, match="1.5"):
        parse_expression("i + 1.5", table.schema)


# -- zone maps: a SQL predicate prunes as the same predicate built with pyarrow.compute -----------


@pytest.fixture(scope="module")
def zoned(tmp_path_factory: pytest.TempPathFactory):
    import numpy as np

    n = 20000
    a = np.arange(n, dtype=np.int64)
    t = pa.table(
        {
            "a": a,
            "b": a % 7,
            "f": a.astype(np.float64) / 2,
            "s": pa.array([f"k{i:06d}" for i in range(n)]),
            "d": pa.array(np.datetime64("2020-01-01") + a.astype("timedelta64[D]") // 100),
            "st": pa.StructArray.from_arrays([pa.array(a * 2)], ["x"]),
        }
    )
    ds = lancelot.write_dataset(t, str(tmp_path_factory.mktemp("zones") / "ds"))
    return t, ds


ZONE_PAIRS = [
    ("a >= 19000", pc.field("a") >= 19000),
    ("19000 <= a", pc.field("a") >= 19000),
    ("a < 100 AND b = 3", (pc.field("a") < 100) & (pc.field("b") == 3)),
    ("a BETWEEN 100 AND 200", (pc.field("a") >= 100) & (pc.field("a") <= 200)),
    ("f > 9500.5", pc.field("f") > 9500.5),
    ("f >= 9500", pc.field("f") >= 9500.0),
    ("s = 'k000042'", pc.field("s") == "k000042"),
    ("s < 'k000100' AND a > 5", (pc.field("s") < "k000100") & (pc.field("a") > 5)),
    ("d >= date '2020-07-01'", pc.field("d") >= datetime.date(2020, 7, 1)),
    ("a > 19000 OR b = 1", (pc.field("a") > 19000) | (pc.field("b") == 1)),
]


@pytest.mark.parametrize(("sql", "expr"), ZONE_PAIRS, ids=[p[0] for p in ZONE_PAIRS])
def test_zone_maps_prune_sql_as_expressions(zoned, sql, expr):
    from lancelot.dataset.scan import filter_columns, zone_filters

    table, ds = zoned
    (frag,) = ds.get_fragments()
    parsed = parse_filter(sql, table.schema)
    assert zone_filters(parsed) == zone_filters(expr)
    assert frag.zone_ranges(zone_filters(parsed)) == frag.zone_ranges(zone_filters(expr))
    assert filter_columns(parsed, table.schema.names) == filter_columns(expr, table.schema.names)
    if " OR " not in sql:
        assert sum(b - a for a, b in frag.zone_ranges(zone_filters(parsed))) < table.num_rows  # it prunes
    assert ds.to_table(filter=sql).equals(table.filter(expr))


def test_zone_conjuncts_of_struct_fields_and_sets(zoned):
    from lancelot.dataset.scan import filter_columns, zone_filters

    table, ds = zoned
    parsed = parse_filter("st.x > 100 AND a IN (1, 2) AND s IS NOT NULL AND starts_with(s, 'k01')", table.schema)
    assert zone_filters(parsed) == []  # the plain form: top-level comparisons only
    assert zone_filters(parsed, extended=True) == [
        (("st", "x"), ">", 100),
        ("a", "in", [1, 2]),
        ("s", "is_not_null"),
        ("s", "starts_with", "k01"),
    ]
    built = (
        (pc.field("st", "x") > 100)
        & pc.field("a").isin([1, 2])
        & pc.field("s").is_valid()
        & pc.starts_with(pc.field("s"), "k01")
    )
    assert zone_filters(built, extended=True)[:1] == [(("st", "x"), ">", 100)]
    assert filter_columns(parsed, table.schema.names) == ["a", "s", "st"]
    (frag,) = ds.get_fragments()
    zm = frag.zone_ranges([("a", ">", 19000)])
    assert zm and zm[0][0] > 0
