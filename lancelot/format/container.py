"""Reading and writing the Lance v2 container (seeds 000/002: "File Layout").

::

    data buffers | column metadatas | CMO table | GBO table | 40-byte footer

The footer holds three u64 offsets (column metadata start, column-metadata
offset table, global-buffer offset table), u32 counts of global buffers and
columns, u16 major/minor version and the magic ``LANC``.  Offset tables are
(u64 position, u64 size) pairs.  Buffers are 64-byte aligned when we write.
"""

from __future__ import annotations

import os
import struct
import tempfile
from dataclasses import dataclass, field

from google.protobuf import any_pb2

from lancelot.errors import CorruptFileError, NotALanceFileError, UnsupportedVersionError
from lancelot.format.pb import file2_pb2
from lancelot.io.sink import BackgroundWriter
from lancelot.io.source import ByteSource

MAGIC = b"LANC"
FOOTER_SIZE = 40
ALIGNMENT = 64
_FOOTER = struct.Struct("<QQQIIHH4s")
#: (major, minor) on disk -> public version string.  2.0 files carry 0.3 or 2.0.
VERSIONS = {(0, 3): "2.0", (2, 0): "2.0", (2, 1): "2.1", (2, 2): "2.2"}
WRITE_VERSIONS = {"2.0": (0, 3), "2.1": (2, 1), "2.2": (2, 2)}
#: how much of the file's tail to read on open: usually all the metadata
TAIL_READ = 64 * 1024


@dataclass
class FileMetadata:
    """Everything in a file's tail: version, column metadata, global buffer positions."""

    path: str
    file_size: int
    major: int
    minor: int
    columns: list[file2_pb2.ColumnMetadata]
    global_buffers: list[tuple[int, int]]
    version: str = field(init=False)

    def __post_init__(self) -> None:
        self.version = VERSIONS[(self.major, self.minor)]


def _check_range(path: str, what: str, off: int, size: int, limit: int) -> None:
    if off < 0 or size < 0 or off + size > limit:
        raise CorruptFileError(
            f"{what} [{off}, {off + size}) lies outside the {limit}-byte file", path=path
        )


def read_metadata(src: ByteSource) -> FileMetadata:
    """Parse the footer, offset tables and every column's metadata."""
    path, size = src.path, src.size
    if size < FOOTER_SIZE:
        raise NotALanceFileError(f"file of {size} bytes is too short for a Lance footer", path=path)
    tail_len = min(size, TAIL_READ)
    tail_start = size - tail_len
    tail = bytes(src.read(tail_start, tail_len))
    cm_start, cmo_pos, gbo_pos, n_gb, n_cols, major, minor, magic = _FOOTER.unpack(
        tail[-FOOTER_SIZE:]
    )
    if magic != MAGIC:
        raise NotALanceFileError(f"bad magic {magic!r} (expected {MAGIC!r})", path=path)
    if (major, minor) not in VERSIONS:
        if (major, minor) in ((0, 1), (0, 2)):
            raise UnsupportedVersionError(
                f"legacy Lance format {major}.{minor} (v1) is not supported", path=path
            )
        raise UnsupportedVersionError(f"unknown file version {major}.{minor}", path=path)
    meta_end = size - FOOTER_SIZE
    _check_range(path, "column metadata offset table", cmo_pos, n_cols * 16, meta_end)
    _check_range(path, "global buffer offset table", gbo_pos, n_gb * 16, meta_end)
    if cm_start > meta_end:
        raise CorruptFileError(f"column metadata start {cm_start} is past the footer", path=path)
    region_start = min(cm_start, cmo_pos, gbo_pos)
    if region_start < tail_start:
        region = bytes(src.read(region_start, size - region_start))
        base = region_start
    else:
        region, base = tail, tail_start

    def table(pos: int, n: int) -> list[tuple[int, int]]:
        raw = region[pos - base : pos - base + n * 16]
        vals = struct.unpack(f"<{2 * n}Q", raw)
        return [(vals[2 * i], vals[2 * i + 1]) for i in range(n)]

    cmo = table(cmo_pos, n_cols)
    gbo = table(gbo_pos, n_gb)
    for i, (p, s) in enumerate(gbo):
        _check_range(path, f"global buffer {i}", p, s, meta_end)
    columns = []
    for i, (p, s) in enumerate(cmo):
        _check_range(path, f"metadata of column {i}", p, s, meta_end)
        if p >= base:
            raw = region[p - base : p - base + s]
        else:
            raw = bytes(src.read(p, s))
        cm = file2_pb2.ColumnMetadata()
        try:
            cm.ParseFromString(raw)
        except Exception as e:
            raise CorruptFileError(f"column metadata does not parse: {e}", path=path, column=i) from None
        for j, page in enumerate(cm.pages):
            if len(page.buffer_offsets) != len(page.buffer_sizes):
                raise CorruptFileError("buffer offsets/sizes differ in count", path=path, column=i, page=j)
            for bo, bs in zip(page.buffer_offsets, page.buffer_sizes):
                if bo + bs > meta_end:
                    raise CorruptFileError(
                        f"page buffer [{bo}, {bo + bs}) lies past the data region",
                        path=path, column=i, page=j,
                    )
        for bo, bs in zip(cm.buffer_offsets, cm.buffer_sizes):
            _check_range(path, "column buffer", bo, bs, meta_end)
        columns.append(cm)
    return FileMetadata(path, size, major, minor, columns, gbo)


