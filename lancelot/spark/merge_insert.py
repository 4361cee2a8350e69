"""``merge_insert`` from Spark (lancelot.spark.operations): one dataset version per call.

Unless target rows no source row matches are deleted (which needs every target row), a target of at most
``TASK_SCAN_LIMIT`` rows is not joined by Spark at all: one Spark job, one task per partition of the source (coalesced
to the session's parallelism), each reading the target's key columns pruned by its own source keys and joining them in
Arrow (merge_lookup.py), writing the new rows; the driver writes the deletion files and commits one Update.  The source
is evaluated once.

For larger targets, the target's key columns and row addresses (fragment id, physical position) are scanned by tasks
over groups of fragments (grouped as the operations' tasks: jobs.task_groups) and joined with the source DataFrame on
the key columns (SQL join semantics: a null key matches nothing); the joined rows are repartitioned by target fragment
into as many tasks as the key scan had (at least two), so each task holds every matched row of its fragments: it
writes their deletion files and the new rows' data files (updated rows first, keeping their stable row ids; then
inserted rows).  The driver commits one Update transaction, as the library's ``merge_insert`` writes it. Unless target
rows no source row matches are deleted, the source's first key column is collected first (up to ``KEY_FILTER_LIMIT``
values) and the key scan keeps only the target rows whose first key is among them.  At most ``LOOKUP_LIMIT`` of them
are joined in Arrow inside the source's own partitions (merge_lookup.py); more go through the Spark join above, which
then holds the source and its matches, not the whole target (a broadcast join when the source keys are few).  That
source is evaluated twice (its keys, then its rows); a merge task finding a row to insert whose key was not collected
(a source that changed in between) fails the call, committing nothing."""

from __future__ import annotations

import dataclasses
import functools
import pickle
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.changes import (
    DEFAULT_CONFLICT_RETRIES,
    ChangeInputError,
    NewRows,
    as_filter,
    cast_to,
    matching_positions,
)
from lancelot.dataset.merge_insert import MergeInsertError, qualified_to_plain
from lancelot.format.pb import table_pb2
from lancelot.spark.jobs import (
    FragmentChange,
    Job,
    JobRef,
    commit_update,
    data_files,
    deletions_of,
    fragment_of,
    fragment_sizes,
    injected_fault,
    on_latest,
    open_dataset,
    parallelism,
    task_groups,
)
from lancelot.spark.merge_lookup import (
    LOOKUP_LIMIT,
    LookupResult,
    MergePlan,
    ambiguous_error,
    ambiguous_key,
    as_matches,
    condition_schema,
    deletions,
    fragment_keys,
    lookup_task,
    payload_batch,
    summary,
    updated_rows,
)

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset

__all__ = ["merge_insert"]


# -- merge_insert -----------------------------------------------------------------------------------

_FRAG = "_lancelot_fragment"
_POS = "_lancelot_position"
_SRC = "_lancelot_source"
_PART = "_lancelot_partition"
#: the most source keys collected on the driver to prune the target's key scan (more: no pruning)
KEY_FILTER_LIMIT = 4_000_000
#: source rows per task when the matches are joined in the source's tasks (fewer, larger new fragments)
LOOKUP_ROWS_PER_TASK = 250_000
#: the most target rows (physical) whose keys every source task reads itself (more: the keys
#: are collected from the source first and the target's key scan is pruned by them)
TASK_SCAN_LIMIT = 20_000_000
#: the most matched target rows broadcast to the join (the source side is then not shuffled)
BROADCAST_LIMIT = 1_000_000


