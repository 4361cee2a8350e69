"""Checked access to the raw buffers a compressive encoding reads.

Every length, offset and width a decoder takes from a buffer or from the encoding message goes through these helpers, so
that bad input becomes a ``CorruptFileError`` (never an IndexError, a crash or a huge allocation)."""

from __future__ import annotations

from typing import Any

import numpy as np

from lancelot.errors import CorruptFileError, UnsupportedEncodingError

#: The largest decoded buffer we are willing to allocate for one page or chunk.
MAX_DECODED_BYTES = 1 << 32

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


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
    le: np.dtype[Any] = np.dtype(dt).newbyteorder("<")  # (numpy's stubs: Any for Python 3.10)
    return le


def view_uint(buf: np.ndarray, bits: int, count: int, what: str) -> np.ndarray:
    """The first ``count`` little-endian unsigned ints of ``bits`` bits in ``buf``."""
    dt = uint_dtype(bits, what)
    need = count * dt.itemsize
    require(count >= 0 and need <= len(buf), f"{what}: need {need} bytes, buffer has {len(buf)}")
    raw = buf[:need]
    if raw.ctypes.data % dt.itemsize:
        raw = raw.copy()
    return raw.view(dt)


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
