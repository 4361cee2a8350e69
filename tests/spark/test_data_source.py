"""The "lance" data source in a real (shared, local[2]) SparkSession, against pylance 14.0.2."""

from __future__ import annotations

import datetime as dt
import os
import time
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

import lancelot  # noqa: E402
import lancelot.spark  # noqa: E402
from lancelot.spark import save  # noqa: E402
from lancelot.spark.writer import ATTEMPTS_DIR  # noqa: E402
from tests.spark.helpers import only_markers  # noqa: E402

lance_file = pytest.importorskip("lance.file")

PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def _visible_data(d: str) -> list[str]:
    return sorted(f for f in os.listdir(os.path.join(d, "data")) if not f.startswith("."))


@pytest.fixture
def pushdown(spark):
    """Filter pushdown asked for (``register(spark, filter_pushdown=True)``) for one test."""
    with pytest.warns(UserWarning, match="SPARK-51575"):
        lancelot.spark.register(spark, filter_pushdown=True)
    yield
    lancelot.spark.register(spark)
    spark.conf.set(PUSHDOWN, "false")


def _lance_files(d) -> list[str]:
    """The data files of the dataset at ``d`` (its latest version), per pylance."""
    import lance

    if not os.path.isdir(os.path.join(d, "_versions")):
        return []
    return sorted(f.path for fr in lance.dataset(d).get_fragments() for f in fr.data_files())


def _rows(df, key="id"):
    """Rows sorted by key, as reprs (NaN compares equal to itself this way)."""
    return [repr(r) for r in df.orderBy(key).collect()]


ALL_TYPES = T.StructType(
    [
        T.StructField("id", T.LongType(), False),
        T.StructField("b", T.BooleanType()),
        T.StructField("i8", T.ByteType()),
        T.StructField("i16", T.ShortType()),
        T.StructField("i32", T.IntegerType()),
        T.StructField("f32", T.FloatType()),
        T.StructField("f64", T.DoubleType()),
        T.StructField("dec", T.DecimalType(10, 2)),
        T.StructField("dec38", T.DecimalType(38, 18)),
        T.StructField("s", T.StringType()),
        T.StructField("bin", T.BinaryType()),
        T.StructField("d", T.DateType()),
        T.StructField("ts", T.TimestampType()),
        T.StructField("ntz", T.TimestampNTZType()),
        T.StructField("dti", T.DayTimeIntervalType()),
        T.StructField("tm", T.TimeType()),
        T.StructField("nul", T.NullType()),
        T.StructField("arr", T.ArrayType(T.IntegerType())),
        T.StructField("arr2", T.ArrayType(T.ArrayType(T.StringType()))),
        T.StructField(
            "st",
            T.StructType(
                [
                    T.StructField("a", T.IntegerType()),
                    T.StructField("b", T.ArrayType(T.StructType([T.StructField("c", T.StringType())]))),
                ]
            ),
            False,
        ),
        T.StructField("arr_st", T.ArrayType(T.StructType([T.StructField("x", T.DoubleType())]), False)),
    ]
)


def _all_types_rows(n: int):
    rng = np.random.default_rng(7)
    rows = []
    for i in range(n):
        null = i % 5 == 4  # every fifth row: nulls wherever a null is allowed
        pick = int(rng.integers(0, 1000))
        rows.append(
            (
                i,
                None if null else bool(pick % 2),
                None if null else pick % 128 - 64,
                None if null else pick * 31 - 15000,
                None if null else pick * 1_000_003 - 2**30,
                None if null else [1.5, float("nan"), float("-inf"), -0.0][i % 4],
                None if null else [float(pick) / 7, float("inf"), 1e308][i % 3],
                None if null else Decimal(pick) / 4,
                None if null else Decimal("12345678901234567890.123456789012345678") * (-1 if i % 2 else 1),
                None if null else ["", "h\u00e9llo", "\u4e16\u754c", "x" * 300][i % 4],
                None if null else bytes([pick % 256]) * (i % 4),
                None if null else dt.date(1900 + pick % 300, 1 + i % 12, 1 + i % 28),
                None if null else dt.datetime(2024, 3, 10, 2, 30, 0, pick) + dt.timedelta(hours=i),
                None if null else dt.datetime(1950, 1, 1, 12, 0, 0, pick) + dt.timedelta(days=i),
                None if null else dt.timedelta(days=pick, microseconds=i),
                None if null else dt.time(i % 24, pick % 60, 0, pick),
                None,
                None if null else [pick, None, i][: i % 4],
                None if null else [["a", None], [], None][: i % 3],
                {"a": None if null else pick, "b": None if null else [{"c": str(i)}, {"c": None}]},
                None if null else [{"x": float(i)}, {"x": None}],
            )
        )
    return rows


