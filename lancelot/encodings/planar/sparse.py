"""2.3 sparse planar pages: validity as positions, values as one constant (docs/format-2.3.md).

A sparse structure lists one layer per level of the path, outermost first.  An item
layer is a validity set: ``{1: meaning (1 = the positions are the null rows, 2 = the
valid rows), 2: the positions' CompressiveEncoding, 3: how many positions}``.
Positions are page rows, ascending, in every layer.  pylance 14 codes them as

* ``Constant`` without a value: no positions; with one (a u64): that one position;
* case 14, a range ``{1: bits, 2: start, 3: step}``: ``start + step * i``;
* case 15, a delta coding ``{1: bits, 2: base, 3: deltas}``: ``base`` then running sums of
  ``count - 1`` deltas, which sit in the next page buffer (out-of-line bit-packed);
* a 2.1 encoding (Flat 64) of the positions themselves, in the next page buffer.

lancelot reads sparse pages of item layers only (no lists; fixed-size-list layers of
structs, whose slots are lists of ``dimension`` slots of the layer below) whose value plane is a
constant scalar or no values; a page of this shape reads as levels with one nullable
item layer per sparse layer (innermost first, as 2.1's layers).  A sparse page of item
layers may also hold zipped values: a full-zip plane of the valid rows' values only, on
the page's first buffers (positions needing a buffer come after them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lancelot.encodings import compression
from lancelot.encodings.compression.block import FixedWidthBlock
from lancelot.encodings.structural.fullzip import FullZipPage
from lancelot.encodings.structural.leaf import leaf_value_type, scalar_from_bytes
from lancelot.encodings.structural.page import PageInfo, PageLevels, PageReader, Range, as_u8
from lancelot.encodings.structural.repdef import LevelMeaning
from lancelot.errors import CorruptFileError, LanceError, UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util import wire

# a sparse layer's kinds, a validity set's fields and meanings
_ITEM, _LIST, _FSL = 1, 2, 3
_MEANING, _POSITIONS, _COUNT = 1, 2, 3
NULL_POSITIONS, VALID_POSITIONS = 1, 2
# CompressiveEncoding cases 2.3 adds, with their fields
CONSTANT, RANGE, DELTA = 3, 14, 15
_BITS, _START, _STEP = 1, 2, 3
_BASE, _DELTAS = 2, 3


@dataclass(frozen=True)
class ValiditySet:
    """One item layer of a sparse structure."""

    meaning: int  # NULL_POSITIONS or VALID_POSITIONS
    positions: bytes  # a serialized CompressiveEncoding (with the 2.3 cases)
    count: int
    #: a fixed-size-list layer's dimension (*SparseFixedSizeListLayer* {1: dimension, 2: validity}): its
    #: slots are lists, each ``dimension`` slots of the layer below; 0 for an item layer
    dimension: int = 0

    @property
    def needs_buffer(self) -> bool:
        """Delta-coded positions and 2.1 encodings (e.g. Flat) sit in a page buffer; Constant and Range do not."""
        return wire.needs_buffer(self.positions)


@dataclass(frozen=True)
class ListLayer:
    """A list layer of a sparse structure (*SparseListLayer*): which of its slots hold a non-empty
    list, how many items each, and its validity."""

    num_child_slots: int  # 1: items of all its lists
    non_empty: bytes  # 2: the slots of non-empty lists (a CompressiveEncoding, ascending)
    num_non_empty: int  # 3
    counts: bytes  # 4: items of each non-empty list (a CompressiveEncoding)
    validity: ValiditySet  # 5


@dataclass(frozen=True)
class SparsePlanes:
    """A sparse planar page lancelot reads: its layers (outermost first) and its value plane."""

    layers: list[ValiditySet | ListLayer]
    scalar: bytes | None  # the constant value, None: no values (or zipped values)
    zipped: pb.FullZipLayout | None = None  # the valid rows' values, as a full-zip page of them
    chunked: pb.MiniBlockLayout | None = None  # a value per innermost slot, as a mini-block page of them
    #: with ``zipped``: the encoding of an index per slot into the zipped items (an indexed value plane)
    indices: bytes | None = None


def parse(
    structure: bytes,
    scalar: bytes | None,
    zipped: pb.FullZipLayout | None = None,
    chunked: pb.MiniBlockLayout | None = None,
    indices: bytes | None = None,
) -> SparsePlanes:
    """The sparse planes of a page."""
    layers: list[ValiditySet | ListLayer] = []
    for raw in wire.fields(structure).get(1, []):
        if not isinstance(raw, bytes):
            raise CorruptFileError("a sparse planar layer is not a message")
        kinds = wire.fields(raw)
        wire.only(kinds, {_ITEM, _LIST, _FSL}, "sparse planar layer")
        if _FSL in kinds:
            f = wire.fields(wire.message(kinds, _FSL) or b"")
            wire.only(f, {1, 2}, "sparse fixed-size-list layer")
            dimension = wire.varint(f, 1)
            if dimension <= 0:
                raise CorruptFileError(f"sparse fixed-size-list layer of dimension {dimension}")
            vs = _validity_set(wire.message(f, 2) or b"")
            layers.append(ValiditySet(vs.meaning, vs.positions, vs.count, dimension))
        elif _LIST in kinds:
            f = wire.fields(wire.message(kinds, _LIST) or b"")
            wire.only(f, {1, 2, 3, 4, 5}, "sparse list layer")
            validity = _validity_set(wire.message(f, 5) or b"")
            layers.append(
                ListLayer(
                    wire.varint(f, 1), wire.message(f, 2) or b"", wire.varint(f, 3), wire.message(f, 4) or b"", validity
                )
            )
        else:
            layers.append(_validity_set(wire.message(kinds, _ITEM) or b""))
    if not layers:
        raise CorruptFileError("a sparse planar structure without layers")
    if scalar is not None and not 1 <= len(scalar) <= 32:
        raise CorruptFileError("a planar constant scalar must hold 1..=32 bytes")
    if zipped is not None:
        if not all(isinstance(layer, ValiditySet) and not layer.dimension for layer in layers):
            raise UnsupportedEncodingError("sparse planar pages of list layers with zipped values are not supported")
        if list(zipped.layers) != [pb.REPDEF_ALL_VALID_ITEM]:
            raise UnsupportedEncodingError(f"sparse zipped values of layers {list(zipped.layers)} are not supported")
    return SparsePlanes(layers, scalar, zipped, chunked, indices)


def _validity_set(raw: bytes) -> ValiditySet:
    f = wire.fields(raw)
    wire.only(f, {_MEANING, _POSITIONS, _COUNT}, "sparse validity set")
    meaning = wire.varint(f, _MEANING)
    if meaning not in (NULL_POSITIONS, VALID_POSITIONS):
        raise CorruptFileError(f"sparse validity meaning {meaning}")
    return ValiditySet(meaning, wire.message(f, _POSITIONS) or b"", wire.varint(f, _COUNT))


def positions(vs: ValiditySet, buffer: np.ndarray | None, num_rows: int) -> np.ndarray:
    """The page rows a validity set lists (int64, ascending, each < num_rows)."""
    out = sequence(vs.positions, vs.count, buffer)
    if len(out) and (int(out[0]) < 0 or int(out[-1]) >= num_rows or np.any(np.diff(out) <= 0)):
        raise CorruptFileError(f"sparse positions are not ascending rows of a {num_rows}-row page")
    return out


def sequence(raw: bytes, n: int, buffer: np.ndarray | None) -> np.ndarray:
    """``n`` integers (int64) coded by a sequence's CompressiveEncoding ``raw``: positions, or a list
    layer's counts (which may repeat: a Delta of zero deltas)."""
    f = wire.fields(raw)
    if len(f) != 1:
        raise CorruptFileError("sparse positions name no single encoding")
    if CONSTANT in f:  # no position, or (a Range needs two) one: the constant's u64
        value = wire.message(wire.fields(wire.message(f, CONSTANT) or b""), 1)
        if n != (value is not None) or (value is not None and len(value) != 8):
            raise CorruptFileError(f"constant sparse positions: {n} positions, a value of {len(value or b'')} bytes")
        out = np.array([int.from_bytes(value, "little")] if value is not None else [], dtype=np.int64)
    elif RANGE in f:
        r = wire.fields(wire.message(f, RANGE) or b"")
        wire.only(r, {_BITS, _START, _STEP}, "range positions")
        start, step = wire.varint(r, _START), wire.varint(r, _STEP)
        out = start + step * np.arange(n, dtype=np.int64)
    elif DELTA in f:
        d = wire.fields(wire.message(f, DELTA) or b"")
        wire.only(d, {_BITS, _BASE, _DELTAS}, "delta positions")
        deltas_raw = wire.message(d, _DELTAS) or b""
        inline = wire.inline_sequence(deltas_raw)  # deltas in a range (pylance, small pages): no buffer
        if buffer is None and inline is None:
            raise CorruptFileError("delta positions without their page buffer")
        out = np.zeros(n, dtype=np.int64)
        if n:
            out[0] = wire.varint(d, _BASE)
            if n > 1 and inline is not None:
                np.cumsum(inline[0] + inline[1] * np.arange(n - 1, dtype=np.int64), out=out[1:])
                out[1:] += out[0]
            elif n > 1:
                assert buffer is not None
                wire.check_known(deltas_raw, pb.CompressiveEncoding.DESCRIPTOR, "delta positions")
                enc = pb.CompressiveEncoding()
                enc.ParseFromString(deltas_raw)
                block = compression.decompress_block(enc, buffer, n - 1)
                if not isinstance(block, FixedWidthBlock) or block.bits_per_value not in (8, 16, 32, 64):
                    raise CorruptFileError("delta positions: the deltas are not whole fixed-width integers")
                deltas = block.as_dtype(f"<u{block.bits_per_value // 8}")[: n - 1].astype(np.int64)
                np.cumsum(deltas, out=out[1:])
                out[1:] += out[0]
    else:  # a 2.1 encoding in a page buffer (pylance writes Flat 64 positions)
        wire.check_known(raw, pb.CompressiveEncoding.DESCRIPTOR, "sparse positions")
        enc = pb.CompressiveEncoding()
        enc.ParseFromString(raw)
        if buffer is None:
            raise CorruptFileError("sparse positions without their page buffer")
        out = np.zeros(0, dtype=np.int64)
        if n:
            flat = compression.decompress_block(enc, buffer, n)
            if not isinstance(flat, FixedWidthBlock) or flat.bits_per_value not in (8, 16, 32, 64):
                raise CorruptFileError("sparse positions are not whole fixed-width integers")
            out = flat.as_dtype(f"<u{flat.bits_per_value // 8}")[:n].astype(np.int64)
    return out


