"""The "lance" data source's parts without a SparkSession: types, paths, planning, filters, commit protocol."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import types as T  # noqa: E402
from pyspark.sql.datasource import (  # noqa: E402
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    Not,
    StringContains,
    StringStartsWith,
)

import lancelot  # noqa: E402
from lancelot.errors import LanceError, SchemaMismatchError, UnsupportedTypeError  # noqa: E402
from lancelot.spark import LanceDataSource  # noqa: E402
from lancelot.spark.files import is_data_file, paths_option, resolve_files  # noqa: E402
from lancelot.spark.reader import (  # noqa: E402
    FileInfo,
    LancePartition,
    LancePushdownReader,
    LanceReader,
    plan_partitions,
    read_footers,
    unified_schema,
    zone_filter,
)
from lancelot.spark.source import called_by_pushdown_planner  # noqa: E402
from lancelot.spark.types import spark_arrow_schema, spark_type, to_spark_batch  # noqa: E402
from lancelot.spark.writer import ATTEMPTS_DIR, LanceDatasetWriter  # noqa: E402
from tests.spark.helpers import only_markers  # noqa: E402

# the type table of docs/SPARK.md
TYPE_TABLE = [
    (pa.null(), T.NullType()),
    (pa.bool_(), T.BooleanType()),
    (pa.int8(), T.ByteType()),
    (pa.int16(), T.ShortType()),
    (pa.int32(), T.IntegerType()),
    (pa.int64(), T.LongType()),
    (pa.uint8(), T.ShortType()),
    (pa.uint16(), T.IntegerType()),
    (pa.uint32(), T.LongType()),
    (pa.uint64(), T.DecimalType(20, 0)),
    (pa.float16(), T.FloatType()),
    (pa.float32(), T.FloatType()),
    (pa.float64(), T.DoubleType()),
    (pa.decimal128(38, 10), T.DecimalType(38, 10)),
    (pa.decimal256(20, 2), T.DecimalType(20, 2)),
    (pa.string(), T.StringType()),
    (pa.large_string(), T.StringType()),
    (pa.string_view(), T.StringType()),
    (pa.binary(), T.BinaryType()),
    (pa.large_binary(), T.BinaryType()),
    (pa.binary(16), T.BinaryType()),
    (pa.date32(), T.DateType()),
    (pa.date64(), T.DateType()),
    (pa.timestamp("s", "Europe/Paris"), T.TimestampType()),
    (pa.timestamp("ns", "UTC"), T.TimestampType()),
    (pa.timestamp("ms"), T.TimestampNTZType()),
    (pa.time32("ms"), T.TimeType()),
    (pa.time64("us"), T.TimeType()),
    (pa.duration("ns"), T.DayTimeIntervalType()),
    (pa.list_(pa.int32()), T.ArrayType(T.IntegerType(), True)),
    (pa.large_list(pa.field("x", pa.uint8(), False)), T.ArrayType(T.ShortType(), False)),
    (pa.list_(pa.float32(), 4), T.ArrayType(T.FloatType(), True)),
    (pa.map_(pa.string(), pa.uint32()), T.MapType(T.StringType(), T.LongType(), True)),
    (
        pa.struct([("a", pa.int8()), ("b", pa.list_(pa.string()))]),
        T.StructType([T.StructField("a", T.ByteType()), T.StructField("b", T.ArrayType(T.StringType()))]),
    ),
    (pa.dictionary(pa.int16(), pa.string()), T.StringType()),
    (pa.dictionary(pa.int8(), pa.uint16()), T.IntegerType()),
]


@pytest.mark.parametrize(("arrow", "spark"), TYPE_TABLE, ids=[str(a) for a, _ in TYPE_TABLE])
def test_type_table(arrow, spark):
    assert spark_type(arrow) == spark


def test_types_without_a_spark_equivalent_raise():
    for t in [pa.decimal256(50, 2), pa.month_day_nano_interval()]:
        with pytest.raises(UnsupportedTypeError):
            spark_type(t)


def test_values_survive_the_conversion_to_spark_arrow():
    src = pa.table(
        {
            "u64": pa.array([0, 2**64 - 1, None], pa.uint64()),
            "u8": pa.array([0, 255, None], pa.uint8()),
            "dict": pa.array(["x", None, "y"]).dictionary_encode(),
            "fsl": pa.array([[1, 2], None, [3, 4]], pa.list_(pa.int32(), 2)),
            "ns": pa.array([1_000_001_999, None, 0], pa.timestamp("ns", "Asia/Tokyo")),
            "half": pa.array(np.array([1.5, 0, -2], np.float16)),
            "big": pa.array(["a", None, "ccc"], pa.large_string()),
            "d64": pa.array([dt.date(2000, 1, 2), None, dt.date(1969, 12, 31)], pa.date64()),
            "m": pa.array([[("k", 7)], None, []], pa.map_(pa.string(), pa.uint8())),
        }
    )
    target = spark_arrow_schema(T.StructType([T.StructField(f.name, spark_type(f.type)) for f in src.schema]))
    out = to_spark_batch(src, target)
    assert out.schema.equals(target)
    assert out.column("u64").to_pylist() == [Decimal(0), Decimal(2**64 - 1), None]
    assert out.column("u8").to_pylist() == [0, 255, None]
    assert out.column("dict").to_pylist() == ["x", None, "y"]
    assert out.column("fsl").to_pylist() == [[1, 2], None, [3, 4]]
    assert out.column("ns").cast(pa.int64()).to_pylist() == [1_000_001, None, 0]  # instants, in microseconds
    assert out.column("half").to_pylist() == [1.5, 0.0, -2.0]
    assert out.column("big").to_pylist() == ["a", None, "ccc"]
    assert out.column("d64").to_pylist() == [dt.date(2000, 1, 2), None, dt.date(1969, 12, 31)]
    assert out.column("m").to_pylist() == [[("k", 7)], None, []]


def _write(path, table, **kw):
    lancelot.write_table(table, str(path), **kw)
    return str(path)


def test_paths_files_directories_globs(tmp_path):
    t = pa.table({"x": pa.array([1, 2], pa.int64())})
    d = tmp_path / "d"
    d.mkdir()
    a, b = _write(d / "a.lance", t), _write(d / "b.lance", t)
    _write(d / "_hidden.lance", t)
    _write(d / ".tmp.lance", t)
    (d / "notes.txt").write_text("not lance")
    (d / "_staging").mkdir()
    _write(d / "_staging" / "c.lance", t)
    assert resolve_files([str(d)]) == [a, b]
    assert resolve_files([str(d / "*.lance")]) == [a, b]
    assert resolve_files([b, a, b]) == [b, a]
    assert resolve_files(["file://" + a]) == [a]
    assert not is_data_file("_x.lance") and is_data_file("part-0.lance")
    for bad in [str(tmp_path / "missing"), str(tmp_path / "nothing*.lance")]:
        with pytest.raises(LanceError):
            resolve_files([bad])
    (tmp_path / "empty").mkdir()
    with pytest.raises(LanceError, match="no .lance files"):
        resolve_files([str(tmp_path / "empty")])
    with pytest.raises(LanceError):
        resolve_files(["s3://bucket/x.lance"])
    assert paths_option({"paths": '["x", "y"]', "path": "z"}) == ["x", "y", "z"]
    with pytest.raises(LanceError, match="needs a path"):
        paths_option({})


def test_schema_agreement(tmp_path):
    a = _write(tmp_path / "a.lance", pa.table({"x": pa.array([1], pa.int64()), "s": ["a"]}))
    b = _write(tmp_path / "b.lance", pa.table({"x": pa.array([1], pa.uint32()), "s": ["b"]}))  # also LongType
    c = _write(tmp_path / "c.lance", pa.table({"x": pa.array([1.0]), "s": ["c"]}))
    nn = pa.schema([pa.field("x", pa.int64(), False), pa.field("s", pa.string(), False)])
    d = _write(tmp_path / "d.lance", pa.table({"x": pa.array([1], pa.int64()), "s": ["d"]}, schema=nn))
    schema = unified_schema(read_footers([d, a, b]))
    assert schema == T.StructType([T.StructField("x", T.LongType(), True), T.StructField("s", T.StringType(), True)])
    assert not unified_schema(read_footers([d]))["x"].nullable
    with pytest.raises(SchemaMismatchError) as e:
        unified_schema(read_footers([a, c]))
    assert a in str(e.value) and c in str(e.value) and "bigint vs double" in str(e.value)


def _infos(*rows, size_per_row=10):
    return [FileInfo(f"f{i}", n, n * size_per_row, pa.schema([])) for i, n in enumerate(rows)]


def _covered(parts):
    return sorted(s for p in parts for s in p.slices)


def test_planning_splits_big_files_and_packs_small_ones():
    parts = plan_partitions(_infos(1000), None, rows_per_partition=300, bytes_per_partition=0)
    assert [p.slices for p in parts] == [
        (("f0", 0, 300),),
        (("f0", 300, 600),),
        (("f0", 600, 900),),
        (("f0", 900, 1000),),
    ]
    parts = plan_partitions(_infos(10, 20, 0, 30, 500), None, rows_per_partition=100, bytes_per_partition=0)
    assert parts[0].slices == (("f0", 0, 10), ("f1", 0, 20), ("f3", 0, 30))  # small files share a task
    assert [p.slices for p in parts[1:]] == [(("f4", a, a + 100),) for a in range(0, 500, 100)]
    # bytes: 10 bytes per row, 2500-byte budget -> 250 rows per partition
    parts = plan_partitions(_infos(1000), None, rows_per_partition=None, bytes_per_partition=2500)
    assert [p.num_rows for p in parts] == [250] * 4
    # bytes_per_partition is lowered so that the files make min_partitions partitions, not below 4 MiB
    mib = 1 << 20
    big = [FileInfo("a", 1000, 10 * mib, pa.schema([])), FileInfo("b", 1000, 10 * mib, pa.schema([]))]
    parts = plan_partitions(big, None, rows_per_partition=None, bytes_per_partition=64 * mib, min_partitions=4)
    assert [p.num_rows for p in parts] == [500, 500, 500, 500]
    parts = plan_partitions(big, None, rows_per_partition=None, bytes_per_partition=64 * mib, min_partitions=100)
    assert [p.num_rows for p in parts] == [400, 400, 200] * 2  # the 4 MiB floor: at most 400 rows each
    parts = plan_partitions(big, None, rows_per_partition=None, bytes_per_partition=64 * mib, min_partitions=1)
    assert len(parts) == 1
    # pruned ranges: only those rows are planned
    parts = plan_partitions(
        _infos(1000, 1000), {"f0": [(100, 200), (900, 1000)], "f1": []}, rows_per_partition=150, bytes_per_partition=0
    )
    assert [p.slices for p in parts] == [(("f0", 100, 200),), (("f0", 900, 1000),)]
    assert plan_partitions(_infos(0), None, rows_per_partition=None, bytes_per_partition=1) == []


def test_zone_filter_conversion():
    schema = pa.schema([("Id", pa.int64()), ("s", pa.string()), ("st", pa.struct([("Y", pa.int32())]))])
    assert zone_filter(EqualTo(("id",), 5), schema) == (("Id",), "=", 5)
    assert zone_filter(GreaterThan(("Id",), 5), schema) == (("Id",), ">", 5)
    assert zone_filter(LessThan(("st", "y"), 1), schema) == (("st", "Y"), "<", 1)
    assert zone_filter(In(("Id",), (1, 2)), schema) == (("Id",), "in", [1, 2])
    assert zone_filter(IsNull(("s",)), schema) == (("s",), "is_null")
    assert zone_filter(Not(IsNull(("s",))), schema) == (("s",), "is_not_null")
    assert zone_filter(Not(IsNotNull(("s",))), schema) == (("s",), "is_null")
    assert zone_filter(Not(EqualTo(("s",), "a")), schema) == (("s",), "!=", "a")
    assert zone_filter(EqualNullSafe(("s",), None), schema) == (("s",), "is_null")
    assert zone_filter(StringStartsWith(("s",), "ab"), schema) == (("s",), "starts_with", "ab")
    assert zone_filter(StringContains(("s",), "ab"), schema) is None
    assert zone_filter(Not(In(("Id",), (1,))), schema) is None
    assert zone_filter(EqualTo(("nope",), 1), schema) is None
    assert zone_filter(EqualTo(("s", "x"), 1), schema) is None


def test_pushdown_reader_plans_only_the_ranges_zone_maps_allow(tmp_path):
    n = 50_000
    t = pa.table({"k": pa.array(np.arange(n, dtype=np.int64)), "v": pa.array(np.arange(n) % 7, pa.uint8())})
    _write(tmp_path / "a.lance", t)
    opts = {"path": str(tmp_path), "rows_per_partition": "5000", "filter_pushdown": "true"}
    ds = LanceDataSource(opts)
    schema = ds.schema()
    assert schema["v"].dataType == T.ShortType()
    reader = ds.reader(schema)
    assert isinstance(reader, LancePushdownReader)
    everything = reader.partitions()
    assert len(everything) == 10
    contains = StringContains(("v",), "x")
    back = list(reader.pushFilters([GreaterThan(("k",), 42_000), contains]))
    assert back == [contains]  # k > 42,000 is applied by the reader; Spark applies the other one
    parts = reader.partitions()
    zone = lancelot.LanceFile(str(tmp_path / "a.lance")).zone_maps().rows_per_zone
    first = (42_000 // zone) * zone
    assert _covered(parts)[0][1] == first and sum(p.num_rows for p in parts) == n - first
    assert len(parts) < len(everything)
    got = pa.Table.from_batches([b for p in parts for b in reader.read(p)])
    # the planned zones are read from `first` on, and the rows failing k > 42,000 dropped (row_filter.py)
    assert got.column("k").to_pylist() == list(range(42_001, n))
    assert got.schema.field("v").type == pa.int16()


def test_reader_choice_follows_the_caller(tmp_path):
    from lancelot.spark.source import LancePushdownDataSource

    _write(tmp_path / "a.lance", pa.table({"x": [1, 2]}))
    schema = T.StructType([T.StructField("x", T.LongType())])

    def reader_from(module: str, choice: str = "auto", source=None):
        """Call reader() from code whose module name is ``module``, as pyspark's planners do."""
        scope = {
            "__name__": module,
            "source": source or LanceDataSource({"path": str(tmp_path), "filter_pushdown": choice}),
            "schema": schema,
        }
        exec("def plan():\n    return source.reader(schema)\nresult = plan()", scope)
        return scope["result"]

    # the default source takes no pushed filters, even from the pushdown planner (docs/SPARK.md, correctness)
    assert type(reader_from("pyspark.sql.worker.data_source_pushdown_filters")) is LanceReader
    opted_in = LancePushdownDataSource({"path": str(tmp_path)})
    assert type(reader_from("pyspark.sql.worker.data_source_pushdown_filters", source=opted_in)) is LancePushdownReader
    assert type(reader_from("pyspark.sql.worker.plan_data_source_read", source=opted_in)) is LanceReader
    assert type(reader_from("pyspark.sql.worker.plan_data_source_read")) is LanceReader
    assert type(reader_from("some.other.caller")) is LanceReader
    assert type(reader_from("pyspark.sql.worker.plan_data_source_read", "true")) is LancePushdownReader
    assert type(reader_from("pyspark.sql.worker.data_source_pushdown_filters", "false")) is LanceReader
    assert not called_by_pushdown_planner()
    # pyspark's own check: the plain reader must not override pushFilters
    from pyspark.sql.datasource import DataSourceReader

    assert LanceReader.pushFilters is DataSourceReader.pushFilters
    assert LancePushdownReader.pushFilters is not DataSourceReader.pushFilters
    with pytest.raises(LanceError):
        LanceDataSource({"filter_pushdown": "maybe"}).reader(schema)


