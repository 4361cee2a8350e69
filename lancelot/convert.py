"""``lancelot convert``: Parquet, CSV, Arrow IPC or Lance in, one Lance file out.

The input's format is told by its bytes (``sniff``): Parquet starts with ``PAR1``, an Arrow IPC
file with ``ARROW1``, an IPC stream with the 0xFFFFFFFF continuation marker, a Lance file ends
with ``LANC``; other text is read as CSV.  Batches stream from reader to writer (memory stays
a few pages); a tqdm progress bar (rows, bytes, rate, ETA) shows on a terminal, and a summary
line (rows, input and output size, time) ends the run.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import BinaryIO, TextIO

import pyarrow as pa

from lancelot.errors import LanceError, LanceFileNotFoundError

FORMATS = ("parquet", "csv", "arrow", "lance")
_NAMES = {"parquet": "Parquet", "csv": "CSV", "arrow": "Arrow IPC", "lance": "Lance"}


def _open(path: str) -> BinaryIO:
    """The input as a binary file (a local path or an fsspec URL); missing -> LanceFileNotFoundError."""
    try:
        if "://" in path:
            import fsspec

            f: BinaryIO = fsspec.open(path, "rb").open()  # (fsspec has no type information)
            return f
        if os.path.isdir(path):
            raise LanceError("is a directory, not an input file", path=path)
        return open(path, "rb")  # noqa: SIM115 - closed by the caller's ExitStack
    except FileNotFoundError:
        raise LanceFileNotFoundError("no such file", path=path) from None
    except OSError as e:
        raise LanceError(f"cannot open: {e.strerror or e}", path=path) from None


def _size(f: BinaryIO) -> int:
    pos = f.tell()
    n = f.seek(0, os.SEEK_END)
    f.seek(pos)
    return n


def sniff(f: BinaryIO, path: str) -> str:
    """The format of the open input ``f`` from its first and last bytes (one of FORMATS)."""
    size = _size(f)
    f.seek(0)
    head = f.read(65536)
    tail = b""
    if size >= 4:
        f.seek(size - 4)
        tail = f.read(4)
    f.seek(0)
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"ARROW1") or head.startswith(b"\xff\xff\xff\xff"):
        return "arrow"
    if tail == b"LANC":
        return "lance"
    if head and b"\0" not in head:
        try:
            head.decode("utf-8")
            return "csv"
        except UnicodeDecodeError as e:
            if e.start >= len(head) - 4:  # a character cut by the 64 KiB sample
                return "csv"
    raise LanceError(
        f"cannot tell the format: not Parquet, Arrow IPC, Lance or CSV text (use --from {{{','.join(FORMATS)}}})"
        if head
        else "the file is empty",
        path=path,
    )


class _Input:
    """An open input: schema, batches, total rows (None if unknown), bytes read so far."""

    def __init__(self, f: BinaryIO, path: str, fmt: str, stack: ExitStack) -> None:
        self.f, self.path, self.format, self.size = f, path, fmt, _size(f)
        self.total_rows: int | None = None
        try:
            self._open(stack)
        except LanceError:
            raise
        except (pa.ArrowException, ValueError, OSError) as e:
            raise LanceError(
                f"cannot read as {_NAMES[fmt]}: {str(e).splitlines()[0] if str(e) else e!r}", path=path
            ) from e

    def _open(self, stack: ExitStack) -> None:
        fmt, f = self.format, self.f
        if fmt == "parquet":
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(f)
            self.schema, self.total_rows = pf.schema_arrow, pf.metadata.num_rows
            self._batches = pf.iter_batches()
        elif fmt == "csv":
            import pyarrow.csv as pcsv

            r = pcsv.open_csv(f)
            self.schema, self._batches = r.schema, iter(r)
        elif fmt == "arrow":
            head = f.read(6)
            f.seek(0)
            if head == b"ARROW1":
                r = pa.ipc.open_file(f)
                self.schema = r.schema
                self._batches = (r.get_batch(i) for i in range(r.num_record_batches))
            else:
                r = pa.ipc.open_stream(f)
                self.schema, self._batches = r.schema, iter(r)
        else:
            from lancelot.reader import LanceFile

            lf = stack.enter_context(LanceFile(self.path))
            self.schema, self.total_rows = lf.schema, lf.num_rows
            self._batches = lf.iter_batches()

    def batches(self) -> Iterator[pa.RecordBatch]:
        try:
            yield from self._batches
        except LanceError:
            raise
        except (pa.ArrowException, ValueError, OSError) as e:
            raise LanceError(f"cannot read as {_NAMES[self.format]}: {str(e).splitlines()[0]}", path=self.path) from e

    def position(self) -> int:
        """Bytes of the input consumed so far (CSV's progress measure)."""
        try:
            return min(self.f.tell(), self.size)
        except (OSError, ValueError):
            return 0


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{int(n)} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n}"


