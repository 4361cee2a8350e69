"""Distributed operations on Lance datasets from Spark: ``delete``, ``update``, ``add_columns``, ``merge_insert``
(merge_insert.py) and ``compact``, each one new dataset version per call (``compact``: two, ReserveFragments then
Rewrite, as the library and pylance compact).

The driver plans on the dataset's latest version and runs Spark tasks over groups of fragments (jobs.py: small
fragments share a task, about as many bytes per task as a read's partition); each task opens the dataset at the planned
version, works fragment by fragment, writes files no manifest names yet (deletion files, new data files) and returns
their metadata.  Once every task has succeeded, the driver commits ONE transaction of the kind the
library's own operation writes (Delete, Update, Merge, Rewrite: table format, "Transaction types";
protos/transaction.proto), so pylance and lancelot check it against concurrent commits with their usual rules.  A
``RetryableCommitConflictError`` re-plans and re-runs the job on the latest version (at most ``conflict_retries``
times).  A failed task fails the job before any commit: the dataset stays at its version and the files the tasks wrote
are deleted."""

from __future__ import annotations

import contextlib
import functools
import operator
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lancelot.dataset import blob_write
from lancelot.dataset.changes import (
    DEFAULT_CONFLICT_RETRIES,
    ChangeInputError,
    DeleteInputError,
    Deletions,
    NewRows,
    as_expression,
    as_filter,
    cast_set_value,
    evaluate,
    matching_positions,
)
from lancelot.dataset.commit import commit_transaction
from lancelot.dataset.operation import build_delete
from lancelot.dataset.transaction import new_transaction
from lancelot.format.pb import file_pb2, table_pb2
from lancelot.spark.jobs import (
    FragmentChange,
    Job,
    JobRef,
    change_files,
    changed,
    commit_update,
    data_files,
    deletion_files,
    deletions_of,
    fragment_of,
    fragment_sizes,
    merged,
    on_latest,
    open_dataset,
)
from lancelot.spark.merge_insert import merge_insert

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lancelot.dataset.compact import CompactionMetrics
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment

__all__ = ["add_columns", "compact", "delete", "merge_insert", "update"]


# -- delete -----------------------------------------------------------------------------------------


def _delete_task(where: str, ds: LanceDataset, fragment_id: int) -> FragmentChange:
    frag = fragment_of(ds, fragment_id)
    expr = as_filter(where, ds.schema, DeleteInputError)
    return deletions_of(ds, frag, matching_positions(frag, expr))


def delete(
    spark: SparkSession,
    uri: str,
    where: str,
    storage_options: dict[str, Any] | None = None,
    *,
    conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
) -> dict[str, int]:
    """Delete the rows matching a SQL predicate, on Spark: the tasks write each fragment's deletion file, the driver
    commits one Delete (also when nothing matches, as pylance's ``delete``).

    Args:
        spark: The session whose executors do the work.
        uri: The dataset's path or URL.
        where: The predicate, SQL text.
        storage_options: Object store options for the driver and the executors.
        conflict_retries: How often to re-plan on the latest version after a commit conflict.

    Returns:
        ``{"num_deleted_rows": n}``, as pylance.

    Raises:
        OSError: An empty or malformed predicate (a ``DeleteInputError``, the class pylance raises; checked on the
            driver, before any task).

    Examples:
        ```python
        lancelot.spark.delete(spark, "s3://bucket/events", "ts < '2024-01-01'")
        ```
    """
    if not isinstance(where, str) or not where.strip():
        raise DeleteInputError("delete needs a predicate (an SQL string)")

    def attempt(cur: LanceDataset) -> tuple[int, int]:
        as_filter(where, cur.schema, DeleteInputError)  # a bad predicate fails on the driver, before any task
        task = functools.partial(_delete_task, where)
        with Job(cur, storage_options) as job:
            ids = [f.fragment_id for f in cur.get_fragments()]
            changes = job.run(spark, ids, fragment_sizes(cur, [[i] for i in ids]), task, change_files)
            updated, removed, count = merged(changes)
            txn = new_transaction(cur.version)
            txn.delete.updated_fragments.extend(updated)
            txn.delete.deleted_fragment_ids.extend(removed)
            txn.delete.predicate = where
            build = build_delete(updated, removed, cur.uri)
            v = job.commit(lambda: commit_transaction(cur.store, cur.uri, txn, build, read_version=cur.version))
        return v, count

    return {"num_deleted_rows": on_latest(uri, storage_options, conflict_retries, attempt)[1]}


