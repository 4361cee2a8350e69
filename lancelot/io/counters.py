"""Process-wide I/O counters: pylance's ``lance.iops_counter`` and ``lance.bytes_read_counter``, and the write
counts behind ``IOStats.write_iops`` / ``written_bytes`` (dataset/io_stats.py).

Every read request of a data file's bytes (data files, blob files) is counted once it returns, with the bytes it
brought: a local ``pread``/``preadv`` (a page-cache probe that fails reads nothing and is not counted), an object
store's ranged or whole GET.  Manifests, deletion files and other metadata are not counted, nor reads served from
memory already read (pylance counts its I/O scheduler's requests only).  Every object written is counted once it is
complete, with its size: a data file, deletion file, transaction file, manifest, version hint, tag (pylance counts
its object store's requests: the same count for files under its multipart size, about 5 MiB, and a few more
requests for larger data files).  The counters only grow, from 0 at import.

Each thread adds to a cell of its own (``[reads, bytes read, writes, bytes written]``, written by that thread only):
no lock on the read path, which a take crosses a dozen times; the counters are the sums over every cell, those of
finished threads included."""

from __future__ import annotations

import threading

_local = threading.local()
_cells: list[list[int]] = []
_lock = threading.Lock()  # (appending a cell)


def _cell() -> list[int]:
    """This thread's cell (made on its first count)."""
    try:
        cell: list[int] = _local.cell
    except AttributeError:
        cell = _local.cell = [0, 0, 0, 0]
        with _lock:
            _cells.append(cell)
    return cell


def count_read(nbytes: int) -> None:
    """Count one read request that brought ``nbytes`` bytes."""
    try:
        cell: list[int] = _local.cell
    except AttributeError:
        cell = _cell()
    cell[0] += 1
    cell[1] += nbytes


def count_write(nbytes: int) -> None:
    """Count one object of ``nbytes`` bytes written whole."""
    cell = _cell()
    cell[2] += 1
    cell[3] += nbytes


def iops_counter() -> int:
    """The number of read requests of data file bytes made by this process so far (see the module docstring).

    Returns:
        The count (it only grows).
    """
    return sum(c[0] for c in tuple(_cells))


def bytes_read_counter() -> int:
    """The number of data file bytes read by this process so far (see the module docstring).

    Returns:
        The count (it only grows).
    """
    return sum(c[1] for c in tuple(_cells))


def write_counters() -> tuple[int, int]:
    """The objects written by this process so far and their bytes (see the module docstring).

    Returns:
        ``(writes, bytes written)`` (they only grow).
    """
    cells = tuple(_cells)
    return sum(c[2] for c in cells), sum(c[3] for c in cells)