def _terminal_size(err: TextIO) -> tuple[int, int]:
    """The terminal's (columns, lines); a new pseudo-terminal says 0x0 (tqdm then shows nothing):
    $COLUMNS/$LINES or 80x24 instead."""
    try:
        size = os.get_terminal_size(err.fileno())
        cols, lines = size.columns, size.lines
    except (OSError, ValueError, AttributeError):
        cols = lines = 0
    return (
        cols or int(os.environ.get("COLUMNS", "0") or 0) or 80,
        lines or int(os.environ.get("LINES", "0") or 0) or 24,
    )


def _is_dataset(dst: str) -> bool:
    try:
        import fsspec

        fs, p = fsspec.core.url_to_fs(dst)
        return bool(fs.isdir(p.rstrip("/") + "/_versions"))
    except (OSError, ValueError):
        return False


def _output_size(dst: str) -> int | None:
    """Bytes at ``dst``: a file's size, or a dataset directory's total."""
    try:
        import fsspec

        fs, p = fsspec.core.url_to_fs(dst)
        return int(fs.du(p, total=True)) if fs.isdir(p) else int(fs.size(p))
    except (OSError, ValueError):
        return None


def convert(
    src: str,
    dst: str,
    *,
    version: str | None = None,
    max_page_bytes: int | None = None,
    profile: str | None = None,
    src_format: str | None = None,
    progress: str = "auto",
    quiet: bool = False,
    dataset_mode: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Convert ``src`` to a Lance file at ``dst`` (or, with ``dataset_mode`` "create", "append" or
    "overwrite", to a new version of the Lance dataset at ``dst``); returns the rows written.

    ``progress``: "auto" (a bar when ``err`` is a terminal), "always" or "never".
    """
    from tqdm import tqdm

    from lancelot.writer import LanceWriter

    out = out or sys.stdout
    err = err or sys.stderr
    if dataset_mode is None and _is_dataset(dst):
        raise LanceError(f"{dst!r} is a Lance dataset: convert with --dataset append or --dataset overwrite")
    t0 = time.perf_counter()
    with ExitStack() as stack:
        f = stack.enter_context(_open(src))
        fmt = src_format or sniff(f, src)
        inp = _Input(f, src, fmt, stack)
        show = progress == "always" or (progress == "auto" and hasattr(err, "isatty") and err.isatty())
        by_rows = inp.total_rows is not None
        width, height = _terminal_size(err) if show else (80, 24)
        bar = stack.enter_context(
            tqdm(
                total=inp.total_rows if by_rows else inp.size,
                unit=" rows" if by_rows else "B",
                unit_scale=True,
                unit_divisor=1000 if by_rows else 1024,
                file=err,
                disable=not show,
                ncols=width,
                nrows=height,
                desc=f"{_NAMES[fmt]} -> Lance",
                mininterval=0.2,
                leave=True,
            )
        )  # the last frame stays: rows, rate, bytes
        rows = 0

        def tick(b: pa.RecordBatch, done: str) -> None:
            nonlocal rows
            rows += b.num_rows
            if show:
                bar.set_postfix_str(done if by_rows else f"{rows:,} rows, {done}", refresh=False)
                bar.update(b.num_rows if by_rows else inp.position() - bar.n)

        if dataset_mode is not None:
            from lancelot.dataset import write_dataset

            def counted() -> Iterator[pa.RecordBatch]:
                for b in inp.batches():
                    yield b
                    tick(b, "")

            ds = write_dataset(
                counted(),
                dst,
                mode=dataset_mode,
                data_storage_version=version,
                schema=inp.schema,
                profile=profile,
                max_page_bytes=max_page_bytes,
            )
            written_version = f"dataset version {ds.version}"
        else:
            with LanceWriter(dst, inp.schema, version=version, max_page_bytes=max_page_bytes, profile=profile) as w:
                for b in inp.batches():
                    w.write(b)
                    tick(b, f"wrote {human_bytes(w.bytes_written)}")
                written_version = w.version
        in_size = inp.size
    secs = time.perf_counter() - t0
    if not quiet:
        size = _output_size(dst)
        print(
            f"{src} -> {dst}: {rows:,} rows, {_NAMES[fmt]} {human_bytes(in_size)} -> Lance {written_version} "
            f"{human_bytes(size) if size is not None else '?'} in {secs:.2f} s",
            file=out,
        )
    return rows
