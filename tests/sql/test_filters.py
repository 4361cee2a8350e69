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
def data(pylance_dataset) -> tuple[pa.Table, lance.LanceDataset, str]:
    t = _table()
    uri = pylance_dataset("sql", t)
    return t, lance.dataset(uri), uri


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
    "i IN (1, i)", "NOT (f IN (1, '3'))", "st.a IN (1, 2.5)", "f IN (1.5, 3.0)", "f IN (0)", "f IN (-0.0)",
    "f NOT IN (0, 1)", "f IN (1, NULL)", "f NOT IN (1.5, NULL)", "s NOT IN ('ab', NULL)", "d IN (date '2020-01-01')",
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
    "dec = decimal(10,2) '1.25'", "dec > decimal(8,3) '1.000'", "ts > timestamp(3) '2020-01-01 00:00:00'",
    "ts > timestamp(0) '2020-01-01 00:00:00'", "ts > timestamp(9) '2020-01-01 00:00:00.5'",
    "CAST(i8 AS int unsigned) > 1", "CAST(i AS tinyint) > 1", "CAST(s AS binary) IS NULL", "CAST(d AS timestamp) > ts",
    "i8::bigint unsigned > 1", "CAST(i AS integer) = 2", "CAST(i AS datetime) IS NULL",
    # the reference's documented examples (read_and_write.md)
    "((i IN (1, 2)) AND (st['b'] IS NOT NULL)) OR NOT b", "`CamelCol` = 1 AND `a b` IS NOT NULL AND st.`a` < 2",
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
    "nullif(i, 2) IS NULL", "iszero(f)", "strpos(s, 'b') = 2", "instr(s, 'b') = 0", "left(s, 1) = 'a'",
    "right(s, 1) = 'b'", "btrim(s) = 'ab'", "ltrim(s, 'a') = 'b'", "rtrim(s) = 'ab'", "initcap(s) = 'Ab'",
    "regexp_replace(s, 'a', 'z') = 'zb'", "split_part(s, '_', 1) = 'x'", "split_part(s, '_', 2) = ''",
    "starts_with(s, NULL)", "lower(NULL) IS NULL",
    "array_has_any(l, [2, 3])", "array_has_all(l, [2, 5])", "array_has_any(l, [])", "array_position(l, 2) = 2",
    "array_element(l, 1) = 1", "l[1] = 2", "l[2] = 2", "l[0] IS NULL", "l[5] IS NULL", "l[1] IS NULL",
    "l[-1] = 2", "l[-2] = 1", "l[-3] IS NULL", "l[-1] IS NULL", "array_element(l, -1) = 5",
    "date_part('year', d) = 2020", "date_part('month', d) = 1", "date_part('day', ts) = 1",
    "date_part('hour', ts) = 12", "date_part('dow', d) = 3", "datepart('year', d) = 2020",
    "date_trunc('month', d) = date '2020-01-01'", "now() > ts", "current_date() > d",
    "to_timestamp('2020-01-01') < ts", "d - date '2020-01-01' > 0", "d - d = 0",
    # NaN order: NaN above every number, a negated NaN below
    "-f < -100", "-f > 100", "-(-f) > 100", "-f = -f", "1 < f", "-1.5 >= f", "f = f", "f > i",
]  # fmt: skip


def _rows(t: pa.Table) -> list[int]:
    return sorted(t.column("n").to_pylist())


@pytest.mark.parametrize("sql", FILTERS)
def test_filter_rows_match_pylance(data, sql):
    table, ds, _ = data
    expected = _rows(ds.to_table(filter=sql))
    assert _rows(table.filter(parse_filter(sql, table.schema))) == expected


def _types_table() -> pa.Table:
    utc = datetime.timezone.utc
    stamps = [datetime.datetime(2020, 1, 1, h, tzinfo=utc) for h in (0, 5, 6, 12)] + [None]
    return pa.table(
        {
            "n": pa.array(range(5)),
            "tz": pa.array(stamps, pa.timestamp("us", "UTC")).cast(pa.timestamp("us", "America/New_York")),
            "tsn": pa.array([1, 2, 3, 4, 5], pa.timestamp("ns")),
            "f32": pa.array([1.5, 2.25, None, float("nan"), -1], pa.float32()),
            "ls": pa.array(["a", "b", None, "c", "a"], pa.large_string()),
            "cat": pa.array(["a", "b", None, "c", "a"]).dictionary_encode(),
            "bin": pa.array([b"\xab", b"\x01", None, b"", b"\xab\xcd"]),
            "u8": pa.array([1, 2, 3, 200, 5], pa.uint8()),
            "vec": pa.array([[1.0, 2.0], [3.0, 4.0], None, [0.0, 0.0], [1.0, 1.0]], pa.list_(pa.float32(), 2)),
            "ll": pa.array([["a"], ["b", "c"], None, [], ["a", "z"]]),
        }
    )


