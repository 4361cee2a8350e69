"""A fragment's manifest entry as a value (table format, "Fragments"): ``FragmentMetadata``, the
picklable ``DataFragment`` that travels between processes, and what a manifest's entries alone tell
(``manifest_live_rows``).  Below ``Fragment`` (fragment.py) and the operations, which all take or
return these.
"""

from __future__ import annotations

import json as _json
import warnings
from typing import Any, TypeVar

from google.protobuf import json_format

from lancelot.errors import LanceValueError
from lancelot.format.pb import table_pb2

DATA_DIR = "data"


class DataFile:
    """One data file of a fragment, as pylance's ``lance.fragment.DataFile``: ``path`` is the file's name in
    ``data/`` (a str that may still be called, as pylance's deprecated ``path()``), ``fields`` the field ids it holds,
    ``column_indices`` their columns in the file, the file's format version and size."""

    def __init__(
        self,
        path: str,
        fields: list[int],
        column_indices: list[int] | None = None,
        file_major_version: int = 0,
        file_minor_version: int = 0,
        file_size_bytes: int | None = None,
        base_id: int | None = None,
    ) -> None:
        self._path = path
        self.fields = fields
        self.column_indices = column_indices or []
        self.file_major_version = file_major_version
        self.file_minor_version = file_minor_version
        self.file_size_bytes = file_size_bytes
        self.base_id = base_id

    @classmethod
    def from_pb(cls, d: table_pb2.DataFile) -> DataFile:
        """The ``DataFile`` message's value (size 0: not recorded, None)."""
        base = int(d.base_id) if d.HasField("base_id") else None
        return cls(
            d.path,
            list(d.fields),
            list(d.column_indices),
            d.file_major_version,
            d.file_minor_version,
            int(d.file_size_bytes) or None,
            base,
        )

    @property
    def path(self) -> str:
        """The file's name in ``data/`` (calling it, as pylance's deprecated ``path()``, warns)."""
        return _CallableStr(self._path)

    def field_ids(self) -> list[int]:
        """Deprecated (as pylance's): ``fields``."""
        warnings.warn("DataFile.field_ids is deprecated, use DataFile.fields instead", DeprecationWarning, stacklevel=2)
        return self.fields

    def _key(self) -> tuple[Any, ...]:
        return (
            self._path,
            self.fields,
            self.column_indices,
            self.file_major_version,
            self.file_minor_version,
            self.file_size_bytes,
            self.base_id,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DataFile) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # (mutable, as pylance's dataclass)

    def __repr__(self) -> str:
        return (
            f"DataFile(path='{self._path}', fields={self.fields}, column_indices={self.column_indices}, "
            f"file_major_version={self.file_major_version}, file_minor_version={self.file_minor_version}, "
            f"file_size_bytes={self.file_size_bytes})"
        )


class _CallableStr(str):
    """A data file's path that pylance's older callers may still call."""

    def __call__(self) -> str:
        warnings.warn("DataFile.path() is deprecated, use DataFile.path instead", DeprecationWarning, stacklevel=2)
        return str(self)

    def __reduce__(self) -> tuple[type[str], tuple[str]]:
        return (str, (str(self),))


_DELETION_TYPES = {"array": table_pb2.DeletionFile.ARROW_ARRAY, "bitmap": table_pb2.DeletionFile.BITMAP}


