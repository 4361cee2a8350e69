"""The "lance" PySpark data source (needs pyspark >= 4.1; see docs/SPARK.md).

import lancelot.spark lancelot.spark.register(spark) df = spark.read.format("lance").load("dataset/")      # a dataset,
a file, a directory or a glob df.write.format("lance").mode("append").save("out/")  # creates the dataset if there is
none lancelot.spark.save(df, "out/")                       # Spark's default mode (errorifexists) too"""

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
    """Register the ``"lance"`` data source with a Spark session (classic or Spark Connect).

    pylance has no Spark data source; what this one writes, pylance and LanceDB read.

    Args:
        spark: The session.
        filter_pushdown: Register the source that accepts Spark's pushed-down filters (zone maps then skip row ranges,
            tasks return only matching rows) and turn on ``spark.sql.python.filterPushdown.enabled``, with a warning:
            pyspark 4.1-4.3 reuse a DataFrame's last pushed-down read for a later query over it that pushes no filter
            (SPARK-51575), a wrong answer. Off by default: every query then returns what pylance returns, and the
            ``filter`` read option prunes without Spark's pushdown.

    Examples:
        ```python
        import lancelot.spark
        lancelot.spark.register(spark)
        df = spark.read.format("lance").option("columns", "id,name").load("events.lance")
        df.write.format("lance").mode("append").save("events.lance")
        ```
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
    """Read a Lance dataset (or file, directory or glob of files) into a DataFrame: ``spark.read.format("lance")`` with
    ``options``, registering the source first if needed.

    Args:
        spark: The session.
        path: The dataset's path or URL.
        **options: Read options (``columns="a,b"``, ``filter="id = 42"``, ``version=2``, ``storage_options={...}``...;
            docs/SPARK.md lists them); a dict value is passed as JSON.

    Returns:
        A Spark DataFrame.

    Examples:
        ```python
        hits = lancelot.spark.load(spark, "s3://bucket/events", filter="id = 42", columns="id,name")
        ```
    """
    import json

    _ensure_registered(spark)
    reader = spark.read.format("lance")
    for k, v in options.items():
        reader = reader.option(k, json.dumps(v) if isinstance(v, dict) else str(v))
    return reader.load(path)


def save(df: DataFrame, path: str, mode: str = "errorifexists", **options: object) -> None:
    """Write a DataFrame as a Lance dataset with any of Spark's four save modes.

    Spark lets Python data sources write only in append and overwrite mode; this decides ``errorifexists`` and
    ``ignore`` on the driver first (no job runs when ``ignore`` finds a dataset), then writes one new version.

    Args:
        df: The rows to write.
        path: The dataset's path or URL.
        mode: ``"errorifexists"`` (Spark's default), ``"ignore"``, ``"append"`` or ``"overwrite"``.
        **options: Write options (``data_storage_version``, ``max_rows_per_file``, ``storage_options`` as a dict...).

    Raises:
        LanceError: An unknown mode, or ``errorifexists`` where a dataset exists.

    Examples:
        ```python
        lancelot.spark.save(df, "out.lance", mode="ignore")
        ```
    """
    import json

    from lancelot.errors import LanceError
    from lancelot.spark.options import dataset_version, storage_options
    from lancelot.spark.writer import canonical_save_mode

    _ensure_registered(df.sparkSession)
    m = canonical_save_mode(mode)
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
