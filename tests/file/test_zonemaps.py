"""Zone maps (lancelot/zonemaps.py): statistics, serialization, conservative pruning, writer integration."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lancelot.errors import CorruptFileError
from lancelot.zonemap_codec import MAGIC_V2
from lancelot.zonemap_stats import MAX_BOUND_BYTES
from lancelot.zonemaps import MAGIC, ZoneMapBuilder, parse_zone_maps

RNG_SEED = 1234


def _build(table: pa.Table, rows_per_zone: int, chunk: int | None = None):
    b = ZoneMapBuilder(table.schema, rows_per_zone=rows_per_zone)
    for batch in table.to_batches(max_chunksize=chunk):
        b.update(batch)
    return b.finish()


def _mixed_table(n: int, seed: int = RNG_SEED) -> pa.Table:
    rng = np.random.default_rng(seed)
    ints = rng.integers(-1000, 1000, n)
    ints_mask = rng.random(n) < 0.1
    ints_mask[2000:2500] = True  # an all-null stretch
    floats = rng.normal(size=n)
    floats[rng.random(n) < 0.01] = np.nan
    words = np.array(["apple", "banana", "cherry", "date", "elder" * 20, "fig", "\u00e9clair", ""])
    strs = words[rng.integers(0, len(words), n)]
    inner = pa.array(rng.integers(0, 50, n))
    struct = pa.StructArray.from_arrays([inner], names=["y"], mask=pa.array(rng.random(n) < 0.2))
    return pa.table(
        {
            "i": pa.array(ints, mask=ints_mask),
            "f": pa.array(floats),
            "s": pa.array(strs.tolist()),
            "sorted": pa.array(np.arange(n, dtype=np.int64)),
            "st": struct,
            "b": pa.array(rng.random(n) < 0.3),
            "ts": pa.array(np.sort(rng.integers(0, 10**12, n)), pa.timestamp("us", "UTC")),
        }
    )


#: pyarrow's comparison function of each filter operator
_COMPARE = {"=": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}


def _passes(table: pa.Table, f) -> np.ndarray:
    """The rows passing filter f, evaluated with pyarrow (Spark's semantics for these cases)."""
    name, op = f[0], f[1]
    col = table.column(name[0]).combine_chunks() if isinstance(name, tuple) else table.column(name)
    if isinstance(name, tuple):
        col = col.flatten()[col.type.get_field_index(name[1])]
    if op in _COMPARE:
        r = pc.call_function(_COMPARE[op], [col, pa.scalar(f[2], col.type)])
    elif op == "in":
        r = pc.is_in(col, pa.array(f[2], col.type))
    elif op == "is_null":
        r = pc.is_null(col)
    elif op == "is_not_null":
        r = pc.is_valid(col)
    elif op == "starts_with":
        r = pc.starts_with(col, f[2])
    else:
        raise AssertionError(op)
    return pc.fill_null(r, False).to_numpy(zero_copy_only=False)


def _covered(ranges, n) -> np.ndarray:
    m = np.zeros(n, dtype=bool)
    for a, b in ranges:
        m[a:b] = True
    return m


def test_stats_match_numpy_per_zone():
    rng = np.random.default_rng(RNG_SEED)
    vals = rng.integers(-(10**6), 10**6, 10_000)
    nulls = rng.random(10_000) < 0.05
    t = pa.table({"x": pa.array(vals, mask=nulls)})
    zm = parse_zone_maps(_build(t, 1000, chunk=333))
    col = zm.column("x")
    assert zm.num_zones == 10 and zm.num_rows == 10_000
    for z in range(10):
        v, m = vals[z * 1000 : (z + 1) * 1000], nulls[z * 1000 : (z + 1) * 1000]
        assert col.min[z].as_py() == v[~m].min()
        assert col.max[z].as_py() == v[~m].max()
        assert col.nulls[z] == m.sum()


def test_batch_boundaries_do_not_change_the_result():
    t = _mixed_table(9_999)
    a = _build(t, 1024, chunk=None)
    b = _build(t, 1024, chunk=100)
    c = _build(t, 1024, chunk=1024)
    assert a == b == c
    assert a.startswith(MAGIC_V2)
    zm = parse_zone_maps(a)
    assert list(zm.zone_rows) == [1024] * 9 + [9_999 - 9 * 1024]


@pytest.mark.parametrize("seed", range(6))
def test_pruning_never_drops_a_matching_row(seed):
    t = _mixed_table(6_000, seed)
    zm = parse_zone_maps(_build(t, 500, chunk=777))
    rng = np.random.default_rng(seed)
    filters = []
    for _ in range(25):
        filters += [
            ("i", ["<", "<=", ">", ">=", "=", "!="][rng.integers(0, 6)], int(rng.integers(-1100, 1100))),
            ("f", ["<", ">", "="][rng.integers(0, 3)], float(rng.normal())),
            ("sorted", [">=", "<"][rng.integers(0, 2)], int(rng.integers(0, 6000))),
            (("st", "y"), ["=", ">", "<="][rng.integers(0, 3)], int(rng.integers(0, 50))),
            (
                "s",
                ["=", "<", ">", "starts_with"][rng.integers(0, 4)],
                ["banana", "d", "elder", "\u00e9", ""][rng.integers(0, 5)],
            ),
            ("i", "in", [int(x) for x in rng.integers(-1000, 1000, rng.integers(1, 80))]),
        ]
    filters += [("i", "is_null"), ("i", "is_not_null"), ("b", "=", True), ("s", "starts_with", "elder" * 20 + "x")]
    for f in filters:
        ranges = zm.row_ranges_matching([f])
        assert not (_passes(t, f) & ~_covered(ranges, t.num_rows)).any(), f
    # conjunctions prune at least as much as each part, and still keep every matching row
    f1, f2 = ("sorted", ">=", 1000), ("sorted", "<", 1600)
    both = _covered(zm.row_ranges_matching([f1, f2]), t.num_rows)
    assert both.sum() == 1000 and both[1000:1600].all()


def test_sorted_column_prunes_to_the_zones_that_hold_the_values():
    t = pa.table({"k": pa.array(np.arange(100_000, dtype=np.int32))})
    zm = parse_zone_maps(_build(t, 4096))
    assert zm.row_ranges_matching([("k", ">=", 50_000), ("k", "<", 50_010)]) == [(49152, 53248)]
    assert zm.row_ranges_matching([("k", "=", -5)]) == []
    assert zm.row_ranges_matching([("k", "in", [10, 99_999])]) == [(0, 4096), (98304, 100_000)]
    assert zm.row_ranges_matching([]) == [(0, 100_000)]


def test_null_and_nan_zones():
    x = np.arange(3000, dtype=np.float64)
    x[1500] = np.nan
    mask = np.zeros(3000, dtype=bool)
    mask[:1000] = True  # zone 0 is all null
    t = pa.table({"x": pa.array(x, mask=mask)})
    zm = parse_zone_maps(_build(t, 1000))
    assert zm.row_ranges_matching([("x", "is_null")]) == [(0, 1000)]
    assert zm.row_ranges_matching([("x", "is_not_null")]) == [(1000, 3000)]
    # NaN is above every number in Spark: the NaN zone must survive "x > 10**9" and "x < -1"
    assert zm.row_ranges_matching([("x", ">", 1e9)]) == [(1000, 2000)]
    assert zm.row_ranges_matching([("x", "<", -1.0)]) == [(1000, 2000)]
    # a NaN filter value cannot be decided from bounds that skip NaN
    assert zm.row_ranges_matching([("x", "<", float("nan"))]) == [(0, 3000)]


def test_long_strings_keep_conservative_bounds():
    long_a, long_b = "a" * 200 + "z", "b" * 200
    t = pa.table({"s": pa.array([long_a] * 10 + [long_b] * 10)})
    zm = parse_zone_maps(_build(t, 10))
    col = zm.column("s")
    assert all(len(v) <= MAX_BOUND_BYTES for v in col.min.to_pylist() + col.max.to_pylist())
    assert zm.row_ranges_matching([("s", "=", long_a)]) == [(0, 10)]
    assert zm.row_ranges_matching([("s", "=", long_b)]) == [(10, 20)]
    assert zm.row_ranges_matching([("s", "starts_with", "b" * 100)]) == [(10, 20)]
    assert zm.row_ranges_matching([("s", ">", "a" * 300)]) == [(0, 20)]
    t2 = pa.table({"s": pa.array([b"\xff" * 100] * 4, pa.binary())})
    zm2 = parse_zone_maps(_build(t2, 4))
    assert zm2.column("s").max[0].as_py() is None  # no byte string of <= 64 bytes bounds it: unbounded
    assert zm2.row_ranges_matching([("s", ">", b"\xff" * 200)]) == [(0, 4)]


def test_types_with_statistics_and_without():
    n = 8
    t = pa.table(
        {
            "u8": pa.array(range(n), pa.uint8()),
            "u64": pa.array([2**64 - 1 - i for i in range(n)], pa.uint64()),
            "h": pa.array(np.arange(n, dtype=np.float16)),
            "dec": pa.array([Decimal(i) / 4 for i in range(n)], pa.decimal128(10, 2)),
            "d32": pa.array([dt.date(2020, 1, 1 + i) for i in range(n)], pa.date32()),
            "t64": pa.array(range(n), pa.time64("us")),
            "dur": pa.array(range(n), pa.duration("ms")),
            "ts": pa.array(range(n), pa.timestamp("ns")),
            "ls": pa.array([str(i) for i in range(n)], pa.large_string()),
            "fsb": pa.array([bytes([i, i]) for i in range(n)], pa.binary(2)),
            "dict": pa.array([f"v{i % 3}" for i in range(n)]).dictionary_encode(),
            "bool": pa.array([i % 2 == 0 for i in range(n)]),
            "lst": pa.array([[i] for i in range(n)]),
            "mp": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
            "nul": pa.nulls(n),
        }
    )
    zm = parse_zone_maps(_build(t, 4))
    have = {".".join(p) for p in zm.columns}
    assert have == {"u8", "u64", "h", "dec", "d32", "t64", "dur", "ts", "ls", "fsb", "dict", "bool"}
    assert zm.row_ranges_matching([("u64", ">", 2**64 - 3)]) == [(0, 4)]
    assert zm.row_ranges_matching([("u8", ">", 300)]) == [(0, 8)]  # out of the type's range: no pruning
    assert zm.row_ranges_matching([("dec", ">=", Decimal("1.25"))]) == [(4, 8)]
    assert zm.row_ranges_matching([("d32", "<", dt.date(2020, 1, 3))]) == [(0, 4)]
    assert zm.row_ranges_matching([("dict", "=", "v2")]) == [(0, 8)]
    assert zm.row_ranges_matching([("ls", "=", "6")]) == [(4, 8)]
    assert zm.row_ranges_matching([("fsb", "=", b"\x01\x01")]) == [(0, 4)]
    assert zm.row_ranges_matching([("h", ">", 5.0)]) == [(4, 8)]
    assert zm.row_ranges_matching([("dur", "<", dt.timedelta(milliseconds=2))]) == [(0, 4)]
    assert zm.row_ranges_matching([("lst", "=", 1)]) == [(0, 8)]  # no statistics: no pruning
    assert zm.row_ranges_matching([("missing", "=", 1)]) == [(0, 8)]


def test_timestamps_compare_only_with_matching_zone_awareness():
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    t = pa.table(
        {
            "tz": pa.array([base + dt.timedelta(days=i) for i in range(8)], pa.timestamp("us", "UTC")),
            "ntz": pa.array([base.replace(tzinfo=None) + dt.timedelta(days=i) for i in range(8)], pa.timestamp("us")),
        }
    )
    zm = parse_zone_maps(_build(t, 4))
    later = base + dt.timedelta(days=5)
    assert zm.row_ranges_matching([("tz", ">", later)]) == [(4, 8)]
    assert zm.row_ranges_matching([("ntz", ">", later.replace(tzinfo=None))]) == [(4, 8)]
    assert zm.row_ranges_matching([("tz", ">", later.replace(tzinfo=None))]) == [(0, 8)]
    assert zm.row_ranges_matching([("ntz", ">", later)]) == [(0, 8)]


def test_empty_file_and_zero_row_batches():
    schema = pa.schema([("x", pa.int64())])
    b = ZoneMapBuilder(schema)
    b.update(pa.RecordBatch.from_pydict({"x": []}, schema=schema))
    zm = parse_zone_maps(b.finish())
    assert zm.num_rows == 0 and zm.num_zones == 0
    assert zm.row_ranges_matching([("x", ">", 1)]) == []


def test_corrupt_buffers_raise_corrupt_file_error():
    good = _build(pa.table({"x": pa.array(range(100))}), 10)
    raw = _build(pa.table({"x": pa.array(range(3))}), 10)  # small: stored without zstd
    assert raw[len(MAGIC_V2)] == 0
    bad_ones = [b"", b"nonsense", MAGIC, MAGIC + b"\x00" * 10, MAGIC_V2, MAGIC_V2 + b"\x07" + raw[19:]]
    bad_ones += [good[: len(good) // 2], good[:-1], raw[:-1], raw + b"\x00", MAGIC_V2 + b"\x01" + b"\x00" * 10]
    for bad in bad_ones:
        with pytest.raises(CorruptFileError):
            parse_zone_maps(bad)
    with pytest.raises(ValueError):
        ZoneMapBuilder(pa.schema([]), rows_per_zone=0)


def _format1(zm) -> bytes:
    """The zone maps as format 1 wrote them (MAGIC + an Arrow IPC stream), for the reading of older files."""
    import json

    arrays, names = [pa.array(zm.zone_rows, pa.int64())], ["rows"]
    for k, c in enumerate(zm.columns.values()):
        arrays += [c.min, c.max, pa.array(c.nulls, pa.int64())]
        names += [f"c{k}.min", f"c{k}.max", f"c{k}.nulls"]
    meta = {
        "lancelot.columns": json.dumps([list(p) for p in zm.columns]),
        "lancelot.rows_per_zone": str(zm.rows_per_zone),
    }
    table = pa.Table.from_arrays(arrays, names=names).replace_schema_metadata(meta)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return MAGIC + sink.getvalue().to_pybytes()


def test_format1_buffers_still_parse_and_format2_is_smaller():
    """Files written before format 2 hold Arrow IPC zone maps: they parse to the same bounds."""
    t = _mixed_table(9_999)
    new = _build(t, 1024)
    zm = parse_zone_maps(new)
    old = _format1(zm)
    back = parse_zone_maps(old)
    assert list(back.zone_rows) == list(zm.zone_rows) and back.rows_per_zone == zm.rows_per_zone
    assert back.columns.keys() == zm.columns.keys()
    for p, c in zm.columns.items():
        o = back.columns[p]
        assert o.min.equals(c.min) and o.max.equals(c.max) and np.array_equal(o.nulls, c.nulls), p
    assert len(new) < len(old) / 2
    one = _build(t.slice(0, 25), 4096)  # one zone: a few hundred bytes, not format 1's kilobytes
    assert len(one) < 400 < len(_format1(parse_zone_maps(one)))


def test_writer_stores_zone_maps_and_pylance_still_reads_the_file(tmp_path):
    import lancelot

    lance_file = pytest.importorskip("lance.file")
    t = _mixed_table(20_000)
    # version 2.0 cannot hold null structs: keep the struct column's parents valid
    t = t.set_column(
        t.schema.get_field_index("st"),
        "st",
        pa.StructArray.from_arrays([t.column("st").combine_chunks().field(0)], names=["y"]),
    )
    p = str(tmp_path / "z.lance")
    lancelot.write_table(t, p)
    f = lancelot.LanceFile(p)
    zm = f.zone_maps()
    assert zm is not None and zm.num_rows == t.num_rows
    assert zm.row_ranges_matching([("sorted", "<", 10)]) == [(0, zm.rows_per_zone)]
    got = lance_file.LanceFileReader(p).read_all().to_table()
    assert got.drop_columns(["f"]).equals(t.drop_columns(["f"]))
    assert np.array_equal(got["f"].to_numpy(), t["f"].to_numpy(), equal_nan=True)  # NaN != NaN in equals()


@pytest.mark.parametrize("kind", ["int8", "uint64", "float32", "float64", "date32", "timestamp", "duration"])
def test_numpy_bounds_equal_the_grouped_bounds(kind):
    from lancelot.zonemap_stats import numeric_zone_stats, prepare

    rng = np.random.default_rng(5)
    n, rpz = 2500, 300  # a partial last zone
    raw = rng.integers(-100, 100, n)
    mask = rng.random(n) < 0.2
    mask[600:900] = True  # an all-null zone
    types = {
        "int8": pa.int8(),
        "uint64": pa.uint64(),
        "float32": pa.float32(),
        "float64": pa.float64(),
        "date32": pa.date32(),
        "timestamp": pa.timestamp("ns", "UTC"),
        "duration": pa.duration("s"),
    }
    t = types[kind]
    if kind.startswith("float"):
        vals = raw.astype(np.float64)
        vals[1500] = np.nan
        arr = pa.array(vals, mask=mask).cast(t)
    elif kind == "uint64":
        arr = pa.array((raw + 100).astype(np.uint64) + np.uint64(2**63), mask=mask)
    else:
        arr = pa.array(raw.astype(np.int32 if kind == "date32" else np.int64), mask=mask).cast(t)
    arr = prepare(arr)
    nz = -(-n // rpz)
    zone = pa.array(np.arange(n) // rpz)
    fast = numeric_zone_stats(arr, rpz, nz)
    slow = ZoneMapBuilder._zone_stats(arr, zone, nz)
    assert fast is not None
    assert fast[0].equals(slow[0]) and fast[1].equals(slow[1])
    assert np.array_equal(fast[2], slow[2])


@pytest.mark.parametrize("kernel", [True, False])
def test_per_zone_string_bounds_equal_the_grouped_bounds(kernel, monkeypatch):
    import lancelot.zonemaps as zm

    monkeypatch.setattr(zm, "KERNEL_MIN_ZONES", 1 if kernel else 10**9)
    rng = np.random.default_rng(6)
    n, rpz = 2500, 300
    words = np.array(["", "a", "b" * 40, "zz", "\u00e9t\u00e9", "m" * 70])
    mask = rng.random(n) < 0.2
    mask[600:900] = True  # an all-null zone
    for t in (pa.string(), pa.large_binary()):
        arr = pa.array(words[rng.integers(0, len(words), n)], mask=mask).cast(t)
        nz = -(-n // rpz)
        zone = pa.array(np.arange(n) // rpz)
        fast = ZoneMapBuilder._zone_stats(arr, zone, nz, rpz)
        slow = ZoneMapBuilder._zone_stats(arr, zone, nz)
        assert fast[0].equals(slow[0]) and fast[1].equals(slow[1]) and fast[0].null_count == 1
        assert np.array_equal(fast[2], slow[2])


def test_small_decimal_bounds():
    from lancelot.zonemap_stats import numeric_zone_stats

    vals = [None if i % 7 == 0 else (i * 37 % 1000 - 500) for i in range(1000)]
    arr = pa.array([None if v is None else Decimal(v) / 100 for v in vals], pa.decimal128(12, 2))
    lo, hi, nulls = numeric_zone_stats(arr, 300, 4)
    for k in range(4):
        part = arr.slice(k * 300, 300)
        mm = pc.min_max(part)
        assert lo[k].as_py() == mm["min"].as_py() and hi[k].as_py() == mm["max"].as_py()
        assert nulls[k] == part.null_count


@pytest.mark.parametrize("kind", ["int16", "uint64", "float64", "date32", "timestamp"])
def test_dense_bounds_equal_the_grouped_bounds(kind):
    """Columns without nulls take the 2-D numpy path; a partial last zone and NaN zones included."""
    from lancelot.zonemap_stats import numeric_zone_stats, prepare

    rng = np.random.default_rng(11)
    n, rpz = 2500, 300
    raw = rng.integers(-1000, 1000, n)
    types = {
        "int16": pa.int16(),
        "uint64": pa.uint64(),
        "float64": pa.float64(),
        "date32": pa.date32(),
        "timestamp": pa.timestamp("us"),
    }
    if kind == "float64":
        vals = raw.astype(np.float64)
        vals[[105, 2450]] = np.nan  # NaN in the first and in the partial last zone
        arr = pa.array(vals)
    elif kind == "uint64":
        arr = pa.array((raw + 1000).astype(np.uint64) + np.uint64(2**63))
    else:
        arr = pa.array(raw.astype(np.int32 if kind == "date32" else np.int64)).cast(types[kind])
    arr = prepare(arr).slice(100)  # a sliced array: the offset must be honoured
    n = len(arr)
    nz = -(-n // rpz)
    fast = numeric_zone_stats(arr, rpz, nz)
    slow = ZoneMapBuilder._zone_stats(arr, pa.array(np.arange(n) // rpz), nz)
    assert fast is not None and fast[0].type == arr.type
    assert fast[0].equals(slow[0]) and fast[1].equals(slow[1])
    assert np.array_equal(fast[2], slow[2]) and not fast[2].any()
    if kind == "float64":
        assert fast[0].null_count == 2


@pytest.mark.parametrize("kernel", [True, False])
@pytest.mark.parametrize("t", [pa.binary(), pa.large_binary(), pa.binary(3)])
def test_string_kernel_bounds_on_sliced_and_fixed_width(t, kernel, monkeypatch):
    import lancelot.zonemaps as zm

    monkeypatch.setattr(zm, "KERNEL_MIN_ZONES", 1 if kernel else 10**9)
    rng = np.random.default_rng(12)
    n, rpz = 1300, 128
    alphabet = np.array([b"abc", b"ab\x00", b"\xff\xff\xff", b"aaa", b"zzz", b"ab\x01"], dtype=object)
    vals = list(alphabet[rng.integers(0, len(alphabet), n)])
    if t != pa.binary(3):
        vals = [v[: rng.integers(0, 4)] for v in vals]  # prefixes: shorter sorts first
    mask = rng.random(n) < 0.1
    mask[263:391] = True  # zone 2 of the slice is all null
    arr = pa.array(vals, t, mask=mask).slice(7, 1200)
    nz = -(-len(arr) // rpz)
    zone = pa.array(np.arange(len(arr)) // rpz)
    fast = ZoneMapBuilder._zone_stats(arr, zone, nz, rpz)
    slow = ZoneMapBuilder._zone_stats(arr, zone, nz)
    assert fast[0].equals(slow[0]) and fast[1].equals(slow[1])
    assert np.array_equal(fast[2], slow[2]) and fast[0].null_count >= 1


def test_written_file_zone_bounds_of_many_zones(tmp_path):
    """A file large enough for the numba string kernel and the dense numeric path: every zone's bounds
    equal pyarrow's min_max of that zone; the file still reads back in pylance."""
    from lance import file as lance_file

    import lancelot

    rng = np.random.default_rng(13)
    n = 20 * 4096 + 77
    words = np.array([f"w{i:03d}" * (i % 5 + 1) for i in range(300)])
    t = pa.table(
        {
            "s": pa.array(words[rng.integers(0, 300, n)]),
            "i": pa.array(rng.integers(-5, 10**6, n)),
            "d": pa.array([Decimal(int(v)) / 100 for v in rng.integers(-999, 999, n)], pa.decimal128(10, 2)),
        }
    )
    p = str(tmp_path / "zones.lance")
    lancelot.write_table(t, p, version="2.2")
    zm = lancelot.LanceFile(p).zone_maps()
    assert zm is not None and zm.num_zones == 21
    for name in ("s", "i", "d"):
        c = zm.columns[(name,)]
        for k in range(zm.num_zones):
            part = t[name].slice(k * zm.rows_per_zone, zm.rows_per_zone)
            mm = pc.min_max(part)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if name == "s":
                lo, hi = lo.encode(), hi.encode()
            assert c.min[k].as_py() == lo and c.max[k].as_py() == hi, (name, k)
        assert not c.nulls.any()
    assert lance_file.LanceFileReader(p).read_all().to_table().equals(t)


def test_string_bounds_switch_to_the_kernel_after_warm_rows():
    """A fresh process: small calls stay on numpy (no numba import); once WARM_ROWS rows went through
    the numpy path the kernel is prepared in the background, and its bounds equal numpy's."""
    import subprocess
    import sys

    code = (
        "import numpy as np, pyarrow as pa\n"
        "from lancelot import zonemap_bounds as zb\n"
        "from lancelot.util import jit\n"
        "zb.WARM_ROWS = 50_000\n"
        "a = pa.array([str(x) for x in np.random.default_rng(5).integers(0, 10**9, 30_000)])\n"
        "first = zb.string_zone_bounds(a, 4096, 8)\n"
        "assert zb.HOT.thread is None and not jit.state['numba_loaded']\n"
        "zb.string_zone_bounds(a, 4096, 8)\n"
        "assert zb.HOT.thread is not None\n"
        "zb.HOT.thread.join()\n"
        "assert zb.HOT.ready()\n"
        "kernel = zb.string_zone_bounds(a, 4096, 8)\n"
        "assert all(x.equals(y) for x, y in zip(first[:2], kernel[:2]))\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_format2_round_trips_sliced_bounds_of_every_kind():
    """zonemap_codec stores what it is given: sliced arrays, nulls, every bounds type the builder makes."""
    from lancelot.zonemap_codec import ColumnZones, decode, encode

    n = 4
    arrays = [
        pa.array([b"xx", None, b"abc", b"", b"zz" * 40], pa.binary()),
        pa.array([True, None, False, True, False]),
        pa.array([1, None, 3, 4, 5], pa.decimal256(40, 2)),
        pa.array([1, None, 3, 4, 5], pa.decimal128(10, 3)),
        pa.array([1, None, 3, 4, 5], pa.timestamp("ms", "Europe/Paris")),
        pa.array([1, None, 3, 4, 5], pa.time32("s")),
        pa.array([1.5, None, 3, 4, 5], pa.float32()),
        pa.array([1, None, 3, 4, 5], pa.uint16()),
        pa.array([1, None, 3, 4, 5], pa.duration("us")),
        pa.array([1, None, 3, 4, 5], pa.date64()),
    ]
    cols = [
        ColumnZones((f"c{k}", "inner"), a.slice(1), a.slice(0, n), np.arange(n, dtype=np.int64) * k)
        for k, a in enumerate(arrays)
    ]
    rows, back, rows_per_zone = decode(encode(np.array([7, 7, 7, 2]), cols, 7))
    assert rows.tolist() == [7, 7, 7, 2] and rows_per_zone == 7
    for c, o in zip(cols, back, strict=True):
        assert o.path == c.path and o.min.equals(c.min) and o.max.equals(c.max), c.path
        assert o.nulls.tolist() == c.nulls.tolist()


def test_a_later_zone_map_format_reads_as_none(tmp_path):
    """A zone-map buffer of a format this version does not know is ignored (no pruning), not an error."""
    import lancelot

    p = str(tmp_path / "z.lance")
    lancelot.write_table(pa.table({"x": pa.array(range(100))}), p)
    with lancelot.LanceFile(p) as f:
        assert f.zone_maps() is not None
        pos, _ = f.metadata.global_buffers[1]
    with open(p, "r+b") as fh:
        fh.seek(pos + len(MAGIC_V2) - 1)
        fh.write(b"\x09")
    with lancelot.LanceFile(p) as f:
        assert f.zone_maps() is None and f.read().num_rows == 100
