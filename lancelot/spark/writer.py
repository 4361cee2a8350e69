"""The write side of the "lance" data source: Spark jobs write Lance datasets, one version per job.

Each task writes its rows as data files under ``<uri>/data/`` (``lancelot.dataset.write_fragments``; nothing becomes
visible) and returns their fragment metadata as its commit message.  Spark hands the driver's ``commit`` the messages of
exactly one committed attempt per partition; ``lancelot.dataset.commit`` then makes one new version out of them (an
append, an overwrite or the dataset's creation), so a reader sees the job's rows all at once or not at all.

Task attempts whose output Spark does not commit (a retried or speculative attempt, a job that fails or aborts) leave
data files no manifest names: invisible to every reader.  Each attempt also records its file names under
``<uri>/_lancelot_spark/<job id>/``; the driver's commit and abort mark the job ended (``<job id>.ended``, kept a day),
then delete the files of the job's attempts that did not make it into the version, and the records; an attempt that
finishes after that sees the marker and deletes its own files.  Only an attempt killed in the middle of writing a file
can leave one behind (invisible: no manifest names it).

An append is checked when Spark plans the write (on the driver, before any task runs): the DataFrame's columns must be
the dataset's, by name (order may differ), with the types Spark reads them as (``types.append_mismatch`` names the first
column that differs in one line); nullable columns go into non-null ones with each batch checked for nulls.

Spark passes Python data sources only the append and overwrite modes; ``errorifexists`` and ``ignore`` are available
through the ``save_mode`` option or ``lancelot.spark.save`` (decided on whether a dataset exists at the path)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from lancelot.errors import LanceError, SchemaMismatchError
from lancelot.spark.options import dataset_version, int_option, storage_options
from lancelot.spark.types import align_to_dataset, append_mismatch, check_not_null, spark_arrow_schema, to_spark_batch

if TYPE_CHECKING:
    from lancelot.dataset import FragmentMetadata
    from lancelot.dataset.store import ObjectStore

__all__ = ["ATTEMPTS_DIR", "SAVE_MODES", "LanceDatasetWriter", "LanceCommitMessage", "save_mode", "write_options"]
SAVE_MODES = ("append", "overwrite", "errorifexists", "ignore")
#: per-job records of every task attempt's data files (for cleaning up the attempts Spark did not commit)
ATTEMPTS_DIR = "_lancelot_spark"
#: ``<ATTEMPTS_DIR>/<job id><ENDED>`` marks a job whose commit or abort ran; kept for MARKER_SECONDS
ENDED = ".ended"
MARKER_SECONDS = 24 * 3600


@dataclass
class LanceCommitMessage(WriterCommitMessage):
    """What one task attempt wrote: its fragments' metadata as JSON (ids unassigned) and its rows."""

    fragments: list[str] = field(default_factory=list)
    rows: int = 0


def _lance_messages(messages: list[WriterCommitMessage | None]) -> list[LanceCommitMessage]:
    """The tasks' messages to the driver, all written by ``LanceWriter.write`` (None: a failed task)."""
    out = []
    for m in messages:
        if m is None:
            continue
        if not isinstance(m, LanceCommitMessage):
            raise LanceError(f"a task sent a {type(m).__name__}, not a LanceCommitMessage")
        out.append(m)
    return out


def canonical_save_mode(mode: str, what: str = "save mode") -> str:
    """A save mode in Spark's spellings ("error", "default", "error_if_exists"...) as one of ``SAVE_MODES``."""
    m = mode.lower().replace("_", "")
    m = {"error": "errorifexists", "default": "errorifexists"}.get(m, m)
    if m not in SAVE_MODES:
        raise LanceError(f"unknown {what} {mode!r} (use one of {SAVE_MODES})")
    return m


def save_mode(options: Mapping[str, str], overwrite: bool) -> str:
    """The effective save mode: Spark's (append/overwrite), refined by the ``save_mode`` option."""
    mode = canonical_save_mode(options.get("save_mode") or ("overwrite" if overwrite else "append"), "save_mode")
    if overwrite and mode != "overwrite":
        raise LanceError(f'save_mode {mode!r} contradicts Spark\'s mode("overwrite")')
    return mode


