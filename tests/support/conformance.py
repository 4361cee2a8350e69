"""The 2.1/2.2 read-conformance matrix: seeded data, pylance writing, and what a file holds.

The cases are tables that pylance 14.0.2 writes at 2.1 and 2.2 and that lancelot must read back equal to the source
(tests/interop/test_conformance_read.py).  Each :class:`Case` makes one column ``c`` from ``(rng, n, nulls)`` and may
carry the Arrow field metadata pylance honours (the ``lance-encoding:*`` keys of rust/lance-encoding/src/constants.rs,
plus ``lance-encoding:blob``) and the encodings the file must (``expect``) or must not (``absent``) contain, as found by
:func:`file_encodings` in the pages' ``PageLayout`` messages (encodings_v2_1.proto).  Tokens are the proto names:
layouts (``mini_block_layout``...), ``CompressiveEncoding`` kinds (``rle``, ``fsst``...), ``mini_block_dictionary`` for
a mini-block page's dictionary, the general compression schemes ``zstd`` / ``lz4`` (``zstd@7`` when a level is stored),
and ``levels:<kind>`` for the rep/def level encodings."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.typing import NDArray

from lancelot.errors import CorruptFileError
from lancelot.format.container import read_metadata, unpack_encoding
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.io.source import open_source
from lancelot.testing import tpch
from lancelot.util.types import rebuild
from tests.support.data import gen_array

VERSIONS = ("2.1", "2.2")
NULLS = ("none", "some", "all")

Maker = Callable[[np.random.Generator, int, str], pa.Array]


# ----------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """One column of the matrix: how to make it, how pylance is asked to write it, what the file must hold."""

    name: str
    make: Maker
    metadata: dict[str, str] | None = None
    expect: dict[str, frozenset[str]] = field(default_factory=dict)  # version -> tokens that must appear
    absent: frozenset[str] = frozenset()  # tokens that must not appear (any version)
    versions: tuple[str, ...] = VERSIONS
    nulls: tuple[str, ...] = NULLS
    rows: int = 1800
    baseline: dict[str, str] | None = None  # a settings case: the same data's metadata without the setting
    single_batch: bool = False  # pylance can only write the type in one batch (one page)

    def expected_tokens(self, version: str) -> frozenset[str]:
        return self.expect.get(version, frozenset())


def both(*tokens: str, v21: Iterable[str] = (), v22: Iterable[str] = ()) -> dict[str, frozenset[str]]:
    """Expectations for 2.1 and 2.2: ``tokens`` for both, plus per-version extras."""
    return {"2.1": frozenset(tokens) | frozenset(v21), "2.2": frozenset(tokens) | frozenset(v22)}


def mask_for(rng: np.random.Generator, n: int, nulls: str, p: float = 0.25) -> np.ndarray | None:
    """A validity mask (True = null) for the null pattern none / some / all."""
    if nulls == "none" or n == 0:
        return None
    if nulls == "all":
        return np.ones(n, bool)
    return rng.random(n) < p


def _arr(values: Sequence[object] | NDArray[Any], t: pa.DataType, rng: np.random.Generator, nulls: str) -> pa.Array:
    return pa.array(values, t, mask=mask_for(rng, len(values), nulls))


def _strings(rng: np.random.Generator, n: int, nulls: str, values: list[str], t: pa.DataType | None = None) -> pa.Array:
    mask = mask_for(rng, n, nulls)
    return pa.array([None if mask is not None and mask[i] else v for i, v in enumerate(values)], t or pa.string())


_VOCAB = np.array(
    [
        "lorem",
        "ipsum",
        "dolor",
        "sit",
        "amet",
        "consectetur",
        "adipiscing",
        "elit",
        "sed",
        "do",
        "eiusmod",
        "tempor",
        "ünïcødé",
        "€uro",
        "42",
    ]
)


def text(rng: np.random.Generator, n: int, words: tuple[int, int] = (6, 20)) -> list[str]:
    """Sentences of vocabulary words: what FSST compresses."""
    lens = rng.integers(words[0], words[1], n)
    picks = rng.choice(_VOCAB, int(lens.sum()))
    ends = np.cumsum(lens)
    return [" ".join(picks[e - k : e]) for e, k in zip(ends.tolist(), lens.tolist())]


# -- flat values


def ints_small(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    return _arr(rng.integers(0, 1000, n).astype(np.int32), pa.int32(), rng, nulls)


def ints_wide(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    return _arr(rng.integers(-(1 << 62), 1 << 62, n), pa.int64(), rng, nulls)


def ints_medium(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    return _arr(rng.integers(0, 1 << 30, n), pa.int64(), rng, nulls)


def ints_sorted(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    return _arr(np.cumsum(rng.integers(0, 40, n)).astype(np.uint64), pa.uint64(), rng, nulls)


def ints_runs(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    """Long runs of 60-bit values: RLE beats bitpacking."""
    runs = rng.integers(20, 200, n // 20 + 1)
    return _arr(np.repeat(rng.integers(0, 1 << 60, len(runs)), runs)[:n], pa.int64(), rng, nulls)


def ints_constant(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    return _arr(np.full(n, 7, np.int16), pa.int16(), rng, nulls)


def floats_smooth(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    return _arr(np.cumsum(rng.random(n)), pa.float64(), rng, nulls)


def floats_rounded(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    return _arr(np.round(rng.random(n) * 100, 1).astype(np.float32), pa.float32(), rng, nulls)


def bools(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    return _arr(rng.random(n) < 0.3, pa.bool_(), rng, nulls)


def strings_low_cardinality(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    words = [f"category-{i:02d}" for i in range(12)]
    return _strings(rng, n, nulls, [words[i] for i in rng.integers(0, 12, n)])


def strings_text(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    return _strings(rng, n, nulls, text(rng, n))


def large_strings_text(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    return _strings(rng, n, nulls, text(rng, n), pa.large_string())


def strings_unique_short(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    return _strings(rng, n, nulls, [format(int(v), "x") for v in rng.integers(0, 1 << 16, n)])


def strings_big(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    """Values of 300-900 bytes: full-zip (FSST per value)."""
    return _strings(rng, n, nulls, [s * 8 for s in text(rng, n, (6, 16))])


def binary_huge(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    """Values over 32 KiB: general compression of each value."""
    mask = mask_for(rng, n, nulls)
    vals = [None if mask is not None and mask[i] else rng.bytes(64) * int(rng.integers(520, 700)) for i in range(n)]
    return pa.array(vals, pa.binary())


def binary_fixed_300(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    raw = rng.integers(0, 4, n * 300, dtype=np.uint8).tobytes()
    return _arr([raw[i * 300 : (i + 1) * 300] for i in range(n)], pa.binary(300), rng, nulls)


def blobs(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    mask = mask_for(rng, n, nulls)
    return pa.array(
        [None if mask is not None and mask[i] else rng.bytes(int(k)) for i, k in enumerate(rng.integers(0, 3000, n))],
        pa.large_binary(),
    )


def timestamps(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    return _arr(rng.integers(0, 1 << 50, n), pa.int64(), rng, nulls).cast(pa.timestamp("us", tz="UTC"))


def decimals(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    return _arr(rng.integers(-(10**9), 10**9, n), pa.int64(), rng, nulls).cast(pa.decimal128(24, 3))


def dates(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    return _arr(rng.integers(8000, 11000, n).astype(np.int32), pa.int32(), rng, nulls).cast(pa.date32())


def vectors(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    """fixed_size_list<float32, 128>: 512-byte values, full-zip."""
    items = pa.array(rng.random(n * 128).astype(np.float32))
    m = mask_for(rng, n, nulls)
    return pa.FixedSizeListArray.from_arrays(items, 128, mask=None if m is None else pa.array(m))


# -- nested values


def nested(t: pa.DataType) -> Maker:
    """Seeded nested data of type ``t``: nulls at every level for 'some', empty lists throughout."""
    return lambda rng, n, nulls: gen_array(t, n, nulls, rng)


def empty_lists(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    """list<int32> whose valid rows are all empty."""
    m = mask_for(rng, n, nulls)
    return pa.ListArray.from_arrays(
        pa.array(np.zeros(n + 1, np.int32)), pa.array([], pa.int32()), mask=None if m is None else pa.array(m)
    )


def mostly_empty_list_structs(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    """list<struct<a, b>>: nine rows in ten empty, the rest long."""
    t = pa.struct([("a", pa.int32()), ("b", pa.string())])
    lens = np.where(rng.random(n) < 0.9, 0, rng.integers(1, 40, n))
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    items = gen_array(t, int(offsets[-1]), "some" if nulls == "some" else "none", rng)
    m = mask_for(rng, n, nulls)
    return pa.ListArray.from_arrays(pa.array(offsets), items, mask=None if m is None else pa.array(m))


def long_lists(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    """list<float64> of up to 2500 items: rows cross mini-block chunks (repetition index preamble / trailer)."""
    lens = np.where(rng.random(n) < 0.1, 0, rng.integers(0, 2500, n))
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    m = mask_for(rng, n, nulls, 0.1)
    return pa.ListArray.from_arrays(
        pa.array(offsets), pa.array(rng.random(int(offsets[-1]))), mask=None if m is None else pa.array(m)
    )


def list_of_big_strings(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    """list<string> with 300+ byte items: full-zip under a list (repetition index)."""
    lens = rng.integers(0, 4, n)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    items = strings_big(rng, int(offsets[-1]), "some" if nulls == "some" else "none")
    m = mask_for(rng, n, nulls)
    return pa.ListArray.from_arrays(pa.array(offsets), items, mask=None if m is None else pa.array(m))


def packed_fixed(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    kids = [
        pa.array(rng.integers(0, 1 << 20, n).astype(np.int32)),
        pa.array(rng.random(n)),
        pa.array(rng.integers(0, 9, n).astype(np.int8)),
    ]
    m = mask_for(rng, n, nulls)
    return pa.StructArray.from_arrays(kids, ["a", "b", "c"], mask=None if m is None else pa.array(m))


def packed_variable(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    kids = [
        pa.array(rng.integers(0, 1 << 20, n).astype(np.int32)),
        pa.array(text(rng, n, (0, 4))),
        pa.array(rng.random(n)),
    ]
    m = mask_for(rng, n, nulls)
    return pa.StructArray.from_arrays(kids, ["a", "s", "d"], mask=None if m is None else pa.array(m))


def struct_with_blob(rng: np.random.Generator, n: int, nulls: str) -> pa.Array:
    """struct<b: large_binary (lance-encoding:blob), i: int32>: a blob column under a struct."""
    b = blobs(rng, n, "some" if nulls == "some" else "none")
    t = pa.struct([pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"}), ("i", pa.int32())])
    m = mask_for(rng, n, nulls)
    return pa.StructArray.from_arrays(
        [b, pa.array(rng.integers(0, 99, n).astype(np.int32))], fields=list(t), mask=None if m is None else pa.array(m)
    )


#: more types, read together as the columns of one table (data from tests.support.data.gen_array)
MORE_TYPES = {
    "int8": pa.int8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "float16": pa.float16(),
    "time32_ms": pa.time32("ms"),
    "time64_ns": pa.time64("ns"),
    "duration_s": pa.duration("s"),
    "date64": pa.date64(),
    "timestamp_ns": pa.timestamp("ns"),
    "decimal256": pa.decimal256(40, 5),
    "null": pa.null(),
    "fixed_binary_4": pa.binary(4),
    "dictionary": pa.dictionary(pa.int32(), pa.string()),
    "fsl_f32x64_null_items": pa.list_(pa.float32(), 64),
    "fsl_fsl": pa.list_(pa.list_(pa.int16(), 2), 3),
    "list_fsl_big": pa.list_(pa.list_(pa.float32(), 100)),
    "list_fixed_binary_400": pa.list_(pa.binary(400)),
    "list_bool": pa.list_(pa.bool_()),
    "large_list_struct": pa.large_list(pa.struct([("a", pa.uint8())])),
    "struct_bool_null": pa.struct([("b", pa.bool_()), ("n", pa.null())]),
    "list_list_list": pa.list_(pa.list_(pa.list_(pa.int8()))),
}


LIST_STRUCT = pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())]))
STRUCT_LIST = pa.struct([("x", pa.list_(pa.int64())), ("y", pa.float64())])
LIST_LIST = pa.list_(pa.list_(pa.int16()))
FSL_STRUCT = pa.list_(pa.struct([("a", pa.int64()), ("b", pa.float32())]), 2)
THREE_DEEP = pa.list_(pa.struct([("x", pa.list_(pa.int64())), ("y", pa.string())]))
STRUCT_LIST_LIST = pa.struct([("m", pa.list_(pa.list_(pa.string()))), ("k", pa.int8())])
STRUCT_STRUCT = pa.struct(
    [("s", pa.struct([("l", pa.large_list(pa.float32())), ("t", pa.bool_())])), ("u", pa.uint32())]
)
LIST_FSL = pa.list_(pa.list_(pa.int32(), 3))
MAP = pa.map_(pa.string(), pa.int64())
LIST_MAP = pa.list_(pa.map_(pa.int32(), pa.string()))


def case_seed(case: Case, version: str, nulls: str) -> int:
    """The seed of one cell of the matrix."""
    return zlib.crc32(f"{case.name}/{version}/{nulls}".encode())


def case_table(case: Case, version: str, nulls: str, metadata: dict[str, str] | None = None) -> pa.Table:
    """The table ``{id: int64, c: <case>}`` of one cell of the matrix, ``metadata`` on field ``c``."""
    arr = case.make(np.random.default_rng(case_seed(case, version, nulls)), case.rows, nulls)
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("c", arr.type, metadata=metadata)])
    return pa.Table.from_arrays([pa.array(np.arange(case.rows), pa.int64()), arr], schema=schema)


# ----------------------------------------------------------------------------- pylance, files


def fresh(arr: pa.Array) -> pa.Array:
    """An unsliced copy of a nested array (pylance mis-writes sliced struct arrays, see
    tests/file/test_read_structural.py)."""
    return arr.take(pa.array(np.arange(len(arr)))) if pa.types.is_nested(arr.type) else arr


def split_rows(n: int, parts: int) -> list[int]:
    """Batch sizes of odd lengths adding up to ``n`` (one page per batch with a tiny data cache)."""
    if n == 0:
        return [0]
    cuts = sorted({int(n * k / parts) + (k % 3) for k in range(1, parts)} - {0})
    cuts = [c for c in cuts if 0 < c < n]
    bounds = [0, *cuts, n]
    return [b - a for a, b in zip(bounds, bounds[1:])]


def write_pylance(
    path: str | Path,
    table: pa.Table,
    version: str,
    batches: list[int] | None = None,
    data_cache_bytes: int | None = 1,
    max_page_bytes: int | None = 64 * 1024,
) -> str:
    """Write ``table`` with pylance's LanceFileWriter, batch by batch (fresh copies).

    With a tiny ``data_cache_bytes`` pylance 14.0.2 ends a page at every batch; ``max_page_bytes`` alone does not split
    the pages of these small batches."""
    from lance.file import LanceFileWriter

    w = LanceFileWriter(
        str(path), table.schema, version=version, data_cache_bytes=data_cache_bytes, max_page_bytes=max_page_bytes
    )
    pos = 0
    for b in batches or [table.num_rows]:
        part = table.slice(pos, b)
        w.write_batch(pa.Table.from_arrays([fresh(c.combine_chunks()) for c in part.columns], schema=table.schema))
        pos += b
    w.close()
    return str(path)


def page_lengths(path: str) -> list[list[int]]:
    """Rows per page, per column."""
    src = open_source(path)
    try:
        return [[int(p.length) for p in cm.pages] for cm in read_metadata(src).columns]
    finally:
        src.close()


def page_buffer_regions(columns: Sequence[Any], first: int = 1) -> list[tuple[int, int, int, int]]:
    """(column, page, offset, size) of every non-empty page buffer of ``columns[first:]`` (a file's column metadata):
    where the corrupt-input tests and scripts/fuzz_corrupt.py put their damage."""
    return [
        (c, p, o, s)
        for c in range(first, len(columns))
        for p, pm in enumerate(columns[c].pages)
        for o, s in zip(pm.buffer_offsets, pm.buffer_sizes)
        if s
    ]


def _walk(msg: Any, out: set[str], prefix: str) -> None:
    if isinstance(msg, pb.CompressiveEncoding) and msg.WhichOneof("compression"):
        out.add(prefix + msg.WhichOneof("compression"))
    if isinstance(msg, pb.BufferCompression):
        scheme = pb.CompressionScheme.Name(msg.scheme).removeprefix("COMPRESSION_ALGORITHM_").lower()
        out.add(prefix + scheme)
        if msg.HasField("level"):
            out.add(f"{prefix}{scheme}@{msg.level}")
    if isinstance(msg, pb.MiniBlockLayout) and msg.HasField("dictionary"):
        out.add(prefix + "mini_block_dictionary")
    for fd, value in msg.ListFields():
        if fd.type != fd.TYPE_MESSAGE:
            continue
        sub = "levels:" if fd.name in ("rep_compression", "def_compression") else prefix
        for v in value if fd.is_repeated else [value]:
            _walk(v, out, sub)


def file_encodings(path: str, columns: Iterable[int] | None = None) -> set[str]:
    """The layout and compression tokens found in the pages of ``columns`` (all by default)."""
    src = open_source(path)
    try:
        md = read_metadata(src)
        out: set[str] = set()
        for i in range(len(md.columns)) if columns is None else columns:
            for page in md.columns[i].pages:
                layout = unpack_encoding(src, page.encoding, pb.PageLayout)
                if layout is None:
                    raise CorruptFileError("page has no layout", path=path, column=i)
                out.add(layout.WhichOneof("layout"))
                _walk(layout, out, "")
        return out
    finally:
        src.close()


# ----------------------------------------------------------------------------- comparing


def plain_type(t: pa.DataType) -> pa.DataType:
    """The type Lance hands back for ``t``: views become plain string / binary (recursively)."""
    return rebuild(t, lambda x: pa.string() if x == pa.string_view() else pa.binary() if x == pa.binary_view() else x)


def normalize(table: pa.Table) -> pa.Table:
    """``table`` as a Lance reader returns it: plain types, one chunk per column."""
    schema = pa.schema([f.with_type(plain_type(f.type)) for f in table.schema], metadata=table.schema.metadata)
    return table.cast(schema).combine_chunks()


def difference(got: pa.Table, exp: pa.Table) -> str | None:
    """None when equal (names, types, values); else where they first differ."""
    if got.column_names != exp.column_names:
        return f"columns {got.column_names} != {exp.column_names}"
    if got.num_rows != exp.num_rows:
        return f"{got.num_rows} rows != {exp.num_rows}"
    for name in exp.column_names:
        a, b = got.column(name).combine_chunks(), exp.column(name).combine_chunks()
        if a.type != b.type:
            return f"column {name}: type {a.type} != {b.type}"
        if pa.types.is_dictionary(a.type):  # a reader may rebuild the dictionary: compare the values
            a, b = a.dictionary_decode(), b.dictionary_decode()
        if not a.equals(b):
            bad = next(i for i in range(len(b)) if not a.slice(i, 1).equals(b.slice(i, 1)))
            return f"column {name}: first difference at row {bad}: got {a[bad]!r}, expected {b[bad]!r}"
    return None


# ----------------------------------------------------------------------------- TPC-H


def tpch_tables(out_dir: str | Path, scale: float, tables: Iterable[str]) -> dict[str, pa.Table]:
    """TPC-H tables by name (generated as Parquet by lancelot/testing/tpch.py), read without Parquet's field ids, views
    kept (pylance writes them as plain types)."""
    out = {}
    for name, path in tpch.generate(out_dir, scale, tables).items():
        t = pq.read_table(path)
        out[name] = t.cast(pa.schema([pa.field(f.name, f.type, f.nullable) for f in t.schema]))
    return out
