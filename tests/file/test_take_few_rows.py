"""Takes of a few rows of 2.1/2.2 files (structural/column_points.py's few-row paths).

A take of up to 64 rows builds its Arrow arrays from the point kernel's output in Python: plain
strings joined, FSST codes joined then decoded, dictionary strings looked up in Python lists of
the column's dictionary, fixed-width values as the kernel wrote them.  Each must equal pylance's
take, with nulls, across pages and chunks, in any order, and a dictionary index past its page's
dictionary must be a null item or an error.
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.encodings.served import recording
from lancelot.encodings.structural import miniblock_points
from lancelot.encodings.structural.column_points import ColumnPoints
from lancelot.errors import CorruptFileError

lance_file = pytest.importorskip("lance.file", reason="pylance (the test oracle) is not installed")

N = 30_000
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]


def _table(rng: np.random.Generator) -> pa.Table:
    nulls = rng.random(N) < 0.2
    low = rng.choice(["URGENT", "HIGH", "MEDIUM", "LOW", "NOT SPECIFIED"], N)
    text = [" ".join(rng.choice(WORDS, 5)) + f" {i}" for i in range(N)]
    return pa.table(
        {
            "i64": pa.array(rng.integers(-(10**12), 10**12, N)),
            "i32_nulls": pa.array(rng.integers(0, 1000, N, dtype=np.int32), mask=nulls),
            "f64": pa.array(rng.random(N)),
            "date": pa.array(rng.integers(0, 20_000, N, dtype=np.int32)).cast(pa.date32()),
            "dec": pa.array([decimal.Decimal(int(x)) / 100 for x in rng.integers(0, 10**7, N)], pa.decimal128(15, 2)),
            "flag": pa.array(rng.random(N) < 0.5),
            "short": pa.array([f"{x:04d}" for x in rng.integers(0, 10_000, N)]),
            "text": pa.array(text),
            "text_nulls": pa.array(text, mask=nulls),
            "dict": pa.array(low),
            "dict_nulls": pa.array(low, mask=nulls),
            "bin": pa.array([t.encode() for t in low], pa.binary()),
            "dec_low": pa.array([decimal.Decimal(int(x)) for x in rng.integers(1, 51, N)], pa.decimal128(15, 2)),
            "dec_low_nulls": pa.array(
                [decimal.Decimal(int(x)) for x in rng.integers(1, 51, N)], pa.decimal128(15, 2), mask=nulls
            ),
        }
    )


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def written(request, tmp_path_factory) -> tuple[str, pa.Table]:
    table = _table(np.random.default_rng(11))
    path = str(tmp_path_factory.mktemp("few") / f"few-{request.param}.lance")
    # a small write cache: several pages per column (dictionaries joined across pages)
    with lance_file.LanceFileWriter(path, version=request.param, data_cache_bytes=64 * 1024) as w:
        for b in table.to_batches(max_chunksize=8192):
            w.write_batch(b)
    return path, table


@pytest.mark.parametrize("mode", ["numpy", "kernel"])
def test_few_row_takes_equal_pylance(written, monkeypatch, mode) -> None:
    path, table = written
    monkeypatch.setitem(miniblock_points.mode, "points", mode)
    f = lancelot.LanceFile(path)
    reader = lance_file.LanceFileReader(path)
    rng = np.random.default_rng(5)
    served = f.explain_take([0, N - 1])
    assert served["text"] == served["dict"] == served["i64"] == ["points/ColumnPoints"]
    assert len(f.metadata.columns[f._columns["dict"][0].index].pages) > 1
    for k in (1, 2, 10, 64):
        for clustered in (False, True):
            start = int(rng.integers(0, N - 1000)) if clustered else 0
            rows = np.sort(start + rng.choice(1000 if clustered else N, k, replace=False))
            ours = f.take(rows)
            theirs = reader.take_rows(rows.tolist()).to_table()
            assert ours.schema == theirs.schema
            assert ours.equals(theirs), (k, clustered)
    # any order, duplicates
    rows = np.array([N - 1, 3, 3, 17_000, 0, N - 1], dtype=np.int64)
    assert f.take(rows).equals(table.take(rows))
    assert f.take(rows.astype(np.int32), columns=["dict_nulls", "text"]).equals(
        table.select(["dict_nulls", "text"]).take(rows)
    )


def _dictionary_points(path: str, column: str) -> ColumnPoints:
    f = lancelot.LanceFile(path)
    points = f._reader(f.schema.field(column))._column_points()
    assert isinstance(points, ColumnPoints) and points.dictionary is not None
    return points


def test_fixed_width_dictionaries(written) -> None:
    """Low-cardinality decimals are dictionary-encoded; a few rows are looked up by numpy rows."""
    path, table = written
    f = lancelot.LanceFile(path)
    rows = np.array([1, 2, 5000, 17_001, N - 1], dtype=np.int64)
    for name in ("dec_low", "dec_low_nulls"):
        points = f._reader(f.schema.field(name))._column_points()
        assert isinstance(points, ColumnPoints) and points.dictionary is not None
        assert f.take(rows, columns=[name]).equals(table.select([name]).take(rows))
        assert isinstance(points._dict_words, np.ndarray)  # the fixed-width lookup served it
    points = _dictionary_points(path, "dec_low_nulls")
    too_far = np.array([0, int(points.dict_size[0])], dtype=np.int64)
    got = points._few_from_fixed_dictionary(too_far, np.zeros(2, np.int64), np.array([True, False]))
    assert got is not None and got[0].as_py() == points.dictionary[0].as_py()
    with pytest.raises(CorruptFileError, match="beyond the page's dictionary"):
        points._few_from_fixed_dictionary(too_far, np.zeros(2, np.int64), None)


def test_dictionary_index_past_the_dictionary(written) -> None:
    """An index past its page's dictionary reads as a null item, and is an error on a valid one."""
    path, _ = written
    points = _dictionary_points(path, "dict_nulls")
    width = points.reader.value_bytes
    too_far = int(points.dict_size[0])
    fixed = np.array([0, too_far], dtype=f"<u{width}").view(np.uint8)
    page_of_row = np.zeros(2, dtype=np.int64)
    got = points._few_from_dictionary(fixed, page_of_row, np.array([True, False]))
    assert got is not None and len(got) == 2 and got[0].as_py() == points.dictionary[0].as_py()
    with pytest.raises(CorruptFileError, match="beyond the page's dictionary"):
        points._few_from_dictionary(fixed, page_of_row, np.array([True, True]))
    with pytest.raises(CorruptFileError, match="beyond the page's dictionary"):
        points._few_from_dictionary(fixed, page_of_row, None)