def test_columns_option_and_user_schema(tmp_path):
    t = pa.table({"a": [1, 2, 3], "B": ["x", "y", "z"], "c": [1.0, 2.0, 3.0]})
    _write(tmp_path / "t.lance", t)
    ds = LanceDataSource({"path": str(tmp_path), "columns": "c, b"})
    schema = ds.schema()
    assert schema.names == ["c", "B"]
    reader = ds.reader(schema)
    assert isinstance(reader, LanceReader) and not isinstance(reader, LancePushdownReader)
    (part,) = reader.partitions()
    (batch,) = list(reader.read(part))
    assert batch.to_pydict() == {"c": [1.0, 2.0, 3.0], "B": ["x", "y", "z"]}
    with pytest.raises(LanceError, match="nope"):
        LanceDataSource({"path": str(tmp_path), "columns": "a,nope"}).schema()
    user = T.StructType([T.StructField("a", T.DoubleType())])  # a narrower, wider-typed view
    (batch,) = list(LanceDataSource({"path": str(tmp_path)}).reader(user).read(part))
    assert batch.to_pydict() == {"a": [1.0, 2.0, 3.0]}
    with pytest.raises(LanceError, match="zzz"):
        LanceDataSource({"path": str(tmp_path)}).reader(T.StructType([T.StructField("zzz", T.LongType())]))


