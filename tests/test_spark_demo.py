"""The README's main command, ``python -m lancelot.demo``, at a tiny scale on the shared SparkSession."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from conftest_spark import spark_session  # noqa: E402

from lancelot import demo  # noqa: E402


def test_demo_pipeline_runs_and_both_formats_agree(tmp_path, capsys):
    spark = spark_session()
    try:
        demo.run(0.01, str(tmp_path), take_rows=50, seed=1, version=None, spark=spark)
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    out = capsys.readouterr().out
    assert "same results from both formats: True" in out
    assert "same rows: True" in out
    assert "take 50 random rows" in out and "write (Spark)" in out
    planned, total = (int(x.replace(",", "")) for x in out.split("Lance scan plans ")[1].split(" rows")[0].split(
        " of "))
    assert 0 < planned < total  # the zone maps skipped rows outside 1995
    assert "version: " in out or "LanceFile(" in out  # the layout of one file


def test_seeded_generator_makes_the_tables_the_demo_needs(tmp_path):
    import pyarrow.parquet as pq

    demo.seeded_tpch(str(tmp_path), 0.0005)
    for t in demo.TABLES:
        assert pq.ParquetFile(str(tmp_path / f"{t}.parquet")).metadata.num_rows > 0
    cols = pq.read_schema(str(tmp_path / "lineitem.parquet")).names
    assert {"l_orderkey", "l_shipdate", "l_extendedprice", "l_discount", "l_tax"} <= set(cols)
