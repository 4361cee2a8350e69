"""Bad 2.1/2.2 (and 2.0) pages that scripts/fuzz_corrupt.py found to break the contract (a LanceError
naming column and page, never a crash), kept as regression tests, each through the numba kernels and
through their numpy formulations (``decode_path``)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.encodings.compression import fsst
from lancelot.encodings.structural import miniblock_points
from lancelot.errors import CorruptFileError
from lancelot.format.container import pack_encoding, read_metadata, unpack_encoding
from lancelot.format.pb import encodings_v2_0_pb2 as pb20
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.io.source import MemorySource
from lancelot.util import jit
from tests.encodings.corrupt import (
    VERSIONS,
    expect_error,
    find,
    first_chunk_buffer,
    guarded,
    page_of,
    pylance_bytes,
    read_damaged,
    values_of,
)
from tests.encodings.helpers import forget_shared
from tests.support import conformance as C

pytestmark = pytest.mark.usefixtures("own_metadata")  # (tests/encodings/conftest.py)


# ----------------------------------------------------------------------------- found by scripts/fuzz_corrupt.py


@pytest.fixture(params=["kernel", "numpy"])
def decode_path(request, monkeypatch):
    """Every numpy-until-hot path forced onto its numba kernel, or onto its numpy formulation."""
    on = request.param == "kernel"
    monkeypatch.setattr(jit.NumpyUntilHot, "ready", lambda self: on)
    monkeypatch.setattr(jit.NumpyUntilHot, "numpy_call", lambda self, warm, work=0: None)
    monkeypatch.setitem(fsst.mode, "decode", request.param)
    monkeypatch.setitem(miniblock_points.mode, "points", request.param)
    return request.param


def warmed(data: bytes, rows) -> bytes:
    """``data``, after reading its undamaged rows once: kernels compile outside ``guarded``'s tracing."""
    read_damaged(data, rows=rows)
    return data


TAKES = {"read": None, "take_3": [601, 650, 1100], "take_300": list(range(600, 1200, 2))}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("rows", sorted(TAKES))
def test_inline_bitpacking_width_word_negative_as_int64(tmp_path, version, rows, decode_path):
    """A 64-bit chunk width word with its top bit set: read as an int64 it passed the ``w > 64``
    check, and the chunks kernel unpacked with a negative width (a segfault)."""
    data = warmed(pylance_bytes(tmp_path, C.ints_medium, version), TAKES[rows])
    _, lay = page_of(data)
    assert values_of(lay).inline_bitpacking.uncompressed_bits_per_value == 64
    pos, _ = first_chunk_buffer(data, lay)
    broken = bytearray(data)
    broken[pos : pos + 8] = struct.pack("<q", -(1 << 62) - 3)
    err = expect_error(bytes(broken), rows=TAKES[rows], kind=CorruptFileError)
    assert "width" in err.message


@pytest.mark.parametrize("version", ["2.0", *VERSIONS])
@pytest.mark.parametrize("length", [1 << 63, (1 << 64) - 1, 7])
def test_page_length_beyond_the_file(tmp_path, version, length):
    """A page claiming more rows than an int64 holds (an OverflowError at 2.1+, silently wrapped
    row arithmetic at 2.0), or fewer rows than the file has: a CorruptFileError naming the column."""
    data = pylance_bytes(tmp_path, C.ints_small, version)

    def damage(pm):
        pm.length = length

    with guarded(), pytest.raises(CorruptFileError) as info:
        read_damaged(data, meta_damage=damage, rows=[1, 700])
    assert info.value.column == 1 and "f.lance" in str(info.value)
    assert info.value.page in (1, None)  # a total short of the file's rows is no one page's fault


def _damage_v20(data: bytes, damage: Callable, col: int = 1, page: int = 1, rows=None):
    """Read column c of a 2.0 file after ``damage(ArrayEncoding)`` of one page."""
    forget_shared()
    lf = lancelot.LanceFile(MemorySource(bytes(data), "f.lance"))
    pm = lf.metadata.columns[col].pages[page]
    enc = unpack_encoding(MemorySource(bytes(data)), pm.encoding, pb20.ArrayEncoding)
    damage(enc)
    pm.encoding.CopyFrom(pack_encoding(enc))
    return lf.read(columns=["c"]) if rows is None else lf.take(rows, columns=["c"])