# -- update -----------------------------------------------------------------------------------------


def _update_task(
    set_sql: dict[str, str], where: str | None, ds: LanceDataset, fragment_ids: list[int], job: JobRef
) -> FragmentChange:
    """A group of fragments updated as the library's ``update`` updates a dataset: each fragment's matched rows deleted
    (a deletion file per fragment, recorded at once: a task whose job has ended stops there) and the new values of all
    of them written together into new fragments (stable row ids kept).  A failure deletes the deletion files it wrote
    (``write_fragments`` aborts the data file it writes)."""
    schema = ds.schema
    exprs = {name: as_expression(sql, schema) for name, sql in set_sql.items()}
    cond = as_filter(where, schema) if where is not None else None
    dels, rows = Deletions(ds), NewRows(ds)

    def changed_rows() -> Iterator[pa.Table]:
        for fid in fragment_ids:
            frag = fragment_of(ds, fid)
            pos = matching_positions(frag, cond)
            if not len(pos):
                continue
            t = blob_write.with_values(frag, frag.take_physical(list(schema.names), pos))  # blobs: values, as ds.update
            values = evaluate(t, exprs)
            for name in exprs:
                f = schema.field(name)
                t = t.set_column(t.column_names.index(name), f, cast_set_value(values.column(name), f, name))
            rows.keep_ids(frag, pos)
            n = len(dels.updated)
            dels.mark(frag, pos)
            job.record(deletion_files(Deletions(ds, dels.updated[n:])))
            yield t

    try:
        new = rows.write(changed_rows())
    except BaseException:
        for path in deletion_files(dels):
            with contextlib.suppress(OSError):
                ds.store.delete(path)
        raise
    change = changed(dels)
    change.new = [(nf.frag.SerializeToString(), nf.kept_ids, nf.kept_created) for nf in new]
    change.files += data_files([nf.frag for nf in new])
    return change


def update(
    spark: SparkSession,
    uri: str,
    set: Mapping[str, str],  # noqa: A002 - the operation's own word (SQL's UPDATE ... SET)
    where: str | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
) -> dict[str, int]:
    """Set columns to SQL expressions where a predicate holds, on Spark: each task deletes the matched rows of its
    fragments and writes their new values together into new fragments, as the library's ``update`` writes those of the
    whole dataset; the driver commits one Update.

    Args:
        spark: The session whose executors do the work.
        uri: The dataset's path or URL.
        set: Column name to SQL expression over the row.
        where: The predicate, SQL text; None updates every row.
        storage_options: Object store options for the driver and the executors.
        conflict_retries: How often to re-plan on the latest version after a commit conflict.

    Returns:
        ``{"num_rows_updated": n}``, as pylance.

    Raises:
        ValueError: No updates, an unknown column, or SQL that does not parse (on the driver).

    Examples:
        ```python
        lancelot.spark.update(spark, uri, {"status": "'done'"}, where="id < 100")
        ```
    """
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
        task = functools.partial(_update_task, set_sql, where)
        top_ids = {f.name: int(f.id) for f in cur.manifest.fields if f.parent_id == -1}
        with Job(cur, storage_options) as job:
            ids = [f.fragment_id for f in cur.get_fragments()]
            changes = job.run_groups(spark, ids, fragment_sizes(cur, [[i] for i in ids]), task, change_files)
            v = job.commit(lambda: commit_update(cur, changes, [top_ids[n] for n in set_sql]))
        return v, sum(c.count for c in changes)

    return {"num_rows_updated": on_latest(uri, storage_options, conflict_retries, attempt)[1]}


# -- add_columns ------------------------------------------------------------------------------------


def _add_columns_task(
    schema: pa.Schema,
    fields: list[bytes],
    values: Callable[[Fragment], pa.Table],
    ds: LanceDataset,
    fragment_id: int,
) -> tuple[bytes, list[str]]:
    """The fragment with one more data file holding the new columns' values (its physical rows), serialized, and the
    files written."""
    from lancelot.dataset.column_files import column_files, new_values

    frag = fragment_of(ds, fragment_id)
    nf = table_pb2.DataFragment()
    nf.CopyFrom(frag.data_fragment)
    if frag.physical_rows:
        t = new_values(frag, values(frag), schema)
        nf.files.extend(column_files(ds, t, [file_pb2.Field.FromString(b) for b in fields]))
    out: bytes = nf.SerializeToString()
    return out, data_files([nf])[len(frag.data_fragment.files) :]