def _batches(n, start=0):
    return [
        pa.RecordBatch.from_pydict(
            {"x": pa.array(np.arange(start, start + n), pa.int64()), "s": [str(i) for i in range(start, start + n)]}
        )
    ]


SCHEMA = T.StructType([T.StructField("x", T.LongType()), T.StructField("s", T.StringType())])


def _files_on_disk(ds_dir) -> set[str]:
    d = os.path.join(ds_dir, "data")
    return set(os.listdir(d)) if os.path.isdir(d) else set()


def test_dataset_writer_without_spark(tmp_path):
    import lance

    out = str(tmp_path / "out")
    w = LanceDatasetWriter({"path": out}, SCHEMA, overwrite=False)
    m1, m2, m3 = w.write(iter(_batches(10))), w.write(iter(_batches(5, 10))), w.write(iter([]))
    assert m3.fragments == [] and m1.rows == 10
    assert len(_files_on_disk(out)) == 2
    assert not os.path.exists(os.path.join(out, "_versions"))  # nothing visible before commit
    w.commit([m1, m2, m3])
    ds = lance.dataset(out)
    assert ds.version == 1 and sorted(ds.to_table()["x"].to_pylist()) == list(range(15))
    assert only_markers(os.path.join(out, ATTEMPTS_DIR))
    # abort: the job's files go, no version is made
    w2 = LanceDatasetWriter({"path": out}, SCHEMA, overwrite=True)
    before = _files_on_disk(out)
    w2.abort([w2.write(iter(_batches(3))), None])
    assert _files_on_disk(out) == before and lance.dataset(out).version == 1
    # overwrite: one new version with only the new rows; the old version stays readable
    w3 = LanceDatasetWriter({"path": out}, SCHEMA, overwrite=True)
    w3.commit([w3.write(iter(_batches(4, 100)))])
    assert lance.dataset(out).to_table()["x"].to_pylist() == [100, 101, 102, 103]
    assert lance.dataset(out, version=1).count_rows() == 15
    # an empty job is still one version (with no rows)
    w4 = LanceDatasetWriter({"path": out}, SCHEMA, overwrite=True)
    w4.commit([w4.write(iter([]))])
    ds = lance.dataset(out)
    assert ds.version == 3 and ds.count_rows() == 0 and ds.schema.names == ["x", "s"]