@pytest.mark.parametrize("rows", sorted(TAKES))
@pytest.mark.parametrize(
    "make,bits,claim", [(C.ints_sorted, 64, 32), (C.floats_rounded, 32, 1)], ids=["int64", "float"]
)
def test_v2_0_flat_width_of_another_type(tmp_path, rows, make, bits, claim):
    """A 2.0 page whose Flat encoding claims another width: an int64 page of 32-bit values (an
    ArrowInvalid) or a float page of 1-bit values (booleans: an ArrowTypeError joining the pages)."""
    data = pylance_bytes(tmp_path, make, "2.0")

    def damage(enc):
        flat = next(
            e.flat for e in _walk_v20(enc) if e.WhichOneof("array_encoding") == "flat" and e.flat.bits_per_value == bits
        )
        flat.bits_per_value = claim

    with guarded(), pytest.raises(CorruptFileError) as info:
        _damage_v20(data, damage, rows=TAKES[rows])
    assert info.value.column == 1 and "f.lance" in str(info.value)
    if rows == "read":
        assert info.value.page == 1


def _walk_v20(msg):
    """Every ArrayEncoding in the tree under ``msg`` (depth first)."""
    if isinstance(msg, pb20.ArrayEncoding):
        yield msg
    for fd, sub in msg.ListFields():
        if fd.message_type is not None and not fd.is_repeated:
            yield from _walk_v20(sub)


def test_v2_0_list_items_disagree_with_the_item_column(tmp_path):
    """A 2.0 list page claiming twice its items: the rows it asks of the item column do not exist."""
    data = pylance_bytes(tmp_path, C.list_of_big_strings, "2.0", rows=100)

    def damage(enc):
        enc.list.num_items *= 2

    with guarded(), pytest.raises(CorruptFileError) as info:
        _damage_v20(data, damage, page=0)
    assert info.value.column == 1 and "f.lance" in str(info.value) and "items" in info.value.message


@pytest.mark.parametrize("version", VERSIONS)
def test_columns_of_a_nested_field_disagree(tmp_path, version):
    """One column of list<struct<list, string>> read with another rep/def layer (a list that may be null
    or empty read as one that may only be null): its spine no longer fits the others'; the error names
    the field's first column."""
    data = pylance_bytes(tmp_path, C.nested(C.THREE_DEEP), version, rows=600)

    def damage(lay):
        layers = lay.mini_block_layout.layers
        assert layers[1] == pb.RepDefLayer.REPDEF_NULL_AND_EMPTY_LIST
        layers[1] = pb.RepDefLayer.REPDEF_NULLABLE_LIST

    with guarded(), pytest.raises(CorruptFileError) as info:
        read_damaged(data, damage, page=0, rows=[1, 137, 174, 279])
    assert info.value.column in range(1, 5) and "f.lance" in str(info.value)


def _strings_no_nulls(rng, n, nulls):
    return C.strings_text(rng, n, "none")


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_take_across_pages_names_the_page(tmp_path, version, decode_path):
    """A take of rows of both pages decodes their FSST strings in one call (a table per page): a
    code past page 1's table, in its first chunk's first string, is reported with page 1."""
    data = warmed(pylance_bytes(tmp_path, _strings_no_nulls, version), list(range(550, 650)))
    _, lay = page_of(data)
    n_symbols = bytes(find(values_of(lay), "fsst").fsst.symbol_table)[0]
    assert n_symbols < 250
    pos, _ = first_chunk_buffer(data, lay)
    first = int.from_bytes(data[pos : pos + 4], "little")  # offsets, then the codes
    broken = bytearray(data)
    broken[pos + first] = 250
    err = expect_error(bytes(broken), rows=list(range(550, 650)), kind=CorruptFileError)
    assert "FSST" in err.message


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("rows", [list(range(2990, 3010)), list(range(2900, 3100)), list(range(0, 6000, 11))])
def test_general_chunk_garbage_in_a_take_across_pages(tmp_path, version, rows, decode_path):
    """Page 1's first zstd chunk overwritten, read by a take of rows of both pages (their chunks are
    inflated in one call): the error names page 1."""
    data = pylance_bytes(tmp_path, C.floats_smooth, version, {"lance-encoding:compression": "zstd"}, rows=6000)
    pm, lay = page_of(warmed(data, rows))
    assert find(values_of(lay), "general")
    pos, size = first_chunk_buffer(data, lay)
    broken = bytearray(data)
    broken[pos + 8 : pos + size] = bytes(np.random.default_rng(1).integers(0, 256, size - 8, dtype=np.uint8))
    expect_error(bytes(broken), rows=rows, kind=CorruptFileError)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("zstd", [False, True], ids=["flat", "zstd_flat"])