def write_options(options: Mapping[str, str]) -> dict[str, Any]:
    """``data_storage_version`` (also spelled ``file_version``, or ``version`` with a dot: "2.1"), ``max_rows_per_file``
    and ``profile`` ("fast", "balanced", "compact"), checked on the driver."""
    from lancelot.writer import resolve_version

    out: dict[str, Any] = {}
    v = options.get("data_storage_version") or options.get("file_version")
    raw_version = options.get("version")
    if not v and raw_version and "." in str(raw_version):
        v = raw_version
    elif raw_version and not v:
        raise LanceError(
            f"option version={raw_version!r} names a dataset version, which only reads take; "
            'write a file format version with option data_storage_version ("2.0", "2.1", "2.2")'
        )
    if v:
        out["data_storage_version"] = resolve_version(str(v))
    rows = int_option(options, "max_rows_per_file", None)
    if rows is not None:
        out["max_rows_per_file"] = rows
    profile = options.get("profile")
    if profile:
        from lancelot.encodings.strategy import PROFILES

        if profile not in PROFILES:
            raise LanceError(f"option profile must be one of {', '.join(PROFILES)}, not {profile!r}")
        out["profile"] = profile
    return out


def option_uri(options: Mapping[str, str]) -> str:
    """The dataset URI of a Spark write's ``path`` option (an error without one)."""
    raw = options.get("path")
    if not raw:
        raise LanceError('the "lance" data source needs a path: df.write.format("lance").save(path)')
    if "://" not in raw:
        import os

        if os.path.isfile(raw):
            raise LanceError(
                "the output path is a file; the lance data source writes a dataset (a directory)", path=raw
            )
    return raw


def end_attempts(store: ObjectStore, prefix: str, stale: Callable[[bytes], list[str]]) -> None:
    """End the job whose attempt records are under ``prefix``: write its end marker (attempts finishing later see it and
    delete their own files), remove other jobs' markers over MARKER_SECONDS old, then delete the files ``stale`` picks
    from each record, the record, and the (local) directory."""
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
            files = stale(store.read(path))
        except (FileNotFoundError, ValueError):
            files = []
        for f in files:
            store.delete(f)
        store.delete(path)
    store.remove_empty_dir(prefix)


def record_files(uri: str, storage: dict[str, Any] | None, prefix: str, files: list[str]) -> None:
    """In a task, after writing ``files`` (paths relative to the dataset): record them under ``prefix``, so the driver
    can delete them if they are not committed.  A task attempt that ends after its job did (killed, lost, speculative)
    sees the job's end marker (the driver writes it before listing the records) and deletes its own files."""
    from lancelot.dataset.store import ObjectStore

    if not files:
        return
    store = ObjectStore(uri, storage)
    record = f"{prefix}/{uuid.uuid4().hex}.json"
    store.put(record, json.dumps(files).encode())
    if store.exists(f"{prefix}{ENDED}"):
        for f in files:
            store.delete(f)
        store.delete(record)
        store.remove_empty_dir(prefix)
        raise LanceError(f"job {prefix} already ended: this task attempt's output was discarded")


