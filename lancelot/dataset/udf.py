"""User functions that compute new columns (pylance's ``lance.batch_udf`` / ``BatchUDF``), with pylance's checkpointing:
a long backfill that dies resumes without recomputing what it finished.

The checkpoint is a SQLite file in pylance's layout (table ``batches``: fragment id, batch index, pickled result batch;
table ``fragments``: fragment id, the fragment's JSON with its new data file), so a backfill pylance started can be
resumed by lancelot and the other way round. A fragment whose new file was written is taken from the checkpoint as it
is; within an unfinished fragment, batches already computed are not computed again. The file is removed once the new
version is committed."""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa

from lancelot.format.pb import table_pb2


class BatchUDF:
    """A function from a batch of the dataset's rows to a batch of new columns (pylance's ``BatchUDF``).

    Args:
        func: The function; it receives a ``RecordBatch`` and returns a ``RecordBatch`` (or pandas DataFrame) with as
            many rows.
        output_schema: The schema of what it returns (default: from its result on the first row).
        checkpoint_file: A SQLite file to keep finished work in, so that a failed ``add_columns`` called again with the
            same file resumes.
    """

    def __init__(
        self,
        func: Callable[[pa.RecordBatch], Any],
        output_schema: pa.Schema | None = None,
        checkpoint_file: str | Path | None = None,
    ) -> None:
        self.func = func
        self.output_schema = output_schema
        self.cache = BatchUDFCheckpoint(checkpoint_file) if checkpoint_file is not None else None

    def __call__(self, batch: pa.RecordBatch) -> Any:
        return self.func(batch)


def batch_udf(
    output_schema: pa.Schema | None = None, checkpoint_file: str | Path | None = None
) -> Callable[[Callable[[pa.RecordBatch], Any]], BatchUDF]:
    """Decorator making a ``BatchUDF`` for ``LanceDataset.add_columns`` (pylance's ``lance.batch_udf``).

    Args:
        output_schema: The schema of the function's results (default: inferred from its first result).
        checkpoint_file: Where to keep results not yet committed, to resume after a failure.

    Returns:
        The decorator.

    Examples:
        >>> @lancelot.batch_udf(checkpoint_file="backfill.sqlite")
        ... def double(batch):
        ...     return pa.record_batch([pc.multiply(batch["id"], 2)], ["id2"])
        >>> ds.add_columns(double, read_columns=["id"])
    """

    def inner(func: Callable[[pa.RecordBatch], Any]) -> BatchUDF:
        return BatchUDF(func, output_schema, checkpoint_file)

    return inner


class BatchUDFCheckpoint:
    """Finished batches and fragments of one backfill, in a SQLite file (pylance's layout)."""

    class BatchInfo(NamedTuple):
        fragment_id: int
        batch_index: int

    def __init__(self, path: str | Path) -> None:
        self.path = path
        with closing(sqlite3.connect(path)) as conn:  # one connection per call: calls come from threads
            conn.execute("CREATE TABLE IF NOT EXISTS batches (fragment_id INT, batch_index INT, result BLOB)")
            conn.execute("CREATE TABLE IF NOT EXISTS fragments (fragment_id INT, data BLOB)")
            conn.commit()

    def cleanup(self) -> None:
        os.remove(self.path)

    def get_batch(self, info: BatchInfo) -> pa.RecordBatch | None:
        with closing(sqlite3.connect(self.path)) as conn:
            row = conn.execute(
                "SELECT result FROM batches WHERE fragment_id = ? AND batch_index = ?",
                (info.fragment_id, info.batch_index),
            ).fetchone()
        out: pa.RecordBatch | None = pickle.loads(row[0]) if row is not None else None  # noqa: S301 - our own file
        return out

    def insert_batch(self, info: BatchInfo, batch: pa.RecordBatch) -> None:
        with closing(sqlite3.connect(self.path)) as conn:
            conn.execute(
                "INSERT INTO batches (fragment_id, batch_index, result) VALUES (?, ?, ?)",
                (info.fragment_id, info.batch_index, pickle.dumps(batch)),
            )
            conn.commit()

    def get_fragment(self, fragment_id: int) -> str | None:
        """The JSON of a fragment whose new data file is written."""
        with closing(sqlite3.connect(self.path)) as conn:
            row = conn.execute("SELECT data FROM fragments WHERE fragment_id = ?", (fragment_id,)).fetchone()
        return None if row is None else str(row[0])

    def insert_fragment(self, fragment_id: int, fragment: str) -> None:
        """Record a finished fragment (its batches are no longer needed)."""
        with closing(sqlite3.connect(self.path)) as conn:
            conn.execute("INSERT INTO fragments (fragment_id, data) VALUES (?, ?)", (fragment_id, fragment))
            conn.execute("DELETE FROM batches WHERE fragment_id = ?", (fragment_id,))
            conn.commit()


def fragment_json(frag: table_pb2.DataFragment) -> str:
    """A fragment as pylance's checkpoint stores it (its serde JSON of ``Fragment``)."""
    files = [
        {
            "path": d.path,
            "fields": [int(x) for x in d.fields],
            "column_indices": [int(x) for x in d.column_indices],
            "file_major_version": int(d.file_major_version),
            "file_minor_version": int(d.file_minor_version),
            "file_size_bytes": int(d.file_size_bytes) or None,
            "base_id": int(d.base_id) if d.HasField("base_id") else None,
        }
        for d in frag.files
    ]
    out: dict[str, Any] = {"id": int(frag.id), "files": files}
    if frag.HasField("deletion_file"):
        df = frag.deletion_file
        out["deletion_file"] = {
            "read_version": int(df.read_version),
            "id": int(df.id),
            "file_type": "bitmap" if df.file_type == table_pb2.DeletionFile.BITMAP else "array",
            "num_deleted_rows": int(df.num_deleted_rows),
            "base_id": int(df.base_id) if df.HasField("base_id") else None,
        }
    if frag.WhichOneof("row_id_sequence") == "inline_row_ids":
        out["row_id_meta"] = {"Inline": list(frag.inline_row_ids)}
    for name, key in (
        ("inline_created_at_versions", "created_at_version_meta"),
        ("inline_last_updated_at_versions", "last_updated_at_version_meta"),
    ):
        if frag.HasField(name):
            out[key] = {"inline": list(getattr(frag, name))}
    out["physical_rows"] = int(frag.physical_rows)
    return json.dumps(out, separators=(",", ":"))


def fragment_of_json(text: str) -> table_pb2.DataFragment:
    """What ``fragment_json`` (or pylance) stored, as a message."""
    from lancelot.dataset.lance_operation import as_fragment_metadata

    return as_fragment_metadata(json.loads(text)).to_pb()
