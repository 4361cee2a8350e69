"""The "lance" Structured Streaming sink: one dataset version per micro-batch, exactly once across restarts.

``df.writeStream.format("lance").option("checkpointLocation", ck).start(uri)``

Tasks write each micro-batch's rows as data files (``write_fragments``: invisible until a manifest names them) and send
their fragments to the driver, where ``commit(messages, batch_id)`` makes one new version.  Spark records a batch in its
checkpoint's commit log only after that returns, so a query that stops between the two (a crash, a killed driver) runs
the batch again after its restart.  Append mode therefore records ``lancelot.spark.query_id`` (the streaming query's id,
kept in the checkpoint across restarts) and ``lancelot.spark.batch_id`` in the transaction's ``transaction_properties``
(protos/transaction.proto), and before committing looks through the dataset's transactions, newest first, for that pair:
a batch already committed is not committed again, and the rerun's data files are deleted.  The search stops at the first
transaction of the same query with a smaller batch id (batches commit in order).

The query id comes from the tasks (Spark's ``sql.streaming.queryId`` local property); the ``stream_id`` option overrides
it.  A dataset that does not exist is first created empty (version 1), so that every micro-batch's version is an append
carrying the pair.

Complete mode (Spark asks the sink to truncate) overwrites the dataset with each batch: a rerun writes the same result
again, so no batch is duplicated either.  ``abort`` deletes a failed batch's data files, except those a committed
version names."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from lancelot.errors import LanceError, SchemaMismatchError
from lancelot.spark.options import dataset_version, storage_options
from lancelot.spark.types import align_to_dataset, append_mismatch, spark_arrow_schema, to_spark_batch
from lancelot.spark.writer import nulls_checked, nulls_tightened, option_uri, write_options

if TYPE_CHECKING:
    from lancelot.dataset import FragmentMetadata

QUERY_ID = "lancelot.spark.query_id"
BATCH_ID = "lancelot.spark.batch_id"
#: the Spark local property that holds a streaming query's id in its tasks
SPARK_QUERY_ID = "sql.streaming.queryId"
#: tests only: raise after committing this batch id, before Spark records it (a crash between the two)
FAIL_AFTER_COMMIT = "_fail_after_commit_batch"


@dataclass
class StreamCommitMessage(WriterCommitMessage):
    """One task's fragments (JSON, ids unassigned) and the streaming query's id."""

    fragments: list[str] = field(default_factory=list)
    query_id: str = ""


class LanceStreamWriter(DataSourceStreamArrowWriter):
    """Appends (or, in complete mode, overwrites) one dataset version per micro-batch."""

    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool) -> None:
        self.uri = option_uri(options)
        self.storage = storage_options(options)
        self.overwrite = overwrite
        self.write_options = write_options(options)
        self.stream_id = options.get("stream_id") or ""
        self.fail_after = options.get(FAIL_AFTER_COMMIT)
        self.schema = spark_arrow_schema(schema)
        self.check_nulls = False
        version = dataset_version(self.uri, self.storage)
        if version is not None and not overwrite:
            from lancelot.dataset import dataset

            theirs = dataset(self.uri, version=version, storage_options=self.storage).schema
            aligned = align_to_dataset(self.schema, theirs)
            problem = append_mismatch(aligned, theirs)
            if problem:
                raise SchemaMismatchError(f"cannot append the stream to the dataset: {problem}", path=self.uri)
            self.check_nulls = nulls_tightened(self.schema, aligned)
            self.schema = pa.schema([aligned.field(n) for n in theirs.names], metadata=aligned.metadata)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StreamCommitMessage:
        """Runs in a task: the batches become data files under ``<uri>/data/`` (invisible until commit)."""
        from pyspark import TaskContext

        from lancelot.dataset import write_fragments

        names = self.schema.names
        batches = (to_spark_batch(b.select(names), self.schema) for b in iterator if b.num_rows)
        if self.check_nulls:
            batches = (nulls_checked(b, self.schema) for b in batches)
        frags = write_fragments(
            batches, self.uri, schema=self.schema, storage_options=self.storage, **self.write_options
        )
        ctx = TaskContext.get()
        query = self.stream_id or (ctx.getLocalProperty(SPARK_QUERY_ID) if ctx is not None else None) or ""
        return StreamCommitMessage([json.dumps(f.to_json()) for f in frags], query)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 (pyspark's)
        """On the driver: the micro-batch's fragments as one new version, unless it is already committed."""
        from lancelot.dataset import commit

        frags, query = self._received(messages)
        if self.overwrite:
            exists = dataset_version(self.uri, self.storage) is not None
            op = "overwrite" if exists else "create"
            commit(self.uri, op, fragments=frags, schema=self.schema, storage_options=self.storage)
        elif frags:
            if not query:
                raise LanceError(
                    "the stream's query id is unknown (no sql.streaming.queryId in its tasks): set option stream_id",
                    path=self.uri,
                )
            self._ensure_dataset()
            if committed_batch(self.uri, self.storage, query, batchId):
                self._delete(frags)  # a rerun of a batch committed before a restart
            else:
                append_batch(self.uri, self.storage, frags, self.schema, query, batchId)
        if self.fail_after is not None and int(self.fail_after) == batchId:
            raise LanceError(f"test hook: failing after committing batch {batchId}", path=self.uri)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """The micro-batch failed: its data files are removed, unless its version was made (Spark aborts a batch whose
        commit raised after committing, as a crash there would leave it)."""
        frags, query = self._received(messages)
        if self.overwrite:
            self._delete(frags, keep=_latest_files(self.uri, self.storage))
        elif not (query and committed_batch(self.uri, self.storage, query, batchId)):
            self._delete(frags)

    def _received(self, messages: list[WriterCommitMessage | None]) -> tuple[list[FragmentMetadata], str]:
        """The micro-batch's fragments and its streaming query's id."""
        from lancelot.dataset import FragmentMetadata

        msgs = [m for m in messages if isinstance(m, StreamCommitMessage)]
        frags = [FragmentMetadata.from_json(s) for m in msgs for s in m.fragments]
        return frags, self.stream_id or next((m.query_id for m in msgs if m.query_id), "")

    def _ensure_dataset(self) -> None:
        from lancelot.dataset import commit
        from lancelot.dataset.commit import CommitConflictError

        if dataset_version(self.uri, self.storage) is None:
            try:
                commit(self.uri, "create", fragments=[], schema=self.schema, storage_options=self.storage)
            except CommitConflictError:
                pass  # created meanwhile

    def _delete(self, frags: list[FragmentMetadata], keep: frozenset[str] = frozenset()) -> None:
        from lancelot.dataset.store import ObjectStore

        store = ObjectStore(self.uri, self.storage)
        for f in frags:
            for d in f.files:
                if d.path not in keep:
                    store.delete(f"data/{d.path}")


