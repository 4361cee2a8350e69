"""Deletion files: the rows of a fragment that are deleted (table format, "Deletion files").

``_deletions/{fragment_id}-{read_version}-{id}.{arrow|bin}``.  The Arrow form is an IPC file (zstd) holding one batch of
one non-null UInt32 column ``row_id`` of row positions; the ``.bin`` form is a portable roaring bitmap.  pylance writes
the Arrow form up to 5000 deleted rows of a fragment and the bitmap form above that; so does lancelot."""

from __future__ import annotations

import array
import random
import struct
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lancelot.dataset.open_files import kept
from lancelot.errors import CorruptFileError, LanceError, LanceFileNotFoundError
from lancelot.format.pb import table_pb2, transaction_pb2

if TYPE_CHECKING:
    from lancelot.dataset.commit import Builder
    from lancelot.dataset.manifest import ManifestFile
    from lancelot.dataset.store import ObjectStore

DELETIONS_DIR = "_deletions"
#: more deleted rows than this in a fragment: the roaring-bitmap form (as pylance)
BITMAP_THRESHOLD = 5000
_SCHEMA = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
#: deletion files are a few hundred bytes: decompressed on the caller's thread (handing one tiny
#: buffer to Arrow's thread pool costs more than decoding it, and a scan reads one per fragment)
_IPC_OPTIONS = pa.ipc.IpcReadOptions(use_threads=False)
_SUFFIX = {table_pb2.DeletionFile.ARROW_ARRAY: "arrow", table_pb2.DeletionFile.BITMAP: "bin"}
#: deleted positions kept across dataset objects, as data files are kept open (dataset/open_files.py):
#: a deletion file's name carries a random id and is never reused, so its content never changes
CACHED_POSITIONS = 1 << 21
_CACHE: OrderedDict[tuple[str, str, int], np.ndarray] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_cached = 0  # positions held by _CACHE


def cached_deletions() -> dict[tuple[str, str], np.ndarray]:
    """The deleted positions kept now, by (store uri, deletion file path) (a session's accounting).

    Returns:
        A new dict (the cache goes on changing).
    """
    with _CACHE_LOCK:
        return {k[:2]: a for k, a in _CACHE.items()}


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
            pos = parse_stream(data, physical_rows)  # (the quicker read; None: read again as a file)
            if pos is not None:
                return pos
            with pa.ipc.open_file(pa.py_buffer(data), options=_IPC_OPTIONS) as r:
                if len(r.schema) != 1 or not pa.types.is_integer(r.schema.field(0).type):
                    raise CorruptFileError(f"{where}: deletion file schema {r.schema} is not one integer column")
                batches = [r.get_batch(i) for i in range(r.num_record_batches)]
                for b in batches:
                    b.validate(full=True)
                arrays = [b.column(0) for b in batches]
            col = pa.chunked_array(arrays, type=r.schema.field(0).type) if arrays else pa.chunked_array([], pa.uint32())
            pos = _positions(col, where)
        elif file_type == table_pb2.DeletionFile.BITMAP:
            from pyroaring import BitMap

            pos = np.asarray(BitMap.deserialize(data).to_array(), dtype=np.int64)
        else:
            raise CorruptFileError(f"{where}: unknown deletion file type {file_type}")
    except LanceError:
        raise
    except Exception as e:  # noqa: BLE001 - pyarrow / pyroaring raise many kinds on bad bytes
        raise CorruptFileError(f"{where}: deletion file does not parse: {type(e).__name__}: {e}") from None
    return _inside(pos, physical_rows, where)


def _positions(col: pa.Array | pa.ChunkedArray, where: str) -> np.ndarray:
    """The column's positions, sorted and unique (pylance writes them sorted: no sort then)."""
    if col.null_count:
        raise CorruptFileError(f"{where}: deletion file holds nulls")
    pos: np.ndarray = col.to_numpy().astype(np.int64)
    if len(pos) > 1 and not (pos[1:] > pos[:-1]).all():
        pos = np.unique(pos)
    return pos


def _inside(pos: np.ndarray, physical_rows: int, where: str) -> np.ndarray:
    if len(pos) and (pos[0] < 0 or pos[-1] >= physical_rows):
        raise CorruptFileError(
            f"{where}: deletion file marks row {int(pos[-1] if pos[-1] >= physical_rows else pos[0])} "
            f"but the fragment has {physical_rows} rows"
        )
    return pos.astype(np.uint32)


