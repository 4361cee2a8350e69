"""Pushed filters applied to the rows a task reads (lancelot/spark/row_filter.py), without a SparkSession.

The reader hands the filters it evaluates back to Spark as applied, so each must keep exactly
the rows Spark keeps: each test compares with Spark's semantics written out in Python (a null never
passes a comparison; strings compare in code-point order, which is UTF-8 byte order).
"""

from __future__ import annotations

import datetime as dt
import operator

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import types as T  # noqa: E402
from pyspark.sql.datasource import (  # noqa: E402
    EqualTo,
    GreaterThanOrEqual,
    In,
    LessThan,
    Not,
    StringContains,
    StringStartsWith,
)

import lancelot  # noqa: E402
from lancelot.spark import LanceDataSource  # noqa: E402
from lancelot.spark.reader import LancePushdownReader, zone_filter  # noqa: E402
from lancelot.spark.row_filter import RowFilter, exact_test, filtered_read, row_filter  # noqa: E402

N = 3000


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    nulls = rng.random(N) < 0.1
    words = ["", "a", "ab", "abc", "b", "é", "zz", "Ω"]
    return pa.table(
        {
            "i64": pa.array(rng.integers(-50, 50, N), pa.int64(), mask=nulls),
            "i8": pa.array(rng.integers(-128, 128, N), pa.int8()),
            "u32": pa.array(rng.integers(0, 2**32, N, dtype=np.uint64), pa.uint32()),
            "d": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=int(x)) for x in rng.integers(0, 60, N)]),
            "b": pa.array(rng.random(N) < 0.5, mask=rng.random(N) < 0.2),
            "s": pa.array([words[x] for x in rng.integers(0, len(words), N)], mask=rng.random(N) < 0.1),
            "f": pa.array(rng.random(N)),
        }
    )


_PY = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _spark_passes(v, op, value) -> bool:
    """Whether Spark keeps a row whose column holds ``v`` under ``op value``."""
    if op == "is_null":
        return v is None
    if op == "is_not_null":
        return v is not None
    if v is None:
        return False
    if op == "in":
        return v in [x for x in value if x is not None]
    if op == "starts_with":
        return v.startswith(value)
    return _PY[op](v, value)


FILTERS = [
    ("i64", "=", 7),
    ("i64", "!=", 7),
    ("i64", "<", 0),
    ("i64", ">=", 49),
    ("i64", "in", [1, 2, None, 3]),
    ("i64", "in", [None]),
    ("i64", "is_null", None),
    ("i64", "is_not_null", None),
    ("i8", "<=", -100),
    ("i8", ">", 126),
    ("u32", ">", 2**31),
    ("d", "<", dt.date(2020, 1, 10)),
    ("d", "=", dt.date(2020, 2, 1)),
    ("d", "in", [dt.date(2020, 1, 1), dt.date(2020, 1, 3)]),
    ("b", "=", True),
    ("b", "!=", True),
    ("s", "=", "ab"),
    ("s", "!=", "ab"),
    ("s", "<", "b"),
    ("s", ">", "zz"),
    ("s", ">=", "é"),
    ("s", "in", ["a", None, "Ω"]),
    ("s", "starts_with", "a"),
    ("s", "is_null", None),
]


@pytest.mark.parametrize("flt", FILTERS, ids=lambda f: f"{f[0]} {f[1]} {f[2]!r}")
def test_each_test_keeps_exactly_the_rows_spark_keeps(flt):
    t = _table()
    name, op, value = flt
    zf = ((name,), op) if op in ("is_null", "is_not_null") else ((name,), op, value)
    test = exact_test(zf, t.schema, {})
    assert test is not None
    got = RowFilter((test,)).matching(t)
    col = t.column(name).to_pylist()
    want = [i for i, v in enumerate(col) if _spark_passes(v, op, value)]
    assert got.tolist() == want


def test_tests_combine_as_a_conjunction_and_slices_keep_their_offsets():
    t = _table().slice(17, 2000)
    rf = row_filter([(("i64",), ">", 0), (("s",), "starts_with", "a")], t.schema, {})
    got = rf.matching(t).tolist()
    want = [
        i
        for i, (a, s) in enumerate(zip(t.column("i64").to_pylist(), t.column("s").to_pylist()))
        if a is not None and a > 0 and s is not None and s.startswith("a")
    ]
    assert got == want and got


