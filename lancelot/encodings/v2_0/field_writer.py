"""The 2.0 field writers: one column writer per field in pre-order.

Leaf columns buffer arrays until they hold a page's worth (encodings/paging.py) and then encode and
write pages at once (only page metadata stays in memory); list columns write offsets
pages and feed their items to the child column; struct columns write a single
``SimpleStruct`` page (they have no buffers).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from google.protobuf import empty_pb2

from lancelot import field_metadata
from lancelot.encodings.column_pages import ColumnPages
from lancelot.encodings.dictionary_pages import join_values
from lancelot.encodings.paging import gather_bytes, page_count
from lancelot.encodings.structural.write_blob import padded
from lancelot.encodings.v2_0 import column_count, is_packed_struct
from lancelot.encodings.v2_0.encode import encode_packed_struct, encode_values
from lancelot.errors import UnsupportedEncodingError, UnsupportedTypeError
from lancelot.field_metadata import is_fixed_width
from lancelot.format.container import ContainerWriter, pack_encoding
from lancelot.format.pb import encodings_v2_0_pb2 as pb
from lancelot.format.pb import file2_pb2
from lancelot.util.arrays import arrow_offsets, from_numpy, to_numpy


class ColumnWriter(ColumnPages):
    """Writes the pages of one column and produces its ColumnMetadata."""

    def __init__(self, out: ContainerWriter, index: int, max_page_bytes: int) -> None:
        super().__init__(out)
        self.index, self.max_page_bytes = index, max_page_bytes

    def append(self, arr: pa.Array) -> None:
        """Take the column's next values (each kind of column writer implements it)."""
        raise NotImplementedError

    def finish(self) -> list[ColumnWriter]:
        """Flush what is pending; return this column and its descendants in pre-order."""
        return [self]

    def ensure_page(self) -> None:
        """Give a column that received no values one empty page (pylance cannot read a list
        whose item columns have no pages)."""


def flat_compression(field: pa.Field) -> pb.Compression | None:
    """``lance-encoding:compression`` (and ``-level``) as pylance 2.0 honours them: exactly
    "zstd", "lz4" or "none" (recorded as is) on the bytes of string/binary pages, or "fsst"
    (an Fsst page instead of Binary)."""
    md = field.metadata or {}
    scheme = md.get(b"lance-encoding:compression", b"").decode()
    if scheme not in ("zstd", "lz4", "none", "fsst"):
        return None
    level = md.get(b"lance-encoding:compression-level")
    try:
        return pb.Compression(scheme=scheme, level=int(level)) if level is not None else pb.Compression(scheme=scheme)
    except ValueError:
        raise UnsupportedEncodingError(f"field {field.name!r}: compression-level {level!r} is not an integer") from None


class LeafWriter(ColumnWriter):
    def __init__(self, out: ContainerWriter, index: int, max_page_bytes: int, field: pa.Field) -> None:
        super().__init__(out, index, max_page_bytes)
        self.field = field
        self.compression = flat_compression(field)
        self.pending: list[pa.Array] = []
        self.pending_bytes = 0

    def append(self, arr: pa.Array) -> None:
        if len(arr) == 0:
            return
        self.pending.append(arr)
        self.pending_bytes += arr.nbytes
        if self.pending_bytes >= gather_bytes(self.max_page_bytes):
            self.flush()

    def _combined(self) -> pa.Array:
        if pa.types.is_dictionary(self.pending[0].type):
            return join_values(self.pending)
        return pa.chunked_array(self.pending, type=self.pending[0].type).combine_chunks()

    def flush(self) -> None:
        """Write what is pending as pages (encodings/paging.py): gathered batches make one page (whole
        batches, as pylance's 2.0 writer does); a gathering of many times ``max_page_bytes`` (one big batch)
        is cut into ``round(size / max_page_bytes)`` pages of equal rows, with no small remainder page,
        which would be encoded differently from its neighbours (a string page of few rows is not
        dictionary-encoded)."""
        if not self.pending:
            return
        arr = self._combined()
        self.pending, self.pending_bytes = [], 0
        pages = max(1, min(len(arr), round(arr.nbytes / self.max_page_bytes)))
        bounds = np.linspace(0, len(arr), pages + 1).round().astype(np.int64).tolist()
        for start, stop in zip(bounds[:-1], bounds[1:]):
            chunk = arr.slice(start, stop - start)
            buffers: list[np.ndarray] = []
            self.write_page(self._encode(chunk, buffers), buffers, len(chunk))

    def _encode(self, chunk: pa.Array, buffers: list[np.ndarray]) -> pb.ArrayEncoding:
        if is_packed_struct(self.field):
            return encode_packed_struct(chunk, buffers)
        return encode_values(chunk, buffers, self.compression)

    def finish(self) -> list[ColumnWriter]:
        self.flush()
        return [self]

    def ensure_page(self) -> None:
        if not self.pages:
            self.write_page(pb.ArrayEncoding(nullable=pb.Nullable(all_nulls=pb.Nullable.AllNull())), [], 0)


