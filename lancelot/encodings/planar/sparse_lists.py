"""2.3 sparse planar pages with list layers: rep/def levels from positions and counts
(docs/format-2.3.md, "Sparse structure").

Every layer lists positions in the *slots* of its level, outermost first: the page rows
for the outermost layer; below an item layer the same slots (a struct's null rows stay
slots of its children); below a list layer the items of its non-empty lists.  A list
layer says which slots are null (its validity set), which hold a non-empty list
(``non_empty``, ascending) and how many items each holds (``counts``); the other slots
are empty lists.

The levels are built for the whole page once (the search cache) with one nullable item
or null-and-empty list layer per sparse layer, innermost first, then rows are selected
as for any 2.1 page.  Sequences (positions, counts) coded as ``Constant`` (with or
without a value), range or delta are read from the layout; any other 2.1 encoding, and
a delta's deltas, from the next page buffer, in layer order (outermost first; in a list
layer: non-empty slots, counts, validity).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from lancelot.encodings import compression
from lancelot.encodings.compression.block import ConstantBlock, FixedWidthBlock
from lancelot.encodings.compression.segments import ranges_index
from lancelot.encodings.planar.sparse import (
    CONSTANT,
    DELTA,
    NULL_POSITIONS,
    RANGE,
    ListLayer,
    SparsePage,
    SparsePlanes,
    ValiditySet,
    positions,
    sequence,
)
from lancelot.encodings.structural.leaf import leaf_value_type, scalar_from_bytes
from lancelot.encodings.structural.miniblock import MiniBlockPage
from lancelot.encodings.structural.page import PageInfo, PageLevels, PageReader, Range, as_u8, select_rows
from lancelot.encodings.structural.repdef import LevelMeaning
from lancelot.errors import CorruptFileError, LanceError, UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util import wire


def sparse_reader(info: PageInfo, cache: dict[Any, Any], planes: SparsePlanes, leaf_type: pa.DataType) -> PageReader:
    """The reader of a sparse planar page: with list layers or chunked values, or of item layers only."""
    if planes.chunked is not None or any(isinstance(layer, ListLayer) for layer in planes.layers):
        return SparseListPage(info, cache, planes, leaf_type)
    return SparsePage(info, cache, planes, leaf_type)


#: CompressiveEncoding.dictionary, .rle
DICTIONARY, RLE = 7, 8


def _needs_buffer(enc: bytes) -> bool:
    return wire.needs_buffer(enc)


def _sequences(layer: ValiditySet | ListLayer) -> list[bytes]:
    """The encodings of a layer's sequences, in the order their buffers come."""
    if isinstance(layer, ValiditySet):
        return [layer.positions]
    return [layer.non_empty, layer.counts, layer.validity.positions]


def _ints(enc_raw: bytes, count: int, buffer: np.ndarray | None, what: str) -> np.ndarray:
    """``count`` integers (int64) coded by ``enc_raw``: a 2.3 case, Constant or a 2.1 encoding."""
    f = wire.fields(enc_raw)
    if CONSTANT in f and len(f) == 1:
        c = wire.fields(wire.message(f, CONSTANT) or b"")
        value = wire.message(c, 1)
        if value is None:
            if count:
                raise CorruptFileError(f"{what}: a constant without a value for {count} values")
            return np.zeros(0, dtype=np.int64)
        return np.full(count, int.from_bytes(value, "little"), dtype=np.int64)
    if RANGE in f or DELTA in f:
        return sequence(enc_raw, count, buffer)
    if DICTIONARY in f and len(f) == 1:
        return _dictionary(wire.message(f, DICTIONARY) or b"", count, buffer, what)
    if RLE in f and len(f) == 1:
        ranged = _ranged_runs(wire.message(f, RLE) or b"", count, buffer, what)
        if ranged is not None:
            return ranged
    wire.check_known(enc_raw, pb.CompressiveEncoding.DESCRIPTOR, what)
    enc = pb.CompressiveEncoding()
    enc.ParseFromString(enc_raw)
    if buffer is None:
        raise CorruptFileError(f"{what} without its page buffer")
    block = compression.decompress_block(enc, buffer, count)
    if isinstance(block, ConstantBlock) and block.value is not None:
        return np.full(count, int.from_bytes(block.value, "little"), dtype=np.int64)
    if not isinstance(block, FixedWidthBlock) or block.bits_per_value not in (8, 16, 32, 64):
        raise CorruptFileError(f"{what} are not whole fixed-width integers")
    return block.as_dtype(f"<u{block.bits_per_value // 8}")[:count].astype(np.int64)


