"""Deletion files: the rows of a fragment that are deleted (table format, "Deletion files").

``_deletions/{fragment_id}-{read_version}-{id}.{arrow|bin}``.  The Arrow form is an IPC file
(zstd) holding one batch of one non-null UInt32 column ``row_id`` of row positions; the
``.bin`` form is a portable roaring bitmap.  pylance writes the Arrow form up to 5000
deleted rows of a fragment and the bitmap form above that; so does lancelot.
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa

from lancelot.errors import CorruptFileError, LanceError
from lancelot.format.pb import table_pb2

DELETIONS_DIR = "_deletions"
#: more deleted rows than this in a fragment: the roaring-bitmap form (as pylance)
BITMAP_THRESHOLD = 5000
_SCHEMA = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
_SUFFIX = {table_pb2.DeletionFile.ARROW_ARRAY: "arrow", table_pb2.DeletionFile.BITMAP: "bin"}


def deletion_path(fragment_id: int, d: table_pb2.DeletionFile) -> str:
    """The deletion file's path relative to the dataset root."""
    suffix = _SUFFIX.get(d.file_type)
    if suffix is None:
        raise CorruptFileError(f"fragment {fragment_id}: unknown deletion file type {d.file_type}")
    return f"{DELETIONS_DIR}/{fragment_id}-{d.read_version}-{d.id}.{suffix}"


def parse_deletions(data: bytes, file_type: int, physical_rows: int, where: str) -> np.ndarray:
    """Sorted unique uint32 positions of deleted rows; each must lie inside the fragment."""
    try:
        if file_type == table_pb2.DeletionFile.ARROW_ARRAY:
            with pa.ipc.open_file(pa.py_buffer(data)) as r:
                if len(r.schema) != 1 or not pa.types.is_integer(r.schema.field(0).type):
                    raise CorruptFileError(f"{where}: deletion file schema {r.schema} is not one integer column")
                batches = [r.get_batch(i) for i in range(r.num_record_batches)]
                for b in batches:
                    b.validate(full=True)
                arrays = [b.column(0) for b in batches]
            col = pa.chunked_array(arrays, type=r.schema.field(0).type) if arrays else pa.chunked_array([], pa.uint32())
            if col.null_count:
                raise CorruptFileError(f"{where}: deletion file holds nulls")
            pos = np.unique(col.to_numpy().astype(np.int64))
        elif file_type == table_pb2.DeletionFile.BITMAP:
            from pyroaring import BitMap

            pos = np.asarray(BitMap.deserialize(data).to_array(), dtype=np.int64)
        else:
            raise CorruptFileError(f"{where}: unknown deletion file type {file_type}")
    except LanceError:
        raise
    except Exception as e:  # noqa: BLE001 - pyarrow / pyroaring raise many kinds on bad bytes
        raise CorruptFileError(f"{where}: deletion file does not parse: {type(e).__name__}: {e}") from None
    if len(pos) and (pos[0] < 0 or pos[-1] >= physical_rows):
        raise CorruptFileError(
            f"{where}: deletion file marks row {int(pos[-1] if pos[-1] >= physical_rows else pos[0])} "
            f"but the fragment has {physical_rows} rows"
        )
    return pos.astype(np.uint32)


def serialize_deletions(positions: np.ndarray) -> tuple[table_pb2.DeletionFile.DeletionFileType, bytes]:
    """(file_type, bytes) for sorted unique deleted positions, in the form pylance would pick."""
    positions = np.asarray(positions, dtype=np.uint32)
    if len(positions) > BITMAP_THRESHOLD:
        from pyroaring import BitMap

        bm = BitMap(positions)
        bm.run_optimize()
        return table_pb2.DeletionFile.BITMAP, bm.serialize()
    sink = pa.BufferOutputStream()
    opts = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_file(sink, _SCHEMA, options=opts) as w:
        w.write_batch(pa.record_batch([pa.array(positions, pa.uint32())], schema=_SCHEMA))
    return table_pb2.DeletionFile.ARROW_ARRAY, sink.getvalue().to_pybytes()


def new_deletion_file(
    file_type: table_pb2.DeletionFile.DeletionFileType, read_version: int, count: int
) -> table_pb2.DeletionFile:
    return table_pb2.DeletionFile(
        file_type=file_type, read_version=read_version, id=random.getrandbits(64), num_deleted_rows=count
    )
