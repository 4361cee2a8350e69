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
