"""The floor of any Python data source: a minimal one that only yields pyarrow's batches of a Parquet file.

``spark.read.format("parquet_floor").option("num_partitions", n).load(path)`` splits the file's row
groups into ``n`` contiguous partitions (as lancelot's reader splits row ranges) and each task yields
``pyarrow.parquet.ParquetFile.iter_batches(batch_size, row_groups, columns)`` unchanged: no type
mapping, no casts, no planning beyond the footer.  Whatever the "lance" source costs above this is
lancelot's own overhead; what both cost is pyspark's (Arrow transfer to the JVM, row conversion).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_type
from pyspark.sql.types import StructField, StructType

DEFAULT_BATCH_SIZE = 16384


class FloorPartition(InputPartition):
    """Row-group indexes of the one file: ``value`` = (first, stop)."""


def split_row_groups(num_groups: int, parts: int) -> list[tuple[int, int]]:
    """``num_groups`` row groups cut into at most ``parts`` contiguous (first, stop) runs of near-equal size."""
    parts = max(1, min(parts, num_groups))
    bounds = [num_groups * i // parts for i in range(parts + 1)]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


class ParquetFloorReader(DataSourceReader):
    """Yields the row groups of one partition as pyarrow's record batches."""

    def __init__(self, path: str, columns: list[str], parts: int, batch_size: int, threads: bool) -> None:
        import pyarrow.parquet as pq

        self.path, self.columns, self.batch_size, self.threads = path, columns, batch_size, threads
        self.num_groups = pq.ParquetFile(path).num_row_groups
        self.parts = parts

    def partitions(self) -> list[InputPartition]:
        return [FloorPartition(r) for r in split_row_groups(self.num_groups, self.parts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq

        first, stop = partition.value
        pf = pq.ParquetFile(self.path)
        yield from pf.iter_batches(
            self.batch_size, row_groups=range(first, stop), columns=self.columns, use_threads=self.threads
        )


class ParquetFloorDataSource(DataSource):
    """Options: ``num_partitions`` (default 2), ``batch_size`` (16384), ``columns`` ("a,b"), ``threads``."""

    @classmethod
    def name(cls) -> str:
        return "parquet_floor"

    def _arrow_schema(self) -> pa.Schema:
        import pyarrow.parquet as pq

        schema = pq.read_schema(self.options["path"])
        cols = [c for c in self.options.get("columns", "").split(",") if c]
        return pa.schema([schema.field(c) for c in cols]) if cols else schema

    def schema(self) -> StructType:
        return StructType([StructField(f.name, from_arrow_type(f.type), f.nullable) for f in self._arrow_schema()])

    def reader(self, schema: StructType) -> DataSourceReader:
        return ParquetFloorReader(
            self.options["path"],
            schema.fieldNames(),
            int(self.options.get("num_partitions", 2)),
            int(self.options.get("batch_size", DEFAULT_BATCH_SIZE)),
            str(self.options.get("threads", "false")).lower() == "true",
        )


class OneRowReader(DataSourceReader):
    """One partition, one row; accepts (and hands back) every filter, as the lance source's pushdown reader.

    The row has ``id`` 0 and a zero (0, 0.0, False, "", b"") in every other column of ``schema``."""

    def __init__(self, schema: StructType) -> None:
        from lancelot.spark.types import spark_arrow_schema

        self.target = spark_arrow_schema(schema)

    def pushFilters(self, filters: list) -> list:
        return list(filters)

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        t = self.target
        yield pa.record_batch([pa.array([zero_of(f.type)], f.type) for f in t], schema=t)


def zero_of(t: pa.DataType) -> object:
    """A non-null value of a primitive Arrow type: 0, 0.0, False, "" or b""."""
    if pa.types.is_boolean(t):
        return False
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return ""
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return b""
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return 0
    raise TypeError(f"one_row has no value for {t}")


class OneRowDataSource(DataSource):
    """``spark.read.format("one_row").load()``: the fixed cost of any query through a Python data source.

    Its schema is ``id bigint``; ``.schema(s)`` gives the row the columns of ``s`` (primitive types with an
    ``id``), so a lookup's floor returns the same columns as the lookup.
    Needs ``spark.sql.python.filterPushdown.enabled=true`` (its reader accepts filters).
    """

    @classmethod
    def name(cls) -> str:
        return "one_row"

    def schema(self) -> StructType:
        return StructType([StructField("id", from_arrow_type(pa.int64()), True)])

    def reader(self, schema: StructType) -> DataSourceReader:
        return OneRowReader(schema)
