"""The "lance" PySpark data source (needs pyspark >= 4.1; see docs/SPARK.md).

    from lancelot.spark import LanceDataSource
    spark.dataSource.register(LanceDataSource)
    df = spark.read.format("lance").load("dir/")          # a file, a directory or a glob
    df.write.format("lance").mode("overwrite").save("out/")
"""

from __future__ import annotations

from lancelot.spark.source import LanceDataSource

__all__ = ["LanceDataSource", "register", "save"]


def register(spark) -> None:
    """Register the "lance" format with a SparkSession."""
    spark.dataSource.register(LanceDataSource)


def save(df, path: str, mode: str = "errorifexists", **options) -> None:
    """``df`` written as Lance files in ``path`` with any of Spark's four save modes.

    Spark lets Python data sources be written only in append and overwrite mode;
    this decides errorifexists and ignore on the driver first, like Spark's own
    file sources (on whether ``path`` exists), then writes in append mode.
    """
    from lancelot.errors import LanceError
    from lancelot.spark.files import local_path
    from lancelot.spark.writer import SAVE_MODES, path_exists

    m = mode.lower().replace("_", "")
    m = {"error": "errorifexists", "default": "errorifexists"}.get(m, m)
    if m not in SAVE_MODES:
        raise LanceError(f"unknown save mode {mode!r} (use one of {SAVE_MODES})")
    exists = path_exists(local_path(path))
    if exists and m == "errorifexists":
        raise LanceError("the output path already exists (save mode errorifexists)", path=path)
    if exists and m == "ignore":
        return
    writer = df.write.format("lance").mode("overwrite" if m == "overwrite" else "append")
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.save(path)
