"""Reading pylance's 2.3 ("next") files: PlanarLayout pages (lancelot/encodings/planar/, docs/format-2.3.md).

pylance 14.0.2 writes every file here; lancelot must read exactly what pylance's own reader
returns, for the planes it claims, and refuse the others naming the file, column and page.
"""

from __future__ import annotations

import struct
import warnings

import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.encodings.planar import read_page_layout, to_page_layout
from lancelot.encodings.planar.binary import coded_offsets
from lancelot.encodings.planar.sparse import SparsePlanes
from lancelot.encodings.structural.paths import column_paths
from lancelot.errors import CorruptFileError, UnsupportedEncodingError
from lancelot.format.container import read_metadata
from lancelot.io.source import open_source
from lancelot.util.wire import encode_varint
from lancelot.versions import FileVersion

lance_file = pytest.importorskip("lance.file")

N = 2000


def _write(path, table):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lance_file.LanceFileWriter(str(path), table.schema, version="2.3") as w:
            w.write_batch(table)
    return str(path)


def _oracle(path):
    return lance_file.LanceFileReader(path).read_all().to_table()


#: column -> (values, the 2.1/2.2 layout its planar pages stand for)
CASES = {
    "int_plain": (pa.array(np.arange(N, dtype=np.int32)), "mini_block_layout"),
    "int_nulls": (pa.array([i if i % 3 else None for i in range(N)], pa.int32()), "mini_block_layout"),
    "int_rare": (pa.array([None if i % 50 else i for i in range(N)], pa.int32()), "mini_block_layout"),
    "i64_wide": (pa.array(np.arange(N, dtype=np.int64) * 7919 % 1000003), "mini_block_layout"),
    "const": (pa.array([7] * N, pa.int32()), "constant_layout"),
    "all_null": (pa.nulls(N, pa.int32()), "constant_layout"),
    "bools": (pa.array([i % 3 == 0 for i in range(N)]), "mini_block_layout"),
    "f64": (pa.array(np.random.default_rng(0).random(N)), "mini_block_layout"),
    "list": (pa.array([[i, i + 1][: i % 3] for i in range(N)], pa.list_(pa.int32())), "mini_block_layout"),
    "list_nulls": (
        pa.array([None if i % 5 == 0 else [i, i + 1][: i % 3] for i in range(N)], pa.list_(pa.int32())),
        "mini_block_layout",
    ),
    "all_null_list": (pa.nulls(N, pa.list_(pa.int32())), "constant_layout"),
    "struct": (pa.array([{"x": i, "y": None if i % 4 == 0 else float(i)} for i in range(N)]), "mini_block_layout"),
    "fsl": (pa.array([[i, i + 1, i + 2] for i in range(N)], pa.list_(pa.float32(), 3)), "mini_block_layout"),
    "fsl_nulls": (
        pa.array([None if i % 7 == 0 else [i, i + 1, i + 2] for i in range(N)], pa.list_(pa.float32(), 3)),
        "mini_block_layout",
    ),
    "dict_str": (pa.array([["apple", "banana", "cherry"][i % 3] for i in range(N)]), "mini_block_layout"),
    "dict_i64": (pa.array([[1000001, 2000003, 3000007][i % 3] for i in range(N)], pa.int64()), "mini_block_layout"),
    "long_str": (pa.array(["x" * 300 + str(i) for i in range(N)]), "full_zip_layout"),
    # mini-block strings and binaries: Variable values with delta-coded offsets (two chunk buffers)
    "str": (pa.array([f"s{i}" for i in range(N)]), "mini_block_layout"),
    "str_nulls": (pa.array([None if i % 4 == 0 else f"s{i}" for i in range(N)]), "mini_block_layout"),
    "str_empty": (pa.array(["" if i % 2 else f"v{i}" for i in range(N)]), "mini_block_layout"),
    "large_str": (pa.array([f"s{i}" for i in range(N)], pa.large_string()), "mini_block_layout"),
    "bin": (pa.array([bytes([i % 256]) * (i % 5) for i in range(N)]), "mini_block_layout"),
    "str_list": (pa.array([[f"s{i}", f"t{i}"][: i % 3] for i in range(N)], pa.list_(pa.string())), "mini_block_layout"),
    # sparse structure (validity as row positions) with one constant value: range positions
    # (valid or null rows), delta-coded positions in a page buffer, two item layers (a struct)
    "sparse_valid": (pa.array([5 if i % 13 == 0 else None for i in range(N)], pa.int32()), "sparse"),
    "sparse_null": (pa.array([None if i % 3 == 1 else 4 for i in range(N)], pa.int16()), "sparse"),
    "sparse_f64": (pa.array([None if i % 4 == 1 else 2.5 for i in range(N)]), "sparse"),
    "sparse_bool": (pa.array([None if i % 4 == 1 else True for i in range(N)]), "sparse"),
    "sparse_random": (
        pa.array([5 if x else None for x in np.random.default_rng(7).random(N) < 0.3], pa.int32()),
        "sparse",
    ),
    "sparse_struct": (
        pa.array([None if i % 2 else {"x": 3} for i in range(N)], pa.struct([("x", pa.int32())])),
        "sparse",
    ),
    "const_struct": (pa.array([{"x": 1, "y": 2}] * N), "constant_layout"),
    # sparse list layers: non-empty slots and item counts, validity in each level's slots
    "sparse_lists": (pa.array([[7] if i % 10 == 3 else [] for i in range(N)], pa.list_(pa.int32())), "sparse"),
    "sparse_null_lists": (
        pa.array([[7, 7] if i % 10 == 3 else None for i in range(N)], pa.list_(pa.int32())),
        "sparse",
    ),
    "sparse_null_items": (
        pa.array([[None, 7, 7] if i % 10 == 3 else ([] if i % 2 else None) for i in range(N)], pa.list_(pa.int32())),
        "sparse",
    ),
    "sparse_list_of_lists": (
        pa.array([[[7]] if i % 7 == 3 else ([] if i % 2 else None) for i in range(N)], pa.list_(pa.list_(pa.int32()))),
        "sparse",
    ),
    "sparse_list_in_struct": (
        pa.array(
            [{"l": [7] if i % 10 == 3 else []} if i % 3 else None for i in range(N)],
            pa.struct([("l", pa.list_(pa.int32()))]),
        ),
        "sparse",
    ),
    "sparse_structs_in_list": (
        pa.array([[{"x": 7}, None] if i % 10 == 3 else [] for i in range(N)], pa.list_(pa.struct([("x", pa.int32())]))),
        "sparse",
    ),
    "sparse_bool_lists": (
        pa.array([[True] if i % 10 == 3 else None for i in range(N)], pa.list_(pa.bool_())),
        "sparse",
    ),
    "empty_lists": (pa.array([[]] * N, pa.list_(pa.int32())), "sparse"),
    # item counts of 1 or 2: a dictionary (1-bit indices) of a range, in a page buffer
    "sparse_counts_dict": (
        pa.array([[7] * (i % 3) if i % 10 == 3 else [] for i in range(N)], pa.list_(pa.int32())),
        "sparse",
    ),
    "sparse_nested_counts": (
        pa.array([[[7], [], [7, 7]] if i % 10 == 3 else [] for i in range(N)], pa.list_(pa.list_(pa.int32()))),
        "sparse",
    ),
    # sparse long strings: a zipped plane of the valid rows' values only
    "sparse_long_str": (pa.array([("x" * 500 + str(i)) if i % 100 == 0 else None for i in range(N)]), "sparse"),
    # nesting
    "list_of_lists": (
        pa.array([[[i, i + 1][: i % 3]] * (i % 2) for i in range(N)], pa.list_(pa.list_(pa.int32()))),
        "mini_block_layout",
    ),
    "list_of_structs": (pa.array([[{"x": i, "y": f"s{i}"}] * (i % 3) for i in range(N)]), "mini_block_layout"),
    "large_list": (pa.array([[i] * (i % 3) for i in range(N)], pa.large_list(pa.int64())), "mini_block_layout"),
    "str_list_nulls": (
        pa.array([None if i % 4 == 0 else [f"s{i}", None][: i % 3] for i in range(N)], pa.list_(pa.string())),
        "mini_block_layout",
    ),
    # map keys all one byte long: their offsets are a range (CompressiveEncoding case 14)
    "map": (pa.array([[("k", i)] * (i % 2) for i in range(N)], pa.map_(pa.string(), pa.int64())), "mini_block_layout"),
    "struct_nested": (
        pa.array([{"a": {"b": i if i % 3 else None}} if i % 5 else None for i in range(N)]),
        "mini_block_layout",
    ),
    "dictionary": (pa.array([["a", "b", "c"][i % 3] for i in range(N)]).dictionary_encode(), "mini_block_layout"),
    "fsb": (pa.array([bytes([i % 251]) * 16 for i in range(N)], pa.binary(16)), "mini_block_layout"),
    "decimal": (pa.array(range(N), pa.decimal128(10, 2)), "mini_block_layout"),
    "date": (pa.array(np.arange(N).astype("datetime64[D]")), "mini_block_layout"),
    "f16": (pa.array(np.random.default_rng(1).random(N).astype(np.float16)), "mini_block_layout"),
    "bool_nulls": (pa.array([None if i % 5 == 0 else i % 3 == 0 for i in range(N)]), "mini_block_layout"),
    # mostly-null strings: RLE offsets (run values a range, or flat) before the bytes
    "rare_str": (pa.array(["hello" if i % 50 == 3 else None for i in range(N)]), "mini_block_layout"),
    "rare_str_2": (
        pa.array([["hello", "world"][i % 2] if i % 50 == 3 else None for i in range(N)]),
        "mini_block_layout",
    ),
    "rare_bin": (
        pa.array([b"\x00\x01" * (i % 4) if i % 50 == 3 else None for i in range(N)], pa.binary()),
        "mini_block_layout",
    ),
    # FSST-compressed strings keep 2.2's one-buffer Variable chunks
    "str_fsst": (
        pa.array(
            [f"{['alpha', 'beta', 'gamma', 'delta'][i % 4]} {['zeta', 'theta'][i % 2]} epsilon {i}" for i in range(N)]
        ),
        "mini_block_layout",
    ),
}