def _target_keys(
    uri: str,
    version: int,
    storage_options: dict[str, Any] | None,
    on: list[str],
    groups: list[list[int]],
    out: pa.Schema,
    only: pa.Array | None,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """A task of the target's key scan: the key columns of the live rows of its group of fragments (those whose first
    key is in ``only``, if given), with each row's fragment id and physical position (its row address)."""
    from lancelot.spark.types import to_spark_batch

    ds = open_dataset(uri, version, storage_options)
    for b in batches:
        for i in b.column(0).to_pylist():
            for fid in groups[int(i)]:
                t = fragment_keys(fragment_of(ds, fid), on, only)
                if t is not None:
                    yield to_spark_batch(t.select(out.names), out)


def _merge_task(plan: MergePlan, job: JobRef, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A task of the joined rows of some fragments (all of each fragment's rows are in one task) and some rows to
    insert: deletion files for the matched (and unmatched-by-source) target rows, new data files for the updated and
    inserted rows, all written together.  Yields one pickled ``FragmentChange`` summary per task and the counts of
    updated / deleted / inserted; under ``when_matched_fail`` a task that finds a match writes nothing and yields the
    matched key instead, and one that finds a target row matched twice yields its key (``("ambiguous", key)``), having
    recorded the deletion files it wrote (the driver raises, so Spark does not retry the task)."""
    parts = [b for b in batches if b.num_rows]
    summary = FragmentChange()
    counts = {"num_inserted_rows": 0, "num_updated_rows": 0, "num_deleted_rows": 0}
    if parts:
        t = pa.Table.from_batches(parts)
        has_frag = t.column(_FRAG).is_valid().to_numpy(zero_copy_only=False)
        has_src = t.column(_SRC).is_valid().to_numpy(zero_copy_only=False)
        if plan.matched == "fail":
            hit = np.flatnonzero(has_frag & has_src)
            if len(hit):
                key = {k: t.column(k)[int(hit[0])].as_py() for k in plan.on}
                yield payload_batch(("fail", key))
                return
        if plan.collected is not None and plan.insert:
            first = t.column(plan.on[0]).filter(pa.array(~has_frag & has_src))
            new_key = pc.and_(pc.is_valid(first), pc.invert(pc.is_in(first, value_set=plan.collected)))
            stray = pc.filter(first, new_key)  # a null key matches nothing: inserted whatever was collected
            if len(stray):  # its target row (if any) was not scanned: inserting it could duplicate it
                yield payload_batch(("changed", {plan.on[0]: stray[0].as_py()}))
                return
        ds = open_dataset(plan.uri, plan.version, plan.storage_options)
        frag_col = pc.fill_null(t.column(_FRAG), -1).to_numpy()
        positions = pc.fill_null(t.column(_POS), -1).to_numpy()
        rows = NewRows(ds)
        new_parts: list[pa.Table] = []
        updated: list[table_pb2.DataFragment] = []
        removed: list[int] = []
        by_source = as_filter(plan.by_source_filter, ds.schema) if plan.by_source_filter else None
        for fid in np.unique(frag_col[has_frag].astype(np.int64)):
            frag = fragment_of(ds, int(fid))
            sel = has_frag & (frag_col == fid)
            pos = positions[sel].astype(np.int64)
            matched = has_src[sel]
            mpos = pos[matched]
            twice = ambiguous_key(frag, mpos, plan.on) if plan.matched in ("update", "delete") else None
            if twice is not None:  # the driver raises (the files written so far are recorded: the job deletes them)
                yield payload_batch(("ambiguous", twice))
                return
            gone = np.empty(0, np.int64)
            if plan.matched == "update" and len(mpos):
                order = np.argsort(mpos, kind="stable")
                idx = np.flatnonzero(sel)[matched][order]
                mpos = mpos[order]
                mpos, new = updated_rows(plan, ds, frag, mpos, t.take(pa.array(idx)).select(plan.source_columns))
                rows.keep_ids(frag, mpos)
                new_parts.append(new)
                counts["num_updated_rows"] += len(mpos)
                gone = mpos
            elif plan.matched == "delete" and len(mpos):
                counts["num_deleted_rows"] += len(mpos)
                gone = np.sort(mpos)
            if plan.by_source:
                unmatched = pos[~matched]
                if by_source is not None and len(unmatched):
                    unmatched = np.intersect1d(unmatched, matching_positions(frag, by_source))
                counts["num_deleted_rows"] += len(unmatched)
                gone = np.union1d(gone, unmatched)
            change = deletions_of(ds, frag, gone)
            job.record(change.files)  # at once: a later fragment's error (or the job's end) deletes it
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
        written_files = data_files([nf.frag for nf in written])
        summary.files += written_files
        job.record(written_files)
    injected_fault(job)
    yield payload_batch((summary, counts))


def merge_insert(
    df: Any,
    uri: str,
    on: str | list[str],
    when_matched_update_all: bool | str | None = None,
    when_not_matched_insert_all: bool = True,
    when_not_matched_by_source_delete: bool | str = False,
    storage_options: dict[str, Any] | None = None,
    *,
    when_matched_delete: bool = False,
    when_matched_fail: bool = False,
    num_partitions: int | None = None,
    conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
    retry_timeout: Any = None,
) -> dict[str, int]:
    """Upsert the rows of a Spark DataFrame into a dataset by key, the join done by Spark.

    Each task of ``df``'s partitions finds its rows' matches among the target's keys and row addresses and writes the
    new rows' data files (for large targets: Spark's join, see the module docstring); the driver writes the deletion
    files and commits one Update, as ``LanceDataset.merge_insert`` does. A null key matches nothing; two source rows
    matching one target row (to update or delete) are an error; source columns must have the dataset's types (checked on
    the driver).

    Args:
        df: The source rows; its columns are the keys and a subset of the dataset's (columns it lacks keep the target's
            values).
        uri: The dataset's path or URL.
        on: The key column(s).
        when_matched_update_all: Matched rows take the source's values: True, False, or an SQL condition over
            ``source.<column>`` and ``target.<column>``; the default None means "update unless ``when_matched_delete``
            or ``when_matched_fail`` is given".
        when_not_matched_insert_all: Insert the source rows that match no target row.
        when_not_matched_by_source_delete: Delete target rows no source row matches: True, False, or an SQL filter on
            the target.
        storage_options: Object store options.
        when_matched_delete: Delete the matched rows instead (the builder's ``when_matched_delete()``).
        when_matched_fail: A match fails the call with ``MergeInsertError`` (an OSError, as pylance's) naming the key,
            and nothing is committed.
        num_partitions: Tasks writing the result: at most this many source partitions (coalesced; default: the session's
            parallelism for a target of at most ``TASK_SCAN_LIMIT`` rows, else one per 250,000 source keys) when the
            matches are joined in the source's tasks, else this many tasks after Spark's join (default: as many as the
            target's key scan, groups of fragments as the other operations' tasks, at least two); each holds its rows
            in memory.
        conflict_retries: How often to re-plan on the latest version after a commit conflict.
        retry_timeout: A timedelta or seconds, as the builder's.

    Returns:
        ``num_inserted_rows``, ``num_updated_rows``, ``num_deleted_rows``, as pylance.

    Raises:
        ValueError: No key, nothing to do, clauses that exclude each other, or source columns the dataset has not.
        MergeInsertError: ``when_matched_fail`` and a source row matched.

    Examples:
        ```python
        lancelot.spark.merge_insert(updates_df, "s3://bucket/events", on="id")
        ```
    """
    from pyspark.sql import functions as F  # noqa: N812 - pyspark's usual name

    from lancelot.spark.types import spark_arrow_schema, spark_schema, spark_type

    keys = [on] if isinstance(on, str) else list(on)
    if not keys:
        raise ChangeInputError("merge_insert needs at least one key column")
    matched = _matched_action(when_matched_update_all, when_matched_delete, when_matched_fail)
    if not (matched or when_not_matched_insert_all or when_not_matched_by_source_delete):
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
        for c in source_columns:  # found on the driver, in one line, before any task runs
            ours, theirs = df.schema[c].dataType, spark_type(cur.schema.field(c).type)
            if ours.simpleString() != theirs.simpleString():
                raise ChangeInputError(
                    f"dataset {cur.uri!r}: merge_insert source column {c!r} is {ours.simpleString()}, the dataset's "
                    f"is {theirs.simpleString()} (cast it in the DataFrame)"
                )
        if by_source_filter is not None:
            as_filter(by_source_filter, cur.schema)
        if matched == "update" and isinstance(when_matched_update_all, str):
            text = qualified_to_plain(when_matched_update_all)
            as_filter(text, condition_schema(cur.schema, source_columns))
        frags = cur.get_fragments()
        all_fields = [int(x.id) for x in cur.manifest.fields if x.parent_id == -1]
        plan = MergePlan(
            cur.uri,
            cur.version,
            storage_options,
            keys,
            source_columns,
            matched,
            when_matched_update_all if isinstance(when_matched_update_all, str) else None,
            bool(when_not_matched_insert_all),
            by_source,
            by_source_filter,
        )
        if not by_source and sum(f.physical_rows for f in frags) <= TASK_SCAN_LIMIT:
            source = df.coalesce(int(num_partitions or parallelism(spark)))
            return _merge_by_lookup(cur, source, plan, None, all_fields)
        key_schema = spark_schema(pa.schema([cur.schema.field(k) for k in keys]))
        for extra in (_FRAG, _POS):
            key_schema = key_schema.add(extra, "long", False)
        collected = None if by_source else _source_keys(df, cur.schema.field(keys[0]))
        sizes = fragment_sizes(cur, [[f.fragment_id] for f in frags])
        groups = [[frags[i].fragment_id for i in g] for g in task_groups(spark, sizes)]
        scan = functools.partial(
            _target_keys,
            cur.uri,
            cur.version,
            storage_options,
            keys,
            groups,
            spark_arrow_schema(key_schema),
            collected,
        )
        n = max(1, len(groups))
        target = spark.range(0, len(groups), 1, n).mapInArrow(scan, key_schema)
        plan = dataclasses.replace(plan, collected=collected)
        if collected is not None and len(collected) <= LOOKUP_LIMIT:
            matches = target.toArrow()
            if matches.num_rows <= LOOKUP_LIMIT:
                tasks = num_partitions or max(1, -(-len(collected) // LOOKUP_ROWS_PER_TASK))
                source = df.coalesce(tasks)  # no more tasks than the source's partitions: small sources, one
                return _merge_by_lookup(cur, source, plan, as_matches(matches, cur.schema, keys), all_fields)
        if collected is not None and len(collected) <= BROADCAST_LIMIT:
            target = F.broadcast(target)  # at most as many rows as source keys: no shuffle of the source
        how = "full_outer" if by_source and when_not_matched_insert_all else "left_outer" if by_source else None
        how = how or ("right_outer" if when_not_matched_insert_all else "inner")
        joined = target.join(df.withColumn(_SRC, F.lit(True)), on=keys, how=how)
        parts = int(num_partitions or max(2, n))
        part = F.when(F.col(_FRAG).isNull(), F.lit(-1) - F.pmod(F.hash(*keys), F.lit(parts))).otherwise(F.col(_FRAG))
        with Job(cur, storage_options) as job:
            out = (
                joined.withColumn(_PART, part)
                .repartition(parts, _PART)
                .mapInArrow(functools.partial(_merge_task, plan, job.ref), "payload binary")
            )
            results = [pickle.loads(r["payload"]) for r in out.collect()]
            _refused(cur, results)
            changes = [c for c, _ in results]
            job.files.update(f for c in changes for f in c.files)
            counts = {
                k: sum(c[k] for _, c in results) for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")
            }
            return job.commit(lambda: commit_update(cur, changes, all_fields)), counts

    _, counts = on_latest(uri, storage_options, conflict_retries, attempt, retry_timeout)
    return counts


def _refused(cur: LanceDataset, results: list[Any]) -> None:
    """Raise for a task that refused: a source that changed, a target row two source rows match (ambiguous, as the
    library's error) or a match under ``when_matched_fail`` (leaving the job deletes the files the tasks wrote and
    recorded)."""
    changed = [r[1] for r in results if isinstance(r, tuple) and r[0] == "changed"]
    if changed:
        raise ChangeInputError(
            f"dataset {cur.uri!r}: merge_insert source returned a key ({changed[0]}) it did not return when "
            "its keys were collected (a non-deterministic DataFrame: cache or checkpoint it); nothing "
            "was committed"
        )
    ambiguous = [r[1] for r in results if isinstance(r, tuple) and r[0] == "ambiguous"]
    if ambiguous:
        raise ambiguous_error(cur.uri, ambiguous[0])
    failed = [r[1] for r in results if isinstance(r, tuple) and r[0] == "fail"]
    if failed:
        raise MergeInsertError(
            f"dataset {cur.uri!r}: merge insert failed: found a matching row with key values {failed[0]} "
            "(when_matched_fail); nothing was committed"
        )


def _merge_by_lookup(
    cur: LanceDataset, df: Any, plan: MergePlan, matches: pa.Table | None, all_fields: list[int]
) -> tuple[int, dict[str, int]]:
    """One task per partition of the source, joined in Arrow with the collected matches (None: each task finds its own,
    merge_lookup.py); the driver writes the deletion files and commits one Update."""
    with Job(cur, plan.storage_options) as job:
        body = functools.partial(lookup_task, plan, job.ref, matches)
        results = [pickle.loads(r["payload"]) for r in df.mapInArrow(body, "payload binary").collect()]
        _refused(cur, results)
        done = [r for r in results if isinstance(r, LookupResult)]
        job.files.update(f for r in done for f in r.files)
        changes = deletions(cur, job.ref, done, plan.on, plan.matched in ("update", "delete")) + [
            summary(r) for r in done
        ]
        job.files.update(f for c in changes for f in c.files)
        counts = {
            k: sum(r.counts[k] for r in done) for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")
        }
        return job.commit(lambda: commit_update(cur, changes, all_fields)), counts


def _source_keys(df: Any, field: pa.Field) -> pa.Array | None:
    """The distinct non-null values of the source's first key column, as the dataset's type (the key scan keeps the
    target rows whose first key is one of them), or None past ``KEY_FILTER_LIMIT`` rows (the scan keeps every row)."""
    got = df.select(field.name).limit(KEY_FILTER_LIMIT + 1).toArrow()
    if got.num_rows > KEY_FILTER_LIMIT:
        return None
    keys = pc.unique(cast_to(got.column(0), field, f"merge_insert key {field.name!r}").combine_chunks())
    return keys.drop_null()


def _matched_action(update: bool | str | None, delete: bool, fail: bool) -> str | None:
    """What matched rows get: one of the builder's three ``when_matched_*`` clauses, or None."""
    if delete and fail:
        raise ChangeInputError("merge_insert: when_matched_delete and when_matched_fail exclude each other")
    if delete or fail:
        if update:
            raise ChangeInputError(
                "merge_insert: when_matched_update_all excludes when_matched_delete and when_matched_fail"
            )
        return "delete" if delete else "fail"
    return "update" if update is None or update else None
