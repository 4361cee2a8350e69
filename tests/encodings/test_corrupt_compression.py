"""Bad 2.1/2.2 pages read through the public API: a LanceError naming column and page, never a crash.

Complements tests/encodings/test_corrupt_structural.py (chunk tables, repetition indexes,
full-zip rows, rep/def layers) with the compression layer and more page kinds:
unknown compressions, FSST symbol tables of the wrong length, dictionaries that
do not fit their indices, offsets past their buffer, general-compressed values
claiming huge sizes, bad widths, truncated buffers, and seeded random damage to
every page kind of the conformance matrix.

Files come from pylance 14.0.2 as ``{id, c}`` tables of two pages per column, so
the damaged column is 1 (or more, for nested fields) and the page is 1: the
error must carry the file-wide column index and the page index.  The damage is
done to the file bytes (read from a MemorySource) or to a page's PageLayout
after ``lancelot.LanceFile`` parsed the metadata and before it reads.  Every read
runs under a watchdog (a hang fails the test) and tracemalloc (an allocation of
more than ``MAX_TRACED`` bytes fails it).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

import numpy as np
import pytest

from lancelot.errors import CorruptFileError, LanceError, UnsupportedEncodingError
from lancelot.format.container import read_metadata
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.io.source import MemorySource
from tests.encodings.corrupt import (
    ROWS,
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
from tests.support import conformance as C

pytestmark = pytest.mark.usefixtures("own_metadata")  # (tests/encodings/conftest.py)


# ----------------------------------------------------------------------------- unknown compressions


def _clear(enc: pb.CompressiveEncoding) -> None:
    enc.Clear()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "make",
    [C.floats_smooth, C.strings_text, C.strings_big, C.binary_huge],
    ids=["flat", "fsst", "fullzip_fsst", "fullzip_general"],
)
def test_value_compression_missing(tmp_path, version, make):
    """A CompressiveEncoding with no technique set (what an unknown, newer technique parses as)."""
    data = pylance_bytes(tmp_path, make, version, rows=60 if make is C.binary_huge else ROWS)
    expect_error(data, lambda lay: _clear(values_of(lay)))


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_technique_deep_in_the_tree(tmp_path, version):
    """general(zstd) over an empty (unknown) inner technique."""
    data = pylance_bytes(tmp_path, C.floats_smooth, version, {"lance-encoding:compression": "zstd"}, rows=6000)

    def damage(lay):
        _clear(find(values_of(lay), "general").general.values)

    expect_error(data, damage)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "make,meta,rows",
    [
        (C.floats_smooth, {"lance-encoding:compression": "zstd"}, 6000),  # mini-block chunks
        (C.binary_huge, None, 60),  # full-zip, per value
    ],
    ids=["miniblock", "per_value"],
)
def test_unknown_general_compression_scheme(tmp_path, version, make, meta, rows):
    data = pylance_bytes(tmp_path, make, version, meta, rows)

    def damage(lay):
        find(values_of(lay), "general").general.compression.scheme = 7

    expect_error(data, damage, kind=UnsupportedEncodingError)


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_dictionary_compression(tmp_path, version):
    data = pylance_bytes(tmp_path, C.strings_low_cardinality, version)

    def damage(lay):
        assert lay.mini_block_layout.HasField("dictionary")
        lay.mini_block_layout.dictionary.Clear()
        lay.mini_block_layout.dictionary.SetInParent()

    expect_error(data, damage)


# ----------------------------------------------------------------------------- FSST symbol tables


def _fsst_damage(cut: Callable[[bytes], bytes]):
    def damage(lay):
        fsst = find(values_of(lay), "fsst").fsst
        fsst.symbol_table = cut(bytes(fsst.symbol_table))

    return damage


def _set_header(n_symbols: int | None = None, magic: int | None = None):
    def cut(table: bytes) -> bytes:
        info = int.from_bytes(table[:8], "little")
        if n_symbols is not None:
            info = (info & ~0xFF) | n_symbols
        if magic is not None:
            info = (info & 0xFFFFFFFF) | (magic << 32)
        return info.to_bytes(8, "little") + table[8:]

    return cut


FSST_DAMAGE = {
    "empty": lambda t: b"",
    "header_only_4_bytes": lambda t: t[:4],
    "no_symbols": lambda t: t[:8],
    "one_byte_short_of_its_symbols": lambda t: t[: 8 + 9 * (t[0]) - 1],
    "bad_magic": _set_header(magic=0x12345678),
    "more_symbols_than_bytes": lambda t: _set_header(n_symbols=255)(t[: 8 + 9 * t[0]]),
    "symbol_of_length_zero": lambda t: t[: 8 + 8 * t[0]] + b"\x00" * t[0] + t[8 + 9 * t[0] :],
    "symbol_of_length_nine": lambda t: t[: 8 + 8 * t[0]] + b"\x09" * t[0] + t[8 + 9 * t[0] :],
}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("layout_kind", ["miniblock", "fullzip"])
@pytest.mark.parametrize("how", sorted(FSST_DAMAGE))
def test_fsst_symbol_table_of_the_wrong_length(tmp_path, version, layout_kind, how):
    make = C.strings_text if layout_kind == "miniblock" else C.strings_big
    data = pylance_bytes(tmp_path, make, version)
    _, lay = page_of(data)
    table = bytes(find(values_of(lay), "fsst").fsst.symbol_table)
    assert len(table) == 2312 and table[0] > 10  # pylance's serialization, a trained table
    expect_error(data, _fsst_damage(FSST_DAMAGE[how]), kind=CorruptFileError)


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_codes_past_a_shortened_table(tmp_path, version):
    """A well-formed table with fewer symbols than the codes use."""
    data = pylance_bytes(tmp_path, C.strings_text, version)
    err = expect_error(
        data, _fsst_damage(lambda t: _set_header(n_symbols=2)(t[: 8 + 16] + t[8 + 8 * t[0] :])), kind=CorruptFileError
    )
    assert "FSST" in err.message


# ----------------------------------------------------------------------------- dictionaries, offsets, sizes


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("items", [1, 1 << 40], ids=["fewer_than_indexed", "huge"])
def test_dictionary_item_count(tmp_path, version, items):
    data = pylance_bytes(tmp_path, C.strings_low_cardinality, version)

    def damage(lay):
        lay.mini_block_layout.num_dictionary_items = items

    expect_error(data, damage, kind=CorruptFileError)


@pytest.mark.parametrize("version", VERSIONS)
def test_dictionary_buffer_truncated(tmp_path, version):
    data = pylance_bytes(tmp_path, C.strings_low_cardinality, version)

    def damage(pm):
        pm.buffer_sizes[2] //= 3  # buffers: chunk words, chunks, dictionary

    expect_error(data, meta_damage=damage, kind=CorruptFileError)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("which", ["second", "last"])
def test_variable_offset_past_the_chunk(tmp_path, version, which):
    """A mini-block chunk's string offset pointing past its buffer."""
    data = pylance_bytes(tmp_path, C.strings_unique_short, version)
    _, lay = page_of(data)
    assert find(values_of(lay), "variable")
    pos, size = first_chunk_buffer(data, lay)
    n_values = int.from_bytes(data[pos : pos + 4], "little") // 4 - 1  # offsets[0] = (n + 1) * 4
    at = pos + 4 * (1 if which == "second" else n_values)
    broken = bytearray(data)
    broken[at : at + 4] = struct.pack("<I", size + 1000)
    expect_error(bytes(broken), kind=CorruptFileError)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("num_items", [1 << 40, (1 << 64) - 1])
