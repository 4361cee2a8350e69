"""The data shapes of the reference implementation's Rust encoding tests, as our own cases.

The shapes (not the code) of rust/lance-encoding's tests in lancedb/lance: encodings/logical/list.rs,
struct.rs, primitive*.rs, blob.rs, testing.rs (random data of a type, several page sizes) and
fuzz_tests.rs (every structure x width x nullability, edge cases).  Each case is written by lancelot and
by pylance 14.0.2 at every version it applies to and read back by both, with the ranges and takes the
Rust test asks for (tests/support/crosscheck.py).  Where pylance itself fails, the case
names the failure and the test asserts it, with lancelot's behaviour.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pytest

from tests.support.crosscheck import DIRECTIONS, Reads, crosscheck
from tests.support.data import gen_array

pytest.importorskip("lance.file", reason="pylance (the test oracle) is not installed")

ALL = ("2.0", "2.1", "2.2")
MB = {"lance-encoding:structural-encoding": "miniblock"}
FZ = {"lance-encoding:structural-encoding": "fullzip"}


@dataclass
class Shape:
    """One ported case: ``make(version)`` gives the column's batches."""

    name: str
    make: Callable[[str], list[pa.Array]]
    versions: tuple[str, ...] = ("2.0", "2.1", "2.2")
    metadata: dict[str, str] | None = None
    reads: Reads | None = None
    max_page_bytes: int | None = None
    #: a null struct: file version 2.0 holds none, both writers refuse it there (with this message)
    null_struct: bool = False


def _rng(name: str, version: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{name}/{version}".encode()))


def random_of(t: pa.DataType, n: int = 300, batches: int = 3) -> Callable[[str], list[pa.Array]]:
    """testing.rs check_basic_random: seeded random data of ``t`` with nulls, in a few batches
    (no null structs at 2.0, which has none)."""

    def make(version: str) -> list[pa.Array]:
        rng = _rng(str(t), version)
        arr = gen_array(t, n, "some", rng, null_structs=version != "2.0")
        cuts = np.linspace(0, n, batches + 1).astype(int)
        return [arr.slice(a, b - a) for a, b in zip(cuts[:-1], cuts[1:])]

    return make


def _batches(make: Callable[[str], list[pa.Array]], size: int) -> Callable[[str], list[pa.Array]]:
    """``make``'s data re-cut into batches of ``size`` rows."""

    def remade(version: str) -> list[pa.Array]:
        arr = pa.concat_arrays(make(version))
        return [arr.slice(k, size) for k in range(0, len(arr), size)]

    return remade


def fixed(*arrays: pa.Array) -> Callable[[str], list[pa.Array]]:
    return lambda version: list(arrays)


def lst(values, t: pa.DataType | None = None, large: bool = False) -> pa.Array:
    return pa.array(values, (pa.large_list if large else pa.list_)(t or pa.int32()))


def _list_array(offsets, items: pa.Array, valid=None, item_nullable=True) -> pa.Array:
    t = pa.list_(pa.field("item", items.type, nullable=item_nullable))
    mask = None if valid is None else pa.array(~np.array(valid, bool))
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items, type=t, mask=mask)


def _struct(children: dict[str, pa.Array], valid=None, nullable=None) -> pa.Array:
    fields = [pa.field(k, v.type, nullable=(nullable or {}).get(k, True)) for k, v in children.items()]
    mask = None if valid is None else pa.array(~np.array(valid, bool))
    return pa.StructArray.from_arrays(list(children.values()), fields=fields, mask=mask)


SIMPLE = [[1, 2, 3], [4, 5], None, [6, 7, 8]]
SIMPLE_READS = Reads([(0, 2), (0, 3), (1, 3)], [[1, 3], [2]])


def _nested_ends_with_null() -> pa.Array:
    inner = _list_array([0, 1, 2, 3, 4, 5, 5], pa.array([1, 2, 3, 4, 5], pa.int32()), [1, 1, 1, 1, 1, 0])
    return _list_array([0, 1, 2, 3, 4, 5, 6, 6], inner, [1, 1, 1, 1, 1, 1, 0])