def test_attempts_spark_did_not_commit_are_removed(tmp_path):
    """A retried or speculative attempt's files are not in the version and are deleted at commit."""
    import lance

    out = str(tmp_path / "o")
    w = LanceDatasetWriter({"path": out}, SCHEMA, overwrite=False)
    kept, lost = w.write(iter(_batches(10))), w.write(iter(_batches(10)))  # two attempts of one partition
    lost_files = {d.path for s in lost.fragments for d in lancelot.FragmentMetadata.from_json(s).files}
    assert lost_files <= _files_on_disk(out)
    w.commit([kept])  # Spark hands the driver one committed attempt per partition
    assert lance.dataset(out).count_rows() == 10
    assert not (lost_files & _files_on_disk(out)) and len(_files_on_disk(out)) == 1
    assert only_markers(os.path.join(out, ATTEMPTS_DIR))


def test_save_modes_in_the_writer(tmp_path):
    import lance

    out = str(tmp_path / "o")
    w = LanceDatasetWriter({"path": out}, SCHEMA, overwrite=False)
    w.commit([w.write(iter(_batches(2)))])
    with pytest.raises(LanceError, match="errorifexists"):
        LanceDatasetWriter({"path": out, "save_mode": "errorifexists"}, SCHEMA, overwrite=False)
    ign = LanceDatasetWriter({"path": out, "save_mode": "ignore"}, SCHEMA, overwrite=False)
    ign.commit([ign.write(iter(_batches(7)))])
    assert lance.dataset(out).version == 1 and lance.dataset(out).count_rows() == 2
    with pytest.raises(LanceError, match="contradicts"):
        LanceDatasetWriter({"path": out, "save_mode": "append"}, SCHEMA, overwrite=True)
    with pytest.raises(LanceError, match="unknown save_mode"):
        LanceDatasetWriter({"path": out, "save_mode": "sometimes"}, SCHEMA, overwrite=False)
    with pytest.raises(lancelot.UnsupportedVersionError):
        LanceDatasetWriter({"path": out, "data_storage_version": "9.9"}, SCHEMA, overwrite=False)
    with pytest.raises(LanceError, match="dataset version"):
        LanceDatasetWriter({"path": out, "version": "3"}, SCHEMA, overwrite=False)
    fresh = str(tmp_path / "fresh")
    w = LanceDatasetWriter({"path": fresh, "save_mode": "errorifexists", "version": "2.1"}, SCHEMA, overwrite=False)
    w.commit([w.write(iter(_batches(1)))])
    assert lance.dataset(fresh).data_storage_version == "2.1"