def test_round_trip_of_every_spark_type(spark, tmp_path):
    df = spark.createDataFrame(_all_types_rows(60), ALL_TYPES).repartition(3)
    out = str(tmp_path / "all")
    df.write.format("lance").mode("overwrite").save(out)
    assert len(_lance_files(out)) == 3
    back = spark.read.format("lance").load(out)
    assert back.schema == ALL_TYPES
    assert back.count() == 60
    assert _rows(back) == _rows(df)
    # also a file that holds a variant next to strings of a Spark CHAR/VARCHAR column
    v = spark.sql("select 1L as id, parse_json('{\"a\": [1, 2]}') as v, cast('ab' as varchar(5)) as vc")
    out2 = str(tmp_path / "variant")
    v.write.format("lance").mode("overwrite").save(out2)
    back2 = spark.read.format("lance").load(out2)
    assert back2.schema["v"].dataType == T.VariantType()
    assert back2.selectExpr("to_json(v)", "vc").first() == ('{"a":[1,2]}', "ab")


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_round_trip_of_null_structs_and_maps(spark, tmp_path, version):
    """Null structs need version 2.1, maps 2.2 (as in pylance)."""
    fields = [
        T.StructField("id", T.LongType()),
        T.StructField("st", T.StructType([T.StructField("a", T.IntegerType())])),
    ]
    rows = [(i, None if i % 3 == 0 else {"a": i}) for i in range(30)]
    if version == "2.2":
        fields.append(T.StructField("m", T.MapType(T.StringType(), T.ArrayType(T.LongType()))))
        rows = [r + (None if r[0] % 4 == 0 else {"k": [r[0]], "z": None},) for r in rows]
    schema = T.StructType(fields)
    df = spark.createDataFrame(rows, schema)
    out = str(tmp_path / version)
    df.write.format("lance").option("version", version).mode("overwrite").save(out)
    assert {lancelot.LanceFile(os.path.join(out, "data", f)).version for f in _lance_files(out)} == {version}
    back = spark.read.format("lance").load(out)
    assert back.schema == schema
    assert _rows(back) == _rows(df)
    for f in _lance_files(out):  # pylance reads these files as lancelot does
        p = os.path.join(out, "data", f)
        assert lance_file.LanceFileReader(p).read_all().to_table().equals(lancelot.read_table(p))
    if version == "2.1":
        with pytest.raises(Exception, match="needs file version 2.2"):
            spark.sql("select 1L as id, map('a', 1) as m").write.format("lance").option("version", version).mode(
                "overwrite"
            ).save(str(tmp_path / "map21"))


def test_null_structs_in_version_2_0_fail_clearly(spark, tmp_path):
    df = spark.createDataFrame([(1, None), (2, {"a": 1})], "id long, st struct<a: int>")
    out = str(tmp_path / "nullstruct")
    with pytest.raises(Exception, match="cannot hold null structs"):
        df.write.format("lance").mode("overwrite").option("version", "2.0").save(out)
    assert _lance_files(out) == []
    df.write.format("lance").mode("overwrite").save(out)  # the default version (2.2) holds them
    back = spark.read.format("lance").load(out)
    assert sorted(back.collect(), key=lambda r: r.id) == sorted(df.collect(), key=lambda r: r.id)