def _plan_udf(
    cur: LanceDataset, udf: Callable[[Any], Any], cols: list[str], pandas: bool, output_schema: pa.Schema | None
) -> pa.Schema:
    """The UDF's output schema: given, the function's ``output_schema``, or (as pylance) from the function run on the
    driver on one row."""
    from lancelot.dataset.schema_evolution import as_udf_batch, live_batches

    schema = output_schema or getattr(udf, "output_schema", None)
    if schema is None:
        first = next(live_batches(cur.get_fragments(), cols, 1), None)
        if first is None:
            first = pa.RecordBatch.from_pylist([], pa.schema([cur.schema.field(c) for c in cols]))
        schema = as_udf_batch(udf(first.to_pandas() if pandas else first)).schema
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
    """Add columns computed on the executors (tasks over groups of fragments), one new data file per fragment; the
    driver commits one Merge, as ``LanceDataset.add_columns`` does.

    Args:
        spark: The session whose executors do the work.
        uri: The dataset's path or URL.
        transforms: ``{name: SQL expression over the row}``, or a function from a batch of live rows (a
            ``pyarrow.RecordBatch``, or a pandas DataFrame with ``batch_format="pandas"``) to the new columns, as many
            rows (a RecordBatch, Table or DataFrame). The function is pickled to the executors.
        read_columns: For a function: the columns it receives (default all).
        storage_options: Object store options for the driver and the executors.
        batch_size: For a function: at most this many rows per call.
        batch_format: ``"arrow"`` or ``"pandas"``: what the function receives.
        output_schema: For a function: the new columns' schema (default: its ``output_schema`` attribute, as
            ``lance.batch_udf`` sets it, or found by running it on one row).
        conflict_retries: How often to re-plan on the latest version after a commit conflict.

    Raises:
        ValueError: A name already in the schema, or an unknown ``batch_format``.
        TypeError: ``transforms`` is neither a dict nor a function.

    Examples:
        ```python
        lancelot.spark.add_columns(spark, uri, {"total": "price * quantity"})
        ```
    """
    from lancelot.dataset.column_files import check_new_names as _check_new_names
    from lancelot.dataset.column_files import merge_transaction
    from lancelot.dataset.column_files import next_field_id as _next_field_id
    from lancelot.dataset.column_files import numbered_fields as _new_fields
    from lancelot.dataset.schema_evolution import batch_values, plan_sql, sql_values

    if batch_format not in ("arrow", "pandas"):
        raise ChangeInputError(f"add_columns: batch_format must be 'arrow' or 'pandas', not {batch_format!r}")

    pandas = batch_format == "pandas"

    def attempt(cur: LanceDataset) -> int:
        values: Callable[[Fragment], pa.Table]
        if isinstance(transforms, Mapping):
            exprs_sql = dict(transforms)
            schema, cols, null = plan_sql(cur, exprs_sql)
            values = functools.partial(sql_values, exprs_sql, cols)
        elif callable(transforms):
            cols = list(cur.schema.names) if read_columns is None else list(read_columns)
            null = False
            schema = _plan_udf(cur, transforms, cols, pandas, output_schema)
            _check_new_names(cur, schema.names, {f.name: f.type for f in schema})
            values = functools.partial(batch_values, transforms, cols, int(batch_size), schema, pandas)
        else:
            raise TypeError(
                f"add_columns: transforms must be a dict of SQL expressions or a function, not {transforms!r}"
            )
        fields = _new_fields(schema, _next_field_id(cur.manifest))
        task = functools.partial(_add_columns_task, schema, [f.SerializeToString() for f in fields], values)
        with Job(cur, storage_options) as job:
            if null:
                frags = list(cur.manifest.fragments)
            else:
                ids = [f.fragment_id for f in cur.get_fragments()]
                results = job.run(spark, ids, fragment_sizes(cur, [[i] for i in ids]), task, operator.itemgetter(1))
                frags = [table_pb2.DataFragment.FromString(b) for b, _ in results]
            txn, build = merge_transaction(cur, frags, list(cur.manifest.fields) + fields)
            return job.commit(lambda: commit_transaction(cur.store, cur.uri, txn, build, read_version=cur.version))

    on_latest(uri, storage_options, conflict_retries, attempt)