def test_partition_pickles():
    import pickle

    p = LancePartition([("a.lance", 0, 10), ("b.lance", 5, 7)])
    q = pickle.loads(pickle.dumps(p))
    assert q.slices == p.slices and q.num_rows == 12


def test_a_task_failing_mid_write_leaves_no_file(tmp_path):
    out = str(tmp_path / "o")
    w = LanceDatasetWriter({"path": out}, SCHEMA, overwrite=False)

    def failing():
        yield from _batches(100)
        yield from _batches(100, 100)
        raise RuntimeError("upstream failed")

    with pytest.raises(RuntimeError, match="upstream failed"):
        w.write(failing())
    w.abort([None])
    assert _files_on_disk(out) == set() and not os.path.exists(os.path.join(out, "_versions"))


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_read_steps_are_sliced_into_batches_of_batch_size(tmp_path, monkeypatch, version):
    import lancelot.spark.reader as R

    t = pa.table({"x": pa.array(np.arange(10_000), pa.int64()), "s": [f"v{i % 97}" for i in range(10_000)]})
    p = str(tmp_path / "f.lance")
    lancelot.write_table(t, p, version=version)
    monkeypatch.setattr(R, "READ_ROWS", 4096)  # several read steps per partition
    opts = {"path": p, "batch_size": "1000", "rows_per_partition": "6500"}
    r = LanceReader(opts, LanceDataSource(opts).schema())
    assert r.read_step(p) == 4000  # whole batches, at most READ_ROWS
    parts = r.partitions()
    batches = [b for part in parts for b in r.read(part)]
    # rows 0-4000 and 4000-6500 (partition 1), 6500-10000 (partition 2)
    assert [b.num_rows for b in batches] == [1000] * 4 + [1000, 1000, 500] + [1000, 1000, 1000, 500]
    assert pa.Table.from_batches(batches).equals(t.cast(pa.Table.from_batches(batches).schema))


def test_import_without_pyspark_says_which_extra_to_install():
    import subprocess
    import sys

    code = "import sys; sys.modules['pyspark'] = None\nimport lancelot.spark"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode != 0
    assert "ImportError" in out.stderr
    assert "pip install 'lancelot[spark]'" in out.stderr


