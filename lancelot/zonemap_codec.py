"""The compact byte layout of lancelot's zone maps (format 2; lancelot/zonemaps.py holds the model).

Format 1 was an Arrow IPC stream: about 2 KB of schema and buffer framing even for a file of one
zone, which doubled TPC-H nation's file (25 rows).  Format 2 is a flat byte string, usually
zstd-compressed::

    MAGIC_V2 | codec (u8: 0 raw, 1 zstd) | body
    body:  uvarint rows_per_zone | uvarint zones | ints(rows per zone) | uvarint columns | column...
    column: uvarint parts, (uvarint length, utf-8 name) per part   -- the path through structs
            uvarint length, type spec (ascii)                      -- the bounds' Arrow type
            u8 flags (1: some min is null, 2: some max is null)
            [min validity bitmap] [max validity bitmap]            -- LSB first, when flagged
            mins, maxs                                             -- fixed width: zones x width bytes
                                                                      (booleans: a bitmap); binary:
                                                                      ints(lengths) then the bytes
            ints(null counts)

``ints(...)``: one u8 byte width (1, 2, 4 or 8), then one little-endian unsigned integer of that
width per zone.  A type spec is ``pyarrow.type_for_alias``'s name (``int64``, ``time64[us]``,
``binary``...), ``decimal128:<precision>:<scale>`` (or 256), or ``timestamp[<unit>]@<zone>``.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import zstandard

from lancelot.util.arrays import from_numpy

MAGIC_V2 = b"LANCELOT-ZONEMAPS\x02"
RAW, ZSTD = 0, 1
ZSTD_LEVEL = 9
#: bodies no larger than this are left raw (a zstd frame header costs more than it could save)
MIN_COMPRESS = 64
#: a decoded body larger than this is refused (a corrupt size field must not allocate gigabytes)
MAX_BODY = 1 << 30
_LOCAL = threading.local()


@dataclass
class ColumnZones:
    """The bounds of one column, one entry per zone."""

    path: tuple[str, ...]
    min: pa.Array
    max: pa.Array
    nulls: np.ndarray


def _uvarint(v: int) -> bytes:
    if v < 0x80:
        return bytes((v,))
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _ints(values: np.ndarray) -> bytes:
    """A u8 byte width, then every value little-endian at that width (values are >= 0)."""
    v = np.asarray(values, np.int64)
    top = int(np.maximum.reduce(v, initial=0))
    width = 1 if top < 1 << 8 else 2 if top < 1 << 16 else 4 if top < 1 << 32 else 8
    return bytes([width]) + v.astype(f"<u{width}").tobytes()


def _type_spec(t: pa.DataType) -> str:
    if pa.types.is_decimal(t):
        return f"decimal{t.bit_width}:{t.precision}:{t.scale}"
    if pa.types.is_timestamp(t) and t.tz is not None:
        return f"timestamp[{t.unit}]@{t.tz}"
    return str(t)


def _parse_type(spec: str) -> pa.DataType:
    if spec.startswith("decimal"):
        kind, precision, scale = spec.split(":")
        make = {"decimal128": pa.decimal128, "decimal256": pa.decimal256}[kind]
        return make(int(precision), int(scale))
    if spec.startswith("timestamp[") and "@" in spec:
        unit, tz = spec[len("timestamp[") :].split("]@", 1)
        return pa.timestamp(unit, tz)
    t: pa.DataType = pa.type_for_alias(spec)
    return t


def _bitmap(valid: np.ndarray) -> bytes:
    return np.packbits(valid, bitorder="little").tobytes()


def _values(arr: pa.Array) -> bytes:
    """The bound values' bytes (nulls as zeros): fixed width, a boolean bitmap, or lengths + bytes."""
    n = len(arr)
    if arr.type.id == pa.lib.Type_BINARY:  # (int32 offsets)
        offsets = np.frombuffer(arr.buffers()[1], np.int32)[arr.offset : arr.offset + n + 1]
        data = arr.buffers()[2]
        body = b"" if data is None else data.to_pybytes()[int(offsets[0]) : int(offsets[-1])]
        return _ints(offsets[1:] - offsets[:-1]) + body
    if pa.types.is_boolean(arr.type):
        bits = np.unpackbits(np.frombuffer(arr.buffers()[1], np.uint8), bitorder="little")[arr.offset : arr.offset + n]
        return _bitmap(bits.astype(bool) & _valid(arr))
    width = arr.type.bit_width // 8
    raw = np.frombuffer(arr.buffers()[1], np.uint8)[arr.offset * width : (arr.offset + n) * width].reshape(n, width)
    return raw.tobytes() if not arr.null_count else np.where(_valid(arr)[:, None], raw, 0).astype(np.uint8).tobytes()


