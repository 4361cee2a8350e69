"""Conformance: pylance 14.0.2 writes 2.1 and 2.2 files, lancelot reads them equal to the source table.

Each case is a table ``{id: int64, c: <case>}`` written by pylance's LanceFileWriter
in batches of odd sizes with a tiny data cache (several pages per column), then
read through the public API (``lancelot.LanceFile``): the full read, ``read_range``
at odd boundaries (around page boundaries too), ``take`` of random, duplicated
and clustered rows, projections and ``iter_batches`` must all equal the source
table (normalized only where Lance legitimately changes it: views become plain
types).  Each case also asserts which encodings the file really holds (found by
our metadata reader), so the matrix provably exercises them; each field-metadata
setting is also written without the setting, and the two files must differ in
the way the setting says.

The matrix leaves out what pylance 14.0.2 refuses to write (test_pylance_refuses
asserts its errors): map at 2.1 ("Map data type is not enabled by the selected
file format"), fixed_size_list<struct> at 2.1 ("FixedSizeList<Struct> is not
enabled by the selected file format"), variable packed structs at 2.1 ("Variable
packed struct encoding is not enabled by the selected file format"), and
fixed_size_list<struct> in more than one batch at 2.2 (pylance panics:
"assertion failed: end <= self.len()"), so that case is one page.
"""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

import lancelot
from lancelot.testing import conformance as C
from lancelot.testing.conformance import Case, both
from lancelot.testing.data import gen_array

ZSTD = {"lance-encoding:compression": "zstd"}
LZ4 = {"lance-encoding:compression": "lz4"}
NONE = {"lance-encoding:compression": "none"}

# ----------------------------------------------------------------------------- the matrix

#: flat values, small and large: mini-block (bitpacking, RLE, dictionary, FSST...) and full-zip
SHAPES = [
    Case("int32_small", C.ints_small, expect=both("mini_block_layout", "inline_bitpacking")),
    Case("int64_wide", C.ints_wide, expect=both("mini_block_layout", "flat")),
    Case("uint64_sorted", C.ints_sorted, expect=both("inline_bitpacking")),
    Case("int64_runs", C.ints_runs, expect=both(v21=["rle"], v22=["mini_block_dictionary"])),
    Case("int16_constant", C.ints_constant, expect=both(v22=["constant_layout"])),
    Case("float64", C.floats_smooth, expect=both("mini_block_layout", "flat")),
    Case("float32", C.floats_rounded, expect=both("mini_block_layout", "flat")),
    Case("bool", C.bools, expect=both("mini_block_layout", "flat")),
    Case("string_low_cardinality", C.strings_low_cardinality, expect=both("mini_block_dictionary")),
    Case("string_text", C.strings_text, rows=2400, expect=both("mini_block_layout", "fsst")),
    Case("large_string_text", C.large_strings_text, rows=2400, expect=both("fsst")),
    Case("string_unique_short", C.strings_unique_short, expect=both("variable"), absent=frozenset({"fsst"})),
    Case("string_big", C.strings_big, rows=600, expect=both("full_zip_layout", "fsst")),
    Case("binary_over_32k", C.binary_huge, rows=45, expect=both("full_zip_layout", "general", "zstd")),
    Case("fixed_binary_300", C.binary_fixed_300, rows=900, expect=both("full_zip_layout")),
    Case("large_binary", C.blobs, rows=600, expect=both("full_zip_layout")),
    Case("timestamp_us_tz", C.timestamps, expect=both("mini_block_layout")),
    Case("decimal128", C.decimals, expect=both("mini_block_layout")),
    Case("date32", C.dates, expect=both("inline_bitpacking")),
    Case("vector_f32x128", C.vectors, rows=600, expect=both("full_zip_layout", "fixed_size_list")),
    # pages of several thousand rows: many mini-block chunks per page
    Case("int32_many_chunks", C.ints_small, rows=24000, expect=both("inline_bitpacking")),
    Case("string_text_many_chunks", C.strings_text, rows=12000, expect=both("fsst")),
]