def test_arrow_schema_labels_timestamps_utc_in_this_pyspark():
    """pyspark 4.1 takes timestamp_utc=, 4.2+ timezone=: both must give UTC instants and zone-less NTZ."""
    from lancelot.spark.types import TO_ARROW_OPTIONS, spark_arrow_schema, spark_type

    assert TO_ARROW_OPTIONS in ({"timezone": "UTC"}, {"timestamp_utc": True})
    s = spark_arrow_schema(
        T.StructType([T.StructField("ts", T.TimestampType()), T.StructField("ntz", T.TimestampNTZType())])
    )
    assert s.field("ts").type == pa.timestamp("us", "UTC")
    assert s.field("ntz").type == pa.timestamp("us")
    assert spark_type(pa.timestamp("ns")) == T.TimestampNTZType()
    assert spark_type(pa.timestamp("ms", "Europe/Paris")) == T.TimestampType()


def test_register_leaves_filter_pushdown_off_unless_asked():
    from lancelot.spark import PUSHDOWN_SETTING, register
    from lancelot.spark.source import LancePushdownDataSource

    class Conf(dict):
        def set(self, k, v):
            self[k] = v

    class Registry(list):
        def register(self, cls):
            self.append(cls)

    def session():
        s = type("Session", (), {})()
        s.conf, s.dataSource = Conf(), Registry()
        return s

    s = session()
    register(s)
    assert s.dataSource == [LanceDataSource] and s.conf == {}
    s2 = session()
    with pytest.warns(UserWarning, match="SPARK-51575"):
        register(s2, filter_pushdown=True)
    assert s2.dataSource == [LancePushdownDataSource] and s2.conf == {PUSHDOWN_SETTING: "true"}


def _pylance_dataset(path: str):
    """Three versions: 2 fragments, then a deletion, then a column added (multi-file fragments)."""
    import lance

    t = pa.table({"id": pa.array(np.arange(3000), pa.int64()), "s": [f"s{i}" for i in range(3000)]})
    lance.write_dataset(t, path, max_rows_per_file=2000)
    ds = lance.dataset(path)
    ds.delete("id % 7 = 0 OR (id >= 100 AND id < 1900)")
    ds = lance.dataset(path)
    ds.add_columns({"twice": "id * 2"})
    return lance.dataset(path)


def test_reader_on_a_pylance_dataset_skips_deleted_rows(tmp_path):
    path = str(tmp_path / "ds")
    ds = _pylance_dataset(path)
    assert ds.version == 3 and all(len(f.data_files()) == 2 for f in ds.get_fragments())
    for version in (1, 2, 3):
        want = __import__("lance").dataset(path, version=version).to_table()
        opts = {"path": path, "version": str(version), "rows_per_partition": "300"}
        schema = LanceDataSource(opts).schema()
        r = LanceReader(opts, schema)
        parts = r.partitions()
        got = pa.Table.from_batches([b for p in parts for b in r.read(p)], schema=r.target)
        assert got.num_rows == want.num_rows
        assert got.column("id").to_pylist() == want.column("id").to_pylist()
        assert schema.names == want.schema.names
        if "twice" in schema.names:
            assert got.column("twice").to_pylist() == want.column("twice").to_pylist()
        assert all(p.num_rows <= 300 for p in parts)


def test_an_empty_schema_reads_only_row_counts(tmp_path):
    """``spark.read.format("lance").schema(StructType()).load(p).count()``: no column is decoded; each
    slice of live rows is one zero-column batch, so the counts are pylance's, deletions included."""
    import lance

    path = str(tmp_path / "ds")
    _pylance_dataset(path)
    for version in (1, 2, 3):
        opts = {"path": path, "version": str(version), "rows_per_partition": "300"}
        r = LanceReader(opts, T.StructType())
        parts = r.partitions()
        batches = [b for p in parts for b in r.read(p)]
        assert all(b.num_columns == 0 for b in batches) and len(batches) == sum(len(p.slices) for p in parts)
        assert sum(b.num_rows for b in batches) == lance.dataset(path, version=version).count_rows()


def test_live_ranges_follow_deletions():
    from lancelot.spark.dataset_scan import FragmentInfo, _to_live, plan

    deleted = np.array([0, 5, 6, 50], np.uint32)
    assert _to_live([(0, 10)], deleted) == [(0, 7)]
    assert _to_live([(5, 7)], deleted) == []  # only deleted rows
    assert _to_live([(7, 60), (70, 80)], deleted) == [(4, 56), (66, 76)]
    infos = [FragmentInfo(3, 10, 12, 1200), FragmentInfo(4, 0, 5, 100), FragmentInfo(9, 25, 25, 2500)]
    parts = plan(infos, None, rows_per_partition=15, bytes_per_partition=1, min_partitions=1, min_partition_bytes=1)
    assert [p.slices for p in parts] == [((3, 0, 10),), ((9, 0, 15),), ((9, 15, 25),)]
    # bytes: half the data per partition (min_partitions=2) cuts one fragment in two, not two and a sliver
    big = [FragmentInfo(0, 1_000_000, 1_000_000, 12_345_678)]
    parts = plan(
        big, None, rows_per_partition=None, bytes_per_partition=64 << 20, min_partitions=2, min_partition_bytes=1
    )
    assert [p.slices for p in parts] == [((0, 0, 500_000),), ((0, 500_000, 1_000_000),)]