_CONTINUATION = b"\xff\xff\xff\xff"
_EOS = _CONTINUATION + bytes(4)
_I32, _U16, _I64 = struct.Struct("<i"), struct.Struct("<H"), struct.Struct("<q")
#: the message metadata (its numbers masked) of deletion files pyarrow read in this process: a file of the same
#: layout is read without pyarrow (``_layout``), its numbers checked as pyarrow checks them
_LAYOUTS: set[bytes] = set()


def _fb(data: bytes, table: int, i: int) -> int:
    """The position of field ``i`` of the flatbuffer table at ``table`` (0: absent)."""
    vt = table - _I32.unpack_from(data, table)[0]
    if vt < 0 or 4 + 2 * i >= _U16.unpack_from(data, vt)[0]:
        return 0
    off: int = _U16.unpack_from(data, vt + 4 + 2 * i)[0]
    return table + off if off else 0


def _ref(data: bytes, at: int) -> int:
    """Where the flatbuffer offset at ``at`` points."""
    return at + int(_I32.unpack_from(data, at)[0])


def _layout(data: bytes, s: int) -> tuple[bytes, np.ndarray] | None:
    """(layout, values) of an IPC stream at ``s`` of a schema message, one batch of one column without nulls whose
    values are stored uncompressed, and the end marker: the layout is the messages' bytes with the batch's numbers
    (rows, buffer positions, body length) masked; None for any other stream."""
    try:
        b = s + 8 + _I32.unpack_from(data, s + 4)[0]  # the batch message (a schema message has no body)
        size = _I32.unpack_from(data, b + 4)[0]
        if b <= s + 8 or size <= 0 or data[b : b + 4] != _CONTINUATION:
            return None
        root = _ref(data, b + 8)
        header, blen_at = _fb(data, root, 2), _fb(data, root, 3)
        batch = _ref(data, header) if header else 0
        n_at, nodes, bufs = (_fb(data, batch, k) for k in range(3)) if batch else (0, 0, 0)
        if not (blen_at and n_at and nodes and bufs):
            return None
        nodes, bufs = _ref(data, nodes), _ref(data, bufs)
        if _I32.unpack_from(data, nodes)[0] != 1 or _I32.unpack_from(data, bufs)[0] != 2:
            return None
        body, blen, n = b + 8 + size, _I64.unpack_from(data, blen_at)[0], _I64.unpack_from(data, n_at)[0]
        rows, nulls = struct.unpack_from("<2q", data, nodes + 4)
        o0, l0, o1, l1 = struct.unpack_from("<4q", data, bufs + 4)
        if n < 0 or rows != n or nulls or min(o0, l0, o1, l1, blen) < 0 or o0 + l0 > blen or o1 + l1 > blen:
            return None
        if o0 % 8 or o1 % 8:  # (Arrow's buffers start 8-byte aligned)
            return None
        if _fb(data, batch, 3):  # compressed buffers: each prefixed by its length, -1 when stored as it is
            if l1 < 8 or _I64.unpack_from(data, body + o1)[0] != -1:
                return None
            o1, l1 = o1 + 8, l1 - 8
        if l1 < 4 * n or data[body + blen : body + blen + 8] != _EOS:
            return None
        masked = bytearray(data[s:body])
        for at, width in ((blen_at, 8), (n_at, 8), (nodes + 4, 16), (bufs + 4, 32)):
            masked[at - s : at - s + width] = bytes(width)
        return bytes(masked), np.frombuffer(data, np.uint32, n, body + o1)
    except (struct.error, ValueError):
        return None


