"""Access to one 2.0 page's buffers, with every range checked against the page.

A 2.0 ``Buffer`` names a page buffer by index (buffer_type page), or a column or file buffer; the byte positions come
from the column metadata.  Reads are ``Fetch`` steps (encodings/base.py): they yield the file ranges and are sent their
bytes, so the decoders never read the file themselves."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, TypeVar, cast

import numpy as np
from google.protobuf import any_pb2
from google.protobuf.message import Message

from lancelot.encodings.base import Fetch
from lancelot.errors import CorruptFileError, LanceError, UnsupportedEncodingError
from lancelot.format.container import unpack_encoding
from lancelot.format.pb import encodings_v2_0_pb2 as pb
from lancelot.format.pb import file2_pb2
from lancelot.io.source import ByteSource


class PageBuffers:
    """The buffers of one page (plus the column's buffers) of one column."""

    def __init__(
        self,
        src: ByteSource,
        page: list[tuple[int, int]],
        column_meta: file2_pb2.ColumnMetadata,
        column: int,
        page_index: int,
    ) -> None:
        """``page``: the (position, size) of each page buffer."""
        self.src = src
        self.page = page
        self.column_buffers = list(zip(column_meta.buffer_offsets, column_meta.buffer_sizes))
        self.column = column
        self.page_index = page_index

    def error(self, msg: str, cls: type[LanceError] = CorruptFileError) -> LanceError:
        return cls(msg, path=self.src.path, column=self.column, page=self.page_index)

    def _locate(self, buf: pb.Buffer) -> tuple[int, int]:
        table = self.page if buf.buffer_type == pb.Buffer.page else self.column_buffers
        if buf.buffer_type == pb.Buffer.file:
            raise self.error("file-level buffers are not supported", UnsupportedEncodingError)
        if buf.buffer_index >= len(table):
            raise self.error(f"buffer index {buf.buffer_index} out of {len(table)} buffers")
        return table[buf.buffer_index]

    def size(self, buf: pb.Buffer) -> int:
        return self._locate(buf)[1]

    def ranges(self, buf: pb.Buffer, ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        """The file ranges (offset, length) of byte ranges (start, stop) inside buffer ``buf``."""
        off, size = self._locate(buf)
        req = []
        for s, e in ranges:
            if s < 0 or e < s or e > size:
                raise self.error(f"byte range [{s}, {e}) lies outside a {size}-byte buffer")
            req.append((off + s, e - s))
        return req

    def read(self, buf: pb.Buffer, ranges: Sequence[tuple[int, int]]) -> Fetch[list[np.ndarray]]:
        """Byte ranges (start, stop) inside buffer ``buf``, as uint8 arrays (one round)."""
        bufs = yield self.ranges(buf, ranges)
        return [np.frombuffer(m, dtype=np.uint8) for m in bufs]

    def read_all(self, buf: pb.Buffer) -> Fetch[np.ndarray]:
        return (yield from self.read(buf, [(0, self.size(buf))]))[0]


_Msg = TypeVar("_Msg", bound=Message)


@lru_cache(maxsize=4096)
def parse_any(raw: bytes, cls: Any) -> Message | None:
    """A serialized ``Any`` unpacked as ``cls``, parsed once per distinct bytes (shared, read only)."""
    msg, out = any_pb2.Any(), cls()
    try:
        msg.ParseFromString(raw)
        return out if msg.Unpack(out) else None
    except Exception:
        return None


def direct_message(
    src: ByteSource, enc: file2_pb2.Encoding, cls: type[_Msg], *, column: int, page: int | None = None
) -> _Msg | None:
    """``unpack_encoding`` of a column's or page's encoding, a direct one parsed once per distinct bytes in the process
    (files of one writer and schema repeat them; the message is shared, read only).  Encodings that do not parse go to
    ``unpack_encoding``, which reports them."""
    found = parsed_direct(enc, cls)
    return found if found is not None else unpack_encoding(src, enc, cls, column=column, page=page)


def parsed_direct(enc: file2_pb2.Encoding, cls: type[_Msg]) -> _Msg | None:
    """A direct encoding's message, parsed once per distinct bytes (shared, read only); None when it is not direct or
    does not parse."""
    if enc.WhichOneof("location") != "direct":
        return None
    return cast("_Msg | None", parse_any(enc.direct.encoding, cast(Any, cls)))