def test_pushdown_prunes_fragments_of_a_dataset(tmp_path):
    path = str(tmp_path / "ds")
    t = pa.table({"k": pa.array(np.arange(40_000), pa.int64())})
    lancelot.write_dataset(t, path, max_rows_per_file=10_000)
    import pyarrow.compute as pc

    lancelot.dataset(path).delete(pc.field("k") < 5000)
    opts = {"path": path, "rows_per_partition": "100000"}
    r = LancePushdownReader(opts, LanceDataSource(opts).schema())
    assert r.pushFilters([GreaterThan(("k",), 35_000)]) == []  # applied by the reader
    parts = r.partitions()
    rows = [v for p in parts for b in r.read(p) for v in b.column(0).to_pylist()]
    assert len(parts) == 1 and rows[0] <= 35_001 and rows[-1] == 39_999 and len(rows) < 10_000
    r = LancePushdownReader(opts, LanceDataSource(opts).schema())
    r.pushFilters([LessThan(("k",), 6000)])  # fragment 0 has deletions: ranges are live rows
    rows = [v for p in r.partitions() for b in r.read(p) for v in b.column(0).to_pylist()]
    assert rows[0] == 5000 and 5999 in rows and len(rows) < 10_000


def test_an_attempt_finishing_after_its_job_removes_its_files(tmp_path):
    out = str(tmp_path / "o")
    w = LanceDatasetWriter({"path": out}, SCHEMA, overwrite=False)
    done = w.write(iter(_batches(5)))
    w.commit([done])
    with pytest.raises(LanceError, match="already ended"):
        w.write(iter(_batches(7)))  # a straggler of the same job (e.g. a speculative copy)
    assert len(_files_on_disk(out)) == 1 and lancelot.dataset(out).count_rows() == 5
    assert only_markers(os.path.join(out, ATTEMPTS_DIR))


def test_appended_schema_takes_the_datasets_nullability_and_item_names():
    from lancelot.spark.types import align_to_dataset

    ours = pa.schema(
        [
            pa.field("id", pa.int64(), False),
            pa.field("l", pa.list_(pa.field("element", pa.int32(), False)), False),
            pa.field("st", pa.struct([pa.field("a", pa.int64(), False)])),
            pa.field("new", pa.int8()),
        ]
    )
    theirs = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("l", pa.list_(pa.int32())),
            pa.field("st", pa.struct([pa.field("a", pa.int64(), False)]), False),
        ]
    )
    got = align_to_dataset(ours, theirs)
    assert got == pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("l", pa.list_(pa.int32())),
            pa.field("st", pa.struct([pa.field("a", pa.int64(), False)]), False),
            pa.field("new", pa.int8()),
        ]
    )


def test_appends_of_nullable_spark_columns_to_non_null_ones(tmp_path):
    """A UDF's result is nullable for Spark; the dataset's column is non-null: rows without nulls append,
    a null is refused naming the column."""
    out = str(tmp_path / "o")
    strict = T.StructType([T.StructField("x", T.LongType(), False), T.StructField("s", T.StringType(), False)])
    w = LanceDatasetWriter({"path": out}, strict, overwrite=False)
    w.commit([w.write(iter(_batches(3)))])
    w = LanceDatasetWriter({"path": out}, SCHEMA, overwrite=False)  # both columns nullable
    assert w.check_nulls and not w.schema.field("x").nullable
    w.commit([w.write(iter(_batches(2, 10)))])
    assert sorted(lancelot.dataset(out).to_table()["x"].to_pylist()) == [0, 1, 2, 10, 11]
    w = LanceDatasetWriter({"path": out}, SCHEMA, overwrite=False)
    bad = pa.RecordBatch.from_pydict({"x": pa.array([5, None], pa.int64()), "s": ["a", "b"]})
    with pytest.raises(SchemaMismatchError, match="null values in column 'x'"):
        w.write(iter([bad]))
    w.abort([None])
    assert lancelot.dataset(out).count_rows() == 5


