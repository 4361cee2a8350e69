"""Schema evolution with new values: ``add_columns`` and ``merge`` (table format, "Schema evolution"; the Merge
transaction), as pylance 14 performs them; ``drop_columns`` and ``alter_columns`` are in schema_alter.py and use the
helpers here.

New columns are written by column_files.py; all-null columns given as Arrow fields (or constant-null SQL) are metadata
only."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.changes import ChangeInputError, as_expression, evaluate
from lancelot.dataset.column_files import (
    SchemaEvolutionError,
    check_new_names,
    commit_merge,
    next_field_id,
    numbered_fields,
    scatter_live,
    write_column_files,
)
from lancelot.dataset.row_id_columns import ROW_ADDR, ROW_ID, row_columns
from lancelot.errors import LanceError, OSErrorMessage
from lancelot.format.pb import file_pb2, table_pb2

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.udf import BatchUDFCheckpoint


class UDFError(LanceError, TypeError):
    """A function given to ``add_columns`` that fails on the first row (pylance's TypeError)."""

    __str__ = BaseException.__str__


class UDFOutputError(OSErrorMessage, ChangeInputError, OSError):
    """A batch UDF's answer of another schema or row count than asked: pylance's OSError ("Invalid user input")."""


#: one fragment with its new data file, and the fields of the schema with the new columns
_Staged = tuple[table_pb2.DataFragment, list[file_pb2.Field]]


# -- add_columns ------------------------------------------------------------------------------------


def add_columns(
    ds: LanceDataset,
    transforms: Any,
    read_columns: list[str] | None = None,
    reader_schema: pa.Schema | None = None,
    batch_size: int | None = None,
) -> None:
    if isinstance(transforms, pa.Field):
        transforms = [transforms]
    if isinstance(transforms, list) and transforms and isinstance(transforms[0], pa.Field):
        transforms = pa.schema(transforms)
    if isinstance(transforms, pa.Schema):
        check_new_names(ds, transforms.names, {f.name: f.type for f in transforms})
        fields = list(ds.manifest.fields) + numbered_fields(transforms, next_field_id(ds.manifest))
        commit_merge(ds, list(ds.manifest.fragments), fields)
        return
    if isinstance(transforms, dict):
        _add_sql(ds, transforms)
    elif isinstance(transforms, pa.RecordBatchReader) or (
        hasattr(transforms, "__arrow_c_stream__") and not callable(transforms)
    ):
        _add_reader(ds, pa.RecordBatchReader.from_stream(transforms, schema=reader_schema))
    elif isinstance(transforms, Iterable) and not callable(transforms):
        if reader_schema is None:
            raise ChangeInputError("add_columns: an iterable of batches needs reader_schema")
        _add_reader(ds, pa.RecordBatchReader.from_batches(reader_schema, transforms))
    elif callable(transforms):
        _add_udf(ds, transforms, read_columns, batch_size or 8192)
    else:
        raise TypeError(f"add_columns: unsupported transforms {type(transforms).__name__}")


def plan_sql(ds: LanceDataset, exprs_sql: Mapping[str, Any]) -> tuple[pa.Schema, list[str], bool]:
    """New columns from SQL expressions: their schema, the columns the expressions read, and whether they are constant
    nulls (``CAST(NULL AS INT)``: metadata only, as pylance adds them)."""
    from lancelot.dataset.scan import filter_columns
    from lancelot.sql import parse_projection

    for k, v in exprs_sql.items():
        if not isinstance(k, str) or not isinstance(v, str | pc.Expression):
            raise TypeError("add_columns: column names and expressions must be strings")
    exprs = {}
    for k, v in exprs_sql.items():
        try:
            exprs[k] = as_expression(v, ds.schema)
        except ChangeInputError as e:
            raise SchemaEvolutionError(e.message) from None
    names = ds.schema.names
    cols = sorted({c for e in exprs.values() for c in filter_columns(e, names)}, key=names.index)
    empty = pa.schema([ds.schema.field(c) for c in cols]).empty_table() if cols else pa.table({"_": pa.nulls(0)})
    # nullable as pylance's schema says (``id + 1`` of a non-null ``id`` is not null: lancelot/sql/nullability.py)
    null_ok = {k: not isinstance(v, str) or parse_projection(v, ds.schema)[1] for k, v in exprs_sql.items()}
    schema = pa.schema([pa.field(f.name, f.type, null_ok[f.name]) for f in evaluate(empty, exprs).schema])
    check_new_names(ds, schema.names, {f.name: f.type for f in schema})
    null = not cols and evaluate(pa.table({"_": pa.nulls(1)}), exprs).to_pylist() == [dict.fromkeys(exprs)]
    return schema, cols, null


def sql_values(exprs_sql: Mapping[str, Any], cols: list[str], f: Fragment) -> pa.Table:
    """The values of SQL expressions (over ``cols``) on ``f``'s physical rows."""
    exprs = {k: as_expression(v, f.dataset.schema) for k, v in exprs_sql.items()}
    src = f.read_physical(cols, 0, f.physical_rows) if cols else pa.table({"_": pa.nulls(f.physical_rows)})
    return evaluate(src, exprs)


def sql_group_values(exprs_sql: Mapping[str, Any], cols: list[str], frags: list[Fragment]) -> list[pa.Table]:
    """``sql_values`` of each of ``frags``, by one read and one evaluation over the physical rows of all (what each
    pyarrow call costs is paid once for many small fragments)."""
    ds = frags[0].dataset
    exprs = {k: as_expression(v, ds.schema) for k, v in exprs_sql.items()}
    sizes = [f.physical_rows for f in frags]
    out = evaluate(physical_table(frags, cols) if cols else pa.table({"_": pa.nulls(sum(sizes))}), exprs)
    starts = np.cumsum([0, *sizes]).tolist()
    return [out.slice(a, n) for a, n in zip(starts, sizes)]


def physical_table(frags: list[Fragment], cols: list[str]) -> pa.Table:
    """The physical rows (deleted ones included) of ``cols`` of ``frags``, in order, as one table: the data files of
    small fragments read and decoded together (group_files.py) where they allow it."""
    from lancelot.dataset.group_files import group_files, group_table

    files = group_files(frags, cols, False) if len(frags) > 1 else None
    t = group_table(frags, files, cols, list(range(len(frags)))) if files is not None else None
    if t is None:
        t = pa.concat_tables([f.read_physical(cols, 0, f.physical_rows) for f in frags])
    return t


def _add_sql(ds: LanceDataset, exprs_sql: dict[str, str], only: Fragment | None = None) -> _Staged | None:
    schema, cols, null = plan_sql(ds, exprs_sql)
    if null:
        fields = list(ds.manifest.fields) + numbered_fields(schema, next_field_id(ds.manifest))
        if only is not None:
            return copy.deepcopy(only.data_fragment), fields
        commit_merge(ds, list(ds.manifest.fragments), fields)
        return None
    values = functools.partial(sql_values, dict(exprs_sql), cols)
    groups = functools.partial(sql_group_values, dict(exprs_sql), cols)
    return _finish_add(ds, schema, values, pure=True, only=only, groups=groups)


def _finish_add(
    ds: LanceDataset,
    schema: pa.Schema,
    values: Callable[[Fragment], pa.Table],
    pure: bool = False,
    checkpoint: BatchUDFCheckpoint | None = None,
    only: Fragment | None = None,
    written: Callable[[], None] = lambda: None,
    groups: Callable[[list[Fragment]], list[pa.Table]] | None = None,
) -> _Staged | None:
    """Write the new columns' files and commit the Merge (or, for ``only`` one fragment, return it with its new file and
    the new schema's fields: ``Fragment.merge_columns``); ``written`` is called once the files are."""
    fields = numbered_fields(schema, next_field_id(ds.manifest))
    frags = write_column_files(ds, schema, fields, values, pure, checkpoint, only, groups)
    written()
    if only is not None:
        return frags[0], list(ds.manifest.fields) + fields
    commit_merge(ds, frags, list(ds.manifest.fields) + fields)
    return None


def as_udf_batch(out: Any) -> pa.RecordBatch:
    if type(out).__module__.split(".")[0] == "pandas":
        return pa.RecordBatch.from_pandas(out, preserve_index=False)
    if isinstance(out, pa.Table):
        return out.combine_chunks().to_batches()[0] if out.num_rows else pa.RecordBatch.from_pylist([], out.schema)
    if isinstance(out, pa.RecordBatch):
        return out
    raise TypeError(f"add_columns: the function returned {type(out).__name__}, not a RecordBatch or DataFrame")


def live_batches(frags: Iterable[Fragment], cols: list[str], size: int) -> Iterator[pa.RecordBatch]:
    """The live rows of ``frags`` in order, in batches of at most ``size`` rows."""
    from lancelot.dataset.row_id_columns import ROW_ADDR, ROW_ID, row_columns

    special = [c for c in cols if c in (ROW_ID, ROW_ADDR)]  # (pylance's merge_columns reads ``_rowid`` too)
    plain = [c for c in cols if c not in special]
    for f in frags:
        deleted = f.deleted_positions().astype(np.int64)
        n = f.physical_rows
        for a in range(0, n, size):
            b = min(n, a + size)
            t = f.read_physical(plain, a, b) if plain else pa.table({"_": pa.nulls(b - a)}).drop_columns(["_"])
            if special:
                extra = row_columns(f, np.arange(a, b, dtype=np.int64), set(special), 0)
                t = pa.table({c: t.column(c) if c in plain else extra[c] for c in cols})
            d = deleted[(deleted >= a) & (deleted < b)] - a
            if len(d):
                mask = np.ones(b - a, dtype=bool)
                mask[d] = False
                t = t.filter(pa.array(mask))
            if t.num_rows:
                yield from t.combine_chunks().to_batches()


def _add_udf(
    ds: LanceDataset,
    udf: Callable[[pa.RecordBatch], Any],
    read_columns: list[str] | None,
    size: int,
    only: Fragment | None = None,
) -> _Staged | None:
    """New columns from a function over batches of live rows (a ``BatchUDF``'s checkpoint: batches and fragments
    finished by an earlier, failed run are not computed again; removed once committed)."""
    from lancelot.dataset.udf import BatchUDF

    cache = udf.cache if isinstance(udf, BatchUDF) else None
    cols = list(ds.schema.names) if read_columns is None else list(read_columns)
    schema: pa.Schema | None = getattr(udf, "output_schema", None)
    if schema is None:  # as pylance: the output schema from the function run on one row
        first = next(live_batches([only] if only is not None else ds.get_fragments(), cols, 1), None)
        try:
            if first is None:  # (pylance has no row to call it on either)
                raise ChangeInputError(f"dataset {ds.uri!r} has no rows to infer the function's output schema from")
            schema = as_udf_batch(udf(first)).schema
        except Exception as e:
            if isinstance(udf, BatchUDF) and first is not None:
                raise  # pylance lets a BatchUDF's own errors through, wraps a plain function's
            raise UDFError(
                f"transforms must be a BatchUDF, dict, map function, or ReaderLike value.  Received {type(udf)}, "
                f"which is callable, but gave an error when called with a batch of data: {e}"
            ) from e
    assert schema is not None
    check_new_names(ds, schema.names, {f.name: f.type for f in schema})
    out_schema = pa.schema([pa.field(f.name, f.type, f.nullable) for f in schema])

    values = functools.partial(batch_values, udf, cols, size, out_schema, False, cache=cache)
    staged = _finish_add(ds, out_schema, values, checkpoint=cache, only=only)
    if cache is not None:
        cache.cleanup()  # committed: nothing left to resume
    return staged


def batch_values(
    udf: Callable[[Any], Any],
    cols: list[str],
    size: int,
    out: pa.Schema,
    pandas: bool,
    f: Fragment,
    cache: BatchUDFCheckpoint | None = None,
) -> pa.Table:
    """The values of a function over ``f``'s live rows (``cols``, batches of at most ``size`` rows, as pandas DataFrames
    when ``pandas``), at their physical positions; batches a ``cache`` holds are taken from it, the others put in it."""
    from lancelot.dataset.udf import BatchUDFCheckpoint

    parts = []
    for i, b in enumerate(live_batches([f], cols, size)):
        info = BatchUDFCheckpoint.BatchInfo(f.fragment_id, i)
        got = cache.get_batch(info) if cache is not None else None
        r = got if got is not None else as_udf_batch(udf(b.to_pandas() if pandas else b))
        if r.schema.names != out.names or r.schema.types != out.types:
            raise UDFOutputError(
                f"{f.where}: Output schema of function does not match the expected schema: {r.schema} is not {out}"
            )
        if r.num_rows != b.num_rows:
            raise UDFOutputError(f"{f.where}: the function returned {r.num_rows} rows for {b.num_rows}")
        if cache is not None and got is None:
            cache.insert_batch(info, r)
        parts.append(pa.Table.from_batches([r]).select(out.names))
    return scatter_live(f, pa.concat_tables(parts) if parts else out.empty_table())


def _add_reader(ds: LanceDataset, reader: pa.RecordBatchReader, only: Fragment | None = None) -> _Staged | None:
    schema = reader.schema
    check_new_names(ds, schema.names, {f.name: f.type for f in schema})
    it: Iterator[pa.RecordBatch] = iter(reader)
    pending: list[pa.RecordBatch] = []

    def take(n: int) -> pa.Table:
        got, have = [], 0
        while have < n:
            b = pending.pop(0) if pending else next(it, None)
            if b is None:
                raise SchemaEvolutionError(f"dataset {ds.uri!r}: the stream produced fewer values than the dataset has")
            if have + b.num_rows > n:
                pending.insert(0, b.slice(n - have))
                b = b.slice(0, n - have)
            got.append(b)
            have += b.num_rows
        return pa.Table.from_batches(got, schema=schema)

    def values(f: Fragment) -> pa.Table:
        return scatter_live(f, take(f.count_rows()))

    def written() -> None:
        if any(b.num_rows for b in pending) or any(b.num_rows for b in it):
            raise SchemaEvolutionError(f"dataset {ds.uri!r}: the stream produced more values than expected for dataset")

    return _finish_add(ds, schema, values, only=only, written=written)


def merge_columns(
    frag: Fragment,
    value_func: Any,
    columns: list[str] | None = None,
    batch_size: int | None = None,
    reader_schema: pa.Schema | None = None,
) -> tuple[Any, Any]:
    """``Fragment.merge_columns``: the fragment with a new data file holding the new columns, and the new schema (a
    ``LanceSchema``), to commit with ``LanceOperation.Merge``; nothing committed."""
    from lancelot.dataset.fragment_metadata import FragmentMetadata
    from lancelot.dataset.transaction_api import LanceSchema
    from lancelot.dataset.udf import BatchUDF

    ds = frag.dataset
    if isinstance(value_func, BatchUDF) and value_func.cache is not None:
        raise ChangeInputError(
            "A checkpoint file cannot be used when applying a UDF with LanceFragment.merge_columns.  "
            "You must apply your own checkpointing for fragment-level operations."
        )
    staged: _Staged | None
    if isinstance(value_func, dict):
        staged = _add_sql(ds, value_func, only=frag)
    elif callable(value_func) and not isinstance(value_func, pa.RecordBatchReader):
        staged = _add_udf(ds, value_func, columns, batch_size or 8192, only=frag)
    else:
        from lancelot.dataset.writing import as_batches

        sch, batches = as_batches(value_func, reader_schema)
        staged = _add_reader(ds, pa.RecordBatchReader.from_batches(sch, batches), only=frag)
    assert staged is not None
    new, fields = staged
    return FragmentMetadata.from_pb(new), LanceSchema(fields, dict(ds.manifest.schema_metadata))


# -- merge (a left join) ----------------------------------------------------------------------------


def merge(ds: LanceDataset, data: Any, left_on: str, right_on: str | None = None, schema: Any = None) -> None:
    from lancelot.dataset.writing import as_batches

    right_on = right_on or left_on
    by_row = left_on in (ROW_ID, ROW_ADDR)  # pylance joins on the row ids or addresses too (not _rowoffset)
    if not by_row and left_on not in ds.schema.names:
        raise SchemaEvolutionError(f"dataset {ds.uri!r}: column {left_on} does not exist in the left side dataset")
    sch, batches = as_batches(pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data, schema)
    right = pa.Table.from_batches(list(batches), schema=sch)
    if right_on not in right.column_names:
        raise SchemaEvolutionError(f"column {right_on} does not exist in the right side dataset")
    new_names = [n for n in right.column_names if n != right_on]
    for n in new_names:
        if n in ds.schema.names:
            raise SchemaEvolutionError(f"column {n} exists in both sides of the dataset")
    if right.column(0).num_chunks == 0:  # no batch at all: pylance's join refuses it
        raise SchemaEvolutionError(f"dataset {ds.uri!r}: merge: no data on the right side (no record batch)")
    want, got = pa.uint64() if by_row else ds.schema.field(left_on).type, right.schema.field(right_on).type
    if want != got:
        raise SchemaEvolutionError(
            f"dataset {ds.uri!r}: key column type mismatch: {left_on} is {want}, {right_on} {got}"
        )
    out_schema = pa.schema([right.schema.field(n) for n in new_names])
    key = "__lancelot_key"
    right = right.rename_columns([key if n == right_on else n for n in right.column_names])
    # one row per key (the last, as pylance keeps it)
    last = pa.table({key: right.column(key), "__i": pa.array(np.arange(right.num_rows))})
    last = last.group_by(key).aggregate([("__i", "max")])
    right = right.take(last.column("__i_max"))

    # the join matches row numbers only: pyarrow's hash join carries no struct, list... columns
    numbers = pa.table({key: right.column(key), "__r": pa.array(np.arange(right.num_rows, dtype=np.int64))})
    right = right.select(new_names)

    def values(f: Fragment) -> pa.Table:
        n = f.physical_rows
        if by_row:  # (every physical row: a deleted one's key matches nothing that is read)
            left = pa.table({key: row_columns(f, np.arange(n, dtype=np.int64), {left_on}, 0)[left_on]})
        else:
            left = f.read_physical([left_on], 0, n).rename_columns([key])
        left = left.append_column("__pos", pa.array(np.arange(n, dtype=np.int64)))
        j = left.join(numbers, key, join_type="left outer", use_threads=False).sort_by("__pos")
        return right.take(j.column("__r"))  # (no match: a null row number, a row of nulls)

    _finish_add(ds, out_schema, values)
