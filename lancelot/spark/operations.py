"""Distributed operations on Lance datasets from Spark: ``delete``, ``update``, ``add_columns``
(and ``merge_insert``), each one new dataset version per call.

The driver plans on the dataset's latest version and runs one Spark task per fragment (a
``spark.range`` of fragment indexes, ``mapInArrow``: the same on classic Spark and Spark
Connect).  Each task opens the dataset at the planned version, works on its fragment and
writes files only no manifest names yet (deletion files, new data files), and returns their
metadata.  Once every task has succeeded, the driver commits ONE transaction of the kind the
library's own operation writes (Delete, Update, Merge: table format, "Transaction types";
protos/transaction.proto), so pylance and lancelot check it against concurrent commits with
their usual rules.  A ``RetryableCommitConflictError`` re-plans and re-runs the job on the
latest version (at most ``conflict_retries`` times).  A failed task fails the job before any
commit: the dataset stays at its version, and the files the other tasks wrote are referenced
by no manifest (invisible; ``cleanup_old_versions`` removes them).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import pickle
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.changes import (
    DEFAULT_CONFLICT_RETRIES,
    ChangeInputError,
    DeleteInputError,
    Deletions,
    NewRows,
    as_expression,
    as_filter,
    cast_to,
    evaluate,
    matching_positions,
    retrying,
)
from lancelot.dataset.commit import commit_transaction
from lancelot.dataset.operation import build_delete
from lancelot.dataset.operation_changes import NewFragment, build_merge, build_update
from lancelot.dataset.rowids import encode_row_ids
from lancelot.dataset.transaction import new_transaction
from lancelot.format.pb import file_pb2, table_pb2
from lancelot.spark.writer import ATTEMPTS_DIR, ENDED, MARKER_SECONDS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lancelot.dataset.compact import CompactionMetrics
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment

__all__ = ["add_columns", "compact", "delete", "merge_insert", "update"]

_T = TypeVar("_T")
_R = TypeVar("_R")


# -- running one task per fragment ----------------------------------------------------------------


def _open(uri: str, version: int | None, storage_options: dict[str, Any] | None) -> LanceDataset:
    from lancelot.dataset.dataset import LanceDataset

    return LanceDataset(uri, version, storage_options=storage_options)


@dataclass(frozen=True)
class _JobRef:
    """What a task needs to record the files it wrote (pickled to the executors)."""

    uri: str
    storage_options: dict[str, Any] | None
    prefix: str  # <dataset>/_lancelot_spark/ops-<id>: one record per task attempt that wrote files


def _record(job: _JobRef, files: list[str]) -> None:
    """In a task, after writing ``files`` (paths relative to the dataset): record them, so the
    driver can delete them if they are not committed.  A task attempt that ends after its job did
    (killed, lost, speculative) sees the job's end marker and deletes its own files."""
    from lancelot.dataset.store import ObjectStore
    from lancelot.errors import LanceError

    if not files:
        return
    store = ObjectStore(job.uri, job.storage_options)
    record = f"{job.prefix}/{uuid.uuid4().hex}.json"
    store.put(record, json.dumps(files).encode())
    if store.exists(f"{job.prefix}{ENDED}"):
        for f in files:
            store.delete(f)
        store.delete(record)
        raise LanceError(f"operation {job.prefix} already ended: this task attempt's output was discarded")