#: a 2.0 blob page's descriptions, as pylance writes them: absolute file position and size of each value
BLOB_DESCRIPTION = pa.struct([pa.field("position", pa.uint64(), False), pa.field("size", pa.uint64(), False)])


class BlobWriter(LeafWriter):
    """A 2.0 blob column (``lance-encoding:blob`` on binary), as pylance writes it: each batch's bytes go
    to the file at once (each value 64-byte aligned, ``padded``), the pages hold PackedStruct descriptions
    (u64 position, u64 size; an empty value (0, 0), a null (1, 0)) and the column encoding is ``blob``
    (encodings_v2_0.proto ``Blob``)."""

    def append(self, arr: pa.Array) -> None:
        if len(arr) == 0:
            return
        offs = arrow_offsets(arr).astype(np.int64)
        valid = to_numpy(arr.is_valid()) if arr.null_count else np.ones(len(arr), bool)
        sizes = np.where(valid, offs[1:] - offs[:-1], 0)
        size = sizes.astype(np.uint64)
        position = np.where(valid, 0, 1).astype(np.uint64)
        if int(sizes.sum()):
            at, data = padded(np.frombuffer(arr.buffers()[2], np.uint8), offs[:-1], sizes)
            base, _ = self.out.write_buffer(data)
            position = np.where(size > 0, np.uint64(base) + at.astype(np.uint64), position)
        desc = pa.StructArray.from_arrays([from_numpy(position), from_numpy(size)], fields=list(BLOB_DESCRIPTION))
        super().append(desc)

    def _encode(self, chunk: pa.Array, buffers: list[np.ndarray]) -> pb.ArrayEncoding:
        return encode_packed_struct(chunk, buffers)

    def metadata(self) -> file2_pb2.ColumnMetadata:
        inner = pb.ColumnEncoding(values=empty_pb2.Empty())
        return file2_pb2.ColumnMetadata(
            encoding=pack_encoding(pb.ColumnEncoding(blob=pb.Blob(inner=inner))), pages=self.pages
        )


class StructWriter(ColumnWriter):
    def __init__(
        self, out: ContainerWriter, index: int, max_page_bytes: int, field: pa.Field, children: list[ColumnWriter]
    ) -> None:
        super().__init__(out, index, max_page_bytes)
        self.field, self.children, self.rows = field, children, 0

    def append(self, arr: pa.StructArray) -> None:
        if arr.null_count:
            raise UnsupportedTypeError(
                f"struct field {self.field.name!r} has {arr.null_count} null value(s); "
                "file version 2.0 cannot hold null structs (use 2.1 or later)"
            )
        self.rows += len(arr)
        for i, c in enumerate(self.children):
            c.append(arr.field(i))

    def finish(self) -> list[ColumnWriter]:
        # like pylance: a struct column always has its page, even of zero rows
        self.write_page(pb.ArrayEncoding(struct=pb.SimpleStruct()), [], self.rows)
        out: list[ColumnWriter] = [self]
        for c in self.children:
            out.extend(c.finish())
        return out


