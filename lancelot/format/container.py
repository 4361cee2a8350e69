"""Reading and writing the Lance v2 container (seeds 000/002: "File Layout").

::

    data buffers | column metadatas | CMO table | GBO table | 40-byte footer

The footer holds three u64 offsets (column metadata start, column-metadata
offset table, global-buffer offset table), u32 counts of global buffers and
columns, u16 major/minor version and the magic ``LANC``.  Offset tables are
(u64 position, u64 size) pairs.  Data and global buffers are 64-byte aligned when we write
(pylance asserts it at 2.1+); the column metadata and the offset tables follow the last global
buffer unpadded (readers allow padding there, and need none: it only matters for direct I/O).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from google.protobuf import any_pb2
from google.protobuf.message import Message

from lancelot.errors import CorruptFileError, NotALanceFileError, TruncatedFileError
from lancelot.format.pb import file2_pb2
from lancelot.io.sink import BackgroundWriter, LocalTarget, open_target
from lancelot.io.source import ByteSource
from lancelot.versions import FileVersion, from_disk, parse

_M = TypeVar("_M", bound=Message)
_R = TypeVar("_R")

MAGIC = b"LANC"
FOOTER_SIZE = 40
ALIGNMENT = 64
_FOOTER = struct.Struct("<QQQIIHH4s")
#: how much of the file's tail to read on open: usually all the metadata
TAIL_READ = 64 * 1024
#: writes smaller than this are gathered before they reach the file's writer thread (``ContainerWriter.write_buffers``)
COALESCE_BYTES = 64 * 1024
_ZEROS = bytes(ALIGNMENT)
#: parsed metadata regions (column metadata, offset tables, footer) by (file size, their bytes): the
#: files of a dataset written alike repeat theirs; their messages are shared read-only
MAX_REGIONS = 256
_REGIONS: dict[tuple[int, bytes], tuple[list[file2_pb2.ColumnMetadata], list[tuple[int, int]], bytes | None]] = {}


@dataclass
class FileMetadata:
    """Everything in a file's tail: version, column metadata, global buffer positions."""

    path: str
    file_size: int
    major: int
    minor: int
    columns: list[file2_pb2.ColumnMetadata]
    global_buffers: list[tuple[int, int]]
    #: the bytes of global buffer 0 (the schema) when the tail read on open held them, else None
    schema_bytes: bytes | None = field(default=None, repr=False, compare=False)
    version: FileVersion = field(init=False)

    def __post_init__(self) -> None:
        self.version = from_disk(self.major, self.minor, self.path)


def _check_range(path: str, what: str, off: int, size: int, limit: int) -> None:
    if off < 0 or size < 0 or off + size > limit:
        raise CorruptFileError(f"{what} [{off}, {off + size}) lies outside the {limit}-byte file", path=path)


def _truncated_size(tail: bytes, size: int) -> int | None:
    """The full size of a file whose end was cut inside its footer, or None.

    A cut of k <= 16 bytes leaves the footer's three offsets at ``size - 40 + k``; they are
    believed only when they fit the layout (column metadata <= CMO table <= GBO table, the
    tables ending where the footer starts, counts matching the bytes still there).
    """
    for k in range(1, 17):
        f = size - FOOTER_SIZE + k
        if f < 0 or f + 24 > size or len(tail) < size - f:
            continue
        cm, cmo, gbo = struct.unpack_from("<QQQ", tail, len(tail) - (size - f))
        if not (0 < cmo <= gbo < f and cm <= cmo and (f - gbo) % 16 == 0 and (gbo - cmo) % 16 == 0):
            continue
        n_gb = (f - gbo) // 16
        if f + 28 <= size and struct.unpack_from("<I", tail, len(tail) - (size - f - 24))[0] != n_gb:
            continue
        if f + 32 <= size and struct.unpack_from("<I", tail, len(tail) - (size - f - 28))[0] != (gbo - cmo) // 16:
            continue
        return f + FOOTER_SIZE
    return None