# -- compact ----------------------------------------------------------------------------------------


def _compact_task(
    target_rows_per_fragment: int, ds: LanceDataset, fragment_ids: list[int]
) -> tuple[list[bytes], list[bytes]]:
    """A group of adjacent fragments rewritten into new ones (ids unassigned) holding their live rows in order, stable
    row ids carried over: (old fragments, new fragments), serialized."""
    from lancelot.dataset.compact import counted_entry
    from lancelot.dataset.compact_rewrite import rewrite_group
    from lancelot.dataset.manifest import writable_data_version

    group = [fragment_of(ds, i) for i in fragment_ids]
    where = f"dataset {ds.uri!r} version {ds.version}"
    dv = writable_data_version(ds.manifest, where)
    new_pb = rewrite_group(ds, group, target_rows_per_fragment, dv, where)
    return [counted_entry(f).SerializeToString() for f in group], [f.SerializeToString() for f in new_pb]


def _compact_files(result: tuple[list[bytes], list[bytes]]) -> list[str]:
    return data_files([table_pb2.DataFragment.FromString(b) for b in result[1]])


def compact(
    spark: SparkSession,
    uri: str,
    storage_options: dict[str, Any] | None = None,
    *,
    target_rows_per_fragment: int = 1024 * 1024,
    materialize_deletions: bool = True,
    materialize_deletions_threshold: float = 0.1,
) -> CompactionMetrics:
    """Compact the dataset on Spark: planned as ``LanceDataset.compact_files`` (and pylance's
    ``optimize.compact_files``) plans it, each group of fragments rewritten in one task (small groups share a task); the
    driver commits what the library commits (ReserveFragments, then one Rewrite).

    Args:
        spark: The session whose executors do the work.
        uri: The dataset's path or URL.
        storage_options: Object store options for the driver and the executors.
        target_rows_per_fragment: Rows per compacted fragment.
        materialize_deletions: Also rewrite fragments with many deleted rows.
        materialize_deletions_threshold: The share of deleted rows that makes a fragment rewritten.

    Returns:
        A ``CompactionMetrics``, as ``compact_files`` returns.

    A dataset with indices is compacted by the library on the driver (``compact_files``), which
    remaps the indices as pylance does.

    Examples:
        ```python
        lancelot.spark.compact(spark, uri, target_rows_per_fragment=1 << 20)
        ```
    """
    from lancelot.dataset.commit import RetryableCommitConflictError
    from lancelot.dataset.compact import (
        COMPACTION_ATTEMPTS,
        CompactionMetrics,
        check_files,
        commit_compaction,
        compact_files,
        plan_compaction,
    )
    from lancelot.dataset.indices import index_metadata

    if target_rows_per_fragment <= 0:
        raise ValueError("target_rows_per_fragment must be positive")

    pb2 = table_pb2.DataFragment

    def once(ds: LanceDataset) -> CompactionMetrics:
        where = f"dataset {ds.uri!r} version {ds.version}"
        if index_metadata(ds):  # the library's compaction remaps the indices
            return compact_files(
                ds,
                target_rows_per_fragment=target_rows_per_fragment,
                materialize_deletions=materialize_deletions,
                materialize_deletions_threshold=materialize_deletions_threshold,
            )
        groups = plan_compaction(ds, target_rows_per_fragment, materialize_deletions, materialize_deletions_threshold)
        if not groups:
            return CompactionMetrics()
        check_files(ds, groups, where)
        task = functools.partial(_compact_task, target_rows_per_fragment)
        with Job(ds, storage_options) as job:
            ids = [[f.fragment_id for f in g] for g in groups]
            results = job.run(spark, ids, fragment_sizes(ds, ids), task, _compact_files)
            written = [([pb2.FromString(b) for b in old], [pb2.FromString(b) for b in new]) for old, new in results]
            return commit_compaction(ds, written, run_commit=job.commit)

    ds = open_dataset(uri, None, storage_options)
    for attempt in range(COMPACTION_ATTEMPTS):
        try:
            return once(ds)
        except RetryableCommitConflictError:
            if attempt == COMPACTION_ATTEMPTS - 1:
                raise
        ds = ds.checkout_version(ds.latest_version)
    raise AssertionError("unreachable")