#: nesting: rep/def of every shape, empties, three deep, maps (2.2)
NESTED = [
    Case("list_struct", C.nested(C.LIST_STRUCT), expect=both("mini_block_layout")),
    Case("struct_list", C.nested(C.STRUCT_LIST)),
    Case("list_list", C.nested(C.LIST_LIST)),
    Case("fsl_struct", C.nested(C.FSL_STRUCT), versions=("2.2",), single_batch=True),
    # pylance writes fixed_size_list<string> only when all null (else it panics: "compute_stat should only be
    # called once during DataBlock construction"), as one-layer constant pages of row counts
    Case("fsl_string", C.nested(pa.list_(pa.string(), 3)), nulls=("all",)),
    Case("list_struct_list", C.nested(C.THREE_DEEP)),
    Case("struct_list_list", C.nested(C.STRUCT_LIST_LIST)),
    Case("struct_struct_large_list", C.nested(C.STRUCT_STRUCT)),
    Case("list_fsl", C.nested(C.LIST_FSL), expect=both("fixed_size_list")),
    Case("map", C.nested(C.MAP), versions=("2.2",)),
    Case("list_map", C.nested(C.LIST_MAP), versions=("2.2",)),
    Case("empty_lists", C.empty_lists),
    Case("mostly_empty_list_struct", C.mostly_empty_list_structs),
    Case("list_big_strings", C.list_of_big_strings, rows=900, expect=both("full_zip_layout")),
    Case("long_lists", C.long_lists, rows=160, expect=both("mini_block_layout")),
    Case("list_struct_many_chunks", C.nested(C.LIST_STRUCT), rows=12000, expect=both("mini_block_layout")),
    Case("struct_blob", C.struct_with_blob, rows=600, expect=both("blob_layout")),
    # not here: list<large_binary> with lance-encoding:blob on the item, which pylance writes but cannot read
    # back ("Expected repetition level but data didn't contain repetition"), and lancelot refuses
]

SOME = ("none", "some")


def setting(name: str, make, metadata: dict[str, str], expect=None, *, baseline: dict[str, str], nulls=SOME,
            **kw) -> Case:
    """A field-metadata setting: with nulls none / some (all-null pages are constant layouts whatever the setting)."""
    return Case(name, make, metadata, expect or {}, nulls=nulls, baseline=baseline, **kw)


#: the field-metadata settings pylance honours (rust/lance-encoding/src/constants.rs), each with the
#: metadata of the same data without it (the baseline file must lack what the setting brings)
SETTINGS = [
    setting("compression=zstd", C.floats_smooth, ZSTD, both("general", "zstd"), rows=6000, baseline={}),
    setting("compression=zstd,level=7", C.floats_smooth, {**ZSTD, "lance-encoding:compression-level": "7"},
         both("zstd@7"), rows=6000, baseline=ZSTD),
    setting("compression=lz4", C.floats_rounded, LZ4, both("general", "lz4"), rows=6000, baseline={}),
    setting("compression=lz4,level=3/string", C.strings_text, {**LZ4, "lance-encoding:compression-level": "3"},
         both("lz4@3"), rows=2400, baseline=LZ4),
    setting("compression=zstd/string", C.strings_text, ZSTD, both("general", "zstd"), absent=frozenset({"fsst"}),
         rows=2400, baseline={}),
    setting("compression=none/string", C.strings_text, NONE, both("variable"),
         absent=frozenset({"fsst", "general"}), rows=2400, baseline={}),
    setting("compression=none/over_32k", C.binary_huge, NONE, both("full_zip_layout"),
         absent=frozenset({"general"}), rows=45, baseline={}),
    setting("compression=fsst/binary", lambda r, n, z: C.strings_text(r, n, z).cast(pa.binary()),
         {"lance-encoding:compression": "fsst"}, both("fsst"), rows=2400, baseline={}),
    setting("rle-threshold=0", C.ints_runs, {"lance-encoding:rle-threshold": "0"}, both("mini_block_layout"),
         absent=frozenset({"rle"}), baseline={}),
    setting("bss=on/float64", C.floats_smooth, {**ZSTD, "lance-encoding:bss": "on"},
         both("byte_stream_split", "zstd"), rows=6000, baseline=ZSTD),
    setting("bss=auto/float32", C.floats_rounded, {**ZSTD, "lance-encoding:bss": "auto"},
         both("byte_stream_split", "zstd"), rows=6000, baseline={**ZSTD, "lance-encoding:bss": "off"}),
    setting("bss=off/int64", C.ints_medium, {**ZSTD, "lance-encoding:bss": "off"}, both("zstd"),
         absent=frozenset({"byte_stream_split"}), rows=6000, baseline=ZSTD),
    setting("dict-divisor=100000", C.strings_low_cardinality, {"lance-encoding:dict-divisor": "100000"},
         both("variable"), absent=frozenset({"mini_block_dictionary"}), baseline={}),
    setting("dict-size-ratio=0.0001", C.strings_low_cardinality, {"lance-encoding:dict-size-ratio": "0.0001"},
         absent=frozenset({"mini_block_dictionary"}), baseline={}),
    setting("packed=true", C.packed_fixed, {"lance-encoding:packed": "true"}, both("packed_struct"), baseline={}),
    setting("packed=true/legacy_key", C.packed_fixed, {"packed": "true"}, both("packed_struct"), baseline={}),
    setting("packed=true/variable", C.packed_variable, {"lance-encoding:packed": "true"},
         both("variable_packed_struct", "full_zip_layout"), versions=("2.2",), baseline={}),
    setting("structural-encoding=fullzip", C.ints_small, {"lance-encoding:structural-encoding": "fullzip"},
         both("full_zip_layout"), absent=frozenset({"mini_block_layout"}), baseline={}),
    setting("structural-encoding=fullzip/list", C.nested(pa.list_(pa.int32())),
         {"lance-encoding:structural-encoding": "fullzip"}, both("full_zip_layout"), baseline={}),
    setting("structural-encoding=miniblock", C.strings_big, {"lance-encoding:structural-encoding": "miniblock"},
         both("mini_block_layout"), absent=frozenset({"full_zip_layout"}), rows=600, baseline={}),
    setting("blob=true", C.blobs, {"lance-encoding:blob": "true"}, both("blob_layout"), rows=600, baseline={},
            nulls=C.NULLS),
]