class _Job:
    """One Spark job of an operation and the files its tasks write: ``run`` the tasks, ``commit``;
    on leaving, every recorded file not committed is deleted (a failed task, a failed job, a lost
    commit race: no file of the attempt stays behind, visible or not, but for a task killed in the
    middle of writing one)."""

    def __init__(self, cur: LanceDataset, storage_options: dict[str, Any] | None) -> None:
        self.ref = _JobRef(cur.uri, storage_options, f"{ATTEMPTS_DIR}/ops-{uuid.uuid4().hex}")
        self.store = cur._store
        self.files: set[str] = set()
        self.committing = False

    def run(
        self, spark: SparkSession, items: list[_T], task: Callable[[_T], _R], files_of: Callable[[_R], list[str]]
    ) -> list[_R]:
        """``[task(item) for item in items]``, one Spark task per item (``task`` and ``items`` are
        pickled to the executors); raises, having returned nothing, if any task fails."""
        if not items:
            return []
        n = len(items)
        body = functools.partial(_run_items, self.ref, items, task, files_of)
        out: list[_R] = [
            pickle.loads(r["payload"]) for r in spark.range(0, n, 1, n).mapInArrow(body, "payload binary").collect()
        ]
        for r in out:
            self.files.update(files_of(r))
        return out

    def commit(self, commit: Callable[[], int]) -> int:
        self.committing = True
        return commit()

    def __enter__(self) -> _Job:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        from lancelot.dataset.commit import CommitConflictError

        if exc is None or (self.committing and not isinstance(exc, CommitConflictError)):
            keep = self.files  # committed, or perhaps committed (an I/O error while committing)
        else:
            keep = set()
        self._end(keep)

    def _end(self, keep: set[str]) -> None:
        """Mark the job ended, then delete the recorded files not in ``keep`` and the records (end
        markers over a day old go too: the write path's cleanup keeps its markers as long)."""
        store, prefix = self.store, self.ref.prefix
        try:
            store.put(f"{prefix}{ENDED}", str(time.time()).encode())
            for name in store.list(ATTEMPTS_DIR):
                if name.endswith(ENDED) and f"{ATTEMPTS_DIR}/{name}" != f"{prefix}{ENDED}":
                    try:
                        if time.time() - float(store.read(f"{ATTEMPTS_DIR}/{name}")) > MARKER_SECONDS:
                            store.delete(f"{ATTEMPTS_DIR}/{name}")
                    except (FileNotFoundError, ValueError):
                        pass
            for rec in store.list(prefix):
                path = f"{prefix}/{rec}"
                try:
                    files = json.loads(store.read(path))
                except (FileNotFoundError, ValueError):
                    files = []
                for f in files:
                    if f not in keep:
                        store.delete(f)
                store.delete(path)
            if store.is_local:
                with contextlib.suppress(OSError):
                    os.rmdir(store.full_path(prefix))
        except OSError:
            pass  # best effort: files no manifest names are invisible to readers