def unpack_encoding(src: ByteSource, enc: file2_pb2.Encoding, message_cls, *, column=None, page=None):
    """Resolve a direct or deferred (indirect) Encoding into ``message_cls``.

    The bytes are a serialized ``google.protobuf.Any`` holding the message.
    Returns None for the ``none`` location.
    """
    kind = enc.WhichOneof("location")
    if kind is None or kind == "none":
        return None
    if kind == "direct":
        raw = enc.direct.encoding
    else:
        loc, ln = enc.indirect.buffer_location, enc.indirect.buffer_length
        _check_range(src.path, "deferred encoding", loc, ln, src.size)
        raw = bytes(src.read(loc, ln))
    msg = message_cls()
    try:
        any_msg = any_pb2.Any()
        any_msg.ParseFromString(raw)
        if not any_msg.Unpack(msg):
            raise CorruptFileError(
                f"encoding is a {any_msg.type_url!r}, expected {message_cls.DESCRIPTOR.full_name}",
                path=src.path, column=column, page=page,
            )
    except CorruptFileError:
        raise
    except Exception as e:
        raise CorruptFileError(f"encoding does not parse: {e}", path=src.path, column=column, page=page) from None
    return msg


def pack_encoding(msg) -> file2_pb2.Encoding:
    """Wrap a message as a direct Encoding (serialized Any), as pylance does."""
    a = any_pb2.Any()
    a.Pack(msg, type_url_prefix="/")
    return file2_pb2.Encoding(direct=file2_pb2.DirectEncoding(encoding=a.SerializeToString()))


class ContainerWriter:
    """Writes buffers, then column metadata, offset tables and footer.

    The file is written under a temporary name in the target's directory and
    renamed into place by ``finish``; ``abort`` removes it.
    """

    def __init__(self, path: str | os.PathLike, version: str) -> None:
        self.path = os.fspath(path)
        self.major, self.minor = WRITE_VERSIONS[version]
        d = os.path.dirname(os.path.abspath(self.path))
        fd, self._tmp = tempfile.mkstemp(prefix=".lancelot-", suffix=".tmp", dir=d)
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; a finished file gets the usual mode
        self._f = os.fdopen(fd, "wb", buffering=1 << 20)
        self._sink = BackgroundWriter(self._f)  # disk writes overlap the encoding of the next pages
        self.pos = 0

    def _pad(self) -> None:
        rem = self.pos % ALIGNMENT
        if rem:
            self._sink.write(b"\0" * (ALIGNMENT - rem))
            self.pos += ALIGNMENT - rem

    def write_buffer(self, data) -> tuple[int, int]:
        """Write one 64-byte aligned buffer; return (position, size)."""
        self._pad()
        pos = self.pos
        mv = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        self._sink.write(mv)
        self.pos += len(mv)
        return pos, len(mv)

    def finish(self, columns: list[file2_pb2.ColumnMetadata], global_buffers: list[bytes]) -> None:
        gbo = [self.write_buffer(b) for b in global_buffers]
        self._pad()
        cm_start = self.pos
        cmo = []
        for cm in columns:
            raw = cm.SerializeToString()
            cmo.append((self.pos, len(raw)))
            self._sink.write(raw)
            self.pos += len(raw)
        self._pad()
        cmo_pos = self.pos
        self._write_table(cmo)
        gbo_pos = self.pos
        self._write_table(gbo)
        self._sink.write(
            _FOOTER.pack(cm_start, cmo_pos, gbo_pos, len(gbo), len(cmo), self.major, self.minor, MAGIC)
        )
        self._sink.flush()
        self._sink.close()
        os.fsync(self._f.fileno())
        self._f.close()
        os.replace(self._tmp, self.path)

    def _write_table(self, entries: list[tuple[int, int]]) -> None:
        for p, s in entries:
            self._sink.write(struct.pack("<QQ", p, s))
            self.pos += 16

    def abort(self) -> None:
        try:
            self._sink.abort()
            self._f.close()
        finally:
            if os.path.exists(self._tmp):
                os.unlink(self._tmp)
