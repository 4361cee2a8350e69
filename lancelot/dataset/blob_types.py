"""The values users write into blob v2 columns, with pylance 14's names: ``Blob``, ``BlobType`` (the ``lance.blob.v2``
extension), ``blob_array``, ``blob_field``, and ``BlobColumn`` (a binary array read as file objects).

A blob v2 value is inline bytes, or an external URI (optionally a byte range of it); the logical storage is
``struct<data: large_binary, uri: string, position: uint64, size: uint64>``, the extension name ``lance.blob.v2``
(``dataset/blob_write.py`` turns such columns into descriptions and sidecars at 2.2+).  ``BlobType`` is not registered
with pyarrow: pylance registers its own class under the same name, and either is written the same way (by name and
storage)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import pyarrow as pa

from lancelot.dataset.blob_schema import DEDICATED_KEY, INLINE_KEY, PACK_FILE_KEY
from lancelot.errors import LanceValueError

#: the largest threshold pylance takes (a 64-bit usize)
_MAX_THRESHOLD = 2**64 - 1
STORAGE = pa.struct(
    [
        pa.field("data", pa.large_binary()),
        pa.field("uri", pa.utf8()),
        pa.field("position", pa.uint64()),
        pa.field("size", pa.uint64()),
    ]
)


class BlobValueError(LanceValueError):
    """A blob value that is neither bytes nor a URI (or both), or a bad external range."""


@dataclass(frozen=True)
class Blob:
    """One blob v2 value: inline ``data``, or an external ``uri`` (with ``position`` and ``size``: a range of it).  None
    (not a Blob) is a null; ``Blob.empty()`` an empty value.

    Examples:
        >>> lancelot.Blob.from_bytes(b"abc"), lancelot.Blob.from_uri("s3://bucket/a.mp4", 0, 1024).size
        (Blob(data=b'abc', uri=None, position=None, size=None), 1024)
    """

    data: bytes | None = None
    uri: str | None = None
    position: int | None = None
    size: int | None = None

    def __post_init__(self) -> None:
        if self.data is not None and self.uri is not None:
            raise BlobValueError("a blob holds data or a uri, not both")
        if self.uri == "":
            raise BlobValueError("a blob's uri cannot be empty")
        if (self.position is None) != (self.size is None):
            raise BlobValueError("an external blob range needs both position and size, or neither")
        if self.position is not None and self.uri is None:
            raise BlobValueError("a blob range (position, size) needs a uri")
        if self.data is None and self.uri is None:
            raise BlobValueError("a blob needs data or a uri (a null blob is None)")
        if self.size == 0:
            raise BlobValueError("an external blob range must not be empty (size > 0)")

    @staticmethod
    def from_bytes(data: bytes | bytearray | memoryview) -> Blob:
        """Inline bytes.

        Args:
            data: The bytes.

        Returns:
            The Blob.
        """
        return Blob(data=bytes(data))

    @staticmethod
    def from_uri(uri: str, position: int | None = None, size: int | None = None) -> Blob:
        """An external object, or ``size`` bytes of it from ``position``.

        Args:
            uri: Where the object is (``s3://...``, ``file://...``).
            position: The range's first byte (with ``size``).
            size: The range's length (with ``position``).

        Returns:
            The Blob.
        """
        if (position is not None and position < 0) or (size is not None and size < 0):
            raise BlobValueError("an external blob's position and size must be non-negative")
        return Blob(uri=uri, position=position, size=size)

    @staticmethod
    def empty() -> Blob:
        """A valid empty blob (not a null).

        Returns:
            The Blob.
        """
        return Blob(data=b"")


class BlobType(pa.ExtensionType):  # type: ignore[misc]  # pyarrow ships no stubs
    """The ``lance.blob.v2`` extension type (storage ``struct<data, uri, position, size>``)."""

    def __init__(self, storage: pa.DataType = STORAGE) -> None:
        """The type over ``storage`` (the full struct, or pylance's minimal ``struct<data, uri>``)."""
        pa.ExtensionType.__init__(self, storage, "lance.blob.v2")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> BlobType:
        return cls(storage_type)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self).__arrow_ext_deserialize__, (self.storage_type, b"")


def blob_array(values: list[Any]) -> pa.ExtensionArray:
    """A ``lance.blob.v2`` array from Python values: bytes-like (inline), str (an external URI), ``Blob``, or None (a
    null).

    Args:
        values: The values.

    Returns:
        A ``pyarrow.ExtensionArray`` of ``BlobType``.
    """
    cols: dict[str, list[Any]] = {"data": [], "uri": [], "position": [], "size": []}
    nulls = []
    for v in values:
        if isinstance(v, bytes | bytearray | memoryview):
            v = Blob(data=bytes(v))
        elif isinstance(v, str):
            v = Blob(uri=v)
        elif v is not None and not isinstance(v, Blob):
            raise TypeError(f"blob values are bytes-like, str (a URI), Blob or None, not {type(v).__name__}")
        nulls.append(v is None)
        for k in cols:
            cols[k].append(None if v is None else getattr(v, k))
    children = [pa.array(cols[f.name], f.type) for f in STORAGE]
    storage = pa.StructArray.from_arrays(children, fields=list(STORAGE), mask=pa.array(nulls, pa.bool_()))
    return pa.ExtensionArray.from_storage(BlobType(), storage)


def _threshold(name: str, value: int | None, allow_zero: bool) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'non-negative' if allow_zero else 'positive'}")
    if value > _MAX_THRESHOLD:
        raise OverflowError(f"{name} must fit in 64 bits")
    return str(value)


def blob_field(
    name: str,
    *,
    nullable: bool = True,
    inline_size_threshold: int | None = None,
    dedicated_size_threshold: int | None = None,
    pack_file_size_threshold: int | None = None,
) -> pa.Field:
    """A ``lance.blob.v2`` field, with pylance's per-field size thresholds.

    Args:
        name: The field's name.
        nullable: Whether it takes nulls.
        inline_size_threshold: Values up to this many bytes stay in the data file (default 64 KiB).
        dedicated_size_threshold: Values larger than this get a sidecar file of their own (default 4 MiB); the others
            share packed sidecars.
        pack_file_size_threshold: A packed sidecar's largest size (default 1 GiB).

    Returns:
        The ``pyarrow.Field``.
    """
    md = {
        key: v
        for key, v in (
            (INLINE_KEY, _threshold("inline_size_threshold", inline_size_threshold, True)),
            (DEDICATED_KEY, _threshold("dedicated_size_threshold", dedicated_size_threshold, False)),
            (PACK_FILE_KEY, _threshold("pack_file_size_threshold", pack_file_size_threshold, False)),
        )
        if v is not None
    }
    return pa.field(name, BlobType(), nullable, md or None)


class BlobColumn:
    """A binary array's values as file objects (``io.BytesIO``), one per row, as pylance's."""

    def __init__(self, blob_column: pa.Array | pa.ChunkedArray) -> None:
        """Wrap ``blob_column`` (``binary`` or ``large_binary``)."""
        if not isinstance(blob_column, pa.Array | pa.ChunkedArray):
            raise ValueError(f"Expected a pyarrow.Array or pyarrow.ChunkedArray, got {type(blob_column)}")
        if not (pa.types.is_large_binary(blob_column.type) or pa.types.is_binary(blob_column.type)):
            raise ValueError(f"Expected a binary array, got {blob_column.type}")
        self.blob_column = blob_column

    def __iter__(self) -> Iterator[IO[bytes]]:
        for v in self.blob_column:
            yield io.BytesIO(v.as_py())  # a null reads as empty, as pylance's
