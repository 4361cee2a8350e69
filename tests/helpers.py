"""Helpers shared by the test packages: pylance (the oracle) writes and reads single Lance files.

Each package's own helpers live in its helpers.py; these are the ones several packages use.
pylance is imported inside the functions, so a module that skips without it still imports these.
"""

from __future__ import annotations

import signal
import tracemalloc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from lancelot.errors import LanceError
from lancelot.format.container import read_metadata
from lancelot.io.source import open_source
from lancelot.util import jit

#: rows per page of the ``chunky`` file (tests/file/conftest.py): pylance writes one page per batch with a small
#: data cache, so pages of several mini-block chunks
CHUNKY_ROWS = 6000


def pylance_write(
    path: Any,
    data: pa.Table | pa.RecordBatch | Sequence[pa.Table | pa.RecordBatch],
    version: str,
    schema: pa.Schema | None = None,
    **writer_kw: Any,
) -> str:
    """pylance's LanceFileWriter writes ``data``: a table, a batch, or a list of them, one
    ``write_batch`` each (with a small ``data_cache_bytes``, one page per write).  Options whose value
    is None are left at pylance's default."""
    from lance.file import LanceFileWriter

    parts = list(data) if isinstance(data, (list, tuple)) else [data]
    kw = {k: v for k, v in writer_kw.items() if v is not None}
    with LanceFileWriter(str(path), schema or parts[0].schema, version=version, **kw) as w:
        for part in parts:
            w.write_batch(part)
    return str(path)


def pylance_write_column(
    path: Any, arr: pa.Array, version: str, metadata: dict | None = None, nullable: bool = True, **writer_kw: Any
) -> str:
    """pylance writes one column ``c`` holding ``arr`` (field ``metadata`` and nullability as given)."""
    schema = pa.schema([pa.field("c", arr.type, nullable=nullable, metadata=metadata)])
    return pylance_write(path, pa.Table.from_arrays([arr], schema=schema), version, **writer_kw)


def pylance_read(path: Any, **reader_kw: Any) -> pa.Table:
    """The whole file as pylance's LanceFileReader reads it."""
    from lance.file import LanceFileReader

    return LanceFileReader(str(path), **reader_kw).read_all().to_table()


def column_bytes(path: Any) -> list[int]:
    """Bytes of each column's page buffers, from the file's metadata."""
    md = read_metadata(open_source(str(path)))
    return [sum(sum(p.buffer_sizes) for p in c.pages) for c in md.columns]


@contextmanager
def bounded(max_traced: int, seconds: int = 30) -> Iterator[None]:
    """Fail on a hang (a SIGALRM watchdog after ``seconds``) or on a huge allocation (tracemalloc's peak over
    ``max_traced`` bytes): the guard of the damaged-input tests."""

    def on_alarm(signum: int, frame: Any) -> None:
        raise TimeoutError(f"read still running after {seconds} s")

    # no kernel prepared on a background thread while tracemalloc starts or stops: CPython 3.11's tracemalloc
    # crashes a thread allocating while it is stopped (a segfault in a numba compile seen in CI)
    jit.wait_for_warm_ups()
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    tracemalloc.start()
    try:
        yield
    finally:
        _, peak = tracemalloc.get_traced_memory()
        signal.alarm(0)
        jit.wait_for_warm_ups()
        tracemalloc.stop()
        signal.signal(signal.SIGALRM, old)
        assert peak < max_traced, f"the read allocated {peak} bytes"  # (a read that raised too)


def builtin_class(e: BaseException) -> type:
    """The first builtin class of ``e``'s (ValueError, OSError...): the class pylance raises, which lancelot's error
    subclasses, so the two libraries' errors are compared by it."""
    return next(c for c in type(e).__mro__ if c.__module__ == "builtins")


def assert_same_error(theirs: BaseException, ours: BaseException, what: object) -> None:
    """lancelot's error ``ours`` is a LanceError of the builtin class of pylance's ``theirs``."""
    assert isinstance(ours, LanceError) and isinstance(ours, builtin_class(theirs)), (what, theirs, ours)
