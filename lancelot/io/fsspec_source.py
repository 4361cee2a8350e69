"""``FsspecSource``: any fsspec URL (memory://, s3://...), where every request is a round trip."""

from __future__ import annotations

from typing import Any

from lancelot.errors import LanceError, LanceFileNotFoundError
from lancelot.io.byte_source import ByteSource


class FsspecSource(ByteSource):
    """Any fsspec URL (memory://, s3://, file://...): every request is a round trip.

    So: one ``info`` call opens it; near ranges merge across gaps of up to 1 MiB (at ~20 ms a
    request and ~100 MB/s, fetching a 1 MiB gap costs less than another request); the merged
    requests of a round go out side by side (``max_concurrency``); the file's tail, read once
    by ``read_metadata``, is kept (footer, metadata and schema are served from it).
    """

    coalesce_gap = 1 << 20
    max_concurrency = 64
    round_trip_costly = True

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        import fsspec

        from lancelot.io.storage_options import fsspec_options

        self.path = url
        fs, p = fsspec.core.url_to_fs(url, **fsspec_options(url, storage_options))
        self._fs, self._p = fs, p
        try:
            info = fs.info(p)
        except FileNotFoundError:
            raise LanceFileNotFoundError("no such file", path=url) from None
        except OSError as e:
            raise LanceError(f"cannot open: {e.strerror or e}", path=url) from None
        if info.get("type") == "directory":
            raise LanceError("is a directory, not a Lance file", path=url)
        try:
            self.size = int(info["size"])
        except (KeyError, TypeError, ValueError):
            raise LanceError("the store gives no size for this object", path=url) from None

    def _current_size(self) -> int | None:
        try:
            return int(self._fs.size(self._p))
        except OSError:
            return None

    def _read(self, offset: int, length: int) -> bytes:
        data: bytes = self._fs.cat_file(self._p, start=offset, end=offset + length)
        if offset + length == self.size and len(data) == length and (not self._kept or offset < self._kept[0][0]):
            self._kept = ((offset, memoryview(data)),)  # the (longest) tail: metadata reads after open hit it
        return data