@pytest.mark.parametrize(
    "zf",
    [
        (("f",), "<", 0.5),  # floats: NaN compares differently in Spark
        (("i64",), "=", 1.5),  # a value of another type
        (("i64",), "=", True),
        (("i8",), "=", 300),  # out of the column's range
        (("u32",), ">", -1),
        (("s",), "=", 3),
        (("d",), "<", dt.datetime(2020, 1, 1)),
        (("b",), "<", True),
        (("s",), "ends_with", "a"),
        (("st", "x"), "=", 1),  # nested
        (("nope",), "=", 1),
    ],
)
def test_filters_spark_might_evaluate_differently_are_left_to_spark(zf):
    schema = _table().schema.append(pa.field("st", pa.struct([("x", pa.int32())])))
    assert exact_test(zf, schema, {}) is None


def test_a_collated_string_column_is_left_to_spark():
    schema = pa.schema([("s", pa.string())])
    assert exact_test((("s",), "=", "a"), schema, {"s": T.StringType()}) is not None
    assert exact_test((("s",), "=", "a"), schema, {"s": T.StringType("UTF8_LCASE")}) is None


def test_filtered_read_dense_sparse_and_empty(tmp_path):
    t = _table()
    lancelot.write_table(t, str(tmp_path / "a.lance"))
    f = lancelot.LanceFile(str(tmp_path / "a.lance"))
    cols = ["s", "i64", "d", "f"]
    for tests in ([("i64", "is_not_null", None)], [("i64", "=", 7)], [("i64", ">", 1000)], [("i8", "<", 0)]):
        rf = RowFilter(tuple(tests))
        got = filtered_read(f.read_range, f.take, 100, 2100, cols, rf)
        rows = t.slice(100, 2000)
        keep = rf.matching(rows).tolist()
        if not keep:
            assert got is None
            continue
        want = rows.take(pa.array(keep)).select(cols)
        assert got.equals(want), tests


def test_a_lookup_reads_only_the_matching_row_of_a_dataset_with_deletions(tmp_path):
    import pyarrow.compute as pc

    path = str(tmp_path / "ds")
    n = 40_000
    t = pa.table({"k": pa.array(np.arange(n), pa.int64()), "s": pa.array([f"v{i % 97}" for i in range(n)])})
    lancelot.write_dataset(t, path, max_rows_per_file=10_000)
    lancelot.dataset(path).delete(pc.field("k").isin(list(range(0, n, 5))))
    opts = {"path": path}

    def read(filters):
        r = LancePushdownReader(opts, LanceDataSource(opts).schema())
        back = list(r.pushFilters(filters))
        # handed back to Spark: exactly the filters the reader does not evaluate
        assert back == [f for f in filters if isinstance(f, StringContains)]
        return pa.Table.from_batches([b for p in r.partitions() for b in r.read(p)], schema=r.target)

    assert read([EqualTo(("k",), 12_346)]).to_pylist() == [{"k": 12_346, "s": f"v{12_346 % 97}"}]
    assert read([EqualTo(("k",), 12_345)]).num_rows == 0  # deleted
    got = read([GreaterThanOrEqual(("k",), 30_000), In(("s",), ("v3", "v4")), Not(EqualTo(("k",), 30_073))])
    want = [k for k in range(30_000, n) if k % 5 and k % 97 in (3, 4) and k != 30_073]
    assert got.column("k").to_pylist() == want
    got = read([LessThan(("k",), 5000), StringStartsWith(("s",), "v1")])
    assert got.column("k").to_pylist() == [k for k in range(5000) if k % 5 and str(k % 97).startswith("1")]
    # a filter it does not evaluate is left to Spark (handed back); the others still apply
    got = read([LessThan(("k",), 50), StringContains(("s",), "9")])
    assert got.column("k").to_pylist() == [k for k in range(50) if k % 5]


def test_zone_filter_paths_reach_row_filters():
    schema = pa.schema([("Id", pa.int64())])
    zf = zone_filter(EqualTo(("id",), 5), schema)
    assert row_filter([zf], schema, {}) == RowFilter((("Id", "=", 5),))


def test_a_column_cast_by_a_user_schema_is_left_to_spark():
    schema = pa.schema([("i64", pa.int64()), ("u32", pa.uint32())])
    assert exact_test((("i64",), "=", 5), schema, {"i64": T.LongType()}) is not None
    assert exact_test((("u32",), "=", 5), schema, {"u32": T.LongType()}) is not None  # Spark's type of uint32
    assert exact_test((("i64",), "=", 5), schema, {"i64": T.IntegerType()}) is None
    assert exact_test((("i64",), "=", 5), schema, {"i64": T.DecimalType(20, 0)}) is None
