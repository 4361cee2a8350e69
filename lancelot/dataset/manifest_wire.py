"""Reading a few fields of a manifest straight off its protobuf wire format, with numba kernels.

``versions()``, time travel and cleanup read every manifest of a dataset; walking each one's
fragments as protobuf objects costs about a microsecond per fragment (a dataset of 1,000
appends: half a million).  The fields they need are few and fixed (table.proto: Manifest
fragments = 2, version = 3, index_section = 6, timestamp = 7, transaction_file = 12;
DataFragment id = 1, files = 2, deletion_file = 3, physical_rows = 4; DataFile path = 1,
file_size_bytes = 6, base_id = 7; DeletionFile file_type = 1, read_version = 2, id = 3,
num_deleted_rows = 4, base_id = 7; Timestamp seconds = 1, nanos = 2), so the kernels read them
off the bytes, skipping everything else.  A result not flagged ok (malformed bytes, or a wire
type they do not know) means: parse the manifest instead.
"""

from __future__ import annotations

import numpy as np

from lancelot.util.jit import njit

# The kernels decode each tag and length in place, loop by loop, on purpose: shared @njit helpers
# returning tuples measured slower on these hot loops; ``_file_entry`` writes into an array instead,
# inlined at numba's IR level (``inline="always"``).

#: the summary kernel's result: ok, version, seconds, nanos, fragments, data files, bytes, rows,
#: deletion files, deleted rows
OK, VERSION, SECONDS, NANOS, FRAGS, FILES, SIZE, ROWS, DEL_FILES, DELETED = range(10)


@njit(cache=True, nogil=True)
def _varint(buf: np.ndarray, p: int, end: int) -> tuple[int, int]:  # pragma: no cover - numba
    """(value as uint64, position after it); position -1 when the varint runs past ``end``."""
    value = np.uint64(0)
    shift = np.uint64(0)
    while p < end:
        b = np.uint64(buf[p])
        p += 1
        value |= (b & np.uint64(0x7F)) << shift
        if b < np.uint64(0x80):
            return value, p
        shift += np.uint64(7)
        if shift > np.uint64(63):
            return value, -1
    return value, -1


@njit(cache=True, nogil=True)
def _skip(buf: np.ndarray, p: int, end: int, wire: int) -> int:  # pragma: no cover - numba
    """The position after a field's value of wire type ``wire``; -1 if malformed."""
    if wire == 0:
        return _varint(buf, p, end)[1]
    if wire == 1:
        return p + 8 if p + 8 <= end else -1
    if wire == 2:
        n, p = _varint(buf, p, end)
        if p < 0 or n > np.uint64(end - p):
            return -1
        return int(p + np.int64(n))
    if wire == 5:
        return p + 4 if p + 4 <= end else -1
    return -1


@njit(cache=True, nogil=True)
def _field_value(buf: np.ndarray, p: int, end: int, field: int) -> int:  # pragma: no cover - numba
    """The value of varint field ``field`` of the message in ``[p, end)`` (0 if absent, -1 if malformed)."""
    out = np.int64(0)
    while p < end:
        tag, p = _varint(buf, p, end)
        if p < 0:
            return -1
        if np.int64(tag >> np.uint64(3)) == field and np.int64(tag & np.uint64(7)) == 0:
            v, p = _varint(buf, p, end)
            if p < 0:
                return -1
            out = np.int64(v)
        else:
            p = _skip(buf, p, end, np.int64(tag & np.uint64(7)))
            if p < 0:
                return -1
    return int(out)


@njit(cache=True, nogil=True)
def _timestamp(buf: np.ndarray, s: int, stop: int, out: np.ndarray, at: int) -> int:  # pragma: no cover - numba
    """A Timestamp message's seconds and nanos into ``out[at]``, ``out[at + 1]``; -1 if malformed."""
    while s < stop:
        t, s = _varint(buf, s, stop)
        if s < 0:
            return -1
        if t == np.uint64(8) or t == np.uint64(16):
            v, s = _varint(buf, s, stop)
            out[at if t == np.uint64(8) else at + 1] = np.int64(v)
        else:
            s = _skip(buf, s, stop, np.int64(t & np.uint64(7)))
        if s < 0:
            return -1
    return stop