@pytest.fixture(scope="module")
def planar_file(tmp_path_factory):
    table = pa.table({name: values for name, (values, _) in CASES.items()})
    return _write(tmp_path_factory.mktemp("v23") / "planar.lance", table)


def _kind(layout):
    return "sparse" if isinstance(layout, SparsePlanes) else layout.WhichOneof("layout")


def _layouts(path):
    """Layout kind of every page of every column, as lancelot translates them."""
    src = open_source(path)
    try:
        meta = read_metadata(src)
        return meta.version, [{_kind(read_page_layout(src, p.encoding)) for p in col.pages} for col in meta.columns]
    finally:
        src.close()


def test_footer_is_2_3_and_pages_are_the_planes_claimed(planar_file):
    version, kinds = _layouts(planar_file)
    assert version is FileVersion.V2_3
    with open(planar_file, "rb") as f:
        f.seek(-40, 2)
        assert struct.unpack("<HH4s", f.read()[-8:]) == (2, 3, b"LANC")
    leaves = iter(kinds)
    for name, (values, kind) in CASES.items():
        for _ in column_paths(pa.field(name, values.type)):
            assert next(leaves) == {kind}, name


def test_read_matches_pylance(planar_file):
    expected = _oracle(planar_file)
    with lancelot.LanceFile(planar_file) as f:
        got = f.read()
        assert f.metadata.version == "2.3"
    for name in CASES:
        assert got.column(name).combine_chunks().equals(expected.column(name).combine_chunks()), name