def _garbage_nulls() -> pa.Array:  # a null list masking 3 values
    return _list_array([0, 5, 8, 10], pa.array(range(11), pa.uint64()), [1, 0, 1])


def _all_null_garbage() -> pa.Array:  # non-nullable items, every list null, items behind them
    return _list_array([0, 5, 8, 10], pa.array(range(11), pa.uint64()), [0, 0, 0], item_nullable=False)


def _list_dict() -> pa.Array:
    d = pa.DictionaryArray.from_arrays(
        pa.array([0, 1, 2] * 3, pa.uint8()), pa.array(["a", "bb", "ccc"], pa.large_string())
    )
    return _list_array([0, 3, 5, 6, 9], d)


def _two_page_list() -> list[pa.Array]:
    return [lst([[i, 2 * i] for i in range(k, k + 512)], pa.int64()) for k in (0, 512)]


def _struct_of_null_lists() -> pa.Array:  # list.rs empty lists, scenario 4
    return _struct({"lists": lst([None, None, None])}, [1, 0, 1])


def _nullable_struct() -> pa.Array:  # struct.rs test_nullable_struct
    loc = _struct(
        {"x": pa.array([1, 2, 3, 4, 5], pa.int32()), "y": pa.array([6, None, 8, 9, 10], pa.int32())},
        [1, 1, 1, 0, 1],
        nullable={"x": False},
    )
    return _struct({"score": pa.array([None, 12, 13, 14, 15], pa.int32()), "location": loc}, [1, 1, 1, 1, 0])


def _masked_list_in_struct(nonempty: bool) -> pa.Array:
    """struct.rs test_simple_masked_nonempty_list / test_simple_struct_list:
    [[1, 2], [NULL], [4], [], NULL, NULL-STRUCT] (the null struct's list holding a value when ``nonempty``)."""
    items = pa.array([1, 2, None, 4, 5, 6] if nonempty else [1, 2, None, 4], pa.int32())
    offs = [0, 2, 3, 4, 4, 4, 5] if nonempty else [0, 2, 3, 4, 4, 4, 4]
    return _struct({"inner_list": _list_array(offs, items, [1, 1, 1, 1, 0, 1])}, [1, 1, 1, 1, 1, 0])


def _ragged() -> list[pa.Array]:  # struct.rs test_ragged_scheduling: 10k null lists beside ints, 437-row slices
    s = _struct({"l": lst([None] * 10_000), "i": pa.array(np.arange(10_000, dtype=np.int32))})
    return [s.slice(k, min(437, 10_000 - k)) for k in range(0, 10_000, 437)]


def _fuzz_4466() -> pa.Array:
    sizes = [
        13,
        18,
        12,
        7,
        14,
        12,
        6,
        13,
        18,
        8,
        6,
        11,
        17,
        12,
        8,
        19,
        5,
        6,
        10,
        13,
        8,
        6,
        10,
        4,
        8,
        16,
        14,
        12,
        18,
        9,
        17,
        8,
        14,
        18,
        15,
        3,
        2,
        4,
        5,
        1,
        3,
        13,
        1,
        2,
        10,
        4,
        10,
        18,
        7,
        14,
        18,
        13,
        9,
        17,
        3,
        13,
        10,
        14,
        8,
        19,
        17,
        10,
        5,
        11,
        6,
        15,
        10,
        18,
        18,
        20,
        16,
        11,
        12,
        15,
        7,
        9,
        3,
        10,
        20,
        5,
        2,
        3,
        17,
        4,
        8,
        12,
        15,
        6,
        3,
        20,
        15,
        20,
        1,
        19,
        16,
    ]
    assert len(sizes) == 95 and sum(sizes) == 1025
    return lst([list(range(k)) for k in sizes])


def _list_dict_empty_batch() -> pa.Array:  # fuzz_tests.rs test_list_dict_empty_batch
    vals = [b"aaaaa", b"bbbbb", b"ccccc", b"ddddd", b"eeeee"]
    rows = [[vals[i % 5], vals[(i + 1) % 5], vals[(i + 2) % 5]] for i in range(50)]
    rows += [[] if i % 2 == 0 else None for i in range(50)]
    return lst(rows, pa.binary())