def _ranged_runs(raw: bytes, count: int, buffer: np.ndarray | None, what: str) -> np.ndarray | None:
    """RLE whose run values are a range (pylance codes list counts so): in the buffer a u64 byte count
    of the run values (0), then the run lengths; None for other RLE (2.1's, decoded as such)."""
    r = wire.fields(raw)
    inline = wire.inline_sequence(wire.message(r, 1) or b"")
    if inline is None:
        return None
    lengths_enc = pb.CompressiveEncoding()
    lengths_raw = wire.message(r, 2) or b""
    wire.check_known(lengths_raw, pb.CompressiveEncoding.DESCRIPTOR, what)
    lengths_enc.ParseFromString(lengths_raw)
    bits = int(lengths_enc.flat.bits_per_value) if lengths_enc.WhichOneof("compression") == "flat" else 0
    if bits not in (8, 16, 32, 64):
        raise UnsupportedEncodingError(f"{what}: RLE of ranged values whose run lengths are not flat integers")
    if buffer is None or len(buffer) < 8:
        raise CorruptFileError(f"{what}: RLE without its page buffer")
    start = 8 + int(np.frombuffer(bytes(buffer[:8]), dtype="<u8")[0])
    if start > len(buffer):
        raise CorruptFileError(f"{what}: RLE run values past their buffer")
    lengths = np.frombuffer(bytes(buffer[start:]), dtype=f"<u{bits // 8}").astype(np.int64)
    if int(lengths.sum()) < count:
        raise CorruptFileError(f"{what}: runs of {int(lengths.sum())} values, {count} needed")
    values = inline[0] + inline[1] * np.arange(len(lengths), dtype=np.int64)
    out: np.ndarray = np.repeat(values, lengths)[:count]
    return out


def _dictionary(raw: bytes, count: int, buffer: np.ndarray | None, what: str) -> np.ndarray:
    """A Dictionary of integers in one buffer: u64 indices bytes, u64 items bytes, then each part
    (as pylance 14 writes list item counts, the items a range)."""
    d = wire.fields(raw)
    wire.only(d, {1, 2, 3}, f"{what}: dictionary")
    if buffer is None or len(buffer) < 16:
        raise CorruptFileError(f"{what}: a dictionary without its page buffer")
    n_idx, n_items = (int(x) for x in np.frombuffer(bytes(buffer[:16]), dtype="<u8"))
    if 16 + n_idx + n_items > len(buffer):
        raise CorruptFileError(f"{what}: dictionary parts of {n_idx} + {n_items} bytes in a {len(buffer)}-byte buffer")
    num_items = wire.varint(d, 3)
    items_raw, idx_raw = wire.message(d, 2) or b"", wire.message(d, 1) or b""
    items = _ints(items_raw, num_items, buffer[16 + n_idx : 16 + n_idx + n_items] if n_items else None, what)
    idx = _ints(idx_raw, count, buffer[16 : 16 + n_idx], what)
    if len(idx) and (int(idx.min()) < 0 or int(idx.max()) >= num_items):
        raise CorruptFileError(f"{what}: dictionary index past its {num_items} items")
    out: np.ndarray = items[idx]
    return out


def _null_slots(vs: ValiditySet, num_slots: int, buffer: np.ndarray | None) -> np.ndarray:
    pos = positions(vs, buffer, num_slots)
    null = np.zeros(num_slots, dtype=bool)
    null[pos] = True
    return null if vs.meaning == NULL_POSITIONS else ~null


def _level(level: int | None) -> int:
    if level is None:  # (every sparse layer is nullable, a list one emptyable too)
        raise CorruptFileError("a sparse layer without a null level")
    return level


