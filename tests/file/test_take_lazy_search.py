"""A take loads the search caches (chunk tables, dictionaries) of only the pages its rows fall in.

A dataset take opens each fragment's file and reads a few rows once: loading every page's
search structures for that would cost a pass over all the column metadata. Each test counts the
pages whose search cache is decoded, and checks the rows against pylance's.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.encodings.structural import miniblock, miniblock_table
from tests.helpers import CHUNKY_ROWS as BIG
from tests.helpers import pylance_write

PAGES, ROWS = 4, 10  # pylance writes one page per batch (small data cache)


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def written(request, tmp_path_factory) -> str:
    rng = np.random.default_rng(5)
    batches = [
        pa.table(
            {
                "id": pa.array(np.arange(b * ROWS, (b + 1) * ROWS, dtype=np.int64)),
                "s": pa.array([f"row {i} {'x' * int(rng.integers(0, 9))}" for i in range(b * ROWS, (b + 1) * ROWS)]),
                "f": pa.array([None if i % 3 == 0 else i / 4 for i in range(b * ROWS, (b + 1) * ROWS)], pa.float64()),
            }
        )
        for b in range(PAGES)
    ]
    path = tmp_path_factory.mktemp("lazy") / f"lazy-{request.param}.lance"
    return pylance_write(path, batches, request.param, data_cache_bytes=1)


def _pylance_take(path: str, rows: list[int]) -> pa.Table:
    from lance.file import LanceFileReader

    return LanceFileReader(path).take_rows(rows).to_table()


def test_first_take_loads_only_its_pages(written, monkeypatch) -> None:
    loaded: list[tuple[int, int]] = []
    inner = miniblock.MiniBlockPage.load_search

    def counting(self: miniblock.MiniBlockPage, bufs: list[memoryview]) -> None:
        loaded.append((self.info.column, self.info.index))
        inner(self, bufs)

    monkeypatch.setattr(miniblock.MiniBlockPage, "load_search", counting)
    first = miniblock.MiniBlockPage.load_first

    def counting_first(self: miniblock.MiniBlockPage, bufs: list[memoryview], rows: np.ndarray) -> object:
        loaded.append((self.info.column, self.info.index))  # (its pages have no repetition index)
        return first(self, bufs, rows)

    monkeypatch.setattr(miniblock.MiniBlockPage, "load_first", counting_first)
    f = lancelot.LanceFile(written)
    assert [len(c[0].meta.pages) for c in f.columns.values()] == [PAGES] * 3
    got = f.take([2 * ROWS + 5])
    assert got.equals(_pylance_take(written, [2 * ROWS + 5]))
    assert sorted(loaded) == [(c, 2) for c in range(3)]  # one page of each column, not four
    loaded.clear()
    assert f.take([2 * ROWS, 2 * ROWS + 9]).equals(_pylance_take(written, [2 * ROWS, 2 * ROWS + 9]))
    assert loaded == []  # the same page: nothing loaded again
    rows = [3, 2 * ROWS + 1, 3 * ROWS + 7]
    assert f.take(rows).equals(_pylance_take(written, rows))
    # a take reaching other pages: every page's cache, once (a file read more than once)
    assert sorted(loaded) == [(c, p) for c in range(3) for p in (0, 1, 3)]
    loaded.clear()
    assert f.take([ROWS + 4, 0]).equals(_pylance_take(written, [0, ROWS + 4]).take([1, 0]))  # any order
    assert f.read_range(ROWS - 2, ROWS + 3).equals(_pylance_take(written, list(range(ROWS - 2, ROWS + 3))))
    assert f.read().equals(_pylance_take(written, list(range(PAGES * ROWS))))
    assert loaded == []


@pytest.mark.parametrize("kernel", [False, True])
def test_chunk_table_kernel_and_numpy_agree(tmp_path, monkeypatch, kernel: bool) -> None:
    """A page of many chunks: its chunk table built by the kernel (once loaded) or by numpy, takes equal
    to pylance's, and a page whose chunk words claim too many items is reported either way."""
    n = 5000
    table = pa.table({"id": pa.array(np.arange(n, dtype=np.int64) * 7919 % 100003), "s": [f"v{i}" for i in range(n)]})
    path = pylance_write(tmp_path / "chunks.lance", [table], "2.2")
    monkeypatch.setattr(miniblock_table._TABLE_HOT, "ready", lambda: kernel)
    rows = [0, 1023, 1024, 2500, n - 1]
    with lancelot.LanceFile(path) as f:
        assert f.take(rows).equals(_pylance_take(path, rows))
        page = f._reader(f.schema.field("id")).columns[0].page(0)
        meta = np.frombuffer(f._src.read(*page.info.buffer(0)), np.uint8).copy()
        assert len(page._chunk_table(meta, None, None).items) > 1
        meta[0::4] |= 0x0F  # every chunk claims 2**15 items
        with pytest.raises(lancelot.errors.CorruptFileError, match="more than the page's"):
            page._chunk_table(meta, None, None)