def _valid(arr: pa.Array) -> np.ndarray:
    if not arr.null_count:
        return np.ones(len(arr), bool)
    bits = np.unpackbits(np.frombuffer(arr.buffers()[0], np.uint8), bitorder="little")
    return bits[arr.offset : arr.offset + len(arr)].astype(bool)


def _compressor() -> zstandard.ZstdCompressor:
    """This thread's compressor (made once: making one costs more than compressing a small body)."""
    made: zstandard.ZstdCompressor | None = getattr(_LOCAL, "zstd", None)
    if made is None:
        made = _LOCAL.zstd = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_content_size=True)
    return made


@functools.lru_cache(maxsize=256)
def _column_head(path: tuple[str, ...], t: pa.DataType) -> bytes:
    """A column's path and bounds type as ``encode`` writes them (the same for every file of a schema)."""
    parts = [_uvarint(len(path))]
    for name in path:
        b = name.encode("utf-8")
        parts += [_uvarint(len(b)), b]
    spec = _type_spec(t).encode("ascii")
    return b"".join([*parts, _uvarint(len(spec)), spec])


def column_bytes(c: ColumnZones) -> bytes:
    """One column's part of the body (``encode``'s)."""
    flags = (1 if c.min.null_count else 0) | (2 if c.max.null_count else 0)
    parts = [_column_head(c.path, c.min.type), bytes([flags])]
    if flags & 1:
        parts.append(_bitmap(_valid(c.min)))
    if flags & 2:
        parts.append(_bitmap(_valid(c.max)))
    parts += [_values(c.min), _values(c.max), _ints(c.nulls)]
    return b"".join(parts)


def _int(v: int) -> bytes:
    """``_ints`` of one value."""
    width = 1 if v < 1 << 8 else 2 if v < 1 << 16 else 4 if v < 1 << 32 else 8
    return bytes([width]) + v.to_bytes(width, "little")


