"""Whole reads of a ``LanceFile`` (reader.py) that skip the field readers: a small file read whole in one request, and
the columns of simple pages (encodings/structural/simple_pages.py; 2.0: encodings/v2_0/whole.py) decoded page by page
in a few numpy steps."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from lancelot.encodings.base import ColumnInfo, FieldReader, Plan, Rows
from lancelot.errors import LanceError
from lancelot.io.source import ByteSource, Range, Staged
from lancelot.versions import FileVersion

#: whole reads of every column of a file of at most this many bytes read the file in one request first
STAGE_WHOLE_MAX_BYTES = 4 << 20


class WholeReadsMixin:
    """``LanceFile``'s whole-read plans (mixed into it: reader.py)."""

    _src: ByteSource
    _stored: pa.Schema
    _columns: dict[str, list[ColumnInfo]]
    schema: pa.Schema
    num_rows: int
    version: FileVersion
    _reader: Callable[[pa.Field], FieldReader]

    def _stage_whole(self, start: int, stop: int, columns: Sequence[str] | None) -> Staged:
        """A whole read of every column of a small file reads the file in one request first
        (``ByteSource.stage``): the fields' search caches and data then cost no request each."""
        if start != 0 or stop != self.num_rows or not 0 < self._src.size <= STAGE_WHOLE_MAX_BYTES:
            return ()
        if columns is not None and set(columns) != set(self.schema.names):
            return ()
        try:
            return self._src.stage([(0, self._src.size)])
        except (LanceError, OSError):
            return ()  # the fields' own reads report it

    def _simple_plans(self, fields: list[pa.Field], rows: range) -> list[Plan] | None:
        """Plans of ``rows`` of ``fields``: a field that is a column of simple mini-block pages
        (encodings/structural/simple_pages.py) reads them whole, decoded in a few numpy steps per
        page; the others plan through their field readers.  None when no field is simple."""
        from lancelot.encodings.structural import simple_pages as sp

        if self.version.structural:
            plans: list[Plan | None] = [self._simple_plan(f, sp, rows) for f in fields]
        else:  # 2.0: plain pages of one column (encodings/v2_0/whole.py)
            plans = [self._whole_plan(f, rows) for f in fields]
        if all(p is None for p in plans):
            return None
        return [p if p is not None else self._late(self._reader(f), rows) for f, p in zip(fields, plans)]

    def _simple_plan(self, f: pa.Field, sp: Any, rows: range) -> Plan | None:
        """The whole-page plan of ``f`` when all its pages are simple and inside the file, else None."""
        cols = self._columns[f.name]
        t = self._stored.field(f.name).type
        if len(cols) != 1 or sp.type_kind(t) is None:
            return None
        pages = []
        ranges: list[Range] = []
        size = self._src.size
        for page in cols[0].meta.pages:
            lay = sp.simple_layout(page.encoding)
            if lay is None or len(page.buffer_offsets) != lay.buffers:
                return None
            pages.append((lay, int(page.length)))
            for off, ln in zip(page.buffer_offsets, page.buffer_sizes):
                if off + ln > size:
                    return None  # the field reader reports it
                ranges.append((off, ln))
        if sum(n for _, n in pages) != self.num_rows:
            return None
        start, stop = rows.start, rows.stop

        def decode(bufs: list[memoryview]) -> pa.Array | pa.ChunkedArray | Plan:
            arrays = []
            at = 0
            for lay, n in pages:
                a = sp.decode_page(lay, t, n, *bufs[at : at + lay.buffers])
                at += lay.buffers
                if a is None:  # not simple after all: the field reader says why
                    return self._reader(f).plan(rows)
                arrays.append(a)
            whole = arrays[0] if len(arrays) == 1 else pa.chunked_array(arrays, t)
            return whole if stop - start == self.num_rows else whole.slice(start, stop - start)

        return Plan(ranges, decode, "simple")

    def _whole_plan(self, f: pa.Field, rows: range) -> Plan | None:
        """A 2.0 field of one column of simple pages read whole (encodings/v2_0/whole.py), else None."""
        from lancelot.encodings.v2_0 import whole

        cols = self._columns[f.name]
        if len(cols) != 1:
            return None
        t = self._stored.field(f.name).type
        return whole.field_plan(cols[0], t, self._src.size, rows, lambda: self._reader(f).plan(rows))

    @staticmethod
    def _late(reader: FieldReader, rows: Rows) -> Plan:
        """A plan whose decode step plans ``rows`` (a field planned after the simple ones were)."""
        return Plan([], lambda _: reader.plan(rows))