def _latest_files(uri: str, storage: dict[str, object] | None) -> frozenset[str]:
    """The data files the dataset's latest version names (none when there is no dataset)."""
    from lancelot.dataset import dataset

    if dataset_version(uri, storage) is None:
        return frozenset()
    ds = dataset(uri, storage_options=storage)
    return frozenset(d.path for f in ds.get_fragments() for d in f.metadata.files)


def committed_batch(uri: str, storage: dict[str, object] | None, query: str, batch: int) -> bool:
    """Whether a version of the dataset at ``uri`` records micro-batch ``batch`` of stream ``query``."""
    from lancelot.dataset.commit import list_versions, load_manifest, load_transaction
    from lancelot.dataset.store import ObjectStore

    store = ObjectStore(uri, storage)
    versions = list_versions(store, store.uri)
    if versions.latest is None:
        return False
    for v in range(versions.latest, 0, -1):
        if v not in versions.names:
            continue
        txn = load_transaction(store, load_manifest(store, store.uri, versions, v))
        if txn is None or txn.transaction_properties.get(QUERY_ID) != query:
            continue
        seen = int(txn.transaction_properties.get(BATCH_ID, "-1"))
        if seen == batch:
            return True
        if seen < batch:
            return False
    return False


def append_batch(
    uri: str,
    storage: dict[str, object] | None,
    frags: list[FragmentMetadata],
    schema: pa.Schema,
    query: str,
    batch: int,
) -> int:
    """Commit ``frags`` as an Append whose transaction records (``query``, ``batch``); the new version.

    ``lancelot.dataset.commit`` takes no transaction properties, so this builds the same Append transaction with the
    library's own pieces (``build_append``, ``commit_transaction``: conflict checks and retries as every commit)."""
    from lancelot.dataset.commit import commit_transaction, list_versions, load_manifest
    from lancelot.dataset.operation import build_append
    from lancelot.dataset.store import ObjectStore
    from lancelot.dataset.transaction import new_transaction
    from lancelot.dataset.write import check_append_schema
    from lancelot.schema import normalize_schema

    store = ObjectStore(uri, storage)
    versions = list_versions(store, store.uri)
    if versions.latest is None:
        raise LanceError("the dataset disappeared before the micro-batch was committed", path=uri)
    base = load_manifest(store, store.uri, versions, versions.latest)
    check_append_schema(base, normalize_schema(schema), store.uri)
    pbs = [f.to_pb() for f in frags]
    for pb in pbs:
        pb.ClearField("id")
    txn = new_transaction(versions.latest)
    txn.transaction_properties[QUERY_ID] = query
    txn.transaction_properties[BATCH_ID] = str(batch)
    txn.append.fragments.extend(pbs)
    return commit_transaction(store, store.uri, txn, build_append(pbs, store.uri), read_version=versions.latest)