def test_take_and_ranges_match_pylance(planar_file):
    expected = _oracle(planar_file)
    rows = [0, 1, 2, 499, 500, 1024, 1025, 1999]
    with lancelot.LanceFile(planar_file) as f:
        assert f.take(rows).equals(expected.take(rows))
        assert f.read_range(700, 1300).equals(expected.slice(700, 600))


def test_multi_page_columns(tmp_path):
    """pylance 14 cuts 2.3 pages at about 4 MiB whatever max_page_bytes says: 4.8 MB of int64."""
    t = pa.table({"i": pa.array(np.random.default_rng(3).integers(0, 1 << 60, 600_000))})
    path = str(tmp_path / "pages.lance")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lance_file.LanceFileWriter(path, t.schema, version="2.3") as w:
            for b in t.to_batches(max_chunksize=100_000):
                w.write_batch(b)
    src = open_source(path)
    try:
        assert len(read_metadata(src).columns[0].pages) > 1
    finally:
        src.close()
    rows = [0, 99_999, 100_000, 499_999, 500_000, 599_999]
    with lancelot.LanceFile(path) as f:
        assert f.read().equals(_oracle(path))
        assert f.take(rows).equals(t.take(rows))


def test_dataset_written_as_next_reads_like_pylance(tmp_path):
    import lance

    t = pa.table({"a": pa.array(range(300), pa.int64()), "b": CASES["list_nulls"][0].slice(0, 300)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lance.write_dataset(t, str(tmp_path / "d"), data_storage_version="next")
    ds = lancelot.dataset(str(tmp_path / "d"))
    assert ds.data_storage_version == "2.3"
    assert ds.to_table().equals(lance.dataset(str(tmp_path / "d")).to_table())
    assert ds.take([3, 150, 299]).equals(t.take([3, 150, 299]))


def _repeated_wide():
    """400 random letters, 700 such values drawn for about half the rows, the rest null."""
    rng = np.random.default_rng(11)
    pool = ["".join(chr(c) for c in rng.integers(65, 91, 400)) for _ in range(700)]
    return pa.array([None if rng.random() < 0.5 else pool[int(rng.integers(0, 700))] for _ in range(N)])


def _random_half_null(n):
    rng = np.random.default_rng(42)
    return rng.integers(-(1 << 31), 1 << 31, n), rng.random(n) < 0.5


@pytest.mark.parametrize(
    "values",
    [
        # RLE whose run values are bit-packed out of line (a fixed-size list of structs: its items'
        # column has twice the rows, so pylance reads it alone)
        pa.array([[{"x": i}, {"x": i + 1}] for i in range(3000)], pa.list_(pa.struct([("x", pa.int32())]), 2)),
        # page dictionaries of nullable fixed-size lists: each item zipped as its validity bits, then its values
        pa.array(
            [None if i % 4 == 0 else [[1, 2], [3, 4], [5, 6]][i % 3] for i in range(3000)], pa.list_(pa.int32(), 2)
        ),
        pa.array([[[1, None], [3, 4], [5, 6]][i % 3] for i in range(3000)], pa.list_(pa.int32(), 2)),
        pa.array([[[1, None], None, [5, 6], [7, 8]][i % 4] for i in range(3000)], pa.list_(pa.int64(), 2)),
        # RLE whose run lengths are bit-packed out of line (random ints, half null: runs of null fillers)
        pa.array(
            [None if m else int(v) for v, m in zip(*_random_half_null(2000))],
            pa.int32(),
        ),
    ],
    ids=[
        "rle_of_bitpacked_values",
        "dict_fsl_null_rows",
        "dict_fsl_null_items",
        "dict_fsl_i64",
        "rle_bitpacked_lengths",
    ],
)
def test_nested_compressions_read_like_pylance(tmp_path, values):
    n = len(values)
    path = _write(tmp_path / "u.lance", pa.table({"k": pa.array(range(n)), "a": values}))
    expected = lance_file.LanceFileReader(path, columns=["a"]).read_all().to_table()
    assert expected.column("a").combine_chunks().equals(values)
    rows = [0, 1, 5, 1500, n - 1]
    with lancelot.LanceFile(path) as f:
        assert f.read(["k"]).column("k").to_pylist() == list(range(n))
        assert f.read(["a"]).equals(expected)
        assert f.take(rows, ["a"]).equals(expected.take(rows))
        assert f.read_range(700, 1300, ["a"]).equals(expected.slice(700, 600))


def _msg(*fields):
    """A protobuf message from (field number, bytes | int) pairs."""
    out = b""
    for num, value in fields:
        if isinstance(value, int):
            out += encode_varint(num << 3) + encode_varint(value)
        else:
            out += encode_varint(num << 3 | 2) + encode_varint(len(value)) + value
    return out


def test_planar_layouts_that_are_bad_or_unknown_refuse():
    dense = _msg((1, _msg((1, _msg((1, b"\x01"))))))
    inline_bitpacking = _msg((5, _msg((1, 32))))
    chunked = _msg((1, _msg((1, inline_bitpacking), (5, 1), (6, 10))))
    assert to_page_layout(dense + _msg((2, chunked))).mini_block_layout.has_large_chunk
    with pytest.raises(CorruptFileError):
        to_page_layout(b"\x0a\x05\x01")  # a length past the message
    with pytest.raises(CorruptFileError, match="layers"):
        to_page_layout(_msg((1, _msg((1, _msg((1, b"\x09")))))) + _msg((2, chunked)))
    with pytest.raises(UnsupportedEncodingError, match=r"PlanarLayout field\(s\) \[3\]"):
        to_page_layout(dense + _msg((2, chunked)) + _msg((3, 1)))
    with pytest.raises(UnsupportedEncodingError, match="field 16 of CompressiveEncoding"):
        to_page_layout(dense + _msg((2, _msg((1, _msg((1, _msg((16, b""))), (5, 1), (6, 10)))))))
    with pytest.raises(UnsupportedEncodingError, match="value plane field"):
        to_page_layout(dense + _msg((2, _msg((6, b"")))))
    with pytest.raises(UnsupportedEncodingError, match="dense planar page of indexed values"):
        to_page_layout(dense + _msg((2, _msg((5, b"")))))


def test_string_offsets_are_coded_as_claimed(planar_file):
    """The coded string offsets the reads above go through: delta (lengths), range (map keys of
    one byte each) and RLE (mostly-null strings)."""
    first_column, col = {}, 0
    for name, (values, _) in CASES.items():
        first_column[name] = col
        col += len(column_paths(pa.field(name, values.type)))
    src = open_source(planar_file)
    try:
        columns = read_metadata(src).columns

        def code(name):
            layout = read_page_layout(src, columns[first_column[name]].pages[0].encoding)
            return coded_offsets(layout.mini_block_layout)

        assert code("str").deltas is not None and code("large_str").bits == 64
        assert code("map").deltas is None and code("map").rle is None and code("map").step == 1
        assert all(code(n).rle is not None for n in ("rare_str", "rare_str_2", "rare_bin"))
        assert code("str_fsst") is None  # FSST keeps 2.2's flat offsets
    finally:
        src.close()


def test_sparse_structure_with_chunked_values(tmp_path):
    """70 000 rows of 0..3 tags: sparse list layers over a mini-block plane of the items alone
    (dictionary-coded strings), whose buffers come before the structure's."""
    n = 70_000
    t = pa.table({"tags": pa.array([["t0", "t1", "t2"][: i % 4] for i in range(n)], pa.list_(pa.string()))})
    path = _write(tmp_path / "tags.lance", t)
    src = open_source(path)
    try:
        planes = read_page_layout(src, read_metadata(src).columns[0].pages[0].encoding)
    finally:
        src.close()
    assert isinstance(planes, SparsePlanes) and planes.chunked is not None
    rows = [0, 3, 4, 7, 35_001, 69_999]
    with lancelot.LanceFile(path) as f:
        assert f.read().equals(_oracle(path))
        assert f.take(rows).equals(t.take(rows))
        assert f.read_range(1000, 1100).equals(t.slice(1000, 100))


@pytest.mark.parametrize(
    "values",
    [
        # wide values on fewer than half the rows: a zipped plane of the valid ones, positions in a buffer after it
        pa.array([("x" * 300 + str(i)) if (i * 7919 % 100) < 45 else None for i in range(N)]),
        # ... under two item layers (a struct), the leaf's valid positions delta-coded
        pa.array(
            [{"s": ("x" * 500 + str(i)) if i % 3 else None} if i % 10 == 0 else None for i in range(N)],
            pa.struct([("s", pa.string())]),
        ),
        # one wide binary on every 7th row: item layers over a chunked plane (a dictionary) of every row
        pa.array([b"y" * 300 if i % 7 == 0 else None for i in range(N)], pa.binary()),
        # fixed-width wide values (a zipped plane without a repetition index), positions Flat 64 in a buffer
        pa.array(
            [np.arange(64, dtype=np.float32) + i if (i * 7919) % 100 < 10 else None for i in range(N)],
            pa.list_(pa.float32(), 64),
        ),
        # wide values repeated on half the rows: an indexed plane (an index per row into zipped items)
        _repeated_wide(),
    ],
    ids=["zipped_random_rows", "zipped_struct", "chunked_item_slots", "zipped_fixed_width", "indexed_items"],
)
def test_sparse_value_planes_read_like_pylance(tmp_path, values):
    path = _write(tmp_path / "v.lance", pa.table({"a": values}))
    src = open_source(path)
    try:
        assert isinstance(read_page_layout(src, read_metadata(src).columns[-1].pages[0].encoding), SparsePlanes)
    finally:
        src.close()
    expected = _oracle(path)
    assert expected.column("a").combine_chunks().equals(values)
    rows = [0, 1, 7, 10, 500, N - 1]
    with lancelot.LanceFile(path) as f:
        assert f.read().equals(expected)
        assert f.take(rows).equals(expected.take(rows))
        assert f.read_range(300, 1700).equals(expected.slice(300, 1400))


@pytest.mark.parametrize(
    "values, batches",
    [
        # offsets RLE-coded with ranges for run values and run lengths (no offsets buffer)
        (
            pa.array(
                [None, {"d": None}, {"d": None}, {"d": None}, {"d": b"9xy6"}, {"d": b""}, None, {"d": None}]
                + [None, {"d": None}, None, None],
                pa.struct([("d", pa.large_binary())]),
            ),
            [2, 10],
        ),
        # map keys of lengths 0, 1, 2: a delta whose deltas are a range
        (pa.array([[("", 264), ("y", 779)], [], [], [("ya", None)], None], pa.map_(pa.string(), pa.int32())), [5]),
        # every value empty: Constant offsets
        (
            pa.array(
                [[None, None], [], None, None, [], [], ["", ""], [None], [None, None], []], pa.large_list(pa.string())
            ),
            [3, 2, 2, 3],
        ),
        (pa.array([""] * 10), [10]),
        # RLE offsets whose run lengths are a Constant
        (
            pa.array(
                [None, [], [], [None, b"\xec(K", None], None, None, None, [b"\xec(K", None], [], None, None, []],
                pa.large_list(pa.large_binary()),
            ),
            [3, 1, 8],
        ),
        # sparse positions: a Delta whose deltas are a range (no buffer), or Flat 64 deltas in a buffer
        (pa.array([[None], [None], None, None, [None], [], None, None, None, None, None], pa.list_(pa.bool_())), [11]),
        (pa.array([[None], [None], None, None, None, [], None, None, None, None, None], pa.list_(pa.bool_())), [11]),
        # list counts 1, 1, 2: a Delta of range deltas (0, 1), not ascending
        (
            pa.array(
                [[], [], [], [(490, None)], [], [], [], [], [(490, None)], [(562, []), (-15, None)]],
                pa.map_(pa.int32(), pa.map_(pa.int32(), pa.int32())),
            ),
            [10],
        ),
        # list counts as RLE of ranged run values (run lengths in a buffer)
        (
            pa.array(
                [[], None, [[]], None, [[]], [[]], [], [[], [], []]], pa.large_list(pa.large_list(pa.large_binary()))
            ),
            [8],
        ),
    ],
    ids=[
        "rle_ranges",
        "delta_range",
        "constant_nested",
        "constant",
        "rle_constant_lengths",
        "delta_flat",
        "delta_of_range",
        "counts_repeat",
        "counts_rle_of_range",
    ],
)
def test_small_chunks_offsets_read_like_pylance(tmp_path, values, batches):
    """pylance codes the sequences of small pages in the layout alone (ranges, constants) or plainly."""
    t = pa.table({"id": pa.array(range(len(values)), pa.int64()), "c": values})
    path = str(tmp_path / "s.lance")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lance_file.LanceFileWriter(path, t.schema, version="2.3") as w:
            pos = 0
            for b in batches:
                w.write_batch(t.slice(pos, b))
                pos += b
    expected = _oracle(path)
    assert expected.equals(t)
    with lancelot.LanceFile(path) as f:
        assert f.read().equals(expected)
        assert f.take([0, len(values) - 1]).equals(expected.take([0, len(values) - 1]))
