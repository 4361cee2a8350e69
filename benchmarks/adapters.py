"""One small adapter per implementation, so the harness measures them through the same calls.

An adapter writes a table (all at once, or streamed batch by batch) and opens a file as a
``Handle`` with ``take`` / ``read_range`` / ``scan`` / ``iter_batches``.  The lancelot adapter
turns "lancelot cannot do this yet" (an Unsupported* error, NotImplementedError, or a missing
API) into ``Skip`` with a printable reason, so a partial lancelot never breaks a run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

LANCE_VERSIONS = ("2.0", "2.1", "2.2")
#: rows per Parquet row group (pyarrow's default is 1Mi rows: one row group per 1M-row file)
PARQUET_ROW_GROUP_ROWS = 128 * 1024


class Skip(Exception):
    """This implementation cannot perform this operation; ``str(exc)`` says why."""


def _replace_atomically(path: Path, write) -> None:
    tmp = Path(f"{path}.tmp")
    if tmp.exists():
        tmp.unlink()
    write(str(tmp))
    os.replace(tmp, path)


class Handle:
    """An open file; every read returns a pyarrow Table (``columns=None`` means all)."""

    num_rows: int

    def take(self, indices: np.ndarray, columns: list[str] | None) -> pa.Table:
        raise NotImplementedError

    def read_range(self, start: int, num_rows: int, columns: list[str] | None) -> pa.Table:
        raise NotImplementedError

    def scan(self, columns: list[str] | None = None) -> pa.Table:
        raise NotImplementedError

    def iter_batches(self, batch_size: int) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError


class Adapter:
    """Writes and opens files of one implementation at one format version."""

    lib: str = ""
    version: str | None = None
    suffix: str = ".lance"
    #: untimed calls a read needs before it is in its steady state (lancelot: its numpy paths
    #: hand over to numba kernels after ``jit.HOT_CALLS`` calls)
    steady_calls: int = 0

    @property
    def name(self) -> str:
        return f"{self.lib} {self.version}" if self.version else self.lib

    def load(self) -> None:
        """Import the library (the probe does it before timing: an import is not part of a write)."""

    def write(self, table: pa.Table, path: Path) -> None:
        raise NotImplementedError

    def write_stream(self, schema: pa.Schema, batches: Iterable[pa.RecordBatch], path: Path) -> None:
        raise NotImplementedError

    def open(self, path: Path) -> Handle:
        raise NotImplementedError


# --------------------------------------------------------------------------- pylance


class PylanceHandle(Handle):
    def __init__(self, path: Path) -> None:
        from lance.file import LanceFileReader

        self._cls = LanceFileReader
        self._path = str(path)
        self._readers: dict[tuple[str, ...] | None, object] = {None: LanceFileReader(self._path)}
        self.num_rows = self._readers[None].num_rows()

    def _reader(self, columns: list[str] | None):
        key = None if columns is None else tuple(columns)
        r = self._readers.get(key)
        if r is None:
            r = self._readers[key] = self._cls(self._path, columns=list(columns))
        return r

    def take(self, indices, columns):
        # the file API wants strictly increasing indices (the harness passes sorted unique ones)
        return self._reader(columns).take_rows(np.asarray(indices).tolist()).to_table()

    def read_range(self, start, num_rows, columns):
        return self._reader(columns).read_range(int(start), int(num_rows)).to_table()

    def scan(self, columns=None):
        return self._reader(columns).read_all().to_table()

    def iter_batches(self, batch_size):
        return iter(self._reader(None).read_all(batch_size=batch_size).to_batches())


class PylanceAdapter(Adapter):
    lib = "pylance"

    def __init__(self, version: str) -> None:
        self.version = version

    def load(self) -> None:
        import lance.file  # noqa: F401

    def write_stream(self, schema, batches, path):
        from lance.file import LanceFileWriter

        def go(tmp: str) -> None:
            w = LanceFileWriter(tmp, schema, version=self.version)
            for b in batches:
                w.write_batch(b)
            w.close()

        _replace_atomically(Path(path), go)

    def write(self, table, path):
        self.write_stream(table.schema, [table], path)

    def open(self, path):
        return PylanceHandle(path)


# --------------------------------------------------------------------------- parquet


class ParquetHandle(Handle):
    """Random access the fair fast way: read only the row groups that hold the rows, then take."""

    def __init__(self, path: Path) -> None:
        self._pf = pq.ParquetFile(str(path))
        md = self._pf.metadata
        counts = np.array([md.row_group(i).num_rows for i in range(md.num_row_groups)], dtype=np.int64)
        self._starts = np.concatenate([[0], np.cumsum(counts)])
        self.num_rows = int(md.num_rows)

    def _groups(self, rows: np.ndarray) -> np.ndarray:
        return np.unique(np.searchsorted(self._starts, rows, side="right") - 1)

    def take(self, indices, columns):
        idx = np.asarray(indices, dtype=np.int64)
        order = np.argsort(idx, kind="stable")
        srt = idx[order]
        group_of = np.searchsorted(self._starts, srt, side="right") - 1
        cuts = np.flatnonzero(np.diff(group_of)) + 1
        # one row group at a time: read it, keep only the wanted rows (memory stays one group)
        pieces = [
            self._pf.read_row_group(int(group_of[run[0]]), columns=columns).take(
                pa.array(srt[run] - self._starts[group_of[run[0]]])
            )
            for run in np.split(np.arange(len(srt)), cuts)
            if len(run)
        ]
        if not pieces:
            empty = self._pf.schema_arrow.empty_table()
            return empty.select(columns) if columns is not None else empty
        out = pa.concat_tables(pieces)
        if not np.array_equal(order, np.arange(len(idx))):
            out = out.take(pa.array(np.argsort(order, kind="stable")))
        return out

    def read_range(self, start, num_rows, columns):
        groups = self._groups(np.array([start, start + num_rows - 1]))
        groups = np.arange(groups[0], groups[-1] + 1)
        t = self._pf.read_row_groups(groups.tolist(), columns=columns)
        return t.slice(int(start - self._starts[groups[0]]), int(num_rows))

    def scan(self, columns=None):
        return self._pf.read(columns=columns)

    def iter_batches(self, batch_size):
        return (b for b in self._pf.iter_batches(batch_size=batch_size))


class ParquetAdapter(Adapter):
    lib = "parquet"
    suffix = ".parquet"

    def __init__(self, row_group_rows: int = PARQUET_ROW_GROUP_ROWS) -> None:
        self.row_group_rows = row_group_rows

    def write_stream(self, schema, batches, path):
        def go(tmp: str) -> None:
            with pq.ParquetWriter(tmp, schema) as w:
                for b in batches:
                    w.write_batch(b, row_group_size=self.row_group_rows)

        _replace_atomically(Path(path), go)

    def write(self, table, path):
        _replace_atomically(Path(path), lambda tmp: pq.write_table(table, tmp, row_group_size=self.row_group_rows))

    def open(self, path):
        return ParquetHandle(path)


# --------------------------------------------------------------------------- lancelot


def _lancelot_unsupported() -> tuple[type[BaseException], ...]:
    kinds: list[type[BaseException]] = [NotImplementedError]
    try:
        from lancelot import errors
    except ImportError:
        return tuple(kinds)
    for n in ("UnsupportedVersionError", "UnsupportedEncodingError", "UnsupportedTypeError"):
        k = getattr(errors, n, None)
        if k is not None:
            kinds.append(k)
    return tuple(kinds)


def lancelot_api(name: str):
    """``lancelot.<name>``, or Skip if lancelot does not have it (yet)."""
    try:
        import lancelot
    except ImportError as e:
        raise Skip(f"cannot import lancelot: {e}") from None
    obj = getattr(lancelot, name, None)
    if obj is None:
        raise Skip(f"lancelot has no {name} yet")
    return obj


class _Guard:
    """Context manager: lancelot's "unsupported" errors become Skip."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is not None and isinstance(exc, _lancelot_unsupported()):
            raise Skip(f"{type(exc).__name__}: {exc}") from exc
        return False


