"""The 2.1/2.2 writer's choice of encoding for characteristic data, and the field-metadata keys it honours.

Every file is also read back by pylance 14.0.2 (full read, sorted take, range) and must equal the table.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lancelot.errors import UnsupportedEncodingError, UnsupportedTypeError
from lancelot.format.container import read_metadata, unpack_encoding
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.io.source import open_source
from lancelot.reader import LanceFile
from lancelot.writer import write_table
from tests.helpers import column_bytes

lance_file = pytest.importorskip("lance.file")

VERSIONS = ["2.1", "2.2"]
N = 5000


def _field(name: str, t: pa.DataType, **meta: str) -> pa.Field:
    return pa.field(name, t, metadata={f"lance-encoding:{k.replace('_', '-')}": v for k, v in meta.items()} or None)


def _table(*cols: tuple[pa.Field, pa.Array]) -> pa.Table:
    return pa.table([a for _, a in cols], schema=pa.schema([f for f, _ in cols]))


def _check(path, table: pa.Table, columns: list[str] | None = None) -> None:
    """pylance reads ``table`` back (each of ``columns`` alone when given), and so does lancelot."""
    n = table.num_rows
    idx = sorted({0, 1, n // 3, n // 2, n - 2, n - 1} & set(range(n)))
    for cols in [[c] for c in columns] if columns else [None]:
        r = lance_file.LanceFileReader(str(path), columns=cols)
        want = table.select(cols) if cols else table
        assert r.read_all().to_table().equals(want)
        assert r.take_rows(idx).to_table().equals(want.take(idx))
        assert r.read_range(n // 5, n // 2).to_table().equals(want.slice(n // 5, n // 2))
    assert LanceFile(str(path)).read().equals(table)


def _layouts(path, column: int) -> list[pb.PageLayout]:
    src = open_source(str(path))
    md = read_metadata(src)
    return [unpack_encoding(src, p.encoding, pb.PageLayout) for p in md.columns[column].pages]


def _page(path, column: int = 0) -> pb.PageLayout:
    return _layouts(path, column)[0]


def _mini(path, column: int = 0) -> pb.MiniBlockLayout:
    layout = _page(path, column)
    assert layout.WhichOneof("layout") == "mini_block_layout"
    return layout.mini_block_layout


def _kind(enc: pb.CompressiveEncoding) -> str:
    return enc.WhichOneof("compression")


def _write(tmp_path, table: pa.Table, version: str, **kw) -> str:
    """Written with the ``fast`` profile unless asked otherwise: these tests check the technique chosen
    for a page, before the profile's General compression (tests/file/test_write_profile.py)."""
    path = str(tmp_path / f"t{version}.lance")
    kw.setdefault("profile", "fast")
    write_table(table, path, version=version, **kw)
    return path


# ----------------------------------------------------------------------------- default choices


@pytest.mark.parametrize("version", VERSIONS)
def test_low_cardinality_strings_are_dictionary_encoded(tmp_path, version):
    rng = np.random.default_rng(1)
    table = pa.table(
        {
            "flag": pa.array(rng.choice(["A", "N", "R"], N)),
            "mode": pa.array(rng.choice(["TRUCK", "MAIL", "SHIP", "AIR", "RAIL"], N), pa.large_string()),
        }
    )
    path = _write(tmp_path, table, version)
    _check(path, table)
    for col, items in ((0, 3), (1, 5)):
        mb = _mini(path, col)
        assert mb.HasField("dictionary") and mb.num_dictionary_items == items
        assert _kind(mb.value_compression) in ("inline_bitpacking", "rle")
        assert _kind(mb.dictionary) in (("variable",) if version == "2.1" else ("variable", "general"))
    assert column_bytes(path)[0] < N // 2  # 2-bit indices, not the 4-byte offsets of plain strings


