"""``LanceFile.take`` (and short ``read_range``) of 2.1/2.2 files, equal to pylance's take.

A take of up to 64 rows builds its Arrow arrays from the point kernel's output in Python
(structural/column_points.py): plain strings joined, FSST codes joined then decoded, dictionary
strings looked up in Python lists of the column's dictionary, fixed-width values as the kernel
wrote them.  Each must equal pylance's take, with nulls, across pages and chunks, in any order,
and a dictionary index past its page's dictionary must be a null item or an error.

pylance chooses FSST page by page: a page of short strings (at most 4 bytes) or of little data
keeps them plain.  ``ColumnPoints`` reads all pages of such a column in one kernel call, so each
page's strings must be decoded with its own table, or none.

Fixed-width full-zip columns (``ColumnFullZipPoints``, column_fullzip_points.py) are taken a few
rows at a time (planned in Python ints; rows that are just their values' bytes become Arrow arrays
without decoding) and more, scattered, clustered and adjacent, across pages.
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
from lancelot.inspect import _decode
from tests.helpers import pylance_write

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


def test_first_take_looks_items_up_in_the_decoded_block(written) -> None:
    """A fresh file's take of a few rows of one page gathers dictionary items from the page's decoded
    block: no Arrow dictionary array is made, and the values equal pylance's."""
    path, table = written
    f = lancelot.LanceFile(path)
    rows = np.array([3, 40, 41], dtype=np.int64)
    names = ["dict", "dict_nulls", "dec_low", "dec_low_nulls"]
    assert f.take(rows, columns=names).equals(table.select(names).take(rows))
    for name in names:
        points = f._reader(f.schema.field(name))._points
        assert isinstance(points, ColumnPoints) and points.has_dictionary and points._dictionary is None, name


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_files_written_alike_share_their_small_dictionaries(tmp_path, version) -> None:
    """Pages whose small dictionaries are the same bytes share one decoded dictionary (a fresh
    file's take does not decode it again); a dictionary of other words of the same count and
    lengths is its own.  Every take equals pylance's."""
    rng = np.random.default_rng(3)
    words = {"a": ["AIR", "RAIL", "SHIP"], "b": ["AIR", "RAIL", "SHIP"], "c": ["BUS", "TAXI", "BOAT"]}
    rows = np.array([0, 7, 999], dtype=np.int64)
    shared = {}
    for name, choices in words.items():
        values = [*choices, *rng.choice(choices, 997)]  # (the same first rows: the same dictionary order)
        table = pa.table({"c": pa.array(values), "i": pa.array(np.arange(1000))})
        path = pylance_write(tmp_path / f"{name}.lance", table, version)
        with lancelot.LanceFile(path) as f:
            assert f.take(rows).equals(lance_file.LanceFileReader(path).take_rows(rows.tolist()).to_table())
            points = f._reader(f.schema.field("c"))._points
            assert isinstance(points, ColumnPoints) and points.page_dicts is not None
            shared[name] = points.page_dicts[0]
    assert shared["a"] is shared["b"] and shared["c"] is not shared["a"]


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
    one = points.page_dicts[0]  # a first take's few items looked up in one page's decoded block
    assert one.kind == "strings"
    local = np.array([0, one.size], dtype=np.int64)
    got = points._few_from_strings(one, local, np.array([True, False]))
    assert got is not None and got.to_pylist() == [points.dictionary[0].as_py(), ""]
    with pytest.raises(CorruptFileError, match="beyond the page's dictionary"):
        points._few_from_strings(one, local, None)


def test_short_reads_fetch_every_field_at_once(written) -> None:
    """A take or range read of a few rows fetches the ranges of every point-read field in one
    read_ranges call; a range read is still reported as one."""
    path, table = written
    f = lancelot.LanceFile(path)
    f.take([0, 5, 100, 9_000, 29_000])  # the search caches of the pages read below loaded
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


PAGE_ROWS = 20_000  # rows of each page of the mixed FSST / plain column
PAGE_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]


def _plain_strings(rng: np.random.Generator) -> pa.Array:
    """Distinct 4-byte strings: too short for FSST, too many for a dictionary."""
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", np.uint8)
    raw = alphabet[rng.integers(0, len(alphabet), 4 * PAGE_ROWS)].tobytes()
    return pa.array([raw[4 * i : 4 * i + 4].decode() for i in range(PAGE_ROWS)])


def _fsst_strings(rng: np.random.Generator) -> pa.Array:
    return pa.array([" ".join(rng.choice(PAGE_WORDS, 6)) + str(i) for i in range(PAGE_ROWS)])


def _page_fsst(f: lancelot.LanceFile) -> list[bool]:
    """Whether each page of the column compresses its strings with FSST."""
    out = []
    for page in f.metadata.columns[0].pages:
        layout, _ = _decode(f, page.encoding)
        out.append(layout.mini_block_layout.value_compression.WhichOneof("compression") == "fsst")
    return out