class LancelotHandle(Handle):
    def __init__(self, path: Path) -> None:
        with _Guard():
            self._f = lancelot_api("LanceFile")(str(path))
            self.num_rows = int(self._f.num_rows)

    def take(self, indices, columns):
        with _Guard():
            return self._f.take(np.asarray(indices), columns=columns)

    def read_range(self, start, num_rows, columns):
        with _Guard():
            return self._f.read_range(int(start), int(start + num_rows), columns=columns)

    def scan(self, columns=None):
        with _Guard():
            return self._f.read(columns)

    def iter_batches(self, batch_size):
        with _Guard():
            it = iter(self._f.iter_batches(batch_size=batch_size))
        while True:
            with _Guard():
                try:
                    b = next(it)
                except StopIteration:
                    return
            yield b


class LancelotAdapter(Adapter):
    lib = "lancelot"

    @property
    def steady_calls(self) -> int:  # type: ignore[override]
        from lancelot.util.jit import HOT_CALLS

        return HOT_CALLS

    def __init__(self, version: str) -> None:
        self.version = version

    def load(self) -> None:
        lancelot_api("write_table")

    def write(self, table, path):
        write_table = lancelot_api("write_table")
        with _Guard():
            _replace_atomically(Path(path), lambda tmp: write_table(table, tmp, version=self.version))

    def write_stream(self, schema, batches, path):
        writer_cls = lancelot_api("LanceWriter")

        def go(tmp: str) -> None:
            w = writer_cls(tmp, schema, version=self.version)
            write = getattr(w, "write_batch", None) or w.write
            for b in batches:
                write(b)
            w.close()

        with _Guard():
            _replace_atomically(Path(path), go)

    def open(self, path):
        return LancelotHandle(path)


