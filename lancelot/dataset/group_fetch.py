"""The data and deletion files of a group of small fragments fetched together (group_files.py decodes them).

Over an object store every data file whole (its size from the manifest, ``DataFile.file_size_bytes``; asked first, side
by side, when the manifest does not give it) together with every deletion file, side by side (``REMOTE_IN_FLIGHT``
requests in flight): a scan task of dozens of fragments costs a round trip or two, not three per fragment.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from lancelot.format.pb import table_pb2
from lancelot.io.counters import count_read
from lancelot.util.pools import shared_pool

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.store import ObjectStore

#: data files larger than this are read by the general path (their pages are worth planning)
MAX_FILE_BYTES = 1 << 20


def read_all(paths: list[str]) -> list[bytes | None]:
    """The bytes of small local files (None: missing, or too large to be read whole here).  All are opened and announced
    to the OS first (``posix_fadvise(WILLNEED)``), so a group's reads not in the page cache are in flight together, then
    read one by one."""
    fds: list[tuple[int, int] | None] = []
    try:
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                fds.append(None)
                continue
            fds.append((fd, -1))
            size = os.fstat(fd).st_size
            if size <= MAX_FILE_BYTES:
                fds[-1] = (fd, size)
                if _ADVISE:
                    os.posix_fadvise(fd, 0, size, os.POSIX_FADV_WILLNEED)
        out: list[bytes | None] = []
        for entry in fds:
            if entry is None or entry[1] < 0:
                out.append(None)
                continue
            data = os.read(entry[0], entry[1])
            count_read(len(data))
            out.append(data if len(data) == entry[1] else None)
        return out
    finally:
        for entry in fds:
            if entry is not None:
                os.close(entry[0])


_ADVISE = hasattr(os, "posix_fadvise")
#: requests a group keeps in flight on a remote store (every scan task shares them)
REMOTE_IN_FLIGHT = 32


def fetch_remote(store: ObjectStore, paths: list[str], sizes: list[int | None]) -> list[bytes | None]:
    """The bytes of objects of a remote store (full store paths), fetched side by side; a size of 0 is unknown and asked
    first (side by side too), None is small enough to fetch unasked (a deletion file).  None: missing, unreadable, or
    larger than ``MAX_FILE_BYTES`` (the general path reads those, and reports what is wrong)."""
    fs = store.fs
    pool = shared_pool("fetch", REMOTE_IN_FLIGHT)

    def size(path: str) -> int:
        try:
            return int(fs.size(path))
        except Exception:  # noqa: BLE001 - the general path reports it
            return -1

    unknown = [i for i, n in enumerate(sizes) if n is not None and n <= 0]
    if unknown:
        sizes = list(sizes)
        for i, n in zip(unknown, pool.map(size, [paths[i] for i in unknown])):
            sizes[i] = n

    def whole(item: tuple[str, int | None]) -> bytes | None:
        path, n = item
        if n is not None and (n < 0 or n > MAX_FILE_BYTES):
            return None
        try:
            data = fs.cat_file(path)
        except Exception:  # noqa: BLE001 - the general path reports it
            return None
        if n is not None:  # (a data file: deletion files are not counted, as pylance's)
            count_read(len(data))
        return bytes(data) if n is None or len(data) == n else None

    return list(pool.map(whole, zip(paths, sizes)))


def read_deletions(frags: list[Fragment]) -> None:
    """Read the deletion files of ``frags`` not read yet that are Arrow files in the dataset's own directory
    (``Fragment.deleted_positions`` reads the others, and reports damage)."""
    store = frags[0].dataset.store
    todo = deletion_todo(frags)
    if not todo:
        return
    paths = [p for _, _, p in todo]
    parse_deletions(todo, read_all(paths) if store.is_local else fetch_remote(store, paths, [None] * len(paths)))


Todo = list[tuple["Fragment", table_pb2.DeletionFile, str]]


def deletion_todo(frags: list[Fragment]) -> Todo:
    """(fragment, deletion file, its store path) of the Arrow deletion files of ``frags`` in the dataset's own directory
    not read yet."""
    root = frags[0].dataset.store.full_path("_deletions") + "/"
    arrow = table_pb2.DeletionFile.ARROW_ARRAY
    todo: Todo = []
    for f in frags:
        if f.deletions_read or not f.data_fragment.HasField("deletion_file"):
            continue
        d = f.data_fragment.deletion_file
        if d.file_type == arrow and not d.HasField("base_id"):
            todo.append((f, d, f"{root}{f.fragment_id}-{d.read_version}-{d.id}.arrow"))
    return todo


def parse_deletions(todo: Todo, datas: list[bytes | None]) -> None:
    """Set the deleted positions of the fragments whose deletion file's bytes parse and agree with the manifest (the
    others are read again, and reported, by ``Fragment.deleted_positions``)."""
    from lancelot.dataset.deletion import parse_stream

    for (f, d, _), data in zip(todo, datas):
        pos = parse_stream(data, f.physical_rows) if data is not None else None
        if pos is not None and (not d.num_deleted_rows or d.num_deleted_rows == len(pos)):
            f.set_deleted_positions(pos)