def parse_stream(data: bytes, physical_rows: int) -> np.ndarray | None:
    """``parse_deletions`` of an Arrow deletion file read as the IPC stream the file holds after its magic (on the
    caller's thread: no hand-off to Arrow's pool, no footer parsed).  None for any other layout or any damage:
    ``parse_deletions`` reads those, and reports damage with the fragment's name."""
    s = 8
    while data[s : s + 4] == b"\0\0\0\0" and s < 128:  # the magic's padding (to 8 or 64 bytes)
        s += 8
    if data[s : s + 4] != _CONTINUATION:
        return None
    quick = _layout(data, s)
    if quick is not None and quick[0] in _LAYOUTS:  # a layout pyarrow read before: its values as they are
        pos = quick[1]
        if len(pos) > 1 and not (pos[1:] > pos[:-1]).all():
            pos = np.unique(pos)
        if not len(pos) or int(pos[-1]) < physical_rows:
            copied: np.ndarray = pos.copy()
            return copied
    try:
        t = pa.ipc.open_stream(pa.py_buffer(data).slice(s), options=_IPC_OPTIONS).read_all()
        if t.num_columns != 1 or not pa.types.is_integer(t.schema.field(0).type):
            return None
        t.validate(full=True)
        out = _inside(_positions(t.column(0), ""), physical_rows, "")
    except Exception:  # noqa: BLE001 - parse_deletions reports damage
        return None
    if quick is not None and t.schema.field(0).type == pa.uint32() and len(_LAYOUTS) < 64:
        if np.array_equal(np.unique(quick[1]), out):
            _LAYOUTS.add(quick[0])
    return out


def serialize_deletions(positions: np.ndarray) -> tuple[table_pb2.DeletionFile.DeletionFileType, bytes]:
    """(file_type, bytes) for sorted unique deleted positions, in the form pylance would pick."""
    positions = np.asarray(positions, dtype=np.uint32)
    if len(positions) > BITMAP_THRESHOLD:
        from pyroaring import BitMap

        bm = BitMap(array.array("I", positions.tobytes()))  # (pyroaring adds an array.array at once, numpy per value)
        bm.run_optimize()
        return table_pb2.DeletionFile.BITMAP, bm.serialize()
    sink = pa.BufferOutputStream()
    opts = pa.ipc.IpcWriteOptions(compression="zstd", use_threads=False)  # a few KiB: no hand-off to Arrow's pool
    with pa.ipc.new_file(sink, _SCHEMA, options=opts) as w:
        w.write_batch(pa.record_batch([pa.array(positions, pa.uint32())], schema=_SCHEMA))
    return table_pb2.DeletionFile.ARROW_ARRAY, sink.getvalue().to_pybytes()


def new_deletion_file(
    file_type: table_pb2.DeletionFile.DeletionFileType, read_version: int, count: int
) -> table_pb2.DeletionFile:
    return table_pb2.DeletionFile(
        file_type=file_type, read_version=read_version, id=random.getrandbits(64), num_deleted_rows=count
    )


