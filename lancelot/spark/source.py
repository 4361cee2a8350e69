"""``LanceDataSource``: the "lance" PySpark data source (reads Lance datasets and files, writes datasets).

Filter pushdown is off unless asked for (docs/SPARK.md, correctness): pyspark 4.1-4.3 keep the read that a pushed-down
query planned on the DataFrame's relation and reuse it for a later query over that DataFrame that pushes no filter
(SPARK-51575's design; fixed on Spark's master by keeping it per scan).  ``LanceDataSource`` therefore never accepts
pushed filters, even when ``spark.sql.python.filterPushdown.enabled`` is on: a reused read is then the same read.
``LancePushdownDataSource`` (registered by ``lancelot.spark.register(spark, filter_pushdown=True)``) accepts them.

The reader Spark gets depends on who asks.  pyspark refuses a reader that overrides ``pushFilters`` while the setting is
false, yet the data source is never told that setting.  Spark asks for a reader from two places: its filter-pushdown
planner (only when the setting is true; it then calls ``pushFilters``) and its plain read planner (which never calls
``pushFilters``).  So ``reader()`` hands the pushdown-capable reader only to the filter-pushdown planner, recognized by
the pyspark module on the call stack, and a plain reader otherwise.  The ``filter_pushdown`` option ("auto", "true",
"false") overrides that choice."""

from __future__ import annotations

import sys
from types import FrameType
from typing import ClassVar

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamWriter
from pyspark.sql.types import LongType, StructField, StructType

from lancelot.errors import LanceError
from lancelot.spark.reader import ROW_ADDRESS, LancePushdownReader, LanceReader, open_source
from lancelot.spark.types import resolve_column
from lancelot.spark.writer import LanceDatasetWriter

#: the pyspark worker that calls DataSourceReader.pushFilters (Spark 4.1+)
PUSHDOWN_PLANNER = "pyspark.sql.worker.data_source_pushdown_filters"


def called_by_pushdown_planner(depth: int = 12) -> bool:
    """Whether pyspark's filter-pushdown planner is on the call stack."""
    frame: FrameType | None = sys._getframe(1)
    for _ in range(depth):
        if frame is None:
            return False
        if frame.f_globals.get("__name__") == PUSHDOWN_PLANNER:
            return True
        frame = frame.f_back
    return False


class LanceDataSource(DataSource):
    """``spark.read.format("lance").load(path)`` and ``df.write.format("lance").mode(m).save(uri)``.

    Read options: ``version`` or ``timestamp`` (time travel in a dataset), ``columns`` ("a,b": read only these),
    ``rows_per_partition`` or ``bytes_per_partition`` (default 64 MiB) and ``min_partitions`` (default: the CPU count),
    ``batch_size`` (rows per Arrow batch), ``filter_pushdown`` (auto/true/false). Write options:
    ``data_storage_version`` ("2.0", "2.1", "2.2"), ``max_rows_per_file``, ``save_mode`` (errorifexists / ignore, with
    Spark's append). Both: ``storage_options`` (JSON) or ``storage.<key>`` (object-store settings, s3:// paths).
    ``filter`` (a SQL predicate the source applies itself: lancelot/spark/filter_option.py)."""

    #: whether option filter_pushdown "auto" accepts Spark's pushed filters (see the module docstring)
    pushdown_by_default: ClassVar[bool] = False

    @classmethod
    def name(cls) -> str:
        return "lance"

    def schema(self) -> StructType:
        full: StructType = open_source(self.options).spark_schema
        if str(self.options.get("with_row_address", "false")).lower() == "true":
            full = StructType([*full.fields, StructField(ROW_ADDRESS, LongType(), False)])
        cols = self.options.get("columns")
        if not cols:
            return full
        picked = []
        for c in (c.strip() for c in cols.split(",")):
            if not c:
                continue
            name = resolve_column(full, c)
            if name is None:
                raise LanceError(f"option columns names {c!r}, which is not in the files (columns: {full.names})")
            picked.append(full[name])
        return StructType(picked)

    def reader(self, schema: StructType) -> DataSourceReader:
        choice = str(self.options.get("filter_pushdown", "auto")).lower()
        if choice not in ("auto", "true", "false"):
            raise LanceError(f"option filter_pushdown must be auto, true or false, not {choice!r}")
        auto = choice == "auto" and self.pushdown_by_default
        pushdown = choice == "true" or (auto and called_by_pushdown_planner())
        return (LancePushdownReader if pushdown else LanceReader)(self.options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> LanceDatasetWriter:
        return LanceDatasetWriter(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802 (pyspark's)
        """``df.writeStream.format("lance").option("checkpointLocation", ck).start(uri)`` (spark/stream.py)."""
        from lancelot.spark.stream import LanceStreamWriter

        return LanceStreamWriter(self.options, schema, overwrite)


class LancePushdownDataSource(LanceDataSource):
    """The "lance" source that accepts Spark's pushed filters (``register(spark, filter_pushdown=True)``)."""

    pushdown_by_default: ClassVar[bool] = True
