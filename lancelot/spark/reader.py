"""The read side of the "lance" data source: a dataset or loose files, partition planning, pushdown, read().

A path holding a Lance dataset is read through lancelot/spark/dataset_scan.py (one pinned version, live-row ranges per
fragment).  Otherwise the path names Lance files (a file, a directory of them, a glob), read as below.

Planning runs once on the driver (in a pyspark planner worker): every file's footer gives its schema and row count; each
file's rows are cut into ranges of about ``bytes_per_partition`` bytes (or ``rows_per_partition`` rows), so one big file
is read by many tasks and small files share one.  With filters pushed down, each file's zone maps (lancelot/zonemaps.py)
first drop the row ranges they prove empty.  Tasks then apply the filters they can evaluate exactly as Spark does
(lancelot/spark/row_filter.py); Spark applies every other filter after the scan."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)
from pyspark.sql.datasource import Filter as SparkFilter
from pyspark.sql.types import StructField, StructType

from lancelot.errors import LanceError, SchemaMismatchError
from lancelot.spark.files import GLOB_CHARS, paths_option, resolve_files
from lancelot.spark.options import int_option
from lancelot.spark.partitions import LancePartition, pack_slices
from lancelot.spark.types import resolve_column, spark_arrow_schema, spark_schema, to_spark_batch

if TYPE_CHECKING:
    from lancelot.spark.row_filter import RowFilter
    from lancelot.zonemap_pruning import Filter

DEFAULT_BYTES_PER_PARTITION = 64 * 1024 * 1024
#: the column option with_row_address adds: fragment id << 32 | physical row position
ROW_ADDRESS = "_rowaddr"
DEFAULT_BATCH_SIZE = 16384
#: each read_range call covers about this many bytes of the file (then sliced into batch_size batches): a
#: call has a fixed cost (page planning, and in 2.1+ the mini-block chunks it straddles), so small calls are slow
READ_BYTES = 16 * 1024 * 1024
#: ... and at most this many rows (compressed files decode to many times their size)
READ_ROWS = 256 * 1024
#: a partition is never planned smaller than this in the bytes mode (Spark's spark.sql.files.openCostInBytes)
MIN_PARTITION_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class FileInfo:
    """What planning needs of one file, from its footer."""

    path: str
    num_rows: int
    size: int
    schema: pa.Schema


class Source(NamedTuple):
    """What ``open_source`` finds for the paths a read's options name."""

    #: the dataset's uri, or None when the paths name loose Lance files
    dataset_uri: str | None
    #: the dataset version the read pinned and its stamp (None for loose files)
    pinned: tuple[int, tuple[int, int]] | None
    storage: dict[str, Any] | None
    #: the footers of the loose files (empty for a dataset)
    files: list[FileInfo]
    arrow_schema: pa.Schema
    spark_schema: StructType


def read_footer(path: str) -> FileInfo:
    from lancelot import LanceFile

    with LanceFile(path) as f:
        return FileInfo(path, f.num_rows, os.path.getsize(path), f.schema)


def read_footers(paths: Sequence[str]) -> list[FileInfo]:
    """Footers of many files (a few threads: this is I/O)."""
    if len(paths) <= 2:
        return [read_footer(p) for p in paths]
    with ThreadPoolExecutor(max_workers=min(8, len(paths))) as pool:
        return list(pool.map(read_footer, paths))


def _without_nullability(schema: StructType) -> str:
    """A schema's shape with every nullability flag set alike (files may differ only in those)."""
    import json

    def strip(node: object) -> object:
        if isinstance(node, dict):
            return {
                k: strip(v)
                for k, v in node.items()
                if k not in ("nullable", "containsNull", "valueContainsNull", "metadata")
            }
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return json.dumps(strip(schema.jsonValue()), sort_keys=True)


def unified_schema(files: Sequence[FileInfo]) -> StructType:
    """The Spark schema all files share (a column is nullable if it is in any file); else a clear error."""
    first = files[0]
    base = spark_schema(first.schema)
    key = _without_nullability(base)
    nullable = {f.name: f.nullable for f in base}
    for info in files[1:]:
        other = spark_schema(info.schema)
        if _without_nullability(other) != key:
            diff = [
                f"{a.name}: {a.dataType.simpleString()} vs {b.dataType.simpleString()}"
                for a, b in zip(base, other)
                if a.name != b.name or a.dataType.simpleString() != b.dataType.simpleString()
            ]
            if len(base) != len(other) or not diff:
                diff = [f"columns {base.names} vs {other.names}"]
            raise SchemaMismatchError(
                f"files disagree on the schema: {first.path!r} and {info.path!r} differ in {'; '.join(diff)}",
                path=info.path,
            )
        for f in other:
            nullable[f.name] = nullable[f.name] or f.nullable
    return StructType([StructField(f.name, f.dataType, nullable[f.name], f.metadata) for f in base])


