"""The "lance" PySpark data source (needs pyspark >= 4.1; see docs/SPARK.md).

import lancelot.spark
lancelot.spark.register(spark)                       # also turns filter pushdown on
df = spark.read.format("lance").load("dataset/")      # a dataset, a file, a directory or a glob
df.write.format("lance").mode("overwrite").save("out/")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

try:
    import pyspark
except ImportError as e:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "lancelot.spark needs pyspark (4.1 or later), which is not installed: pip install 'lancelot[spark]'",
        name="pyspark",
    ) from e
if tuple(int(p) for p in pyspark.__version__.split(".")[:2] if p.isdigit()) < (4, 1):
    raise ImportError(
        f"lancelot.spark needs pyspark 4.1 or later, not {pyspark.__version__}: pip install 'lancelot[spark]'",
        name="pyspark",
    )

from lancelot.spark.source import LanceDataSource  # noqa: E402

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["LanceDataSource", "register", "save"]


#: Spark's setting that lets Python data sources receive filters (off by default in pyspark 4.1-4.3)
PUSHDOWN_SETTING = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession, *, filter_pushdown: bool = True) -> None:
    """Register the "lance" format with ``spark`` (a classic or Spark Connect session).

    Also turns on ``spark.sql.python.filterPushdown.enabled`` for the session, so
    filters reach the source (zone maps then skip row ranges); pass
    ``filter_pushdown=False`` to leave the setting alone.  The source works either way.
    """
    spark.dataSource.register(LanceDataSource)
    if filter_pushdown:
        spark.conf.set(PUSHDOWN_SETTING, "true")


def save(df: DataFrame, path: str, mode: str = "errorifexists", **options: object) -> None:
    """``df`` written as a Lance dataset at ``path`` with any of Spark's four save modes.

    Spark lets Python data sources be written only in append and overwrite mode;
    this decides errorifexists and ignore on the driver first (on whether a dataset
    exists at ``path``; no job runs when ``ignore`` finds one), then writes.
    ``options`` are the source's write options (``storage_options`` may be a dict).
    """
    import json

    from lancelot.errors import LanceError
    from lancelot.spark.options import dataset_version, storage_options
    from lancelot.spark.writer import SAVE_MODES

    m = mode.lower().replace("_", "")
    m = {"error": "errorifexists", "default": "errorifexists"}.get(m, m)
    if m not in SAVE_MODES:
        raise LanceError(f"unknown save mode {mode!r} (use one of {SAVE_MODES})")
    opts = {k: json.dumps(v) if isinstance(v, dict) else str(v) for k, v in options.items()}
    exists = dataset_version(path, storage_options(opts)) is not None
    if exists and m == "errorifexists":
        raise LanceError("a dataset already exists at the output path (save mode errorifexists)", path=path)
    if exists and m == "ignore":
        return
    writer = df.write.format("lance").mode("overwrite" if m == "overwrite" else "append")
    for k, v in opts.items():
        writer = writer.option(k, v)
    if m in ("errorifexists", "ignore"):
        writer = writer.option("save_mode", m)  # re-checked at planning, against a job racing this one
    writer.save(path)
