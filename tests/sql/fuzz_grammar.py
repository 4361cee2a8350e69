"""A seeded random generator of SQL filters and value expressions over one small table holding every
common column type with its edge values (nulls, NaN, -0.0, infinities, integer extremes, unicode and
empty strings), for differential testing of lancelot.sql against pylance (tests/sql/test_fuzz.py,
scripts/sql_fuzz.py).  Expressions are built by the type they return, so most are valid; a share is
deliberately ill-typed, to compare the errors too."""

from __future__ import annotations

import datetime
import decimal
import math
import random

import pyarrow as pa

NAN, INF = float("nan"), float("inf")


def fuzz_table() -> pa.Table:
    """12 rows; column ``n`` numbers them."""
    utc = datetime.timezone.utc
    d0 = datetime.date(2020, 1, 1)
    t0 = datetime.datetime(2020, 1, 1, 12, 30)
    dec = decimal.Decimal
    return pa.table(
        {
            "n": pa.array(range(12), pa.int64()),
            "i8": pa.array([1, -1, 0, None, 127, -128, 5, 2, -3, None, 100, 7], pa.int8()),
            "i16": pa.array([1, 300, None, -300, 0, 32767, -32768, 2, 3, 4, None, 9], pa.int16()),
            "i32": pa.array([1, 2, None, 4, 5, -3, 0, 2147483647, -2147483648, 10, -1, None], pa.int32()),
            "i64": pa.array([10, None, -7, 0, 2**62, -(2**62), 3, 1, 1, 2, -20, 100], pa.int64()),
            "u8": pa.array([1, 2, 255, None, 0, 10, 3, 200, 7, 8, None, 1], pa.uint8()),
            "u32": pa.array([1, None, 0, 4000000000, 5, 6, 7, 8, 9, 10, 11, 12], pa.uint32()),
            "u64": pa.array([1, 2, 3, None, 0, 2**63, 5, 6, 7, 8, 9, 10], pa.uint64()),
            "f32": pa.array([1.5, -0.0, NAN, None, INF, -2.25, 0.0, 3.0, 1e10, -INF, 0.1, 2.0], pa.float32()),
            "f64": pa.array([1.5, None, 3.0, NAN, -2.0, 0.0, -0.0, INF, -INF, 0.1, 1e-300, 2.5], pa.float64()),
            "dec": pa.array(
                [
                    dec(x) if x else None
                    for x in [
                        "1.25",
                        None,
                        "3.50",
                        "-1.00",
                        "2.00",
                        "0.00",
                        "99999999.99",
                        "-0.05",
                        "0.50",
                        "1.00",
                        "12.34",
                        None,
                    ]
                ],
                pa.decimal128(10, 2),
            ),  # fmt: skip
            "b": pa.array([True, False, None, True, False, True, None, False, True, True, False, None]),
            "s": pa.array(["ab", "Abc", None, "x_y", "a%b", "", "héllo", "ÀÉ", " a ", "日本", "a\\b", "abc"]),
            "ls": pa.array(["a", "b", None, "", "ab", "A", "zz", "é", "1", "2.5", "true", "x"], pa.large_string()),
            "bin": pa.array([b"\xab", b"\x01", None, b"", b"ab", b"\x00", b"a", b"b", b"\xff", b"ab", None, b"x"]),
            "d": pa.array(
                [
                    d0 + datetime.timedelta(k) if k is not None else None
                    for k in [0, 1, None, -1, 366, 31, 59, 0, -365, 10000, 200, 1]
                ]
            ),  # fmt: skip
            "ts": pa.array(
                [
                    t0 + datetime.timedelta(hours=h) if h is not None else None
                    for h in [0, 1, None, -24, 12.5, 0.001, 1000, -100000, 5, 6, 7, 8]
                ],
                pa.timestamp("us"),
            ),  # fmt: skip
            "tz": pa.array(
                [
                    datetime.datetime(2020, 1, 1, h, tzinfo=utc) if h is not None else None
                    for h in [0, 5, None, 12, 23, 1, 2, 3, 4, 6, 7, 8]
                ],
                pa.timestamp("us", "UTC"),
            ),  # fmt: skip
            "l": pa.array([[1, 2], [3], None, [], [2, 5], [None, 1], [1], [7, 7, 7], [0], [-1, 2], [2], [1, 2, 3]]),
            "st": pa.array(
                [
                    {"a": 1, "b": "x"},
                    {"a": 2, "b": "y"},
                    None,
                    {"a": None, "b": "z"},
                    {"a": 5, "b": None},
                    {"a": -1, "b": ""},
                    {"a": 0, "b": "x"},
                    None,
                    {"a": 3, "b": "é"},
                    {"a": 1, "b": "a"},
                    {"a": 7, "b": "b"},
                    {"a": 9, "b": "c"},
                ],
                pa.struct([("a", pa.int64()), ("b", pa.string())]),
            ),  # fmt: skip
        }
    )


