"""The 2.1/2.2 field writers: one column per leaf, pages of structural layouts.

``make_field_writer`` gives the writer of one top-level field (the interface
of lancelot/encodings/v2_0/field_writer.py: ``append(arr)`` and ``finish()``
returning column writers with ``.index`` and ``.metadata()``).  Each batch is
shredded into its leaf columns (write_repdef.py); every leaf column buffers
its shreds until it holds a page's worth (encodings/paging.py) and then writes pages at once, choosing
per page (encoding.md, "Structural Encoding"):

* binary fields with ``lance-encoding:blob``: the blob layout (bytes out of line);
* all visible items null (or none): the all-null constant layout (the only
  page pylance writes for fixed-size lists of strings, and for a top-level
  struct without children);
* (2.2) every valid visible item the same value: the constant layout with that value;
* packed structs: mini-block PackedStruct rows (whole-byte fixed-width children),
  or (2.2) full-zip VariablePackedStruct rows (string/binary children too);
* fields of an Arrow dictionary type: mini-block with a page dictionary;
* values of 256 bytes or more: full-zip;
* otherwise: mini-block (write_strategy.py picks the compression), or full-zip
  when a run of null/empty lists is too long for any mini-block chunk.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from google.protobuf.message import Message

from lancelot.encodings.column_pages import ColumnPages
from lancelot.encodings.paging import BLOB_DESCRIPTION_BYTES, gather_bytes, page_count
from lancelot.encodings.planar.write_page import encode_planar_page
from lancelot.encodings.strategy import EncodingOptions, WriteSettings, options_for
from lancelot.encodings.structural.write_blob import blob_relative, check_blob_type, encode_blob
from lancelot.encodings.structural.write_constant import constant_value, encode_all_null, encode_constant
from lancelot.encodings.structural.write_fullzip import encode_full_zip
from lancelot.encodings.structural.write_miniblock import ChunkTooLarge, encode_miniblock
from lancelot.encodings.structural.write_pipeline import PageWorker
from lancelot.encodings.structural.write_repdef import (
    LeafPath,
    PageLevels,
    Shred,
    concat_shreds,
    leaf_paths,
    page_levels,
    shred,
    slice_rows,
    split_flat_parts,
)
from lancelot.encodings.structural.write_strategy import wide_dictionary
from lancelot.encodings.structural.write_values import (
    check_packed_children,
    fsl_of_variable,
    max_value_bytes,
    packed_struct_kind,
    storage,
    value_bytes,
)
from lancelot.errors import LanceError, UnsupportedTypeError
from lancelot.format.container import ContainerWriter
from lancelot.format.pb import encodings_v2_1_pb2 as pb21
from lancelot.util.types import is_variable
from lancelot.versions import FileVersion

#: values this wide or wider go to full-zip pages (pylance's mini-block limit)
FULL_ZIP_MIN_BYTES = 256
#: pages of many rows are cut at multiples of this many rows (a bitpacking chunk)
PAGE_ROW_ALIGN = 1024
#: one encoded page, as the page worker carries it from encode to commit: its row count, layout and buffers
#: (not the shred: a page waiting for the pages before it holds only its encoded bytes)
EncodedShred = tuple[int, tuple[Message, list[np.ndarray]]]


def _check_leaf_type(path: LeafPath, version: FileVersion, opts: EncodingOptions) -> str | None:
    """Refuse the leaf types 2.1+ writing does not cover; "fixed" / "variable" for a packed struct."""
    t = path.leaf.type
    if isinstance(t, pa.ExtensionType):
        t = t.storage_type
    if pa.types.is_struct(t) and t.num_fields == 0:
        if len(path.steps) > 1:
            raise UnsupportedTypeError(
                f"struct {path.leaf.name!r} without children inside another type is not "
                "writable (pylance 14 does not read it back, not even from its own files)"
            )
        return "empty"
    if pa.types.is_struct(t):  # write_repdef admits no other struct leaf
        return packed_struct_kind(path.leaf, version)
    if opts.blob:
        check_blob_type(t, path.leaf.name, path.max_rep)
        return None
    if pa.types.is_dictionary(t):
        v = t.value_type
        # pylance 14 parses the logical type "dict:<values>:<keys>:<ordered>" by splitting at ':', so it reads
        # no dictionary of values whose own logical type has one (decimals, dates, timestamps, fixed-size binary)
        if not (is_variable(v) or pa.types.is_integer(v) or pa.types.is_floating(v)):
            raise UnsupportedTypeError(
                f"dictionary field {path.leaf.name!r} of {v} values is not writable at 2.1+ "
                "(string, binary, integer and float values are; pylance reads no other)"
            )
        return None
    if pa.types.is_fixed_size_list(t):
        return None
    if not (
        is_variable(t)
        or pa.types.is_null(t)
        or pa.types.is_boolean(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_decimal(t)
        or (pa.types.is_primitive(t) and not pa.types.is_null(t))
    ):
        raise UnsupportedTypeError(f"{t} ({path.leaf.name!r}) is not yet writable at 2.1+")
    return None


def encode_empty_struct(levels: PageLevels, name: str) -> tuple[pb21.PageLayout, list[np.ndarray]]:
    """A struct without children holds nothing: an all-null page without buffers, as pylance writes it, which
    also refuses such a struct with nulls or inside a list (its levels would need a place)."""
    if levels.rep is not None or levels.defs is not None:
        raise UnsupportedTypeError(
            f"struct {name!r} without children has nulls or is inside a list: not writable (pylance 14 refuses it too)"
        )
    return pb21.PageLayout(constant_layout=pb21.ConstantLayout(layers=[pb21.REPDEF_NULLABLE_ITEM])), []


def _has_map(t: pa.DataType) -> bool:
    if pa.types.is_map(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_map(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_map(t.value_type)
    return False


class LeafColumnWriter(ColumnPages):
    """Writes the pages of one leaf column and produces its ColumnMetadata."""

    def __init__(
        self,
        out: ContainerWriter,
        path: LeafPath,
        *,
        index: int,
        settings: WriteSettings,
        opts: EncodingOptions,
        packed: str | None = None,
        worker: PageWorker | None = None,
    ) -> None:
        super().__init__(out)
        self.path, self.index = path, index
        self.version, self.max_page_bytes = settings.version, settings.max_page_bytes
        self.opts = opts  # the leaf's options, resolved once (StructuralFieldWriter)
        self.worker = worker  # pages are encoded and written there (in order) when given
        self.packed = packed  # "fixed" / "variable" for a packed struct, "empty" for a struct without children
        self.dictionary = pa.types.is_dictionary(path.leaf.type)
        self.pages_submitted = 0
        self.pending: list[Shred] = []
        self.pending_bytes = 0
        self.blob_parts = 0
        self.blob_bases: dict[int, int] = {}  # blob batch -> file position of its bytes

    def _cost(self, s: Shred) -> int:
        streams = int(s.rep is not None) + int(s.defc is not None)
        values = BLOB_DESCRIPTION_BYTES * len(s.values) if self.opts.blob else value_bytes(s.values)
        return values + 2 * streams * s.num_levels

    def _blob_out_of_line(self, s: Shred) -> Shred:
        """Queue the blob bytes of one batch for the file (in order, before any page that follows) and keep
        only where each value sits in them: pages hold descriptions, as pylance's do."""
        part = self.blob_parts
        self.blob_parts += 1
        relative, data = blob_relative(s.values, part)
        if data is not None:

            def commit(_: None) -> None:
                self.blob_bases[part] = self.out.write_buffer(data)[0]

            if self.worker is not None:
                self.worker.submit(lambda: None, commit, len(data))
            else:
                commit(None)
        return Shred(s.rep, s.defc, relative, s.num_rows)

    def add(self, s: Shred) -> None:
        if s.num_rows == 0:
            return
        if self.opts.blob:
            s = self._blob_out_of_line(s)
        self.pending.append(s)
        self.pending_bytes += self._cost(s)
        if self.full() and (self.opts.price is None or self.opts.price.settled):
            self.flush(final=False)  # (else once the batch is in every column: FilePrice.after_batch)

    def full(self) -> bool:
        """Whether the pending rows make a page."""
        return self.pending_bytes >= gather_bytes(self.max_page_bytes)

    def pending_rows(self) -> int:
        return sum(p.num_rows for p in self.pending)

    def sample(self, rows: int) -> None:
        """Encode (and drop) a page of the first ``rows`` pending rows: the compact profile's FilePrice
        records its choices (write_profile.py)."""
        if not self.pending or self.opts.blob or self.packed is not None:
            return
        num_rows = self.pending_rows()
        per_row = self.path.items_per_row
        k = num_rows if per_row > 1 else min(num_rows, rows)
        bounds = np.array([0, k])
        if self.path.max_rep == 0 and per_row == 1:
            s = concat_shreds(split_flat_parts(self.pending, bounds)[0])
        else:
            s = slice_rows(concat_shreds(self.pending), self.path, bounds)[0]
        self._encode(s, -1)

    def flush(self, final: bool = True) -> None:
        """Write the pending rows as pages of at most ``max_page_bytes``; unless ``final``, a last partial page
        stays pending (to be filled by the next batches), so pages do not end wherever a batch does.

        Columns without repetition are cut without joining their batches first: each page's slices are
        joined by the thread that encodes it.  The compact profile's price is settled before the file's
        first page (write_profile.FilePrice)."""
        if self.opts.price is not None:
            self.opts.price.settle()
        if not self.pending:
            return
        parts, cost = self.pending, self.pending_bytes
        self.pending, self.pending_bytes = [], 0
        num_rows = sum(p.num_rows for p in parts)
        per_row = self.path.items_per_row  # rows below fixed-size lists of structs are counted in entries
        if cost <= self.max_page_bytes or num_rows == per_row:
            self._emit(parts, cost)
            return
        align = PAGE_ROW_ALIGN * per_row
        if final:  # equal pages (the last maybe a little shorter)
            n_pages = page_count(cost, self.max_page_bytes, num_rows // per_row)
            rows_per_page = -(-(num_rows // per_row) // n_pages) * per_row
            if rows_per_page >= 4 * align:  # whole 1024-value bitpacking chunks: no padded chunk ends a page
                rows_per_page += -rows_per_page % align
        else:  # pages of about max_page_bytes, the remainder waits for the next batches
            rows_per_page = max(1, int(num_rows * self.max_page_bytes // cost) // per_row) * per_row
            if rows_per_page >= 4 * align:
                rows_per_page -= rows_per_page % align
        bounds = np.append(np.arange(0, num_rows, rows_per_page), num_rows)
        if self.path.max_rep == 0 and per_row == 1:
            pages = split_flat_parts(parts, bounds)
        else:
            pages = [[part] for part in slice_rows(concat_shreds(parts), self.path, bounds)]
        if not final and len(pages) > 1:
            rest = pages.pop()
            self.pending, self.pending_bytes = rest, sum(self._cost(r) for r in rest)
        for page in pages:
            self._emit(page)

    def _emit(self, parts: list[Shred], cost: int | None = None) -> None:
        """Encode and write ``parts`` as one page (``cost``: their ``_cost``, if known)."""
        page = self.pages_submitted
        self.pages_submitted += 1
        if self.opts.blob:  # blob values are written while encoding: in order, on the commit step

            def encode() -> EncodedShred | None:
                return None

            def commit(r: EncodedShred | None) -> None:
                s = concat_shreds(parts)
                self._commit(s.num_rows, self._encode(s, page))
        else:

            def encode() -> EncodedShred | None:
                s = concat_shreds(parts)
                return s.num_rows, self._encode(s, page)

            def commit(r: EncodedShred | None) -> None:
                assert r is not None  # this branch's encode() always returns the page
                self._commit(*r)

        if self.worker is not None:
            self.worker.submit(encode, commit, sum(self._cost(p) for p in parts) if cost is None else cost)
        else:
            commit(encode())

    def _encode(self, s: Shred, page: int) -> tuple[Message, list[np.ndarray]]:
        """The layout and buffers of one page (thread-safe: reads only the writer's settings); at 2.3 the
        page's packed PlanarLayout encoding (encodings/planar/write_page.py) over the same machinery."""
        levels = page_levels(self.path, s.rep, s.defc)
        try:
            if self.version.planar:
                if self.opts.blob:  # (pylance 14 refuses them too: "Lance 2.3 does not write Blob v1 pages")
                    raise UnsupportedTypeError(f"blob column {self.path.leaf.name!r} is not writable at 2.3")
                return encode_planar_page(
                    s.values,
                    levels,
                    s.num_rows,
                    lambda: self._layout(s.values, levels, constants=False),
                    constants=not self.dictionary and self.packed is None and self.opts.structural_encoding is None,
                    fsl_dims=[st.size if st.kind == "fsl" else 0 for st in self.path.steps],
                    opts=self.opts if self.packed is None and self.opts.structural_encoding is None else None,
                )
            return self._layout(s.values, levels)
        except LanceError as e:
            raise e.at(column=self.index, page=page) from None

    def _layout(
        self, values: pa.Array, levels: PageLevels, constants: bool = True
    ) -> tuple[pb21.PageLayout, list[np.ndarray]]:
        """The 2.1/2.2 layout and buffers of one page (``constants``: False for no constant or all-null page)."""
        large_chunks = self.version.large_chunks
        opts = self.opts
        constant = None
        if (
            constants
            and self.version.constant_values
            and not (self.dictionary or opts.blob)
            and opts.structural_encoding is None
        ):
            constant = constant_value(values)
        if self.packed == "empty":
            return encode_empty_struct(levels, self.path.leaf.name)
        if opts.blob:
            return encode_blob(values, levels, large_chunks, self.blob_bases)
        if constants and values.null_count == len(values):
            return encode_all_null(levels, self.version)
        if fsl_of_variable(storage(values).type):
            raise UnsupportedTypeError(
                f"{values.type} with non-null values is not writable (pylance 14 writes "
                "fixed-size lists of strings/binary only when all null)"
            )
        if constant is not None:
            return encode_constant(levels, *constant)
        if self.packed is not None:
            check_packed_children(values)
            if self.packed == "variable":
                return encode_full_zip(values, levels, opts)
            return encode_miniblock(values, levels, large_chunks, False, opts)
        if self.dictionary:
            return encode_miniblock(values, levels, large_chunks, True, opts)
        if opts.structural_encoding == "fullzip" or (
            opts.structural_encoding is None
            and max_value_bytes(values) >= FULL_ZIP_MIN_BYTES
            and not wide_dictionary(values, opts)  # (pylance: a page dictionary before the widths)
        ):
            return encode_full_zip(values, levels, opts)
        try:
            return encode_miniblock(values, levels, large_chunks, False, opts)
        except ChunkTooLarge:  # levels or values that no chunk can hold: full-zip takes any
            return encode_full_zip(values, levels, opts)

    def _commit(self, num_rows: int, encoded: tuple[Message, list[np.ndarray]]) -> None:
        """Write the page's buffers and record it (in page order)."""
        layout, buffers = encoded
        self.write_page(layout, buffers, num_rows)

    def finish(self) -> list[LeafColumnWriter]:
        self.flush()
        return [self]


#: a top-level field's leaves: (path, options, packed kind) each, in pre-order (what depends on the schema alone)
Leaves = list[tuple[LeafPath, EncodingOptions, str | None]]


def plan_leaves(field: pa.Field, settings: WriteSettings) -> Leaves:
    """Each leaf of ``field`` with its options resolved once and its type checked for ``settings.version``."""
    version = settings.version
    if not version.maps and _has_map(field.type):
        raise UnsupportedTypeError(f"map field {field.name!r} needs file version 2.2")
    paths = leaf_paths(field)
    if not version.fixed_size_list_structs and any(st.kind == "fsl" for p in paths for st in p.steps):
        raise UnsupportedTypeError(f"fixed-size list of structs {field.name!r} needs file version 2.2")
    # pylance takes lance-encoding:structural-encoding from the top-level field for all its leaves
    top = options_for(field, version, profile=settings.profile, columns=settings.columns, price=settings.price)
    leaves: Leaves = []
    for p in paths:
        opts = (
            top
            if p.leaf is field
            else options_for(
                p.leaf,
                version,
                structural_encoding=top.structural_encoding,
                profile=settings.profile,
                columns=settings.columns,
                price=settings.price,
            )
        )
        leaves.append((p, opts, _check_leaf_type(p, version, opts)))
    return leaves


class StructuralFieldWriter:
    """Shreds each batch of a top-level field into its leaf columns."""

    def __init__(
        self,
        out: ContainerWriter,
        field: pa.Field,
        *,
        first_column: int,
        settings: WriteSettings,
        worker: PageWorker | None = None,
        leaves: Leaves | None = None,
    ) -> None:
        """Leaf columns numbered in pre-order from ``first_column`` (``field_metadata.column_count`` of the fields
        before it).  With a ``worker``, pages are encoded and written on its thread: drain it before ``metadata()``;
        ``leaves``: ``plan_leaves`` of the field with these settings, made before."""
        if not settings.version.structural:
            raise UnsupportedTypeError(f"structural field writers write versions 2.1 and 2.2, not {settings.version}")
        self.field = field
        self.leaves = leaves if leaves is not None else plan_leaves(field, settings)
        self.paths = [p for p, _, _ in self.leaves]
        self.columns = [  # leaf columns in pre-order, numbered from the field's first
            LeafColumnWriter(out, p, index=first_column + i, settings=settings, opts=opts, packed=kind, worker=worker)
            for i, (p, opts, kind) in enumerate(self.leaves)
        ]

    def append(self, arr: pa.Array) -> None:
        if len(arr) == 0:
            return
        for p, col in zip(self.paths, self.columns):
            col.add(shred(p, arr))

    def finish(self) -> list[LeafColumnWriter]:
        out: list[LeafColumnWriter] = []
        for col in self.columns:
            out.extend(col.finish())
        return out


#: the writer of one top-level field of a 2.1/2.2 file (encodings.field_writer_factory picks it by version)
make_field_writer = StructuralFieldWriter
