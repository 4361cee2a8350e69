"""A fresh file's range read finds the chunks of its rows from the chunk words alone (no page chunk table).

A dataset scan opens each fragment's file and reads a run of rows once: building every touched page's
whole chunk table for that costs a pass and five arrays per page. ``MiniBlockPage.load_for`` finds the
run's chunks in one pass over the chunk words up to them; a later read of the same file builds the
table. Each test checks the rows against pylance's.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.encodings.structural import miniblock_table
from tests.helpers import CHUNKY_ROWS as BIG
from tests.helpers import pylance_write


def _pylance_range(path: str, start: int, stop: int) -> pa.Table:
    from lance.file import LanceFileReader

    return LanceFileReader(path).read_range(start, stop - start).to_table()


def _edges(path: str) -> list[int]:
    """The chunk edges of page 1 of ``id`` (page-local rows)."""
    with lancelot.LanceFile(path) as f:
        page = f._reader(f.schema.field("id")).columns[0].page(1)
        meta = np.frombuffer(f._src.read(*page.info.buffer(0)), np.uint8)
        word = 4 if page.layout.has_large_chunk else 2
    return np.cumsum(1 << (meta[0::word].astype(np.int64) & 0xF))[:-1].tolist()


def test_fresh_range_finds_its_chunks_without_tables(chunky, monkeypatch) -> None:
    """Runs starting and ending at chunk and page edges, inside one chunk, over two pages, a whole page:
    found from the chunk words (every column of every page read), equal to pylance's; later reads of the
    same file (which build the tables) too."""
    monkeypatch.setattr(miniblock_table._SPAN_HOT, "ready", lambda: True)
    found = []
    inner = miniblock_table.ChunkTables._span_table

    def counting(self: miniblock_table.ChunkTables, meta: np.ndarray, start: int, stop: int) -> object:
        out = inner(self, meta, start, stop)
        found.append(out is not None)
        return out

    monkeypatch.setattr(miniblock_table.ChunkTables, "_span_table", counting)
    e = _edges(chunky)
    far = next(x for x in e if x - e[0] > 1100)  # (runs of at most 1,024 rows go to the point reader)
    n = 2 * BIG
    cases = [
        (0, 2000),
        (BIG - 2000, BIG),
        (BIG + e[0], BIG + far),
        (BIG + e[0] - 1, BIG + far + 1),
        (BIG + e[0] + 1, BIG + far - 1),
        (BIG - 900, BIG + 900),  # two pages
        (BIG, n),  # a whole page
        (n - 1700, n),
    ]
    for start, stop in cases:
        found.clear()
        with lancelot.LanceFile(chunky) as f:
            assert f.read_range(start, stop).equals(_pylance_range(chunky, start, stop)), (start, stop)
            assert found and all(found), (start, stop, found)
            for a, b in [(3, 2500), (BIG + 5, n - 2), (start, stop)]:  # the same file again: the tables built
                assert f.read_range(a, b).equals(_pylance_range(chunky, a, b)), (start, stop, a, b)
            assert f.take([0, BIG + 7, stop - 1]).equals(lancelot.LanceFile(chunky).read().take([0, BIG + 7, stop - 1]))


@pytest.mark.parametrize("kernel", [False, True])
def test_fresh_range_reports_bad_chunk_words(tmp_path, monkeypatch, kernel: bool) -> None:
    """Chunk words claiming more items than the page has are reported by a fresh range read whether or not
    its chunks are found without a table."""
    n = 5000
    table = pa.table({"id": pa.array(np.arange(n, dtype=np.int64) * 7919 % 100003)})
    path = pylance_write(tmp_path / "bad.lance", [table], "2.2")
    with lancelot.LanceFile(path) as f:
        off, ln = f._reader(f.schema.field("id")).columns[0].page(0).info.buffer(0)
    raw = bytearray(open(path, "rb").read())
    for k in range(off, off + ln, 4):
        raw[k] |= 0x0F  # every chunk claims 2**15 items
    open(path, "wb").write(bytes(raw))
    monkeypatch.setattr(miniblock_table._SPAN_HOT, "ready", lambda: kernel)
    with lancelot.LanceFile(path) as f, pytest.raises(lancelot.errors.CorruptFileError, match="more than the page's"):
        f.read_range(1500, 4000)