def read_metadata(src: ByteSource) -> FileMetadata:
    """Parse the footer, offset tables and every column's metadata."""
    path, size = src.path, src.size
    if size < FOOTER_SIZE:
        raise NotALanceFileError(f"file of {size} bytes is too short for a Lance footer", path=path)
    tail_len = min(size, TAIL_READ)
    tail_start = size - tail_len
    tail = src.read(tail_start, tail_len)  # (a view: the tables and messages parse from it uncopied)
    cm_start, cmo_pos, gbo_pos, n_gb, n_cols, major, minor, magic = _FOOTER.unpack_from(tail, tail_len - FOOTER_SIZE)
    if magic != MAGIC:
        expected = _truncated_size(bytes(tail), size)
        if expected is not None:
            raise TruncatedFileError(
                f"the file is truncated: its footer says {expected} bytes, found {size}",
                path=path,
                expected=expected,
                actual=size,
            )
        raise NotALanceFileError(
            f"no Lance footer magic: the file ends in {magic!r}, not {MAGIC!r} (it is truncated or not a Lance file)",
            path=path,
        )
    from_disk(major, minor, path)  # refuses legacy and unknown versions before anything else is read
    meta_end = size - FOOTER_SIZE
    _check_range(path, "column metadata offset table", cmo_pos, n_cols * 16, meta_end)
    _check_range(path, "global buffer offset table", gbo_pos, n_gb * 16, meta_end)
    if cm_start > meta_end:
        raise CorruptFileError(f"column metadata start {cm_start} is past the footer", path=path)
    region_start = min(cm_start, cmo_pos, gbo_pos)
    if region_start < tail_start:
        region: bytes | memoryview = bytes(src.read(region_start, size - region_start))
        base = region_start
    else:
        region, base = tail, tail_start

    def table(pos: int, n: int) -> list[tuple[int, int]]:
        vals = struct.unpack_from(f"<{2 * n}Q", region, pos - base)
        return list(zip(vals[::2], vals[1::2]))

    cmo = table(cmo_pos, n_cols)
    gbo = table(gbo_pos, n_gb)
    for i, (p, s) in enumerate(gbo):
        _check_range(path, f"global buffer {i}", p, s, meta_end)
    if gbo and gbo[0][0] >= base:  # the schema is parsed from the region too: the key holds it
        region_start = min(region_start, gbo[0][0])
    key = (size, bytes(region[region_start - base :]))
    known = _REGIONS.get(key)
    if known is not None:  # the same bytes passed every check below in another file of this size
        return FileMetadata(path, size, major, minor, *known)
    columns = []
    parse = file2_pb2.ColumnMetadata.FromString
    inside = True  # whether every message lies in the region (the key holds all that was parsed)
    for i, (p, s) in enumerate(cmo):
        if p + s > meta_end:  # (the table's u64 values are never negative)
            _check_range(path, f"metadata of column {i}", p, s, meta_end)
        inside = inside and p >= region_start
        raw = region[p - base : p - base + s] if p >= base else src.read(p, s)
        try:
            cm = parse(raw)
        except Exception as e:
            raise CorruptFileError(f"column metadata does not parse: {e}", path=path, column=i) from None
        for page in cm.pages:  # one cheap bound per page; _check_buffers names the bad one
            offsets, sizes = page.buffer_offsets, page.buffer_sizes
            if len(offsets) != len(sizes) or (offsets and max(offsets) + max(sizes) > meta_end):
                _check_buffers(cm, path, i, meta_end)
        offsets = cm.buffer_offsets
        if offsets and max(offsets) + max(cm.buffer_sizes, default=0) > meta_end:
            _check_buffers(cm, path, i, meta_end)
        columns.append(cm)
    schema = None
    if gbo and gbo[0][0] >= base:
        schema = bytes(region[gbo[0][0] - base : gbo[0][0] - base + gbo[0][1]])
    if inside and len(key[1]) <= TAIL_READ:
        if len(_REGIONS) >= MAX_REGIONS:
            _REGIONS.clear()
        _REGIONS[key] = (columns, gbo, schema)
    return FileMetadata(path, size, major, minor, columns, gbo, schema)


