"""``Fragment``'s columns: which data file holds each column (a fragment's files each hold some of its fields, by field
id: table format "Data files"), and the assembly of one table from the files' parts."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lancelot import field_metadata, versions
from lancelot.dataset import blob  # blob columns read as their descriptions (dataset/blob.py)
from lancelot.dataset.memo import IdentityMemo
from lancelot.errors import CorruptFileError, LanceError, LanceValueError, UnsupportedEncodingError
from lancelot.extension_types import dataset_columns
from lancelot.format.pb import table_pb2

if TYPE_CHECKING:
    from lancelot.dataset.field_projection import FieldNode
    from lancelot.dataset.fragment import Fragment
    from lancelot.format.pb import file_pb2
    from lancelot.reader import LanceFile


#: the column of a scan's intermediate tables holding each row's physical position
POS = "__lancelot_position"


def check_relative_path(p: str, where: str) -> str:
    """A data-file path must stay inside the dataset's data directory."""
    if p and "/" not in p and "\\" not in p and ":" not in p and p != "..":
        return p  # one plain name (what writers write): normpath would return it unchanged
    if (
        not p
        or p.startswith(("/", "\\"))
        or "://" in p
        or ":" in p.split("/", 1)[0]
        or any(part in ("..", "") for part in p.replace("\\", "/").split("/"))
    ):
        raise CorruptFileError(f"{where}: data file path {p!r} escapes the dataset root (not a plain relative path)")
    return posixpath.normpath(p)


#: per schema object (files of one shape share theirs, reader.py): whether its file holds neither blob nor JSONB
#: columns, the (fields, schema) of a projection of a scan schema, and the scan schema of a dataset schema
_PLAIN, _OUT_SCHEMAS, _SCAN_SCHEMAS = IdentityMemo(), IdentityMemo(), IdentityMemo()


def plain_file(schema: pa.Schema) -> bool:
    """Whether a file of this schema holds neither blob nor JSONB columns (its columns read as they are)."""
    return _PLAIN.recall(id(schema), schema, _plain, schema)


def _plain(schema: pa.Schema) -> bool:
    from lancelot import field_metadata
    from lancelot.extension_types import holds_lance_json

    return not any(blob.holds_blob(f, field_metadata.is_blob) or holds_lance_json(f) for f in schema)


def out_schema(schema: pa.Schema, columns: list[str]) -> tuple[list[pa.Field], pa.Schema]:
    """(fields, schema) of ``columns`` of a scan schema, built once per schema and projection: a scan of many small
    fragments assembles one table per fragment with the same ones."""
    return _OUT_SCHEMAS.recall((id(schema), tuple(columns)), schema, _out_schema, schema, columns)


def _out_schema(schema: pa.Schema, columns: list[str]) -> tuple[list[pa.Field], pa.Schema]:
    fields = [schema.field(c) for c in columns]
    return fields, pa.schema(fields, metadata=schema.metadata)


def scan_schema(schema: pa.Schema) -> pa.Schema:
    """The scan schema of a dataset schema (blob columns as their descriptions)."""
    return _SCAN_SCHEMAS.recall(id(schema), schema, blob.scan_schema, schema)