def test_a_dataset_written_again_at_the_same_path_is_not_read_from_the_cache(tmp_path):
    import shutil

    path = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"x": pa.array([1, 2], pa.int64())}), path)
    opts = {"path": path}
    first = LanceReader(opts, LanceDataSource(opts).schema())
    parts = first.partitions()
    assert [v for p in parts for b in first.read(p) for v in b.column(0).to_pylist()] == [1, 2]
    shutil.rmtree(path)  # same path, same version number 1, another manifest
    lancelot.write_dataset(pa.table({"x": pa.array([7, 8, 9], pa.int64())}), path)
    again = LanceReader(opts, LanceDataSource(opts).schema())
    assert [v for p in again.partitions() for b in again.read(p) for v in b.column(0).to_pylist()] == [7, 8, 9]
    with pytest.raises(LanceError, match="changed while it was being read"):
        list(first.read(parts[0]))  # a scan planned before the rewrite does not mix the two


def test_file_urls_name_datasets_too(tmp_path):
    import lance

    uri = "file://" + str(tmp_path / "ds")
    w = LanceDatasetWriter({"path": uri}, SCHEMA, overwrite=False)
    w.commit([w.write(iter(_batches(3)))])
    assert lance.dataset(str(tmp_path / "ds")).count_rows() == 3
    opts = {"path": uri, "version": "1"}
    r = LanceReader(opts, LanceDataSource(opts).schema())
    assert [v for p in r.partitions() for b in r.read(p) for v in b.column(0).to_pylist()] == [0, 1, 2]
    with pytest.raises(LanceError, match="need a dataset"):
        LanceDataSource({"path": str(tmp_path), "version": "1"}).schema()  # a directory of no dataset


def test_write_options_profile():
    """The writer's profile option is checked on the driver and reaches write_fragments."""
    from lancelot.spark.writer import write_options

    assert write_options({"profile": "compact", "max_rows_per_file": "10"}) == {
        "profile": "compact",
        "max_rows_per_file": 10,
    }
    assert "profile" not in write_options({})
    with pytest.raises(LanceError, match="option profile must be one of fast, balanced, compact"):
        write_options({"profile": "smallest"})


def test_a_pinned_version_is_reused_only_while_its_manifest_is_unchanged(tmp_path):
    """Planning opens the dataset once per Python process; a new version, or a dataset deleted and written
    again at the same path (same version number, another manifest), is opened afresh."""
    import shutil

    from lancelot.spark.dataset_scan import pin_version
    from lancelot.spark.reader import open_source

    path = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"k": [1, 2]}), path)
    opts = {"path": path}
    _, (v1, stamp1), *_ = open_source(opts)
    first = pin_version(path, None, None, None)
    assert first.version == v1 == 1 and pin_version(path, None, None, None) is first
    assert pin_version(path, None, 1, None) is first
    lancelot.write_dataset(pa.table({"k": [3]}), path, mode="append")
    assert pin_version(path, None, None, None).version == 2 and pin_version(path, None, 1, None) is first
    shutil.rmtree(path)
    lancelot.write_dataset(pa.table({"k": [7, 8, 9]}), path)
    again = open_source(opts)[1]
    assert again[0] == 1 and again[1] != stamp1
    ds = pin_version(path, None, None, None)
    assert ds is not first and ds.to_table().column("k").to_pylist() == [7, 8, 9]


def test_stream_writer_commits_a_batch_once_and_abort_keeps_committed_files(tmp_path):
    """The sink's commit without Spark: a batch committed again (a rerun after a restart) makes no
    version and its files are deleted; abort after a commit that raised keeps the version's files."""
    import lance
    from pyspark.sql import types as T

    from lancelot.spark.stream import LanceStreamWriter, committed_batch

    uri = str(tmp_path / "s")
    schema = T.StructType([T.StructField("id", T.LongType())])
    opts = {"path": uri, "stream_id": "q1"}

    def batch(ids):
        w = LanceStreamWriter(opts, schema, False)
        return w, [w.write(iter([pa.record_batch({"id": pa.array(ids, pa.int64())})]))]

    w, msgs = batch([1, 2])
    w.commit(msgs, 0)
    assert lance.dataset(uri).version == 2 and committed_batch(uri, None, "q1", 0)
    w, rerun = batch([1, 2])  # the same batch again, written by new tasks
    w.commit(rerun, 0)
    assert lance.dataset(uri).version == 2 and lance.dataset(uri).count_rows() == 2
    assert len(os.listdir(os.path.join(uri, "data"))) == 1  # the rerun's file was deleted
    w, msgs = batch([3])
    w.commit(msgs, 1)
    w.abort(msgs, 1)  # Spark aborts when commit raised after committing: the version stays readable
    assert sorted(lance.dataset(uri).to_table().column("id").to_pylist()) == [1, 2, 3]
    w, msgs = batch([4])
    w.abort(msgs, 2)  # a batch that never committed: its files go
    assert len(os.listdir(os.path.join(uri, "data"))) == 2 and not committed_batch(uri, None, "q1", 2)
    msgs[0].query_id = ""  # tasks that found no sql.streaming.queryId, and no stream_id option
    with pytest.raises(LanceError, match="stream_id"):
        LanceStreamWriter({"path": uri}, schema, False).commit(msgs, 3)