class DeletionFile:
    """A fragment's deletion file, as pylance's ``lance.fragment.DeletionFile``: the version it was written at
    (``read_version``), its random ``id``, its form (``file_type`` 'array' or 'bitmap') and how many rows it deletes.

    Args:
        read_version: The dataset version the deletion was made against.
        id: The file's id (its name's last part).
        file_type: 'array' (an Arrow file of positions) or 'bitmap' (a roaring bitmap).
        num_deleted_rows: The rows it deletes.
        base_id: The base path it lives under (shallow clones), None for the dataset's own.

    Raises:
        LanceValueError: An unknown ``file_type``.
    """

    __slots__ = ("_pb",)

    def __init__(self, read_version: int, id: int, file_type: str, num_deleted_rows: int, base_id: int | None) -> None:
        if file_type not in _DELETION_TYPES:
            raise LanceValueError(f"file_type must be either 'array' or 'bitmap', got '{file_type}'")
        self._pb = table_pb2.DeletionFile(
            file_type=_DELETION_TYPES[file_type], read_version=read_version, id=id, num_deleted_rows=num_deleted_rows
        )
        if base_id is not None:
            self._pb.base_id = base_id

    @classmethod
    def from_pb(cls, d: table_pb2.DeletionFile) -> DeletionFile:
        """The ``DeletionFile`` message's value."""
        out = cls.__new__(cls)
        out._pb = table_pb2.DeletionFile()
        out._pb.CopyFrom(d)
        return out

    def to_pb(self) -> table_pb2.DeletionFile:
        """A new ``DeletionFile`` message of it."""
        out = table_pb2.DeletionFile()
        out.CopyFrom(self._pb)
        return out

    @property
    def read_version(self) -> int:
        return int(self._pb.read_version)

    @property
    def id(self) -> int:
        return int(self._pb.id)

    @property
    def file_type(self) -> str:
        return "bitmap" if self._pb.file_type == table_pb2.DeletionFile.BITMAP else "array"

    @property
    def num_deleted_rows(self) -> int:
        return int(self._pb.num_deleted_rows)

    @property
    def base_id(self) -> int | None:
        return int(self._pb.base_id) if self._pb.HasField("base_id") else None

    def asdict(self) -> dict[str, Any]:
        """Its fields as a dict (``DeletionFile(**d)`` makes it again)."""
        keys = ("read_version", "id", "file_type", "num_deleted_rows", "base_id")
        return {k: getattr(self, k) for k in keys}

    def json(self) -> str:
        """``asdict()`` as JSON text."""
        return _json.dumps(self.asdict(), separators=(",", ":"))

    @staticmethod
    def from_json(json: str) -> DeletionFile:
        """What ``json()`` gives, read back."""
        return DeletionFile(**_json.loads(json))

    def path(self, fragment_id: int, base_uri: str | None = None) -> str:
        """The file's path relative to the dataset root (under ``base_uri`` when given)."""
        from lancelot.dataset.deletion import deletion_path

        rel = deletion_path(fragment_id, self._pb)
        return f"{base_uri.rstrip('/')}/{rel}" if base_uri else rel

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeletionFile) and self._pb.SerializeToString() == other._pb.SerializeToString()

    def __hash__(self) -> int:
        return hash(self._pb.SerializeToString())

    def __reduce__(self) -> tuple[Any, ...]:
        return (DeletionFile, (self.read_version, self.id, self.file_type, self.num_deleted_rows, self.base_id))

    def __repr__(self) -> str:
        return f"DeletionFile(type='{self.file_type}', num_deleted_rows={self.num_deleted_rows})"


_M = TypeVar("_M", bound="_InlineMeta")


class _InlineMeta:
    """A fragment's inline sequence (the serialized protobuf message the manifest holds), as pylance's opaque meta
    objects: made by reading a fragment or from JSON, never directly; compared by content; unhashable; picklable."""

    __slots__ = ("inline",)
    _KEY = ""  # the JSON key of an inline sequence
    inline: bytes

    def __init__(self) -> None:
        raise TypeError(f"cannot create '{type(self).__name__}' instances")

    @classmethod
    def of(cls, inline: bytes) -> Any:
        """The meta of the serialized sequence ``inline``."""
        out = object.__new__(cls)
        out.inline = bytes(inline)
        return out

    def json(self) -> str:
        """The meta as pylance's JSON text (``{"Inline": [bytes...]}``, ``{"inline": ...}`` for row versions)."""
        return _json.dumps({self._KEY: list(self.inline)}, separators=(",", ":"))

    @classmethod
    def from_json(cls: type[_M], json: str) -> _M:
        """What ``json()`` gives, read back.

        Args:
            json: The JSON text.

        Returns:
            The meta.

        Raises:
            LanceValueError: Not such JSON (a ValueError, as pylance).
        """
        try:
            d = _json.loads(json)
        except (TypeError, ValueError) as e:
            raise LanceValueError(f"Could not load {cls.__name__} due to error: {e}") from None
        out: _M = cls._loaded(d, " due to error")
        return out

    @classmethod
    def _loaded(cls, d: object, error: str) -> Any:
        if not isinstance(d, dict) or set(d) != {cls._KEY}:
            raise LanceValueError(f"Could not load {cls.__name__}{error}: expected {{{cls._KEY!r}: [bytes...]}}")
        try:
            return cls.of(bytes(d[cls._KEY]))
        except (TypeError, ValueError) as e:
            raise LanceValueError(f"Could not load {cls.__name__}{error}: {e}") from None

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.inline == self.inline

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (_meta_of, (type(self).__name__, self.inline))


