"""Schema evolution with new values: ``add_columns`` and ``merge`` (table format, "Schema evolution"; the Merge
transaction), as pylance 14 performs them; ``drop_columns`` and ``alter_columns`` are in schema_alter.py and use the
helpers here.

New columns get fresh field ids (one past the largest id the schema or any data file has used) and live in one new data
file per fragment, beside the fragment's other files, with as many rows as the fragment has physically (deleted rows
hold nulls); all-null columns given as Arrow fields (or constant-null SQL) are metadata only."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.changes import ChangeInputError, as_expression, commit_change, evaluate, fragment_map, retrying
from lancelot.dataset.manifest import ManifestFile, writable_data_version
from lancelot.dataset.operation_changes import build_merge, build_project
from lancelot.dataset.transaction import new_transaction
from lancelot.errors import LanceError, RetryableCommitConflictError
from lancelot.format.pb import file_pb2, table_pb2
from lancelot.util.pools import shared_pool

if TYPE_CHECKING:
    from lancelot.dataset.changes import Committed
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.udf import BatchUDFCheckpoint


class SchemaEvolutionError(LanceError, OSError):
    """A schema change pylance refuses with an OSError (conflicting names, bad casts...)."""

    __str__ = BaseException.__str__


class UDFError(LanceError, TypeError):
    """A function given to ``add_columns`` that fails on the first row (pylance's TypeError)."""

    __str__ = BaseException.__str__


#: one fragment with its new data file, and the fields of the schema with the new columns
_Staged = tuple[table_pb2.DataFragment, list[file_pb2.Field]]


# -- field ids -----------------------------------------------------------------------------------


def _next_field_id(m: table_pb2.Manifest) -> int:
    """One past every field id the schema or a data file has used (ids are never reused)."""
    used = [int(f.id) for f in m.fields]
    used += [int(x) for fr in m.fragments for d in fr.files for x in d.fields]
    return max(used, default=-1) + 1


def _new_fields(schema: pa.Schema, first_id: int) -> list[file_pb2.Field]:
    """Manifest fields of ``schema`` with ids from ``first_id`` (pre-order, as pylance assigns)."""
    from lancelot.dataset.writing import schema_fields

    out = []
    for f in schema_fields(schema):
        g = file_pb2.Field()
        g.CopyFrom(f)
        g.id = int(f.id) + first_id
        if int(f.parent_id) >= 0:
            g.parent_id = int(f.parent_id) + first_id
        out.append(g)
    return out


def merge_transaction(
    ds: LanceDataset, frags: list[table_pb2.DataFragment], fields: list[file_pb2.Field]
) -> tuple[Any, Callable[..., Any]]:
    """The Merge of ``frags`` and ``fields`` (the schema metadata kept) on ``ds``'s version: its transaction and the
    manifest builder ``commit_change`` takes."""
    txn = new_transaction(ds.version)
    txn.merge.fragments.extend(frags)
    txn.merge.schema.extend(fields)
    for k, v in ds.manifest.schema_metadata.items():
        txn.merge.schema_metadata[k] = v
    read_ids = {int(f.id) for f in ds.manifest.fragments}
    return txn, build_merge(frags, fields, None, read_ids, ds.uri)


def _commit_merge(ds: LanceDataset, frags: list[table_pb2.DataFragment], fields: list[file_pb2.Field]) -> None:
    txn, build = merge_transaction(ds, frags, fields)
    ds._move_to(*commit_change(ds, txn, build))


def _commit_project(ds: LanceDataset, fields: list[file_pb2.Field]) -> None:
    """Commit the Project of ``fields``; over concurrent appends and updates (a retryable conflict) once more on the
    latest version when no commit since ``ds``'s version changed the schema or replaced the data (as pylance's
    alter/drop_columns, whose Project rebases over those but not over a Merge, Project, Overwrite or Restore)."""

    def attempt(cur: LanceDataset) -> Committed:
        if cur is not ds:
            kept = {int(v["version"]) for v in cur.versions()}  # (a cleaned-up version is not checked: pylance)
            since = [cur.read_transaction(v) for v in range(ds.version + 1, cur.version + 1) if v in kept]
            kinds = {type(t.operation).__name__ if t is not None else None for t in since}
            changed = list(cur.manifest.fields) != list(ds.manifest.fields)  # (also over cleaned-up versions)
            if changed or kinds & {None, "Merge", "Project", "Overwrite", "Restore", "UpdateMemWalState"}:
                raise RetryableCommitConflictError(
                    f"dataset {ds.uri!r}: commit conflict with a concurrent {sorted(map(str, kinds))} since version "
                    f"{ds.version}; re-read the dataset and retry"
                )
        txn = new_transaction(cur.version)
        txn.project.schema.extend(fields)
        return commit_change(cur, txn, build_project(fields, None, cur.uri))

    ds._move_to(*retrying(ds, 1, attempt))


# -- new data files per fragment --------------------------------------------------------------------


def _write_column_files(
    ds: LanceDataset,
    schema: pa.Schema,
    fields: list[file_pb2.Field],
    values: Callable[[Fragment], pa.Table],
    pure: bool = False,
    checkpoint: BatchUDFCheckpoint | None = None,
    only: Fragment | None = None,
) -> list[table_pb2.DataFragment]:
    """Every fragment of ``ds`` with one more data file: ``values(fragment)`` (its physical rows) written with
    ``fields``' ids.  Values are computed in order on this thread (a reader or a function sees the fragments in turn),
    or, when ``pure`` (SQL expressions), two fragments side by side; each file is written while the next one's values
    are computed (at most a few fragments' new columns in memory).  With a ``checkpoint``, fragments it holds are taken
    from it, and each fragment written is recorded in it (its file then survives a failure of the rest)."""
    from concurrent.futures import Future, wait

    written: list[str] = []

    def write(nf: table_pb2.DataFragment, t: pa.Table) -> table_pb2.DataFragment:
        files = column_files(ds, t, fields)
        written.extend(d.path for d in files)
        nf.files.extend(files)
        if checkpoint is not None:
            from lancelot.dataset.udf import fragment_json

            checkpoint.insert_fragment(int(nf.id), fragment_json(nf))
            for d in files:
                written.remove(d.path)  # kept for the resumed run
        return nf

    prev: Future[table_pb2.DataFragment] | None = None
    out: list[table_pb2.DataFragment] = []
    pool = shared_pool("column-files", 2)  # (one file of this call at a time: ``prev``)
    frags = [only] if only is not None else ds.get_fragments()
    computed = fragment_map(lambda f: values(f) if f.physical_rows else None, frags, 2) if pure else None
    try:
        for f in frags:
            nf = table_pb2.DataFragment()
            nf.CopyFrom(f.data_fragment)
            hit = _checkpointed(checkpoint, f, fields) if checkpoint is not None else None
            if hit is not None:
                out.append(hit)
                continue
            t = next(computed) if computed is not None else None
            if not f.physical_rows:
                out.append(nf)
                continue
            t = new_values(f, t if t is not None else values(f), schema)
            if prev is not None:
                prev.result()  # the previous file is written (or its error raised)
            out.append(nf)
            prev = pool.submit(write, nf, t)
        if prev is not None:
            prev.result()
    except BaseException:
        if prev is not None:
            wait([prev])
        for p in written:  # files no manifest will reference
            try:
                ds.store.delete(f"data/{p}")
            except Exception:  # noqa: BLE001
                pass
        raise
    finally:
        if computed is not None:
            computed.close()
    return out


def new_values(f: Fragment, t: pa.Table, schema: pa.Schema) -> pa.Table:
    """``t``, the new columns' values of ``f``'s physical rows, checked and cast to ``schema``."""
    if t.num_rows != f.physical_rows:
        raise ChangeInputError(f"{f.where}: {t.num_rows} new values for {f.physical_rows} rows")
    return pa.Table.from_arrays([_cast(t.column(c.name), c) for c in schema], schema=schema).combine_chunks()


def column_files(ds: LanceDataset, t: pa.Table, fields: list[file_pb2.Field]) -> list[table_pb2.DataFile]:
    """The data files holding ``t`` (one fragment's new values, ``new_values``) with ``fields``' ids: a fragment's
    files to add."""
    from lancelot.dataset.writing import write_fragments

    metas = write_fragments(
        t.to_batches(),
        ds.uri,
        schema=t.schema,
        data_storage_version=writable_data_version(ds.manifest, f"dataset {ds.uri!r} version {ds.version}"),
        max_rows_per_file=t.num_rows,
        _store=ds.store,
        _base=ManifestFile(table_pb2.Manifest(fields=fields), None, None),
    )
    return [mt.to_pb().files[0] for mt in metas]


def _checkpointed(
    checkpoint: BatchUDFCheckpoint, f: Fragment, fields: list[file_pb2.Field]
) -> table_pb2.DataFragment | None:
    """``f`` with the new data file a previous run recorded for it, if that run wrote the same fields over the same
    files (else None: computed again)."""
    from lancelot.dataset.udf import fragment_of_json

    text = checkpoint.get_fragment(f.fragment_id)
    if text is None:
        return None
    done = fragment_of_json(text)
    old = [d.path for d in f.data_fragment.files]
    ids = sorted(int(x.id) for x in fields)
    if [d.path for d in done.files[: len(old)]] != old or len(done.files) != len(old) + 1:
        return None
    if sorted(int(x) for x in done.files[-1].fields) != ids or int(done.physical_rows) != f.physical_rows:
        return None
    nf = table_pb2.DataFragment()
    nf.CopyFrom(f.data_fragment)  # the fragment as it is now (its deletions may have changed since)
    nf.files.append(done.files[-1])
    return nf


def _cast(arr: pa.ChunkedArray, f: pa.Field) -> pa.ChunkedArray:
    if arr.type == f.type:
        return arr
    try:
        out: pa.ChunkedArray = pc.cast(arr, f.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        bad = ""
        try:  # the first value that does not survive the cast, as pylance names it
            back = pc.cast(pc.cast(arr, f.type, safe=False), arr.type)
            hit = arr.filter(pc.not_equal(back, arr))
            if len(hit):
                bad = f"Can't cast value {hit[0].as_py()} to type {_rust_name(f.type)}: "
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        raise SchemaEvolutionError(f"{bad}cannot cast column {f.name!r} to {f.type}: {e}") from None
    return out


def _scatter_live(f: Fragment, t: pa.Table) -> pa.Table:
    """Values of the fragment's live rows placed at their physical positions (nulls elsewhere)."""
    deleted = f.deleted_positions()
    if not len(deleted):
        return t
    n = f.physical_rows
    live = f.live_positions()
    idx = np.full(n, -1, dtype=np.int64)
    idx[live] = np.arange(len(live))
    ind = pa.array(idx, mask=idx < 0)
    return t.take(ind)


def _check_new_names(ds: LanceDataset, names: Iterable[str], types: Mapping[str, pa.DataType]) -> None:
    for n in names:
        if n in ds.schema.names:
            raise SchemaEvolutionError(
                f"dataset {ds.uri!r}: type conflicts between {n}({ds.schema.field(n).type}) and "
                f"{n}({types.get(n, '?')}): Column {n} already exists in the dataset"
            )


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
        _check_new_names(ds, transforms.names, {f.name: f.type for f in transforms})
        fields = list(ds.manifest.fields) + _new_fields(transforms, _next_field_id(ds.manifest))
        _commit_merge(ds, list(ds.manifest.fragments), fields)
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
    _check_new_names(ds, schema.names, {f.name: f.type for f in schema})
    null = not cols and evaluate(pa.table({"_": pa.nulls(1)}), exprs).to_pylist() == [dict.fromkeys(exprs)]
    return schema, cols, null


def sql_values(exprs_sql: Mapping[str, Any], cols: list[str], f: Fragment) -> pa.Table:
    """The values of SQL expressions (over ``cols``) on ``f``'s physical rows."""
    exprs = {k: as_expression(v, f._ds.schema) for k, v in exprs_sql.items()}
    src = f._read_physical(cols, 0, f.physical_rows) if cols else pa.table({"_": pa.nulls(f.physical_rows)})
    return evaluate(src, exprs)


def _add_sql(ds: LanceDataset, exprs_sql: dict[str, str], only: Fragment | None = None) -> _Staged | None:
    schema, cols, null = plan_sql(ds, exprs_sql)
    if null:
        fields = list(ds.manifest.fields) + _new_fields(schema, _next_field_id(ds.manifest))
        if only is not None:
            return copy.deepcopy(only.data_fragment), fields
        _commit_merge(ds, list(ds.manifest.fragments), fields)
        return None
    return _finish_add(ds, schema, functools.partial(sql_values, dict(exprs_sql), cols), pure=True, only=only)


def _finish_add(
    ds: LanceDataset,
    schema: pa.Schema,
    values: Callable[[Fragment], pa.Table],
    pure: bool = False,
    checkpoint: BatchUDFCheckpoint | None = None,
    only: Fragment | None = None,
    written: Callable[[], None] = lambda: None,
) -> _Staged | None:
    """Write the new columns' files and commit the Merge (or, for ``only`` one fragment, return it with its new file and
    the new schema's fields: ``Fragment.merge_columns``); ``written`` is called once the files are."""
    fields = _new_fields(schema, _next_field_id(ds.manifest))
    frags = _write_column_files(ds, schema, fields, values, pure, checkpoint, only)
    written()
    if only is not None:
        return frags[0], list(ds.manifest.fields) + fields
    _commit_merge(ds, frags, list(ds.manifest.fields) + fields)
    return None


def _as_batch(out: Any) -> pa.RecordBatch:
    if type(out).__module__.split(".")[0] == "pandas":
        return pa.RecordBatch.from_pandas(out, preserve_index=False)
    if isinstance(out, pa.Table):
        return out.combine_chunks().to_batches()[0] if out.num_rows else pa.RecordBatch.from_pylist([], out.schema)
    if isinstance(out, pa.RecordBatch):
        return out
    raise TypeError(f"add_columns: the function returned {type(out).__name__}, not a RecordBatch or DataFrame")


def _live_batches(frags: Iterable[Fragment], cols: list[str], size: int) -> Iterator[pa.RecordBatch]:
    """The live rows of ``frags`` in order, in batches of at most ``size`` rows."""
    from lancelot.dataset.row_id_columns import ROW_ADDR, ROW_ID, row_columns

    special = [c for c in cols if c in (ROW_ID, ROW_ADDR)]  # (pylance's merge_columns reads ``_rowid`` too)
    plain = [c for c in cols if c not in special]
    for f in frags:
        deleted = f.deleted_positions().astype(np.int64)
        n = f.physical_rows
        for a in range(0, n, size):
            b = min(n, a + size)
            t = f._read_physical(plain, a, b) if plain else pa.table({"_": pa.nulls(b - a)}).drop_columns(["_"])
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
        first = next(_live_batches([only] if only is not None else ds.get_fragments(), cols, 1), None)
        try:
            if first is None:  # (pylance has no row to call it on either)
                raise ChangeInputError(f"dataset {ds.uri!r} has no rows to infer the function's output schema from")
            schema = _as_batch(udf(first)).schema
        except Exception as e:
            if isinstance(udf, BatchUDF) and first is not None:
                raise  # pylance lets a BatchUDF's own errors through, wraps a plain function's
            raise UDFError(
                f"transforms must be a BatchUDF, dict, map function, or ReaderLike value.  Received {type(udf)}, "
                f"which is callable, but gave an error when called with a batch of data: {e}"
            ) from e
    assert schema is not None
    _check_new_names(ds, schema.names, {f.name: f.type for f in schema})
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
    for i, b in enumerate(_live_batches([f], cols, size)):
        info = BatchUDFCheckpoint.BatchInfo(f.fragment_id, i)
        got = cache.get_batch(info) if cache is not None else None
        r = got if got is not None else _as_batch(udf(b.to_pandas() if pandas else b))
        if r.schema.names != out.names or r.schema.types != out.types:
            raise ChangeInputError(
                f"{f.where}: Output schema of function does not match the expected schema: {r.schema} is not {out}"
            )
        if r.num_rows != b.num_rows:
            raise ChangeInputError(f"{f.where}: the function returned {r.num_rows} rows for {b.num_rows}")
        if cache is not None and got is None:
            cache.insert_batch(info, r)
        parts.append(pa.Table.from_batches([r]).select(out.names))
    return _scatter_live(f, pa.concat_tables(parts) if parts else out.empty_table())


def _add_reader(ds: LanceDataset, reader: pa.RecordBatchReader, only: Fragment | None = None) -> _Staged | None:
    schema = reader.schema
    _check_new_names(ds, schema.names, {f.name: f.type for f in schema})
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
        return _scatter_live(f, take(f.count_rows()))

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

    ds = frag._ds
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
    if left_on not in ds.schema.names:
        raise SchemaEvolutionError(f"dataset {ds.uri!r}: column {left_on} does not exist in the left side dataset")
    sch, batches = as_batches(data, schema)
    right = pa.Table.from_batches(list(batches), schema=sch)
    if right_on not in right.column_names:
        raise SchemaEvolutionError(f"column {right_on} does not exist in the right side dataset")
    new_names = [n for n in right.column_names if n != right_on]
    for n in new_names:
        if n in ds.schema.names:
            raise SchemaEvolutionError(f"column {n} exists in both sides of the dataset")
    out_schema = pa.schema([right.schema.field(n) for n in new_names])
    key = "__lancelot_key"
    right = right.rename_columns([key if n == right_on else n for n in right.column_names])
    # one row per key (the last, as pylance keeps it)
    last = pa.table({key: right.column(key), "__i": pa.array(np.arange(right.num_rows))})
    last = last.group_by(key).aggregate([("__i", "max")])
    right = right.take(last.column("__i_max"))

    def values(f: Fragment) -> pa.Table:
        n = f.physical_rows
        left = f._read_physical([left_on], 0, n).rename_columns([key])
        left = left.append_column("__pos", pa.array(np.arange(n, dtype=np.int64)))
        j = left.join(right, key, join_type="left outer", use_threads=False).sort_by("__pos")
        return j.select(new_names)

    _finish_add(ds, out_schema, values)


_RUST_NAMES = {
    "string": "Utf8",
    "large_string": "LargeUtf8",
    "float": "Float32",
    "double": "Float64",
    "bool": "Boolean",
}


def _rust_name(t: pa.DataType) -> str:
    """A type as pylance's messages name it (Arrow's Rust names: Int32, Utf8...)."""
    s = str(t)
    return _RUST_NAMES.get(s, s[:1].upper() + s[1:])
