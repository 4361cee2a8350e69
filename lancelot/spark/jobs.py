"""The Spark jobs of lancelot.spark.operations: tasks over groups of fragments, the files the tasks write, and the one
commit on the driver.

``Job.run`` groups its items (fragments, or compaction groups) into tasks as the read side groups fragments into
partitions (partitions.pack_whole: about ``TASK_BYTES`` of data files per task, fewer bytes when that would leave the
session's cores idle, never fewer than ``MIN_TASK_BYTES``; an item over the budget is a task alone), and runs each group
in its own Spark task (a ``spark.range`` of group indexes and ``mapInArrow``: the same on classic Spark and Spark
Connect; the task and items are pickled to the executors).  A task opens the dataset at the planned version once and
works item by item (``Job.run``) or on its whole group at once (``Job.run_groups``: an update writes the new rows of
all its fragments together), writing only files no manifest names yet (deletion files, data files) and recording their
names under ``_lancelot_spark/ops-<id>/`` (the write path's folder for its per-job records) as soon as they are written:
after each item, and a group's deletion files fragment by fragment (``JobRef.record``).
After ``Job.commit``, leaving the ``with Job(...)`` block deletes every recorded file that was not committed: those of a
failed task or job, of a commit that lost to a conflicting one, of retried or speculative task attempts; an attempt
still running after the end (Spark cancels a failed job's other tasks, but their Python workers go on) sees the job's
end marker (``ops-<id>.ended``, kept a day) at its next record, deletes its own files and stops: so it stops within an
item (a fragment of a group), not at the end of its group.  Only a task killed between writing a file and recording
it leaves that file behind, which no manifest names (invisible to readers)."""

from __future__ import annotations

import functools
import json
import os
import pickle
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa

from lancelot.dataset.changes import ChangeInputError, Deletions, NewRows, retrying
from lancelot.dataset.commit import commit_transaction
from lancelot.dataset.operation_changes import NewFragment, build_update
from lancelot.dataset.rowids import encode_row_ids
from lancelot.dataset.transaction import new_transaction
from lancelot.format.pb import table_pb2
from lancelot.spark.partitions import pack_whole
from lancelot.spark.reader import DEFAULT_BYTES_PER_PARTITION, MIN_PARTITION_BYTES
from lancelot.spark.writer import ATTEMPTS_DIR, end_attempts, record_files

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment

_T = TypeVar("_T")
_R = TypeVar("_R")


# -- running tasks over groups of fragments ----------------------------------------------------------

#: bytes of data files a task works on (the read side's partition budget) ...
TASK_BYTES = DEFAULT_BYTES_PER_PARTITION
#: ... lowered so that every core of the session has a task, not below this (Spark's spark.sql.files.openCostInBytes)
MIN_TASK_BYTES = MIN_PARTITION_BYTES


def open_dataset(uri: str, version: int | None, storage_options: dict[str, Any] | None) -> LanceDataset:
    from lancelot.dataset.dataset import LanceDataset

    return LanceDataset(uri, version, storage_options=storage_options)


@dataclass(frozen=True)
class JobRef:
    """What a task needs to record the files it wrote (pickled to the executors)."""

    uri: str
    storage_options: dict[str, Any] | None
    prefix: str  # <dataset>/_lancelot_spark/ops-<id>: one record per item of a task attempt that wrote files
    version: int  # the planned version, the one the tasks open
    fault: str | None = None  # tests only: the driver's FAULT_ENV when the job was planned

    def record(self, files: list[str]) -> None:
        """In a task, after writing ``files`` (relative to the dataset): ``record_files`` (raises, having deleted them,
        once the job has ended: a late task stops there)."""
        record_files(self.uri, self.storage_options, self.prefix, files)


#: tests only: set in the driver's environment while an operation is planned, it makes its tasks fail once they have
#: written and recorded the files of all their items: ``raise`` (the first attempt of the first task raises), ``exit``
#: (that attempt's Python worker dies: ``os._exit``), ``raise-all`` (every attempt of every task raises)
FAULT_ENV = "LANCELOT_SPARK_TEST_FAULT"