def test_one_file_read_by_many_tasks_equals_one_task(spark, tmp_path):
    n = 30_000
    t = pa.table(
        {
            "id": pa.array(np.arange(n), pa.int64()),
            "s": [f"row{i}" for i in range(n)],
            "u": pa.array(np.arange(n) % 65536, pa.uint16()),
        }
    )
    path = str(tmp_path / "one.lance")
    lancelot.write_table(t, path)
    many = spark.read.format("lance").option("rows_per_partition", 4000).load(path)
    one = spark.read.format("lance").option("rows_per_partition", n).load(path)
    assert many.rdd.getNumPartitions() == 8 and one.rdd.getNumPartitions() == 1
    assert many.schema["u"].dataType == T.IntegerType()
    assert many.count() == n
    assert sorted(many.collect()) == sorted(one.collect())
    by_bytes = spark.read.format("lance").option("bytes_per_partition", os.path.getsize(path) // 5).load(path)
    assert 5 <= by_bytes.rdd.getNumPartitions() <= 6


def test_pylance_reads_what_spark_wrote(spark, tmp_path):
    df = spark.range(0, 5000, 1, 2).select(
        "id",
        (F.col("id") * 0.25).alias("x"),
        F.concat(F.lit("v"), F.col("id").cast("string")).alias("s"),
        F.when(F.col("id") % 3 == 0, None).otherwise(F.array("id", "id")).alias("arr"),
        F.struct(F.col("id").cast("int").alias("a")).alias("st"),
        F.timestamp_seconds(F.col("id")).alias("ts"),
    )
    out = str(tmp_path / "for_pylance")
    df.write.format("lance").mode("overwrite").save(out)
    assert len(_lance_files(out)) == 2
    got = __import__("lance").dataset(out).to_table().sort_by("id")
    assert got.num_rows == 5000
    assert got.column("id").to_pylist() == list(range(5000))
    assert got.column("x").to_pylist() == [i * 0.25 for i in range(5000)]
    assert got.column("s").to_pylist() == [f"v{i}" for i in range(5000)]
    assert got.column("arr").to_pylist() == [None if i % 3 == 0 else [i, i] for i in range(5000)]
    assert got.column("st").to_pylist() == [{"a": i} for i in range(5000)]
    assert got.schema.field("ts").type == pa.timestamp("us", "UTC")
    assert got.column("ts").cast(pa.int64()).to_pylist() == [i * 1_000_000 for i in range(5000)]


def _pylance_table(n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(np.arange(n), pa.int64()),
            "u32": pa.array(np.arange(n) * 7, pa.uint32()),
            "f": pa.array(np.linspace(0, 1, n), pa.float32()),
            "s": pa.array([None if i % 11 == 0 else f"s{i}" for i in range(n)]),
            "l": pa.array([[i] * (i % 3) for i in range(n)], pa.list_(pa.int16())),
            "vec": pa.array([[float(i)] * 4 for i in range(n)], pa.list_(pa.float32(), 4)),
            "d": pa.array(["a", "b", "c"] * (n // 3) + ["a"] * (n % 3)).dictionary_encode(),
        }
    )


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_spark_reads_what_pylance_wrote(spark, tmp_path, version):
    t = _pylance_table(3000)
    path = str(tmp_path / f"py{version}.lance")
    w = lance_file.LanceFileWriter(path, t.schema, version=version)
    w.write_batch(t)
    w.close()
    df = spark.read.format("lance").option("rows_per_partition", 1000).load(path)
    assert df.rdd.getNumPartitions() == 3
    assert [f.dataType for f in df.schema] == [
        T.LongType(),
        T.LongType(),
        T.FloatType(),
        T.StringType(),
        T.ArrayType(T.ShortType()),
        T.ArrayType(T.FloatType()),
        T.StringType(),
    ]
    rows = df.orderBy("id").collect()
    assert [r.id for r in rows] == list(range(3000))
    assert [r.u32 for r in rows] == [i * 7 for i in range(3000)]
    assert [r.s for r in rows] == t.column("s").to_pylist()
    assert [r.l for r in rows] == t.column("l").to_pylist()
    assert [r.vec for r in rows] == t.column("vec").to_pylist()
    assert [r.d for r in rows] == t.column("d").to_pylist()


def test_failing_task_leaves_no_visible_output(spark, tmp_path):
    import lance

    out = str(tmp_path / "failed")

    @F.udf("long")
    def explode_late(x):
        if x == 15_000:
            raise ValueError("boom in the middle of partition 1")
        return x

    df = spark.range(0, 20_000, 1, 2).select(explode_late("id").alias("id"))
    with pytest.raises(Exception, match="boom"):
        df.write.format("lance").mode("append").save(out)
    assert _lance_files(out) == []
    # and an existing dataset keeps its version and rows when an overwrite fails
    spark.range(3).write.format("lance").mode("append").save(out)
    before = _lance_files(out)
    with pytest.raises(Exception, match="boom"):
        df.write.format("lance").mode("overwrite").save(out)
    assert _lance_files(out) == before and lance.dataset(out).version == 1
    # the failed job's files are gone (its cancelled task may still be finishing: it then finds the job
    # ended and deletes its own; a killed one may leave a hidden temporary, which no reader lists)
    deadline = time.monotonic() + 20
    while _visible_data(out) != before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _visible_data(out) == before
    assert sorted(r.id for r in spark.read.format("lance").load(out).collect()) == [0, 1, 2]


def test_append_and_overwrite_behave_like_parquet(spark, tmp_path):
    a, b, c = spark.range(0, 5), spark.range(5, 8), spark.range(100, 102)
    seen = {}
    for fmt in ("parquet", "lance"):
        out = str(tmp_path / fmt)
        steps = []
        a.write.format(fmt).mode("append").save(out)  # append to a path that does not exist yet
        steps.append(sorted(r.id for r in spark.read.format(fmt).load(out).collect()))
        b.write.format(fmt).mode("append").save(out)
        steps.append(sorted(r.id for r in spark.read.format(fmt).load(out).collect()))
        c.write.format(fmt).mode("overwrite").save(out)
        steps.append(sorted(r.id for r in spark.read.format(fmt).load(out).collect()))
        a.limit(0).write.format(fmt).mode("overwrite").save(out)
        empty = spark.read.format(fmt).load(out)
        steps.append((empty.count(), empty.schema.names))
        seen[fmt] = steps
    assert seen["lance"] == seen["parquet"]
    assert seen["lance"][1] == list(range(8)) and seen["lance"][2] == [100, 101]
    assert only_markers(os.path.join(str(tmp_path / "lance"), ATTEMPTS_DIR))
    assert __import__("lance").dataset(str(tmp_path / "lance")).version == 4  # one version per job


def test_errorifexists_and_ignore(spark, tmp_path):
    out = str(tmp_path / "modes")
    df = spark.range(3)
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        df.write.format("lance").save(out)  # Spark's default mode, refused for Python data sources
    save(df, out)  # errorifexists on a new path: writes
    with pytest.raises(lancelot.LanceError, match="errorifexists"):
        save(df, out)
    save(spark.range(10, 20), out, mode="ignore")
    with pytest.raises(Exception, match="errorifexists"):
        df.write.format("lance").mode("append").option("save_mode", "errorifexists").save(out)
    spark.range(50, 60).write.format("lance").mode("append").option("save_mode", "ignore").save(out)
    assert sorted(r.id for r in spark.read.format("lance").load(out).collect()) == [0, 1, 2]
    save(spark.range(7, 9), out, mode="overwrite", data_storage_version="2.1")
    assert sorted(r.id for r in spark.read.format("lance").load(out).collect()) == [7, 8]


def test_first_steps_save_without_a_mode_and_appends_checked_on_the_driver(spark, tmp_path):
    """Spark's default mode: its own one-line error (Python sources get append and overwrite only), and
    lancelot.spark.save does it; an append's schema is checked before any task runs, named in one line;
    nullable columns append into non-null ones while they hold no null, as pylance's append accepts."""
    import lance

    uri = str(tmp_path / "ds")
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        spark.range(3).write.format("lance").save(uri)
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("s", pa.string()), pa.field("b", pa.uint8())])
    lance.write_dataset(pa.table({"id": [1, 2], "s": ["a", "b"], "b": [7, 8]}, schema=schema), uri)
    with pytest.raises(Exception, match="already exists"):
        save(spark.range(3), uri)  # lancelot.spark.save: errorifexists by default
    base = lancelot.spark.load(spark, uri)
    sc = spark.sparkContext
    sc.setJobGroup("append-check", "schema checks")
    try:
        for bad, why in [
            (base.withColumn("id", F.col("id").cast("int")), "column 'id' is int64 .* int32"),
            (base.withColumn("z", F.lit(1)), r"has column\(s\) \['z'\] that the dataset lacks"),
            (base.drop("s"), r"lacks the dataset's column\(s\) \['s'\]"),
        ]:
            with pytest.raises(Exception, match=why):
                bad.write.format("lance").mode("append").save(uri)
        assert sc.statusTracker().getJobIdsForGroup("append-check") == []  # no task ran
    finally:
        sc.setJobGroup("", "")
    # reordered, nullable id without nulls, b read as short and written back as uint8: accepted
    more = base.select("b", "s", F.when(F.col("id") > 0, F.col("id") + 10).alias("id"))
    more.write.format("lance").mode("append").save(uri)
    got = lance.dataset(uri)
    assert got.schema == schema and got.version == 2
    assert sorted(got.to_table().column("id").to_pylist()) == [1, 2, 11, 12]
    with pytest.raises(Exception, match="null values in column 'id'"):
        base.select(F.lit(None).cast("long").alias("id"), "s", "b").write.format("lance").mode("append").save(uri)
    assert lance.dataset(uri).version == 2


