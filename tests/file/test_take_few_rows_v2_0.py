"""2.0 takes of a few rows (encodings/v2_0/take_few.py): the same arrays as the vectorized plans
and as pylance, on pylance-written pages with nulls, several pages, dictionaries, large strings
and vectors; and the same errors on damaged page tables."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

import lancelot
from lancelot.encodings.v2_0 import take_few
from lancelot.encodings.v2_0.take_few import FEW_ROWS
from lancelot.errors import CorruptFileError
from lancelot.io.source import CountingSource, LocalFileSource

ROWS = 20_000


def _file(tmp_path) -> tuple[pa.Table, str]:
    rng = np.random.default_rng(11)
    words = np.array(["AIR", "MAIL", "SHIP", "TRUCK", "RAIL"])
    nulls = rng.random(ROWS) < 0.2
    table = pa.table(
        {
            "k": pa.array(rng.integers(0, 2**40, ROWS), pa.int64()),
            "d": pa.array(rng.integers(0, 10**9, ROWS)).cast(pa.decimal128(19, 0)).cast(pa.decimal128(15, 2)),
            "q": pa.array(rng.integers(0, 50, ROWS).astype(np.int32), mask=nulls),
            "w": pa.array(words[rng.integers(0, 5, ROWS)]),
            "wn": pa.array(words[rng.integers(0, 5, ROWS)], mask=nulls),
            "s": pa.array([f"comment {i} " + "x" * int(k) for i, k in enumerate(rng.integers(0, 60, ROWS))]),
            "sn": pa.array([f"v{i}" for i in range(ROWS)], mask=rng.random(ROWS) < 0.3),
            "ls": pa.array([f"large {i}" for i in range(ROWS)], pa.large_string()),
            "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(ROWS * 4, dtype=np.float32)), 4),
            "b": pa.array(rng.random(ROWS) < 0.3),
            "bn": pa.array(rng.random(ROWS) < 0.5, mask=nulls),
        }
    )
    path = str(tmp_path / "few.lance")
    w = LanceFileWriter(path, table.schema, version="2.0", max_page_bytes=32 * 1024, data_cache_bytes=32 * 1024)
    for b in table.to_batches(max_chunksize=3000):
        w.write_batch(pa.Table.from_batches([b]))
    w.close()
    return table, path


def _row_sets(f: lancelot.LanceFile) -> list[np.ndarray]:
    starts = f._reader(f.schema.field("k")).root.col.starts  # first rows of pages: no offset before them
    rng = np.random.default_rng(3)
    sets = [np.sort(rng.choice(ROWS, k, replace=False)) for k in (1, 2, 10, FEW_ROWS)]
    sets += [np.array([0, ROWS - 1]), np.array(sorted(set(starts[:-1]) | {1, ROWS - 1}))[:FEW_ROWS]]
    for start in (0, 2990, 7000):  # clustered: rows near each other (one range), across a page end too
        sets.append(start + np.sort(rng.choice(40, 10, replace=False)))
    sets.append(np.sort(rng.choice(ROWS, FEW_ROWS + 1, replace=False)))  # the vectorized path
    return sets


def test_few_rows_equal_the_vectorized_take_and_pylance(tmp_path, monkeypatch):
    table, path = _file(tmp_path)
    f = lancelot.LanceFile(path)
    ref = LanceFileReader(path)
    assert len(f._reader(f.schema.field("s")).root.col.info.meta.pages) > 3
    kinds = {name: type(f._reader(f.schema.field(name))._take_plan()).__name__ for name in table.column_names}
    assert {"FlatPlan", "DictionaryPlan", "BinaryPlan"} <= set(kinds.values()), kinds
    assert kinds["b"] == kinds["bn"] == "FlatPlan", kinds  # booleans: few-row takes only
    paths = f.explain_take(_row_sets(f)[2])
    assert all(paths[c] == [f"plan/{kinds[c]}"] for c in ("q", "wn", "b", "bn")), paths  # nulls, bits
    for rows in _row_sets(f):
        few = f.take(rows)
        assert few.equals(table.take(pa.array(rows))), rows
        assert few.equals(ref.take_rows(rows).to_table().cast(few.schema)), rows
        with monkeypatch.context() as m:
            m.setattr(take_few, "FEW_ROWS", 0)
            assert lancelot.LanceFile(path).take(rows).equals(few), rows
        for name in table.column_names:  # one field at a time: no read-ahead, plain reads
            assert f.take(rows, columns=[name]).column(0).equals(few.column(name)), (name, rows)


@pytest.mark.parametrize("column", ["k", "q", "b", "w", "s"])
def test_few_rows_report_a_damaged_page_table(tmp_path, column):
    """A page whose buffer is too short for its rows (flat values, dictionary items, binary data)
    raises CorruptFileError naming the column and page, as on the vectorized path."""
    _, path = _file(tmp_path)
    f = lancelot.LanceFile(path)
    plan = f._reader(f.schema.field(column))._take_plan()
    if column in ("k", "q", "b"):  # no nulls, nulls, bits
        plan.values.cap[:] = [0] * len(plan.values.cap)
        msg = "flat buffer is shorter"
    elif column == "w":
        plan._count_list[:] = [0] * len(plan._count_list)
        msg = "dictionary index out of range"
    else:
        plan._lists[4][:] = [0] * len(plan._lists[4])  # data sizes
        msg = "binary offsets are not monotonic"
    for rows in ([5, 7000], [5, 7]):  # two pages; one (the clustered paths)
        with pytest.raises(CorruptFileError, match=msg) as e:
            f.take(rows, columns=[column])
        assert e.value.column is not None and e.value.page is not None


def test_binary_bounds_of_pages_with_different_offset_widths():
    """Pages whose end offsets differ in width are decoded row by row (one width: all at once);
    an end of at least the page's null adjustment is a null, that much above the real end."""
    from lancelot.encodings.v2_0.take_few import binary_bounds

    def error(msg: str, page: int) -> CorruptFileError:
        return CorruptFileError(msg, page=page)

    raw = [
        memoryview((5).to_bytes(4, "little") + (9).to_bytes(4, "little")),  # page 0, a row after the first
        memoryview((7).to_bytes(8, "little")),  # page 1, its first row
        memoryview((7).to_bytes(8, "little") + (107).to_bytes(8, "little")),  # page 1: a null (adjust 100)
    ]
    got = binary_bounds(raw, [0, 1, 1], [4, 8], [0, 100], [50, 50], error)
    assert got == ([5, 0, 7], [9, 7, 7], [True, True, False])
    same = [memoryview((3).to_bytes(4, "little") + (8).to_bytes(4, "little")), memoryview((2).to_bytes(4, "little"))]
    assert binary_bounds(same, [0, 0], [4], [0], [50], error) == ([3, 0], [8, 2], [True, True])
    with pytest.raises(CorruptFileError, match="not monotonic"):
        binary_bounds(same, [0, 0], [4], [0], [5], error)


