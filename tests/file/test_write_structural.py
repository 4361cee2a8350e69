"""Files lancelot writes at 2.1/2.2, read by pylance 14 (the reference).

For every supported type x null pattern x one/many pages x version: lancelot
writes, pylance reads the same table back (full read, take of sorted rows,
read_range).  Plus the layouts chosen (mini-block, full-zip, all-null), rows
that span mini-block chunks, and the types 2.1 refuses.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lancelot.errors import UnsupportedTypeError
from lancelot.format.container import read_metadata, unpack_encoding
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.io.source import open_source
from lancelot.writer import LanceWriter, write_table
from tests.helpers import column_bytes
from tests.support.data import gen_array, gen_table

lance_file = pytest.importorskip("lance.file")

VERSIONS = ["2.1", "2.2"]
NULLS = ["none", "some", "all"]
#: max_page_bytes: one page, or many small pages
PAGES = {"one": None, "many": 64}
ROWS = 600

_ST = pa.struct([("x", pa.int32()), ("y", pa.string())])
TYPES = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "float16": pa.float16(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "date32": pa.date32(),
    "date64": pa.date64(),
    "time32": pa.time32("ms"),
    "time64": pa.time64("ns"),
    "timestamp": pa.timestamp("us"),
    "timestamp_tz": pa.timestamp("ns", "UTC"),
    "duration": pa.duration("s"),
    "decimal128": pa.decimal128(12, 3),
    "fixed_binary": pa.binary(5),
    "string": pa.string(),
    "large_string": pa.large_string(),
    "binary": pa.binary(),
    "large_binary": pa.large_binary(),
    "null": pa.null(),
    "vector": pa.list_(pa.float32(), 4),
    "bool_vector": pa.list_(pa.bool_(), 3),
    "struct": _ST,
    "list": pa.list_(pa.int64()),
    "large_list": pa.large_list(pa.string()),
    "list_struct": pa.list_(_ST),
    "struct_list": pa.struct([("a", pa.list_(pa.float64())), ("b", pa.bool_())]),
    "list_list": pa.list_(pa.list_(pa.int16())),
    "list_vector": pa.list_(pa.list_(pa.float32(), 3)),
    "deep": pa.struct([("s", pa.struct([("l", pa.list_(_ST))]))]),
    "dictionary": pa.dictionary(pa.int32(), pa.string()),
    "dictionary_int8": pa.dictionary(pa.int8(), pa.binary()),
    "list_dictionary": pa.list_(pa.dictionary(pa.int16(), pa.large_string())),
}


def _plain(t: pa.DataType) -> pa.DataType:
    """The type with every dictionary replaced by its value type (pylance re-encodes dictionaries per page)."""
    if pa.types.is_dictionary(t):
        return t.value_type
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_plain(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_plain(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_plain(f.type)) for f in t])
    return t


def tables_equal(a: pa.Table, b: pa.Table) -> bool:
    if a.schema != b.schema:
        return False
    return all(a[c].cast(_plain(a[c].type)).equals(b[c].cast(_plain(b[c].type))) for c in a.column_names)


def check_pylance(path, table: pa.Table) -> None:
    """pylance reads ``table`` back from ``path``: in full, by sorted take, by range."""
    reader = lance_file.LanceFileReader(str(path))
    n = table.num_rows
    got = reader.read_all().to_table()
    assert got.schema == table.schema
    assert tables_equal(got, table)
    if n:
        idx = sorted({0, 1, n // 3, n // 2, n - 2, n - 1} & set(range(n)))
        assert tables_equal(reader.take_rows(idx).to_table(), table.take(idx))
        start, count = n // 5, n // 2
        assert tables_equal(reader.read_range(start, count).to_table(), table.slice(start, count))


def layouts(path, column: int = 0) -> list[str]:
    """The PageLayout kind of each page of a column."""
    src = open_source(str(path))
    md = read_metadata(src)
    out = []
    for page in md.columns[column].pages:
        out.append(unpack_encoding(src, page.encoding, pb.PageLayout).WhichOneof("layout"))
    return out


def page_layouts(path, column: int = 0) -> list[pb.PageLayout]:
    src = open_source(str(path))
    md = read_metadata(src)
    return [unpack_encoding(src, p.encoding, pb.PageLayout) for p in md.columns[column].pages]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("pages", list(PAGES))
@pytest.mark.parametrize("nulls", NULLS)
@pytest.mark.parametrize("name", list(TYPES))
def test_types(tmp_path, name, nulls, pages, version):
    table = gen_table(pa.schema([("c", TYPES[name])]), ROWS, nulls, seed=len(name))
    path = tmp_path / "t.lance"
    write_table(table, path, version=version, max_page_bytes=PAGES[pages])
    check_pylance(path, table)
    if pages == "many":
        assert len(layouts(path)) > 1


@pytest.mark.parametrize("pages", list(PAGES))
@pytest.mark.parametrize("nulls", NULLS)
def test_map_22(tmp_path, nulls, pages):
    t = pa.struct([("m", pa.map_(pa.string(), pa.list_(pa.int32())))])
    table = gen_table(pa.schema([("m", pa.map_(pa.int64(), pa.string())), ("s", t)]), ROWS, nulls, seed=2)
    path = tmp_path / "t.lance"
    write_table(table, path, version="2.2", max_page_bytes=PAGES[pages])
    check_pylance(path, table)


def _big_strings(n: int, null_p: float, rng: np.random.Generator, large: bool = False) -> pa.Array:
    lens = rng.integers(0, 700, n)
    vals = ["z" * int(k) + str(i) for i, k in enumerate(lens)]
    return pa.array(vals, pa.large_string() if large else pa.string(), mask=rng.random(n) < null_p)


def _full_zip_table(kind: str, nulls: str, rng: np.random.Generator) -> pa.Table:
    n, p = 300, {"none": 0.0, "some": 0.3, "all": 1.0}[nulls]
    mask = pa.array(rng.random(n) < p) if p else None
    if kind == "string":
        return pa.table({"c": _big_strings(n, p, rng)})
    if kind == "large_string":
        return pa.table({"c": _big_strings(n, p, rng, large=True)})
    if kind == "text":  # compressible: FSST per value
        words = np.array(["lorem", "ipsum", "dolor", "sit", "amet", "consectetur"])
        text = [" ".join(rng.choice(words, int(k))) for k in rng.integers(50, 150, n)]
        return pa.table({"c": pa.array(text, mask=rng.random(n) < p)})
    if kind == "vector":
        return pa.table({"c": gen_array(pa.list_(pa.float32(), 64), n, nulls, rng)})
    offs = pa.array(np.concatenate([[0], np.cumsum(rng.integers(0, 4, n))]).astype(np.int32))
    lst = pa.ListArray.from_arrays(offs, _big_strings(offs[-1].as_py(), p, rng), mask=mask)
    if kind == "list_string":
        return pa.table({"c": lst})
    if kind == "list_vector":
        vec = gen_array(pa.list_(pa.float64(), 40), offs[-1].as_py(), nulls, rng)
        return pa.table({"c": pa.ListArray.from_arrays(offs, vec, mask=mask)})
    return pa.table({"c": pa.StructArray.from_arrays([lst, _big_strings(n, p, rng)], names=["l", "b"], mask=mask)})


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("pages", [None, 30000])
@pytest.mark.parametrize("nulls", NULLS)
@pytest.mark.parametrize(
    "kind", ["string", "large_string", "text", "vector", "list_string", "list_vector", "struct_list"]
)
def test_full_zip(tmp_path, kind, nulls, pages, version):
    table = _full_zip_table(kind, nulls, np.random.default_rng(len(kind)))
    path = tmp_path / "t.lance"
    write_table(table, path, version=version, max_page_bytes=pages)
    check_pylance(path, table)
    kinds = set(layouts(path))
    if nulls == "all":
        assert kinds == {"constant_layout"}
    else:
        assert "full_zip_layout" in kinds
    if kind == "text" and nulls != "all" and pages is None:
        (page,) = page_layouts(path)
        assert page.full_zip_layout.value_compression.WhichOneof("compression") == "fsst"


@pytest.mark.parametrize("version", VERSIONS)
def test_layout_choices(tmp_path, version):
    rng = np.random.default_rng(1)
    table = pa.table(
        {
            "ints": pa.array(np.arange(10000, dtype=np.int64)),
            "nulls": pa.nulls(10000, pa.int32()),
            "big": _big_strings(10000, 0.1, rng),
            "null_lists": pa.array([None, []] * 5000, pa.list_(pa.int32())),
        }
    )
    path = tmp_path / "t.lance"
    write_table(table, path, version=version)
    check_pylance(path, table)
    (mini,) = page_layouts(path, 0)
    assert mini.WhichOneof("layout") == "mini_block_layout"
    assert mini.mini_block_layout.has_large_chunk == (version == "2.2")
    assert mini.mini_block_layout.num_items == 10000
    assert list(mini.mini_block_layout.layers) == [pb.REPDEF_ALL_VALID_ITEM]
    (null_page,) = page_layouts(path, 1)
    assert list(null_page.constant_layout.layers) == [pb.REPDEF_NULLABLE_ITEM]
    assert layouts(path, 2) == ["full_zip_layout"]
    (lists,) = page_layouts(path, 3)
    assert list(lists.constant_layout.layers) == [pb.REPDEF_ALL_VALID_ITEM, pb.REPDEF_NULL_AND_EMPTY_LIST]


@pytest.mark.parametrize("version", VERSIONS)
def test_rows_spanning_chunks(tmp_path, version):
    rng = np.random.default_rng(5)
    lens = rng.integers(0, 9000, 30)
    lens[3] = 0
    offs = pa.array(np.concatenate([[0], np.cumsum(lens)]).astype(np.int32))
    big = pa.ListArray.from_arrays(
        offs, pa.array(rng.integers(0, 100, offs[-1].as_py())), mask=pa.array(rng.random(30) < 0.2)
    )
    inner_offs = pa.array(np.concatenate([[0], np.cumsum(rng.integers(0, 5, 30000))]).astype(np.int32))
    inner = pa.ListArray.from_arrays(
        inner_offs,
        pa.array(rng.integers(0, 9, inner_offs[-1].as_py()), pa.int32()),
        mask=pa.array(rng.random(30000) < 0.1),
    )
    outer_offs = np.sort(rng.choice(np.arange(1, 30000), 29, replace=False))
    outer = pa.ListArray.from_arrays(pa.array(np.concatenate([[0], outer_offs, [30000]]).astype(np.int32)), inner)
    table = pa.table({"big": big, "nested": outer})
    path = tmp_path / "t.lance"
    write_table(table, path, version=version)
    check_pylance(path, table)
    write_table(table, path, version=version, max_page_bytes=50000)
    check_pylance(path, table)
    assert len(layouts(path, 1)) > 1


@pytest.mark.parametrize("version", VERSIONS)
def test_batches_and_garbage_under_nulls(tmp_path, version):
    x = pa.array(np.arange(1000, dtype=np.int32))
    struct = pa.StructArray.from_arrays([x], names=["x"], mask=pa.array(np.arange(1000) % 3 == 0))
    lists = pa.ListArray.from_arrays(
        pa.array(np.arange(0, 2001, 2, dtype=np.int32)),
        pa.array(np.arange(2000)),
        mask=pa.array(np.arange(1000) % 4 == 0),
    )
    strings = pa.array([str(i) if i % 7 else None for i in range(1000)])
    table = pa.table({"s": struct, "l": lists, "str": strings}).slice(13, 900)
    path = tmp_path / "t.lance"
    with LanceWriter(path, table.schema, version=version, max_page_bytes=700) as w:
        for b in table.to_batches(max_chunksize=37):
            w.write(b)
    check_pylance(path, table)


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_and_multi_column(tmp_path, version):
    schema = pa.schema([(k, TYPES[k]) for k in ("int32", "string", "struct", "list_struct", "vector")])
    path = tmp_path / "t.lance"
    empty = schema.empty_table()
    write_table(empty, path, version=version)
    check_pylance(path, empty)
    table = gen_table(schema, 3000, "some", seed=9)
    write_table(table, path, version=version, max_page_bytes=4096)
    check_pylance(path, table)


def test_refused_types(tmp_path):
    with pytest.raises(UnsupportedTypeError):
        write_table(
            pa.table({"m": pa.array([[("a", 1)]], pa.map_(pa.string(), pa.int32()))}),
            tmp_path / "m.lance",
            version="2.1",
        )
    with pytest.raises(UnsupportedTypeError):
        write_table(
            pa.table({"d": pa.array([1, 2], pa.int32()).cast(pa.decimal128(12, 2)).dictionary_encode()}),
            tmp_path / "d.lance",
            version="2.1",
        )
    assert not (tmp_path / "m.lance").exists()


def _encodings(path, column: int) -> pb.MiniBlockLayout:
    (page,) = page_layouts(path, column)
    assert page.WhichOneof("layout") == "mini_block_layout"
    return page.mini_block_layout


@pytest.mark.parametrize("version", VERSIONS)
def test_compression_choices(tmp_path, version):
    """Dictionary for low-cardinality strings, bitpacking for narrow ints, RLE for runs, FSST for other
    strings; column sizes close to pylance's."""
    rng = np.random.default_rng(0)
    n = 20000
    mask = rng.random(n) < 0.2
    table = pa.table(
        {
            "small": pa.array(rng.integers(0, 100, n), mask=mask),
            "runs": pa.array(np.repeat(rng.integers(0, 1 << 40, n // 50), 50)),
            "cat": pa.array(rng.choice(["apple", "banana", "cherry", "durian"], n), mask=mask),
            "lcat": pa.array(rng.choice(["apple", "banana", "cherry"], n), pa.large_string()),
            "lists": pa.array([list(rng.choice(["x", "yy", "zzz"], int(k))) for k in rng.integers(0, 4, n)]),
            "words": gen_array(pa.string(), n, "some", rng),
        }
    )
    path = tmp_path / "t.lance"
    write_table(table, path, version=version)
    check_pylance(path, table)
    small = _encodings(path, 0)
    assert small.value_compression.WhichOneof("compression") == "inline_bitpacking"
    assert small.def_compression.WhichOneof("compression") == "out_of_line_bitpacking"
    assert _encodings(path, 1).value_compression.WhichOneof("compression") == "rle"
    for col, items in ((2, 4), (3, 3), (4, 3)):
        layout = _encodings(path, col)
        assert layout.HasField("dictionary") and layout.num_dictionary_items == items
    words = _encodings(path, 5)
    assert not words.HasField("dictionary")
    assert words.value_compression.WhichOneof("compression") == "fsst"
    ref = tmp_path / "ref.lance"
    w = lance_file.LanceFileWriter(str(ref), table.schema, version=version)
    w.write_batch(table)
    w.close()
    for ours, theirs in zip(column_bytes(path), column_bytes(ref)):
        assert ours <= 1.25 * theirs + 256


@pytest.mark.parametrize("version", VERSIONS)
def test_dictionary_fields(tmp_path, version):
    """Arrow dictionary fields always get dictionary pages, with indices as wide as the key type."""
    rng = np.random.default_rng(3)
    keys = pa.array(rng.integers(0, 3, 300), pa.int16())
    table = pa.table(
        {
            "k16": pa.DictionaryArray.from_arrays(keys, pa.array(["a", "bb", "c"], pa.large_string())),
            "high": pa.array([f"v{i}" for i in range(300)]).dictionary_encode(),
            "null": pa.nulls(300, pa.dictionary(pa.int32(), pa.string())),
        }
    )
    path = tmp_path / "t.lance"
    with LanceWriter(path, table.schema, version=version, max_page_bytes=500) as w:
        for b in table.to_batches(max_chunksize=70):
            w.write(b)
    check_pylance(path, table)
    for page in page_layouts(path, 0) + page_layouts(path, 1):
        assert page.mini_block_layout.HasField("dictionary")
    assert {p.WhichOneof("layout") for p in page_layouts(path, 2)} == {"constant_layout"}


@pytest.mark.parametrize("version", VERSIONS)
def test_long_runs_of_empty_lists(tmp_path, version):
    """More null/empty lists before an item than a mini-block chunk holds: the page falls back to full-zip."""
    rows = [[]] * 20000 + [[1, 2]] + [None] * 20000 + [[3]]
    table = pa.table({"l": pa.array(rows, pa.list_(pa.int32()))})
    path = tmp_path / "t.lance"
    write_table(table, path, version=version)
    check_pylance(path, table)
    assert layouts(path) == ["full_zip_layout"]


def test_same_types_other_field_metadata_keep_their_own_encodings(tmp_path):
    """A writer reuses what it derived from a schema seen before (leaves, options): schemas equal but for a
    nested field's encoding metadata still get their own, in any order, and pylance reads both."""
    child = pa.field("s", pa.string())
    plain = pa.schema([pa.field("p", pa.struct([child]))])
    zstd = pa.schema([pa.field("p", pa.struct([child.with_metadata({"lance-encoding:compression": "zstd"})]))])
    rows = pa.array([{"s": "abc" * (i % 9)} for i in range(200)])
    written = {}
    for k, schema in enumerate([plain, zstd, plain, zstd]):
        path = tmp_path / f"{k}.lance"
        write_table(pa.table([rows], schema=schema), path, version="2.2")
        written.setdefault(k % 2, []).append(path.read_bytes())
        assert lance_file.LanceFileReader(str(path)).read_all().to_table().column(0).to_pylist() == rows.to_pylist()
    (a1, a2), (b1, b2) = written.values()
    assert a1 == a2 and b1 == b2 and a1 != b1