def test_first_take_finds_its_chunks_without_tables(chunky, monkeypatch) -> None:
    """A first take of a few rows finds their chunks from the chunk words alone, page by page (no chunk
    table built, ``MiniBlockPage.load_first``, joined over pages); rows at chunk and page edges, nulls,
    dictionary and FSST pages, and later reads of the same file (which build the tables) equal pylance's."""
    from lancelot.encodings.structural import column_points

    monkeypatch.setattr(miniblock_table._FIRST_HOT, "ready", lambda: True)
    located = []
    inner = column_points.ColumnPoints.plan_located

    def counting(self: column_points.ColumnPoints, found: miniblock_table.Located) -> object:
        located.append(len(found.rows))
        return inner(self, found)

    monkeypatch.setattr(column_points.ColumnPoints, "plan_located", counting)
    with lancelot.LanceFile(chunky) as f:
        page = f._reader(f.schema.field("id")).columns[0].page(1)
        meta = np.frombuffer(f._src.read(*page.info.buffer(0)), np.uint8)
        word = 4 if page.layout.has_large_chunk else 2
        items = 1 << (meta[0::word].astype(np.int64) & 0xF)
        edges = np.cumsum(items)[:3].tolist()  # the first chunk edges of page 1 (page-local rows)
    n = 2 * BIG
    cases = [
        [0],
        [n - 1],
        [BIG - 1],
        [BIG],
        sorted([BIG + e - 1 for e in edges[:2]] + [BIG + e for e in edges[:2]]),
        [BIG + edges[0] - 1, BIG + edges[0], BIG + edges[0] + 1],
        sorted(np.random.default_rng(2).choice(BIG, 10, replace=False).tolist()),
        list(range(BIG - 64, BIG)),
        [BIG - 1, BIG],  # two pages: each page's chunks found, then joined
        [0, edges[0], BIG + edges[0] - 1, BIG + edges[1], n - 1],
        sorted(np.random.default_rng(3).choice(n, 40, replace=False).tolist()),
        list(range(BIG - 32, BIG + 32)),
    ]
    for rows in cases:
        located.clear()
        with lancelot.LanceFile(chunky) as f:
            assert f.take(rows).equals(_pylance_take(chunky, rows)), rows
            assert len(located) == 6, rows  # every column
            again = [0, 3, BIG + 5, n - 2]  # the same file again: other pages, the chunk tables built
            assert f.take(again).equals(_pylance_take(chunky, again))
            assert f.take(rows[::-1]).equals(_pylance_take(chunky, rows).take(list(range(len(rows)))[::-1]))


@pytest.mark.parametrize("kernel", [False, True])
def test_first_take_reports_bad_chunk_words(tmp_path, monkeypatch, kernel: bool) -> None:
    """Chunk words claiming more items than the page has are reported by a first take whether or not its
    chunks are found without a table."""
    n = 5000
    table = pa.table({"id": pa.array(np.arange(n, dtype=np.int64) * 7919 % 100003)})
    path = pylance_write(tmp_path / "bad.lance", [table], "2.2")
    with lancelot.LanceFile(path) as f:
        off, ln = f._reader(f.schema.field("id")).columns[0].page(0).info.buffer(0)
    raw = bytearray(open(path, "rb").read())
    for k in range(off, off + ln, 4):
        raw[k] |= 0x0F  # every chunk claims 2**15 items
    open(path, "wb").write(bytes(raw))
    monkeypatch.setattr(miniblock_table._FIRST_HOT, "ready", lambda: kernel)
    with lancelot.LanceFile(path) as f, pytest.raises(lancelot.errors.CorruptFileError, match="more than the page's"):
        f.take([7])


def test_first_take_over_pages_names_the_bad_page(tmp_path, monkeypatch) -> None:
    """A first take over two pages whose second page has a broken chunk header: the error names that page
    (the joined chunks keep each chunk's page), for integers and strings."""
    monkeypatch.setattr(miniblock_table._FIRST_HOT, "ready", lambda: True)
    batches = [
        pa.table(
            {
                "id": pa.array(np.arange(b * BIG, (b + 1) * BIG) * 7919 % 1000003, pa.int64()),
                "s": pa.array([f"the word {k} and more {k * 3}" for k in range(b * BIG, (b + 1) * BIG)]),
            }
        )
        for b in range(2)
    ]
    path = pylance_write(tmp_path / "pages.lance", batches, "2.2", data_cache_bytes=1)
    for column, name in enumerate(("id", "s")):
        with lancelot.LanceFile(path) as f:
            off, _ = f._reader(f.schema.field(name)).columns[0].page(1).info.buffer(1)
        raw = bytearray(open(path, "rb").read())
        raw[off : off + 8] = b"\xff" * 8  # the first chunk's header of page 1
        bad = tmp_path / f"bad-{name}.lance"
        bad.write_bytes(bytes(raw))
        for rows in ([BIG - 1, BIG], [5, BIG + 1, BIG + 2]):
            with lancelot.LanceFile(str(bad)) as f, pytest.raises(lancelot.errors.CorruptFileError) as e:
                f.take(rows, columns=[name])
            assert (e.value.column, e.value.page) == (column, 1), rows