class RowIdMeta(_InlineMeta):
    """A fragment's stable row ids (pylance's ``lance.fragment.RowIdMeta``): ``FragmentMetadata.row_id_meta``."""

    __slots__ = ()
    _KEY = "Inline"

    def asdict(self) -> dict[str, Any]:
        """The meta as a dict (``{"Inline": [bytes...]}``, what ``to_json`` of its fragment holds)."""
        return {self._KEY: list(self.inline)}

    @staticmethod
    def from_dict(dict: dict[str, Any]) -> RowIdMeta:
        """What ``asdict()`` gives, read back.

        Args:
            dict: The dict.

        Returns:
            The meta.

        Raises:
            LanceValueError: Not such a dict (a ValueError, as pylance).
        """
        out: RowIdMeta = RowIdMeta._loaded(dict, "")
        return out


class RowDatasetVersionMeta(_InlineMeta):
    """The dataset version each row of a fragment was created in or last updated in (pylance's
    ``lance.fragment.RowDatasetVersionMeta``): ``FragmentMetadata.created_at_version_meta`` and
    ``last_updated_at_version_meta``."""

    __slots__ = ()
    _KEY = "inline"

    def asdict(self) -> dict[str, Any]:
        """Not supported, as pylance's (use ``json()``).

        Returns:
            Nothing.

        Raises:
            NotImplementedError: Always.
        """
        raise NotImplementedError("PyRowDatasetVersionMeta.asdict is not yet supported.")


def _meta_of(name: str, inline: bytes) -> _InlineMeta:
    """Unpickle a ``RowIdMeta`` or ``RowDatasetVersionMeta``."""
    out: _InlineMeta = {"RowIdMeta": RowIdMeta, "RowDatasetVersionMeta": RowDatasetVersionMeta}[name].of(inline)
    return out


def _inline(meta: object, cls: type[_InlineMeta], what: str) -> bytes:
    """The serialized sequence of a meta given to ``FragmentMetadata``: the meta object, its ``asdict`` / ``to_json``
    form, or (as lancelot took before) the bytes themselves."""
    if isinstance(meta, cls):
        return meta.inline
    if isinstance(meta, bytes | bytearray):
        return bytes(meta)
    if isinstance(meta, dict):
        inline: bytes = cls._loaded(meta, "").inline
        return inline
    raise LanceValueError(f"FragmentMetadata: {what} must be a {cls.__name__}, not {type(meta).__name__}")


