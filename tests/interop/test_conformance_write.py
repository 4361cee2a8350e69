"""Conformance, write side: lancelot writes the 2.1/2.2 matrix, pylance 14.0.2 reads it equal to the source.

The mirror of tests/interop/test_conformance_read.py, over the same cases (SHAPES, NESTED and
SETTINGS of tests.support.conformance_matrix; the data from tests.support.conformance): each table
``{id: int64, c: <case>}`` is written by ``lancelot.LanceWriter`` at 2.1 and 2.2 in
batches of odd sizes with a small ``max_page_bytes`` (every leaf column of ``c`` gets
several pages), then

* pylance reads it equal: ``read_all``, ``read_range`` at odd boundaries (around page
  boundaries too), ``take_rows`` of random and of clustered rows (ascending, as
  pylance's file API requires), projections through ``LanceFileReader(path, columns=...)``,
  and the field metadata;
* lancelot reads its own file equal (the read suite's ``check_reads``: full read, ranges,
  takes, projections, ``iter_batches``);
* the file holds the encodings the case expects (``file_encodings``): the read suite's
  expectations of pylance's files, except where lancelot legitimately chooses otherwise
  (``OURS``); each field-metadata setting is also written without the setting, and the
  two files differ the way the setting says.

pylance 14.0.2 cannot read a whole table whose 2.2 fixed_size_list<struct> column
counts its rows in entries ("cannot read columns of differing lengths together"),
not even from its own files: such tables are read column by column, as the read
suite does.  What lancelot refuses to write, pylance refuses too (test_refusals).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader

import lancelot
from lancelot.encodings.structural.write_repdef import leaf_paths, shred
from lancelot.encodings.structural.write_values import value_bytes
from lancelot.errors import UnsupportedTypeError
from tests.helpers import pylance_write_column
from tests.support import conformance as C
from tests.support import conformance_matrix as M
from tests.support.conformance import Case, both
from tests.support.data import gen_array

#: where lancelot's choice differs from pylance's for a good reason: the case with lancelot's expectations
#: (baseline None: the setting is not expected to change this data's encodings)
OURS = {
    # long runs of 60-bit values: RLE, or at 2.2 a dictionary (with RLE or bitpacked indices) when smaller
    "int64_runs": dict(expect=both("mini_block_layout", v21=["rle"])),
    # 14-bit dates in pages of a few hundred values: bitpacking pads to 1024-value chunks, flat is smaller
    "date32": dict(expect=both("mini_block_layout")),
    # bss=auto measures zstd on a sample: byte-stream-split saves only ~3% on these rounded floats (pylance
    # guesses from byte entropy and splits); test_bss_auto checks data where it pays
    "bss=auto/float32": dict(expect=both("zstd"), baseline=None),
    # smooth doubles: bss=auto splits them already, so "on" is compared with "off"
    "bss=on/float64": dict(baseline={**M.ZSTD, "lance-encoding:bss": "off"}),
    # text pages of 32 KiB or more get FSST whether binary or string: the setting forces it on any page
    "compression=fsst/binary": dict(baseline=None),
    # bss=auto splits integers only where zstd gains 5% (not on these pages): "off" changes nothing here
    "bss=off/int64": dict(baseline=None),
}


def ours(case: Case) -> Case:
    return dataclasses.replace(case, **OURS[case.name]) if case.name in OURS else case


# ----------------------------------------------------------------------------- writing


def _leaf_costs(field: pa.Field, arr: pa.Array) -> list[int]:
    """What each leaf column of ``field`` weighs for the writer's page cut (values + 2 bytes per level)."""
    costs = []
    for path in leaf_paths(field):
        s = shred(path, arr)
        costs.append(value_bytes(s.values) + 2 * (int(s.rep is not None) + int(s.defc is not None)) * s.num_levels)
    return costs