def _params(cases: list[Case]):
    return [pytest.param(c, v, z, id=f"{c.name}-{v}-{z}") for c in cases for v in c.versions for z in c.nulls]


# ----------------------------------------------------------------------------- writing and checking


def _table(case: Case, version: str, nulls: str, metadata=None) -> pa.Table:
    rng = np.random.default_rng(zlib.crc32(f"{case.name}/{version}/{nulls}".encode()))
    arr = case.make(rng, case.rows, nulls)
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("c", arr.type, metadata=metadata)])
    return pa.Table.from_arrays([pa.array(np.arange(case.rows), pa.int64()), arr], schema=schema)


def _write(tmp_path, name: str, table: pa.Table, version: str, single_batch: bool = False) -> str:
    batches = None if single_batch else C.split_rows(table.num_rows, 4)
    return C.write_pylance(tmp_path / f"{name}.lance", table, version, batches)


def _fail_if(diff: str | None, what: str, path: str) -> None:
    if diff is not None:
        pytest.fail(f"{what} of {path}: {diff}", pytrace=False)


def check_reads(path: str, source: pa.Table, seed: int, projection: list[str] | None = None) -> None:
    """Everything lancelot reads from ``path`` equals ``source`` (normalized)."""
    exp = C.normalize(source)
    n = exp.num_rows
    # pylance itself reads the source back, so a difference below is ours (column by column: pylance 14.0.2
    # refuses a whole-table read of a 2.2 fixed_size_list<struct> beside another column, "cannot read columns
    # of differing lengths together (id=1800, c=3600)")
    for name in exp.column_names:
        theirs = LanceFileReader(path, columns=[name]).read_all().to_table()
        _fail_if(C.difference(C.normalize(theirs), exp.select([name])), "pylance's own read", path)
    with lancelot.LanceFile(path) as lf:
        assert lf.num_rows == n and lf.version in C.VERSIONS
        assert [f.type for f in lf.schema] == [f.type for f in exp.schema]
        _fail_if(C.difference(lf.read(), exp), "full read", path)

        starts = np.cumsum(C.page_lengths(path)[0])[:-1].tolist()  # page boundaries of column 0 (id)
        ranges = [(1, n - 1), (n // 3, n // 3 + 1), (n - 1, n), (7, 7), (n - 5, n + 10)]
        ranges += [(b - 1, b + 1) for b in starts[:3]]
        if len(starts) >= 2:
            ranges.append((starts[0] - 3, starts[1] + 5))
        for a, b in ranges:
            a, b = max(0, min(a, n)), max(0, min(b, n))
            _fail_if(C.difference(lf.read_range(a, b), exp.slice(a, max(0, b - a))), f"read_range({a}, {b})", path)

        rng = np.random.default_rng(seed)
        random_rows = rng.choice(n, min(n, 37), replace=False) if n else np.zeros(0, np.int64)
        dup_rows = np.concatenate([random_rows[:6], random_rows[:3][::-1]])
        near = [b + d for b in [0, *starts[:2]] for d in (0, 1024, 2048, 4096)]  # pages, chunks of 2^k values
        clustered = np.unique(np.clip(np.concatenate(
            [np.arange(b - 3, b + 3) for b in near] + [np.arange(n // 2, n // 2 + 20), [0, n - 1]]), 0, n - 1))
        for what, rows in (("random", random_rows), ("duplicated", dup_rows), ("clustered", clustered)):
            rows = rows.astype(np.int64) if n else np.zeros(0, np.int64)
            _fail_if(C.difference(lf.take(rows), exp.take(pa.array(rows))), f"take of {what} rows {rows.tolist()}",
                     path)

        cols = projection or list(reversed(exp.column_names))
        _fail_if(C.difference(lf.read(columns=cols), exp.select(cols)), f"projection {cols}", path)
        one = cols[:1]
        a, b = n // 4, n // 4 + max(1, n // 3)
        b = min(b, n)
        _fail_if(C.difference(lf.read_range(a, b, columns=one), exp.select(one).slice(a, b - a)),
                 f"projection {one} of read_range({a}, {b})", path)
        _fail_if(C.difference(lf.take(random_rows, columns=one), exp.select(one).take(pa.array(random_rows))),
                 f"projection {one} of a take", path)
        batches = list(lf.iter_batches(batch_size=max(1, n // 3 + 1)))
        if n:
            _fail_if(C.difference(pa.Table.from_batches(batches), exp), "iter_batches", path)


def _tokens(path: str) -> set[str]:
    """Encodings of column c (every column but id, which is column 0)."""
    return C.file_encodings(path, range(1, len(C.page_lengths(path))))


def _check_tokens(case: Case, version: str, tokens: set[str], path: str) -> None:
    missing = case.expected_tokens(version) - tokens
    assert not missing, f"{case.name} at {version}: {sorted(missing)} not in {path}'s encodings {sorted(tokens)}"
    unwanted = case.absent & tokens
    assert not unwanted, f"{case.name} at {version}: {sorted(unwanted)} found in {sorted(tokens)}"


# ----------------------------------------------------------------------------- tests


@pytest.mark.parametrize("case,version,nulls", _params(SHAPES + NESTED))
def test_values_and_nesting(tmp_path, case: Case, version: str, nulls: str):
    table = _table(case, version, nulls)
    path = _write(tmp_path, "f", table, version, case.single_batch)
    if not case.single_batch:
        assert all(len(p) > 1 for p in C.page_lengths(path)), "every column has several pages"
    tokens = _tokens(path)
    if nulls != "all":
        _check_tokens(case, version, tokens, path)
    else:  # all-null pages are constant layouts (blob columns keep their blob layout)
        kinds = {t for t in tokens if not t.startswith("levels:")}
        assert "constant_layout" in kinds and ("blob_layout" in kinds or kinds == {"constant_layout"}), sorted(tokens)
    check_reads(path, table, zlib.crc32(f"{case.name}/{version}/{nulls}".encode()))


@pytest.mark.parametrize("case,version,nulls", _params(SETTINGS))
def test_field_metadata_settings(tmp_path, case: Case, version: str, nulls: str):
    table = _table(case, version, nulls, case.metadata)
    path = _write(tmp_path, "set", table, version)
    tokens = _tokens(path)
    _check_tokens(case, version, tokens, path)
    # the same data without the setting: the file lacks what the setting brings (or has what it removes)
    base = _write(tmp_path, "base", _table(case, version, nulls, case.baseline or None), version)
    base_tokens = _tokens(base)
    assert (case.expected_tokens(version) - base_tokens) or (case.absent & base_tokens), (
        f"{case.name}: the setting changed nothing pylance wrote ({sorted(tokens)} vs {sorted(base_tokens)})")
    with lancelot.LanceFile(path) as lf:  # the field metadata is the writer's
        assert (lf.schema.field("c").metadata or {}) == (LanceFileReader(path).metadata().schema.field("c").metadata
                                                         or {})
    check_reads(path, table, zlib.crc32(f"{case.name}/{version}/{nulls}".encode()))


@pytest.mark.parametrize("nulls", C.NULLS)
@pytest.mark.parametrize("version", C.VERSIONS)
def test_more_types_in_one_table(tmp_path, version: str, nulls: str):
    """Every type of C.MORE_TYPES as a column of one table: each column read alone and all together."""
    rng = np.random.default_rng(zlib.crc32(f"more/{version}/{nulls}".encode()))
    n = 900
    table = pa.table({name: gen_array(t, n, nulls, rng) for name, t in C.MORE_TYPES.items()})
    path = _write(tmp_path, "more", table, version)
    assert all(len(p) > 1 for p in C.page_lengths(path))
    check_reads(path, table, 5, ["list_fsl_big", "dictionary", "int8"])
    with lancelot.LanceFile(path) as lf:
        for name in table.column_names:
            _fail_if(C.difference(lf.read(columns=[name]), C.normalize(table.select([name]))), f"column {name}", path)


ZERO_ROW_TYPES = [pa.int32(), pa.string(), pa.large_binary(), C.LIST_STRUCT, C.STRUCT_LIST, C.THREE_DEEP,
                  pa.list_(pa.float32(), 4), C.LIST_FSL]


@pytest.mark.parametrize("version", C.VERSIONS)
@pytest.mark.parametrize("batch", [True, False], ids=["empty_batch", "no_batch"])
def test_zero_rows(tmp_path, version: str, batch: bool):
    types = ZERO_ROW_TYPES + ([C.MAP, C.FSL_STRUCT] if version == "2.2" else [])
    schema = pa.schema([pa.field(f"c{i}", t) for i, t in enumerate(types)])
    table = schema.empty_table()
    path = str(tmp_path / "zero.lance")
    w = LanceFileWriter(path, schema, version=version)
    if batch:
        w.write_batch(table)
    w.close()
    with lancelot.LanceFile(path) as lf:
        assert lf.num_rows == 0 and lf.schema.types == schema.types
        for got in (lf.read(), lf.read_range(0, 0), lf.read_range(0, 5), lf.take([]), lf.read(columns=["c3"])):
            assert got.num_rows == 0
            assert got.schema.types == [schema.field(n).type for n in got.column_names]
        assert list(lf.iter_batches()) == []


@pytest.mark.parametrize("t,version,message", [
    (C.MAP, "2.1", "Map data type is not enabled by the selected file format"),
    (C.FSL_STRUCT, "2.1", "FixedSizeList<Struct> is not enabled by the selected file format"),
    (pa.struct([("a", pa.int32()), ("s", pa.string())]), "2.1",
     "Variable packed struct encoding is not enabled by the selected file format"),
])
def test_pylance_refuses(tmp_path, t, version, message):
    """What the matrix leaves out, because pylance 14.0.2 will not write it."""
    meta = {"lance-encoding:packed": "true"} if pa.types.is_struct(t) else None
    arr = C.fresh(C.nested(t)(np.random.default_rng(0), 50, "none"))
    schema = pa.schema([pa.field("c", t, metadata=meta)])
    with pytest.raises(NotImplementedError, match=message):
        w = LanceFileWriter(str(tmp_path / "r.lance"), schema, version=version)
        w.write_batch(pa.Table.from_arrays([arr], schema=schema))
        w.close()


# ----------------------------------------------------------------------------- TPC-H


TPCH_SCALE = 0.01


@pytest.fixture(scope="module")
def tpch(tmp_path_factory) -> dict[str, pa.Table]:
    paths = C.tpch_parquet(tmp_path_factory.mktemp("tpch"), TPCH_SCALE, ["lineitem", "orders"])
    return {name: C.read_tpch(p) for name, p in paths.items()}


@pytest.mark.parametrize("version", C.VERSIONS)
@pytest.mark.parametrize("name,projection", [("lineitem", ["l_comment", "l_shipdate", "l_orderkey"]),
                                             ("orders", ["o_totalprice", "o_comment"])])
def test_tpch(tmp_path, tpch, name: str, projection: list[str], version: str):
    """TPC-H tables from tpchgen-cli, written by pylance with several pages per column."""
    table = tpch[name]
    assert table.num_rows > 10_000
    path = C.write_pylance(tmp_path / f"{name}.lance", table, version, C.split_rows(table.num_rows, 5),
                           data_cache_bytes=64 * 1024)
    assert all(len(p) >= 5 for p in C.page_lengths(path))
    tokens = C.file_encodings(path)
    assert {"fsst", "mini_block_dictionary", "inline_bitpacking"} <= tokens, sorted(tokens)
    check_reads(path, table, 11, projection)
