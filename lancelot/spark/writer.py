"""The write side of the "lance" data source: one file per task, published by the driver's commit.

Each task writes its rows as one Lance file into the job's staging directory
``<dir>/_lancelot_staging/<job id>/`` (hidden from readers by its ``_`` prefix).
The driver's ``commit`` publishes them with one atomic switch (lancelot/spark/commit.py:
renames into ``<dir>``, then the job's record renamed to committed, then, for
overwrite, the old files deleted); ``abort`` removes whatever the job staged or
renamed, so a failed job leaves no visible output.

Spark accepts only the append and overwrite modes for Python data sources;
``errorifexists`` and ``ignore`` are available through the ``save_mode`` option
or ``lancelot.spark.save``; like Spark's file sources, they look at whether the
output path exists.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from lancelot.errors import LanceError
from lancelot.spark.commit import (
    STAGING,
    abort_job,
    commit_job,
    directory_lock,
    finish_committed,
    job_dir,
    remove_staging_root,
)
from lancelot.spark.files import list_data_files, local_path
from lancelot.spark.types import spark_arrow_schema, to_spark_batch

__all__ = ["STAGING", "SAVE_MODES", "LanceArrowWriter", "LanceCommitMessage", "save_mode", "path_exists"]
SAVE_MODES = ("append", "overwrite", "errorifexists", "ignore")


@dataclass
class LanceCommitMessage(WriterCommitMessage):
    """What one task wrote: (staged path, final file name, rows) per file."""

    files: list[tuple[str, str, int]] = field(default_factory=list)


def save_mode(options: Mapping[str, str], overwrite: bool) -> str:
    """The effective save mode: Spark's (append/overwrite), refined by the ``save_mode`` option."""
    mode = (options.get("save_mode") or ("overwrite" if overwrite else "append")).lower().replace("_", "")
    aliases = {"error": "errorifexists", "default": "errorifexists"}
    mode = aliases.get(mode, mode)
    if mode not in SAVE_MODES:
        raise LanceError(f"unknown save_mode {options.get('save_mode')!r} (use one of {SAVE_MODES})")
    if overwrite and mode != "overwrite":
        raise LanceError(f'save_mode {mode!r} contradicts Spark\'s mode("overwrite")')
    return mode


def path_exists(path: str) -> bool:
    """Whether the output path exists (Spark's file sources decide errorifexists and ignore on this alone)."""
    return os.path.lexists(path)


class LanceArrowWriter(DataSourceArrowWriter):
    """Writes each task's Arrow batches as one Lance file and publishes them all at commit."""

    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool) -> None:
        raw = options.get("path")
        if not raw:
            raise LanceError('the "lance" data source needs a path: df.write.format("lance").save(path)')
        self.directory = os.path.abspath(local_path(raw))
        if os.path.isfile(self.directory):
            raise LanceError("the output path is a file; the lance data source writes a directory",
                             path=self.directory)
        self.mode = save_mode(options, overwrite)
        self.version = options.get("version") or None
        page = options.get("max_page_bytes")
        self.max_page_bytes = int(page) if page else None
        self.schema = spark_arrow_schema(schema)
        self.job_id = uuid.uuid4().hex
        self.skip = False
        exists = path_exists(self.directory)
        if exists and self.mode == "errorifexists":
            raise LanceError("the output path already exists (save mode errorifexists)", path=self.directory)
        if exists and self.mode == "ignore":
            self.skip = True
        if not self.skip:
            self._check_writable()

    def _check_writable(self) -> None:
        """Fail on the driver, before any task runs, if the version or options are unusable."""
        from lancelot.writer import resolve_version

        resolve_version(self.version)
        if self.max_page_bytes is not None and self.max_page_bytes <= 0:
            raise LanceError(f"max_page_bytes must be positive, not {self.max_page_bytes}")

    @property
    def staging(self) -> str:
        return job_dir(self.directory, self.job_id)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        from pyspark import TaskContext

        from lancelot import LanceWriter

        if self.skip:
            return LanceCommitMessage()
        ctx = TaskContext.get()
        if ctx is not None:
            part, attempt = ctx.partitionId(), ctx.attemptNumber()
            name = f"part-{part:05d}-{self.job_id}.lance"
        else:  # called outside a Spark task (tests, tools): any unique name
            part, attempt = 0, 0
            name = f"part-{uuid.uuid4().hex[:8]}-{self.job_id}.lance"
        staged = os.path.join(self.staging, f"{name}.attempt{attempt}")
        writer = None
        try:
            for batch in iterator:
                if batch.num_rows == 0:
                    continue
                if writer is None:
                    os.makedirs(self.staging, exist_ok=True)
                    writer = LanceWriter(staged, self.schema, version=self.version,
                                         max_page_bytes=self.max_page_bytes)
                writer.write(to_spark_batch(batch, self.schema))
            if writer is None:
                return LanceCommitMessage()
            writer.close()
        except BaseException:
            if writer is not None:
                writer.abort()
            raise
        return LanceCommitMessage([(staged, name, writer.num_rows)])

    def commit(self, messages: list[LanceCommitMessage | None]) -> None:
        """Publish every staged file in one atomic switch; for overwrite, the files there before go."""
        if self.skip:
            return
        os.makedirs(self.directory, exist_ok=True)
        staged = [(path, name) for m in messages if m is not None for path, name, _ in m.files]
        with directory_lock(self.directory):
            finish_committed(self.directory)
            visible = [os.path.basename(p) for p in list_data_files(self.directory)]
            if not staged and (self.mode == "overwrite" or not visible):
                staged = [self._write_empty_file()]
            commit_job(self.directory, self.job_id, staged, visible if self.mode == "overwrite" else [])
        remove_staging_root(self.directory)

    def _write_empty_file(self) -> tuple[str, str]:
        """An empty result still leaves a file, so the directory keeps its schema (as Spark's Parquet does)."""
        from lancelot import LanceWriter

        name = f"part-00000-{self.job_id}.lance"
        path = os.path.join(self.staging, name)
        os.makedirs(self.staging, exist_ok=True)
        LanceWriter(path, self.schema, version=self.version, max_page_bytes=self.max_page_bytes).close()
        return path, name

    def abort(self, messages: list[LanceCommitMessage | None]) -> None:
        """Remove everything this job staged (or renamed, if its commit failed midway); nothing else changes."""
        names = [name for m in messages if m is not None for _, name, _ in m.files]
        if os.path.isdir(self.directory):
            with directory_lock(self.directory):
                abort_job(self.directory, self.job_id, names)
            remove_staging_root(self.directory)