def _empty_list_structs(n: int) -> pa.Array:  # list.rs test_list_struct_empty: every list empty
    structs = _struct({"inner": pa.array([], pa.uint64())})
    return pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, np.int32)), structs)


def _deep(d: int) -> pa.DataType:
    t = pa.int32()
    for _ in range(d):
        t = pa.list_(t)
    return t


SHAPES: list[Shape] = [
    # ---- list.rs
    Shape("list<int32> miniblock", random_of(pa.list_(pa.int32())), ALL, MB),
    Shape("list<int32> fullzip", random_of(pa.list_(pa.int32())), ALL, FZ),
    Shape("list<int32> (2.0)", random_of(pa.list_(pa.int32())), ("2.0",)),
    *[
        Shape(f"{d}-deep lists {enc}", random_of(_deep(d)), ALL, md)
        for d in (2, 3, 4, 5)
        for enc, md in (("miniblock", MB), ("fullzip", FZ))
    ],
    *[Shape(f"{d}-deep lists (2.0)", random_of(_deep(d)), ("2.0",)) for d in (2, 5)],
    Shape("large_list<int32>", random_of(pa.large_list(pa.int32()))),
    Shape("list<string>", random_of(pa.list_(pa.string()))),
    Shape("list<list<int32>>", random_of(pa.list_(pa.list_(pa.int32())))),
    Shape(
        "list<struct<inner_str: string not null>>",
        random_of(pa.list_(pa.struct([pa.field("inner_str", pa.string(), nullable=False)]))),
    ),
    Shape(
        "list<struct> all 2Mi lists empty",
        fixed(_empty_list_structs(2 * 1024 * 1024)),
        ALL,
        reads=Reads([(0, 10), (2 * 1024 * 1024 - 5, 2 * 1024 * 1024)], [[0, 1_000_000]]),
    ),
    *[
        Shape(f"simple list {enc}", fixed(lst(SIMPLE)), ALL, md, SIMPLE_READS)
        for enc, md in (("miniblock", MB), ("fullzip", FZ))
    ],
    Shape("simple list (2.0)", fixed(lst(SIMPLE)), ("2.0",), reads=SIMPLE_READS),
    *[
        Shape(
            f"nested list ending with null {enc}",
            fixed(_nested_ends_with_null()),
            ALL,
            md,
            Reads([(0, 2), (0, 3), (5, 7)], [[1, 6], [6]]),
        )
        for enc, md in (("miniblock", MB), ("fullzip", FZ))
    ],
    *[
        Shape(
            f"simple string list {enc}",
            fixed(lst([["a", "bc", "def"], ["gh", None], None, ["ijk", "lmnop", "qrs"]], pa.string())),
            ALL,
            md,
            SIMPLE_READS,
        )
        for enc, md in (("miniblock", MB), ("fullzip", FZ))
    ],
    *[
        Shape(
            f"simple string list no null {enc}",
            fixed(lst([["a", "bc", "def"], ["gh", "zxy"], ["gh", "z"], ["ijk", "lmnop", "qrs"]], pa.string())),
            ALL,
            md,
            SIMPLE_READS,
        )
        for enc, md in (("miniblock", MB), ("fullzip", FZ))
    ],
    *[
        Shape(f"sliced list {enc}", fixed(lst(SIMPLE).slice(1, 2)), ALL, md, Reads([(0, 2), (1, 2)], [[0], [1]]))
        for enc, md in (("miniblock", MB), ("fullzip", FZ))
    ],
    Shape(
        "list<dictionary<uint8, large_string>>",
        fixed(_list_dict()),
        ALL,
        reads=Reads([(0, 2), (1, 3), (2, 4)], [[1], [2]]),
    ),
    Shape(
        "all lists null over non-nullable garbage items",
        fixed(_all_null_garbage()),
        ALL,
        reads=Reads([(0, 3), (1, 2)], [[1], [2]]),
    ),
    *[
        Shape(
            f"list with garbage under a null {enc}",
            fixed(_garbage_nulls()),
            ALL,
            md,
            Reads([(0, 3), (1, 2)], [[1], [2]]),
        )
        for enc, md in (("miniblock", MB), ("fullzip", FZ))
    ],
    *[
        Shape(f"two-page list {enc}", lambda v: _two_page_list(), ALL, md, Reads([(800, 900)]), max_page_bytes=100)
        for enc, md in (("miniblock", MB), ("fullzip", FZ))
    ],
    Shape("simple large list", fixed(lst(SIMPLE, large=True)), ALL, reads=Reads([(0, 2), (0, 3), (1, 3)], [[1, 3]])),
    *[
        Shape(
            f"empty lists {order} {enc}",
            fixed(lst([[[1, 2, 3], [], [None]][i] for i in order])),
            ALL,
            md,
            Reads([], [[1], [0], [2], [0, 1]], 1),
        )
        for order in ((0, 1, 2), (1, 0, 2), (2, 0, 1))
        for enc, md in (("miniblock", MB), ("fullzip", FZ))
    ],
    *[
        Shape(f"all lists empty or null {t} {enc}", fixed(lst([[], None, []], t)), ALL, md, Reads([(0, 2)], [[1]], 1))
        for t in (pa.int32(), pa.string())
        for enc, md in (("miniblock", MB), ("fullzip", FZ))
    ],
    Shape("all lists null", fixed(lst([None, None, None])), ALL, reads=Reads([(0, 2)], [[1]], 1)),
    Shape(
        "null lists in a struct with a null",
        fixed(_struct_of_null_lists()),
        ALL,
        null_struct=True,
        reads=Reads([(0, 2)], [[1]], 1),
    ),
    Shape("list<list> all null", fixed(pa.array([None] * 3, pa.list_(pa.list_(pa.int32())))), ALL),
    Shape("fuzz issue 4466: 95 lists of 1025 values", fixed(_fuzz_4466())),
    # ---- struct.rs
    Shape(
        "struct<a, b> not null",
        random_of(pa.struct([pa.field("a", pa.int32(), False), pa.field("b", pa.int32(), False)])),
    ),
    Shape("nullable struct<score, location<x not null, y>>", fixed(_nullable_struct()), ALL, null_struct=True),
    Shape("struct<list> masked non-empty list", fixed(_masked_list_in_struct(True)), ALL, null_struct=True),
    Shape("struct<list> simple", fixed(_masked_list_in_struct(False)), ALL, null_struct=True),
    Shape(
        "struct<inner_list, outer_int>",
        random_of(pa.struct([("inner_list", pa.list_(pa.int32())), ("outer_int", pa.int32())])),
    ),
    Shape("struct<> (no children)", fixed(pa.array([{}] * 50, pa.struct([]))), ALL),
    Shape(
        "complicated struct",
        random_of(
            pa.struct(
                [
                    ("int", pa.int32()),
                    ("inner", pa.struct([("inner_int", pa.int32()), ("inner_list", pa.list_(pa.int32()))])),
                    ("outer_binary", pa.binary()),
                ]
            )
        ),
    ),
    Shape(
        "ragged scheduling: 10k null lists beside ints, 437-row batches",
        lambda v: _ragged(),
        ALL,
        reads=Reads([(430, 880), (9990, 10_000)], [[0, 436, 437, 9999]], 1000),
    ),
    # ---- primitive.rs, blob.rs
    Shape(
        "fuzz issue 4492: list<fixed_size_binary(32)> miniblock",
        _batches(random_of(pa.list_(pa.binary(32)), 2741, 1), 100),
        ALL,
        MB,
        Reads([(0, 500)], [[0, 1370, 2740]], 100),
    ),
    Shape(
        "large low-cardinality dictionary of 500-byte strings",
        fixed(pa.array([f"value_{i % 100:04}_{'x' * 500}" for i in range(10_000)])),
        ALL,
        reads=Reads([(9990, 10_000)], [[0, 5000]]),
    ),
    Shape(
        "blob round trip",
        fixed(pa.array([b"\1" * 1024, None, b"\2" * 10240, b"\3" * 102400], pa.large_binary())),
        ALL,
        {"lance-encoding:blob": "true"},
    ),
    Shape(
        "blob encoding simple",
        fixed(pa.array([b"hello world", None, bytes(100 * 1024), b""], pa.large_binary())),
        ALL,
        {"lance-encoding:blob": "true"},
    ),
    # ---- fuzz_tests.rs edge cases
    Shape("single int32", fixed(pa.array([42], pa.int32()))),
    Shape("single string", fixed(pa.array(["test"]))),
    Shape("all null int32", fixed(pa.array([None] * 3, pa.int32()))),
    Shape("all null string", fixed(pa.array([None] * 3, pa.string()))),
    Shape("list dict then empty batch", fixed(_list_dict_empty_batch()), ALL, reads=Reads([(50, 100)])),
]


