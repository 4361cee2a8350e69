"""The README's main command, ``python -m examples.demo``, at a tiny scale on the shared SparkSession."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from examples import demo  # noqa: E402
from tests.spark.sessions import spark_session  # noqa: E402


def test_demo_pipeline_runs_and_both_formats_agree(tmp_path, capsys):
    spark = spark_session()
    demo.run(0.01, str(tmp_path), take_rows=50, seed=1, version=None, spark=spark, lookups=2)
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "false"  # the session is left as it was
    out = capsys.readouterr().out
    assert "the 1995 report is the same from both formats: True" in out
    assert "same results: True" in out
    assert "warm-up (not timed" in out
    for workload in (
        "write (Spark)",
        "count rows, no column asked",
        "lookup l_orderkey = k (Spark, pushdown)",
        "take 50 random rows",
        "read 50 of ",
    ):
        line = next(ln for ln in out.splitlines() if ln.startswith(workload))
        assert line.rstrip().endswith("x")  # both formats timed, a ratio printed
    summary = out.split("\n5. ")[1]
    assert "by time travel: 60,175 rows" in summary
    assert "version 1: committed" in summary and "version 2: committed" in summary and "fragments" in summary
    rows = {ln.split()[0]: ln for ln in summary.splitlines()[1:] if ln.startswith("  l_") or ln.startswith("  n")}
    assert {"l_orderkey", "l_shipdate", "nation"} <= set(rows)
    assert all(
        any(w in ln for w in ("bitpacked", "dictionary", "FSST", "flat", "RLE", "constant", "variable"))
        for ln in rows.values()
    )


def test_encoding_words():
    text = (
        "PageLayout mini_block_layout { value_compression { inline_bitpacking { uncompressed_bits_per_value: "
        "32 } } dictionary { general { compression { scheme: COMPRESSION_ALGORITHM_LZ4 } values { variable { "
        "offsets { flat { bits_per_value: 32 } } } } } } }"
    )
    assert demo.encoding_words(text) == "mini-block, bitpacked, dictionary, variable-width"


def test_seeded_generator_makes_the_tables_the_demo_needs(tmp_path):
    import pyarrow.parquet as pq

    demo.seeded_tpch(str(tmp_path), 0.0005)
    for t in demo.TABLES:
        assert pq.ParquetFile(str(tmp_path / f"{t}.parquet")).metadata.num_rows > 0
    cols = pq.read_schema(str(tmp_path / "lineitem.parquet")).names
    assert {"l_orderkey", "l_shipdate", "l_extendedprice", "l_discount", "l_tax"} <= set(cols)
