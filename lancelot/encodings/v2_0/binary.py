"""2.0 ``Binary``: variable-width values as end offsets ("indices") plus bytes.

indices[i] is the end of value i; a null value stores end + null_adjustment, so a value is null when its index is >=
null_adjustment (seeds 001, message Binary / List).  The start of row 0 of a page is 0."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from lancelot.encodings.base import Fetch
from lancelot.encodings.v2_0.decode import Spans, decode_offsets, read_flat, total
from lancelot.encodings.v2_0.page import PageBuffers
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_0_pb2 as pb
from lancelot.util.arrays import is_large


def bitmap(valid: np.ndarray | None) -> pa.Buffer | None:
    """An Arrow validity bitmap of ``valid``, or None when every value is valid."""
    return None if valid is None or valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))


def variable(
    dtype: pa.DataType,
    lengths: np.ndarray,
    valid: np.ndarray | None,
    data: pa.Buffer | None,
    children: list[pa.Array] | None = None,
) -> pa.Array | None:
    """A string, binary or list array of values of ``lengths`` (bytes, or items: ``children``); None when they
    overflow 32-bit offsets."""
    n = len(lengths)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if not is_large(dtype):
        if offsets[-1] > np.iinfo(np.int32).max:
            return None
        offsets = offsets.astype(np.int32)
    bufs = [bitmap(valid), pa.py_buffer(offsets)] + ([] if children is not None else [data])
    return pa.Array.from_buffers(dtype, n, bufs, children=children)


def ends_and_validity(raw: np.ndarray, adjustment: int) -> tuple[np.ndarray, np.ndarray]:
    """Real end offsets and validity from stored offsets with null adjustment."""
    if adjustment:
        valid = raw < adjustment
        return np.where(valid, raw, raw - np.uint64(adjustment)), valid
    return raw, np.ones(len(raw), bool)


def extended(ranges: Spans) -> list[tuple[int, int]]:
    """Each range widened by one row on the left (the previous end), when it exists."""
    return [(max(s - 1, 0), e) for s, e in ranges]


def value_spans(raw: np.ndarray, ranges: Spans, adjustment: int) -> list[tuple[int, int, np.ndarray, np.ndarray]]:
    """For each range: (first byte, last byte, lengths, validity) of its values, from the stored end offsets ``raw`` of
    the ``extended`` ranges."""
    out = []
    pos = 0
    for s, e in ranges:
        k = e - max(s - 1, 0)
        ends, valid = ends_and_validity(raw[pos : pos + k], adjustment)
        ends = ends.astype(np.int64)  # (with a Python int, uint64 would concatenate as float64)
        pos += k
        if s > 0:
            start, ends, valid = int(ends[0]), ends[1:], valid[1:]
        else:
            start = 0
        bounds = np.concatenate([[start], ends])
        lengths = np.diff(bounds)
        out.append((start, int(bounds[-1]), lengths, valid))
    return out


def decode_binary(
    b: pb.Binary, pbuf: PageBuffers, ranges: Spans, dtype: pa.DataType, cache: dict[Any, Any]
) -> Fetch[pa.Array]:
    raw = yield from decode_offsets(b.indices, pbuf, extended(ranges))
    spans = value_spans(raw, ranges, b.null_adjustment)
    for start, end, lengths, _ in spans:
        if (lengths < 0).any() or not 0 <= start <= end:
            raise pbuf.error("binary offsets are not monotonic")
    if b.bytes.WhichOneof("array_encoding") != "flat" or b.bytes.flat.bits_per_value != 8:
        raise pbuf.error("binary bytes must be flat 8-bit", UnsupportedEncodingError)
    data_parts = (yield from read_flat(pbuf, b.bytes.flat, [(s, e) for s, e, _, _ in spans], cache)) if spans else []
    data = np.concatenate(data_parts) if len(data_parts) != 1 else data_parts[0]
    lengths = np.concatenate([sp[2] for sp in spans]) if spans else np.zeros(0, np.int64)
    valid = np.concatenate([sp[3] for sp in spans]) if spans else np.zeros(0, bool)
    if pa.types.is_fixed_size_binary(dtype):
        return pa.Array.from_buffers(dtype, total(ranges), [bitmap(valid), pa.py_buffer(data)])
    out = variable(dtype, lengths, valid, pa.py_buffer(data))
    if out is None:
        raise pbuf.error("more than 2 GiB of values for a 32-bit offset type", UnsupportedEncodingError)
    return out