INTS = ["i8", "i16", "i32", "i64", "u8", "u32", "u64", "st.a"]
FLOATS = ["f32", "f64"]
STRINGS = ["s", "ls", "st.b"]
INT_TYPES = ["tinyint", "smallint", "int", "bigint", "int unsigned", "bigint unsigned", "tinyint unsigned"]
CAST_TYPES = [*INT_TYPES, "float", "double", "string", "varchar", "decimal(10,2)", "decimal(5,1)", "boolean", "date"]
STRING_LITS = ["''", "'a'", "'ab'", "'Abc'", "'é'", "'héllo'", "'x_y'", "'日本'", "' a '", "'1'", "'2.5'", "'true'"]
BIN_LITS = ["X'AB'", "x''", "x'6162'", "NULL"]
CMP = ["=", "<>", "!=", "<", "<=", ">", ">=", "=="]


class Gen:
    """Expressions by the type they return: ``num``, ``str``, ``bool``, ``date``, ``ts``."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def pick(self, xs: list[str]) -> str:
        return self.r.choice(xs)

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    # -- literals ----------------------------------------------------------------------------
    def int_lit(self) -> str:
        return str(self.pick(["0", "1", "2", "-1", "3", "-3", "7", "100", "127", "128", "-129", "255", "256",
                              "2147483647", "9223372036854775807", "-9223372036854775808", "NULL"]))  # fmt: skip

    def float_lit(self) -> str:
        return self.pick(["0.0", "-0.0", "1.5", "-2.25", "0.1", "2.0", "1e10", "3.0", "0.5", "1e-300"])

    # -- typed expressions --------------------------------------------------------------------
    def num(self, depth: int) -> str:
        r = self.r.randrange(16 if depth > 0 else 4)
        if r == 0:
            return self.pick(INTS)
        if r == 1:
            return self.pick(FLOATS + ["dec", *INTS])
        if r == 2:
            return self.int_lit()
        if r == 3:
            return self.float_lit()
        d = depth - 1
        if r in (4, 5):
            return f"({self.num(d)} {self.pick(['+', '-', '*', '/', '%'])} {self.num(d)})"
        if r == 6:
            return f"{self.pick(INTS + FLOATS)} {self.pick(['+', '-', '*', '/', '%'])} {self.int_lit()}"
        if r == 7:
            return f"-{self.num(d)}" if self.chance(0.5) else f"-({self.num(d)})"
        if r == 8:
            return f"CAST({self.any(d)} AS {self.pick(CAST_TYPES[:11] + ['decimal(10,2)'])})"
        if r == 9:
            fn = self.pick(["abs", "sqrt", "ln", "log10", "exp", "round", "trunc", "signum", "ceil", "floor",
                            "cos", "log2", "cbrt", "isnan", "iszero"])  # fmt: skip
            return f"{fn}({self.num(d)})"
        if r == 10:
            fn = self.pick(["length", "char_length", "octet_length", "bit_length", "ascii", "strpos"])
            if fn == "strpos":
                return f"strpos({self.str_(d)}, {self.pick(STRING_LITS)})"
            return f"{fn}({self.str_(d)})"
        if r == 11:
            fn = self.pick(["coalesce", "nullif", "greatest", "least", "ifnull", "power", "round", "log", "atan2"])
            if fn == "round":
                return f"round({self.num(d)}, {self.pick(['0', '1', '2', '-1'])})"
            return f"{fn}({self.num(d)}, {self.num(d)})"
        if r == 12:
            return f"CASE WHEN {self.bool_(d)} THEN {self.num(d)} ELSE {self.num(d)} END"
        if r == 13:
            return self.pick(["array_length(l)", "cardinality(l)", "l[1]", "l[2]", "l[-1]", "array_element(l, 1)",
                              "array_position(l, 2)", "date_part('year', d)", "date_part('month', ts)",
                              "extract(year from d)", "date_part('day', tz)", "d - d", "st.a"])  # fmt: skip
        if r == 14:
            x = self.pick(["i32", "i64", "i8", "f64", "dec", "u8", "st.a"])
            return f"CASE {x} WHEN {self.int_lit()} THEN {self.num(d)} WHEN {self.int_lit()} THEN {self.num(d)} END"
        return f"TRY_CAST({self.any(d)} AS {self.pick(CAST_TYPES[:11])})"

    def str_(self, depth: int) -> str:
        r = self.r.randrange(14 if depth > 0 else 2)
        if r == 0:
            return self.pick(STRINGS)
        if r == 1:
            return self.pick(STRING_LITS)
        d = depth - 1
        if r == 2:
            fn = self.pick(["lower", "upper", "initcap", "reverse", "btrim", "ltrim", "rtrim", "trim"])
            return f"{fn}({self.str_(d)})"
        if r == 3:
            return f"concat({self.any(d)}, {self.any(d)})"
        if r == 4:
            return f"concat_ws({self.pick(STRING_LITS)}, {self.any(d)}, {self.any(d)})"
        if r == 5:
            return f"CAST({self.any(d)} AS {self.pick(['string', 'varchar'])})"
        if r == 6:
            fn = self.pick(["lpad", "rpad"])
            fill = self.pick(["", "", ", '*'", ", 'xy'", ", ''", ", 'é'"])
            return f"{fn}({self.str_(d)}, {self.pick(['0', '1', '3', '5', '-1'])}{fill})"
        if r == 7:
            fn = self.pick(["substr", "substring", "left", "right"])
            if fn in ("left", "right"):
                return f"{fn}({self.str_(d)}, {self.pick(['0', '1', '2', '-1', '10'])})"
            n = self.pick(["", ", 1", ", 2", ", 0", ", -1", ", 10"])
            return f"{fn}({self.str_(d)}, {self.pick(['1', '2', '0', '-1', '3'])}{n})"
        if r == 8:
            return f"{self.str_(d)} || {self.any(d)}"
        if r == 9:
            return f"replace({self.str_(d)}, {self.pick(STRING_LITS)}, {self.pick(STRING_LITS)})"
        if r == 10:
            return f"repeat({self.str_(d)}, {self.pick(['0', '2', '-1', '3'])})"
        if r == 11:
            return f"CASE WHEN {self.bool_(d)} THEN {self.str_(d)} ELSE {self.str_(d)} END"
        if r == 12:
            return self.pick([f"split_part({self.str_(d)}, 'b', 1)", f"split_part({self.str_(d)}, '_', 2)",
                              f"regexp_replace({self.str_(d)}, 'a', 'Z')", f"translate({self.str_(d)}, 'ab', 'xy')",
                              f"coalesce({self.str_(d)}, {self.str_(d)})", f"nullif({self.str_(d)}, 'ab')",
                              f"to_hex({self.pick(INTS)})", f"chr({self.pick(['65', '233', 'u8'])})",
                              f"md5({self.str_(d)})"])  # fmt: skip
        return f"TRY_CAST({self.any(d)} AS string)"

    def date(self, depth: int) -> str:
        return self.pick(["d", "date '2020-01-01'", "DATE '2021-02-01'", "CAST(ts AS date)", "'2020-01-02'::date",
                          "date_trunc('month', d)", "CAST(tz AS date)", "d + INTERVAL '1 day'",
                          "d - INTERVAL '1 month'"])  # fmt: skip

    def ts(self, depth: int) -> str:
        return self.pick(["ts", "tz", "timestamp '2020-01-01 12:30:00'", "TIMESTAMP '2020-01-01T13:00:00'",
                          "CAST(d AS timestamp)", "date_trunc('hour', ts)", "to_timestamp('2020-01-01')",
                          "timestamp '2020-01-01 00:00:00+00:00'", "ts + INTERVAL '1 hour'",
                          "tz + INTERVAL '1 year 2 days'"])  # fmt: skip

    def any(self, depth: int) -> str:
        r = self.r.randrange(6)
        return [self.num, self.num, self.str_, self.bool_, self.date, self.ts][r](depth)

    def bool_(self, depth: int) -> str:
        r = self.r.randrange(22 if depth > 0 else 3)
        if r == 0:
            return self.pick(["b", "TRUE", "FALSE", "NULL", "b", "st.a > 1"])
        if r == 1:
            lit = self.pick([self.int_lit(), self.float_lit()])
            return f"{self.pick(INTS + FLOATS + ['dec'])} {self.pick(CMP)} {lit}"
        if r == 2:
            return f"{self.pick(STRINGS)} {self.pick(CMP)} {self.pick(STRING_LITS)}"
        d = depth - 1
        if r in (3, 4):
            return f"({self.bool_(d)}) {self.pick(['AND', 'OR'])} ({self.bool_(d)})"
        if r == 5:
            return f"NOT ({self.bool_(d)})"
        if r in (6, 7):
            return f"{self.num(d)} {self.pick(CMP)} {self.num(d)}"
        if r == 8:
            return f"{self.str_(d)} {self.pick(CMP)} {self.str_(d)}"
        if r == 9:
            n = self.r.randint(1, 4)
            items = ", ".join(self.pick([self.int_lit(), self.float_lit(), "NULL"]) for _ in range(n))
            col = self.pick(INTS + FLOATS + ["dec"])
            return f"{col} {self.pick(['IN', 'NOT IN'])} ({items})"
        if r == 10:
            items = ", ".join(self.pick([*STRING_LITS, "NULL"]) for _ in range(self.r.randint(1, 3)))
            return f"{self.pick(STRINGS)} {self.pick(['IN', 'NOT IN'])} ({items})"
        if r == 11:
            x = self.pick(INTS + FLOATS + ["dec"])
            return f"{x} {self.pick(['BETWEEN', 'NOT BETWEEN'])} {self.int_lit()} AND {self.int_lit()}"
        if r == 12:
            pat = self.pick(["'a%'", "'%b'", "'_'", "'x\\_y'", "'%'", "'A%'", "'_b%'", "''", "'a\\%b'", "'%é%'",
                             "'h_llo'", "'a!_%' ESCAPE '!'", "'%\\\\%'"])  # fmt: skip
            op = self.pick(["LIKE", "ILIKE", "NOT LIKE", "NOT ILIKE"])
            return f"{self.pick([*STRINGS, 'lower(s)'])} {op} {pat}"
        if r == 13:
            return f"{self.any(d)} IS {self.pick(['', 'NOT '])}NULL"
        if r == 14:
            return f"({self.bool_(d)}) IS {self.pick(['', 'NOT '])}{self.pick(['TRUE', 'FALSE'])}"
        if r == 15:
            return f"{self.date(d)} {self.pick(CMP)} {self.date(d)}"
        if r == 16:
            return f"{self.ts(d)} {self.pick(CMP)} {self.ts(d)}"
        if r == 17:
            fn = self.pick(["starts_with", "ends_with", "contains", "regexp_like"])
            return f"{fn}({self.str_(d)}, {self.pick(STRING_LITS)})"
        if r == 18:
            return self.pick([f"array_has(l, {self.int_lit()})", f"array_contains(l, {self.int_lit()})",
                              "array_has_any(l, [1, 7])", "array_has_all(l, [1, 2])", "l[1] > 1",
                              "array_position(l, 1) = 1", f"array_length(l) {self.pick(CMP)} 1",
                              "cardinality(l) = 0", "l IS NULL", "array_has(l, NULL)"])  # fmt: skip
        if r == 19:
            return f"bin {self.pick(CMP)} {self.pick(BIN_LITS)}"
        if r == 20:
            return f"{self.any(d)} IS {self.pick(['', 'NOT '])}DISTINCT FROM {self.any(d)}"
        return f"CASE WHEN {self.bool_(d)} THEN {self.bool_(d)} ELSE {self.bool_(d)} END"


def same_values(a: list, b: list) -> bool:
    """Equal lists, NaN equal to NaN, -0.0 distinct from 0.0 (as DataFusion prints them)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, float) and isinstance(y, float):
            if math.isnan(x) and math.isnan(y):
                continue
            if x != y or math.copysign(1, x) != math.copysign(1, y):
                return False
        elif isinstance(x, list) and isinstance(y, list):
            if not same_values(x, y):
                return False
        elif isinstance(x, dict) and isinstance(y, dict):
            if x.keys() != y.keys() or not same_values(list(x.values()), list(y.values())):
                return False
        elif x != y or type(x) is not type(y):
            return False
    return True