def test_mini_block_item_count_huge(tmp_path, version, num_items):
    data = pylance_bytes(tmp_path, C.ints_small, version)

    def damage(lay):
        lay.mini_block_layout.num_items = num_items

    expect_error(data, damage)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("bits", [0, 3, 128, 1 << 40])
def test_flat_width(tmp_path, version, bits):
    data = pylance_bytes(tmp_path, C.floats_smooth, version)

    def damage(lay):
        values_of(lay).flat.bits_per_value = bits

    expect_error(data, damage)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("bits", [7, 128])
def test_bitpacking_width(tmp_path, version, bits):
    data = pylance_bytes(tmp_path, C.ints_small, version)

    def damage(lay):
        values_of(lay).inline_bitpacking.uncompressed_bits_per_value = bits

    expect_error(data, damage)


@pytest.mark.parametrize("version", VERSIONS)
def test_bitpacked_chunk_claims_a_width_above_the_type(tmp_path, version):
    """The first chunk's bit width word (32 bits for int32, before the packed words) says 40 bits."""
    data = pylance_bytes(tmp_path, C.ints_small, version)
    _, lay = page_of(data)
    assert values_of(lay).inline_bitpacking.uncompressed_bits_per_value == 32
    pos, _ = first_chunk_buffer(data, lay)
    broken = bytearray(data)
    assert int.from_bytes(data[pos : pos + 4], "little") <= 32
    broken[pos : pos + 4] = struct.pack("<I", 40)
    expect_error(bytes(broken), kind=CorruptFileError)


