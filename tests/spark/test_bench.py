"""The Spark benchmark's pieces (benchmarks/spark_bench.py, benchmarks/spark_floor.py) at a tiny scale.

No timings are asserted: the files it writes must hold the same rows, the floor source must read
exactly what Spark's Parquet reader reads, in the partitions it plans, and the report must be built
from the medians it is given.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import lancelot  # noqa: E402
from benchmarks import spark_bench  # noqa: E402
from benchmarks.spark_floor import (  # noqa: E402
    OneRowDataSource,
    ParquetFloorDataSource,
    ParquetFloorReader,
    split_row_groups,  # noqa: E402
)
from tests.spark.sessions import spark_session  # noqa: E402

ROWS = 3000


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    lance_file = pytest.importorskip("lance.file")
    d = tmp_path_factory.mktemp("spark_bench")
    a = spark_bench.build_parser().parse_args(
        ["--rows", str(ROWS), "--data-dir", str(d), "--parquet-row-group-rows", "1000"]
    )
    out = spark_bench.prepare_files(a, log=lambda m: None)
    expected = pq.read_table(out["parquet"])
    assert expected.num_rows == ROWS and expected.column_names == a.columns.split(",")
    assert expected["id"].to_pylist() == list(range(ROWS))
    for name, path in out.items():
        if name == "parquet":
            continue
        if "pylance" in name:
            got = lance_file.LanceFileReader(str(path)).read_all().to_table()
        elif "dataset" in name:
            got = lancelot.dataset(str(path)).to_table()
            assert __import__("lance").dataset(str(path)).to_table().equals(expected)
        else:
            got = lancelot.read_table(str(path))
        assert got.equals(expected), name
    return out


def test_files_and_parquet_row_groups(files):
    md = pq.ParquetFile(files["parquet"]).metadata
    assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == [1000, 1000, 1000]
    assert sorted(files) == [
        "lance dataset 2.2",
        "lance lancelot 2.0",
        "lance pylance 2.1",
        "lance pylance 2.2",
        "parquet",
    ]


def test_floor_reader_partitions_cover_every_row_group_once(files):
    assert split_row_groups(8, 2) == [(0, 4), (4, 8)]
    assert split_row_groups(3, 5) == [(0, 1), (1, 2), (2, 3)]
    r = ParquetFloorReader(str(files["parquet"]), ["id", "text"], parts=2, batch_size=700, threads=False)
    parts = r.partitions()
    assert [p.value for p in parts] == [(0, 1), (1, 3)]
    batches = [b for p in parts for b in r.read(p)]
    assert max(b.num_rows for b in batches) == 700
    got = pa.Table.from_batches(batches)
    assert got.equals(pq.read_table(files["parquet"], columns=["id", "text"]))


def test_floor_and_one_row_sources_in_spark(files):
    from pyspark.sql.functions import col
    from pyspark.sql.types import BinaryType, BooleanType, DoubleType, LongType, StringType, StructField, StructType

    spark = spark_session()
    spark.dataSource.register(ParquetFloorDataSource)
    spark.dataSource.register(OneRowDataSource)
    path = str(files["parquet"])
    floor = spark.read.format("parquet_floor").option("num_partitions", 2).load(path)
    assert floor.rdd.getNumPartitions() == 2
    # (Spark's file sources declare every column nullable; the floor keeps the file's flags)
    types = [(f.name, f.dataType) for f in spark.read.parquet(path).schema]
    assert [(f.name, f.dataType) for f in floor.schema] == types
    assert sorted(floor.collect()) == sorted(spark.read.parquet(path).collect())
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        assert [r.id for r in spark.read.format("one_row").load().filter(col("id") == 0).collect()] == [0]
        # the lookup's columns (a dataset's non-null flags kept): one row of zeros
        wide = StructType(
            [StructField("id", LongType(), False), StructField("value", DoubleType(), True)]
            + [StructField(n, t, False) for n, t in (("s", StringType()), ("b", BinaryType()), ("f", BooleanType()))]
        )
        df = spark.read.format("one_row").schema(wide).load().filter(col("id") == 0)
        assert [tuple(r) for r in df.collect()] == [(0, 0.0, "", bytearray(b""), False)]
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")


def test_ratios_and_report():
    res = {
        "meta": {"rows": 10, "columns": "id", "master": "local[2]", "reps": 3},
        "partitions": {"scan": {"lance lancelot 2.0": 2}},
        "scan": {
            "lance lancelot 2.0": {"median": 1.1, "samples": [1.0, 1.1, 1.2]},
            "parquet": {"median": 0.5, "samples": [0.5]},
            "floor": {"median": 1.0, "samples": [1.0]},
        },
        "lookup": {
            "lance lancelot 2.0 pushdown": {"median": 0.2, "samples": [0.2]},
            "parquet pushdown": {"median": 0.4, "samples": [0.4]},
            spark_bench.REF_PYTHON: {"median": 0.25, "samples": [0.25]},
            spark_bench.REF_PYTHON_ROW: {"median": 0.4, "samples": [0.4]},
        },
    }
    r = spark_bench.ratios_of(res)
    assert r["scan lance lancelot 2.0 / floor"] == pytest.approx(1.1)
    assert r["scan floor / parquet"] == pytest.approx(2.0)
    assert r["lookup speedup: parquet pushdown / lance lancelot 2.0 pushdown"] == pytest.approx(2.0)
    assert r[f"lookup lance lancelot 2.0 pushdown / {spark_bench.REF_PYTHON}"] == pytest.approx(0.8)
    assert r[f"lookup lance lancelot 2.0 pushdown / {spark_bench.REF_PYTHON_ROW}"] == pytest.approx(0.5)
    res["ratios"] = r
    text = spark_bench.render(res, markdown=True)
    assert "| lance lancelot 2.0 | 1.1 | 1 | 1.2 | 2 |" in text and "| scan floor / parquet | 2 |" in text


def test_ops_ratios_and_report():
    """--ops: lancelot.spark's median over each other path's, and the ops table."""
    med = {"lancelot.spark": 4.0, "pylance": 1.0, "lancelot": 2.0, "Spark Parquet rewrite": 8.0}
    res = {
        "meta": {"rows": 10, "columns": "id", "master": "local[2]", "reps": 1},
        "partitions": {},
        "ops": {
            f"{k}, {n}": {"median": v, "samples": [v]} for k in ("merge_insert", "backfill") for n, v in med.items()
        },
    }
    del res["ops"]["merge_insert, Spark Parquet rewrite"]  # no such path
    r = spark_bench.ratios_of(res)
    assert r == {
        "merge_insert: lancelot.spark / pylance": 4.0,
        "merge_insert: lancelot.spark / lancelot": 2.0,
        "backfill: lancelot.spark / pylance": 4.0,
        "backfill: lancelot.spark / lancelot": 2.0,
        "backfill: lancelot.spark / Spark Parquet rewrite": 0.5,
    }
    res["ratios"] = r
    text = spark_bench.render(res, markdown=True)
    assert (
        "| backfill, Spark Parquet rewrite | 8 | 8 | 8 | - |" in text
        and "| backfill: lancelot.spark / lancelot | 2 |" in text
    )


def test_trace_phase_medians():
    from benchmarks.spark_trace import phase_medians

    events = [
        {"ev": "query", "case": "a", "t": 10.0},
        {"ev": "schema", "t": 10.002},
        {"ev": "import", "t": 10.003},  # a worker's start is reported apart, not as a phase
        {"ev": "query", "case": "a", "t": 20.0},
        {"ev": "schema", "t": 20.004},
        {"ev": "query", "case": "b", "t": 30.0},
        {"ev": "read", "t": 30.1},
    ]
    got = phase_medians(events)
    assert got.keys() == {"a", "b"} and got["a"].keys() == {"schema"}
    assert got["a"]["schema"] == pytest.approx(3.0) and got["b"]["read"] == pytest.approx(100.0)
