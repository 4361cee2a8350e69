"""2.0 ``PackedStruct``: a struct of fixed-width fields stored row-major.

Each row is the concatenation of its fields' values; ``inner`` gives each field's flat bits_per_value.  Used when the
struct field's metadata sets ``packed`` to true."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelot.encodings.base import Fetch
from lancelot.encodings.v2_0.decode import Spans, total
from lancelot.encodings.v2_0.page import PageBuffers
from lancelot.encodings.v2_0.whole import unwrap_no_nulls
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_0_pb2 as pb


def field_widths(ps: pb.PackedStruct, pbuf: PageBuffers) -> list[int]:
    widths = []
    for inner in map(unwrap_no_nulls, ps.inner):
        if inner.WhichOneof("array_encoding") != "flat" or inner.flat.bits_per_value % 8:
            raise pbuf.error("packed struct fields must be flat whole-byte values", UnsupportedEncodingError)
        widths.append(inner.flat.bits_per_value // 8)
    return widths


def decode_packed_struct(ps: pb.PackedStruct, pbuf: PageBuffers, ranges: Spans, dtype: pa.DataType) -> Fetch[pa.Array]:
    widths = field_widths(ps, pbuf)
    if len(widths) != dtype.num_fields:
        raise pbuf.error(f"packed struct has {len(widths)} fields, the schema {dtype.num_fields}")
    row = sum(widths)
    parts = yield from pbuf.read(ps.buffer, [(s * row, e * row) for s, e in ranges])
    raw = np.concatenate(parts) if len(parts) != 1 else parts[0]
    n = total(ranges)
    rows = raw.reshape(n, row) if row else np.zeros((n, 0), np.uint8)
    children, pos = [], 0
    for i, w in enumerate(widths):
        col = np.ascontiguousarray(rows[:, pos : pos + w]).reshape(-1)
        pos += w
        t = dtype.field(i).type
        if pa.types.is_boolean(t):
            children.append(pa.array(col.astype(bool)))
        else:
            children.append(pa.Array.from_buffers(t, n, [None, pa.py_buffer(col)]))
    return pa.StructArray.from_arrays(children, fields=list(dtype))