def _resolve_path(schema: pa.Schema, attr: Sequence[str]) -> tuple[str, ...] | None:
    """A Spark column path (struct fields only) in the file's spelling, or None."""
    top = resolve_column(schema, attr[0])
    if top is None:
        return None
    path = [top]
    t = schema.field(top).type
    for part in attr[1:]:
        if not pa.types.is_struct(t):
            return None
        names = [t.field(i).name for i in range(t.num_fields)]
        match = part if part in names else next((n for n in names if n.lower() == part.lower()), None)
        if match is None:
            return None
        path.append(match)
        t = t.field(match).type
    return tuple(path)


_COMPARISONS = (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)
_OPS = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<="}


def zone_filter(f: SparkFilter, schema: pa.Schema) -> Filter | None:
    """A pyspark Filter as a zone-map filter tuple on the file's columns, or None if zone maps cannot use it."""
    if isinstance(f, Not):
        inner = f.child
        if isinstance(inner, EqualTo):
            out = zone_filter(inner, schema)
            return (out[0], "!=", out[2]) if out else None
        if isinstance(inner, IsNull):
            return zone_filter(IsNotNull(inner.attribute), schema)
        if isinstance(inner, IsNotNull):
            return zone_filter(IsNull(inner.attribute), schema)
        return None
    attr = getattr(f, "attribute", None)
    if not attr:
        return None
    path = _resolve_path(schema, attr)
    if path is None:
        return None
    if isinstance(f, IsNull):
        return (path, "is_null")
    if isinstance(f, IsNotNull):
        return (path, "is_not_null")
    if isinstance(f, EqualNullSafe):
        return (path, "is_null") if f.value is None else (path, "=", f.value)
    if isinstance(f, In):
        return (path, "in", list(f.value))
    if isinstance(f, StringStartsWith):
        return (path, "starts_with", f.value)
    op = _OPS.get(type(f))
    return (path, op, f.value) if op and isinstance(f, _COMPARISONS) else None


def plan_partitions(
    files: Sequence[FileInfo],
    ranges: Mapping[str, list[tuple[int, int]]] | None,
    *,
    rows_per_partition: int | None,
    bytes_per_partition: int,
    min_partitions: int = 1,
) -> list[LancePartition]:
    """Cut every file's (remaining) row ranges into partitions of about one budget each (``pack_slices``; a whole file
    when ``ranges`` is None)."""
    units = [(f.path, f.num_rows, f.size, f.num_rows) for f in files]
    packed = pack_slices(units, ranges, rows_per_partition, bytes_per_partition, min_partitions, MIN_PARTITION_BYTES)
    return [LancePartition(p) for p in packed]


def dataset_path(paths: Sequence[str], storage: dict[str, Any] | None) -> str | None:
    """The dataset ``paths`` name (one path holding a ``_versions/`` directory), or None for Lance files."""
    from lancelot.spark.options import is_dataset, is_url

    found = [p for p in paths if not (GLOB_CHARS & set(p)) and is_dataset(p, storage)]
    if not found:
        urls = [p for p in paths if is_url(p) and not p.startswith("file://")]
        if urls:
            raise LanceError(
                f"no Lance dataset at {urls[0]!r} (files outside datasets are read from local paths only)", path=urls[0]
            )
        return None
    if len(paths) > 1:
        raise LanceError(f"a dataset must be the only path of a read, not one of {list(paths)}", path=found[0])
    return found[0]


def open_source(options: Mapping[str, str]) -> Source:
    """The dataset (pinned to a version) or the loose files the options' paths name, and their schema."""
    from lancelot.spark.dataset_scan import pin_version, remember, stamp_of
    from lancelot.spark.options import read_version_option, storage_options

    storage = storage_options(options)
    paths = paths_option(options)
    uri = dataset_path(paths, storage)
    version, timestamp = read_version_option(options)
    if uri is None:
        if version is not None or timestamp is not None:
            raise LanceError("options version and timestamp need a dataset; the path holds Lance files", path=paths[0])
        files = read_footers(resolve_files(paths))
        return Source(None, None, storage, files, files[0].schema, unified_schema(files))
    ds = pin_version(uri, storage, version, timestamp)
    remember(uri, storage, ds)
    return Source(uri, (ds.version, stamp_of(ds)), storage, [], ds.schema, spark_schema(ds.schema))


