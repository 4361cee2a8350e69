"""Datasets at file version 2.3 (pylance's unstable "next") of every Arrow type lancelot writes, and of the
encoding choices field metadata asks for, written by each library (two fragments: a write and an append cut by
``max_rows_per_file``) and read by both: ``to_table`` and ``take`` return the same table, types and values, and
the written one.  Packed structs are checked at every version (each library once read the other's as nulls)."""

from __future__ import annotations

import decimal
import warnings

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot

LIBS = {"pylance": lance, "lancelot": lancelot}
N = 900
ROWS = [0, 5, 499, 500, 899, 17, 650]


def _nulls(arr: pa.Array, rng: np.random.Generator) -> pa.Array:
    return pa.array(arr.to_pylist(), arr.type, mask=rng.random(len(arr)) < 0.1)


def _columns() -> dict[str, pa.Array]:
    """One column per type and shape (nulls in most), each exercising a different encoding path."""
    rng = np.random.default_rng(0)
    c: dict[str, pa.Array] = {}
    for t, lo, hi in [
        (pa.int8(), -100, 100),
        (pa.int16(), -3000, 3000),
        (pa.int32(), -(10**6), 10**6),
        (pa.int64(), -(10**12), 10**12),
        (pa.uint8(), 0, 200),
        (pa.uint16(), 0, 60000),
        (pa.uint32(), 0, 4 * 10**9),
        (pa.uint64(), 0, 2**62),
    ]:
        c[f"n_{t}"] = _nulls(pa.array(rng.integers(lo, hi, N), t), rng)
        c[f"small_{t}"] = pa.array(rng.integers(0, 5, N), t)
    c["constant"] = pa.array([7] * N, pa.int64())
    c["runs"] = pa.array(np.repeat(np.arange(N // 100), 100).astype(np.int32))
    c["sorted"] = pa.array(np.sort(rng.integers(0, 10**9, N)))
    c["f16"] = _nulls(pa.array(rng.random(N).astype(np.float16), pa.float16()), rng)
    c["f32"] = _nulls(pa.array(rng.random(N).astype(np.float32)), rng)
    c["f64"] = _nulls(pa.array(rng.random(N)), rng)
    c["bool"] = _nulls(pa.array(rng.random(N) < 0.3), rng)
    c["all_null"] = pa.array([None] * N, pa.int32())
    c["null"] = pa.nulls(N)
    c["str"] = _nulls(pa.array([f"s{x}" * (x % 7) for x in rng.integers(0, 1000, N)]), rng)
    c["large_str"] = _nulls(pa.array([f"v{x}" for x in rng.integers(0, 1000, N)], pa.large_string()), rng)
    c["few_str"] = _nulls(pa.array([f"cat{x}" for x in rng.integers(0, 4, N)]), rng)
    c["urls"] = _nulls(pa.array([f"https://example.com/p/{i % 300}/item{i}" for i in range(N)]), rng)
    c["wide_str"] = pa.array(["x" * (3000 + i % 3) for i in range(N)])
    c["bin"] = _nulls(pa.array([bytes(rng.integers(0, 256, i % 20, dtype=np.uint8)) for i in range(N)]), rng)
    c["large_bin"] = pa.array([bytes(rng.integers(0, 256, 300, dtype=np.uint8)) for i in range(N)], pa.large_binary())
    c["fsb"] = _nulls(pa.array([bytes([i % 256]) * 16 for i in range(N)], pa.binary(16)), rng)
    cents = [decimal.Decimal(int(x)) / 100 for x in rng.integers(-(10**6), 10**6, N)]
    c["dec128"] = _nulls(pa.array(cents, pa.decimal128(12, 2)), rng)
    c["dec256"] = _nulls(pa.array(cents, pa.decimal256(40, 2)), rng)
    c["date32"] = _nulls(pa.array(rng.integers(0, 20000, N).astype(np.int32)).cast(pa.date32()), rng)
    c["date64"] = pa.array(rng.integers(0, 20000, N) * 86_400_000, pa.date64())
    c["ts_us_utc"] = _nulls(pa.array(rng.integers(0, 10**15, N), pa.timestamp("us", tz="UTC")), rng)
    c["ts_ns"] = pa.array(rng.integers(0, 10**18, N), pa.timestamp("ns"))
    c["time32"] = pa.array(rng.integers(0, 86400, N).astype(np.int32), pa.time32("s"))
    c["time64"] = _nulls(pa.array(rng.integers(0, 86_400 * 10**6, N), pa.time64("us")), rng)
    c["duration"] = pa.array(rng.integers(0, 10**9, N), pa.duration("ms"))
    c["list"] = _nulls(pa.array([list(range(i % 5)) for i in range(N)], pa.list_(pa.int32())), rng)
    c["large_list_str"] = _nulls(
        pa.array([[f"a{j}" for j in range(i % 4)] for i in range(N)], pa.large_list(pa.string())), rng
    )
    c["fsl"] = _nulls(pa.FixedSizeListArray.from_arrays(pa.array(rng.random(N * 8).astype(np.float32)), 8), rng)
    items = pa.array([None if i % 7 == 0 else i % 100 for i in range(N * 3)], pa.int8())
    c["fsl_null_items"] = pa.FixedSizeListArray.from_arrays(items, 3)
    c["vectors"] = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(N * 64).astype(np.float32)), 64)
    c["struct"] = _nulls(
        pa.StructArray.from_arrays(
            [pa.array(rng.integers(0, 100, N).astype(np.int32)), pa.array([f"q{i}" for i in range(N)])],
            names=["a", "b"],
        ),
        rng,
    )
    c["nested"] = pa.array(
        [
            {"x": [{"y": i, "z": None if i % 3 else "t"}] * (i % 3), "w": i if i % 4 else None} if i % 9 else None
            for i in range(N)
        ]
    )
    c["map"] = _nulls(
        pa.array([[(f"k{j}", j) for j in range(i % 3)] for i in range(N)], pa.map_(pa.string(), pa.int64())), rng
    )
    c["list_list"] = _nulls(pa.array([[[i] * (j % 2) for j in range(i % 3)] for i in range(N)]), rng)
    c["list_struct"] = _nulls(pa.array([[{"p": j, "q": float(j)} for j in range(i % 3)] for i in range(N)]), rng)
    c["list_fsl"] = pa.array([[[1.0, 2.0]] * (i % 3) for i in range(N)], pa.list_(pa.list_(pa.float32(), 2)))
    c["json"] = pa.array([None if i % 5 == 0 else f'{{"a":{i}}}' for i in range(N)], pa.json_())
    c["uuid"] = pa.ExtensionArray.from_storage(
        pa.uuid(), pa.array([bytes([i % 256]) * 16 for i in range(N)], pa.binary(16))
    )
    tensors = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(N * 4).astype(np.float32)), 4)
    c["tensor"] = pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(pa.float32(), (2, 2)), tensors)
    return c