def rebase_deletions(
    store: ObjectStore,
    uri: str,
    txn: transaction_pb2.Transaction,
    others: list[tuple[transaction_pb2.Transaction, str]],
    read: ManifestFile,
    latest: ManifestFile,
    build: Builder,
) -> tuple[transaction_pb2.Transaction, Builder]:
    """A delete or update (``merge_insert`` too) rebuilt on top of ``latest`` after ``others`` (concurrent deletes and
    updates, each with the reason it touches this one) changed the deletion files of fragments it changes too, as
    pylance rebases them: its new fragments are committed as they are (its rows were found at ``read``, its read
    version), and each fragment both changed gets the rows the other side deleted and ours (a new deletion file; a
    fragment left with no row is removed).  Called only once every version in between was checked against ``txn`` as
    it was: no other commit (a compaction) rewrote these fragments.

    A row both deleted (or updated), a fragment the other side removed, or changed data files, is a retryable conflict
    (between deletes too, as pylance: the count of rows deleted is then the re-run's): the operation must find its rows
    again on the latest version.  Returns the rebased transaction (read version = ``latest``'s) and its builder.
    """
    from lancelot.dataset.manifest import apply_feature_flags
    from lancelot.dataset.operation import replace_fragments
    from lancelot.dataset.transaction import operation
    from lancelot.errors import RetryableCommitConflictError

    version, reason = int(latest.manifest.version), others[0][1]
    out = transaction_pb2.Transaction()
    out.CopyFrom(txn)
    out.read_version = version
    body = out.delete if operation(txn) == "delete" else out.update
    removed = body.deleted_fragment_ids if operation(txn) == "delete" else body.removed_fragment_ids
    then = {int(f.id): f for f in read.manifest.fragments}
    now = {int(f.id): f for f in latest.manifest.fragments}
    patched: dict[int, table_pb2.DeletionFile] = {}
    dropped: set[int] = set()  # fragments ours updates that end with no row
    mine_frags = [(int(f.id), f, False) for f in body.updated_fragments] + [(int(i), None, True) for i in removed]
    for fid, f, whole in mine_frags:
        init, cur = then.get(fid), now.get(fid)
        if init is None or cur is None:
            raise RetryableCommitConflictError(f"dataset {uri!r}: {reason}, which removed fragment {fid}; retry")
        rows = int(init.physical_rows)
        if [d.SerializeToString() for d in cur.files] != [d.SerializeToString() for d in init.files]:
            raise RetryableCommitConflictError(f"dataset {uri!r}: {reason}, and fragment {fid}'s data files changed")
        if cur.deletion_file.SerializeToString() == init.deletion_file.SerializeToString():
            continue  # (another fragment of ours is what the other side changed)
        where = f"dataset {uri!r} version {version} fragment {fid}"
        before = (
            read_deletions(store, fid, init.deletion_file, rows, where)
            if init.HasField("deletion_file")
            else np.empty(0)
        )
        theirs = read_deletions(store, fid, cur.deletion_file, rows, where)
        mine = np.arange(rows) if f is None else read_deletions(store, fid, f.deletion_file, rows, where)
        ours = np.setdiff1d(mine, before)
        if len(np.intersect1d(ours, theirs)):
            raise RetryableCommitConflictError(
                f"dataset {uri!r}: {reason}, and both changed rows {np.intersect1d(ours, theirs)[:5].tolist()} of "
                f"fragment {fid}; the rows it changed must be found again: re-read the dataset and retry"
            )
        merged = np.union1d(theirs, ours)
        if whole or len(merged) == len(mine):
            continue  # (the other side's rows are among ours)
        if len(merged) >= rows:
            dropped.add(fid)
            continue
        ftype, data = serialize_deletions(merged)
        patched[fid] = new_deletion_file(ftype, version, len(merged))
        store.put(deletion_path(fid, patched[fid]), data)
    left = [f for f in body.updated_fragments if int(f.id) not in dropped]
    del body.updated_fragments[:]
    body.updated_fragments.extend(left)
    for f in body.updated_fragments:
        if int(f.id) in patched:
            f.deletion_file.CopyFrom(patched[int(f.id)])
    removed.extend(sorted(dropped))

    def rebased(base: ManifestFile | None, v: int) -> tuple[table_pb2.Manifest, bytes | None]:
        m, index = build(base, v)
        stable = replace_fragments(m, [f for f in body.updated_fragments if int(f.id) in patched], sorted(dropped))
        if dropped:
            apply_feature_flags(m, stable)
        return m, index

    return out, rebased


def read_deletions(
    store: ObjectStore,
    fragment_id: int,
    d: table_pb2.DeletionFile,
    physical_rows: int,
    where: str,
    path: str | None = None,
    *,
    cached: bool = False,
) -> np.ndarray:
    """The deleted positions of a fragment's deletion file (at ``path`` in ``store``, by default ``deletion_path``);
    ``where`` names the dataset, version and fragment.  A missing file is a LanceFileNotFoundError naming them and the
    path, as a missing data file is.  With ``cached``, a file read before by this process is not read again (the array
    is then read-only)."""
    global _cached
    path = path or deletion_path(fragment_id, d)
    key = (store.uri, path, physical_rows)
    hit = kept(_CACHE, key, _CACHE_LOCK) if cached else None
    if hit is not None:
        return hit
    try:
        data = store.read(path)
    except FileNotFoundError:
        raise LanceFileNotFoundError(f"{where}: deletion file {path} is missing", path=store.url(path)) from None
    pos = parse_deletions(data, d.file_type, physical_rows, f"{where}: {path}")
    if cached and len(pos) <= CACHED_POSITIONS // 8:
        pos.setflags(write=False)
        with _CACHE_LOCK:
            if key not in _CACHE:
                _CACHE[key], _cached = pos, _cached + len(pos)
            while _cached > CACHED_POSITIONS:
                _cached -= len(_CACHE.popitem(last=False)[1])
    return pos