@pytest.mark.parametrize("version", ["2.1"])  # 2.2 writes these runs as a dictionary
def test_rle_run_lengths_short_of_the_values(tmp_path, version):
    data = pylance_bytes(tmp_path, C.ints_runs, version)
    _, lay = page_of(data)
    assert values_of(lay).WhichOneof("compression") == "rle"
    pos, size = first_chunk_buffer(data, lay, k=1)  # buffers: values, run lengths (u8)
    broken = bytearray(data)
    broken[pos : pos + size] = b"\x01" * size
    expect_error(bytes(broken), kind=CorruptFileError)


def test_rle_run_length_width(tmp_path):
    data = pylance_bytes(tmp_path, C.ints_runs, "2.1")

    def damage(lay):
        values_of(lay).rle.run_lengths.flat.bits_per_value = 12

    expect_error(data, damage)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("claim", [1 << 40, 0], ids=["1TiB", "0"])
def test_general_value_claims_a_size(tmp_path, version, claim):
    """A full-zip value compressed alone: its u64 size prefix says 1 TiB (or nothing)."""
    data = pylance_bytes(tmp_path, C.binary_huge, version, rows=60)
    pm, lay = page_of(data)
    fz = lay.full_zip_layout
    assert fz.value_compression.WhichOneof("compression") == "general"
    # the first row of the page: control word (bits_rep + bits_def, rounded to bytes), u32 length, the value
    ctl = (fz.bits_rep + fz.bits_def + 7) // 8
    pos = pm.buffer_offsets[0]
    first_valid = pos
    while data[first_valid] != 0 and ctl:  # skip null rows (def level != 0: control word only)
        first_valid += ctl
    value = first_valid + ctl + 4
    broken = bytearray(data)
    if bytes(data[value : value + 4]) == b"\x28\xb5\x2f\xfd":  # a bare zstd frame: damage its content size
        broken[value + 4] |= 0xC0
        broken[value + 6 : value + 14] = struct.pack("<Q", claim)
    else:
        broken[value : value + 8] = struct.pack("<Q", claim)
    expect_error(bytes(broken), kind=CorruptFileError)


@pytest.mark.parametrize("version", VERSIONS)
def test_general_chunk_garbage(tmp_path, version):
    """The zstd-compressed body of every mini-block chunk of a page overwritten."""
    data = pylance_bytes(tmp_path, C.floats_smooth, version, {"lance-encoding:compression": "zstd"}, rows=6000)
    pm, lay = page_of(data)
    assert find(values_of(lay), "general")
    pos, size = first_chunk_buffer(data, lay)
    broken = bytearray(data)
    broken[pos + 8 : pos + size] = bytes(np.random.default_rng(1).integers(0, 256, size - 8, dtype=np.uint8))
    expect_error(bytes(broken), kind=CorruptFileError)


@pytest.mark.parametrize("value", [b"", b"\x01\x02\x03", b"\x00" * 16], ids=["empty", "3_bytes", "16_bytes"])
def test_constant_value_of_the_wrong_width(tmp_path, value):
    """A 2.2 constant page (int16) whose inline value is not two bytes."""
    data = pylance_bytes(tmp_path, lambda r, n, z: C.ints_constant(r, n, "none"), "2.2")
    _, lay = page_of(data)
    assert lay.constant_layout.HasField("inline_value")

    def damage(lay):
        lay.constant_layout.inline_value = value

    expect_error(data, damage, kind=CorruptFileError)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("bits", [8, 4096 * 8, 0])