TYPED_FILTERS = [
    "tz > timestamp '2020-01-01 00:00:00'", "tz >= timestamp '2020-01-01 05:00:00'",
    "tz = timestamp '2020-01-01 00:00:00'", "tz > date '2020-01-01'",
    "tsn > timestamp '1970-01-01 00:00:00.000000003'", "tsn = CAST(3 AS timestamp)",
    "f32 > 1.5", "f32 = 2.25", "f32 > 1", "f32 < 2", "-f32 < -100",
    "ls = 'a'", "ls LIKE 'a%'", "ls > 'a'", "cat = 'a'", "cat IN ('a', 'c')", "cat LIKE 'a%'", "cat IS NULL",
    "bin = X'AB'", "bin = x'abcd'", "u8 > 100", "u8 = 200", "u8 + 100 > 250",
    "vec IS NULL", "array_has(ll, 'a')", "array_has(vec, 1.0)", "array_length(vec) = 2",
]  # fmt: skip


@pytest.fixture(scope="module")
def typed(pylance_dataset) -> tuple[pa.Table, lance.LanceDataset]:
    t = _types_table()
    return t, lance.dataset(pylance_dataset("sqltypes", t))


@pytest.mark.parametrize("sql", TYPED_FILTERS)
def test_filters_on_more_types_match_pylance(typed, sql):
    table, ds = typed
    expected = _rows(ds.to_table(filter=sql))
    assert _rows(table.filter(parse_filter(sql, table.schema))) == expected


@pytest.mark.parametrize("sql", ["tz > '2020-01-01 00:00:00'", "u8 > -1", "f32 = 'x'", "ls = 1"])
def test_wrong_literals_on_more_types(typed, sql):
    table, ds = typed
    with pytest.raises(ValueError):
        ds.to_table(filter=sql)
    with pytest.raises(SqlError, match="cannot be converted"):
        parse_filter(sql, table.schema)


def test_dataset_scans_take_sql_strings(data):
    table, ds, uri = data
    ours = lancelot.dataset(uri)
    for sql in ["i > 1 AND s = 'ab'", "st.a > 1", "s LIKE 'a%' OR f > 1", "array_has(l, 2)"]:
        expected = _rows(ds.to_table(filter=sql))
        assert _rows(ours.to_table(filter=sql)) == expected, sql
        assert ours.count_rows(filter=sql) == len(expected), sql
        batches = list(ours.to_batches(filter=sql))
        assert sorted(n for b in batches for n in b.column("n").to_pylist()) == expected, sql
        (frag,), (ref,) = ours.get_fragments(), ds.get_fragments()
        assert frag.count_rows(sql) == ref.count_rows(filter=sql), sql
        assert _rows(frag.read(filter=sql)) == _rows(ref.to_table(filter=sql)), sql
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
    ("i > ", ["expected an expression after '>'", "line 1, column 3"]),
    ("s = 'abc", ["unterminated quote"]),
    ("i BETWEEN 1", ["BETWEEN needs both bounds"]),
    ("", ["empty"]),
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
    "i * 2", "i + 1", "i + i8", "f * 2", "i / 2", "i % 3", "-i", "f + 1.5", "lower(s)", "s", "st.a + 1", "dec + 1",
    "d", "i > 2", "s || 'x'", "CAST(i AS string)", "i IN (1, 2)", "date_part('year', d)", "l[1]", "abs(i)",
    "coalesce(i, 0)", "array_length(l)", "i8 * 2", "u + 1", "u * i", "dec * 2", "dec / 2", "dec - 1", "dec / i",
    "i BETWEEN 1 AND 3", "upper(s)", "strpos(s, 'b')", "st.a * 2", "power(i, 2)", "nullif(i, 2)",
    "CAST(ts AS date)", "i::float", "st", "array_has(l, 2)", "d - date '2020-01-01'",
    "ts - timestamp '2020-01-01 00:00:00'",
    # casts that lose digits: arrow-rs truncates to integers, rounds half away from zero to decimals
    "CAST(dec AS int)", "CAST(dec AS tinyint)", "CAST(dec AS decimal(10,1))", "CAST(dec AS decimal(12,4))",
    # numeric functions (Rust f64 semantics: log(x) = ln(x) / ln(10)), result types as DataFusion's
    "ln(i)", "log(i)", "log(2.0, i)", "log10(f)", "log2(i)", "exp(f)", "trunc(f, 1)", "trunc(i)", "greatest(i, f)",
    "least(i, 2)", "ifnull(i, 5)", "nvl(f, 1)", "round(dec, 1)", "round(dec)", "round(dec, 3)", "degrees(f)",
    "radians(f)", "atan2(f, i)", "cot(f)", "nanvl(f, 1)", "signum(f)", "sin(i)", "pi() * i",
    "date_trunc('month', d)", "left(s, 2)", "right(s, 1)",
    "repeat(s, 2)", "repeat(s, i)", "concat_ws('-', s, s)", "concat_ws('-', s, NULL, 'x')", "lpad(s, 6, '*')",
    "rpad(s, 2)", "bit_length(s)",
    "i + CAST(-2.5 AS int)", "i + CAST(2.5 AS decimal(4,0))", "dec + CAST(-0.25 AS decimal(4,1))",
]  # fmt: skip


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


