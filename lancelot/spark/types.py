"""Arrow types of Lance files <-> Spark SQL types (the table in docs/SPARK.md).

Spark reads a Python data source's Arrow batches only in the exact Arrow form pyspark derives from the Spark schema
(``to_arrow_schema``, timestamps labelled UTC), so every stored type is first mapped to the Arrow type Spark understands
(``spark_arrow_type``: unsigned integers widened, dictionaries decoded, large and view types narrowed, fixed-size lists
as lists, times in nanoseconds...) and each batch is cast to that form on the way out (``to_spark_batch``).  Column
names resolve as Spark's do: exact, else ignoring case (``resolve_column``)."""

from __future__ import annotations

import inspect
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
from pyspark.sql.types import DataType, StructField, StructType

from lancelot.errors import SchemaMismatchError, UnsupportedTypeError
from lancelot.util.types import is_binary_like, is_string_like

#: the session time zone does not matter: Spark's timestamps are instants, labelled UTC here
ARROW_TIMEZONE = "UTC"


def _to_arrow_schema_options() -> dict[str, Any]:
    """Keyword arguments that make pyspark's ``to_arrow_schema`` label timestamps UTC, in every pyspark.

    pyspark 4.1 takes ``timestamp_utc`` (default True: UTC); 4.2 and 4.3 take ``timezone`` (default None, which 4.2
    refuses for a TimestampType)."""
    params = inspect.signature(to_arrow_schema).parameters
    if "timezone" in params:
        return {"timezone": ARROW_TIMEZONE}
    if "timestamp_utc" in params:
        return {"timestamp_utc": True}
    return {}


TO_ARROW_OPTIONS = _to_arrow_schema_options()


def _element(name: str, t: pa.DataType, nullable: bool) -> pa.Field:
    return pa.field(name, spark_arrow_type(t), nullable)


def spark_arrow_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type Spark receives for a column stored as ``t`` (raises UnsupportedTypeError)."""
    if isinstance(t, pa.BaseExtensionType):  # pyarrow's C++ extension types (arrow.uuid...) too
        return spark_arrow_type(t.storage_type)
    if pa.types.is_dictionary(t):
        return spark_arrow_type(t.value_type)
    if pa.types.is_null(t) or pa.types.is_boolean(t):
        return t
    if pa.types.is_unsigned_integer(t):
        widened = {8: pa.int16(), 16: pa.int32(), 32: pa.int64()}
        return widened.get(t.bit_width, pa.decimal128(20, 0))
    if pa.types.is_integer(t) or pa.types.is_float32(t) or pa.types.is_float64(t):
        return t
    if pa.types.is_float16(t):
        return pa.float32()
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise UnsupportedTypeError(f"{t} has more than the 38 digits of Spark's DecimalType")
        return pa.decimal128(t.precision, t.scale)
    if is_string_like(t):
        return pa.string()
    if is_binary_like(t) or pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_date(t):
        return pa.date32()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", ARROW_TIMEZONE if t.tz else None)
    if pa.types.is_time(t):
        return pa.time64("ns")
    if pa.types.is_duration(t):
        return pa.duration("us")
    if pa.types.is_map(t):
        return pa.map_(_element("key", t.key_type, False), _element("value", t.item_type, t.item_field.nullable))
    if (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    ):
        return pa.list_(_element("element", t.value_type, t.value_field.nullable))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, spark_arrow_type(f.type), f.nullable, f.metadata) for f in t])
    raise UnsupportedTypeError(f"Arrow type {t} has no Spark SQL equivalent")


def spark_type(t: pa.DataType) -> DataType:
    """The Spark SQL type of a column stored as ``t``."""
    # prefer_timestamp_ntz: a zone-less timestamp is TIMESTAMP_NTZ (4.2+'s default; 4.1 defaults to False)
    return from_arrow_type(spark_arrow_type(t), prefer_timestamp_ntz=True)


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of a file with Arrow schema ``schema``."""
    fields = []
    for f in schema:
        try:
            fields.append(StructField(f.name, spark_type(f.type), f.nullable))
        except UnsupportedTypeError as e:
            raise UnsupportedTypeError(e.message, column=f.name) from None
    return StructType(fields)


def spark_arrow_schema(schema: StructType) -> pa.Schema:
    """The exact Arrow schema Spark expects batches of ``schema`` in (and sends them in, up to the time zone)."""
    return to_arrow_schema(schema, **TO_ARROW_OPTIONS)


def cast_column(col: pa.Array | pa.ChunkedArray, target: pa.DataType, name: str) -> pa.Array | pa.ChunkedArray:
    """Cast one column; time units may be truncated to microseconds, nothing else may be lost."""
    if col.type == target:
        return col
    if isinstance(col.type, pa.BaseExtensionType):
        col = (
            col.storage
            if isinstance(col, pa.Array)
            else pa.chunked_array([c.storage for c in col.chunks], col.type.storage_type)
        )
    try:
        return pc.cast(col, options=pc.CastOptions(target, allow_time_truncate=True))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaMismatchError(f"cannot convert {col.type} to {target}: {e}", column=name) from None