class ColumnsMixin:
    """Fragment's column-to-file mapping (mixed into ``Fragment``; see dataset/fragment.py)."""

    def file_columns(self: Fragment) -> list[tuple[LanceFile, dict[str, str]]]:
        """Each data file of the fragment, opened, with the dataset columns it holds (lancelot's own).

        Returns:
            ``(LanceFile, {dataset column name: file column name})`` per data file, in the manifest's order; kept
            until a ``reading`` that opened them ends.

        Raises:
            CorruptFileError: A data file's row count differs from the fragment's.
        """
        if self._fc is not None:
            return self._fc
        out = []
        ds = self._ds
        for df in self._pb.files:
            lf = ds.data_file(df, self.where)
            if lf.num_rows != self.physical_rows:
                raise CorruptFileError(
                    f"{self.where}: data file {df.path} has {lf.num_rows} rows, the fragment has {self.physical_rows}"
                )
            names = self.file_column_names(lf, df)
            out.append((lf, names))
        self._fc = out
        return out

    @staticmethod
    @contextmanager
    def reading(frags: Sequence[Fragment]) -> Iterator[None]:
        """A read of ``frags`` after which none of them holds the data files it opened (the dataset's file cache keeps
        the recent ones): memory and GC work stay per read.

        Args:
            frags: The fragments read.

        Returns:
            A context manager.
        """
        opened = [f._fc is not None for f in frags]
        try:
            yield
        finally:
            for f, was in zip(frags, opened):
                if not was:
                    f._fc = None

    def file_column_names(self: Fragment, lf: LanceFile, df: table_pb2.DataFile) -> dict[str, str]:
        """{dataset column: file column} of one data file, mapped once per dataset object for the data files of one
        shape (2.1+: the same schema, shared by reader.py, and the same field ids; their mapping is the same).

        Args:
            lf: The data file (its ``descriptor`` and ``version`` are read).
            df: Its ``DataFile`` message in the fragment.

        Returns:
            The file's column name of each dataset column it holds.
        """
        if not versions.parse(lf.version).structural:
            return self._map_file(lf, df)
        key = ("names", id(lf.descriptor), tuple(df.fields))
        return dict(self._ds.file_shapes.recall(key, lf.descriptor, self._map_file, lf, df))

    def _map_file(self: Fragment, lf: LanceFile, df: table_pb2.DataFile) -> dict[str, str]:
        """{dataset column: file column} of one data file.

        ``DataFile.fields`` is authoritative: its ids belong, in order, to the file's fields that own columns (at 2.0
        every field, at 2.1+ the leaves), pre-order; -2 marks a dropped field. Files whose lists do not line up are
        matched by the field ids in their own schema."""
        tops = self._ds.top_field_names
        desc = list(lf.descriptor.schema.fields)
        owners = field_metadata.column_owners(desc, lf.version)
        fparent = {int(f.id): int(f.parent_id) for f in desc}

        def file_top(fid: int) -> int:
            hops = 0
            while fparent.get(fid, -1) != -1 and hops < 256:
                fid, hops = fparent[fid], hops + 1
            return fid

        fname = {int(f.id): f.name for f in desc if int(f.parent_id) == -1}
        if len(owners) == len(df.fields):
            pairs = [(int(f.id), int(d)) for f, d in zip(owners, df.fields)]
            self._check_columns(lf, df, owners)
        else:
            listed = {int(x) for x in df.fields}
            for x in list(listed):  # and their ancestors: lancelot once listed a packed struct's children, not it
                while fparent.get(x, -1) != -1 and fparent[x] not in listed:
                    x = fparent[x]
                    listed.add(x)
            pairs = [(int(f.id), int(f.id)) for f in owners if int(f.id) in listed]
        names: dict[str, str] = {}
        for fid, did in pairs:
            top = tops.get(did) if did >= 0 else None
            if top is not None and top not in names:
                names[top] = fname.get(file_top(fid), "")
        return {k: v for k, v in names.items() if v}

    def _check_columns(self: Fragment, lf: LanceFile, df: table_pb2.DataFile, owners: list[file_pb2.Field]) -> None:
        """Refuse a 2.0 data file whose manifest places a top-level field at another column than the file reader does
        (as for Lance 0.13's two-column strings, had the reader not recognised them): reading it by the reader's layout
        would decode one field's column as another's."""
        if versions.parse(lf.version).structural or len(df.column_indices) != len(owners):
            return
        for f, col in zip(owners, df.column_indices):
            if int(f.parent_id) != -1 or col < 0:
                continue
            mine = lf.columns.get(f.name)
            if mine and mine[0].index != col:
                raise UnsupportedEncodingError(
                    f"{self.where}: data file {df.path} stores field {f.name!r} at column {col}, lancelot's "
                    f"2.0 reader expects {mine[0].index} (a column layout of some 2.0 writer that lancelot "
                    f"does not know)"
                )

    def _columns(self: Fragment, columns: Sequence[str] | None) -> list[str]:
        names = self._ds.schema.names
        if columns is None:
            return list(names)
        for c in columns:
            if c not in names:
                raise LanceValueError(f"dataset {self._ds.uri!r}: no column named {c!r} (columns: {names})")
        return list(columns)

    def _assemble(
        self: Fragment, columns: list[str], n: int, read: Callable[[LanceFile, list[str]], pa.Table]
    ) -> pa.Table:
        """Build a table of ``columns`` from ``read(lancefile, file_names) -> Table`` per data file."""
        got: dict[str, pa.ChunkedArray | pa.Array] = {}
        src: dict[str, int] = {}  # column -> index of the data file it came from
        try:
            files = self.file_columns()
            lf, names = files[0] if len(files) == 1 else (None, {})
            if lf is not None and columns and all(names.get(c) == c for c in columns) and plain_file(lf.schema):
                # the common case: one data file holding every column under its own name; its table is the
                # answer when its schema is the scan's (no second table built)
                t = read(lf, columns)
                out = out_schema(scan_schema(self._ds.schema), columns)[1]
                if t.schema.equals(out, check_metadata=True):
                    return t
                got.update(zip(columns, t.columns))
                src.update(dict.fromkeys(columns, 0))
                files = []
            split: dict[str, list[tuple[int, pa.ChunkedArray | pa.Array]]] = {}  # structs in several files
            for k, (lf, names) in enumerate(files):
                want = [c for c in columns if c in names and c not in got]
                more = [
                    c for c in columns if c in names and c in got and pa.types.is_nested(self._ds.schema.field(c).type)
                ]
                if not want and not more:
                    continue
                src.update(dict.fromkeys(want, k))
                if plain_file(lf.schema):  # no blob or JSONB column: the file's columns as they are
                    cols = read(lf, [names[c] for c in want + more]).columns
                else:
                    cols = dataset_columns(read(blob.described(lf), [names[c] for c in want + more]))  # blobs
                got.update(zip(want, cols))
                for c, col in zip(more, cols[len(want) :]):
                    split.setdefault(c, [(src[c], got[c])]).append((k, col))
        except LanceError as e:
            if self.where in str(e):
                raise
            raise type(e)(f"{self.where}: {e.message}", path=e.path, column=e.column, page=e.page) from None
        fields, schema = out_schema(scan_schema(self._ds.schema), columns)  # blobs: descriptions
        arrays = []
        for f in fields:
            a = got.get(f.name)
            if f.name in split:
                a = self._merged(f, split[f.name])
            elif a is None:
                a = pa.nulls(n, f.type)
            elif a.type != f.type:  # nested fields dropped or renamed since; else damage, never a cast
                a = self._by_field_id(f, a, src[f.name])
            arrays.append(a)
        if not fields:
            # (replace_schema_metadata would drop the rows of a column-less table)
            return pa.table({"_": pa.nulls(n)}, metadata=schema.metadata).drop_columns(["_"])
        return pa.Table.from_arrays(arrays, schema=schema)

    def _by_field_id(self: Fragment, f: pa.Field, a: pa.Array | pa.ChunkedArray, k: int) -> pa.Array | pa.ChunkedArray:
        """Data file ``k``'s column for dataset column ``f``, its nested fields matched by id."""
        from lancelot.dataset.field_projection import field_trees, project

        fnode, ids = self._file_node(f, k)
        dnode = field_trees(self._ds.manifest.fields)[f.name]
        return project(a, fnode, dnode, f.type, ids, self.where)

    def _file_node(self: Fragment, f: pa.Field, k: int) -> tuple[FieldNode, dict[int, int]]:
        """Data file ``k``'s field for dataset column ``f``, and {file field id: dataset field id} of that file."""
        from lancelot.dataset.field_projection import field_trees

        lf, names = self.file_columns()[k]
        df = self.data_fragment.files[k]
        desc = list(lf.descriptor.schema.fields)
        owners = field_metadata.column_owners(desc, lf.version)
        ids = {int(o.id): int(d) for o, d in zip(owners, df.fields)} if len(owners) == len(df.fields) else {}
        fparent = {int(g.id): int(g.parent_id) for g in desc}
        dparent = {int(g.id): int(g.parent_id) for g in self._ds.manifest.fields}
        for fo, do in list(ids.items()):  # a leaf's structs are the dataset's structs above its field
            fo, do = fparent.get(fo, -1), dparent.get(do, -1)
            while fo != -1 and do != -1 and fo not in ids:
                ids[fo] = do
                fo, do = fparent.get(fo, -1), dparent.get(do, -1)
        return field_trees(desc)[names[f.name]], ids

    def _merged(self: Fragment, f: pa.Field, parts: list[tuple[int, pa.ChunkedArray | pa.Array]]) -> pa.Array:
        """Struct column ``f`` from the columns of several data files (``(file index, column)``), by field id."""
        from lancelot.dataset.field_projection import field_trees
        from lancelot.dataset.fragment_struct_parts import Part, merge_parts

        pieces = []
        for k, a in parts:
            node, ids = self._file_node(f, k)
            pieces.append(Part(a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a, node, ids))
        return merge_parts(pieces, field_trees(self._ds.manifest.fields)[f.name], f.type, self.where)

    def read_physical(self: Fragment, columns: list[str], start: int, stop: int) -> pa.Table:
        """Physical rows ``[start, stop)`` of ``columns``, deleted ones included (blob columns as descriptions).

        Args:
            columns: Dataset column names.
            start: First physical row.
            stop: End (exclusive).

        Returns:
            The rows as a table of the scan schema's ``columns``.
        """
        return self._assemble(columns, stop - start, lambda lf, names: lf.read_range(start, stop, names))

    def take_physical(self: Fragment, columns: list[str], positions: np.ndarray) -> pa.Table:
        """The physical rows at ``positions``, deleted ones included (blob columns as descriptions).

        Args:
            columns: Dataset column names.
            positions: Physical row positions (sorted, unique, checked by the caller).

        Returns:
            The rows as a table of the scan schema's ``columns``, in ``positions``' order.
        """
        return self._assemble(columns, len(positions), lambda lf, names: lf.take(positions, names))

    def empty_table(self: Fragment, columns: list[str], positions: bool = False) -> pa.Table:
        """No rows, of the scan schema's ``columns``, read from the data files' schemas (lancelot's own).

        Args:
            columns: Dataset column names.
            positions: Add the scan's physical-position column.

        Returns:
            An empty ``pyarrow.Table``.
        """
        from lancelot.reader import LanceFile

        def none(lf: LanceFile, names: list[str]) -> pa.Table:
            if type(lf) is not LanceFile:  # a view (blob descriptions): its own empty read
                return lf.read_range(0, 0, names)
            return pa.schema([lf.schema.field(n) for n in names]).empty_table()  # no page touched

        t = self._assemble(columns, 0, none)
        return t.append_column(POS, pa.array([], pa.int64())) if positions else t

    # -- joins written, not committed (dataset/fragment_join.py) --------------------------------------------------
    def merge(
        self: Fragment, data_obj: object, left_on: str, right_on: str | None = None, schema: object = None
    ) -> tuple[object, object]:
        """The data's other columns joined to this fragment on a key, as a new data file (a left join: no match gives
        nulls), uncommitted, as pylance.

        Args:
            data_obj: The new columns and the key: a pyarrow Table, RecordBatchReader or anything
                ``write_dataset`` takes.
            left_on: The fragment's key column.
            right_on: The data's key column (default: ``left_on``).
            schema: The data's schema, when ``data_obj`` is a stream that does not carry one.

        Returns:
            ``(FragmentMetadata, LanceSchema)`` for ``LanceOperation.Merge``.
        """
        from lancelot.dataset.fragment_join import merge

        return merge(self, data_obj, left_on, right_on, schema)

    def update_columns(
        self: Fragment,
        data_obj: object,
        left_on: str = "_rowid",
        right_on: str | None = None,
        schema: object = None,
        *,
        with_offsets: bool = False,
    ) -> tuple[object, ...]:
        """New values of existing columns for the rows the data's key matches, as a new data file, uncommitted:
        as pylance.

        Args:
            data_obj: The key and the new values of existing columns (a pyarrow Table, RecordBatchReader or
                anything ``write_dataset`` takes).
            left_on: The fragment's key column (``_rowid`` by default).
            right_on: The data's key column (default: ``left_on``).
            schema: The data's schema, when ``data_obj`` is a stream that does not carry one.
            with_offsets: Also return the matched live rows' offsets, as a serialized roaring bitmap.

        Returns:
            ``(FragmentMetadata, fields_modified)``, or ``(FragmentMetadata, fields_modified, offsets)`` with
            ``with_offsets``, for ``LanceOperation.Update``.
        """
        from lancelot.dataset.fragment_join import update_columns

        return update_columns(self, data_obj, left_on, right_on, schema, with_offsets)