class LanceReader(DataSourceReader):
    """Reads a pinned version of a Lance dataset, or row ranges of Lance files, as Arrow batches in the schema Spark
    asked for."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        (self.dataset_uri, pinned, self.storage, self.files, arrow_schema, file_schema) = open_source(options)
        self.dataset_version: int | None = None
        self.dataset_stamp: tuple[int, int] | None = None
        if pinned:
            self.dataset_version, self.dataset_stamp = pinned
        self.arrow_schema = arrow_schema
        self.columns: list[str] = []
        #: option with_row_address: a last column ``_rowaddr`` (datasets only; lancelot.spark.delete uses it)
        self.row_address = str(options.get("with_row_address", "false")).lower() == "true"
        if self.row_address:
            if self.dataset_uri is None:
                raise LanceError("option with_row_address needs a dataset", path=self.files[0].path)
            schema = StructType([f for f in schema if f.name != ROW_ADDRESS])
        for f in schema:
            name = resolve_column(arrow_schema, f.name)
            if name is None:
                raise LanceError(
                    f"column {f.name!r} is not in the data (columns: {file_schema.names})",
                    path=self.dataset_uri or self.files[0].path,
                )
            self.columns.append(name)
        self.target = spark_arrow_schema(schema)
        if self.row_address:
            self.target = self.target.append(pa.field(ROW_ADDRESS, pa.int64(), False))
        self.rows_per_partition = int_option(options, "rows_per_partition", None)
        self.bytes_per_partition = int_option(options, "bytes_per_partition", DEFAULT_BYTES_PER_PARTITION)
        self.batch_size = int_option(options, "batch_size", DEFAULT_BATCH_SIZE)
        self.min_partitions = int_option(options, "min_partitions", os.cpu_count() or 2)
        self.zone_filters: list[Filter] = []
        #: the filters a task applies to the rows it reads (lancelot/spark/row_filter.py)
        self.row_filter: RowFilter | None = None
        self._spark_types = {name: f.dataType for name, f in zip(self.columns, schema)}
        #: the ``filter`` option's tests (lancelot/spark/filter_option.py), on the stored values
        self.option_tests: tuple[tuple[str, str, object], ...] = ()
        if options.get("filter"):
            self._apply_filter_option(str(options["filter"]))

    def _apply_filter_option(self, sql: str) -> None:
        from lancelot.spark.filter_option import FilterOptionError, parse_filter
        from lancelot.spark.row_filter import RowFilter, exact_test

        tests = []
        for zf in parse_filter(sql, self.arrow_schema):
            test = exact_test(zf, self.arrow_schema, {})
            if test is None:
                name = zf[0][0]
                raise FilterOptionError(
                    f"option filter {sql!r}: the source cannot test column {name!r} "
                    f"({self.arrow_schema.field(name).type}) with {zf[1]} {zf[2] if len(zf) > 2 else ''} itself "
                    "(it tests integer, date, boolean and string columns; apply the rest with df.filter)"
                )
            tests.append(test)
            self.zone_filters.append(zf)
        self.option_tests = tuple(tests)
        self.row_filter = RowFilter(self.option_tests)

    def _ranges(self) -> dict[str, list[tuple[int, int]]] | None:
        """Each file's row ranges the zone maps cannot rule out (None: read everything)."""
        if not self.zone_filters:
            return None
        from lancelot import LanceFile

        out = {}
        for info in self.files:
            with LanceFile(info.path) as f:
                zm = f.zone_maps()
            if zm is None or zm.num_rows != info.num_rows:
                out[info.path] = [(0, info.num_rows)]
            else:
                out[info.path] = zm.row_ranges_matching(self.zone_filters)
        return out

    def _pinned_version(self) -> int:
        """The dataset version this read pinned (``open_source`` pins one whenever it finds a dataset)."""
        if self.dataset_version is None:
            raise LanceError("no dataset version pinned: the read is of Lance files", path=self.dataset_uri)
        return self.dataset_version

    def partitions(self) -> Sequence[InputPartition]:
        if self.dataset_uri is not None:
            from lancelot.spark.dataset_scan import fragment_infos, live_ranges, open_version, plan

            ds = open_version(self.dataset_uri, self._pinned_version(), self.storage, self.dataset_stamp)
            infos = fragment_infos(ds)
            ranges = (
                {i.fragment_id: live_ranges(ds, i.fragment_id, self.zone_filters) for i in infos}
                if self.zone_filters
                else None
            )
            return plan(
                infos,
                ranges,
                rows_per_partition=self.rows_per_partition,
                bytes_per_partition=self.bytes_per_partition,
                min_partitions=self.min_partitions,
                min_partition_bytes=MIN_PARTITION_BYTES,
            )
        return plan_partitions(
            self.files,
            self._ranges(),
            rows_per_partition=self.rows_per_partition,
            bytes_per_partition=self.bytes_per_partition,
            min_partitions=self.min_partitions,
        )

    def read_step(self, path: str) -> int:
        """Rows per read_range call in ``path``: about READ_BYTES of the file (at most READ_ROWS rows), in whole batches
        of batch_size."""
        info = next((f for f in self.files if f.path == path), None)
        if info is None or not info.num_rows:
            return self.batch_size
        rows = min(READ_ROWS, READ_BYTES * info.num_rows // max(1, info.size))
        return max(1, rows // self.batch_size) * self.batch_size

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The partition's rows, read in steps of about READ_BYTES and handed over in batches of batch_size."""
        from lancelot import LanceFile
        from lancelot.spark.dataset_scan import DatasetPartition, read_partition
        from lancelot.spark.row_filter import filtered_read

        if isinstance(partition, DatasetPartition):
            if self.dataset_uri is None:  # partitions() plans dataset partitions only for a dataset
                raise LanceError("a dataset partition in a read of Lance files")
            yield from read_partition(
                self.dataset_uri,
                self._pinned_version(),
                self.storage,
                self.dataset_stamp,
                partition,
                self.columns,
                lambda t: to_spark_batch(t, self.target),
                self.batch_size,
                self.row_filter,
                self.row_address,
            )
            return
        if not isinstance(partition, LancePartition):
            return  # Spark's placeholder partition when there is nothing to read
        rf = self.row_filter
        for path, start, stop in partition.slices:
            step = self.read_step(path)
            with LanceFile(path) as f:
                for a in range(start, stop, step):
                    b = min(stop, a + step)
                    if not self.columns:  # a count through an empty schema: zero-column batches
                        n = b - a if rf is None else len(rf.matching(f.read_range(a, b, rf.columns)))
                        if n:
                            yield pa.RecordBatch.from_pydict({"_": pa.nulls(n)}).drop_columns(["_"])
                        continue
                    if rf is None:
                        table = f.read_range(a, b, self.columns)
                    else:
                        table = filtered_read(f.read_range, f.take, a, b, self.columns, rf)
                    if table is None or not table.num_rows:
                        continue
                    batch = to_spark_batch(table, self.target)
                    for b in range(0, batch.num_rows, self.batch_size):
                        yield batch.slice(b, self.batch_size)


class LancePushdownReader(LanceReader):
    """A LanceReader that also accepts filters (``spark.sql.python.filterPushdown.enabled``).

    It keeps the filters zone maps can use to skip row ranges, and applies those it can evaluate exactly as Spark does
    to the rows it reads (lancelot/spark/row_filter.py). Those it evaluates are not handed back: Spark then plans no
    Filter over the scan (so a lookup's plan does not embed its key, and Spark compiles no new code per key).  Every
    other filter is handed back, and Spark applies it after the scan."""

    def pushFilters(self, filters: list[SparkFilter]) -> Iterable[SparkFilter]:
        from lancelot.spark.row_filter import RowFilter, exact_test, row_filter

        schema = self.arrow_schema
        back = []
        for f in filters:
            zf = zone_filter(f, schema)
            if zf is not None:
                self.zone_filters.append(zf)
            if zf is None or exact_test(zf, schema, self._spark_types) is None:
                back.append(f)
        pushed = row_filter(self.zone_filters[len(self.option_tests) :], schema, self._spark_types)
        tests = self.option_tests + (pushed.tests if pushed else ())
        self.row_filter = RowFilter(tests) if tests else None
        return back