def injected_fault(job: JobRef) -> None:
    """In a task, after its files are written and recorded: the fault ``job.fault`` asks for."""
    if not job.fault:
        return
    from pyspark import TaskContext

    from lancelot.errors import LanceError

    ctx = TaskContext.get()
    if ctx is None:
        return
    if job.fault == "raise-all" or (ctx.partitionId() == 0 and ctx.attemptNumber() == 0):
        if job.fault == "exit":
            os._exit(70)
        raise LanceError(
            f"injected fault {FAULT_ENV}={job.fault} in task {ctx.partitionId()} attempt {ctx.attemptNumber()}"
        )


class Job:
    """One Spark job of an operation and the files its tasks write: ``run`` the tasks, ``commit``; on leaving, every
    recorded file not committed is deleted (a failed task, a failed job, a lost commit race: no file of the attempt
    stays behind, visible or not, but for a task killed in the middle of writing one)."""

    def __init__(self, cur: LanceDataset, storage_options: dict[str, Any] | None) -> None:
        fault = os.environ.get(FAULT_ENV) or None
        self.ref = JobRef(cur.uri, storage_options, f"{ATTEMPTS_DIR}/ops-{uuid.uuid4().hex}", cur.version, fault)
        self.store = cur.store
        self.files: set[str] = set()
        self.committing = False

    def run(
        self,
        spark: SparkSession,
        items: list[_T],
        sizes: list[int],
        task: Callable[[LanceDataset, _T], _R],
        files_of: Callable[[_R], list[str]],
    ) -> list[_R]:
        """``[task(dataset, item) for item in items]``, the items grouped into Spark tasks by their ``sizes`` (bytes of
        data files: ``task_groups``; ``task`` and ``items`` are pickled to the executors); raises, having returned
        nothing, if any task fails."""
        return self._run(spark, items, sizes, task, files_of, False)

    def run_groups(
        self,
        spark: SparkSession,
        items: list[_T],
        sizes: list[int],
        task: Callable[[LanceDataset, list[_T], JobRef], _R],
        files_of: Callable[[_R], list[str]],
    ) -> list[_R]:
        """As ``run``, but ``task`` takes a whole group of items at once (one result per Spark task, in order): for
        work whose output is shared by the group's items, as the new fragments of an update.  ``task`` records the
        files it writes for each item as it goes (``JobRef.record``), and its result's ``files_of`` are recorded once
        more at its end."""
        return self._run(spark, items, sizes, task, files_of, True)

    def _run(
        self,
        spark: SparkSession,
        items: list[Any],
        sizes: list[int],
        task: Callable[..., _R],
        files_of: Callable[[_R], list[str]],
        grouped: bool,
    ) -> list[_R]:
        if not items:
            return []
        groups = task_groups(spark, sizes)
        n = len(groups)
        body = functools.partial(run_items, self.ref, items, groups, task, files_of, grouped)
        out: dict[int, _R] = {}
        for r in spark.range(0, n, 1, n).mapInArrow(body, "payload binary").collect():
            out.update(pickle.loads(r["payload"]))
        results = [out[i] for i in range(n if grouped else len(items))]
        for result in results:
            self.files.update(files_of(result))
        return results

    def commit(self, commit: Callable[[], int]) -> int:
        self.committing = True
        return commit()

    def __enter__(self) -> Job:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        from lancelot.dataset.commit import CommitConflictError

        if exc is None or (self.committing and not isinstance(exc, CommitConflictError)):
            keep = self.files  # committed, or perhaps committed (an I/O error while committing)
        else:
            keep = set()
        self._end(keep)

    def _end(self, keep: set[str]) -> None:
        """Mark the job ended, then delete the recorded files not in ``keep`` and the records (end markers over a day
        old go too: the write path's cleanup keeps its markers as long)."""
        store, prefix = self.store, self.ref.prefix
        try:
            end_attempts(store, prefix, lambda raw: [f for f in json.loads(raw) if f not in keep])
        except OSError:
            pass  # best effort: files no manifest names are invisible to readers


def parallelism(spark: Any) -> int:
    """The session's default parallelism (Spark Connect: its ``spark.default.parallelism``, else 2)."""
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        return max(1, int(spark.conf.get("spark.default.parallelism", "2") or 2))


def task_groups(spark: Any, sizes: list[int]) -> list[list[int]]:
    """The indexes of items of ``sizes`` bytes, in order, grouped into tasks (``pack_whole``: ``TASK_BYTES`` a task,
    less to give each of the session's cores a task, not below ``MIN_TASK_BYTES``)."""
    return pack_whole(list(enumerate(sizes)), TASK_BYTES, parallelism(spark), MIN_TASK_BYTES)


