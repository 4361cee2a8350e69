"""Byte segments of one fetched buffer: the same buffer of many mini-block chunks.

A read of a mini-block page fetches many chunks at once; buffer ``i`` of every chunk (its repetition levels, its
definition levels, its ``i``-th value buffer) is a segment ``data[starts[k]:starts[k] + sizes[k]]`` of the fetched
bytes. ``gather`` concatenates segments without a per-segment Python step: sorted, disjoint segments are cut out with a
boolean mask built by ``np.repeat`` (one byte of work per byte, no int64 index per byte)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from lancelot.encodings.compression.buffers import require

#: up to this many segments of at least SLICE_BYTES bytes on average are joined slice by slice
#: (a list of views and one concatenate: 10x faster than a mask for 512 segments of 32 KiB)
MAX_SLICES = 4096
SLICE_BYTES = 512
#: up to this many segments adding up to at most FEW_BYTES are joined slice by slice too (a take)
FEW_SEGMENTS = 64
FEW_BYTES = 1 << 16

_T = TypeVar("_T", bound=np.generic)


@dataclass
class Segments:
    """One buffer of each of many chunks, inside the fetched bytes ``data``."""

    data: np.ndarray  # uint8
    starts: np.ndarray  # int64, position of chunk k's buffer in data
    sizes: np.ndarray  # int64, its length

    def __len__(self) -> int:
        return len(self.starts)

    def chunk(self, k: int) -> np.ndarray:
        s = int(self.starts[k])
        return self.data[s : s + int(self.sizes[k])]

    def check(self, what: str) -> None:
        """Every segment must lie inside ``data``."""
        if len(self.starts):
            ends = self.starts + self.sizes
            require(
                bool(np.all(self.sizes >= 0)) and int(self.starts.min()) >= 0 and int(ends.max()) <= len(self.data),
                f"{what} lies outside the fetched chunks",
            )


def ranges_index(starts: NDArray[np.int64], lengths: NDArray[np.int64]) -> NDArray[np.int64]:
    """Concatenation of ``arange(starts[i], starts[i] + lengths[i])``, vectorized."""
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends: NDArray[np.int64] = np.cumsum(lengths)
    index: NDArray[np.int64] = np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)
    return index


def segments_mask(starts: NDArray[np.int64], lengths: NDArray[np.int64], lo: int, hi: int) -> NDArray[np.bool_]:
    """Boolean mask over ``[lo, hi)`` of the bytes inside sorted, disjoint segments."""
    ends = starts + lengths
    counts = np.empty(2 * len(starts) + 1, dtype=np.int64)
    counts[0] = starts[0] - lo
    counts[1::2] = lengths
    counts[2:-1:2] = starts[1:] - ends[:-1]
    counts[-1] = hi - ends[-1]
    pattern = np.zeros(len(counts), dtype=bool)
    pattern[1::2] = True
    return np.repeat(pattern, counts)


def gather(
    data: NDArray[Any],
    starts: NDArray[np.int64],
    lengths: NDArray[np.int64],
    alloc: Callable[[int, np.dtype[Any]], NDArray[Any]] | None = None,
) -> NDArray[Any]:
    """The bytes of segments ``[starts[i], starts[i] + lengths[i])`` of ``data``, concatenated.

    Contiguous segments come back as a view; sorted disjoint ones through a mask; anything else through an index
    (callers check the bounds).  ``alloc(n, dtype)``, when given, allocates the output of a copy of few long segments
    (arrays.empty: pooled memory)."""
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(starts)
    if n == 0:
        return data[:0]
    if n == 1:
        s = int(starts[0])
        return data[s : s + int(lengths[0])]
    if n <= FEW_SEGMENTS:  # a take's few values: slicing in Python beats a dozen numpy calls
        sizes = lengths.tolist()
        total = sum(sizes)
        if total <= FEW_BYTES:
            parts = [data[a : a + m] for a, m in zip(starts.tolist(), sizes)]
            return np.concatenate(parts) if alloc is None else np.concatenate(parts, out=alloc(total, data.dtype))
    keep = lengths > 0
    if not keep.all():
        starts, lengths = starts[keep], lengths[keep]
        if len(starts) <= 1:
            return gather(data, starts, lengths, alloc)
    ends = starts + lengths
    gaps = starts[1:] - ends[:-1]
    lo, hi = int(starts[0]), int(ends[-1])
    if not np.any(gaps):
        return data[lo:hi]
    total = int(lengths.sum())
    if len(starts) <= MAX_SLICES and total >= SLICE_BYTES * len(starts):  # few long segments: copy slices
        parts = [data[a : a + n] for a, n in zip(starts.tolist(), lengths.tolist())]
        return np.concatenate(parts) if alloc is None else np.concatenate(parts, out=alloc(total, data.dtype))
    if np.all(gaps >= 0) and hi - lo <= 8 * total:
        return data[lo:hi][segments_mask(starts, lengths, lo, hi)]
    return data[ranges_index(starts, lengths)]


def aligned_words(raw: np.ndarray, dtype: np.dtype[Any] | type) -> np.ndarray | None:
    """``raw`` (1-D bytes) seen as words of ``dtype`` when it starts at a multiple of their size, else
    None (the flag of the view: no ``ctypes`` object per call)."""
    if raw.ndim != 1 or raw.strides[0] != 1:
        return None
    size = np.dtype(dtype).itemsize
    words = raw[: len(raw) // size * size].view(dtype)
    return words if words.flags.aligned else None


def readonly(a: NDArray[_T]) -> NDArray[_T]:
    """A read-only view of ``a`` (numba compiles one specialization per writability: keep it one)."""
    if not a.flags.writeable:
        return a
    v: NDArray[_T] = a.view()
    v.flags.writeable = False
    return v