class FragmentMetadata:
    """One fragment's manifest entry (a serialized ``DataFragment`` message): what
    ``write_fragments`` returns and ``commit`` takes. Picklable and JSON-able, so Spark tasks
    or other processes can hand fragments to the one that commits (pylance's ``FragmentMetadata``,
    built from the same fields; a value: its fields are read-only here).

    Args:
        id: The fragment id (0 until ``commit`` assigns one to a new fragment).
        files: Its data files (``DataFile``, pylance's, or their dicts).
        physical_rows: Rows in the data files, deleted ones included.
        deletion_file: Its ``DeletionFile``, if any.
        row_id_meta: Its stable row ids (a ``RowIdMeta``, its ``asdict()``, or the serialized sequence), if any.
        created_at_version_meta: The rows' creation versions (a ``RowDatasetVersionMeta``); a commit derives them
            for new fragments, as pylance's does.
        last_updated_at_version_meta: The rows' last-update versions, likewise.
        overlays: Not taken (lancelot has no data overlays).

    Raises:
        LanceValueError: Overlays given, or a meta of another kind.
    """

    __slots__ = ("message",)

    def __init__(
        self,
        id: int,
        files: list[Any],
        physical_rows: int,
        deletion_file: DeletionFile | None = None,
        row_id_meta: RowIdMeta | bytes | dict[str, Any] | None = None,
        created_at_version_meta: RowDatasetVersionMeta | None = None,
        last_updated_at_version_meta: RowDatasetVersionMeta | None = None,
        overlays: list[Any] | None = None,
    ) -> None:
        if overlays:
            raise LanceValueError("FragmentMetadata: overlays are not taken by lancelot")
        f = table_pb2.DataFragment(id=id, physical_rows=physical_rows)
        f.files.extend(as_data_file(d) for d in files)
        if deletion_file is not None:
            f.deletion_file.CopyFrom(deletion_file.to_pb())
        if row_id_meta is not None:
            f.inline_row_ids = _inline(row_id_meta, RowIdMeta, "row_id_meta")
        if created_at_version_meta is not None:
            f.inline_created_at_versions = _inline(created_at_version_meta, RowDatasetVersionMeta, "created_at")
        if last_updated_at_version_meta is not None:
            f.inline_last_updated_at_versions = _inline(last_updated_at_version_meta, RowDatasetVersionMeta, "updated")
        self.message = f.SerializeToString()

    @classmethod
    def from_pb(cls, frag: table_pb2.DataFragment) -> FragmentMetadata:
        """Wrap a ``DataFragment`` message.

        Args:
            frag: The message.

        Returns:
            Its ``FragmentMetadata``.
        """
        out = cls.__new__(cls)
        out.message = frag.SerializeToString()
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FragmentMetadata) and self.message == other.message

    def __hash__(self) -> int:
        return hash(self.message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_from_message, (self.message,))

    def to_pb(self) -> table_pb2.DataFragment:
        """The ``DataFragment`` message.

        Returns:
            A new message (changing it changes nothing here).
        """
        f = table_pb2.DataFragment()
        f.ParseFromString(self.message)
        return f

    def to_json(self) -> dict[str, Any]:
        """The fragment as pylance's ``FragmentMetadata.to_json()`` dict (JSON-serializable), so
        either library's driver can commit the other's fragments.

        Returns:
            A dict of plain values.
        """
        from lancelot.dataset.fragment_json import to_dict

        return to_dict(self.to_pb())

    @classmethod
    def from_json(cls, s: str | dict[str, Any]) -> FragmentMetadata:
        """Read what ``to_json`` gives, or pylance's, as a dict or as JSON text.

        Args:
            s: The dict, or its JSON text.

        Returns:
            The ``FragmentMetadata``.
        """
        from lancelot.dataset.fragment_json import from_dict

        d = _json.loads(s) if isinstance(s, str | bytes) else s
        if isinstance(d, dict) and "physical_rows" not in d and "physicalRows" in d:  # protobuf JSON (older)
            return cls.from_pb(json_format.ParseDict(d, table_pb2.DataFragment()))
        return cls.from_pb(from_dict(d))

    @property
    def id(self) -> int:
        """The fragment id (0 until ``commit`` assigns one to a new fragment)."""
        return int(self.to_pb().id)

    @property
    def physical_rows(self) -> int:
        """Rows in the fragment's data files, deleted ones included."""
        return int(self.to_pb().physical_rows)

    @property
    def files(self) -> list[DataFile]:
        """The data files (path, field ids, column indices, file version, size)."""
        return [DataFile.from_pb(d) for d in self.to_pb().files]

    def data_files(self) -> list[DataFile]:
        """Deprecated (as pylance's): ``files``."""
        warnings.warn(
            "FragmentMetadata.data_files is deprecated. Use .files instead.", DeprecationWarning, stacklevel=2
        )
        return self.files

    @property
    def deletion_file(self) -> DeletionFile | None:
        """The deletion file, or None without deletions."""
        f = self.to_pb()
        return DeletionFile.from_pb(f.deletion_file) if f.HasField("deletion_file") else None

    @property
    def row_id_meta(self) -> RowIdMeta | None:
        """The fragment's stable row ids (inline), None without them."""
        f = self.to_pb()
        return RowIdMeta.of(f.inline_row_ids) if f.WhichOneof("row_id_sequence") == "inline_row_ids" else None

    @property
    def created_at_version_meta(self) -> RowDatasetVersionMeta | None:
        """The version each row was created in (inline), None where the fragment has none (no stable row ids)."""
        f = self.to_pb()
        return (
            RowDatasetVersionMeta.of(f.inline_created_at_versions) if f.HasField("inline_created_at_versions") else None
        )

    @property
    def last_updated_at_version_meta(self) -> RowDatasetVersionMeta | None:
        """The version each row was last updated in (inline), None where the fragment has none."""
        f = self.to_pb()
        has = f.HasField("inline_last_updated_at_versions")
        return RowDatasetVersionMeta.of(f.inline_last_updated_at_versions) if has else None

    @property
    def num_deleted_rows(self) -> int:
        """Deleted rows, as the deletion file's entry counts them (0 without deletions)."""
        f = self.to_pb()
        return int(f.deletion_file.num_deleted_rows) if f.HasField("deletion_file") else 0

    num_deletions = num_deleted_rows

    @property
    def num_rows(self) -> int:
        """Rows after deletions."""
        return self.physical_rows - self.num_deleted_rows

    def __repr__(self) -> str:
        return (
            f"FragmentMetadata(id={self.id}, files={self.files}, physical_rows={self.physical_rows}, "
            f"deletion_file={self.deletion_file}, row_id_meta={self.row_id_meta!r}, "
            f"created_at_version_meta={self.created_at_version_meta!r}, "
            f"last_updated_at_version_meta={self.last_updated_at_version_meta!r}, overlays=[])"
        )


