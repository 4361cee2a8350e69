"""The conformance matrix shared by the read suite (pylance writes, lancelot reads:
tests/interop/test_conformance_read.py) and the write suite (lancelot writes, pylance reads:
tests/interop/test_conformance_write.py): the value shapes, nestings and field-metadata settings, and the checks that
every public read of a file equals its source.

Testing code: it calls pylance (imported when a check runs), which the library never does."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

import lancelot
from tests.support import conformance as C
from tests.support.conformance import Case, both

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


def setting(
    name: str,
    make: C.Maker,
    metadata: dict[str, str],
    expect: dict[str, frozenset[str]] | None = None,
    *,
    baseline: dict[str, str] | None = None,
    nulls: tuple[str, ...] = SOME,
    **kw: Any,
) -> Case:
    """A field-metadata setting: with nulls none / some (all-null pages are constant layouts whatever the setting); its
    baseline is the same data with ``baseline``'s metadata (default: none)."""
    return Case(name, make, metadata, expect or {}, nulls=nulls, baseline=baseline or {}, **kw)


#: the field-metadata settings pylance honours (rust/lance-encoding/src/constants.rs), each with the
#: metadata of the same data without it (the baseline file must lack what the setting brings)
SETTINGS = [
    setting("compression=zstd", C.floats_smooth, ZSTD, both("general", "zstd"), rows=6000),
    setting(
        "compression=zstd,level=7",
        C.floats_smooth,
        {**ZSTD, "lance-encoding:compression-level": "7"},
        both("zstd@7"),
        rows=6000,
        baseline=ZSTD,
    ),
    setting("compression=lz4", C.floats_rounded, LZ4, both("general", "lz4"), rows=6000),
    setting(
        "compression=lz4,level=3/string",
        C.strings_text,
        {**LZ4, "lance-encoding:compression-level": "3"},
        both("lz4@3"),
        rows=2400,
        baseline=LZ4,
    ),
    setting(
        "compression=zstd/string", C.strings_text, ZSTD, both("general", "zstd"), absent=frozenset({"fsst"}), rows=2400
    ),
    setting(
        "compression=none/string",
        C.strings_text,
        NONE,
        both("variable"),
        absent=frozenset({"fsst", "general"}),
        rows=2400,
    ),
    setting(
        "compression=none/over_32k",
        C.binary_huge,
        NONE,
        both("full_zip_layout"),
        absent=frozenset({"general"}),
        rows=45,
    ),
    setting(
        "compression=fsst/binary",
        lambda r, n, z: C.strings_text(r, n, z).cast(pa.binary()),
        {"lance-encoding:compression": "fsst"},
        both("fsst"),
        rows=2400,
    ),
    setting(
        "rle-threshold=0",
        C.ints_runs,
        {"lance-encoding:rle-threshold": "0"},
        both("mini_block_layout"),
        absent=frozenset({"rle"}),
    ),
    setting(
        "bss=on/float64",
        C.floats_smooth,
        {**ZSTD, "lance-encoding:bss": "on"},
        both("byte_stream_split", "zstd"),
        rows=6000,
        baseline=ZSTD,
    ),
    setting(
        "bss=auto/float32",
        C.floats_rounded,
        {**ZSTD, "lance-encoding:bss": "auto"},
        both("byte_stream_split", "zstd"),
        rows=6000,
        baseline={**ZSTD, "lance-encoding:bss": "off"},
    ),
    setting(
        "bss=off/int64",
        C.ints_medium,
        {**ZSTD, "lance-encoding:bss": "off"},
        both("zstd"),
        absent=frozenset({"byte_stream_split"}),
        rows=6000,
        baseline=ZSTD,
    ),
    setting(
        "dict-divisor=100000",
        C.strings_low_cardinality,
        {"lance-encoding:dict-divisor": "100000"},
        both("variable"),
        absent=frozenset({"mini_block_dictionary"}),
    ),
    setting(
        "dict-size-ratio=0.0001",
        C.strings_low_cardinality,
        {"lance-encoding:dict-size-ratio": "0.0001"},
        absent=frozenset({"mini_block_dictionary"}),
    ),
    setting("packed=true", C.packed_fixed, {"lance-encoding:packed": "true"}, both("packed_struct")),
    setting("packed=true/legacy_key", C.packed_fixed, {"packed": "true"}, both("packed_struct")),
    setting(
        "packed=true/variable",
        C.packed_variable,
        {"lance-encoding:packed": "true"},
        both("variable_packed_struct", "full_zip_layout"),
        versions=("2.2",),
    ),
    setting(
        "structural-encoding=fullzip",
        C.ints_small,
        {"lance-encoding:structural-encoding": "fullzip"},
        both("full_zip_layout"),
        absent=frozenset({"mini_block_layout"}),
    ),
    setting(
        "structural-encoding=fullzip/list",
        C.nested(pa.list_(pa.int32())),
        {"lance-encoding:structural-encoding": "fullzip"},
        both("full_zip_layout"),
    ),
    setting(
        "structural-encoding=miniblock",
        C.strings_big,
        {"lance-encoding:structural-encoding": "miniblock"},
        both("mini_block_layout"),
        absent=frozenset({"full_zip_layout"}),
        rows=600,
    ),
    setting("blob=true", C.blobs, {"lance-encoding:blob": "true"}, both("blob_layout"), rows=600, nulls=C.NULLS),
]