def page_bytes_for(table: pa.Table, pages: int = 3) -> int:
    """A max_page_bytes that cuts the lightest leaf column of ``c`` into about ``pages`` pages."""
    costs = _leaf_costs(table.schema.field("c"), table.column("c").combine_chunks())
    return max(256, (min(c for c in costs if c) // pages) if any(costs) else 1024)


def write_ours(
    path, table: pa.Table, version: str, max_page_bytes: int, parts: int = 4, profile: str | None = None
) -> str:
    """Write ``table`` with lancelot in batches of odd sizes."""
    with lancelot.LanceWriter(path, table.schema, version=version, max_page_bytes=max_page_bytes, profile=profile) as w:
        pos = 0
        for b in C.split_rows(table.num_rows, parts):
            w.write(table.slice(pos, b))
            pos += b
    return str(path)


def _fail_if(diff: str | None, what: str, path: str) -> None:
    if diff is not None:
        pytest.fail(f"{what} of {path}: {diff}", pytrace=False)


def _has_fsl_struct(t: pa.DataType) -> bool:
    if pa.types.is_fixed_size_list(t) and pa.types.is_struct(t.value_type):
        return True
    if pa.types.is_struct(t):
        return any(_has_fsl_struct(f.type) for f in t)
    if pa.types.is_map(t):
        return _has_fsl_struct(t.key_type) or _has_fsl_struct(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_fsl_struct(t.value_type)
    return False


def row_boundaries(path: str, n: int) -> list[int]:
    """Page starts (rows) of every column whose pages count rows, sorted."""
    out: set[int] = set()
    for lengths in C.page_lengths(path):
        if sum(lengths) == n:
            out.update(np.cumsum(lengths)[:-1].tolist())
    return sorted(out)


def rows_to_take(n: int, starts: list[int], seed: int) -> dict[str, np.ndarray]:
    """Ascending rows to take: random ones, and clusters around page starts, chunk multiples and the middle."""
    if n == 0:
        return {}
    rng = np.random.default_rng(seed)
    random_rows = np.sort(rng.choice(n, min(n, 37), replace=False))
    near = [b + d for b in [0, *starts[:3]] for d in (0, 1024, 2048, 4096)]
    clustered = np.unique(
        np.clip(
            np.concatenate([np.arange(b - 3, b + 3) for b in near] + [np.arange(n // 2, n // 2 + 20), [0, n - 1]]),
            0,
            n - 1,
        )
    )
    return {"random": random_rows, "clustered": clustered}


def check_pylance(path: str, source: pa.Table, seed: int) -> None:
    """pylance reads ``source`` (normalized) back from ``path``: whole, by ranges, by takes, by projection."""
    exp = C.normalize(source)
    n = exp.num_rows
    names = exp.column_names
    if any(_has_fsl_struct(f.type) for f in exp.schema):
        groups = [[name] for name in names]  # pylance reads such columns only apart from the others
    else:
        groups = [names, list(reversed(names)), names[-1:]]
    starts = row_boundaries(path, n)
    ranges = [(0, n), (1, n - 1), (n // 3, n // 3 + 1), (n - 1, n), (n - 5, n + 10)]
    ranges += [(b - 1, b + 1) for b in starts[:4]]
    if len(starts) >= 2:
        ranges.append((starts[0] - 3, starts[1] + 5))
    rows = rows_to_take(n, starts, seed)
    for cols in groups:
        reader = LanceFileReader(path, columns=cols)
        want = exp.select(cols)
        assert reader.metadata().num_rows == n
        _fail_if(C.difference(C.normalize(reader.read_all().to_table()), want), f"pylance read_all {cols}", path)
        for a, b in ranges:
            a, b = max(0, min(a, n)), max(0, min(b, n))
            if b > a:
                got = reader.read_range(a, b - a).to_table()
                _fail_if(
                    C.difference(C.normalize(got), want.slice(a, b - a)), f"pylance read_range({a}, {b}) {cols}", path
                )
        for what, idx in rows.items():
            got = reader.take_rows(idx.tolist()).to_table()
            _fail_if(
                C.difference(C.normalize(got), want.take(pa.array(idx))), f"pylance take of {what} rows {cols}", path
            )
    theirs = LanceFileReader(path).metadata().schema
    for f in source.schema:  # the field metadata is the writer's
        assert (theirs.field(f.name).metadata or {}) == (f.metadata or {}), f.name


def check_pages(path: str, table: pa.Table, max_page_bytes: int) -> None:
    """Every leaf column weighing more than two pages has several pages."""
    table = C.normalize(table)  # as the writer stores it (views as plain types)
    costs = [c for f, col in zip(table.schema, table.columns) for c in _leaf_costs(f, col.combine_chunks())]
    lengths = C.page_lengths(path)
    assert len(lengths) == len(costs)
    for k, (cost, pages) in enumerate(zip(costs, lengths)):
        if cost > 2 * max_page_bytes:
            assert len(pages) > 1, f"column {k} of {cost} bytes in one page (max_page_bytes {max_page_bytes})"


def _tokens(path: str) -> set[str]:
    return C.file_encodings(path, range(1, len(C.page_lengths(path))))


# ----------------------------------------------------------------------------- the matrix


def _params(cases: list[Case]):
    return [pytest.param(ours(c), v, z, id=f"{c.name}-{v}-{z}") for c in cases for v in c.versions for z in c.nulls]


@pytest.mark.parametrize("case,version,nulls", _params(M.SHAPES + M.NESTED))
def test_values_and_nesting(tmp_path, case: Case, version: str, nulls: str):
    table = C.case_table(case, version, nulls)
    mpb = page_bytes_for(table)
    path = write_ours(tmp_path / "f.lance", table, version, mpb)
    check_pages(path, table, mpb)
    tokens = _tokens(path)
    if nulls != "all":
        M.check_tokens(case, version, tokens, path)
    else:  # all-null pages are constant layouts (blob columns keep their blob layout)
        kinds = {t for t in tokens if not t.startswith("levels:")}
        assert "constant_layout" in kinds and ("blob_layout" in kinds or kinds == {"constant_layout"}), sorted(tokens)
    seed = C.case_seed(case, version, nulls)
    check_pylance(path, table, seed)
    M.check_reads(path, table, seed)


@pytest.mark.parametrize("profile", ["fast", "compact"])
@pytest.mark.parametrize(
    "case", [pytest.param(ours(c), id=c.name) for c in M.SHAPES + M.NESTED if "2.2" in c.versions and "some" in c.nulls]
)
def test_values_and_nesting_other_profiles(tmp_path, case: Case, profile: str):
    """The matrix's shapes (2.2, some nulls) under the writer profiles other than the default:
    pylance and lancelot read every file equal (the default, balanced, is test_values_and_nesting)."""
    table = C.case_table(case, "2.2", "some")
    mpb = page_bytes_for(table)
    path = write_ours(tmp_path / "f.lance", table, "2.2", mpb, profile=profile)
    seed = C.case_seed(case, "2.2", "some")
    check_pylance(path, table, seed)
    M.check_reads(path, table, seed)


@pytest.mark.parametrize("case,version,nulls", _params(M.SETTINGS))
def test_field_metadata_settings(tmp_path, case: Case, version: str, nulls: str):
    table = C.case_table(case, version, nulls, case.metadata)
    mpb = page_bytes_for(table)
    path = write_ours(tmp_path / "set.lance", table, version, mpb)
    tokens = _tokens(path)
    M.check_tokens(case, version, tokens, path)
    if case.baseline is not None:  # the same data without the setting lacks what it brings (or has what it removes)
        base = write_ours(
            tmp_path / "base.lance", C.case_table(case, version, nulls, case.baseline or None), version, mpb
        )
        base_tokens = _tokens(base)
        assert (case.expected_tokens(version) - base_tokens) or (case.absent & base_tokens), (
            f"{case.name}: the setting changed nothing lancelot wrote ({sorted(tokens)} vs {sorted(base_tokens)})"
        )
    seed = C.case_seed(case, version, nulls)
    check_pylance(path, table, seed)
    M.check_reads(path, table, seed)


@pytest.mark.parametrize("nulls", C.NULLS)
@pytest.mark.parametrize("version", C.VERSIONS)
def test_more_types_in_one_table(tmp_path, version: str, nulls: str):
    """Every type of C.MORE_TYPES as a column of one table: pylance reads each column alone and all together."""
    rng = np.random.default_rng(C.case_seed(Case("more", C.ints_small), version, nulls))
    n = 900
    table = pa.table({name: gen_array(t, n, nulls, rng) for name, t in C.MORE_TYPES.items()})
    path = write_ours(tmp_path / "more.lance", table, version, 1024)
    check_pages(path, table, 1024)
    exp = C.normalize(table)
    for name in table.column_names:
        got = LanceFileReader(path, columns=[name]).read_all().to_table()
        _fail_if(C.difference(C.normalize(got), exp.select([name])), f"pylance read of column {name}", path)
    check_pylance(path, table, 5)
    M.check_reads(path, table, 5, ["list_fsl_big", "dictionary", "int8"])


def test_nested_fixed_size_list_nulls(tmp_path):
    """fixed_size_list<fixed_size_list<int16>> with nulls only in the innermost items (every layer keeps its
    validity; lancelot once dropped these nulls)."""
    rng = np.random.default_rng(4)
    n = 700
    inner = pa.FixedSizeListArray.from_arrays(
        pa.array(rng.integers(0, 99, n * 6).astype(np.int16), mask=rng.random(n * 6) < 0.2), 2
    )
    table = pa.table({"id": pa.array(np.arange(n)), "c": pa.FixedSizeListArray.from_arrays(inner, 3)})
    for version in C.VERSIONS:
        path = write_ours(tmp_path / f"ff{version}.lance", table, version, 1000)
        assert "fixed_size_list" in _tokens(path)
        check_pylance(path, table, 1)
        _fail_if(C.difference(lancelot.LanceFile(path).read(), table), "lancelot read", path)


@pytest.mark.parametrize("version", C.VERSIONS)
def test_bss_auto(tmp_path, version: str):
    """bss=auto under zstd: byte-stream-split where it pays (smooth doubles), not where it does not (random
    bytes), and never without general compression."""
    rng = np.random.default_rng(8)
    n = 6000
    auto = {"lance-encoding:compression": "zstd", "lance-encoding:bss": "auto"}
    fields = [
        pa.field("smooth", pa.float64(), metadata=auto),
        pa.field("noise", pa.float64(), metadata=auto),
        pa.field("plain", pa.float64(), metadata={"lance-encoding:bss": "auto"}),
    ]
    noise = rng.integers(0, 1 << 63, n, dtype=np.int64).view(np.float64)
    noise[~np.isfinite(noise)] = 0.0
    cols = [pa.array(np.cumsum(rng.random(n))), pa.array(noise), pa.array(np.cumsum(rng.random(n)))]
    table = pa.Table.from_arrays(cols, schema=pa.schema(fields))
    path = write_ours(tmp_path / "bss.lance", table, version, 16 * 1024)
    assert "byte_stream_split" in C.file_encodings(path, [0])
    assert "byte_stream_split" not in C.file_encodings(path, [1]) | C.file_encodings(path, [2])
    _fail_if(C.difference(C.normalize(LanceFileReader(path).read_all().to_table()), table), "pylance read", path)


@pytest.mark.parametrize("version", C.VERSIONS)
@pytest.mark.parametrize("batch", [True, False], ids=["empty_batch", "no_batch"])
def test_zero_rows(tmp_path, version: str, batch: bool):
    types = M.ZERO_ROW_TYPES + ([C.MAP, C.FSL_STRUCT] if version == "2.2" else [])
    schema = pa.schema([pa.field(f"c{i}", t) for i, t in enumerate(types)])
    path = str(tmp_path / "zero.lance")
    with lancelot.LanceWriter(path, schema, version=version) as w:
        if batch:
            w.write(schema.empty_table())
    reader = LanceFileReader(path)
    assert reader.metadata().num_rows == 0
    got = reader.read_all().to_table()
    assert got.num_rows == 0 and got.schema.types == schema.types
    with lancelot.LanceFile(path) as lf:
        assert lf.num_rows == 0 and lf.schema.types == schema.types and lf.read().num_rows == 0


# ----------------------------------------------------------------------------- beyond the matrix


def _dictionary(rng: np.random.Generator, n: int, keys: pa.DataType, items: pa.Array, nulls: float) -> pa.Array:
    idx = rng.integers(0, len(items), n).astype(keys.to_pandas_dtype())
    return pa.DictionaryArray.from_arrays(pa.array(idx, keys, mask=rng.random(n) < nulls if nulls else None), items)


@pytest.mark.parametrize("version", C.VERSIONS)
def test_dictionaries_of_numbers(tmp_path, version: str):
    """Arrow dictionary fields of integers and floats: page dictionaries of fixed-width values."""
    rng = np.random.default_rng(12)
    n = 3000
    table = pa.table(
        {
            "i64": _dictionary(rng, n, pa.int32(), pa.array([10, 20, 30, 1 << 40, -5]), 0.2),
            "f32": _dictionary(rng, n, pa.int8(), pa.array([1.5, 2.5, 3.5], pa.float32()), 0.0),
            "u8": _dictionary(rng, n, pa.int16(), pa.array([1, 2, 3], pa.uint8()), 0.1),
            "f64": _dictionary(rng, n, pa.int16(), pa.array(rng.random(2000)), 0.0),
            "none": _dictionary(rng, n, pa.int32(), pa.array([4, 5], pa.int32()), 1.0),
        }
    )
    path = write_ours(tmp_path / "d.lance", table, version, 2000)
    for col in range(4):
        assert "mini_block_dictionary" in C.file_encodings(path, [col])
    check_pylance(path, table, 3)
    _fail_if(C.difference(lancelot.LanceFile(path).read(), table), "lancelot read", path)


def test_dictionary_refusals(tmp_path):
    """Dictionaries of decimals (or dates, timestamps, fixed-size binary): pylance cannot store their logical
    type ("dict:decimal:128:12:2:int32:false" does not parse back: it is split at ':'), lancelot refuses them."""
    arr = pa.array([1, 2, 1], pa.int32()).cast(pa.decimal128(12, 2)).dictionary_encode()
    with pytest.raises(UnsupportedTypeError, match="pylance reads no other"):
        lancelot.write_table(pa.table({"c": arr}), tmp_path / "ours.lance", version="2.2")
    with pytest.raises(RuntimeError, match="does not parse back"):
        pylance_write_column(tmp_path / "theirs.lance", arr, "2.2")


@pytest.mark.parametrize("version", C.VERSIONS)
def test_empty_struct(tmp_path, version: str):
    """A top-level struct without children and without nulls: an all-null page without buffers, as pylance
    writes it.  With nulls pylance refuses it, inside a struct it does not read it back: lancelot refuses both."""
    table = pa.table({"e": pa.array([{}] * 700, pa.struct([])), "i": pa.array(np.arange(700))})
    path = write_ours(tmp_path / "e.lance", table, version, 1000)
    assert C.file_encodings(path, [0]) == {"constant_layout"}
    # pylance 14.0.2 reads the columns after an empty struct as nulls when it reads them with it (its own files
    # too): each column alone reads right
    for name in table.column_names:
        assert LanceFileReader(path, columns=[name]).read_all().to_table().equals(table.select([name]))
    assert lancelot.LanceFile(path).read().equals(table)
    nullable = pa.array([{}, None], pa.struct([]))
    with pytest.raises(UnsupportedTypeError, match="without children"):
        lancelot.write_table(pa.table({"e": nullable}), tmp_path / "n.lance", version=version)
    with pytest.raises(ValueError, match="Empty structs with rep/def information are not yet supported"):
        pylance_write_column(tmp_path / "n2.lance", nullable, version)
    inner = pa.array([{"x": {}, "i": 1}] * 5, pa.struct([("x", pa.struct([])), ("i", pa.int32())]))
    with pytest.raises(UnsupportedTypeError, match="without children inside"):
        lancelot.write_table(pa.table({"s": inner}), tmp_path / "s.lance", version=version)
    pylance_write_column(tmp_path / "s2.lance", inner, version)
    assert (
        not LanceFileReader(str(tmp_path / "s2.lance")).read_all().to_table().column(0).combine_chunks().equals(inner)
    )


# ----------------------------------------------------------------------------- refusals


_PACKED = {"lance-encoding:packed": "true"}
_BLOB_LIST = pa.list_(pa.field("item", pa.large_binary(), metadata={"lance-encoding:blob": "true"}))


@pytest.mark.parametrize(
    "t,version,metadata,message",
    [
        (C.MAP, "2.1", None, "Map data type is not enabled by the selected file format"),
        (C.FSL_STRUCT, "2.1", None, "FixedSizeList<Struct> is not enabled by the selected file format"),
        (
            pa.struct([("a", pa.int32()), ("s", pa.string())]),
            "2.1",
            _PACKED,
            "Variable packed struct encoding is not enabled by the selected file format",
        ),
        (pa.list_(pa.string(), 3), "2.1", None, "compute_stat should only be called once"),
        (pa.list_(pa.string(), 3), "2.2", None, "compute_stat should only be called once"),
    ],
    ids=["map-2.1", "fsl_struct-2.1", "variable_packed-2.1", "fsl_string-2.1", "fsl_string-2.2"],
)
def test_refusals(tmp_path, t, version, metadata, message):
    """What lancelot refuses to write (UnsupportedTypeError), pylance refuses too (an error, or a panic)."""
    arr = C.fresh(C.nested(t)(np.random.default_rng(0), 50, "some"))
    schema = pa.schema([pa.field("c", t, metadata=metadata)])
    table = pa.Table.from_arrays([arr], schema=schema)
    with pytest.raises(UnsupportedTypeError):
        lancelot.write_table(table, tmp_path / "ours.lance", version=version)
    assert not (tmp_path / "ours.lance").exists()
    with pytest.raises(BaseException, match=message):  # pylance panics are BaseExceptions
        pylance_write_column(tmp_path / "theirs.lance", arr, version, metadata)


@pytest.mark.parametrize("version", C.VERSIONS)
def test_blob_in_list_refused(tmp_path, version: str):
    """list<large_binary> with lance-encoding:blob on the item: pylance writes it but cannot read it back, so
    lancelot refuses to write it (the read suite leaves it out too)."""
    arr = C.fresh(C.nested(_BLOB_LIST)(np.random.default_rng(0), 50, "some"))
    table = pa.table({"c": arr}, schema=pa.schema([pa.field("c", _BLOB_LIST)]))
    with pytest.raises(UnsupportedTypeError, match="inside a list"):
        lancelot.write_table(table, tmp_path / "ours.lance", version=version)
    pylance_write_column(tmp_path / "theirs.lance", arr, version)
    with pytest.raises(BaseException):  # noqa: B017 - a panic ("called `Option::unwrap()` on a `None` value")
        LanceFileReader(str(tmp_path / "theirs.lance")).read_all().to_table()


# ----------------------------------------------------------------------------- TPC-H


@pytest.mark.parametrize("version", C.VERSIONS)
@pytest.mark.parametrize(
    "name,projection,page_bytes",
    [
        ("lineitem", ["l_comment", "l_shipdate", "l_orderkey"], 96 * 1024),
        ("orders", ["o_totalprice", "o_comment"], 48 * 1024),
    ],
)
def test_tpch(tmp_path, tpch, name: str, projection: list[str], page_bytes: int, version: str):
    """TPC-H tables from tpchgen-cli written by lancelot with several pages per column, read by pylance."""
    table = tpch[name]
    assert table.num_rows > 10_000
    path = write_ours(tmp_path / f"{name}.lance", table, version, page_bytes, parts=5)
    assert all(len(p) >= 2 for p in C.page_lengths(path))
    check_pages(path, table, page_bytes)
    tokens = C.file_encodings(path)
    assert {"fsst", "mini_block_dictionary", "inline_bitpacking"} <= tokens, sorted(tokens)
    exp = C.normalize(table)
    reader = LanceFileReader(path)
    _fail_if(C.difference(C.normalize(reader.read_all().to_table()), exp), "pylance read_all", path)
    n = table.num_rows
    starts = row_boundaries(path, n)
    for what, idx in rows_to_take(n, starts, 11).items():
        got = reader.take_rows(idx.tolist()).to_table()
        _fail_if(C.difference(C.normalize(got), exp.take(pa.array(idx))), f"pylance take of {what} rows", path)
    for a, b in [(starts[0] - 3, starts[0] + 4), (n // 2, n // 2 + 777), (n - 9, n)]:
        got = LanceFileReader(path, columns=projection).read_range(a, b - a).to_table()
        _fail_if(
            C.difference(C.normalize(got), exp.select(projection).slice(a, b - a)),
            f"pylance read_range({a}, {b}) of {projection}",
            path,
        )
    _fail_if(C.difference(lancelot.LanceFile(path).read(), exp), "lancelot read", path)