class SparsePage(PageReader):
    """Reads rows of a sparse planar page: definition levels from the layers' positions."""

    def __init__(self, info: PageInfo, cache: dict[Any, Any], planes: SparsePlanes, leaf_type: pa.DataType) -> None:
        super().__init__(info, cache)
        self.planes = planes
        self.leaf_type = leaf_type
        self.meaning = LevelMeaning.of([pb.REPDEF_NULLABLE_ITEM] * len(planes.layers))
        if not all(isinstance(vs, ValiditySet) for vs in planes.layers):
            raise CorruptFileError("a sparse page of lists read as items")
        self.layers = [vs for vs in planes.layers if isinstance(vs, ValiditySet)]
        self.buffers = [i for i, vs in enumerate(self.layers) if vs.needs_buffer]
        if len(self.buffers) > info.num_buffers:
            raise CorruptFileError(
                f"sparse positions need {len(self.buffers)} buffers, the page has {info.num_buffers}"
            )
        self.inner: FullZipPage | None = None
        self._inner_ranges = 0
        if planes.zipped is not None:
            # the zipped plane is a full-zip page of the valid rows alone, on the page's buffers
            meta = type(info.meta)()
            meta.CopyFrom(info.meta)
            meta.length = int(planes.zipped.num_items)
            # its buffers alone (the indices' come first, the positions' follow): a fixed-width plane
            # has no repetition index
            keep = info.num_buffers - len(self.buffers)
            first = 1 if planes.indices is not None else 0
            if keep <= first:
                raise CorruptFileError(f"a sparse page of {info.num_buffers} buffers has none for its values")
            del meta.buffer_offsets[keep:]
            del meta.buffer_sizes[keep:]
            del meta.buffer_offsets[:first]
            del meta.buffer_sizes[:first]
            self.inner = FullZipPage(
                PageInfo(info.column, info.index, info.path, meta), cache, planes.zipped, leaf_type
            )

    @property
    def cache_key(self) -> tuple[str, int, int]:
        return ("planar-sparse", self.info.column, self.info.index)  # (the inner page has the structural key)

    @property
    def _values_key(self) -> tuple[str, int, int]:
        return ("planar-sparse-values", self.info.column, self.info.index)

    def _value_rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``rows`` hold a value, and the value plane's rows of those."""
        dfn, first = self.dfn, self.cache[self._values_key]
        has = dfn[rows] == 0
        return has, first[rows[has]]

    @property
    def dfn(self) -> np.ndarray:
        """Definition level of every page row; ``load_search`` computes it."""
        dfn: np.ndarray | None = self.cache.get(self.cache_key)
        if dfn is None:
            raise LanceError("sparse page decoded before load_search", column=self.info.column, page=self.info.index)
        return dfn

    def search_ranges(self) -> list[Range]:
        inner = [] if self.inner is None else self.inner.search_ranges()
        self._inner_ranges = len(inner)
        if self.cache.get(self.cache_key) is not None:
            return inner
        indices = [self.info.buffer(0)] if self.planes.indices is not None else []  # (an indexed plane's)
        if not self.buffers and not inner and not indices:
            self.load_search([])
            return []
        # the positions' buffers are the page's first, or, under a zipped plane, its last (after the plane's)
        first = self.info.num_buffers - len(self.buffers) if self.inner is not None else 0
        return [self.info.buffer(first + i) for i in range(len(self.buffers))] + indices + inner

    def load_search(self, bufs: list[memoryview]) -> None:
        k = self._inner_ranges
        if self.inner is not None and k:
            self.inner.load_search(bufs[len(bufs) - k :])
            bufs = bufs[: len(bufs) - k]
            self._inner_ranges = 0
        if self.cache.get(self.cache_key) is not None:  # only the inner page's cache was missing
            return
        n = self.info.num_rows
        index_buf = None
        if self.planes.indices is not None and bufs:
            index_buf, bufs = as_u8(bufs[-1]), bufs[:-1]
        if len(bufs) != len(self.buffers):
            raise CorruptFileError(f"sparse positions need {len(self.buffers)} buffers, fetched {len(bufs)}")
        buffer_of = {layer: as_u8(b) for layer, b in zip(self.buffers, bufs)}  # in layer order, outermost first
        dfn = np.zeros(n, dtype=np.uint16)
        depth = len(self.planes.layers)
        group = 1  # page rows per slot of the layer: the dimensions of the fixed-size lists at or below it
        # innermost first, so that a row null at an outer layer takes the outer (higher) level
        for i in reversed(range(depth)):
            vs = self.layers[i]
            group *= vs.dimension or 1
            if n % group:
                raise CorruptFileError(f"{n} page rows are not whole fixed-size lists of {group}")
            slots = n // group
            pos = positions(vs, buffer_of.get(i), slots)
            level = depth - i
            if vs.meaning == VALID_POSITIONS:
                null = np.ones(slots, dtype=bool)
                null[pos] = False
            else:
                null = np.zeros(slots, dtype=bool)
                null[pos] = True
            dfn[np.repeat(null, group) if group > 1 else null] = level
        if self.inner is not None and self.planes.indices is not None:
            # an index per page row into the items (null rows' ignored)
            idx = sequence(self.planes.indices, n, index_buf)
            valid = dfn == 0
            if np.any(idx[valid] >= self.inner.info.num_rows) or np.any(idx[valid] < 0):
                raise CorruptFileError(f"indexed values point past their {self.inner.info.num_rows} items")
            self.cache[self._values_key] = np.where(valid, idx, 0)
        elif self.inner is not None:
            valid = dfn == 0
            if int(valid.sum()) != self.inner.info.num_rows:
                raise CorruptFileError(f"{int(valid.sum())} valid rows but {self.inner.info.num_rows} zipped values")
            self.cache[self._values_key] = np.cumsum(valid) - 1
        elif self.planes.scalar is None and n and int(dfn.min()) == 0:
            raise CorruptFileError("a sparse page without values has valid rows")
        self.cache[self.cache_key] = dfn

    def plan(self, rows: np.ndarray) -> list[Range]:
        if self.inner is None or len(rows) == 0:
            return []
        _, value_rows = self._value_rows(rows)
        return self.inner.plan(np.unique(value_rows)) if len(value_rows) else []

    def decode(self, rows: np.ndarray, bufs: list[memoryview]) -> PageLevels:
        dfn = self.dfn[rows]
        t = leaf_value_type(self.leaf_type)
        n = len(rows)
        if self.inner is not None:
            has, value_rows = self._value_rows(rows)
            inner = pa.array([], self.leaf_type)
            if len(value_rows):  # (indexed: items in any order, repeated)
                items, back = np.unique(value_rows, return_inverse=True)
                inner = self.inner.decode(items, bufs).values
                if len(items) != len(value_rows) or np.any(items != value_rows):
                    inner = inner.take(pa.array(back.reshape(-1)))
            # one value per row (a null where the row has none; the levels make it null anyway)
            at = np.cumsum(has) - 1
            values = inner.take(pa.array(at, mask=~has))
        elif self.planes.scalar is None:
            values = pa.nulls(n, self.leaf_type)
        else:
            one = scalar_from_bytes(self.planes.scalar, t)
            if pa.types.is_dictionary(self.leaf_type):
                one = one.dictionary_encode().cast(self.leaf_type)
            values = one.take(pa.array(np.zeros(n, dtype=np.int64)))
        return PageLevels(self.meaning, None, dfn if int(dfn.max(initial=0)) else None, n, values)