@njit(cache=True, nogil=True, inline="always")
def _fragment_summary(buf: np.ndarray, s: int, stop: int, out: np.ndarray) -> int:  # pragma: no cover - numba
    """The rows, data files and deletion files of the DataFragment message in ``buf[s:stop]``, added to ``out``;
    returns -1 if malformed."""
    while s < stop:
        t, s = _varint(buf, s, stop)
        if s < 0:
            return -1
        f = np.int64(t >> np.uint64(3))
        w = np.int64(t & np.uint64(7))
        if f == 4 and w == 0:
            v, s = _varint(buf, s, stop)
            out[ROWS] += np.int64(v)
        elif (f == 2 or f == 3) and w == 2:
            m, s = _varint(buf, s, stop)
            if s < 0 or m > np.uint64(stop - s):
                return -1
            sub = s + np.int64(m)
            v2 = _field_value(buf, s, sub, 6 if f == 2 else 4)
            if v2 < 0:
                return -1
            if f == 2:
                out[FILES] += 1
                out[SIZE] += v2
            else:
                out[DEL_FILES] += 1
                out[DELETED] += v2
            s = sub
        else:
            s = _skip(buf, s, stop, w)
        if s < 0:
            return -1
    return s


@njit(cache=True, nogil=True)
def scan_manifest(buf: np.ndarray, p: int, end: int, deep: bool) -> np.ndarray:  # pragma: no cover - numba
    """The summary fields of the Manifest message in ``buf[p:end]`` (``deep``: the fragments' too)."""
    out = np.zeros(10, dtype=np.int64)
    while p < end:
        tag, p = _varint(buf, p, end)
        if p < 0:
            return out
        field = np.int64(tag >> np.uint64(3))
        wire = np.int64(tag & np.uint64(7))
        if field == 3 and wire == 0:
            v, p = _varint(buf, p, end)
            out[VERSION] = np.int64(v)
        elif (field == 2 or field == 7) and wire == 2:
            n, p = _varint(buf, p, end)
            if p < 0 or n > np.uint64(end - p):
                return out
            stop = p + np.int64(n)
            if field == 7:
                if _timestamp(buf, p, stop, out, SECONDS) < 0:
                    return out
            else:
                out[FRAGS] += 1
                if deep and _fragment_summary(buf, p, stop, out) < 0:
                    return out
            p = stop
        else:
            p = _skip(buf, p, end, wire)
        if p < 0:
            return out
    out[OK] = 1 if p == end else 0
    return out


@njit(cache=True, nogil=True, inline="always")
def _file_entry(buf: np.ndarray, q: int, sub: int, f: int, got: np.ndarray) -> int:  # pragma: no cover - numba
    """Into ``got``: whether the DataFile (``f`` 2) or DeletionFile (``f`` 3) message in ``buf[q:sub]`` names a base
    path, its path's (start, length), its first three varint fields; returns -1 if malformed."""
    got[0] = 0
    got[1] = -1
    got[2] = got[3] = got[4] = got[5] = 0
    while q < sub:
        u, q = _varint(buf, q, sub)
        if q < 0:
            return -1
        g = np.int64(u >> np.uint64(3))
        x = np.int64(u & np.uint64(7))
        if g == 7 and x == 0:
            got[0] = 1
            q = _varint(buf, q, sub)[1]
        elif f == 2 and g == 1 and x == 2:
            k, q = _varint(buf, q, sub)
            if q < 0 or k > np.uint64(sub - q):
                return -1
            got[1] = q
            got[2] = np.int64(k)
            q += np.int64(k)
        elif f == 3 and g >= 1 and g <= 3 and x == 0:
            v, q = _varint(buf, q, sub)
            got[2 + g] = np.int64(v)
        else:
            q = _skip(buf, q, sub, x)
        if q < 0:
            return -1
    return q


