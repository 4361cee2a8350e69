"""The pages a column writer has written, as file2.proto's ``ColumnMetadata`` records them (both the
2.0 and the 2.1+ writers): each page's buffers (positions and sizes in the file), its row count, its
encoding (a 2.0 ``ArrayEncoding`` or a 2.1+ ``PageLayout``, packed as a direct ``Encoding``) and its
priority (the first row it holds, as pylance sets it)."""

from __future__ import annotations

import numpy as np
from google.protobuf import empty_pb2
from google.protobuf.message import Message

from lancelot.format.container import ContainerWriter, pack_encoding
from lancelot.format.pb import encodings_v2_0_pb2 as pb20
from lancelot.format.pb import file2_pb2

_VALUES = pack_encoding(pb20.ColumnEncoding(values=empty_pb2.Empty()))


class ColumnPages:
    """A column's pages in the order written; ``rows_written`` is the rows they hold."""

    def __init__(self, out: ContainerWriter) -> None:
        self.out = out
        self.pages: list[file2_pb2.ColumnMetadata.Page] = []
        self.rows_written = 0

    def write_page(self, encoding: Message, buffers: list[np.ndarray], length: int) -> None:
        """Write a page's buffers and record it after the pages before it (``encoding``: a layout message,
        or a page Encoding already packed, as 2.3's PlanarLayout pages are)."""
        offsets, sizes = self.out.write_buffers(buffers)
        self.pages.append(
            file2_pb2.ColumnMetadata.Page(
                buffer_offsets=offsets,
                buffer_sizes=sizes,
                length=length,
                encoding=encoding if isinstance(encoding, file2_pb2.Encoding) else pack_encoding(encoding),
                priority=self.rows_written,
            )
        )
        self.rows_written += length

    def metadata(self) -> file2_pb2.ColumnMetadata:
        """The column's metadata: its pages, and the column encoding pylance writes (plain values)."""
        return file2_pb2.ColumnMetadata(encoding=_VALUES, pages=self.pages)