def test_errorifexists_and_ignore_look_for_a_dataset(spark, tmp_path):
    """An empty directory (or one of loose files) holds no dataset: both modes write there."""
    df = spark.range(3)
    for mode in ("errorifexists", "ignore"):
        d = tmp_path / mode
        d.mkdir()
        save(df, str(d), mode=mode)
        assert spark.read.format("lance").load(str(d)).count() == 3


def _sorted_file(tmp_path, n=100_000) -> str:
    path = str(tmp_path / "sorted.lance")
    lancelot.write_table(
        pa.table(
            {
                "k": pa.array(np.arange(n), pa.int64()),
                "g": pa.array(np.arange(n) // 10_000, pa.int32()),
                "s": pa.array([f"key{i:06d}" for i in range(n)]),
            }
        ),
        path,
    )
    return path


def test_pushdown_prunes_planned_partitions(spark, tmp_path, pushdown):
    path = _sorted_file(tmp_path)
    df = spark.read.format("lance").option("rows_per_partition", 10_000).load(path)
    assert df.rdd.getNumPartitions() == 10
    q = df.filter("k >= 95000")
    assert q.rdd.getNumPartitions() == 1
    assert q.count() == 5000
    q = df.filter((F.col("g") == 3) & F.col("s").startswith("key03"))
    assert q.rdd.getNumPartitions() == 2  # zones straddle the partition border at 30000
    assert q.count() == 10_000
    assert df.filter("k < 0").rdd.getNumPartitions() == 1  # nothing to read: Spark's one empty partition
    assert df.filter("k < 0").count() == 0
    # filters zone maps cannot use are still applied by Spark
    assert df.filter(F.col("s").endswith("99")).count() == 1000
    # lookups: tasks return only the rows passing the filters (lancelot/spark/row_filter.py)
    assert [tuple(r) for r in df.filter("k = 12345").collect()] == [(12345, 1, "key012345")]
    assert [r.k for r in df.filter(F.col("s") == "key054321").collect()] == [54321]
    assert sorted(r.k for r in df.filter("k IN (7, 99999, 123456) AND g != 5").collect()) == [7, 99999]


def _has_filter(df) -> bool:
    """Whether Spark's physical plan of ``df`` filters rows after the scan."""
    return "Filter " in df._jdf.queryExecution().executedPlan().toString()


def test_filters_the_reader_applies_are_not_applied_again(spark, tmp_path, pushdown):
    """Filters the reader evaluates exactly are not handed back: Spark plans no Filter for them, and every
    result equals the same query without pushdown (where Spark applies them all)."""
    path = _sorted_file(tmp_path, 30_000)
    # a new DataFrame per query: Spark reuses one DataFrame's last pushed-down read (docs/SPARK.md)
    df = lambda: spark.read.format("lance").load(path)  # noqa: E731
    assert not _has_filter(df().filter("k = 12345")) and not _has_filter(df().filter("g IN (1, 2) AND s >= 'key015'"))
    assert _has_filter(df().filter(F.col("s").endswith("99")))  # not evaluated by the reader: Spark filters
    # a user schema that casts k: the reader's test on the stored int64 is left to Spark
    cast = lambda: spark.read.format("lance").schema("k int, g int, s string").load(path)  # noqa: E731
    assert _has_filter(cast().filter("k = 7")) and not _has_filter(cast().filter("g = 1"))
    assert [tuple(r) for r in cast().filter("k = 7").collect()] == [(7, 0, "key000007")]
    plain = spark.read.format("lance").option("filter_pushdown", "false").load(path)
    for cond in [
        "k = 12345",
        "k < 100 OR k > 29990",
        "k IN (5, 6, 40000) AND g = 0",
        "NOT (k = 3) AND k < 10",
        "s LIKE 'key0123%'",
        "s > 'key029995' AND s IS NOT NULL",
        "g <=> 2 AND k >= 29999",
        "s LIKE '%99' AND k < 1000",
    ]:
        want = sorted(map(tuple, plain.filter(cond).collect()))
        assert want and sorted(map(tuple, df().filter(cond).collect())) == want, cond


def test_a_dataframe_queried_again_without_pushdown_option(spark, tmp_path, pushdown):
    """The workaround docs/SPARK.md gives for the Spark issue below: with filter_pushdown false, a
    DataFrame reused after a filtered query still reads every row."""
    df = spark.read.format("lance").option("filter_pushdown", "false").load(_sorted_file(tmp_path, 30_000))
    assert df.filter("k = 12345").count() == 1 and df.count() == 30_000


@pytest.mark.xfail(strict=True, reason="Spark's bug, reached only by opting in (docs/SPARK.md, correctness)")
def test_opted_in_pushdown_meets_sparks_reuse_of_a_pushed_down_read(spark, tmp_path, pushdown):
    """A canary, not a promise: when a pyspark release fixes the reuse (XPASS fails this strict xfail),
    register's warning can go."""
    df = spark.read.format("lance").load(_sorted_file(tmp_path, 30_000))
    assert df.filter("k = 12345").count() == 1
    assert df.count() == 30_000  # pyspark 4.1-4.3: 1, the previous query's pushed-down read


@pytest.mark.parametrize("setting", ["false", "true"])
def test_default_settings_answer_every_reuse_pattern_as_pylance(spark, tmp_path, setting):
    """With ``register(spark)``'s defaults (and even with Spark's pushdown setting turned on by someone
    else), a DataFrame reused across queries answers each as pylance does."""
    import lance

    uri = str(tmp_path / "ds")
    n = 3000
    lance.write_dataset(
        pa.table({"id": pa.array(np.arange(n), pa.int64()), "s": [f"s{i % 10}" for i in range(n)]}), uri
    )
    ds = lance.dataset(uri)
    spark.conf.set(PUSHDOWN, setting)
    try:
        df = spark.read.format("lance").load(uri)
        # filter then no filter; two different filters; a filter Spark cannot push then one it can
        for cond in ["id = 1234", None, "id < 10", "s = 's3' AND id >= 2990", "id % 7 = 0", "id = 5", None]:
            got = df.filter(cond).count() if cond else df.count()
            assert got == ds.count_rows(filter=cond), cond
        cached = df.filter("id >= 100").cache()  # a cached DataFrame, then filters over it
        assert cached.count() == ds.count_rows(filter="id >= 100")
        assert cached.filter("id = 7").count() == 0 and cached.filter("id = 2000").count() == 1
        cached.unpersist()
        df.createOrReplaceTempView("reused")  # SQL over a temp view
        assert spark.sql("SELECT count(*) FROM reused WHERE id = 42").first()[0] == 1
        rows = spark.sql("SELECT id FROM reused WHERE s = 's9' AND id > 2900").collect()
        assert sorted(r.id for r in rows) == ds.to_table(filter="s = 's9' AND id > 2900").column("id").to_pylist()
        assert spark.sql("SELECT count(*) FROM reused").first()[0] == n
    finally:
        spark.conf.set(PUSHDOWN, "false")
        spark.catalog.dropTempView("reused")


def test_the_filter_option_prunes_without_pushdown(spark, tmp_path):
    """``option("filter", sql)``: the rows pylance's to_table(filter=sql) returns, read from the zones the
    zone maps leave, whatever queries reuse the DataFrame."""
    import lance

    path = _sorted_file(tmp_path)  # 100,000 rows, k sorted
    df = spark.read.format("lance").option("rows_per_partition", 10_000).option("filter", "k >= 95000").load(path)
    assert df.rdd.getNumPartitions() == 1 and df.count() == 5000 and df.filter("k < 96000").count() == 1000
    uri = str(tmp_path / "ds")
    lance.write_dataset(
        pa.table({"k": pa.array(np.arange(5000), pa.int64()), "s": [f"v{i % 3}" for i in range(5000)]}), uri
    )
    for sql in ["k = 4321", "s = 'v1' AND k BETWEEN 100 AND 200", "k IN (1, 2, 4999)", "s != 'v0' AND NOT (k = 4)"]:
        got = spark.read.format("lance").option("filter", sql).load(uri)
        want = lance.dataset(uri).to_table(filter=sql)
        assert sorted(map(tuple, got.collect())) == sorted(zip(*[want.column(c).to_pylist() for c in ("k", "s")]))
    from pyspark.sql.types import StructType

    for where in (uri, path):  # a count that reads no column still counts only the passing rows
        none = spark.read.format("lance").schema(StructType()).option("filter", "k >= 4990").load(where)
        assert none.count() == (10 if where == uri else 95_010)
    with pytest.raises(Exception, match="cannot apply"):
        spark.read.format("lance").option("filter", "k = 1 OR k = 2").load(uri).count()


def test_reads_without_pushdown_setting(spark, tmp_path):
    assert spark.conf.get(PUSHDOWN) == "false"
    path = _sorted_file(tmp_path)
    df = spark.read.format("lance").option("rows_per_partition", 10_000).load(path)
    q = df.filter("k >= 95000")
    assert q.rdd.getNumPartitions() == 10  # no pruning, and no DATA_SOURCE_PUSHDOWN_DISABLED error
    assert q.count() == 5000


def test_column_pruning(spark, tmp_path):
    path = _sorted_file(tmp_path, 1000)
    df = spark.read.format("lance").option("columns", "s,k").load(path)
    assert df.schema.names == ["s", "k"]
    assert df.orderBy("k").first() == ("key000000", 0)
    user = spark.read.format("lance").schema("g int").load(path)
    assert user.schema.names == ["g"] and user.agg(F.sum("g")).first()[0] == 0


def test_directories_globs_and_disagreeing_files(spark, tmp_path):
    d = tmp_path / "many"
    d.mkdir()
    for i in range(4):
        lancelot.write_table(pa.table({"k": pa.array([i, i + 10], pa.int64())}), str(d / f"f{i}.lance"))
    assert spark.read.format("lance").load(str(d)).count() == 8
    assert spark.read.format("lance").load(str(d / "f[01].lance")).count() == 4
    assert spark.read.format("lance").load([str(d / "f0.lance"), str(d / "f3.lance")]).count() == 4
    lancelot.write_table(pa.table({"k": pa.array(["text"])}), str(d / "f9.lance"))
    with pytest.raises(Exception, match="files disagree on the schema"):
        spark.read.format("lance").load(str(d)).count()
