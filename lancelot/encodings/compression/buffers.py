"""Checked access to the raw buffers a compressive encoding reads.

Every length, offset and width a decoder takes from a buffer or from the encoding message goes through these helpers, so
that bad input becomes a ``CorruptFileError`` (never an IndexError, a crash or a huge allocation)."""

from __future__ import annotations

from typing import Any

import numpy as np

from lancelot.errors import CorruptFileError, UnsupportedEncodingError

#: The largest decoded buffer we are willing to allocate for one page or chunk.
MAX_DECODED_BYTES = 1 << 32

_UINT = {n: np.dtype(f"<u{n}") for n in (1, 2, 4, 8)}


def corrupt(message: str) -> CorruptFileError:
    """A CorruptFileError for ``message`` (the structural layer adds the location)."""
    return CorruptFileError(message)


def require(condition: bool, message: str) -> None:
    """Raise CorruptFileError(message) unless ``condition`` holds."""
    if not condition:
        raise CorruptFileError(message)


def as_u8(buf: np.ndarray | bytes | bytearray | memoryview) -> np.ndarray:
    """View any bytes-like object or numpy array as a flat uint8 array (no copy)."""
    if isinstance(buf, np.ndarray):
        if buf.dtype == np.uint8 and buf.ndim == 1:
            return buf
        return np.ascontiguousarray(buf).reshape(-1).view(np.uint8)
    return np.frombuffer(buf, dtype=np.uint8)


def offsets_int64(offsets: Any) -> np.ndarray:
    """A block's offsets as int64: a view of uint64 offsets (a writer's, all below 2**63), else a copy."""
    offs = np.asarray(offsets)
    return offs.view(np.int64) if offs.dtype == np.uint64 else np.asarray(offs, np.int64)


def uint_dtype(bits: int, what: str = "value") -> np.dtype:
    """The little-endian unsigned dtype of ``bits`` bits (8/16/32/64)."""
    dt = _UINT.get(bits // 8) if bits % 8 == 0 else None
    if dt is None:
        raise UnsupportedEncodingError(f"{what} width of {bits} bits is not 8, 16, 32 or 64")
    return dt


def view_uint(buf: np.ndarray, bits: int, count: int, what: str) -> np.ndarray:
    """The first ``count`` little-endian unsigned ints of ``bits`` bits in ``buf``."""
    dt = uint_dtype(bits, what)
    need = count * dt.itemsize
    if count < 0 or need > len(buf):
        raise CorruptFileError(f"{what}: need {need} bytes, buffer has {len(buf)}")
    raw = buf[:need]
    out = raw.view(dt)
    return out if out.flags.aligned else raw.copy().view(dt)


def check_size(nbytes: int, what: str) -> None:
    """Refuse to allocate an implausibly large decoded buffer."""
    require(0 <= nbytes <= MAX_DECODED_BYTES, f"{what}: implausible decoded size of {nbytes} bytes")


def bitmap_to_bool(bitmap: np.ndarray, count: int) -> np.ndarray:
    """An LSB-first validity bitmap as ``count`` booleans."""
    require((count + 7) // 8 <= len(bitmap), f"bitmap of {len(bitmap)} bytes is short for {count} bits")
    return np.unpackbits(bitmap[: (count + 7) // 8], bitorder="little", count=count).astype(bool)


def bool_to_bitmap(values: np.ndarray) -> np.ndarray:
    """Booleans as an LSB-first bitmap (uint8)."""
    return np.packbits(np.asarray(values, dtype=bool), bitorder="little")