#: the file scan's meta result: ok, version, seconds, nanos, transaction file name (start, length;
#: start -1 without one), whether there is an index section, its position
F_OK, F_VERSION, F_SECONDS, F_NANOS, F_TXN_START, F_TXN_LEN, F_HAS_INDEX, F_INDEX_POS = range(8)


@njit(cache=True, nogil=True)
def scan_files(buf: np.ndarray, p: int, end: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """The files the Manifest message in ``buf[p:end]`` names in the dataset itself (no ``base_id``):
    (meta, the (start, length) of every data file path, the (fragment id, file type, read version,
    id) of every deletion file)."""
    cap = (end - p) // 2 + 1
    paths = np.empty((cap, 2), dtype=np.int64)
    dels = np.empty((cap, 4), dtype=np.int64)
    npaths = 0
    ndels = 0
    meta = np.zeros(8, dtype=np.int64)
    meta[F_TXN_START] = -1
    got = np.empty(6, dtype=np.int64)
    while p < end:
        tag, p = _varint(buf, p, end)
        if p < 0:
            return meta, paths[:0], dels[:0]
        field = np.int64(tag >> np.uint64(3))
        wire = np.int64(tag & np.uint64(7))
        if (field == 3 or field == 6) and wire == 0:
            v, p = _varint(buf, p, end)
            if field == 3:
                meta[F_VERSION] = np.int64(v)
            else:
                meta[F_HAS_INDEX] = 1
                meta[F_INDEX_POS] = np.int64(v)
        elif (field == 2 or field == 7 or field == 12) and wire == 2:
            n, p = _varint(buf, p, end)
            if p < 0 or n > np.uint64(end - p):
                return meta, paths[:0], dels[:0]
            stop = p + np.int64(n)
            if field == 12:
                meta[F_TXN_START] = p
                meta[F_TXN_LEN] = stop - p
            elif field == 7:
                if _timestamp(buf, p, stop, meta, F_SECONDS) < 0:
                    return meta, paths[:0], dels[:0]
            else:
                s = p
                fid = np.int64(0)
                has_del = False
                d_type = np.int64(0)
                d_read = np.int64(0)
                d_id = np.int64(0)
                while s < stop:
                    t, s = _varint(buf, s, stop)
                    if s < 0:
                        return meta, paths[:0], dels[:0]
                    f = np.int64(t >> np.uint64(3))
                    w = np.int64(t & np.uint64(7))
                    if f == 1 and w == 0:
                        v, s = _varint(buf, s, stop)
                        fid = np.int64(v)
                    elif (f == 2 or f == 3) and w == 2:
                        m, s = _varint(buf, s, stop)
                        if s < 0 or m > np.uint64(stop - s):
                            return meta, paths[:0], dels[:0]
                        sub = s + np.int64(m)
                        if _file_entry(buf, s, sub, f, got) < 0:
                            return meta, paths[:0], dels[:0]
                        based, path_at, path_len = got[0] != 0, got[1], got[2]
                        a, b, c = got[3], got[4], got[5]
                        if f == 2 and not based and path_at >= 0:
                            paths[npaths, 0] = path_at
                            paths[npaths, 1] = path_len
                            npaths += 1
                        elif f == 3:
                            has_del = not based
                            d_type = a
                            d_read = b
                            d_id = c
                        s = sub
                    else:
                        s = _skip(buf, s, stop, w)
                    if s < 0:
                        return meta, paths[:0], dels[:0]
                if has_del:
                    dels[ndels, 0] = fid
                    dels[ndels, 1] = d_type
                    dels[ndels, 2] = d_read
                    dels[ndels, 3] = d_id
                    ndels += 1
            p = stop
        else:
            p = _skip(buf, p, end, wire)
        if p < 0:
            return meta, paths[:0], dels[:0]
    meta[F_OK] = 1 if p == end else 0
    return meta, paths[:npaths], dels[:ndels]