def make_adapter(lib: str, version: str | None, parquet_row_group_rows: int = PARQUET_ROW_GROUP_ROWS) -> Adapter:
    if lib == "pylance":
        return PylanceAdapter(version or "2.1")
    if lib == "lancelot":
        return LancelotAdapter(version or "2.0")
    if lib == "parquet":
        return ParquetAdapter(parquet_row_group_rows)
    raise ValueError(f"unknown implementation {lib!r}")


def probe_lancelot(versions: Iterable[str], scratch: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Which versions lancelot can write and read: returns (write_skips, read_skips) as {version: reason}.

    Writes a tiny table with lancelot (and with pylance, for the read probe) in ``scratch``.
    """
    table = pa.table({"a": pa.array([1, 2, 3], pa.int64()), "s": pa.array(["x", "yy", "zzz"])})
    write_skips: dict[str, str] = {}
    read_skips: dict[str, str] = {}
    scratch.mkdir(parents=True, exist_ok=True)
    for v in versions:
        own = scratch / f"probe-lancelot-{v}.lance"
        ref = scratch / f"probe-pylance-{v}.lance"
        try:
            LancelotAdapter(v).write(table, own)
        except Skip as e:
            write_skips[v] = str(e)
        except Exception as e:  # a lancelot bug: report it, measure the rest
            write_skips[v] = f"failed: {type(e).__name__}: {e}"
        PylanceAdapter(v).write(table, ref)
        try:
            if not same_data(LancelotAdapter(v).open(ref).scan(), table):
                read_skips[v] = "lancelot read a pylance probe file wrongly"
        except Skip as e:
            read_skips[v] = str(e)
        except Exception as e:
            read_skips[v] = f"failed: {type(e).__name__}: {e}"
    return write_skips, read_skips


def same_data(got: pa.Table, want: pa.Table) -> bool:
    """Same column names, types and values (chunking, nullability flags and metadata ignored)."""
    if got.num_rows != want.num_rows or got.column_names != want.column_names:
        return False
    return all(g.type == w.type and g.equals(w) for g, w in zip(got.columns, want.columns))