# fuzz_tests.rs: structure x width x nullability (fixed-size lists of fixed-width values only)
FIXED = [
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.float16(),
    pa.float32(),
    pa.float64(),
    pa.binary(3),
    pa.binary(100),
]
VARIABLE = [pa.string(), pa.binary(), pa.large_string(), pa.large_binary()]


def _fuzz(t: pa.DataType, structure: str, nullable: bool) -> Shape:
    wrapped = {"primitive": t, "list": pa.list_(t), "fsl": pa.list_(t, 7)}[structure]
    nulls = "some" if nullable else "none"

    def make(version: str) -> list[pa.Array]:
        arr = gen_array(wrapped, 400, nulls, _rng(f"{wrapped}{nulls}", version), child_nulls=nulls)
        return [arr.slice(k, 100) for k in range(0, 400, 100)]  # batch size 100

    enc = "miniblock" if structure != "list" or not nullable else "fullzip"
    md = {"lance-encoding:structural-encoding": enc}
    return Shape(
        f"fuzz {structure}<{t}> {'nullable' if nullable else 'non-null'} {enc}",
        make,
        ALL,
        md,
        Reads([(0, 400), (150, 350)], [[0, 200, 399]]),
    )


SHAPES += [_fuzz(t, s, nullable) for t in FIXED for s in ("primitive", "list", "fsl") for nullable in (False, True)]
SHAPES += [_fuzz(t, s, nullable) for t in VARIABLE for s in ("primitive", "list") for nullable in (False, True)]