def fragment_sizes(ds: LanceDataset, fragment_ids: list[list[int]]) -> list[int]:
    """The bytes of data files of each group of fragments (what ``Job.run`` groups by)."""
    from lancelot.spark.dataset_scan import fragment_bytes

    size = {f.fragment_id: fragment_bytes(ds, f) for f in ds.get_fragments()}
    return [sum(size[i] for i in ids) for ids in fragment_ids]


def run_items(
    job: JobRef,
    items: list[Any],
    groups: list[list[int]],
    task: Callable[..., Any],
    files_of: Callable[[Any], list[str]],
    grouped: bool,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """The body of a Spark task: for each group index ``g`` it was given, the dataset opened at the planned version
    once, then ``task(dataset, items[i])`` for each item ``i`` of the group, its files recorded as soon as written
    (``grouped``: ``task(dataset, the group's items, job)`` once, recording as it goes, its files recorded again
    then); the results pickled, ``{i: result}`` (``grouped``: ``{g: result}``)."""
    for b in batches:
        for g in b.column(0).to_pylist():
            ds = open_dataset(job.uri, job.version, job.storage_options)
            done = {}
            if grouped:
                done[int(g)] = result = task(ds, [items[i] for i in groups[int(g)]], job)
                job.record(files_of(result))
            else:
                for i in groups[int(g)]:
                    done[i] = result = task(ds, items[i])
                    job.record(files_of(result))
            injected_fault(job)
            out = pickle.dumps(done, protocol=pickle.HIGHEST_PROTOCOL)
            yield pa.record_batch([pa.array([out], pa.binary())], names=["payload"])


def on_latest(
    uri: str,
    storage_options: dict[str, Any] | None,
    retries: int,
    attempt: Callable[[LanceDataset], _T],
    timeout: object = None,
) -> _T:
    """``attempt(dataset at its latest version)``, re-planned on the latest version after a retryable commit conflict
    (``retries`` times at most, none once ``timeout`` has passed)."""
    return retrying(open_dataset(uri, None, storage_options), retries, attempt, timeout)


# -- what a task changed in a fragment ---------------------------------------------------------


@dataclass
class FragmentChange:
    """What a task did to its fragments: the fragments with new deletion files (serialized), the ids of those whose
    every row is gone, the rows deleted; new fragments (ids unassigned) with the row ids they keep; files written."""

    updated: list[bytes] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    count: int = 0
    new: list[tuple[bytes, np.ndarray, np.ndarray]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # written, relative to the dataset


def change_files(change: FragmentChange) -> list[str]:
    return change.files


def data_files(frags: list[table_pb2.DataFragment]) -> list[str]:
    from lancelot.dataset.fragment import DATA_DIR

    return [f"{DATA_DIR}/{d.path}" for f in frags for d in f.files]


def deletion_files(dels: Deletions) -> list[str]:
    """The deletion files ``dels`` wrote (relative to the dataset)."""
    from lancelot.dataset.deletion import deletion_path

    return [deletion_path(int(pb.id), pb.deletion_file) for pb in dels.updated]


def changed(dels: Deletions) -> FragmentChange:
    return FragmentChange(
        [pb.SerializeToString() for pb in dels.updated], list(dels.removed), dels.count, files=deletion_files(dels)
    )


def deletions_of(ds: LanceDataset, frag: Fragment, positions: np.ndarray) -> FragmentChange:
    dels = Deletions(ds)
    dels.mark(frag, positions)
    return changed(dels)


def fragment_of(ds: LanceDataset, fragment_id: int) -> Fragment:
    frag = ds.get_fragment(fragment_id)
    if frag is None:
        raise ChangeInputError(f"dataset {ds.uri!r} version {ds.version}: fragment {fragment_id} does not exist")
    return frag


def merged(changes: list[FragmentChange]) -> tuple[list[table_pb2.DataFragment], list[int], int]:
    updated = [table_pb2.DataFragment.FromString(b) for c in changes for b in c.updated]
    removed = [i for c in changes for i in c.removed]
    return updated, removed, sum(c.count for c in changes)


def commit_update(cur: LanceDataset, changes: list[FragmentChange], fields_modified: list[int]) -> int:
    """One Update transaction, as the library's ``update`` and ``merge_insert`` write it."""
    updated, removed, _ = merged(changes)
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
    return commit_transaction(cur.store, cur.uri, txn, build, read_version=cur.version)
