"""Conformance of 2.0 files against pylance 14.0.2, in both directions.

For every type x null pattern x page size: pylance writes -> lancelot reads
equal; lancelot writes -> pylance reads equal; lancelot -> lancelot equal;
take, read_range and projection checked the same way.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancelot
from tests.helpers import pylance_read, pylance_write
from tests.support.data import gen_table, tables_equal

lance_file = pytest.importorskip("lance.file", reason="pylance (the test oracle) is not installed")

N = 300

TYPES = {
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "float16": pa.float16(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "decimal128": pa.decimal128(12, 3),
    "decimal256": pa.decimal256(40, 5),
    "date32": pa.date32(),
    "date64": pa.date64(),
    "time32s": pa.time32("s"),
    "time32ms": pa.time32("ms"),
    "time64us": pa.time64("us"),
    "time64ns": pa.time64("ns"),
    "ts_s": pa.timestamp("s"),
    "ts_ms_tz": pa.timestamp("ms", tz="Europe/Paris"),
    "ts_us_utc": pa.timestamp("us", tz="UTC"),
    "ts_ns": pa.timestamp("ns"),
    "duration_us": pa.duration("us"),
    "utf8": pa.string(),
    "large_utf8": pa.large_string(),
    "binary": pa.binary(),
    "large_binary": pa.large_binary(),
    "fixed_binary": pa.binary(3),
    "null": pa.null(),
    "list_int": pa.list_(pa.int32()),
    "large_list_str": pa.large_list(pa.string()),
    "vector": pa.list_(pa.float32(), 8),
    "struct": pa.struct([("a", pa.int64()), ("b", pa.string())]),
    "dict": pa.dictionary(pa.int32(), pa.string()),
    "list_list": pa.list_(pa.list_(pa.int64())),
    "list_struct": pa.list_(pa.struct([("x", pa.float64()), ("y", pa.list_(pa.string()))])),
    "struct_list": pa.struct([("l", pa.list_(pa.int16())), ("s", pa.struct([("z", pa.bool_())]))]),
    "deep": pa.list_(pa.list_(pa.list_(pa.int32()))),
}


def make_table(name: str, nulls: str, n: int = N, seed: int = 1) -> pa.Table:
    """An id column and one column of type ``name`` (2.0 holds no null structs)."""
    tab = gen_table(pa.schema([(name, TYPES[name])]), n, nulls, seed, null_structs=False)
    return pa.table({"id": pa.array(np.arange(n)), name: tab[name]})


def check_reads(path, expected: pa.Table) -> None:
    f = lancelot.LanceFile(path)
    assert f.num_rows == expected.num_rows
    assert tables_equal(f.read(), expected)
    rng = np.random.default_rng(7)
    idx = rng.integers(0, expected.num_rows, 25)
    idx = np.concatenate([idx, idx[:3], [0, expected.num_rows - 1]])
    assert tables_equal(f.take(idx), expected.take(pa.array(idx)))
    for s, e in [(0, 1), (17, 131), (expected.num_rows - 5, expected.num_rows), (99, 99)]:
        assert tables_equal(f.read_range(s, e), expected.slice(s, e - s))
    col = expected.column_names[-1]
    assert tables_equal(f.read(columns=[col]), expected.select([col]))
    got = pa.Table.from_batches(list(f.iter_batches(batch_size=64)))
    assert tables_equal(got, expected)


@pytest.mark.parametrize("nulls", ["none", "some", "all"])
@pytest.mark.parametrize("name", sorted(TYPES))
@pytest.mark.parametrize("page_bytes", [None, 256], ids=["onepage", "manypages"])
def test_pylance_writes_lancelot_reads(tmp_path, name, nulls, page_bytes):
    table = make_table(name, nulls)
    path = tmp_path / "p.lance"
    pylance_write(path, table, "2.0", max_page_bytes=page_bytes)
    expected = pylance_read(path)
    assert tables_equal(expected, table)
    check_reads(path, expected)


@pytest.mark.parametrize("nulls", ["none", "some", "all"])
@pytest.mark.parametrize("name", sorted(TYPES))
@pytest.mark.parametrize("page_bytes", [None, 256], ids=["onepage", "manypages"])
def test_lancelot_writes_pylance_reads(tmp_path, name, nulls, page_bytes):
    table = make_table(name, nulls)
    path = tmp_path / "l.lance"
    lancelot.write_table(table, path, version="2.0", max_page_bytes=page_bytes)
    got = pylance_read(path)
    assert got.schema.equals(table.schema)
    assert tables_equal(got, table)
    reader = lance_file.LanceFileReader(str(path))
    idx = [0, 5, 6, 150, 299]
    assert tables_equal(reader.take_rows(idx).to_table(), table.take(pa.array(idx)))
    check_reads(path, table)
    assert lancelot.LanceFile(path).schema.equals(table.schema)


def test_zero_rows(tmp_path):
    table = make_table("list_struct", "some").slice(0, 0)
    path = tmp_path / "z.lance"
    lancelot.write_table(table, path, version="2.0")
    assert pylance_read(path).num_rows == 0
    assert lancelot.read_table(path).equals(table)
    pylance_write(tmp_path / "pz.lance", table, "2.0")
    assert lancelot.read_table(tmp_path / "pz.lance").num_rows == 0


def test_many_batches_and_metadata(tmp_path):
    schema = pa.schema([pa.field("a", pa.int64(), False, {"k": "v"}), ("s", pa.string())], metadata={"m": "1"})
    batches = [gen_table(schema, 100, "some", seed=i).to_batches()[0] for i in range(7)]
    path = tmp_path / "b.lance"
    lancelot.write_table(iter(batches), path, max_page_bytes=512, version="2.0")
    expected = pa.Table.from_batches(batches)
    got = pylance_read(path)
    assert got.equals(expected)
    assert lance_file.LanceFileReader(str(path)).metadata().schema.equals(schema, check_metadata=True)
    f = lancelot.LanceFile(path)
    assert f.schema.equals(schema, check_metadata=True)
    assert len(f.metadata.columns[0].pages) > 1
    check_reads(path, expected)


def test_views_written_as_plain_types(tmp_path):
    table = pa.table(
        {"s": pa.array(["a", None, "ccc"], pa.string_view()), "b": pa.array([b"x", b"", None], pa.binary_view())}
    )
    path = tmp_path / "v.lance"
    lancelot.write_table(table, path, version="2.0")
    got = pylance_read(path)
    assert got.schema == pa.schema([("s", pa.string()), ("b", pa.binary())])
    assert got.to_pylist() == table.to_pylist()


def test_null_struct_refused_at_2_0(tmp_path):
    table = pa.table({"s": pa.array([{"a": 1}, None], pa.struct([("a", pa.int32())]))})
    with pytest.raises(lancelot.UnsupportedTypeError, match="null struct"):
        lancelot.write_table(table, tmp_path / "x.lance", version="2.0")
    assert not (tmp_path / "x.lance").exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("key", ["packed", "lance-encoding:packed"])
def test_packed_struct_both_ways(tmp_path, key):
    st = pa.struct([("x", pa.int32()), ("y", pa.float64()), ("b", pa.uint8()), ("d", pa.decimal128(9, 2))])
    table = gen_table(pa.schema([pa.field("p", st, True, {key: "true"})]), 500, "none", seed=3)
    theirs, ours = tmp_path / "p.lance", tmp_path / "l.lance"
    pylance_write(theirs, table, "2.0", max_page_bytes=1024)
    check_reads(theirs, table)
    lancelot.write_table(table, ours, max_page_bytes=1024, version="2.0")
    assert len(lancelot.LanceFile(ours).metadata.columns) == 1
    assert pylance_read(ours).equals(table)
    check_reads(ours, table)


def test_packed_struct_with_bool_refused(tmp_path):
    st = pa.struct([("x", pa.int32()), ("b", pa.bool_())])
    table = pa.table({"p": pa.array([{"x": 1, "b": True}], st)}).cast(
        pa.schema([pa.field("p", st, True, {"packed": "true"})])
    )
    with pytest.raises(lancelot.UnsupportedTypeError, match="whole-byte"):
        lancelot.write_table(table, tmp_path / "x.lance", version="2.0")


def test_pylance_dictionary_for_low_cardinality_strings(tmp_path):
    """pylance picks Dictionary (1-based indices, 0 = null) for plain low-cardinality strings."""
    n = 20_000
    rng = np.random.default_rng(0)
    table = pa.table(
        {
            "cat": pa.array(rng.choice(["aa", "bb", "cc"], n), mask=rng.random(n) < 0.1),
            "big": pa.array(["x" * 5000] * 100 + ["y"] * (n - 100)),
            "vv": pa.array([[[1, 2], [3, 4]]] * n, pa.list_(pa.list_(pa.int8(), 2), 2)),
        }
    )
    path = tmp_path / "d.lance"
    pylance_write(path, table, "2.0", max_page_bytes=50_000)
    from lancelot.inspect import inspect_file

    assert "dictionary" in inspect_file(str(path))
    check_reads(path, table)


def test_footer_version_2_0_also_read(tmp_path):
    """2.0 files carry 0.3 in the footer (pylance) or 2.0; both read the same."""
    table = make_table("list_struct", "some")
    path = tmp_path / "v.lance"
    lancelot.write_table(table, path, version="2.0")
    data = bytearray(path.read_bytes())
    assert data[-8:-4] == b"\x00\x00\x03\x00"
    data[-8:-4] = b"\x02\x00\x00\x00"
    other = tmp_path / "v20.lance"
    other.write_bytes(bytes(data))
    f = lancelot.LanceFile(other)
    assert f.version == "2.0" and tables_equal(f.read(), table)


@pytest.mark.parametrize("t", [pa.string(), pa.binary()])
def test_low_cardinality_strings_written_as_dictionary(tmp_path, t):
    n = 5000
    rng = np.random.default_rng(2)
    vals = [v.encode() if t == pa.binary() else v for v in rng.choice(["red", "green", "blue"], n).tolist()]
    table = pa.table({"c": pa.array(vals, t, mask=rng.random(n) < 0.2)})
    path = tmp_path / "c.lance"
    lancelot.write_table(table, path, version="2.0")
    from lancelot.inspect import inspect_file

    assert "ArrayEncoding dictionary" in inspect_file(str(path))
    assert pylance_read(path).equals(table)
    check_reads(path, table)


@pytest.mark.parametrize(
    "t",
    [
        pa.large_list(pa.struct([("f", pa.float32())])),
        pa.list_(pa.int32()),
        pa.list_(pa.list_(pa.string())),
        pa.list_(pa.struct([("l", pa.list_(pa.int8()))])),
    ],
)
def test_lists_with_no_items(tmp_path, t):
    """Lists that are all empty or null leave the item columns without values: pylance still
    needs a (zero-row) page in each of them, as its own writer makes."""
    table = pa.table({"c": pa.array([[], None, []] * 100, t)})
    path = tmp_path / "e.lance"
    lancelot.write_table(table, path, version="2.0")
    assert pylance_read(path).equals(table)
    check_reads(path, table)
    empty = tmp_path / "z.lance"
    lancelot.write_table(table.slice(0, 0), empty, version="2.0")
    assert pylance_read(empty).num_rows == 0