def _from_message(message: bytes) -> FragmentMetadata:
    """Unpickle a ``FragmentMetadata``."""
    out = FragmentMetadata.__new__(FragmentMetadata)
    out.message = message
    return out


def manifest_live_rows(m: table_pb2.Manifest) -> int | None:
    """Live rows of a version from its manifest alone (physical rows less each deletion file's
    count), or None when some fragment's entry does not give them (then the files are read)."""
    if not m.HasField("writer_version"):  # (rows_trusted: such manifests' counts are not trusted)
        return None if len(m.fragments) else 0
    total = 0
    for f in m.fragments:
        n = f.physical_rows
        if n <= 0:
            return None
        if f.HasField("deletion_file"):
            gone = f.deletion_file.num_deleted_rows
            if not gone:
                return None
            n -= gone
        total += n
    return total


def as_data_file(f: Any) -> table_pb2.DataFile:
    """A ``DataFile`` message of a lancelot message, a pylance ``DataFile`` or its dict."""
    if isinstance(f, table_pb2.DataFile):
        out = table_pb2.DataFile()
        out.CopyFrom(f)
        return out
    if not isinstance(f, dict):
        f = {
            k: getattr(f, k)
            for k in (
                "path",
                "fields",
                "column_indices",
                "file_major_version",
                "file_minor_version",
                "file_size_bytes",
                "base_id",
            )
            if hasattr(f, k)
        }
    df = table_pb2.DataFile(
        path=str(f["path"]),  # (pylance's is a callable str)
        fields=[int(x) for x in f["fields"]],
        column_indices=[int(x) for x in f.get("column_indices") or []],
        file_major_version=int(f.get("file_major_version") or 0),
        file_minor_version=int(f.get("file_minor_version") or 0),
        file_size_bytes=int(f.get("file_size_bytes") or 0),
    )
    if f.get("base_id") is not None:
        df.base_id = int(f["base_id"])
    return df
