"""DataFusion scalar functions lancelot's SQL lacked (strings, math, date / time, conditionals, lists, bitwise
operators), each checked against pylance on a twin dataset: in ``ds.sql`` (schema with nullability and values),
as a scan's computed column, and in filters."""

from __future__ import annotations

import datetime

import lance
import pyarrow as pa
import pytest

import lancelot


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    path = tmp_path_factory.mktemp("functions_more") / "ds"
    us = datetime.datetime
    table = pa.table(
        {
            "i": pa.array([12, -18, None, 0], pa.int32()),
            "b": pa.array([8, 27, 5, None], pa.int64()),
            "u": pa.array([1, 2, 3, 4], pa.uint8()),
            "ts": pa.array(
                [us(1969, 12, 31, 23, 59, 59, 500000), us(2020, 1, 1, 0, 0, 0, 700000), None, us(1970, 1, 1)]
            ),
            "tz": pa.array([0, 1500, None, -1500], pa.timestamp("ms", "UTC")),
            "d": pa.array([datetime.date(1969, 12, 31), datetime.date(2020, 1, 1), None, datetime.date(1970, 1, 2)]),
            "s": ["a,b,,c", None, "hello", ""],
            "l": pa.array([[1, None, 3], [], None, [2]], pa.list_(pa.int64())),
            "fl": pa.array([[1.5, None], [0.1], None, []], pa.list_(pa.float64())),
            "sl": pa.array([["a", None, "b"], [], None, ["c"]], pa.list_(pa.string())),
        }
    )
    lance.write_dataset(table, str(path))
    return lancelot.dataset(path), lance.dataset(str(path))


EXPRESSIONS = [
    # strings
    "sha224(s)",
    "sha256(s)",
    "sha512(s)",
    "digest(s, 'sha256')",
    "digest(s, 'md5')",
    "regexp_count(s, ',')",
    "levenshtein(s, 'hallo')",
    "find_in_set('b', s)",
    "substr_index(s, ',', 2)",
    "substr_index(s, ',', -1)",
    "string_to_array(s, ',')",
    "string_to_array(s, ',', '')",
    "string_to_array(s, '')",
    "abs(position(',' IN s))",  # (POSITION ... IN: inside a function's arguments, as lance's planner)
    # math
    "gcd(i, b)",
    "lcm(i, b)",
    "gcd(i, 0)",
    "lcm(-3, i)",
    "gcd(u, u)",
    # date / time
    "date_part('epoch', ts)",
    "date_part('epoch', d)",
    "date_part('epoch', tz)",
    "to_unixtime(ts)",
    "to_unixtime(d)",
    "to_unixtime(tz)",
    "from_unixtime(b)",
    "from_unixtime(i)",
    "to_char(d, '%Y-%m-%d')",
    "to_char(d, '%d/%m/%Y %H')",
    "to_char(ts, '%Y-%m-%d %H:%M:%S')",
    "to_char(ts, '%b %e %a %j %y %B %A %%')",
    "to_char(tz, '%H:%M:%S')",
    "date_format(ts, '%F %T')",
    # conditionals
    "nvl2(i, 1, 2)",
    "nvl2(i, b, 2)",
    "nvl2(i, 'x', 'y')",
    "nvl2(s, i, b)",
    # lists
    "make_array(i, b)",
    "make_array(i, 1.5)",
    "make_array(s, 'q')",
    "empty(l)",
    "array_to_string(l, '-')",
    "array_to_string(fl, '-')",
    "array_to_string(sl, '-')",
    "array_to_string(l, '-', 'N')",
    "array_join(sl, '')",
    # bitwise
    "i << 1",
    "i >> 1",
    "u << 1",
    "abs(i & b)",
    "abs(i | 1)",
]


def _sql(ds, expr: str) -> pa.Table:
    return ds.sql(f"SELECT {expr} AS r FROM dataset").build().to_stream_reader().read_all()


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_sql_select(twin, expr: str) -> None:
    ours, theirs = twin
    want = _sql(theirs, expr)
    got = _sql(ours, expr)
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_scan_column(twin, expr: str) -> None:
    ours, theirs = twin
    want = theirs.to_table(columns={"r": expr})
    got = ours.to_table(columns={"r": expr})
    assert got.schema.field("r").type == want.schema.field("r").type
    assert got.to_pylist() == want.to_pylist()


FILTERS = [
    "i << 1 > 2",
    "abs(i & 1) = 1",
    "current_date > d",
    "nvl2(i, 1, 2) = 1",
    "gcd(i, b) > 1",
    "regexp_count(s, ',') > 1",
    "levenshtein(s, 'hallo') < 3",
    "empty(l)",
    "array_length(make_array(i, b)) = 2",
    "to_unixtime(ts) > 0",
    "from_unixtime(b) > ts",
    "string_to_array(s, ',')[1] = 'a'",
]


@pytest.mark.parametrize("where", FILTERS)
def test_filter(twin, where: str) -> None:
    ours, theirs = twin
    assert ours.to_table(filter=where).to_pylist() == theirs.to_table(filter=where).to_pylist()


@pytest.mark.parametrize("where", ["position(',' IN s) > 0"])
def test_refused_in_filters(twin, where: str) -> None:
    """lance's planner takes ``POSITION(... IN ...)`` only inside a function's arguments."""
    ours, theirs = twin
    with pytest.raises(ValueError):
        theirs.to_table(filter=where)
    with pytest.raises(ValueError):
        ours.to_table(filter=where)


def test_lcm_overflow_fails(twin) -> None:
    ours, theirs = twin
    with pytest.raises(ValueError):
        _sql(theirs, "lcm(b, 9223372036854775807)")
    with pytest.raises(ValueError, match="overflow"):
        _sql(ours, "lcm(b, 9223372036854775807)")