@pytest.mark.parametrize("version", VERSIONS)
def test_integers_bitpacked_or_rle(tmp_path, version):
    rng = np.random.default_rng(2)
    table = pa.table(
        {
            "narrow": pa.array(rng.integers(0, 1000, N).astype(np.int32)),
            "sorted_runs": pa.array(np.repeat(np.arange(N // 100, dtype=np.int64) << 40, 100)),
        }
    )
    path = _write(tmp_path, table, version)
    _check(path, table)
    assert _kind(_mini(path, 0).value_compression) == "inline_bitpacking"
    assert _kind(_mini(path, 1).value_compression) == "rle"


@pytest.mark.parametrize("version", VERSIONS)
def test_low_cardinality_decimals_and_int64(tmp_path, version):
    """128-bit values get a page dictionary at both versions, 64-bit ones at 2.2 (as pylance does)."""
    rng = np.random.default_rng(3)
    n = 20000
    keys = (1 << 22) + np.repeat(rng.integers(1, 32, n // 4).cumsum(), 4)  # sorted, 4 times each: like orderkey
    table = pa.table(
        {
            "quantity": pa.array(rng.integers(1, 51, n).astype(np.int32)).cast(pa.decimal128(15, 2)),
            "orderkey": pa.array(keys),
        }
    )
    path = _write(tmp_path, table, version)
    _check(path, table)
    dec = _mini(path, 0)
    assert dec.HasField("dictionary") and dec.num_dictionary_items == 50
    key = _mini(path, 1)
    if version == "2.1":
        assert not key.HasField("dictionary")
    else:
        assert key.HasField("dictionary") and key.num_dictionary_items == n // 4
        assert _kind(key.value_compression) == "rle"
        assert _kind(key.dictionary) == "out_of_line_bitpacking"


@pytest.mark.parametrize("version", VERSIONS)
def test_kilobyte_values_are_full_zip(tmp_path, version):
    rng = np.random.default_rng(4)
    vals = [bytes(rng.integers(0, 255, 1024, dtype=np.uint8)) if i % 9 else None for i in range(300)]
    table = pa.table({"blobs": pa.array(vals, pa.binary())})
    path = _write(tmp_path, table, version)
    _check(path, table)
    assert _page(path).WhichOneof("layout") == "full_zip_layout"


def test_constant_pages_22(tmp_path):
    """2.2: a page of one repeated value is a constant page (inline value, or a value buffer for strings)."""
    table = pa.table(
        {
            "i": pa.array(np.full(N, 7, np.int64)),
            "s": pa.array(["hello"] * N),
            "n": pa.array([None if i % 3 else 1.5 for i in range(N)]),
            "l": pa.array([[True, True] if i % 4 else None for i in range(N)], pa.list_(pa.bool_())),
        }
    )
    path = _write(tmp_path, table, "2.2")
    _check(path, table)
    assert _page(path, 0).constant_layout.inline_value == np.int64(7).tobytes()
    strings = _page(path, 1)
    assert strings.WhichOneof("layout") == "constant_layout" and not strings.constant_layout.HasField("inline_value")
    assert _page(path, 2).constant_layout.inline_value == np.float64(1.5).tobytes()
    assert _page(path, 3).constant_layout.inline_value == b"\x01"
    assert sum(column_bytes(path)[:2]) < 64
    path21 = _write(tmp_path, table, "2.1")
    _check(path21, table)
    assert _page(path21, 0).WhichOneof("layout") == "mini_block_layout"


def test_sizes_at_most_pylances(tmp_path):
    """A lineitem-like table: each column no bigger than pylance's own file (a few bytes of slack)."""
    rng = np.random.default_rng(5)
    n = 40000
    words = np.array("the quick brown fox jumps over lazy dogs and furious packages sleep".split())
    table = pa.table(
        {
            "orderkey": pa.array(np.repeat(np.arange(n // 4) * 32, 4)),
            "partkey": pa.array(rng.integers(1, 200000, n)),
            "quantity": pa.array(rng.integers(1, 51, n).astype(np.int32)).cast(pa.decimal128(15, 2)),
            "price": pa.array(rng.integers(100, 10000000, n).astype(np.int32)).cast(pa.decimal128(15, 2)),
            "flag": pa.array(rng.choice(["A", "N", "R"], n)),
            "date": pa.array(rng.integers(8000, 10500, n).astype("int32")).cast(pa.date32()),
            "comment": pa.array([" ".join(rng.choice(words, 5)) for _ in range(n)]),
        }
    )
    for version in VERSIONS:
        path = _write(tmp_path, table, version)
        ref = str(tmp_path / f"ref{version}.lance")
        w = lance_file.LanceFileWriter(ref, table.schema, version=version)
        w.write_batch(table)
        w.close()
        assert lance_file.LanceFileReader(path).read_all().to_table().equals(table)
        for name, ours, theirs in zip(table.column_names, column_bytes(path), column_bytes(ref)):
            assert ours <= theirs + 64, (version, name, ours, theirs)


# ----------------------------------------------------------------------------- field metadata


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scheme", ["lz4", "zstd"])
def test_general_compression(tmp_path, version, scheme):
    rng = np.random.default_rng(6)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon"])
    text = pa.array([" ".join(rng.choice(words, 6)) for _ in range(N)])
    # long distinct values: full-zip (a few hundred repeated would be a page dictionary, as pylance writes them)
    big = pa.array([None if i % 3 == 0 else f"row {i} " * 60 for i in range(N)])
    table = _table(
        (_field("text", pa.string(), compression=scheme), text),
        (_field("ints", pa.int64(), compression=scheme), pa.array(rng.integers(0, 1 << 50, N))),
        (_field("big", pa.string(), compression=scheme), big),
    )
    path = _write(tmp_path, table, version)
    _check(path, table)
    want = pb.COMPRESSION_ALGORITHM_LZ4 if scheme == "lz4" else pb.COMPRESSION_ALGORITHM_ZSTD
    # random 50-bit integers: their two zero top bytes compress better split (bss=auto measures it)
    for col, inner in ((0, "variable"), (1, "byte_stream_split")):
        enc = _mini(path, col).value_compression
        assert _kind(enc) == "general" and enc.general.compression.scheme == want
        assert _kind(enc.general.values) == inner
    big_page = _page(path, 2)
    assert big_page.WhichOneof("layout") == "full_zip_layout"
    enc = big_page.full_zip_layout.value_compression  # per value always zstd (pylance cannot read lz4 nulls)
    assert _kind(enc) == "general" and enc.general.compression.scheme == pb.COMPRESSION_ALGORITHM_ZSTD
    assert column_bytes(path)[2] < 0.2 * sum(len(v) for v in big.to_pylist() if v)


@pytest.mark.parametrize("version", VERSIONS)
def test_zstd_level_and_byte_stream_split(tmp_path, version):
    rng = np.random.default_rng(7)
    floats = pa.array(rng.normal(size=N).astype(np.float32))
    doubles = pa.array(rng.normal(size=N))
    table = _table(
        (_field("on", pa.float32(), compression="zstd", bss="on", compression_level="9"), floats),
        (_field("off", pa.float64(), compression="zstd", bss="off"), doubles),
        (_field("alone", pa.float64(), bss="on"), doubles),
    )
    path = _write(tmp_path, table, version)
    _check(path, table)
    on = _mini(path, 0).value_compression
    assert _kind(on) == "general" and on.general.compression.level == 9
    assert _kind(on.general.values) == "byte_stream_split"
    off = _mini(path, 1).value_compression
    assert _kind(off) == "general" and _kind(off.general.values) == "flat"
    assert _kind(_mini(path, 2).value_compression) == "flat"  # like pylance: bss pays only under compression


@pytest.mark.parametrize("version", VERSIONS)
def test_compression_none(tmp_path, version):
    rng = np.random.default_rng(8)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"])
    text = pa.array([" ".join(rng.choice(words, 8)) for _ in range(N)])
    table = _table(
        (_field("text", pa.string(), compression="none"), text),
        (_field("ints", pa.int32(), compression="none"), pa.array(rng.integers(0, 10, N).astype("int32"))),
    )
    path = _write(tmp_path, table, version)
    _check(path, table)
    assert _kind(_mini(path, 0).value_compression) == "variable"
    assert _kind(_mini(path, 1).value_compression) == "flat"


@pytest.mark.parametrize("version", VERSIONS)
def test_dictionary_and_rle_keys(tmp_path, version):
    rng = np.random.default_rng(9)
    cats = pa.array(rng.choice(["red", "green", "blue", "yellowish"], N))
    runs = pa.array(np.repeat(np.arange(N // 50, dtype=np.int32), 50))
    table = _table(
        (_field("no_dict", pa.string(), dict_divisor="100000"), cats),
        (_field("tiny_ratio", pa.string(), dict_size_ratio="0.001"), cats),
        (_field("zstd_dict", pa.string(), dict_values_compression="zstd"), cats),
        (_field("plain_dict", pa.string(), dict_values_compression="none"), cats),
        (_field("no_rle", pa.int32(), rle_threshold="0.001"), runs),
        (_field("rle", pa.int32(), rle_threshold="0.5"), runs),
    )
    path = _write(tmp_path, table, version)
    _check(path, table)
    assert not _mini(path, 0).HasField("dictionary")
    assert not _mini(path, 1).HasField("dictionary")
    zd = _mini(path, 2).dictionary
    assert _kind(zd) == "general" and zd.general.compression.scheme == pb.COMPRESSION_ALGORITHM_ZSTD
    assert _kind(_mini(path, 3).dictionary) == "variable"
    assert _kind(_mini(path, 4).value_compression) == "inline_bitpacking"
    assert _kind(_mini(path, 5).value_compression) == "rle"


@pytest.mark.parametrize("version", VERSIONS)
def test_structural_encoding_key(tmp_path, version):
    rng = np.random.default_rng(10)
    big = pa.array([f"v{i:05d}" + "x" * 1000 for i in range(300)])
    table = _table(
        (_field("ints", pa.int32(), structural_encoding="fullzip"), pa.array(rng.integers(0, 9, 300))),
        (_field("big", pa.string(), structural_encoding="miniblock"), big),
    )
    path = _write(tmp_path, table, version)
    _check(path, table)
    assert _page(path, 0).WhichOneof("layout") == "full_zip_layout"
    assert _page(path, 1).WhichOneof("layout") == "mini_block_layout"


def test_bad_metadata_value(tmp_path):
    table = _table((_field("x", pa.int32(), compression="brotli"), pa.array([1, 2, 3], pa.int32())))
    with pytest.raises(UnsupportedEncodingError, match="compression"):
        write_table(table, tmp_path / "x.lance", version="2.2")
    assert not (tmp_path / "x.lance").exists()


# ----------------------------------------------------------------------------- packed structs, blobs, fsl<struct>

PACKED = {"lance-encoding:packed": "true"}
FIXED = pa.struct([("a", pa.int32()), ("b", pa.float64()), ("d", pa.decimal128(10, 2))])
MIXED = pa.struct([("a", pa.int32()), ("s", pa.string()), ("bin", pa.large_binary())])


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("pages", [None, 3000])
def test_packed_structs(tmp_path, version, pages):
    n = 2000
    cols = [
        (
            pa.field("p", FIXED, metadata=PACKED),
            [None if i % 5 == 0 else {"a": i, "b": i / 2, "d": i} for i in range(n)],
        ),
        (pa.field("bare", FIXED, metadata={"packed": "true"}), [{"a": -i, "b": 1.0, "d": 1} for i in range(n)]),
        (
            pa.field("lp", pa.list_(pa.field("item", FIXED, metadata=PACKED))),
            [[{"a": i, "b": 1.0, "d": 2}] * (i % 3) if i % 7 else None for i in range(n)],
        ),
    ]
    if version == "2.2":
        cols.append(
            (
                pa.field("pv", MIXED, metadata=PACKED),
                [None if i % 5 == 0 else {"a": i, "s": "x" * (i % 7), "bin": b"y" * (i % 4)} for i in range(n)],
            )
        )
    table = pa.table([pa.array(v, f.type) for f, v in cols], schema=pa.schema([f for f, _ in cols]))
    path = _write(tmp_path, table, version, max_page_bytes=pages)
    _check(path, table)
    for col in range(3):
        assert _kind(_mini(path, col).value_compression) == "packed_struct"
    if version == "2.2":
        fz = _page(path, 3)
        assert _kind(fz.full_zip_layout.value_compression) == "variable_packed_struct"


def test_packed_structs_refused(tmp_path):
    mixed = pa.table(
        [pa.array([{"a": 1, "s": "x", "bin": b""}], MIXED)], schema=pa.schema([pa.field("pv", MIXED, metadata=PACKED)])
    )
    with pytest.raises(UnsupportedTypeError, match="2.2"):
        write_table(mixed, tmp_path / "a.lance", version="2.1")
    child_nulls = pa.table(
        [pa.array([{"a": None, "b": 1.0, "d": 1}], FIXED)], schema=pa.schema([pa.field("p", FIXED, metadata=PACKED)])
    )
    with pytest.raises(UnsupportedTypeError, match="nulls"):  # raised on the page thread, seen by the caller
        write_table(child_nulls, tmp_path / "b.lance", version="2.2")
    assert not (tmp_path / "b.lance").exists() and not list(tmp_path.glob("*b.lance*"))
    bools = pa.struct([("a", pa.bool_())])
    with pytest.raises(UnsupportedTypeError, match="packed"):
        table = pa.table([pa.array([{"a": True}], bools)], schema=pa.schema([pa.field("p", bools, metadata=PACKED)]))
        write_table(table, tmp_path / "c.lance", version="2.2")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("pages", [None, 20000])
def test_blobs(tmp_path, version, pages):
    rng = np.random.default_rng(11)
    blob = {"lance-encoding:blob": "true"}
    vals = [
        None
        if i % 5 == 0
        else b""
        if i % 7 == 0
        else bytes(rng.integers(0, 255, int(rng.integers(1, 4000)), dtype=np.uint8))
        for i in range(300)
    ]
    st = pa.struct([pa.field("blob", pa.large_binary(), metadata=blob), pa.field("k", pa.int32())])
    table = pa.table(
        [
            pa.array(vals, pa.large_binary()),
            pa.array([None if i % 11 == 0 else {"blob": vals[-i], "k": i} for i in range(300)], st),
        ],
        schema=pa.schema([pa.field("b", pa.large_binary(), metadata=blob), pa.field("s", st)]),
    )
    path = _write(tmp_path, table, version, max_page_bytes=pages)
    _check(path, table)
    for col in (0, 1):
        layout = _page(path, col)
        assert layout.WhichOneof("layout") == "blob_layout"
        assert _kind(layout.blob_layout.inner_layout.mini_block_layout.value_compression) == "packed_struct"
    assert sum(column_bytes(path)) < 20 * 300 * 2  # the descriptions; the bytes live out of line
    with pytest.raises(UnsupportedTypeError, match="large_binary"):
        write_table(
            pa.table([pa.array([b"x"])], schema=pa.schema([pa.field("b", pa.binary(), metadata=blob)])),
            tmp_path / "bad.lance",
            version=version,
        )


@pytest.mark.parametrize("pages", [None, 5000])
def test_fixed_size_list_of_structs_22(tmp_path, pages):
    """2.2 writes fixed_size_list<struct> as pylance does (pages count entries); pylance reads each such
    column alone, lancelot the whole table."""
    st = pa.struct([("a", pa.int32()), ("s", pa.string())])
    n = 2000
    table = pa.table(
        {
            "fs": pa.array([[{"a": i, "s": "x" * (i % 5)}, {"a": -i, "s": "q"}] for i in range(n)], pa.list_(st, 2)),
            "fsn": pa.array(
                [
                    None if i % 3 == 0 else [{"a": i, "s": None}, None if i % 2 else {"a": None, "s": "z"}]
                    for i in range(n)
                ],
                pa.list_(st, 2),
            ),
            "sfs": pa.array(
                [None if i % 4 == 0 else {"x": [{"a": i, "s": "w"}] * 3} for i in range(n)],
                pa.struct([("x", pa.list_(st, 3))]),
            ),
        }
    )
    path = _write(tmp_path, table, "2.2", max_page_bytes=pages)
    _check(path, table, columns=table.column_names)
    md = read_metadata(open_source(path))
    assert sum(p.length for p in md.columns[0].pages) == 2 * n
    with pytest.raises(UnsupportedTypeError, match="2.2"):
        write_table(table.select(["fs"]), tmp_path / "x.lance", version="2.1")
    with pytest.raises(UnsupportedTypeError):
        write_table(
            pa.table({"l": pa.array([[[{"a": 1, "s": "x"}]]], pa.list_(pa.list_(st, 1)))}),
            tmp_path / "y.lance",
            version="2.2",
        )


def test_constant_value_sampled_check_is_only_a_shortcut():
    """constant_value looks at a sample first; a page that differs only off the sample is still not
    constant, and constant pages (nulls included) are still found."""
    from lancelot.encodings.structural.write_constant import constant_value

    n = 10_000
    for arr in (
        pa.array(["abc"] * n),
        pa.array([7] * n, pa.int64()),
        pa.array([None if i % 3 == 0 else 1.5 for i in range(n)]),
    ):
        assert constant_value(arr) is not None
    odd = ["abc"] * n
    odd[5001] = "abd"  # not one of the 256 evenly spaced sample positions
    assert constant_value(pa.array(odd)) is None
    ints = np.full(n, 7, np.int64)
    ints[5001] = 8
    assert constant_value(pa.array(ints)) is None
    assert constant_value(pa.array(np.arange(n))) is None