def build_levels(
    layers: list[ValiditySet | ListLayer], meaning: LevelMeaning, num_rows: int, bufs: list[np.ndarray]
) -> tuple[np.ndarray | None, np.ndarray, int]:
    """(rep, def, number of levels) of a whole page from its sparse layers (outermost first)."""
    it = iter(bufs)
    depth = len(layers)
    rep = np.full(num_rows, meaning.max_rep, dtype=np.uint16)
    dfn = np.zeros(num_rows, dtype=np.uint16)
    closed = np.zeros(num_rows, dtype=bool)  # entries already null or empty at an outer layer
    slots = np.arange(num_rows, dtype=np.int64)  # entry of each slot of the current level
    for i, layer in enumerate(layers):
        k = depth - 1 - i  # the layer's index in ``meaning`` (innermost first)
        bufs_of = [as_u8(next(it)) if _needs_buffer(e) else None for e in _sequences(layer)]
        vs = layer if isinstance(layer, ValiditySet) else layer.validity
        null = _null_slots(vs, len(slots), bufs_of[-1])
        hit = slots[null & ~closed[slots]]
        dfn[hit], closed[hit] = _level(meaning.null_level(k)), True
        if isinstance(layer, ValiditySet):
            continue
        non_empty = _ints(layer.non_empty, layer.num_non_empty, bufs_of[0], "non-empty list slots")
        counts = _ints(layer.counts, layer.num_non_empty, bufs_of[1], "list item counts")
        if len(non_empty) and (
            int(non_empty[0]) < 0 or int(non_empty[-1]) >= len(slots) or np.any(np.diff(non_empty) <= 0)
        ):
            raise CorruptFileError("non-empty list slots are not ascending slots of their level")
        if np.any(counts <= 0) or int(counts.sum()) != layer.num_child_slots:
            raise CorruptFileError(f"list item counts do not add up to {layer.num_child_slots} items")
        entries = slots[non_empty]
        if np.any(closed[entries]):
            raise CorruptFileError("a null list holds items")
        empty = np.ones(len(slots), dtype=bool)
        empty[non_empty] = False
        hit = slots[empty & ~closed[slots]]
        dfn[hit], closed[hit] = _level(meaning.empty_level(k)), True
        # each non-empty list's entry becomes one entry per item: the first keeps the entry's
        # repetition level, the others start a new item of this list
        mult = np.ones(len(rep), dtype=np.int64)
        mult[entries] = counts
        starts = np.zeros(len(rep) + 1, dtype=np.int64)
        np.cumsum(mult, out=starts[1:])
        rep, dfn, closed = np.repeat(rep, mult), np.repeat(dfn, mult), np.repeat(closed, mult)
        first = np.zeros(len(rep), dtype=bool)
        first[starts[:-1]] = True
        rep[~first] = meaning.rep_level(k) - 1
        slots = ranges_index(starts[entries], counts)
    return (rep if meaning.max_rep else None), dfn, len(dfn)