@pytest.mark.parametrize("mode", ["numpy", "kernel"])
@pytest.mark.parametrize("plain_first", [True, False])
@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_point_take_decodes_each_page_with_its_own_table(tmp_path, monkeypatch, mode, plain_first, version):
    rng = np.random.default_rng(3)
    plain, fsst = _plain_strings(rng), _fsst_strings(rng)
    batches = [plain, fsst] if plain_first else [fsst, plain]
    f = lancelot.LanceFile(
        pylance_write(
            tmp_path / f"mixed-{version}.lance",
            [pa.table({"s": b}) for b in batches],
            version,
            data_cache_bytes=64 * 1024,
        )
    )
    assert _page_fsst(f) == ([False, True] if plain_first else [True, False])  # the shape under test
    monkeypatch.setitem(miniblock_points.mode, "points", mode)
    rows = [5, PAGE_ROWS - 1, PAGE_ROWS, PAGE_ROWS + 1, PAGE_ROWS + 15_000, 2 * PAGE_ROWS - 1]
    assert f.explain_take(rows)["s"] == ["points/ColumnPoints"]
    expected = pa.concat_arrays(batches).take(rows).to_pylist()
    assert f.take(rows)["s"].to_pylist() == expected
    # rows of the second page only (the kernel's first page is then the other kind)
    assert (
        f.take([PAGE_ROWS + 2, PAGE_ROWS + 3])["s"].to_pylist()
        == pa.concat_arrays(batches).take([PAGE_ROWS + 2, PAGE_ROWS + 3]).to_pylist()
    )


FULL_ZIP_ROWS = 6_000


def _full_zip_table() -> pa.Table:
    rng = np.random.default_rng(5)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(FULL_ZIP_ROWS * 128, dtype=np.float32)), 128)
    wide = pa.FixedSizeListArray.from_arrays(pa.array(rng.integers(0, 1 << 60, FULL_ZIP_ROWS * 32)), 32)
    nulls = rng.random(FULL_ZIP_ROWS) < 0.2
    with_nulls = pa.FixedSizeListArray.from_arrays(
        pa.array(rng.random(FULL_ZIP_ROWS * 64, dtype=np.float32)), 64, mask=pa.array(nulls)
    )
    return pa.table({"vec": vec, "wide": wide, "vn": with_nulls})


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_full_zip_takes_equal_pylance(tmp_path, version):
    table = _full_zip_table()
    path = str(tmp_path / f"fz-{version}.lance")
    with lance_file.LanceFileWriter(path, version=version, max_page_bytes=256 * 1024, data_cache_bytes=256 * 1024) as w:
        for b in table.to_batches(max_chunksize=1000):
            w.write_batch(b)
    f = lancelot.LanceFile(path)
    ref = lance_file.LanceFileReader(path)
    rng = np.random.default_rng(2)
    sets = [np.sort(rng.choice(FULL_ZIP_ROWS, k, replace=False)) for k in (1, 10, 64, 300)]
    sets += [start + np.sort(rng.choice(1000, 10, replace=False)) for start in (0, 2500, FULL_ZIP_ROWS - 1000)]
    sets += [np.arange(990, 1010), np.array([0, FULL_ZIP_ROWS - 1])]
    paths = f.explain_take(sets[1])
    assert paths["vec"] == paths["wide"] == ["points/ColumnFullZipPoints"], paths
    plain = {c: f._reader(f.schema.field(c))._points.plain for c in ("vec", "wide", "vn")}
    assert plain["vec"] == table.schema.field("vec").type and plain["wide"] is not None, plain
    assert plain["vn"] is None  # rows with a control word: decoded
    assert len(f._reader(f.schema.field("vec")).columns[0].col.meta.pages) > 3
    for rows in sets:
        got = f.take(rows)
        assert got.equals(ref.take_rows(rows.tolist()).to_table().cast(got.schema)), rows
        assert got.equals(table.take(pa.array(rows))), rows


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_first_reads_decode_a_shared_small_dictionary_once(tmp_path, version) -> None:
    """A 2.0 take's dictionary items and a 2.1/2.2 whole read's page dictionaries are decoded once per distinct
    content: a file written alike adds nothing to the shared cache, other words add theirs.  Reads equal pylance's."""
    from lancelot.encodings.structural.miniblock_table import _DICTIONARIES
    from lancelot.encodings.v2_0.whole import _ITEMS

    cache, rows = _ITEMS if version == "2.0" else _DICTIONARIES, np.array([0, 7, 99], dtype=np.int64)
    cache.clear()  # (it clears itself when full)
    sizes = []
    for name, choices in {"a": ["AIR", "RAIL"], "b": ["AIR", "RAIL"], "c": ["BUS", "TAXI"]}.items():
        table = pa.table({"c": pa.array([*choices, *np.random.default_rng(3).choice(choices, 98)])})
        path = pylance_write(tmp_path / f"{name}.lance", table, version)
        with lancelot.LanceFile(path) as f:
            ours = f.take(rows) if version == "2.0" else f.read()
        theirs = lance_file.LanceFileReader(path)
        assert ours.equals(
            theirs.take_rows(rows.tolist()).to_table() if version == "2.0" else theirs.read_all().to_table()
        )
        sizes.append(len(cache))
    assert sizes[1] == sizes[0] and sizes[2] == sizes[1] + 1
