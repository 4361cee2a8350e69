"""One local[2] SparkSession for every Spark test (import ``spark_session`` from here)."""

from __future__ import annotations

import atexit
import functools
import os
import sys


@functools.lru_cache(maxsize=1)
def spark_session():
    """The shared session: local[2], small shuffles, a non-UTC session time zone, "lance" registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers must use this virtualenv
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # workers import benchmarks/ too
    os.environ["PYTHONPATH"] = os.pathsep.join([root] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p and p != root])
    from pyspark.sql import SparkSession

    from lancelot.spark import LanceDataSource

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("lancelot-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "America/Los_Angeles")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.ansi.enabled", "true")
        .config("spark.sql.timeType.enabled", "true")  # TIME columns (Arrow time32/time64)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(LanceDataSource)
    atexit.register(spark.stop)
    return spark