def test_short_reads_fetch_every_field_at_once(written) -> None:
    """A take or range read of a few rows fetches the ranges of every point-read field in one
    read_ranges call; a range read is still reported as one."""
    path, table = written
    f = lancelot.LanceFile(path)
    f.take([0])  # search caches loaded
    calls = []
    inner = f._src.read_ranges
    f._src.read_ranges = lambda ranges: (calls.append(len(ranges)), inner(ranges))[1]
    with recording() as rec:
        assert f.read_range(100, 140).equals(table.slice(100, 40))
    assert len(calls) == 1 and calls[0] >= len(table.schema)
    assert rec.paths("text", "range") == ["points/ColumnPoints"] and rec.paths("text", "take") == []
    calls.clear()
    rows = np.array([5, 9_000, 29_000], dtype=np.int64)
    assert f.take(rows).equals(table.take(rows))
    assert len(calls) == 1


@pytest.mark.parametrize("value", [7, decimal.Decimal("1.25"), "constant text"])
def test_constant_columns(tmp_path, value) -> None:
    """pylance 2.2 writes a never-changing column as constant pages: a take or short range read
    is the value repeated (``ColumnConstant``), without levels; with nulls the pages path serves it."""
    n = 50_000
    t = pa.decimal128(15, 2) if isinstance(value, decimal.Decimal) else None
    rng = np.random.default_rng(9)
    table = pa.table(
        {
            "c": pa.array([value] * n, t),
            "c_nulls": pa.array([value] * n, t, mask=rng.random(n) < 0.3),
            "i": pa.array(np.arange(n)),
        }
    )
    path = str(tmp_path / "constant.lance")
    with lance_file.LanceFileWriter(path, version="2.2", data_cache_bytes=64 * 1024) as w:
        for b in table.to_batches(max_chunksize=8192):
            w.write_batch(b)
    f = lancelot.LanceFile(path)
    rows = np.sort(rng.choice(n, 10, replace=False))
    assert f.explain_take(rows)["c"] == ["points/ColumnConstant"]
    theirs = lance_file.LanceFileReader(path).take_rows(rows.tolist()).to_table()
    assert f.take(rows).equals(theirs)
    assert f.take(rows, columns=["c"]).equals(theirs.select(["c"]))  # no field needs a byte
    assert f.take(rows[::-1].copy()).equals(table.take(rows[::-1].copy()))
    assert f.read_range(n - 30, n + 5).equals(table.slice(n - 30))
    assert f.read_range(100, 3000).equals(table.slice(100, 2900))