@pytest.mark.parametrize("sql", ["i + 1", "i * 2 > 3", "i IN (1, 4)", "i + 1.5"])
def test_one_text_on_two_schemas_types_as_pylance(tmp_path, sql):
    """A text is parsed once and shared, but typed per schema: on int32, int64 and float64 columns as pylance types it
    (``i + 1.5`` on an integer column is refused, then typed on the float one)."""
    for t in (pa.int32(), pa.int64(), pa.float64()):
        uri = str(tmp_path / str(t))
        lance.write_dataset(pa.table({"i": pa.array([1, 2, 4], t)}), uri)
        ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
        try:
            want = theirs.to_table(columns={"x": sql})
        except Exception as e:
            with pytest.raises(type(e)):
                ours.to_table(columns={"x": sql})
            continue
        assert ours.to_table(columns={"x": sql}) == want, t


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


def test_filter_columns_of_unusual_expressions():
    from lancelot.dataset.scan import filter_columns, zone_filters

    names = ["a", "b", "s"]
    assert filter_columns(pc.field(1) > 1, names) == names  # a position: every column, to be safe
    assert zone_filters(pc.field(1) > 1) == []
    schema = pa.schema([("a", pa.int64()), ("b", pa.list_(pa.int64())), ("s", pa.utf8())])
    e = parse_filter("array_has(b, 2) AND a > 1 AND s = 'it''s'", schema)
    assert filter_columns(e, names) == names
    assert zone_filters(e) == [("a", ">", 1), ("s", "=", "it's")]
    assert zone_filters(parse_filter("NOT (a > 1)", schema)) == []
    assert zone_filters((pc.field("a") > 1) & pc.scalar(True)) == [("a", ">", 1)]


@pytest.mark.parametrize("sql", ["CAST(i AS int unsigned) IS NULL", "CAST(s AS int) > 1", "i / 0 = 1", "i % 0 = 1"])
def test_errors_while_filtering_are_value_errors(data, sql):
    table, ds, uri = data
    with pytest.raises(ValueError):
        ds.to_table(filter=sql)
    with pytest.raises(ValueError):
        lancelot.dataset(uri).to_table(filter=sql)


def test_extended_conjuncts_prune_through_the_zone_maps(zoned):
    """Struct fields, IN and starts_with conjuncts from SQL prune as the same pyarrow expressions do."""
    from lancelot.dataset.fragment_reads import _zone_maps
    from lancelot.dataset.scan import zone_filters

    table, ds = zoned
    (frag,) = ds.get_fragments()
    ((lf, _),) = frag.file_columns()
    zm = _zone_maps(lf)
    assert zm is not None
    pairs = [
        ("st.x > 38000", pc.field("st", "x") > 38000),
        ("a IN (5, 6)", pc.field("a").isin([5, 6])),
        ("starts_with(s, 'k0199')", pc.starts_with(pc.field("s"), "k0199")),
    ]
    for sql, expr in pairs:
        ours = zm.row_ranges_matching(zone_filters(parse_filter(sql, table.schema), extended=True))
        assert ours == zm.row_ranges_matching(zone_filters(expr, extended=True)), sql
        assert sum(b - a for a, b in ours) < table.num_rows, sql  # it prunes
        assert sum(b - a for a, b in ours) >= table.filter(expr).num_rows, sql


def test_list_functions_on_chunked_and_sliced_tables(data):
    table, ds, _ = data
    chunked = pa.concat_tables([table.slice(0, 2), table.slice(2, 1), table.slice(3)])
    for sql in ["array_has(l, 2)", "array_position(l, 1) = 2", "array_position(l, 5) IS NULL", "l[2] = 2", "l[-1] = 2"]:
        expected = _rows(ds.to_table(filter=sql))
        e = parse_filter(sql, table.schema)
        assert _rows(chunked.filter(e)) == expected, sql
        assert _rows(table.slice(1).filter(e)) == [n for n in expected if n >= 1], sql