def _check_buffers(cm: file2_pb2.ColumnMetadata, path: str, i: int, meta_end: int) -> None:
    """Raise for the first page or column buffer of column ``i`` outside ``[0, meta_end)``."""
    for j, page in enumerate(cm.pages):
        offsets, sizes = page.buffer_offsets, page.buffer_sizes
        if len(offsets) != len(sizes):
            raise CorruptFileError("buffer offsets/sizes differ in count", path=path, column=i, page=j)
        for bo, bs in zip(offsets, sizes):
            if bo + bs > meta_end:
                raise CorruptFileError(
                    f"page buffer [{bo}, {bo + bs}) lies past the data region", path=path, column=i, page=j
                )
    for bo, bs in zip(cm.buffer_offsets, cm.buffer_sizes):
        _check_range(path, "column buffer", bo, bs, meta_end)


def encoding_bytes(
    src: ByteSource, enc: file2_pb2.Encoding, *, column: int | str | None = None, page: int | None = None
) -> bytes | None:
    """The serialized ``Any`` of a direct or deferred (indirect: read from the file) Encoding, or
    None for the ``none`` location."""
    kind = enc.WhichOneof("location")
    if kind is None or kind == "none":
        return None
    if kind == "direct":
        return bytes(enc.direct.encoding)
    loc, ln = enc.indirect.buffer_location, enc.indirect.buffer_length
    if loc < 0 or ln < 0 or loc + ln > src.size:
        raise CorruptFileError(
            f"deferred encoding [{loc}, {loc + ln}) lies outside the {src.size}-byte file",
            path=src.path,
            column=column,
            page=page,
        )
    return bytes(src.read(loc, ln))


def unpack_encoding(
    src: ByteSource,
    enc: file2_pb2.Encoding,
    message_cls: type[_M],
    *,
    column: int | str | None = None,
    page: int | None = None,
) -> _M | None:
    """Resolve a direct or deferred (indirect) Encoding into ``message_cls``.

    The bytes are a serialized ``google.protobuf.Any`` holding the message.
    Returns None for the ``none`` location.
    """
    raw = encoding_bytes(src, enc, column=column, page=page)
    if raw is None:
        return None
    msg: _M = message_cls()
    try:
        any_msg = any_pb2.Any()
        any_msg.ParseFromString(raw)
        if not any_msg.Unpack(msg):
            raise CorruptFileError(
                f"encoding is a {any_msg.type_url!r}, expected {message_cls.DESCRIPTOR.full_name}",
                path=src.path,
                column=column,
                page=page,
            )
    except CorruptFileError:
        raise
    except Exception as e:
        raise CorruptFileError(f"encoding does not parse: {e}", path=src.path, column=column, page=page) from None
    return msg


def pack_encoding(msg: Message) -> file2_pb2.Encoding:
    """Wrap a message as a direct Encoding (serialized Any), as pylance does."""
    a = any_pb2.Any(type_url="/" + msg.DESCRIPTOR.full_name, value=msg.SerializeToString())  # (Any.Pack's bytes)
    return file2_pb2.Encoding(direct=file2_pb2.DirectEncoding(encoding=a.SerializeToString()))