class SparseListPage(PageReader):
    """Reads rows of a sparse planar page with list layers (constant or no values), or with chunked
    values: a mini-block plane of one value per slot of the innermost layer (null items filled),
    whose buffers come first (chunk
    metadata, chunks, dictionary), before the structure's."""

    def __init__(self, info: PageInfo, cache: dict[Any, Any], planes: SparsePlanes, leaf_type: pa.DataType) -> None:
        super().__init__(info, cache)
        if planes.zipped is not None:
            raise CorruptFileError("zipped values under sparse list layers")
        if any(isinstance(layer, ValiditySet) and layer.dimension for layer in planes.layers):
            raise UnsupportedEncodingError("sparse fixed-size-list layers beside list layers are not supported")
        self.planes = planes
        self.leaf_type = leaf_type
        kinds = [
            pb.REPDEF_NULL_AND_EMPTY_LIST if isinstance(layer, ListLayer) else pb.REPDEF_NULLABLE_ITEM
            for layer in reversed(planes.layers)
        ]
        self.meaning = LevelMeaning.of(kinds)
        self.num_buffers = sum(_needs_buffer(e) for layer in planes.layers for e in _sequences(layer))
        chunked = planes.chunked
        self.value_buffers = 0 if chunked is None else 2 + int(chunked.HasField("dictionary"))
        if chunked is not None and chunked.repetition_index_depth:
            raise CorruptFileError("sparse chunked values with a repetition index")
        if self.value_buffers + self.num_buffers > info.num_buffers:
            raise CorruptFileError(
                f"sparse layers need {self.value_buffers + self.num_buffers} buffers, the page has {info.num_buffers}"
            )

    @property
    def cache_key(self) -> tuple[str, int, int]:
        return ("planar-sparse", self.info.column, self.info.index)

    @property
    def span(self) -> PageLevels:
        return self._state()[0]

    def _state(self) -> tuple[PageLevels, MiniBlockPage | None]:
        state: tuple[PageLevels, MiniBlockPage | None] | None = self.cache.get(self.cache_key)
        if state is None:
            raise LanceError("sparse page decoded before load_search", column=self.info.column, page=self.info.index)
        return state

    def _value_search(self) -> list[int]:
        """The value plane's search buffers: chunk metadata and dictionary."""
        if self.planes.chunked is None:
            return []
        return [0, 2] if self.planes.chunked.HasField("dictionary") else [0]

    def search_ranges(self) -> list[Range]:
        if self.cache.get(self.cache_key) is not None:
            return []
        wanted = self._value_search() + [self.value_buffers + i for i in range(self.num_buffers)]
        if not wanted:
            self.load_search([])
        return [self.info.buffer(i) for i in wanted]

    def load_search(self, bufs: list[memoryview]) -> None:
        k = len(self._value_search())
        if len(bufs) != k + self.num_buffers:
            raise CorruptFileError(f"sparse layers need {self.num_buffers} buffers, fetched {len(bufs) - k}")
        structure = [as_u8(b) for b in bufs[k:]]
        rep, dfn, n = build_levels(self.planes.layers, self.meaning, self.info.num_rows, structure)
        visible = int((dfn <= self.meaning.max_visible).sum())
        inner = None
        if self.planes.chunked is not None:
            # one value per slot of the innermost layer (null items too: pylance 14 fills them, e.g.
            # with a dictionary entry): the span's values are the item's place in the plane (null: a
            # null item), swapped for the plane's values when rows are decoded
            valid = dfn[dfn <= self.meaning.max_visible] == 0
            count = len(valid)
            values = pa.array(np.arange(count, dtype=np.int64), mask=~valid)
            inner = self._inner(count)
            inner.load_search(list(bufs[:k]))
            if int(inner.table.items.sum()) != count:
                raise CorruptFileError(f"{count} item slots but {int(inner.table.items.sum())} chunked values")
        elif self.planes.scalar is None:
            if int((dfn == 0).sum()):
                raise CorruptFileError("a sparse page without values has valid items")
            values = pa.nulls(visible, self.leaf_type)
        else:
            one = scalar_from_bytes(self.planes.scalar, leaf_value_type(self.leaf_type))
            if pa.types.is_dictionary(self.leaf_type):
                one = one.dictionary_encode().cast(self.leaf_type)
            values = one.take(pa.array(np.zeros(visible, dtype=np.int64)))
        self.cache[self.cache_key] = (PageLevels(self.meaning, rep, dfn, n, values), inner)

    def _inner(self, count: int) -> MiniBlockPage:
        """A mini-block page of the ``count`` item slots' values on the page's first buffers."""
        assert self.planes.chunked is not None
        layout = pb.MiniBlockLayout()
        layout.CopyFrom(self.planes.chunked)
        layout.num_items = count
        meta = type(self.info.meta)()
        meta.CopyFrom(self.info.meta)
        meta.length = count
        del meta.buffer_offsets[self.value_buffers :]
        del meta.buffer_sizes[self.value_buffers :]
        info = PageInfo(self.info.column, self.info.index, self.info.path, meta)
        cache: dict[Any, Any] = {}  # (its own: the page's structural key is this page's)
        return MiniBlockPage(info, cache, layout, self.leaf_type)

    def _items(self, rows: np.ndarray) -> tuple[PageLevels, np.ndarray]:
        """The rows' levels (values: each visible item's place in the value plane) and the plane's
        items they need."""
        sel = select_rows(self.span, 0, rows)
        places = sel.values.drop_null().to_numpy(zero_copy_only=False).astype(np.int64)
        return sel, places

    def plan(self, rows: np.ndarray) -> list[Range]:
        inner = self._state()[1]
        if inner is None or len(rows) == 0:
            return []
        _, places = self._items(rows)
        return inner.plan(places) if len(places) else []

    def decode(self, rows: np.ndarray, bufs: list[memoryview]) -> PageLevels:
        inner = self._state()[1]
        if inner is None:
            return select_rows(self.span, 0, rows)
        sel, places = self._items(rows)
        got = pa.array([], self.leaf_type)
        if len(places):
            got = inner.decode(places, bufs).values
        has = sel.values.is_valid().to_numpy(zero_copy_only=False)
        at = np.cumsum(has) - 1
        values = got.take(pa.array(at, mask=~has))
        return PageLevels(sel.meaning, sel.rep, sel.dfn, sel.num_levels, values)