def to_spark_batch(batch: pa.RecordBatch | pa.Table, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` (columns in ``target``'s order) cast to exactly ``target``."""
    if isinstance(batch, pa.Table):
        batch = (
            batch.combine_chunks().to_batches()[0]
            if batch.num_rows
            else pa.RecordBatch.from_pylist([], schema=batch.schema)
        )
    if batch.schema.equals(target):
        return batch
    cols = [cast_column(c, f.type, f.name) for c, f in zip(batch.columns, target)]
    return pa.RecordBatch.from_arrays(cols, schema=target)


def _align_type(ours: pa.DataType, theirs: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(ours) and pa.types.is_struct(theirs):
        names = [theirs.field(i).name for i in range(theirs.num_fields)]
        return pa.struct([_align_field(f, theirs.field(f.name)) if f.name in names else f for f in ours])
    if pa.types.is_map(ours) and pa.types.is_map(theirs):
        return pa.map_(_align_field(ours.key_field, theirs.key_field), _align_field(ours.item_field, theirs.item_field))
    lists = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list)
    if any(f(ours) for f in lists) and any(f(theirs) for f in lists):
        item = _align_field(ours.value_field, theirs.value_field).with_name(theirs.value_field.name)
        if pa.types.is_large_list(ours):
            return pa.large_list(item)
        if pa.types.is_fixed_size_list(ours):
            return pa.list_(item, ours.list_size)
        return pa.list_(item)
    if ours != theirs and not _nested(ours) and not _nested(theirs) and _same_in_spark(ours, theirs):
        return theirs  # what Spark reads the dataset's type as (uint8 as short...): written back as stored
    return ours


def _nested(t: pa.DataType) -> bool:
    return bool(pa.types.is_nested(t))


def _same_in_spark(a: pa.DataType, b: pa.DataType) -> bool:
    try:
        return bool(spark_type(a) == spark_type(b))
    except (UnsupportedTypeError, TypeError, ValueError):
        return False


def _describe(t: pa.DataType) -> str:
    try:
        return f"{t} (Spark {spark_type(t).simpleString()})"
    except (UnsupportedTypeError, TypeError, ValueError):
        return str(t)


def append_mismatch(ours: pa.Schema, theirs: pa.Schema) -> str | None:
    """Why rows of ``ours`` (already ``align_to_dataset``-ed) cannot be appended to a dataset of schema ``theirs``, in
    one line naming the field; None when they can (column order may differ)."""
    extra = [n for n in ours.names if n not in theirs.names]
    if extra:
        folded = {n.lower(): n for n in theirs.names}
        hint = "; ".join(f"{n!r} is spelled {folded[n.lower()]!r} there" for n in extra if n.lower() in folded)
        return f"the DataFrame has column(s) {extra} that the dataset lacks (its columns: {theirs.names})" + (
            f"; {hint}" if hint else ""
        )
    missing = [n for n in theirs.names if n not in ours.names]
    if missing:
        return f"the DataFrame lacks the dataset's column(s) {missing} (add them, e.g. F.lit(None).cast(...))"
    for f in ours:
        t = theirs.field(f.name).type
        if not f.type.equals(t):
            return f"column {f.name!r} is {_describe(t)} in the dataset, {_describe(f.type)} in the DataFrame"
    return None


def _align_field(ours: pa.Field, theirs: pa.Field) -> pa.Field:
    return pa.field(ours.name, _align_type(ours.type, theirs.type), theirs.nullable, ours.metadata)


def align_to_dataset(ours: pa.Schema, theirs: pa.Schema) -> pa.Schema:
    """``ours`` (Spark's Arrow schema of appended rows) with the dataset's list item names and nullability.

    Spark's nullability says little about the data (``spark.range``'s id is non-null, a UDF's result nullable) and it
    names list items ``element``: either alone would make an append's schema differ from the dataset's.  Where the
    dataset's field is non-null and Spark's is not, ``check_not_null`` refuses a batch that really holds a null."""
    return pa.schema(
        [_align_field(f, theirs.field(f.name)) if f.name in theirs.names else f for f in ours], metadata=ours.metadata
    )


def _check_array(arr: pa.Array, field: pa.Field, path: str) -> None:
    if not field.nullable and arr.null_count:
        raise SchemaMismatchError(
            f"{arr.null_count} null values in column {path!r}, which the dataset declares non-null", column=path
        )
    t = field.type
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            child = arr.field(i)
            if arr.null_count:  # children under null structs do not count
                child = child.filter(arr.is_valid())
            _check_array(child, t.field(i), f"{path}.{t.field(i).name}")
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        _check_array(arr.flatten(), t.value_field, f"{path}[]")


def check_not_null(batch: pa.RecordBatch, schema: pa.Schema) -> None:
    """Raise SchemaMismatchError if ``batch`` holds a null where ``schema`` declares a field non-null."""
    for col, field in zip(batch.columns, schema):
        _check_array(col, field, field.name)


def resolve_column(schema: pa.Schema | StructType, name: str) -> str | None:
    """The file's spelling of column ``name`` (exact match first, then ignoring case as Spark does)."""
    names = schema.names if isinstance(schema, pa.Schema) else schema.fieldNames()
    if name in names:
        return name
    folded = [n for n in names if n.lower() == name.lower()]
    return folded[0] if len(folded) == 1 else None