#: types of the zero-row files
ZERO_ROW_TYPES = [
    pa.int32(),
    pa.string(),
    pa.large_binary(),
    C.LIST_STRUCT,
    C.STRUCT_LIST,
    C.THREE_DEEP,
    pa.list_(pa.float32(), 4),
    C.LIST_FSL,
]

TPCH_SCALE = 0.01


def fail_if(diff: str | None, what: str, path: str) -> None:
    if diff is not None:
        raise AssertionError(f"{what} of {path}: {diff}")


def check_reads(path: str, source: pa.Table, seed: int, projection: list[str] | None = None) -> None:
    """Everything lancelot reads from ``path`` equals ``source`` (normalized)."""
    from lance.file import LanceFileReader

    exp = C.normalize(source)
    n = exp.num_rows
    # pylance itself reads the source back, so a difference below is ours (column by column: pylance 14.0.2
    # refuses a whole-table read of a 2.2 fixed_size_list<struct> beside another column, "cannot read columns
    # of differing lengths together (id=1800, c=3600)")
    for name in exp.column_names:
        theirs = LanceFileReader(path, columns=[name]).read_all().to_table()
        fail_if(C.difference(C.normalize(theirs), exp.select([name])), "pylance's own read", path)
    with lancelot.LanceFile(path) as lf:
        assert lf.num_rows == n and lf.version in C.VERSIONS
        assert [f.type for f in lf.schema] == [f.type for f in exp.schema]
        fail_if(C.difference(lf.read(), exp), "full read", path)

        starts = np.cumsum(C.page_lengths(path)[0])[:-1].tolist()  # page boundaries of column 0 (id)
        ranges = [(1, n - 1), (n // 3, n // 3 + 1), (n - 1, n), (7, 7), (n - 5, n + 10)]
        ranges += [(b - 1, b + 1) for b in starts[:3]]
        if len(starts) >= 2:
            ranges.append((starts[0] - 3, starts[1] + 5))
        for a, b in ranges:
            a, b = max(0, min(a, n)), max(0, min(b, n))
            fail_if(C.difference(lf.read_range(a, b), exp.slice(a, max(0, b - a))), f"read_range({a}, {b})", path)

        rng = np.random.default_rng(seed)
        random_rows = rng.choice(n, min(n, 37), replace=False) if n else np.zeros(0, np.int64)
        dup_rows = np.concatenate([random_rows[:6], random_rows[:3][::-1]])
        near = [b + d for b in [0, *starts[:2]] for d in (0, 1024, 2048, 4096)]  # pages, chunks of 2^k values
        clustered = np.unique(
            np.clip(
                np.concatenate([np.arange(b - 3, b + 3) for b in near] + [np.arange(n // 2, n // 2 + 20), [0, n - 1]]),
                0,
                n - 1,
            )
        )
        for what, rows in (("random", random_rows), ("duplicated", dup_rows), ("clustered", clustered)):
            rows = rows.astype(np.int64) if n else np.zeros(0, np.int64)
            fail_if(C.difference(lf.take(rows), exp.take(pa.array(rows))), f"take of {what} rows {rows.tolist()}", path)

        cols = projection or list(reversed(exp.column_names))
        fail_if(C.difference(lf.read(columns=cols), exp.select(cols)), f"projection {cols}", path)
        one = cols[:1]
        a, b = n // 4, n // 4 + max(1, n // 3)
        b = min(b, n)
        fail_if(
            C.difference(lf.read_range(a, b, columns=one), exp.select(one).slice(a, b - a)),
            f"projection {one} of read_range({a}, {b})",
            path,
        )
        fail_if(
            C.difference(lf.take(random_rows, columns=one), exp.select(one).take(pa.array(random_rows))),
            f"projection {one} of a take",
            path,
        )
        batches = list(lf.iter_batches(batch_size=max(1, n // 3 + 1)))
        if n:
            fail_if(C.difference(pa.Table.from_batches(batches), exp), "iter_batches", path)


def tokens_of(path: str) -> set[str]:
    """Encodings of column c (every column but id, which is column 0)."""
    return C.file_encodings(path, range(1, len(C.page_lengths(path))))


def check_tokens(case: Case, version: str, tokens: set[str], path: str) -> None:
    missing = case.expected_tokens(version) - tokens
    assert not missing, f"{case.name} at {version}: {sorted(missing)} not in {path}'s encodings {sorted(tokens)}"
    unwanted = case.absent & tokens
    assert not unwanted, f"{case.name} at {version}: {sorted(unwanted)} found in {sorted(tokens)}"
