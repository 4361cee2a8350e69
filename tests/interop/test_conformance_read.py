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
from tests.support import conformance as C
from tests.support.conformance import Case
from tests.support.conformance_matrix import (
    NESTED,
    SETTINGS,
    SHAPES,
    ZERO_ROW_TYPES,
    check_reads,
    check_tokens,
    fail_if,
    tokens_of,
)
from tests.support.data import gen_array


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


# ----------------------------------------------------------------------------- tests


@pytest.mark.parametrize("case,version,nulls", _params(SHAPES + NESTED))
def test_values_and_nesting(tmp_path, case: Case, version: str, nulls: str):
    table = _table(case, version, nulls)
    path = _write(tmp_path, "f", table, version, case.single_batch)
    if not case.single_batch:
        assert all(len(p) > 1 for p in C.page_lengths(path)), "every column has several pages"
    tokens = tokens_of(path)
    if nulls != "all":
        check_tokens(case, version, tokens, path)
    else:  # all-null pages are constant layouts (blob columns keep their blob layout)
        kinds = {t for t in tokens if not t.startswith("levels:")}
        assert "constant_layout" in kinds and ("blob_layout" in kinds or kinds == {"constant_layout"}), sorted(tokens)
    check_reads(path, table, zlib.crc32(f"{case.name}/{version}/{nulls}".encode()))


@pytest.mark.parametrize("case,version,nulls", _params(SETTINGS))
def test_field_metadata_settings(tmp_path, case: Case, version: str, nulls: str):
    table = _table(case, version, nulls, case.metadata)
    path = _write(tmp_path, "set", table, version)
    tokens = tokens_of(path)
    check_tokens(case, version, tokens, path)
    # the same data without the setting: the file lacks what the setting brings (or has what it removes)
    base = _write(tmp_path, "base", _table(case, version, nulls, case.baseline or None), version)
    base_tokens = tokens_of(base)
    assert (case.expected_tokens(version) - base_tokens) or (case.absent & base_tokens), (
        f"{case.name}: the setting changed nothing pylance wrote ({sorted(tokens)} vs {sorted(base_tokens)})"
    )
    with lancelot.LanceFile(path) as lf:  # the field metadata is the writer's
        assert (lf.schema.field("c").metadata or {}) == (
            LanceFileReader(path).metadata().schema.field("c").metadata or {}
        )
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
            fail_if(C.difference(lf.read(columns=[name]), C.normalize(table.select([name]))), f"column {name}", path)


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


@pytest.mark.parametrize(
    "t,version,message",
    [
        (C.MAP, "2.1", "Map data type is not enabled by the selected file format"),
        (C.FSL_STRUCT, "2.1", "FixedSizeList<Struct> is not enabled by the selected file format"),
        (
            pa.struct([("a", pa.int32()), ("s", pa.string())]),
            "2.1",
            "Variable packed struct encoding is not enabled by the selected file format",
        ),
    ],
)
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


@pytest.mark.parametrize("version", C.VERSIONS)
@pytest.mark.parametrize(
    "name,projection",
    [("lineitem", ["l_comment", "l_shipdate", "l_orderkey"]), ("orders", ["o_totalprice", "o_comment"])],
)
def test_tpch(tmp_path, tpch, name: str, projection: list[str], version: str):
    """TPC-H tables from tpchgen-cli, written by pylance with several pages per column."""
    table = tpch[name]
    assert table.num_rows > 10_000
    path = C.write_pylance(
        tmp_path / f"{name}.lance", table, version, C.split_rows(table.num_rows, 5), data_cache_bytes=64 * 1024
    )
    assert all(len(p) >= 5 for p in C.page_lengths(path))
    tokens = C.file_encodings(path)
    assert {"fsst", "mini_block_dictionary", "inline_bitpacking"} <= tokens, sorted(tokens)
    check_reads(path, table, 11, projection)