def test_full_zip_value_width(tmp_path, version, bits):
    """A vector page (512-byte values) whose layout claims another value width."""
    data = pylance_bytes(tmp_path, C.vectors, version, rows=400)

    def damage(lay):
        lay.full_zip_layout.bits_per_value = bits

    expect_error(data, damage)


@pytest.mark.parametrize("version", VERSIONS)
def test_packed_struct_widths(tmp_path, version):
    data = pylance_bytes(tmp_path, C.packed_fixed, version, {"lance-encoding:packed": "true"})

    def damage(lay):
        ps = values_of(lay).packed_struct
        ps.bits_per_value[:] = [64, 64, 64]

    expect_error(data, damage)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "make,meta,rows,buffer",
    [
        (C.strings_text, None, ROWS, 1),
        (C.strings_low_cardinality, None, ROWS, 2),
        (C.strings_big, None, ROWS, 0),
        (C.binary_huge, None, 60, 0),
        (C.blobs, {"lance-encoding:blob": "true"}, 600, 1),
        (C.vectors, None, 400, 0),
    ],
    ids=["fsst_chunks", "dictionary", "fullzip_fsst", "fullzip_general", "blob_descriptions", "fullzip_vectors"],
)
def test_truncated_page_buffer(tmp_path, version, make, meta, rows, buffer):
    data = pylance_bytes(tmp_path, make, version, meta, rows)

    def damage(pm):
        pm.buffer_sizes[buffer] = pm.buffer_sizes[buffer] // 2

    expect_error(data, meta_damage=damage)


@pytest.mark.parametrize("version", VERSIONS)
def test_page_buffer_past_the_file(tmp_path, version):
    data = pylance_bytes(tmp_path, C.strings_text, version)

    def damage(pm):
        pm.buffer_offsets[1] = len(data) + (1 << 30)

    expect_error(data, meta_damage=damage)


# ----------------------------------------------------------------------------- seeded random damage


RANDOM_KINDS = {
    "bitpacking": (C.ints_small, None, ROWS),
    "rle_2.1/dictionary_2.2": (C.ints_runs, None, ROWS),
    "fsst": (C.strings_text, None, ROWS),
    "dictionary": (C.strings_low_cardinality, None, ROWS),
    "zstd_bss": (C.floats_rounded, {"lance-encoding:compression": "zstd", "lance-encoding:bss": "on"}, 6000),
    "lz4_strings": (C.strings_text, {"lance-encoding:compression": "lz4"}, ROWS),
    "fullzip_fsst": (C.strings_big, None, 400),
    "fullzip_general": (C.binary_huge, None, 40),
    "fullzip_vectors": (C.vectors, None, 300),
    "packed_struct": (C.packed_fixed, {"lance-encoding:packed": "true"}, ROWS),
    "list_struct": (C.nested(C.LIST_STRUCT), None, ROWS),
    "long_lists": (C.long_lists, None, 80),
    "blob": (C.blobs, {"lance-encoding:blob": "true"}, 300),
}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", sorted(RANDOM_KINDS))
def test_random_damage_never_crashes(tmp_path, version, kind):
    """Seeded byte overwrites in the page buffers of column c: reads succeed or raise a LanceError naming a
    column of c and the damaged page; never another exception, a hang or a huge allocation."""
    make, meta, rows = RANDOM_KINDS[kind]
    data = pylance_bytes(tmp_path, make, version, meta, rows)
    src = MemorySource(data, "f.lance")
    columns = read_metadata(src).columns
    rng = np.random.default_rng(zlib.crc32(f"{kind}/{version}".encode()))
    regions = C.page_buffer_regions(columns)
    for trial in range(12):
        c, p, o, s = regions[int(rng.integers(0, len(regions)))]
        broken = bytearray(data)
        for _ in range(int(rng.integers(1, 5))):
            at = o + int(rng.integers(0, s))
            width = int(rng.integers(1, 5))
            broken[at : at + width] = bytes(rng.integers(0, 256, len(broken[at : at + width]), dtype=np.uint8))
        rows_ = None if trial % 2 else np.sort(rng.choice(rows, 7, replace=False))
        try:
            with guarded():
                read_damaged(bytes(broken), rows=rows_)
        except LanceError as e:
            assert e.column in range(1, len(columns)) and e.page is not None, f"trial {trial}: {e}"
            assert "f.lance" in str(e)
