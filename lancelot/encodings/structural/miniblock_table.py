"""The search cache of a mini-block page (lance.encodings21.MiniBlockLayout; miniblock.py reads the
page): its chunk table, from the chunk metadata (page buffer 0: one word per chunk, the low 4 bits
log2 of its item count, the rest its size in 8-byte words minus one) and the repetition index (the
last page buffer, when ``repetition_index_depth`` > 0), with the page dictionary (page buffer 2),
decoded once per distinct small dictionary (``page_dictionary``).  Every size and count is checked
against the page before a read uses it.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass
from typing import NamedTuple

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from lancelot.encodings import compression
from lancelot.encodings.compression.segments import readonly
from lancelot.encodings.structural.leaf import PageDictionary
from lancelot.encodings.structural.miniblock_chunks import ALIGN
from lancelot.encodings.structural.page import PageInfo
from lancelot.encodings.structural.repdef import LevelMeaning
from lancelot.errors import CorruptFileError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.jit import NumpyUntilHot, njit

_NO_CHUNKS = np.zeros(0, dtype=np.int64)
_FALSES = np.zeros(0, dtype=bool)


def _falses(n: int) -> np.ndarray:
    """``n`` False values, a read-only view of one shared array (the preamble flags of a page without
    repetition: no chunk has one)."""
    global _FALSES
    if len(_FALSES) < n:
        _FALSES = np.zeros(max(n, 2 * len(_FALSES), 1024), dtype=bool)
        _FALSES.flags.writeable = False
    return _FALSES[:n]


#: decoded page dictionaries of at most this many bytes are shared by content: the pages of files
#: written alike repeat small dictionaries (codes, flags, prices) byte for byte, so a first take of
#: each file would otherwise decode (and gather from) the same items again; read-only once made
SHARED_DICTIONARY_BYTES = 4096
MAX_DICTIONARIES = 256
_DICTIONARIES: dict[tuple[bytes, bytes, int, pa.DataType], PageDictionary] = {}


def page_dictionary(enc: pb.CompressiveEncoding, buf: np.ndarray, n: int, t: pa.DataType) -> PageDictionary:
    """A page's dictionary of ``n`` items of type ``t``; a small one decoded once per distinct content
    (``_DICTIONARIES``).  Raises as ``PageDictionary`` does for a block that is not of ``t``."""
    key = None
    if len(buf) <= SHARED_DICTIONARY_BYTES:
        raw = buf.tobytes()
        key = (enc.SerializeToString(), raw, n, t)
        known = _DICTIONARIES.get(key)
        if known is not None:
            return known
        buf = np.frombuffer(raw, np.uint8)  # (a kept dictionary's views pin these bytes, not the read's)
    found = PageDictionary(compression.decompress_block(enc, buf, n), t)
    if key is not None:
        if len(_DICTIONARIES) >= MAX_DICTIONARIES:
            _DICTIONARIES.clear()
        _DICTIONARIES[key] = found
    return found


@dataclass
class ChunkTable:
    """The search cache of a mini-block page."""

    offsets: np.ndarray  # absolute file position of each chunk
    sizes: np.ndarray  # bytes per chunk
    items: np.ndarray  # values per chunk
    first_row: np.ndarray  # first row that starts in each chunk (rows before it are a preamble)
    row_starts: np.ndarray  # rows starting in each chunk (including a trailer row)
    has_preamble: np.ndarray  # bool per chunk
    page_dictionary: PageDictionary | None

    known_row_ends: InitVar[np.ndarray | None] = None  # first_row + row_starts of a page without repetition
    #: the chunk-table kernel's (5, chunks) array whose rows are offsets, sizes, items, first_row and
    #: row_ends (None when the table was built otherwise)
    grid: np.ndarray | None = None

    def __post_init__(self, known_row_ends: np.ndarray | None) -> None:
        #: rows that start before the next chunk
        self.row_ends: np.ndarray = self.first_row + self.row_starts if known_row_ends is None else known_row_ends
        #: a page without repetition: every item is a row, chunk k holds rows [first_row[k], row_ends[k])
        self.plain = known_row_ends is not None
        if known_row_ends is not None:  # (a page without repetition: no row goes on past its chunk, so
            # ``_last_chunks`` never looks a chunk up in ``stops``)
            self.trailer, self.stops = self.has_preamble, _NO_CHUNKS
            return
        self.trailer = np.append(self.has_preamble[1:], False)  # the chunk's last row goes on
        self.stops = np.flatnonzero(~self.trailer)  # chunks whose last row ends in them

    @property
    def dictionary(self) -> pa.Array | None:
        """The page dictionary as an Arrow array (None: the page has none)."""
        return None if self.page_dictionary is None else self.page_dictionary.arrow


@njit(cache=True, nogil=True)
def _chunk_columns(meta: np.ndarray, word: int, total_items: int, data_pos: int) -> tuple[int, np.ndarray]:
    """The chunk table of a page without repetition from its chunk words (``word`` bytes each):
    (the bytes the chunks span, or -1 when those before the last hold more than ``total_items``
    items; rows: each chunk's file position, size, item count, first row and row end)."""
    n = len(meta) // word
    out = np.empty((5, n), dtype=np.int64)
    pos = 0
    rows = 0
    for k in range(n):
        w = np.int64(meta[k * word]) | (np.int64(meta[k * word + 1]) << 8)
        if word == 4:
            w |= (np.int64(meta[k * word + 2]) << 16) | (np.int64(meta[k * word + 3]) << 24)
        size = ((w >> 4) + 1) * ALIGN
        items = np.int64(1) << (w & 0xF)
        if k == n - 1:
            if rows > total_items:
                return -1, out
            items = total_items - rows
        out[0, k] = data_pos + pos
        out[1, k] = size
        out[2, k] = items
        out[3, k] = rows
        pos += size
        rows += items
        out[4, k] = rows
    return pos, out


#: the chunk tables of a file's first reads run numpy until the kernel is loaded (util/jit.py)
_TABLE_HOT = NumpyUntilHot(_chunk_columns)


@njit(cache=True, nogil=True)
def _first_chunks(
    meta: np.ndarray, word: int, total_items: int, data_pos: int, rows: np.ndarray
) -> tuple[int, np.ndarray]:
    """The chunks of ``rows`` (sorted, unique) of a page without repetition from its chunk words
    (``word`` bytes each, a whole number of them), read up to the last of them, without the page's
    table: (the bytes the chunks up to there span, -1 when those before the last chunk hold more than
    ``total_items`` items, -2 when a row lies past the chunks; rows 0-4: per chunk of the rows its file
    position, size, item count, first row and a zero for the definition width, row 5: each row's chunk
    among them, row 6: those chunks' indices in the page, -1 past the last of them)."""
    if word == 4:  # (the words as integers: a third of the loop's work is assembling them from bytes)
        return _find_chunks(meta.view(np.uint32), total_items, data_pos, rows)
    return _find_chunks(meta.view(np.uint16), total_items, data_pos, rows)


@njit(cache=True, nogil=True)
def _find_chunks(words: np.ndarray, total_items: int, data_pos: int, rows: np.ndarray) -> tuple[int, np.ndarray]:
    """``_first_chunks`` over the chunk words as integers (little-endian, as the file's)."""
    n = len(words)
    m = len(rows)
    out = np.zeros((7, m), dtype=np.int64)
    out[6, :] = -1
    pos = 0
    first = 0
    j = 0
    k = -1
    row = rows[0]  # the next row to place
    for c in range(n):
        w = np.int64(words[c])
        size = ((w >> 4) + 1) * ALIGN
        items = np.int64(1) << (w & 0xF)
        if c == n - 1:
            items = total_items - first
        elif first + items > total_items:
            return -1, out
        end = first + items
        if row < end:
            k += 1
            out[0, k] = data_pos + pos
            out[1, k] = size
            out[2, k] = items
            out[3, k] = first
            out[6, k] = c
            while row < end:
                out[5, j] = k
                j += 1
                if j == m:
                    return pos + size, out
                row = rows[j]
        pos += size
        first = end
    return -2, out


#: a first take's chunk search (``ChunkTables._first_table``) runs only once its kernel is loaded (the
#: whole table's way until then)
_FIRST_HOT = NumpyUntilHot(_first_chunks)


@njit(cache=True, nogil=True)
def _span_chunks(
    meta: np.ndarray, word: int, total_items: int, start: int, stop: int
) -> tuple[int, int, int, int, np.ndarray]:
    """``_span_words`` of a page's chunk words (``word`` bytes each, a whole number of them)."""
    if word == 4:
        return _span_words(meta.view(np.uint32), total_items, start, stop)
    return _span_words(meta.view(np.uint16), total_items, start, stop)


@njit(cache=True, nogil=True)
def _span_words(words: np.ndarray, total_items: int, start: int, stop: int) -> tuple[int, int, int, int, np.ndarray]:
    """The chunks holding the rows [``start``, ``stop``) of a page without repetition from its chunk words
    as integers (little-endian, as the file's), read up to the last of them, without the page's table:
    (the bytes the chunks up to there span, -1 when those before the last chunk hold more than
    ``total_items`` items, -2 when a row lies past the chunks; the first chunk's index, its position in
    the chunk buffer and its first row; rows 0-2: per chunk its size, its item count and, one longer,
    its position in the fetched bytes)."""
    n = len(words)
    pos = 0
    first = 0
    c0 = -1
    c1 = -1
    lo = 0
    row0 = 0
    for c in range(n):
        w = np.int64(words[c])
        items = np.int64(1) << (w & 0xF)
        if c == n - 1:
            items = total_items - first
        elif first + items > total_items:
            return -1, 0, 0, 0, np.zeros((3, 1), dtype=np.int64)
        end = first + items
        if c0 < 0 and start < end:
            c0, lo, row0 = c, pos, first
        pos += ((w >> 4) + 1) * ALIGN
        first = end
        if stop <= end:
            c1 = c
            break
    if c1 < 0:
        return -2, 0, 0, 0, np.zeros((3, 1), dtype=np.int64)
    k = c1 - c0 + 1
    out = np.zeros((3, k + 1), dtype=np.int64)
    first = row0
    at = 0
    for j in range(k):
        w = np.int64(words[c0 + j])
        size = ((w >> 4) + 1) * ALIGN
        items = np.int64(1) << (w & 0xF)
        if c0 + j == n - 1:
            items = total_items - first
        out[0, j] = size
        out[1, j] = items
        out[2, j] = at
        at += size
        first += items
    out[2, k] = at
    return pos, c0, lo, row0, out


#: a fresh page's range read finds its chunks this way only once the kernel is loaded (the whole table's
#: way until then)
_SPAN_HOT = NumpyUntilHot(_span_chunks)


class Located(NamedTuple):
    """The chunks of a first take's rows in a page without repetition (``_first_chunks``): per chunk
    its file position, size, item count, first row and a definition-width row (``few``, 5 x chunks);
    each row's chunk among them (``k_of``) and those chunks' indices in the page (``ids``). Joined over
    several pages (``join_located``): rows and first rows are the column's, and ``pages`` holds each
    chunk's page among the read's pages (None: one page)."""

    rows: np.ndarray
    few: np.ndarray
    k_of: np.ndarray
    ids: np.ndarray
    pages: np.ndarray | None = None


def join_located(rows: np.ndarray, parts: list[Located | None], bases: list[int], def_ws: list[int]) -> Located | None:
    """The ``Located`` chunks of a first take of ``rows`` (column rows) over several pages, from each
    page's (found on page rows; ``bases``: the pages' first column rows, ``def_ws``: their definition
    widths); None when a page's chunks were not found that way."""
    if any(p is None for p in parts):
        return None
    found: list[Located] = parts  # type: ignore[assignment]
    few = np.concatenate([p.few for p in found], axis=1)
    counts = [p.few.shape[1] for p in found]
    firsts = np.repeat(np.asarray(bases, dtype=np.int64), counts)
    few[3] += firsts
    few[4] = np.repeat(np.asarray(def_ws, dtype=np.int64), counts)
    k_of = np.concatenate([p.k_of[: len(p.rows)] for p in found])
    k_of += np.repeat(np.cumsum([0, *counts[:-1]]), [len(p.rows) for p in found])
    pages = np.repeat(np.arange(len(found), dtype=np.int64), counts)
    return Located(rows, few, k_of, np.concatenate([p.ids for p in found]), pages)


class FirstChunks:
    """A page's chunk metadata while only a first take's chunks were found in it (``Located``): its
    chunk table is built, and every word checked, on first need (``MiniBlockPage.table``)."""

    __slots__ = ("meta", "page_dictionary")

    def __init__(self, meta: np.ndarray, dictionary: PageDictionary | None) -> None:
        self.meta = meta
        self.page_dictionary = dictionary


class ChunkTables:
    """How a mini-block page builds its chunk table (a base of ``MiniBlockPage``: its layout, page
    info, level meaning and chunk-word width)."""

    layout: pb.MiniBlockLayout
    info: PageInfo
    meaning: LevelMeaning
    word: int

    def _chunk_table(
        self, meta: np.ndarray, rep_index: np.ndarray | None, dictionary: PageDictionary | None
    ) -> ChunkTable:
        if len(meta) % self.word:
            raise CorruptFileError(f"chunk metadata of {len(meta)} bytes is not a whole number of words")
        n_chunks = len(meta) // self.word
        total_items = int(self.layout.num_items)
        data_pos, data_size = self.info.buffer(1)
        plain = rep_index is None and not self.meaning.max_rep  # (no repetition: every item is a row)
        if plain and n_chunks > 1 and _TABLE_HOT.ready():
            return self._kernel_table(meta, n_chunks, total_items, data_pos, data_size, dictionary)
        words = np.ascontiguousarray(meta).view("<u4" if self.word == 4 else "<u2").astype(np.int64)
        if n_chunks == 1 and plain:
            return self._one_chunk(int(words[0]), total_items, data_pos, data_size, dictionary)
        if plain and n_chunks > 1:
            _TABLE_HOT.numpy_call(lambda: _chunk_columns(readonly(meta.copy()), self.word, total_items, data_pos))
        # (in place where it can be: a first take builds the table of every page it touches)
        sizes = words >> 4
        sizes += 1
        sizes *= ALIGN
        words &= 0xF
        items = np.left_shift(1, words, out=words)
        item_ends = items.cumsum()
        if n_chunks:
            before = int(item_ends[-2]) if n_chunks > 1 else 0
            if before > total_items:
                raise CorruptFileError(f"chunks hold more than the page's {total_items} items")
            items[-1] = item_ends[-1] = total_items
            items[-1] -= before
        elif total_items:
            raise CorruptFileError(f"page of {total_items} items has no chunks")
        offsets = sizes.cumsum()
        if n_chunks and int(offsets[-1]) > data_size:
            raise CorruptFileError(f"chunks need {int(offsets[-1])} bytes, the chunk buffer has {data_size}")
        offsets -= sizes
        offsets += data_pos
        if rep_index is not None:
            first_row, starts, preamble = self._rep_index(rep_index, n_chunks)
        else:
            if self.meaning.max_rep:
                raise CorruptFileError("a mini-block page with lists needs a repetition index")
            # without repetition every item is a row: the row bounds are the item counts' sums
            if n_chunks and total_items != self.info.num_rows:
                raise CorruptFileError(f"chunks hold {total_items} rows, the page has {self.info.num_rows}")
            return ChunkTable(
                offsets, sizes, items, item_ends - items, items, np.zeros(n_chunks, dtype=bool), dictionary, item_ends
            )
        if n_chunks and int(starts.sum()) != self.info.num_rows:
            raise CorruptFileError(f"chunks hold {int(starts.sum())} rows, the page has {self.info.num_rows}")
        return ChunkTable(offsets, sizes, items, first_row, starts, preamble, dictionary)

    def _first_table(self, meta: np.ndarray, rows: np.ndarray) -> Located | None:
        """The chunks of ``rows`` (sorted, unique) in a page of several chunks without repetition, from
        its chunk words up to the last of them (each checked as ``_chunk_table`` checks it), in one
        kernel call; None when the page is not of that kind or the kernel is not loaded yet."""
        if len(meta) % self.word or self.meaning.max_rep or len(meta) // self.word < 2 or not len(rows):
            return None
        total_items = int(self.layout.num_items)
        data_pos, data_size = self.info.buffer(1)
        if not _FIRST_HOT.ready():
            _FIRST_HOT.numpy_call(lambda: _first_chunks(readonly(meta.copy()), self.word, total_items, data_pos, rows))
            return None
        span, out = _first_chunks(readonly(meta), self.word, total_items, data_pos, rows)
        if span == -1:
            raise CorruptFileError(f"chunks hold more than the page's {total_items} items")
        if span > data_size:
            raise CorruptFileError(f"chunks need {span} bytes, the chunk buffer has {data_size}")
        if total_items != self.info.num_rows:
            raise CorruptFileError(f"chunks hold {total_items} rows, the page has {self.info.num_rows}")
        if span < 0:
            return None  # (rows past the page: the general way reports them)
        m = len(rows) if out[6, -1] >= 0 else int((out[6] >= 0).sum())
        return Located(rows, out[:5, :m], out[5], out[6, :m])

    def _span_table(self, meta: np.ndarray, start: int, stop: int) -> tuple[int, int, int, np.ndarray] | None:
        """The chunks of the rows [``start``, ``stop``) of a page of several chunks without repetition, from
        its chunk words up to the last of them (each checked as ``_chunk_table`` checks it), in one kernel
        call: (first chunk, its file position, its first row, per chunk its size, item count and position
        in the fetched bytes); None when the page is not of that kind or the kernel is not loaded yet."""
        if len(meta) % self.word or self.meaning.max_rep or len(meta) // self.word < 2:
            return None
        total_items = int(self.layout.num_items)
        if not _SPAN_HOT.ready():
            _SPAN_HOT.numpy_call(lambda: _span_chunks(readonly(meta.copy()), self.word, total_items, start, stop))
            return None
        span, c0, lo, row0, out = _span_chunks(readonly(meta), self.word, total_items, start, stop)
        if span == -1:
            raise CorruptFileError(f"chunks hold more than the page's {total_items} items")
        data_pos, data_size = self.info.buffer(1)
        if span > data_size:
            raise CorruptFileError(f"chunks need {span} bytes, the chunk buffer has {data_size}")
        if total_items != self.info.num_rows:
            raise CorruptFileError(f"chunks hold {total_items} rows, the page has {self.info.num_rows}")
        if span < 0:
            return None  # (rows past the page: the general way reports them)
        return c0, data_pos + lo, row0, out

    def _kernel_table(
        self,
        meta: np.ndarray,
        n: int,
        total_items: int,
        data_pos: int,
        data_size: int,
        dictionary: PageDictionary | None,
    ) -> ChunkTable:
        """``_chunk_table`` of a page of several chunks without repetition, in one kernel call."""
        span, table = _chunk_columns(readonly(np.ascontiguousarray(meta)), self.word, total_items, data_pos)
        if span < 0:
            raise CorruptFileError(f"chunks hold more than the page's {total_items} items")
        if span > data_size:
            raise CorruptFileError(f"chunks need {span} bytes, the chunk buffer has {data_size}")
        if total_items != self.info.num_rows:
            raise CorruptFileError(f"chunks hold {total_items} rows, the page has {self.info.num_rows}")
        offsets, sizes, items, first_row, row_ends = table
        return ChunkTable(offsets, sizes, items, first_row, items, _falses(n), dictionary, row_ends, table)

    def _one_chunk(
        self, word: int, total_items: int, data_pos: int, data_size: int, dictionary: PageDictionary | None
    ) -> ChunkTable:
        """``_chunk_table`` of a page of one chunk without repetition (small pages: most pages of a
        dataset of many small fragments), the same checks on Python ints."""
        size = ((word >> 4) + 1) * ALIGN
        if size > data_size:
            raise CorruptFileError(f"chunks need {size} bytes, the chunk buffer has {data_size}")
        if total_items != self.info.num_rows:
            raise CorruptFileError(f"chunks hold {total_items} rows, the page has {self.info.num_rows}")
        one = np.array([total_items], dtype=np.int64)
        return ChunkTable(
            np.array([data_pos], dtype=np.int64),
            np.array([size], dtype=np.int64),
            one,
            np.zeros(1, dtype=np.int64),
            one,
            np.zeros(1, dtype=bool),
            dictionary,
            one,
        )

    def _rep_index(
        self, raw: np.ndarray, n_chunks: int
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.bool_]]:
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