def one_zone_bytes(path: tuple[str, ...], t: pa.DataType, lo: bytes | None, hi: bytes | None, nulls: int) -> bytes:
    """``column_bytes`` of a column of one zone, from its bounds' bytes (None: null): fixed-width values
    as stored, byte strings whole, booleans ``b"\\x00"`` / ``b"\\x01"`` (a small file's zone maps without
    an Arrow array per bound)."""
    parts = [_column_head(path, t), bytes([(lo is None) | (hi is None) << 1])]
    parts += [b"\x00"] * ((lo is None) + (hi is None))  # (the null bound's validity bitmap)
    binary = t.id == pa.lib.Type_BINARY
    for v in (lo, hi):
        if binary:
            parts += [_int(len(v or b"")), v or b""]
        else:
            parts.append(v if v is not None else bytes(max(t.bit_width // 8, 1)))
    parts.append(_int(nulls))
    return b"".join(parts)


def encode(rows: np.ndarray, columns: list[ColumnZones], rows_per_zone: int) -> bytes:
    """The format-2 buffer of the given zones."""
    return encode_parts(rows, [column_bytes(c) for c in columns], rows_per_zone)


def encode_parts(rows: np.ndarray, columns: list[bytes], rows_per_zone: int) -> bytes:
    """The format-2 buffer of the given zones, each column's part made (``column_bytes``)."""
    body = b"".join([_uvarint(rows_per_zone), _uvarint(len(rows)), _ints(rows), _uvarint(len(columns)), *columns])
    if len(body) > MIN_COMPRESS:
        packed = _compressor().compress(body)
        if len(packed) < len(body):
            return MAGIC_V2 + bytes([ZSTD]) + packed
    return MAGIC_V2 + bytes([RAW]) + body


class _Reader:
    """A cursor over the body; any read past its end is a ValueError (the caller's CorruptFileError)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("zone map buffer ends early")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def uvarint(self) -> int:
        v = shift = 0
        while True:
            b = self.take(1)[0]
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")

    def ints(self, n: int) -> np.ndarray:
        width = self.take(1)[0]
        if width not in (1, 2, 4, 8):
            raise ValueError(f"bad integer width {width}")
        return np.frombuffer(self.take(n * width), f"<u{width}").astype(np.int64)

    def bitmap(self, n: int) -> np.ndarray:
        return np.unpackbits(np.frombuffer(self.take((n + 7) // 8), np.uint8), bitorder="little")[:n].astype(bool)

    def values(self, t: pa.DataType, n: int, valid: np.ndarray | None) -> pa.Array:
        mask = None if valid is None else ~valid
        if pa.types.is_binary(t):
            lengths = self.ints(n)
            offsets = np.zeros(n + 1, np.int32)
            np.cumsum(lengths, out=offsets[1:])
            data = self.take(int(offsets[-1]))
            validity = None if valid is None else pa.py_buffer(_bitmap(valid))
            nulls = 0 if valid is None else int(n - valid.sum())
            buffers = [validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)]
            return pa.Array.from_buffers(t, n, buffers, null_count=nulls)
        if pa.types.is_boolean(t):
            return from_numpy(self.bitmap(n), mask=mask)
        width = t.bit_width // 8
        if width < 1:
            raise ValueError(f"bounds of type {t} cannot be stored")
        raw = self.take(n * width)
        validity = None if valid is None else pa.py_buffer(_bitmap(valid))
        nulls = 0 if valid is None else int(n - valid.sum())
        return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(raw)], null_count=nulls)


def decode(data: bytes) -> tuple[np.ndarray, list[ColumnZones], int]:
    """(rows per zone, the columns, rows_per_zone) of a format-2 buffer; ValueError when it is malformed."""
    if not data.startswith(MAGIC_V2) or len(data) <= len(MAGIC_V2):
        raise ValueError("not a format-2 zone map")
    codec, body = data[len(MAGIC_V2)], data[len(MAGIC_V2) + 1 :]
    if codec == ZSTD:
        try:
            size = zstandard.frame_content_size(body)
            if size < 0 or size > MAX_BODY:
                raise ValueError("zone map body has no plausible size")
            body = zstandard.ZstdDecompressor().decompress(body, max_output_size=size)
        except zstandard.ZstdError as e:
            raise ValueError(f"zone map body does not inflate: {e}") from None
    elif codec != RAW:
        raise ValueError(f"unknown zone map codec {codec}")
    r = _Reader(body)
    rows_per_zone, nzones = r.uvarint(), r.uvarint()
    if nzones > len(body):
        raise ValueError("more zones than bytes")
    rows = r.ints(nzones)
    columns = []
    for _ in range(r.uvarint()):
        path = tuple(r.take(r.uvarint()).decode("utf-8") for _ in range(r.uvarint()))
        if not path:
            raise ValueError("empty column path")
        t = _parse_type(r.take(r.uvarint()).decode("ascii"))
        flags = r.take(1)[0]
        lo_valid = r.bitmap(nzones) if flags & 1 else None
        hi_valid = r.bitmap(nzones) if flags & 2 else None
        lo, hi = r.values(t, nzones, lo_valid), r.values(t, nzones, hi_valid)
        columns.append(ColumnZones(path, lo, hi, r.ints(nzones)))
    if r.pos != len(body):
        raise ValueError("zone map buffer has trailing bytes")
    return rows, columns, rows_per_zone