def _metadata_columns() -> list[pa.field]:
    """Columns whose field metadata chooses the encoding (compression, byte stream split, structural encoding)."""
    rng = np.random.default_rng(1)
    urls = pa.array([None if i % 11 == 0 else f"https://example.com/path/{i % 300}/item{i}" for i in range(N)])
    f32 = pa.array(rng.normal(size=N).astype(np.float32))
    i64 = pa.array(rng.integers(0, 10**6, N))
    lists = pa.array([list(range(i % 4)) for i in range(N)])
    cases = [
        ("zstd_str", urls, {"lance-encoding:compression": "zstd"}),
        ("lz4_str", urls, {"lance-encoding:compression": "lz4"}),
        ("zstd_9", i64, {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "9"}),
        ("none_str", urls, {"lance-encoding:compression": "none"}),
        ("bss_on", f32, {"lance-encoding:bss": "on"}),
        ("bss_off", f32, {"lance-encoding:bss": "off"}),
        ("fullzip_i64", i64, {"lance-encoding:structural-encoding": "fullzip"}),
        ("fullzip_str", urls, {"lance-encoding:structural-encoding": "fullzip"}),
        ("miniblock_str", urls, {"lance-encoding:structural-encoding": "miniblock"}),
        ("fullzip_list", lists, {"lance-encoding:structural-encoding": "fullzip"}),
        ("rle", pa.array(np.repeat(np.arange(9), 100)), {"lance-encoding:rle-threshold": "0.9"}),
        ("dict_divisor", urls, {"lance-encoding:dict-divisor": "1"}),
        (
            "zstd_lists",
            pa.array([[f"w{j}" for j in range(i % 3)] for i in range(N)]),
            {"lance-encoding:compression": "zstd"},
        ),
    ]
    return [(pa.field(name, arr.type, metadata=md), arr) for name, arr, md in cases]


