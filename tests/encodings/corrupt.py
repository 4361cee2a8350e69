"""Damaging pylance-written 2.1/2.2 files and reading them under a watchdog and a memory bound: the
helpers of tests/encodings/test_corrupt_compression.py and test_corrupt_fuzz_found.py.

Files come from pylance 14.0.2 as ``{id, c}`` tables of two pages per column, so the damaged
column is 1 (or more, for nested fields) and the page is 1.  The damage is done to the file bytes
(read from a MemorySource) or to a page's PageLayout after ``lancelot.LanceFile`` parsed the
metadata and before it reads.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from contextlib import AbstractContextManager

import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.errors import LanceError
from lancelot.format.container import pack_encoding, read_metadata, unpack_encoding
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.io.source import MemorySource
from tests.encodings.helpers import forget_shared
from tests.helpers import bounded
from tests.support import conformance as C

VERSIONS = ["2.1", "2.2"]
ROWS = 1200
MAX_TRACED = 256 << 20  # the files are < 2 MB; no read of them needs more
WATCHDOG_SECONDS = 30


# ----------------------------------------------------------------------------- files and damage


_FILES: dict[tuple, bytes] = {}


def pylance_bytes(tmp_path, make: Callable, version: str, metadata=None, rows: int = ROWS) -> bytes:
    """The bytes of ``{id, c}`` written by pylance in two batches (two pages per column), cached per session."""
    key = (make, version, tuple(sorted((metadata or {}).items())), rows)
    if key not in _FILES:
        rng = np.random.default_rng(zlib.crc32(repr(key[1:]).encode()) + rows)
        arr = make(rng, rows, "some")
        schema = pa.schema([pa.field("id", pa.int64()), pa.field("c", arr.type, metadata=metadata)])
        table = pa.Table.from_arrays([pa.array(np.arange(rows), pa.int64()), arr], schema=schema)
        path = C.write_pylance(tmp_path / "src.lance", table, version, [rows // 2, rows - rows // 2])
        with open(path, "rb") as f:
            _FILES[key] = f.read()
    return _FILES[key]


def page_of(data: bytes, col: int = 1, page: int = 1):
    """(PageMetadata, PageLayout) of a page of the undamaged file."""
    src = MemorySource(data, "f.lance")
    p = read_metadata(src).columns[col].pages[page]
    return p, unpack_encoding(src, p.encoding, pb.PageLayout)


def guarded() -> AbstractContextManager[None]:
    """Fail on a hang (watchdog) or on a huge allocation (tracemalloc peak)."""
    return bounded(MAX_TRACED, WATCHDOG_SECONDS)


def read_damaged(
    data: bytes,
    layout_damage: Callable[[pb.PageLayout], None] | None = None,
    col: int = 1,
    page: int = 1,
    rows=None,
    meta_damage: Callable | None = None,
):
    """Open ``data`` with lancelot, damage one page's layout / metadata, read column c (all rows or a take)."""
    forget_shared()  # (the damage is made to the parsed metadata: this file's own)
    lf = lancelot.LanceFile(MemorySource(bytes(data), "f.lance"))
    pm = lf.metadata.columns[col].pages[page]
    if layout_damage is not None:
        layout = unpack_encoding(MemorySource(bytes(data)), pm.encoding, pb.PageLayout)
        layout_damage(layout)
        pm.encoding.CopyFrom(pack_encoding(layout))
    if meta_damage is not None:
        meta_damage(pm)
    if rows is None:
        return lf.read(columns=["c"])
    return lf.take(rows, columns=["c"])


def expect_error(
    data: bytes,
    layout_damage=None,
    *,
    col: int = 1,
    page: int = 1,
    rows=None,
    meta_damage=None,
    kind: type[LanceError] = LanceError,
) -> LanceError:
    with guarded(), pytest.raises(LanceError) as info:
        read_damaged(data, layout_damage, col, page, rows, meta_damage)
    err = info.value
    assert isinstance(err, kind), f"{type(err).__name__}: {err}"
    assert (err.column, err.page) == (col, page), f"error names column {err.column}, page {err.page}: {err}"
    assert "f.lance" in str(err)
    return err


def values_of(layout: pb.PageLayout) -> pb.CompressiveEncoding:
    """The value compression of a mini-block or full-zip page."""
    kind = layout.WhichOneof("layout")
    assert kind in ("mini_block_layout", "full_zip_layout"), kind
    return getattr(layout, kind).value_compression


def find(enc: pb.CompressiveEncoding, kind: str) -> pb.CompressiveEncoding:
    """The first encoding of ``kind`` in the tree under ``enc`` (depth first)."""
    if enc.WhichOneof("compression") == kind:
        return enc
    technique = enc.WhichOneof("compression")
    for _, sub in getattr(enc, technique).ListFields() if technique else []:
        if isinstance(sub, pb.CompressiveEncoding):
            try:
                return find(sub, kind)
            except LookupError:
                pass
    raise LookupError(kind)


def first_chunk_buffer(data: bytes, layout: pb.PageLayout, col: int = 1, page: int = 1, k: int = 0):
    """(file position, size) of value buffer ``k`` of a mini-block page's first chunk (chunk header:
    u16 levels, u16 rep / def sizes when present, a u16 (2.1) or u32 (2.2) size per buffer, padding to 8)."""
    mb = layout.mini_block_layout
    pm, _ = page_of(data, col, page)
    pos = pm.buffer_offsets[1]
    word = 4 if mb.has_large_chunk else 2
    n_levels = int(mb.HasField("rep_compression")) + int(mb.HasField("def_compression"))
    hdr = 2 + 2 * n_levels
    sizes = [
        int.from_bytes(data[pos + hdr + word * i : pos + hdr + word * (i + 1)], "little") for i in range(mb.num_buffers)
    ]
    level_sizes = [int.from_bytes(data[pos + 2 + 2 * i : pos + 4 + 2 * i], "little") for i in range(n_levels)]
    off = -(-(hdr + word * mb.num_buffers) // 8) * 8
    for s in level_sizes:
        off = -(-(off + s) // 8) * 8
    for s in sizes[:k]:
        off = -(-(off + s) // 8) * 8
    return pos + off, sizes[k]