class ContainerWriter:
    """Writes buffers, then column metadata, offset tables and footer.

    The bytes go to a FileTarget (io/sink.py): a temporary file beside a local target renamed
    into place by ``finish``, or one upload to an fsspec URL; ``abort`` leaves nothing behind.
    Every I/O error is a LanceError naming the user's path.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        version: str | FileVersion,
        storage_options: dict[str, Any] | None = None,
    ) -> None:
        self.major, self.minor = parse(version).disk
        self._target = open_target(path, storage_options)
        self.path = self._target.path
        self._f = self._target.file
        # disk writes overlap the encoding of the next pages; a small file is written without a thread
        self._sink = BackgroundWriter(self._f, inline_bytes=COALESCE_BYTES)
        self._small = bytearray()  # small writes not yet handed to the sink (``write_buffers``)
        self.pos = 0

    def _io(self, fn: Callable[..., _R], *args: Any) -> _R:
        try:
            return fn(*args)
        except OSError as e:
            raise self._target.error(e, "write the file") from None

    def _write_small(self) -> None:
        if self._small:
            data, self._small = bytes(self._small), bytearray()
            self._io(self._sink.write, data)

    def write_buffers(self, buffers: Iterable[bytes | memoryview | np.ndarray]) -> tuple[list[int], list[int]]:
        """Write buffers (bytes, memoryviews, numpy arrays), each 64-byte aligned; their positions and sizes.
        Writes under COALESCE_BYTES (padding, a small file's pages) are gathered in ``_small``: each sink
        write wakes its thread, and a small file's tiny writes spent more on that than on writing."""
        offsets: list[int] = []
        sizes: list[int] = []
        small, pos = self._small, self.pos
        for data in buffers:
            if type(data) is bytes:
                mv: bytes | memoryview = data
                n = len(data)
            else:
                try:
                    mv = memoryview(data)  # type: ignore[arg-type]
                except TypeError:  # (anything numpy takes as an array)
                    mv = memoryview(np.ascontiguousarray(data))  # type: ignore[arg-type]
                if not mv.c_contiguous:
                    mv = memoryview(np.ascontiguousarray(data))  # type: ignore[arg-type]
                n = mv.nbytes
            pad = -pos % ALIGNMENT
            if pad:
                small += _ZEROS[:pad]
                pos += pad
            offsets.append(pos)
            sizes.append(n)
            pos += n
            if n < COALESCE_BYTES:
                small += mv
                if len(small) < COALESCE_BYTES:
                    continue
                mv, small = bytes(small), bytearray()
            else:
                if small:
                    self._io(self._sink.write, bytes(small))
                    small = bytearray()
                if type(mv) is memoryview:
                    mv = mv.cast("B")  # (the sink counts len() bytes)
            self._small = small
            self._io(self._sink.write, mv)
        self._small, self.pos = small, pos
        return offsets, sizes

    def write_buffer(self, data: bytes | memoryview | np.ndarray) -> tuple[int, int]:
        """Write one 64-byte aligned buffer (``write_buffers``); return (position, size)."""
        offsets, sizes = self.write_buffers((data,))
        return offsets[0], sizes[0]

    def skip_sync(self) -> None:
        """Write the file without fsync, neither while writing (the sink) nor before renaming it into place (the
        target): a dataset's data file, visible only once a manifest names it (dataset/store_files.py).  Anything
        but a local file behind the usual sink is left syncing.

        Returns:
            None.
        """
        if type(self._sink) is BackgroundWriter and type(self._target) is LocalTarget:
            self._sink.sync_every = float("inf")
            self._target.sync = False

    def finish(self, columns: list[file2_pb2.ColumnMetadata], global_buffers: list[bytes]) -> None:
        """Write the global buffers, then the column metadata, both offset tables and the footer in one
        piece (their positions follow from the sizes), and move the file into place."""
        gb_offsets, gb_sizes = self.write_buffers(global_buffers)
        raws = [cm.SerializeToString() for cm in columns]
        cm_start = pos = self.pos
        table: list[int] = []
        for raw in raws:
            table += (pos, len(raw))
            pos += len(raw)
        cmo_pos = pos
        gbo_pos = cmo_pos + 16 * len(raws)
        for entry in zip(gb_offsets, gb_sizes):
            table += entry
        self._small += b"".join(raws)
        self._small += struct.pack(f"<{len(table)}Q", *table)
        self._small += _FOOTER.pack(cm_start, cmo_pos, gbo_pos, len(gb_sizes), len(raws), self.major, self.minor, MAGIC)
        self.pos = gbo_pos + 16 * len(gb_sizes) + FOOTER_SIZE
        self._write_small()
        self._io(self._sink.flush)
        self._sink.close()
        self._target.commit()

    def abort(self) -> None:
        self._small = bytearray()
        try:
            self._sink.abort()
        finally:
            self._target.abort()