def test_clustered_strings_read_their_bytes_as_one_range(tmp_path, monkeypatch):
    """A few rows of one Binary page near each other: their bytes are read as one range (one
    request, where the source would coalesce them into one per row), the same strings as
    pylance's; rows spread wider than ``BINARY_SPAN_MAX`` (or with it 0) are read range by range."""
    values = [f"{i:06d}" + "x" * 94 for i in range(5000)]  # 100 bytes each, all distinct: Binary
    path = str(tmp_path / "s.lance")
    with LanceFileWriter(path, version="2.0") as w:
        w.write_batch(pa.table({"s": values}))
    ref = LanceFileReader(path)

    def requests(rows: list[int]) -> int:
        src = CountingSource(LocalFileSource(path))
        f = lancelot.LanceFile(src)
        assert f.explain_take(rows)["s"] == ["plan/BinaryPlan"]
        before = src.requests
        got = f.take(rows)
        assert got.equals(ref.take_rows(rows).to_table().cast(got.schema)), rows
        assert got.column("s").to_pylist() == [values[r] for r in rows]
        return src.requests - before

    near = [10, 60, 110, 160, 171]  # 5,000 bytes apart: more than the 4 KiB the source coalesces
    far = [0, 300, 700]  # 70 KB: more than BINARY_SPAN_MAX (their end offsets still coalesce)
    assert requests(near) == 2  # end offsets, bytes
    assert requests(far) == 1 + len(far)
    monkeypatch.setattr(take_few, "BINARY_SPAN_MAX", 0)
    assert requests(near) == 1 + 4  # 160 and 171 coalesce