def _run_items(
    job: _JobRef,
    items: list[Any],
    task: Callable[[Any], Any],
    files_of: Callable[[Any], list[str]],
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """The body of a Spark task: ``task(items[i])`` for each index ``i`` it was given, its files
    recorded, its result pickled."""
    for b in batches:
        for i in b.column(0).to_pylist():
            result = task(items[int(i)])
            _record(job, files_of(result))
            out = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
            yield pa.record_batch([pa.array([out], pa.binary())], names=["payload"])


def _on_latest(
    uri: str, storage_options: dict[str, Any] | None, retries: int, attempt: Callable[[LanceDataset], _T]
) -> _T:
    """``attempt(dataset at its latest version)``, re-planned on the latest version after a
    retryable commit conflict (``retries`` times at most)."""
    return retrying(_open(uri, None, storage_options), retries, attempt)


# -- delete -----------------------------------------------------------------------------------------


@dataclass
class _FragmentChange:
    """What a task did to one fragment: the fragment with its new deletion file (serialized), or
    its id if every row is gone; new fragments (ids unassigned) with the row ids they keep."""

    fragment_id: int
    updated: list[bytes] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    count: int = 0
    new: list[tuple[bytes, np.ndarray, np.ndarray]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # written, relative to the dataset


def _change_files(change: _FragmentChange) -> list[str]:
    return change.files


def _data_files(frags: list[table_pb2.DataFragment]) -> list[str]:
    from lancelot.dataset.fragment import DATA_DIR

    return [f"{DATA_DIR}/{d.path}" for f in frags for d in f.files]


def _deletions_of(ds: LanceDataset, frag: Fragment, positions: np.ndarray) -> _FragmentChange:
    dels = Deletions(ds)
    dels.mark(frag, positions)
    from lancelot.dataset.deletion import deletion_path

    return _FragmentChange(
        frag.fragment_id,
        [pb.SerializeToString() for pb in dels.updated],
        list(dels.removed),
        dels.count,
        files=[deletion_path(int(pb.id), pb.deletion_file) for pb in dels.updated],
    )


def _delete_task(
    uri: str, version: int, storage_options: dict[str, Any] | None, where: str, fragment_id: int
) -> _FragmentChange:
    ds = _open(uri, version, storage_options)
    frag = _fragment(ds, fragment_id)
    expr = as_filter(where, ds.schema, DeleteInputError)
    return _deletions_of(ds, frag, matching_positions(frag, expr))


def _fragment(ds: LanceDataset, fragment_id: int) -> Fragment:
    frag = ds.get_fragment(fragment_id)
    if frag is None:
        raise ChangeInputError(f"dataset {ds.uri!r} version {ds.version}: fragment {fragment_id} does not exist")
    return frag


def _merged(changes: list[_FragmentChange]) -> tuple[list[table_pb2.DataFragment], list[int], int]:
    updated = [table_pb2.DataFragment.FromString(b) for c in changes for b in c.updated]
    removed = [i for c in changes for i in c.removed]
    return updated, removed, sum(c.count for c in changes)


def delete(
    spark: SparkSession,
    uri: str,
    where: str,
    storage_options: dict[str, Any] | None = None,
    *,
    conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
) -> dict[str, int]:
    """Delete the rows matching the SQL predicate ``where``: each fragment's task writes its
    deletion file, the driver commits one Delete (also when nothing matches, as pylance).
    Returns pylance's ``{"num_deleted_rows": n}``."""
    if not isinstance(where, str) or not where.strip():
        raise DeleteInputError("delete needs a predicate (an SQL string)")

    def attempt(cur: LanceDataset) -> tuple[int, int]:
        as_filter(where, cur.schema, DeleteInputError)  # a bad predicate fails on the driver, before any task
        task = functools.partial(_delete_task, cur.uri, cur.version, storage_options, where)
        with _Job(cur, storage_options) as job:
            changes = job.run(spark, [f.fragment_id for f in cur.get_fragments()], task, _change_files)
            updated, removed, count = _merged(changes)
            txn = new_transaction(cur.version)
            txn.delete.updated_fragments.extend(updated)
            txn.delete.deleted_fragment_ids.extend(removed)
            txn.delete.predicate = where
            build = build_delete(updated, removed, cur.uri)
            v = job.commit(lambda: commit_transaction(cur._store, cur.uri, txn, build, read_version=cur.version))
        return v, count

    _, count = _on_latest(uri, storage_options, conflict_retries, attempt)
    return {"num_deleted_rows": count}


# -- update -----------------------------------------------------------------------------------------


def _update_task(
    uri: str,
    version: int,
    storage_options: dict[str, Any] | None,
    set_sql: dict[str, str],
    where: str | None,
    fragment_id: int,
) -> _FragmentChange:
    ds = _open(uri, version, storage_options)
    frag = _fragment(ds, fragment_id)
    schema = ds.schema
    exprs = {name: as_expression(sql, schema) for name, sql in set_sql.items()}
    pos = matching_positions(frag, as_filter(where, schema) if where is not None else None)
    if not len(pos):
        return _FragmentChange(fragment_id)
    old = frag._take_physical(list(schema.names), pos)
    values = evaluate(old, exprs)
    t = old
    for name in exprs:
        f = schema.field(name)
        t = t.set_column(t.column_names.index(name), f, cast_to(values.column(name), f, name))
    rows = NewRows(ds)
    rows.keep_ids(frag, pos)
    new = rows.write(iter([t]))
    change = _deletions_of(ds, frag, pos)
    change.new = [(nf.frag.SerializeToString(), nf.kept_ids, nf.kept_created) for nf in new]
    change.files += _data_files([nf.frag for nf in new])
    change.count = len(pos)
    return change


def _commit_update(cur: LanceDataset, changes: list[_FragmentChange], fields_modified: list[int]) -> int:
    """One Update transaction, as the library's ``update`` and ``merge_insert`` write it."""
    updated, removed, _ = _merged(changes)
    new = [
        NewFragment(table_pb2.DataFragment.FromString(b), ids, created) for c in changes for b, ids, created in c.new
    ]
    stable = NewRows(cur).stable
    txn = new_transaction(cur.version)
    u = txn.update
    u.removed_fragment_ids.extend(removed)
    u.updated_fragments.extend(updated)
    for nf in new:
        t = u.new_fragments.add()
        t.CopyFrom(nf.frag)
        if stable and len(nf.kept_ids):
            t.inline_row_ids = encode_row_ids(nf.kept_ids)
    u.fields_for_preserving_frag_bitmap.extend(fields_modified)
    build = build_update(updated, removed, new, cur.uri)
    return commit_transaction(cur._store, cur.uri, txn, build, read_version=cur.version)


def update(
    spark: SparkSession,
    uri: str,
    set: Mapping[str, str],  # noqa: A002 - the operation's own word (SQL's UPDATE ... SET)
    where: str | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
) -> dict[str, int]:
    """Set columns (``{column: SQL expression over the row}``) where the SQL predicate ``where``
    holds (every row for None).  Each fragment's task deletes its matched rows and writes their
    new values as new fragments; the driver commits one Update.  Returns pylance's
    ``{"num_rows_updated": n}``."""
    if not set:
        raise ChangeInputError("update: no updates provided")
    set_sql = dict(set)

    def attempt(cur: LanceDataset) -> tuple[int, int]:
        schema = cur.schema
        for name, sql in set_sql.items():  # bad input fails on the driver, before any task
            if name not in schema.names:
                raise ChangeInputError(
                    f"update: column {name!r} does not exist in dataset {cur.uri!r} (columns: {schema.names})"
                )
            as_expression(sql, schema)
        if where is not None:
            as_filter(where, schema)
        task = functools.partial(_update_task, cur.uri, cur.version, storage_options, set_sql, where)
        top_ids = {f.name: int(f.id) for f in cur.manifest.fields if f.parent_id == -1}
        with _Job(cur, storage_options) as job:
            changes = job.run(spark, [f.fragment_id for f in cur.get_fragments()], task, _change_files)
            v = job.commit(lambda: _commit_update(cur, changes, [top_ids[n] for n in set_sql]))
        return v, sum(c.count for c in changes)

    _, count = _on_latest(uri, storage_options, conflict_retries, attempt)
    return {"num_rows_updated": count}


# -- add_columns ------------------------------------------------------------------------------------


def _add_columns_task(
    uri: str,
    version: int,
    storage_options: dict[str, Any] | None,
    schema: pa.Schema,
    fields: list[bytes],
    values: Callable[[Fragment], pa.Table],
    fragment_id: int,
) -> tuple[bytes, list[str]]:
    """The fragment with one more data file holding the new columns' values (its physical rows),
    serialized, and the files written."""
    from lancelot.dataset.manifest import ManifestFile, writable_data_version
    from lancelot.dataset.schema_evolution import _cast
    from lancelot.dataset.write import write_fragments

    ds = _open(uri, version, storage_options)
    frag = _fragment(ds, fragment_id)
    nf = table_pb2.DataFragment()
    nf.CopyFrom(frag._pb)
    n = frag.physical_rows
    if not n:
        return _serialized(nf), []
    t = values(frag)
    if t.num_rows != n:
        raise ChangeInputError(f"{frag.where}: {t.num_rows} new values for {n} rows")
    t = pa.Table.from_arrays([_cast(t.column(c.name), c) for c in schema], schema=schema).combine_chunks()
    fake = ManifestFile(table_pb2.Manifest(fields=[file_pb2.Field.FromString(b) for b in fields]), None, None)
    metas = write_fragments(
        t.to_batches(),
        ds.uri,
        schema=schema,
        data_storage_version=writable_data_version(ds.manifest, f"dataset {ds.uri!r} version {ds.version}"),
        max_rows_per_file=n,
        _store=ds._store,
        _base=fake,
    )
    new = [mt.to_pb() for mt in metas]
    for pb in new:
        nf.files.append(pb.files[0])
    return _serialized(nf), _data_files(new)


def _second(pair: tuple[Any, list[str]]) -> list[str]:
    return pair[1]


def _serialized(msg: table_pb2.DataFragment) -> bytes:
    out: bytes = msg.SerializeToString()
    return out


def _sql_values(exprs_sql: dict[str, str], cols: list[str], frag: Fragment) -> pa.Table:
    exprs = {k: as_expression(v, frag._ds.schema) for k, v in exprs_sql.items()}
    src = frag._read_physical(cols, 0, frag.physical_rows) if cols else pa.table({"_": pa.nulls(frag.physical_rows)})
    return evaluate(src, exprs)


def _udf_values(
    udf: Callable[[Any], Any], cols: list[str], size: int, out: pa.Schema, pandas: bool, frag: Fragment
) -> pa.Table:
    from lancelot.dataset.schema_evolution import _as_batch, _live_batches, _scatter_live

    parts = []
    for b in _live_batches([frag], cols, size):
        r = _as_batch(udf(b.to_pandas() if pandas else b))
        if r.schema.names != out.names or r.schema.types != out.types:
            raise ChangeInputError(
                f"{frag.where}: Output schema of function does not match the expected schema: {r.schema} is not {out}"
            )
        if r.num_rows != b.num_rows:
            raise ChangeInputError(f"{frag.where}: the function returned {r.num_rows} rows for {b.num_rows}")
        parts.append(pa.Table.from_batches([r]))
    t = pa.concat_tables(parts) if parts else out.empty_table()
    return _scatter_live(frag, t)


def _plan_sql(cur: LanceDataset, exprs_sql: dict[str, str]) -> tuple[pa.Schema, list[str], bool]:
    """The new columns' schema, the columns the expressions read, and whether they are constant
    nulls (metadata only, as the library and pylance add them)."""
    from lancelot.dataset.scan import filter_columns
    from lancelot.dataset.schema_evolution import SchemaEvolutionError

    exprs = {}
    for k, v in exprs_sql.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError("add_columns: column names and SQL expressions must be strings")
        try:
            exprs[k] = as_expression(v, cur.schema)
        except ChangeInputError as e:
            raise SchemaEvolutionError(e.message) from None
    names = cur.schema.names
    cols = sorted({c for e in exprs.values() for c in filter_columns(e, names)}, key=names.index)
    empty = pa.schema([cur.schema.field(c) for c in cols]).empty_table() if cols else pa.table({"_": pa.nulls(0)})
    sample = evaluate(empty, exprs)
    schema = pa.schema([pa.field(f.name, f.type) for f in sample.schema])
    null = not cols and evaluate(pa.table({"_": pa.nulls(1)}), exprs).to_pylist() == [dict.fromkeys(exprs)]
    return schema, cols, null


def _plan_udf(
    cur: LanceDataset, udf: Callable[[Any], Any], cols: list[str], pandas: bool, output_schema: pa.Schema | None
) -> pa.Schema:
    """The UDF's output schema: given, the function's ``output_schema``, or (as pylance) from the
    function run on the driver on one row."""
    from lancelot.dataset.schema_evolution import _as_batch, _live_batches

    schema = output_schema or getattr(udf, "output_schema", None)
    if schema is None:
        first = next(_live_batches(cur.get_fragments(), cols, 1), None)
        if first is None:
            first = pa.RecordBatch.from_pylist([], pa.schema([cur.schema.field(c) for c in cols]))
        schema = _as_batch(udf(first.to_pandas() if pandas else first)).schema
    return pa.schema([pa.field(f.name, f.type, f.nullable) for f in schema])


def add_columns(
    spark: SparkSession,
    uri: str,
    transforms: Mapping[str, str] | Callable[[Any], Any],
    read_columns: list[str] | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    batch_size: int = 8192,
    batch_format: str = "arrow",
    output_schema: pa.Schema | None = None,
    conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
) -> None:
    """New columns computed on the executors, one new data file per fragment; the driver commits
    one Merge, as the library's ``add_columns``.

    ``transforms`` is ``{name: SQL expression over the row}``, or a function over batches of
    the live rows (``read_columns`` of them, all by default; ``batch_size`` rows at most) taking a
    ``pyarrow.RecordBatch`` (``batch_format="pandas"``: a pandas DataFrame) and returning the new
    columns, as many rows, as a RecordBatch, Table or pandas DataFrame.  Its schema is
    ``output_schema``, the function's ``output_schema`` attribute (``lance.batch_udf``), or found
    by running it on one row on the driver.  The function is pickled to the executors."""
    from lancelot.dataset.schema_evolution import _check_new_names, _new_fields, _next_field_id

    if batch_format not in ("arrow", "pandas"):
        raise ChangeInputError(f"add_columns: batch_format must be 'arrow' or 'pandas', not {batch_format!r}")

    def attempt(cur: LanceDataset) -> int:
        values: Callable[[Fragment], pa.Table]
        if isinstance(transforms, Mapping):
            exprs_sql = dict(transforms)
            schema, cols, null = _plan_sql(cur, exprs_sql)
            values = functools.partial(_sql_values, exprs_sql, cols)
        elif callable(transforms):
            cols = list(cur.schema.names) if read_columns is None else list(read_columns)
            null = False
            schema = _plan_udf(cur, transforms, cols, batch_format == "pandas", output_schema)
            values = functools.partial(_udf_values, transforms, cols, int(batch_size), schema, batch_format == "pandas")
        else:
            raise TypeError(
                f"add_columns: transforms must be a dict of SQL expressions or a function, not {transforms!r}"
            )
        _check_new_names(cur, schema.names, {f.name: f.type for f in schema})
        fields = _new_fields(schema, _next_field_id(cur.manifest))
        task = functools.partial(
            _add_columns_task,
            cur.uri,
            cur.version,
            storage_options,
            schema,
            [f.SerializeToString() for f in fields],
            values,
        )
        with _Job(cur, storage_options) as job:
            if null:
                frags = list(cur.manifest.fragments)
            else:
                results = job.run(spark, [f.fragment_id for f in cur.get_fragments()], task, _second)
                frags = [table_pb2.DataFragment.FromString(b) for b, _ in results]
            all_fields = list(cur.manifest.fields) + fields
            txn = new_transaction(cur.version)
            txn.merge.fragments.extend(frags)
            txn.merge.schema.extend(all_fields)
            for k, v in cur.manifest.schema_metadata.items():
                txn.merge.schema_metadata[k] = v
            read_ids = {int(f.id) for f in cur.manifest.fragments}
            build = build_merge(frags, all_fields, None, read_ids, cur.uri)
            return job.commit(lambda: commit_transaction(cur._store, cur.uri, txn, build, read_version=cur.version))

    _on_latest(uri, storage_options, conflict_retries, attempt)


# -- merge_insert -----------------------------------------------------------------------------------

_FRAG = "_lancelot_fragment"
_POS = "_lancelot_position"
_SRC = "_lancelot_source"
_PART = "_lancelot_partition"


def _target_keys(
    uri: str,
    version: int,
    storage_options: dict[str, Any] | None,
    on: list[str],
    fragment_ids: list[int],
    out: pa.Schema,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """A task of the target's key scan: the key columns of its fragments' live rows, with each
    row's fragment id and physical position (its row address)."""
    from lancelot.spark.types import to_spark_batch

    ds = _open(uri, version, storage_options)
    for b in batches:
        for i in b.column(0).to_pylist():
            frag = _fragment(ds, fragment_ids[int(i)])
            live = matching_positions(frag, None)
            if not len(live):
                continue
            t = frag._read_physical(on, 0, frag.physical_rows)
            if len(live) != frag.physical_rows:
                t = t.take(pa.array(live))
            t = t.append_column(_FRAG, pa.array(np.full(len(live), frag.fragment_id, np.int64)))
            t = t.append_column(_POS, pa.array(live.astype(np.int64)))
            yield to_spark_batch(t.select(out.names), out)


@dataclass(frozen=True)
class _MergePlan:
    """What a merge task needs to know (pickled to the executors)."""

    uri: str
    version: int
    storage_options: dict[str, Any] | None
    on: list[str]
    source_columns: list[str]
    update: bool
    insert: bool
    by_source: bool
    by_source_filter: str | None


def _merge_task(plan: _MergePlan, job: _JobRef, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A task of the joined rows of some fragments (all of each fragment's rows are in one task)
    and some rows to insert: deletion files for the matched (and unmatched-by-source) target rows,
    new data files for the updated and inserted rows.  Yields one pickled ``_FragmentChange``
    summary per task (its ``fragment_id`` is -1) and the counts of updated / deleted / inserted."""
    parts = [b for b in batches if b.num_rows]
    summary = _FragmentChange(-1)
    counts = {"num_inserted_rows": 0, "num_updated_rows": 0, "num_deleted_rows": 0}
    if parts:
        ds = _open(plan.uri, plan.version, plan.storage_options)
        t = pa.Table.from_batches(parts)
        has_frag = t.column(_FRAG).is_valid().to_numpy(zero_copy_only=False)
        frag_col = pc.fill_null(t.column(_FRAG), -1).to_numpy()
        positions = pc.fill_null(t.column(_POS), -1).to_numpy()
        has_src = t.column(_SRC).is_valid().to_numpy(zero_copy_only=False)
        rows = NewRows(ds)
        new_parts: list[pa.Table] = []
        updated: list[table_pb2.DataFragment] = []
        removed: list[int] = []
        by_source = as_filter(plan.by_source_filter, ds.schema) if plan.by_source_filter else None
        for fid in np.unique(frag_col[has_frag].astype(np.int64)):
            frag = _fragment(ds, int(fid))
            sel = has_frag & (frag_col == fid)
            pos = positions[sel].astype(np.int64)
            matched = has_src[sel]
            mpos = pos[matched]
            if plan.update and len(mpos) != len(np.unique(mpos)):
                raise ChangeInputError(
                    f"dataset {plan.uri!r}: ambiguous merge inserts are prohibited: several source rows match "
                    f"the same target row of {frag.where}"
                )
            gone = np.empty(0, np.int64)
            if plan.update and len(mpos):
                order = np.argsort(mpos, kind="stable")
                idx = np.flatnonzero(sel)[matched][order]
                mpos = mpos[order]
                new = t.take(pa.array(idx)).select(plan.source_columns)
                rest = [c for c in ds.schema.names if c not in plan.source_columns]
                if rest:
                    old = frag._take_physical(rest, mpos)
                    for c in rest:
                        new = new.append_column(old.schema.field(c), old.column(c))
                rows.keep_ids(frag, mpos)
                new_parts.append(new)
                counts["num_updated_rows"] += len(mpos)
                gone = mpos
            if plan.by_source:
                unmatched = pos[~matched]
                if by_source is not None and len(unmatched):
                    unmatched = np.intersect1d(unmatched, matching_positions(frag, by_source))
                counts["num_deleted_rows"] += len(unmatched)
                gone = np.union1d(gone, unmatched)
            change = _deletions_of(ds, frag, gone)
            updated += [table_pb2.DataFragment.FromString(b) for b in change.updated]
            removed += change.removed
            summary.files += change.files
        if plan.insert:
            ins = np.flatnonzero(~has_frag & has_src)
            if len(ins):
                new_parts.append(t.take(pa.array(ins)).select(plan.source_columns))
                counts["num_inserted_rows"] += len(ins)
        written = rows.write(iter(new_parts))
        summary.updated = [pb.SerializeToString() for pb in updated]
        summary.removed = removed
        summary.new = [(nf.frag.SerializeToString(), nf.kept_ids, nf.kept_created) for nf in written]
        summary.files += _data_files([nf.frag for nf in written])
        _record(job, summary.files)
    payload = pickle.dumps((summary, counts), protocol=pickle.HIGHEST_PROTOCOL)
    yield pa.record_batch([pa.array([payload], pa.binary())], names=["payload"])


def merge_insert(
    df: Any,
    uri: str,
    on: str | list[str],
    when_matched_update_all: bool = True,
    when_not_matched_insert_all: bool = True,
    when_not_matched_by_source_delete: bool | str = False,
    storage_options: dict[str, Any] | None = None,
    *,
    num_partitions: int | None = None,
    conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
) -> dict[str, int]:
    """Upsert the rows of the Spark DataFrame ``df`` into the dataset at ``uri`` by the key
    column(s) ``on``, the join done by Spark: the target's keys and row addresses (one task per
    fragment) joined with ``df``; the joined rows are partitioned by target fragment, and each
    task writes its fragments' deletion files and the new rows' data files; the driver commits
    one Update, as the library's ``merge_insert``.

    Matched rows take the source's values (columns the source lacks keep the target's), rows
    of ``df`` no target row matches are inserted, and with ``when_not_matched_by_source_delete``
    (True, or an SQL filter on the target) target rows no source row matches are deleted.  A key
    that is null matches nothing; two source rows matching one target row are an error.
    Returns the library's counts of inserted, updated and deleted rows."""
    from pyspark.sql import functions as F  # noqa: N812 - pyspark's usual name

    from lancelot.spark.types import spark_arrow_schema, spark_schema

    keys = [on] if isinstance(on, str) else list(on)
    if not keys:
        raise ChangeInputError("merge_insert needs at least one key column")
    if not (when_matched_update_all or when_not_matched_insert_all or when_not_matched_by_source_delete):
        raise ChangeInputError("the merge insert job is not configured to change the data in any way")
    spark = df.sparkSession
    source_columns = list(df.columns)
    by_source = bool(when_not_matched_by_source_delete)
    by_source_filter = when_not_matched_by_source_delete if isinstance(when_not_matched_by_source_delete, str) else None

    def attempt(cur: LanceDataset) -> tuple[int, dict[str, int]]:
        names = cur.schema.names
        unknown = [c for c in source_columns if c not in names]
        if unknown:
            raise ChangeInputError(
                f"dataset {cur.uri!r}: merge_insert source has columns the dataset does not: {unknown}"
            )
        missing = [k for k in keys if k not in names or k not in source_columns]
        if missing:
            raise ChangeInputError(f"merge_insert key column(s) {missing} must be in the dataset and the source")
        if by_source_filter is not None:
            as_filter(by_source_filter, cur.schema)
        frag_ids = [f.fragment_id for f in cur.get_fragments()]
        key_schema = spark_schema(pa.schema([cur.schema.field(k) for k in keys]))
        for extra in (_FRAG, _POS):
            key_schema = key_schema.add(extra, "long", False)
        scan = functools.partial(
            _target_keys, cur.uri, cur.version, storage_options, keys, frag_ids, spark_arrow_schema(key_schema)
        )
        n = max(1, len(frag_ids))
        target = spark.range(0, len(frag_ids), 1, n).mapInArrow(scan, key_schema)
        how = "full_outer" if by_source and when_not_matched_insert_all else "left_outer" if by_source else None
        how = how or ("right_outer" if when_not_matched_insert_all else "inner")
        joined = target.join(df.withColumn(_SRC, F.lit(True)), on=keys, how=how)
        parts = int(num_partitions or max(2, n))
        part = F.when(F.col(_FRAG).isNull(), F.lit(-1) - F.pmod(F.hash(*keys), F.lit(parts))).otherwise(F.col(_FRAG))
        plan = _MergePlan(
            cur.uri,
            cur.version,
            storage_options,
            keys,
            source_columns,
            bool(when_matched_update_all),
            bool(when_not_matched_insert_all),
            by_source,
            by_source_filter,
        )
        all_fields = [int(x.id) for x in cur.manifest.fields if x.parent_id == -1]
        with _Job(cur, storage_options) as job:
            out = (
                joined.withColumn(_PART, part)
                .repartition(parts, _PART)
                .mapInArrow(functools.partial(_merge_task, plan, job.ref), "payload binary")
            )
            results = [pickle.loads(r["payload"]) for r in out.collect()]
            changes = [c for c, _ in results]
            job.files.update(f for c in changes for f in c.files)
            counts = {
                k: sum(c[k] for _, c in results) for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")
            }
            return job.commit(lambda: _commit_update(cur, changes, all_fields)), counts

    _, counts = _on_latest(uri, storage_options, conflict_retries, attempt)
    return counts


# -- compact ----------------------------------------------------------------------------------------


def _compact_task(
    uri: str,
    version: int,
    storage_options: dict[str, Any] | None,
    target_rows_per_fragment: int,
    fragment_ids: list[int],
) -> tuple[list[bytes], list[bytes]]:
    """A group of adjacent fragments rewritten into new ones (ids unassigned) holding their live
    rows in order, stable row ids carried over: (old fragments, new fragments), serialized."""
    from lancelot.dataset import blob_write
    from lancelot.dataset.compact import _carry_row_ids, _counted
    from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS, writable_data_version
    from lancelot.dataset.write import write_fragments
    from lancelot.errors import LanceError

    ds = _open(uri, version, storage_options)
    group = [_fragment(ds, i) for i in fragment_ids]
    where = f"dataset {ds.uri!r} version {ds.version}"

    def rows() -> Iterator[pa.RecordBatch]:
        for f in group:
            yield from blob_write.with_bytes(f, f.to_batches())

    live = sum(f.count_rows() for f in group)
    per_file = max(1, -(-live // max(1, live // target_rows_per_fragment)))
    try:
        new = write_fragments(
            rows(),
            ds.uri,
            schema=ds.schema,
            data_storage_version=writable_data_version(ds.manifest, where),
            max_rows_per_file=per_file,
            _store=ds._store,
            _base=ds._mf,
        )
    except LanceError as e:
        raise type(e)(f"compaction of {where}: {e.message}", path=e.path) from None
    new_pb = [n.to_pb() for n in new]
    if ds.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS:
        _carry_row_ids(group, new_pb)
    return [_counted(f).SerializeToString() for f in group], [f.SerializeToString() for f in new_pb]


def _compact_files(result: tuple[list[bytes], list[bytes]]) -> list[str]:
    return _data_files([table_pb2.DataFragment.FromString(b) for b in result[1]])


def compact(
    spark: SparkSession,
    uri: str,
    storage_options: dict[str, Any] | None = None,
    *,
    target_rows_per_fragment: int = 1024 * 1024,
    materialize_deletions: bool = True,
    materialize_deletions_threshold: float = 0.1,
) -> CompactionMetrics:
    """Compact the dataset as the library's ``compact_files`` (and pylance's
    ``optimize.compact_files``) plans it, each group of fragments rewritten by its own Spark task;
    the driver commits what the library commits (ReserveFragments for the new fragments' ids,
    then one Rewrite of every group).  Returns the library's ``CompactionMetrics``."""
    from lancelot.dataset.commit import RetryableCommitConflictError
    from lancelot.dataset.compact import (
        COMPACTION_ATTEMPTS,
        _check_files,
        _has_indices,
        build_reserve,
        build_rewrite,
        plan_compaction,
    )
    from lancelot.errors import LanceError

    if target_rows_per_fragment <= 0:
        raise ValueError("target_rows_per_fragment must be positive")

    from lancelot.dataset.compact import CompactionMetrics as Metrics

    def once(ds: LanceDataset) -> CompactionMetrics:
        where = f"dataset {ds.uri!r} version {ds.version}"
        if _has_indices(ds._mf):
            raise LanceError(f"{where}: compaction of datasets with indices is not supported by lancelot yet")
        groups = plan_compaction(ds, target_rows_per_fragment, materialize_deletions, materialize_deletions_threshold)
        metrics = Metrics()
        if not groups:
            return metrics
        _check_files(ds, groups, where)
        task = functools.partial(_compact_task, ds.uri, ds.version, storage_options, target_rows_per_fragment)
        with _Job(ds, storage_options) as job:
            results = job.run(spark, [[f.fragment_id for f in g] for g in groups], task, _compact_files)
            written = [
                (
                    [table_pb2.DataFragment.FromString(b) for b in old],
                    [table_pb2.DataFragment.FromString(b) for b in new],
                )
                for old, new in results
            ]
            for old_pbs, new_pbs in written:
                metrics.fragments_removed += len(old_pbs)
                metrics.files_removed += sum(len(f.files) + f.HasField("deletion_file") for f in old_pbs)
                metrics.fragments_added += len(new_pbs)
                metrics.files_added += sum(len(f.files) for f in new_pbs)
            n_new = sum(len(new) for _, new in written)
            if n_new:
                reserve = new_transaction(ds.version)
                reserve.reserve_fragments.num_fragments = n_new
                v = commit_transaction(
                    ds._store, ds.uri, reserve, build_reserve(n_new, ds.uri), read_version=ds.version
                )
                nid = int(ds.checkout_version(v).manifest.max_fragment_id) - n_new + 1
                for _, new_pbs in written:
                    for f in new_pbs:
                        f.id = nid
                        nid += 1
            txn = new_transaction(ds.version)
            for old_pbs, new_pbs in written:
                g = txn.rewrite.groups.add()
                g.old_fragments.extend(old_pbs)
                g.new_fragments.extend(new_pbs)
            build = build_rewrite(written, ds.uri, ds._store)
            job.commit(lambda: commit_transaction(ds._store, ds.uri, txn, build, read_version=ds.version))
        return metrics

    ds = _open(uri, None, storage_options)
    for attempt in range(COMPACTION_ATTEMPTS):
        try:
            return once(ds)
        except RetryableCommitConflictError:
            if attempt == COMPACTION_ATTEMPTS - 1:
                raise
        ds = ds.checkout_version(ds.latest_version)
    raise AssertionError("unreachable")