def _write(lib: str, path: str, table: pa.Table, version: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 2.3's UnstableVersionWarning
        LIBS[lib].write_dataset(table.slice(0, 500), path, data_storage_version=version)
        LIBS[lib].write_dataset(table.slice(500), path, mode="append", max_rows_per_file=250)
    return path


def _check_both_read(path: str, table: pa.Table, version: str) -> None:
    for mod in LIBS.values():
        ds = mod.dataset(path)
        assert ds.data_storage_version == version
        assert len(ds.get_fragments()) == 3
        got = ds.to_table()
        assert got.schema == table.schema
        for name in table.column_names:
            assert got.column(name).equals(table.column(name)), (mod.__name__, name)
        assert ds.take(ROWS).equals(table.take(ROWS)), mod.__name__


@pytest.fixture(scope="module")
def types_table() -> pa.Table:
    return pa.table(_columns())


@pytest.mark.parametrize("writer", list(LIBS))
def test_every_type_at_2_3_both_ways(tmp_path, types_table, writer):
    _check_both_read(_write(writer, str(tmp_path / "ds"), types_table, "2.3"), types_table, "2.3")


@pytest.mark.parametrize("writer", list(LIBS))
def test_metadata_encodings_at_2_3_both_ways(tmp_path, writer):
    fields, arrays = zip(*_metadata_columns())
    table = pa.Table.from_arrays(list(arrays), schema=pa.schema(list(fields)))
    _check_both_read(_write(writer, str(tmp_path / "ds"), table, "2.3"), table, "2.3")


def _packed_table(version: str) -> pa.Table:
    n = 40
    mask = None if version == "2.0" else pa.array([i % 7 == 3 for i in range(n)])  # 2.0 has no struct validity
    s = pa.StructArray.from_arrays(
        [pa.array(range(n)), pa.array(np.arange(n, dtype=np.float32))], names=["a", "b"], mask=mask
    )
    packed = pa.field("c", s.type, metadata={"lance-encoding:packed": "true"})
    return pa.Table.from_arrays(
        [pa.array(range(n)), s, pa.array(range(n))],
        schema=pa.schema([pa.field("x", pa.int64()), packed, pa.field("y", pa.int64())]),
    )


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2", "2.3"])
@pytest.mark.parametrize("writer", list(LIBS))
def test_packed_struct_fields_as_pylance(tmp_path, writer, version):
    """A packed struct owns one column: ``DataFile.fields`` lists it, not its children, as pylance's."""
    table = _packed_table(version)
    path = str(tmp_path / "ds")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        LIBS[writer].write_dataset(table, path, data_storage_version=version)
        LIBS[writer].write_dataset(table, path, mode="append")
    for mod in LIBS.values():
        ds = mod.dataset(path)
        assert ds.to_table().equals(pa.concat_tables([table, table])), mod.__name__
        assert ds.take([3, 41, 0]).equals(pa.concat_tables([table, table]).take([3, 41, 0])), mod.__name__
    files = [f for frag in lance.dataset(path).get_fragments() for f in frag.data_files()]
    assert [(f.fields, f.column_indices) for f in files] == [([0, 1, 4], [0, 1, 2])] * 2


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_dropping_a_packed_struct_child(tmp_path, version):
    """After ``drop_columns(["c.a"])`` lancelot reads the other children's values (pylance 14 decodes the packed
    row from its start and returns another child's bytes); both libraries leave the same fields and files."""
    table = _packed_table(version)
    paths = {}
    for lib, mod in LIBS.items():
        paths[lib] = str(tmp_path / lib)
        mod.write_dataset(table, paths[lib], data_storage_version=version)
        mod.dataset(paths[lib]).drop_columns(["c.a"])
    c = table["c"].combine_chunks()
    kept = pa.StructArray.from_arrays([c.field("b")], ["b"], mask=c.is_null() if c.null_count else None)
    expected = table.set_column(1, "c", kept)
    for path in paths.values():
        got = lancelot.dataset(path).to_table()
        assert got.column("c").to_pylist() == expected.column("c").to_pylist()
        assert got.drop_columns(["c"]).equals(table.drop_columns(["c"]))
    twins = [lance.dataset(p) for p in paths.values()]
    assert twins[0].schema == twins[1].schema
    files = [[(f.fields, f.column_indices) for g in ds.get_fragments() for f in g.data_files()] for ds in twins]
    assert files[0] == files[1]