@pytest.mark.parametrize("rows", [[5, 3001], list(range(2900, 3100))], ids=["take_2", "take_200"])
def test_flat_width_of_2_gib_in_a_take(tmp_path, version, zstd, rows, decode_path):
    """Page 1's Flat width says 2**31 bits: the point read allocated rows * 256 MiB for the values
    before its kernel found them past their chunks (a MemoryError at best)."""
    meta = {"lance-encoding:compression": "zstd"} if zstd else None
    data = warmed(pylance_bytes(tmp_path, C.floats_smooth, version, meta, rows=6000), rows)

    def damage(lay):
        find(values_of(lay), "flat").flat.bits_per_value = 1 << 31

    expect_error(data, damage, rows=rows)


@pytest.mark.parametrize("rows", [list(range(1000, 1200)), list(range(0, 1200, 2))], ids=["take_200", "take_600"])
def test_v2_0_binary_offset_past_int64_in_a_take(tmp_path, rows):
    """A 2.0 string page's u64 end offset with its top bit set: the take plan's int64 start went
    negative and passed the monotonic check; now a CorruptFileError naming column 1 and page 1."""
    data = pylance_bytes(tmp_path, _strings_no_nulls, "2.0")
    pm = read_metadata(MemorySource(data)).columns[1].pages[1]
    assert pm.buffer_sizes[0] == 8 * pm.length  # the end offsets, u64
    broken = bytearray(data)
    broken[pm.buffer_offsets[0] + 8 * 501 + 7] = 0x90  # row 1101's end, row 1102's start
    expect_error(bytes(broken), rows=rows, kind=CorruptFileError)


def _fuzz_script():
    """scripts/fuzz_corrupt.py as a module (its kinds, damage and trial functions)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("fuzz_corrupt", Path(__file__).parents[2] / "scripts/fuzz_corrupt.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "kind,version,mode,seed",
    [
        ("list_of_big_strings", "2.1", "numpy", 959),
        ("three_deep", "2.1", "numpy", 202),
        ("list_struct", "2.1", "kernel", 202),
        ("list_struct_no_nulls", "2.1", "numpy", 376),
        ("three_deep", "2.2", "kernel", 885),
        ("fullzip_general", "2.1", "numpy", 1108),
    ],
)
def test_fuzz_trials_that_broke_the_contract(tmp_path, monkeypatch, kind, version, mode, seed):
    """Trials of scripts/fuzz_corrupt.py, replayed, that broke the contract:

    * errors naming the column but not the page: two flipped bits in page 0 of a list column gave
      one row too many, seen only once the pages were joined (the page-by-page read now checks each
      page's rows; a point read's error without a page takes the page-by-page read's); the columns
      of a nested field that do not fit together (now named by the page of the first column whose
      rows do not merge on their own);
    * a zstd frame whose damaged header declared a huge content size, which python-zstandard
      allocated (now checked against the size prefix first)."""
    fuzz = _fuzz_script()
    on = mode == "kernel"
    monkeypatch.setattr(jit.NumpyUntilHot, "ready", lambda self: on)
    monkeypatch.setattr(jit.NumpyUntilHot, "numpy_call", lambda self, warm, work=0: None)
    monkeypatch.setitem(fsst.mode, "decode", mode)
    monkeypatch.setitem(miniblock_points.mode, "points", mode)
    make, meta, rows, *more = fuzz.kinds()[kind]
    nulls, pages = (more + ["some", 2][len(more) :])[:2]
    assert pages == 2
    rng = np.random.default_rng(zlib.crc32(f"{kind}/{version}".encode()))
    arr = make(rng, rows, nulls)
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("c", arr.type, metadata=meta)])
    table = pa.Table.from_arrays([pa.array(np.arange(rows), pa.int64()), arr], schema=schema)
    path = C.write_pylance(tmp_path / "src.lance", table, version, [rows // 2, rows - rows // 2])
    with open(path, "rb") as f:
        data = f.read()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    assert fuzz.trial(kind, version, seed, data, rows, scratch) == []