CELLS = [(s, v) for s in SHAPES for v in s.versions]


@pytest.mark.parametrize("page", [4096, 1024 * 1024], ids=["4KiB-pages", "1MiB-pages"])
@pytest.mark.parametrize("shape,version", CELLS, ids=[f"{s.name}@{v}" for s, v in CELLS])
def test_reference_shape(tmp_path, shape: Shape, version: str, page: int):
    """testing.rs runs every case with 4 KiB and 1 MiB of data cached per column (its page sizes): here
    lancelot's max_page_bytes and pylance's data_cache_bytes."""
    batches = shape.make(version)
    schema = pa.schema([pa.field("c", batches[0].type, metadata=shape.metadata)])
    table = pa.Table.from_batches([pa.record_batch([b], schema=schema) for b in batches], schema=schema)
    sizes = [len(b) for b in batches]
    result = crosscheck(
        tmp_path,
        table,
        version,
        sizes,
        max_page_bytes=shape.max_page_bytes or page,
        reads=shape.reads,
        pylance_cache_bytes=page,
        pylance_page_bytes=shape.max_page_bytes,
    )
    if shape.null_struct and version == "2.0":
        # 2.0 has no struct validity: pylance refuses the write ("The struct field `c` contains 1 null
        # value(s), but Lance file version 2.0 ..."), and so does lancelot, with an UnsupportedTypeError
        assert set(result.problems) == set(DIRECTIONS)
        assert all(
            p.startswith("write failed: UnsupportedTypeError: struct field 'c' has")
            for k, p in result.problems.items()
            if k.startswith("lancelot->")
        ), result.problems
        assert all(
            p.startswith("write failed: ValueError") and "contains 1 null value(s)" in p
            for k, p in result.problems.items()
            if k.startswith("pylance->")
        ), result.problems
        return
    result.assert_equal()