class ListWriter(ColumnWriter):
    """Offsets pages: end offsets per row, + null_offset_adjustment for null lists."""

    def __init__(
        self, out: ContainerWriter, index: int, max_page_bytes: int, field: pa.Field, child: ColumnWriter
    ) -> None:
        super().__init__(out, index, max_page_bytes)
        self.field, self.child = field, child
        self.lengths: list[np.ndarray] = []
        self.valid: list[np.ndarray] = []
        self.pending_rows = 0

    def append(self, arr: pa.Array) -> None:
        if len(arr) == 0:
            return
        offs = arrow_offsets(arr)
        self.lengths.append(np.diff(offs).astype(np.uint64))
        self.valid.append(to_numpy(arr.is_valid()))
        self.pending_rows += len(arr)
        self.child.append(arr.values.slice(int(offs[0]), int(offs[-1] - offs[0])))
        if self.pending_rows * 8 >= gather_bytes(self.max_page_bytes):
            self.flush()

    def flush(self) -> None:
        if not self.pending_rows:
            return
        lengths, valid = np.concatenate(self.lengths), np.concatenate(self.valid)
        self.lengths, self.valid, self.pending_rows = [], [], 0
        pages = page_count(8 * len(lengths), self.max_page_bytes, len(lengths))
        rows_per_page = -(-len(lengths) // pages)
        for s in range(0, len(lengths), rows_per_page):
            self._write_offsets(lengths[s : s + rows_per_page], valid[s : s + rows_per_page])

    def _write_offsets(self, ln: np.ndarray, ok: np.ndarray) -> None:
        """One offsets page for rows with item counts ``ln`` and validity ``ok``."""
        ends = np.cumsum(ln, dtype=np.uint64)
        num_items = int(ends[-1]) if len(ends) else 0
        adj = num_items + 1
        if not ok.all():
            ends = np.where(ok, ends, ends + np.uint64(adj))
        offsets = pb.ArrayEncoding(
            nullable=pb.Nullable(
                no_nulls=pb.Nullable.NoNull(
                    values=pb.ArrayEncoding(flat=pb.Flat(bits_per_value=64, buffer=pb.Buffer(buffer_index=0)))
                )
            )
        )
        enc = pb.ArrayEncoding(list=pb.List(offsets=offsets, null_offset_adjustment=adj, num_items=num_items))
        self.write_page(enc, [ends], len(ln))

    def finish(self) -> list[ColumnWriter]:
        self.flush()
        kids = self.child.finish()
        if self.pages:
            for k in kids:
                k.ensure_page()
        return [self, *kids]

    def ensure_page(self) -> None:
        if not self.pages:
            self._write_offsets(np.zeros(0, np.uint64), np.zeros(0, bool))


def make_field_writer(out: ContainerWriter, field: pa.Field, *, first_column: int, max_page_bytes: int) -> ColumnWriter:
    """Build the writer tree of a field whose columns are numbered in pre-order from ``first_column``
    (each child after the columns of the siblings before it: ``column_count``, the readers' rule)."""
    index = first_column
    t = field.type
    if pa.types.is_map(t):
        raise UnsupportedTypeError(f"map field {field.name!r} needs file version 2.2")
    if is_packed_struct(field):
        for c in t:
            if not is_fixed_width(c.type) or pa.types.is_boolean(c.type) or pa.types.is_fixed_size_list(c.type):
                raise UnsupportedTypeError(
                    f"packed struct {field.name!r}: child {c.name!r} ({c.type}) is not a "
                    "fixed-width, whole-byte type, which 2.0 packed structs require"
                )
    if pa.types.is_struct(t) and not is_packed_struct(field):
        kids: list[ColumnWriter] = []
        nxt = index + 1
        for kid in t:
            kids.append(make_field_writer(out, kid, first_column=nxt, max_page_bytes=max_page_bytes))
            nxt += column_count(kid)
        return StructWriter(out, index, max_page_bytes, field, kids)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        child = make_field_writer(out, t.value_field, first_column=index + 1, max_page_bytes=max_page_bytes)
        return ListWriter(out, index, max_page_bytes, field, child)
    if pa.types.is_fixed_size_list(t) and not (
        pa.types.is_primitive(t.value_type)
        or pa.types.is_fixed_size_list(t.value_type)
        or pa.types.is_fixed_size_binary(t.value_type)
        or pa.types.is_decimal(t.value_type)
    ):
        raise UnsupportedTypeError(f"fixed_size_list<{t.value_type}> ({field.name!r}) cannot be written at 2.0")
    if field_metadata.is_blob(field):
        return BlobWriter(out, index, max_page_bytes, field)
    return LeafWriter(out, index, max_page_bytes, field)
