"""The "lance" PySpark data source (needs pyspark >= 4.1; see docs/SPARK.md).

import lancelot.spark
lancelot.spark.register(spark)
df = spark.read.format("lance").load("dataset/")      # a dataset, a file, a directory or a glob
df.write.format("lance").mode("append").save("out/")  # creates the dataset if there is none
lancelot.spark.save(df, "out/")                       # Spark's default mode (errorifexists) too
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

from lancelot.spark.operations import add_columns, compact, delete, merge_insert, update  # noqa: E402
from lancelot.spark.source import LanceDataSource  # noqa: E402

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["LanceDataSource", "add_columns", "compact", "delete", "load", "merge_insert", "register", "save", "update"]


#: Spark's setting that lets Python data sources receive filters (off by default in pyspark 4.1-4.3)
PUSHDOWN_SETTING = "spark.sql.python.filterPushdown.enabled"

#: why filter pushdown is off unless asked for (docs/SPARK.md, correctness)
PUSHDOWN_WARNING = (
    "filter pushdown on: in pyspark 4.1-4.3 Spark reuses a DataFrame's last pushed-down read for a later "
    "query over the same DataFrame that pushes no filter (the read planned by the pushdown worker, "
    "SPARK-51575, is kept on the relation's PythonDataSourceV2), so df.filter('id = 1').count(); df.count() "
    "returns 1. Use a new DataFrame per filtered query, or the 'filter' read option (docs/SPARK.md)."
)

_REGISTERED = "_lancelot_spark_registered"


def register(spark: SparkSession, *, filter_pushdown: bool = False) -> None:
    """Register the "lance" format with ``spark`` (a classic or Spark Connect session).

    ``filter_pushdown=True`` registers the source that accepts Spark's pushed filters (zone
    maps then skip row ranges and tasks return only matching rows) and turns on
    ``spark.sql.python.filterPushdown.enabled``, with a warning: Spark 4.1-4.3 reuse a
    DataFrame's last pushed-down read for a later query over it that pushes no filter (a
    wrong answer; docs/SPARK.md).  By default the source takes no pushed filters, whatever
    that setting says, and every query returns what pylance returns; the ``filter`` read
    option prunes without Spark's pushdown.
    """
    import warnings

    from lancelot.spark.source import LancePushdownDataSource

    if filter_pushdown:
        warnings.warn(PUSHDOWN_WARNING, UserWarning, stacklevel=2)
        spark.dataSource.register(LancePushdownDataSource)
        spark.conf.set(PUSHDOWN_SETTING, "true")
    else:
        spark.dataSource.register(LanceDataSource)
    try:
        setattr(spark, _REGISTERED, True)
    except AttributeError:  # pragma: no cover - a session class with slots
        pass


def _ensure_registered(spark: SparkSession) -> None:
    """Register "lance" with the default settings unless ``register`` already ran on ``spark``."""
    if not getattr(spark, _REGISTERED, False):
        register(spark)


def load(spark: SparkSession, path: str, **options: object) -> DataFrame:
    """``spark.read.format("lance").load(path)`` with ``options``, registering "lance" first if needed."""
    import json

    _ensure_registered(spark)
    reader = spark.read.format("lance")
    for k, v in options.items():
        reader = reader.option(k, json.dumps(v) if isinstance(v, dict) else str(v))
    return reader.load(path)


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

    _ensure_registered(df.sparkSession)
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
