"""The mini-block page layout (lance.encodings21.MiniBlockLayout; encoding.md, "Mini Block Page Layout").

Page buffers: 0 = chunk metadata, 1 = the chunks, 2 = dictionary (when
``dictionary`` is set), last = repetition index (when
``repetition_index_depth`` > 0).

* Chunk metadata: one word per chunk, u16 in 2.1 and u32 when
  ``has_large_chunk`` (2.2).  The low 4 bits hold log2 of the chunk's value
  count (the last chunk takes what remains of ``num_items``), the other bits
  the chunk size in 8-byte words minus one.
* A chunk: u16 level count; u16 rep size (if rep_compression); u16 def size
  (if def_compression); one size per value buffer (u16, or u32 when
  ``has_large_chunk``); then, each padded to 8 bytes: the header, the
  repetition levels, the definition levels and the value buffers.
* Repetition index: ``depth + 1`` u64 per chunk; the first two are the rows
  that end in the chunk and the items after the chunk's last row start
  (a row that spills into the next chunk).

The search cache (chunk table, per-chunk row counts, dictionary) is decoded
once per page; a read fetches only the chunks that hold the requested rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancelot.encodings import compression
from lancelot.encodings.structural.leaf import (
    apply_dictionary,
    block_to_arrow,
    indices_to_numpy,
    leaf_value_type,
    values_to_arrow,
)
from lancelot.encodings.structural.page import (
    PageInfo,
    PageLevels,
    PageReader,
    Range,
    as_u8,
    concat_levels,
    levels_u16,
    select_rows,
)
from lancelot.encodings.structural.repdef import LevelMeaning, visible_mask
from lancelot.errors import CorruptFileError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

ALIGN = 8


def _pad(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class ChunkTable:
    """The search cache of a mini-block page."""

    offsets: np.ndarray  # absolute file position of each chunk
    sizes: np.ndarray  # bytes per chunk
    items: np.ndarray  # values per chunk
    first_row: np.ndarray  # first row that starts in each chunk (rows before it are a preamble)
    row_starts: np.ndarray  # rows starting in each chunk (including a trailer row)
    has_preamble: np.ndarray  # bool per chunk
    dictionary: pa.Array | None


class MiniBlockPage(PageReader):
    """Reads rows of a mini-block page."""

    def __init__(self, info: PageInfo, cache: dict, layout: pb.MiniBlockLayout, value_type: pa.DataType) -> None:
        super().__init__(info, cache)
        self.layout = layout
        self.value_type = value_type  # the leaf type (a dictionary field keeps its dictionary type)
        self.meaning = LevelMeaning.of(layout.layers)
        self.has_rep = layout.HasField("rep_compression")
        self.has_def = layout.HasField("def_compression")
        self.word = 4 if layout.has_large_chunk else 2
        if not layout.HasField("value_compression"):
            raise CorruptFileError("mini-block layout without value compression")
        if layout.num_buffers > 64:
            raise CorruptFileError(f"mini-block chunks of {layout.num_buffers} buffers")

    # -- search cache -------------------------------------------------------------------

    @property
    def table(self) -> ChunkTable | None:
        return self.cache.get(self.cache_key)

    def _search_buffers(self) -> list[int]:
        idx = [0]
        if self.layout.HasField("dictionary"):
            idx.append(2)
        if self.layout.repetition_index_depth > 0:
            idx.append(self.info.num_buffers - 1)
        return idx

    def search_ranges(self) -> list[Range]:
        if self.table is not None:
            return []
        return [self.info.buffer(i) for i in self._search_buffers()]

    def load_search(self, bufs: list[memoryview]) -> None:
        it = iter(bufs)
        meta = as_u8(next(it))
        dictionary = None
        if self.layout.HasField("dictionary"):
            dictionary = self._decode_dictionary(as_u8(next(it)))
        rep_index = as_u8(next(it)) if self.layout.repetition_index_depth > 0 else None
        self.cache[self.cache_key] = self._chunk_table(meta, rep_index, dictionary)

    def _decode_dictionary(self, buf: np.ndarray) -> pa.Array:
        n = int(self.layout.num_dictionary_items)
        block = compression.decompress_block(self.layout.dictionary, buf, n)
        return block_to_arrow(block, leaf_value_type(self.value_type))

    def _chunk_table(self, meta: np.ndarray, rep_index: np.ndarray | None, dictionary) -> ChunkTable:
        if len(meta) % self.word:
            raise CorruptFileError(f"chunk metadata of {len(meta)} bytes is not a whole number of words")
        words = np.ascontiguousarray(meta).view("<u4" if self.word == 4 else "<u2").astype(np.int64)
        n_chunks = len(words)
        total_items = int(self.layout.num_items)
        data_pos, data_size = self.info.buffer(1)
        sizes = ((words >> 4) + 1) * ALIGN
        log_items = words & 0xF
        items = np.left_shift(np.int64(1), log_items)
        if n_chunks:
            before = int(items[:-1].sum())
            if before > total_items:
                raise CorruptFileError(f"chunks hold more than the page's {total_items} items")
            items[-1] = total_items - before
        elif total_items:
            raise CorruptFileError(f"page of {total_items} items has no chunks")
        ends = np.cumsum(sizes)
        if n_chunks and int(ends[-1]) > data_size:
            raise CorruptFileError(f"chunks need {int(ends[-1])} bytes, the chunk buffer has {data_size}")
        offsets = data_pos + ends - sizes
        if rep_index is not None:
            first_row, starts, preamble = self._rep_index(rep_index, n_chunks)
        else:
            if self.meaning.max_rep:
                raise CorruptFileError("a mini-block page with lists needs a repetition index")
            starts = items.copy()
            first_row = np.cumsum(starts) - starts
            preamble = np.zeros(n_chunks, dtype=bool)
        if n_chunks and int(starts.sum()) != self.info.num_rows:
            raise CorruptFileError(f"chunks hold {int(starts.sum())} rows, the page has {self.info.num_rows}")
        return ChunkTable(offsets, sizes, items, first_row, starts, preamble, dictionary)

    def _rep_index(self, raw: np.ndarray, n_chunks: int):
        stride = int(self.layout.repetition_index_depth) + 1
        if len(raw) != n_chunks * stride * 8:
            raise CorruptFileError(f"repetition index of {len(raw)} bytes for {n_chunks} chunks of depth {stride - 1}")
        vals = np.ascontiguousarray(raw).view("<u8").reshape(n_chunks, stride).astype(np.int64)
        ends, partial = vals[:, 0], vals[:, 1]
        trailer = partial > 0
        preamble = np.zeros(n_chunks, dtype=bool)
        preamble[1:] = trailer[:-1]
        starts = ends + trailer - preamble
        if np.any(starts < 0):
            raise CorruptFileError("repetition index claims a negative row count")
        first_row = np.cumsum(starts) - starts
        return first_row, starts, preamble

    # -- plan / decode ----------------------------------------------------------------

    def _chunks_for(self, rows: np.ndarray) -> np.ndarray:
        """The chunks holding ``rows`` (sorted unique chunk indices)."""
        t = self.table
        cum = np.cumsum(t.row_starts)
        first = np.searchsorted(cum, rows, side="right")
        # the last row to start in a chunk with a trailer spills over into the following
        # chunks, up to the first of them that has no trailer itself
        trailer = np.append(t.has_preamble[1:], False)
        last = first.copy()
        spill = (rows == cum[first] - 1) & trailer[first]
        if spill.any():
            stops = np.flatnonzero(~trailer)
            last[spill] = stops[np.searchsorted(stops, first[spill] + 1)]
        need = np.zeros(len(t.row_starts) + 1, dtype=np.int64)
        np.add.at(need, first, 1)
        np.add.at(need, last + 1, -1)
        return np.flatnonzero(np.cumsum(need)[:-1] > 0)

    def plan(self, rows: np.ndarray) -> list[Range]:
        chunks = self._chunks_for(rows)
        t = self.table
        return [(int(t.offsets[c]), int(t.sizes[c])) for c in chunks]

    def decode(self, rows: np.ndarray, bufs: list[memoryview]) -> PageLevels:
        chunks = self._chunks_for(rows)  # as planned (recomputed: readers keep no per-request state)
        t = self.table
        if len(bufs) != len(chunks):
            raise CorruptFileError(f"fetched {len(bufs)} chunks, planned {len(chunks)}")
        decoded = [self._decode_chunk(int(c), as_u8(b)) for c, b in zip(chunks, bufs)]
        # consecutive chunks form spans; each span is cut to the rows asked
        breaks = np.flatnonzero(np.diff(chunks) != 1) + 1
        parts = []
        for span in np.split(np.arange(len(chunks)), breaks):
            c0 = int(chunks[span[0]])
            levels = concat_levels([decoded[i] for i in span])
            if t.has_preamble[c0]:
                levels = self._skip_preamble(levels)
            lo = t.first_row[c0]
            hi = t.first_row[int(chunks[span[-1]])] + t.row_starts[int(chunks[span[-1]])]
            sel = rows[(rows >= lo) & (rows < hi)]
            parts.append(select_rows(levels, int(lo), sel))
        return concat_levels(parts) if parts else self._empty()

    def _empty(self) -> PageLevels:
        return PageLevels(self.meaning, None, None, 0, pa.nulls(0, self.value_type))

    def _skip_preamble(self, levels: PageLevels) -> PageLevels:
        rep = levels.rep
        starts = np.flatnonzero(rep == self.meaning.max_rep)
        cut = int(starts[0]) if len(starts) else levels.num_levels
        vis = visible_mask(self.meaning, levels.dfn, levels.num_levels)
        vcut = cut if vis is None else int(vis[:cut].sum())
        dfn = None if levels.dfn is None else levels.dfn[cut:]
        return PageLevels(self.meaning, rep[cut:], dfn, levels.num_levels - cut,
                          levels.values.slice(vcut))

    def _decode_chunk(self, c: int, buf: np.ndarray) -> PageLevels:
        t = self.table
        n_items = int(t.items[c])
        size = len(buf)
        nb = int(self.layout.num_buffers)
        head = 2 + 2 * self.has_rep + 2 * self.has_def + self.word * nb
        if head > size:
            raise CorruptFileError(f"chunk {c}: header of {head} bytes in a chunk of {size}")
        hdr = bytes(buf[:head])
        num_levels = int.from_bytes(hdr[0:2], "little")
        pos = 2
        rep_size = def_size = 0
        if self.has_rep:
            rep_size = int.from_bytes(hdr[pos:pos + 2], "little")
            pos += 2
        if self.has_def:
            def_size = int.from_bytes(hdr[pos:pos + 2], "little")
            pos += 2
        sizes = [int.from_bytes(hdr[pos + i * self.word: pos + (i + 1) * self.word], "little") for i in range(nb)]
        pos = _pad(head)

        def take(n: int, what: str) -> np.ndarray:
            nonlocal pos
            if pos + n > size:
                raise CorruptFileError(f"chunk {c}: {what} of {n} bytes runs past the chunk end ({size} bytes)")
            out = buf[pos:pos + n]
            pos = _pad(pos + n)
            return out

        rep_buf = take(rep_size, "repetition levels") if self.has_rep else None
        def_buf = take(def_size, "definition levels") if self.has_def else None
        value_bufs = [take(s, f"value buffer {i}") for i, s in enumerate(sizes)]
        rep = dfn = None
        if self.has_rep:
            rep = levels_u16(compression.decompress_block(self.layout.rep_compression, rep_buf, num_levels),
                             num_levels, "repetition")
        if self.has_def:
            dfn = levels_u16(compression.decompress_block(self.layout.def_compression, def_buf, num_levels),
                             num_levels, "definition")
        if not (self.has_rep or self.has_def):
            num_levels = n_items
        block = compression.decompress(self.layout.value_compression, value_bufs, n_items)
        if t.dictionary is not None:
            values = apply_dictionary(indices_to_numpy(block), t.dictionary, self.value_type)
        else:
            values = values_to_arrow(block, self.value_type)
        if len(values) != n_items:
            raise CorruptFileError(f"chunk {c}: decoded {len(values)} values, expected {n_items}")
        return PageLevels(self.meaning, rep, dfn, num_levels, values)