class LanceDatasetWriter(DataSourceArrowWriter):
    """Writes each task's Arrow batches as data files; the driver commits them as one dataset version."""

    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool) -> None:
        self.uri = option_uri(options)
        self.storage = storage_options(options)
        self.mode = save_mode(options, overwrite)
        self.write_options = write_options(options)
        self.schema = spark_arrow_schema(schema)
        self.job_id = uuid.uuid4().hex
        self.check_nulls = False
        self.order: list[str] | None = None
        #: the version the job read (None: no dataset yet); commits check conflicts against it
        self.read_version = dataset_version(self.uri, self.storage)
        self.skip = False
        exists = self.read_version is not None
        if exists and self.mode != "overwrite":
            from lancelot.dataset import dataset

            theirs = dataset(self.uri, version=self.read_version, storage_options=self.storage).schema
            aligned = align_to_dataset(self.schema, theirs)
            problem = append_mismatch(aligned, theirs) if self.mode == "append" else None
            if problem:  # found on the driver, before any task runs
                raise SchemaMismatchError(f"cannot append to the dataset: {problem}", path=self.uri)
            #: non-null fields Spark did not promise: each batch is checked for nulls there
            self.check_nulls = nulls_tightened(self.schema, aligned)
            self.schema = aligned
            if self.mode == "append" and aligned.names != theirs.names:
                #: the DataFrame's column order differs from the dataset's: each batch is reordered
                self.order = theirs.names
                self.schema = pa.schema([aligned.field(n) for n in theirs.names], metadata=aligned.metadata)
        if exists and self.mode == "errorifexists":
            raise LanceError("a dataset already exists at the output path (save mode errorifexists)", path=self.uri)
        if exists and self.mode == "ignore":
            self.skip = True

    def _store(self) -> ObjectStore:
        from lancelot.dataset.store import ObjectStore

        return ObjectStore(self.uri, self.storage)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        """Runs in a task: the batches become data files under ``<uri>/data/`` (invisible until commit)."""
        from lancelot.dataset import write_fragments

        if self.skip:
            return LanceCommitMessage()
        order = self.order
        batches = (to_spark_batch(b.select(order) if order else b, self.schema) for b in iterator if b.num_rows)
        if self.check_nulls:
            batches = (nulls_checked(b, self.schema) for b in batches)
        frags = write_fragments(
            batches, self.uri, schema=self.schema, storage_options=self.storage, **self.write_options
        )
        if not frags:
            return LanceCommitMessage()
        files = [f"data/{d.path}" for f in frags for d in f.files]
        record_files(self.uri, self.storage, f"{ATTEMPTS_DIR}/{self.job_id}", files)
        return LanceCommitMessage([json.dumps(f.to_json()) for f in frags], sum(f.physical_rows for f in frags))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """On the driver, after every task succeeded: one new dataset version with every task's fragments."""
        from lancelot.dataset import FragmentMetadata, commit
        from lancelot.dataset.commit import CommitConflictError

        if self.skip:
            return
        frags = [FragmentMetadata.from_json(s) for m in _lance_messages(messages) for s in m.fragments]
        committed = {d.path for f in frags for d in f.files}
        if self.read_version is None:
            try:
                commit(self.uri, "create", fragments=frags, schema=self.schema, storage_options=self.storage)
            except CommitConflictError:  # another job created it meanwhile: add to it instead
                if self.mode == "errorifexists":
                    raise
                if self.mode == "ignore":
                    self._cleanup(set())
                    return
                self.read_version = dataset_version(self.uri, self.storage)
                self._commit_existing(frags)
        else:
            self._commit_existing(frags)
        self._cleanup(committed)

    def _commit_existing(self, frags: list[FragmentMetadata]) -> None:
        from lancelot.dataset import commit

        op = "overwrite" if self.mode == "overwrite" else "append"
        commit(
            self.uri,
            op,
            fragments=frags,
            schema=self.schema,
            read_version=self.read_version,
            storage_options=self.storage,
        )

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """The job failed: no version is made; every data file its attempts wrote is removed."""
        store = self._store()
        for m in _lance_messages(messages):
            for s in m.fragments:
                from lancelot.dataset import FragmentMetadata

                for d in FragmentMetadata.from_json(s).files:
                    store.delete(f"data/{d.path}")
        self._cleanup(set())

    def _cleanup(self, committed: set[str]) -> None:
        """End the job: the data files of its attempts that are not in ``committed`` go, then the records."""
        end_attempts(
            self._store(),
            f"{ATTEMPTS_DIR}/{self.job_id}",
            lambda raw: [f for f in json.loads(raw) if f.removeprefix("data/") not in committed],
        )


def nulls_tightened(ours: pa.Schema, aligned: pa.Schema) -> bool:
    """Whether ``aligned`` declares non-null a field (at any depth) that ``ours`` lets hold nulls."""

    def walk(a: pa.DataType, b: pa.DataType) -> bool:
        if pa.types.is_struct(a) and pa.types.is_struct(b):
            return any(fa.nullable and not fb.nullable or walk(fa.type, fb.type) for fa, fb in zip(a, b))
        if hasattr(a, "value_field") and hasattr(b, "value_field"):
            fa, fb = a.value_field, b.value_field
            return fa.nullable and not fb.nullable or walk(fa.type, fb.type)
        return False

    return any(fa.nullable and not fb.nullable or walk(fa.type, fb.type) for fa, fb in zip(ours, aligned))


def nulls_checked(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch``, after checking it holds no null where ``schema`` declares a field non-null."""
    check_not_null(batch, schema)
    return batch
