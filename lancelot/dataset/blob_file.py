"""``BlobFile``: one blob of a dataset as a read-only, seekable binary file (pylance's ``lance.BlobFile``).

It holds where the blob's bytes lie (a byte source, an offset and a size), never the bytes: each read fetches only the
range it asks for, through a read-ahead buffer of at most ``buffer_size`` bytes for small sequential reads (0 disables
it).  ``read_range`` and ``read_ranges`` read blob-local ranges without touching the cursor or the buffer.  Memory is
bounded by what a call returns plus the buffer."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING

from lancelot.errors import LanceError

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

    from lancelot.io.source import ByteSource

#: pylance's default sequential read-ahead (``lance.blob.DEFAULT_BLOB_BUFFER_SIZE``)
DEFAULT_BLOB_BUFFER_SIZE = 512 * 1024


class BlobRangeError(LanceError, ValueError):
    """A range past the end of the blob."""


def check_buffer_size(buffer_size: int) -> int:
    """pylance's rules: an int (not a bool), not negative."""
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int):
        raise TypeError(f"buffer_size must be an int, got {type(buffer_size).__name__}")
    if buffer_size < 0:
        raise ValueError("buffer_size must be non-negative")
    return buffer_size


class BlobFile(io.BufferedIOBase):
    """One blob as a read-only, seekable binary file (pylance's ``BlobFile``), from
    [`LanceDataset.take_blobs`][lancelot.dataset.dataset.LanceDataset.take_blobs].

    Nothing is read when it is made; reads go to the blob's bytes in its data file (or its own file, for blob v2's large
    blobs), through a read-ahead buffer. It works wherever a binary file does: ``PIL.Image.open(f)``,
    ``shutil.copyfileobj``, ``io.TextIOWrapper``.

    Examples:
        >>> field = pa.field("img", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
        >>> blobs = pa.table({"img": [b"abc", b"defgh"]}, schema=pa.schema([field]))
        >>> bds = lancelot.write_dataset(blobs, "blobs.lance")
        >>> f = bds.take_blobs("img", indices=[1])[0]
        >>> f.size(), f.read(2), f.read(), f.read_range(1, 3)
        (5, b'de', b'fgh', b'efg')
    """

    def __init__(
        self,
        opener: Callable[[], ByteSource],
        offset: int,
        size: int,
        *,
        buffer_size: int = DEFAULT_BLOB_BUFFER_SIZE,
        where: str = "",
        shared: bool = False,
    ) -> None:
        """A view of ``size`` bytes at ``offset`` of a byte source (use ``LanceDataset.take_blobs``).

        Args:
            opener: Opens the byte source (the data file) on the first read.
            offset: Where the blob starts in the source.
            size: The blob's size in bytes.
            buffer_size: Bytes read ahead per read.
            where: The dataset, column and row, for error messages.
            shared: The source belongs to another owner and is not closed with this file.
        """
        super().__init__()
        self._opener = opener
        self._src: ByteSource | None = None
        self._shared = shared  # the source belongs to someone else (the data file): never closed here
        self._offset = int(offset)
        self._size = int(size)
        self._pos = 0
        self._buffer_size = check_buffer_size(buffer_size)
        self._buf = b""
        self._buf_at = 0  # blob-local offset of _buf
        self.where = where

    # -- the byte source -----------------------------------------------------------------------
    def _source(self) -> ByteSource:
        if self._src is None:
            self._src = self._opener()
        return self._src

    def _fetch(self, offset: int, length: int) -> bytes:
        """Blob-local ``[offset, offset + length)``, exactly (the caller checked the bounds)."""
        if length <= 0:
            return b""
        return bytes(self._source().read(self._offset + offset, length))

    def _check_open(self, what: str = "read") -> None:
        if self.closed:
            raise ValueError(f"{what} of closed file")

    # -- io.IOBase -----------------------------------------------------------------------------
    def close(self) -> None:
        """Release the byte source (unless it is shared with the data file); ``with`` calls it on exit. Closing twice is
        allowed; reading after it raises ``ValueError``."""
        if not self.closed:
            if self._src is not None and not self._shared:
                self._src.close()
            self._src = None
            self._buf = b""
        super().close()

    def readable(self) -> bool:
        """Whether the file can be read.

        Returns:
            True.
        """
        return True

    def seekable(self) -> bool:
        """Whether the file can seek.

        Returns:
            True.
        """
        return True

    def writable(self) -> bool:
        """Whether the file can be written.

        Returns:
            False: blobs are read-only.
        """
        return False

    def size(self) -> int:
        """The blob's size.

        Returns:
            Its size in bytes.
        """
        return self._size

    def tell(self) -> int:
        """The cursor's position.

        Returns:
            The blob offset the next read starts at.
        """
        self._check_open("tell")
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move the cursor (past the end is allowed; reads there return ``b""``).

        Args:
            offset: Bytes from ``whence``.
            whence: ``io.SEEK_SET``, ``io.SEEK_CUR`` or ``io.SEEK_END``.

        Returns:
            The new position.

        Raises:
            ValueError: A negative position, or a closed file.
        """
        self._check_open("seek")
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._size + offset
        else:
            raise ValueError(f"Invalid whence: {whence}")
        if pos < 0:
            raise ValueError(f"negative seek value {pos}")
        self._pos = int(pos)
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        """Bytes from the cursor on; the cursor moves past them.

        Args:
            size: At most this many bytes; None or negative for the rest of the blob.

        Returns:
            The bytes (``b""`` at the end).
        """
        self._check_open()
        if size is None or size < 0:
            return self.readall()
        n = max(0, min(int(size), self._size - self._pos))
        if n == 0:
            return b""
        start = self._pos
        b0 = self._buf_at
        if b0 <= start and start + n <= b0 + len(self._buf):  # served by the read-ahead buffer
            out = self._buf[start - b0 : start - b0 + n]
        elif n >= self._buffer_size:  # a large read goes straight to the source
            out = self._fetch(start, n)
        else:  # refill the buffer from here on
            fill = min(self._buffer_size, self._size - start)
            self._buf, self._buf_at = self._fetch(start, fill), start
            out = self._buf[:n]
        self._pos = start + len(out)
        return out

    def read1(self, size: int = -1) -> bytes:
        """As ``read`` (one call to the source at most).

        Args:
            size: At most this many bytes; negative: ``io.DEFAULT_BUFFER_SIZE``.

        Returns:
            The bytes.
        """
        self._check_open()
        return self.read(io.DEFAULT_BUFFER_SIZE if size is None or size < 0 else size)

    def readall(self) -> bytes:
        """The rest of the blob, from the cursor on.

        Returns:
            The bytes.
        """
        self._check_open()
        out = self._fetch(self._pos, max(0, self._size - self._pos)) if self._pos < self._size else b""
        self._pos = max(self._pos, self._size)
        return out

    def readinto(self, b: WriteableBuffer) -> int:
        """Read into a writable buffer.

        Args:
            b: A writable bytes-like object (``bytearray``, ``memoryview``, numpy array).

        Returns:
            The number of bytes read.
        """
        self._check_open("readinto")
        view = memoryview(b).cast("B")
        if view.readonly:
            raise TypeError(f"readinto() argument must be read-write bytes-like object, not {type(b).__name__}")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def readinto1(self, b: WriteableBuffer) -> int:
        """As ``readinto``.

        Args:
            b: A writable bytes-like object.

        Returns:
            The number of bytes read.
        """
        return self.readinto(b)

    # -- blob-local ranges (no cursor, no buffer) ------------------------------------------------
    def _check_range(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0:
            raise BlobRangeError(f"{self.where}: blob range offset and length must be non-negative")
        if offset + length > self._size:
            raise BlobRangeError(f"{self.where}: blob range end {offset + length} exceeds blob size {self._size}")

    def read_range(self, offset: int, length: int) -> bytes:
        """Bytes at a blob offset, without moving the cursor or using the buffer.

        Args:
            offset: Blob offset of the first byte.
            length: How many bytes.

        Returns:
            The bytes.

        Raises:
            ValueError: A negative offset or length, or a range past the blob's end (a ``BlobRangeError``).
        """
        self._check_open()
        self._check_range(int(offset), int(length))
        return self._fetch(int(offset), int(length))

    def read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """Several byte ranges, fetched in one coalesced pass.

        Args:
            ranges: ``(offset, length)`` pairs, blob-local.

        Returns:
            One ``bytes`` per range, in input order.

        Raises:
            ValueError: A range outside the blob (a ``BlobRangeError``).
        """
        self._check_open()
        spans = [(int(o), int(n)) for o, n in ranges]
        for o, n in spans:
            self._check_range(o, n)
        wanted = [(self._offset + o, n) for o, n in spans if n]
        got = iter(self._source().read_ranges(wanted) if wanted else [])
        return [bytes(next(got)) if n else b"" for _, n in spans]

    def __repr__(self) -> str:
        return f"<BlobFile size={self._size}>"
