"""The fast 2.1/2.2 read path: many chunks per page decoded at once, equal to pylance 14.0.2.

tests/file/test_read_structural.py writes tiny pages (a few hundred rows, one or two chunks);
here pylance writes big pages (tens of thousands of rows, hundreds of mini-block
chunks of different bit widths, levels and runs) so that the batch kernels of
compression/chunked.py and the row selection of miniblock.py meet chunk
boundaries, rows spilling over chunks, raw and packed level tails and FSST
across chunks.  Every read is compared with pylance's own read; the batch path
is also compared with the chunk-by-chunk fallback it replaces.
"""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

import lancelot
from lancelot.encodings.compression import chunked
from lancelot.encodings.compression.bitpacking import compress_out_of_line_bitpacking
from lancelot.encodings.compression.block import FixedWidthBlock
from lancelot.encodings.compression.rle import compress_rle
from lancelot.encodings.compression.segments import gather, ranges_index, segments_mask
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from tests.encodings.helpers import segments
from tests.helpers import pylance_write_column

VERSIONS = ["2.1", "2.2"]
N = 30_000


def _vocab(rng, size: int) -> list[str]:
    return [
        " ".join(
            "".join(chr(c) for c in rng.integers(97, 123, int(rng.integers(2, 9))))
            for _ in range(int(rng.integers(1, 6)))
        )
        for _ in range(size)
    ]


def _words(rng, n: int, vocab: int = 400) -> list[str]:
    base = _vocab(rng, vocab)
    return [base[int(i)] for i in rng.integers(0, vocab, n)]


def _nullify(rng, values: list, p: float) -> list:
    return [None if rng.random() < p else v for v in values]


def _column(case: str, rng) -> pa.Array:
    if case == "int64_widths":  # chunk bit widths differ: small and huge values by region
        v = rng.integers(0, 1 << 10, N)
        v[N // 3 : N // 2] = rng.integers(0, 1 << 40, N // 2 - N // 3)
        return pa.array(v, pa.int64())
    if case == "int32_nullable":
        return pa.array(_nullify(rng, rng.integers(-5000, 5000, N).tolist(), 0.3), pa.int32())
    if case == "float64":
        return pa.array(rng.random(N))
    if case == "bool_nullable":
        return pa.array(_nullify(rng, (rng.random(N) < 0.5).tolist(), 0.2), pa.bool_())
    if case == "runs":  # RLE
        return pa.array(np.repeat(rng.integers(0, 1 << 30, N // 300), 300), pa.int64())
    if case == "text":  # FSST (more than 32 KiB of distinct text)
        return pa.array(_vocab(rng, N))
    if case == "general_zstd":  # General(zstd) over inline bitpacking, per chunk
        return pa.array(rng.integers(0, 1 << 30, N).astype(np.int32))
    if case == "bss_lz4":  # General(lz4) over byte-stream-split
        return pa.array(np.cumsum(rng.random(N)))
    if case == "text_nullable":
        return pa.array(_nullify(rng, _words(rng, N), 0.25))
    if case == "low_cardinality":
        return pa.array(_nullify(rng, [f"w{int(i)}" for i in rng.integers(0, 7, N)], 0.1))
    if case == "binary":
        return pa.array([rng.bytes(int(rng.integers(0, 40))) for _ in range(N)], pa.binary())
    if case == "list_int":
        return pa.array(
            [None if rng.random() < 0.1 else rng.integers(0, 99, int(rng.integers(0, 6))).tolist() for _ in range(N)],
            pa.list_(pa.int32()),
        )
    if case == "long_lists":  # rows spanning several chunks
        return pa.array(
            [
                None
                if i % 11 == 5
                else []
                if i % 13 == 7
                else rng.integers(0, 1 << 20, int(rng.integers(0, 3000))).tolist()
                for i in range(300)
            ],
            pa.list_(pa.int64()),
        )
    if case == "list_string":
        base = _vocab(rng, 2000)
        return pa.array(
            [
                None if rng.random() < 0.1 else [base[int(i)] for i in rng.integers(0, 2000, rng.integers(4))]
                for _ in range(N)
            ],
            pa.list_(pa.string()),
        )
    if case == "struct":
        t = pa.struct([("a", pa.int32()), ("b", pa.string())])
        return pa.array(
            [None if rng.random() < 0.1 else {"a": int(rng.integers(0, 99)), "b": f"s{i % 17}"} for i in range(N)], t
        )
    if case == "big_strings":  # full-zip, variable
        return pa.array(_nullify(rng, [rng.bytes(int(rng.integers(300, 600))).hex() for _ in range(2000)], 0.2))
    if case == "vectors":  # full-zip, fixed, no control word
        return pa.FixedSizeListArray.from_arrays(pa.array(rng.random(4000 * 96).astype(np.float32)), 96)
    if case == "vectors_nullable":  # full-zip, fixed, with a control word
        vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(4000 * 96).astype(np.float32)), 96)
        return pa.array(_nullify(rng, vec.to_pylist(), 0.2), vec.type)
    raise KeyError(case)


CASES = [
    "int64_widths",
    "int32_nullable",
    "float64",
    "bool_nullable",
    "runs",
    "text",
    "text_nullable",
    "low_cardinality",
    "binary",
    "list_int",
    "long_lists",
    "list_string",
    "struct",
    "big_strings",
    "vectors",
    "vectors_nullable",
    "general_zstd",
    "bss_lz4",
]
METADATA = {
    "general_zstd": {"lance-encoding:compression": "zstd"},
    "bss_lz4": {"lance-encoding:compression": "lz4", "lance-encoding:bss": "on"},
}


def _pl(path: str, fn: str, *args) -> pa.Array:
    reader = LanceFileReader(path)
    return getattr(reader, fn)(*args).to_table().column("c").combine_chunks()


@pytest.fixture(scope="module", params=[(c, v) for c in CASES for v in VERSIONS], ids=lambda p: f"{p[0]}-{p[1]}")
def written(request, tmp_path_factory):
    case, version = request.param
    rng = np.random.default_rng(zlib.crc32(f"{case}/{version}".encode()))
    path = pylance_write_column(
        tmp_path_factory.mktemp("fast") / f"{case}.lance", _column(case, rng), version, METADATA.get(case)
    )
    return case, path


def test_full_read_ranges_and_takes(written):
    case, path = written
    f = lancelot.LanceFile(path)
    n = f.num_rows
    full = _pl(path, "read_all")
    assert f.read().column("c").combine_chunks().equals(full), case
    rng = np.random.default_rng(5)
    for a, b in [(0, 1), (1, n - 1), (n // 3, n // 3 + 1234), (n - 7, n), (4095, 4097)]:
        a, b = min(a, n - 1), min(b, n)
        got = f.read_range(a, b).column("c").combine_chunks()
        assert got.equals(_pl(path, "read_range", a, b - a)), f"{case}: read_range({a}, {b})"
    takes = [
        np.unique(rng.integers(0, n, 10)),
        np.unique(rng.integers(0, n, 300)),
        np.array([n - 1]),
        np.array([0, n - 1]),
        np.unique(np.concatenate([np.arange(n // 3, n // 3 + 100) % n, rng.integers(0, n, 20)])),
    ]
    for rows in takes:
        got = f.take(rows).column("c").combine_chunks()
        assert got.equals(_pl(path, "take_rows", rows.tolist())), f"{case}: take {rows[:8]}..."


def test_batch_equals_chunk_by_chunk(written, monkeypatch):
    """The batch kernels give exactly what decoding one chunk at a time gives."""
    case, path = written
    fast = lancelot.LanceFile(path).read()
    import lancelot.encodings.structural.miniblock_chunks as mc

    monkeypatch.setattr(mc, "decompress_chunks", lambda *a, **k: None)
    monkeypatch.setattr(mc, "decompress_level_chunks", lambda *a, **k: None)
    slow = lancelot.LanceFile(path).read()
    assert fast.equals(slow), case


def test_point_reads_equal_chunk_reads(written, monkeypatch):
    """Scattered rows read value by value (over the whole column, or page by page) equal whole-chunk decoding."""
    import lancelot.encodings.structural.field as fld
    import lancelot.encodings.structural.miniblock as mb

    case, path = written
    n = lancelot.LanceFile(path).num_rows
    rng = np.random.default_rng(9)
    takes = [
        np.unique(rng.integers(0, n, 25)),
        np.array([0]),
        np.array([n - 1]),
        np.arange(min(n, 40)),
        np.unique(rng.integers(0, n, 1500)),
    ]
    column = [lancelot.LanceFile(path).take(r) for r in takes]
    monkeypatch.setattr(fld.StructuralFieldReader, "_points_over", lambda self, touched: None)
    paged = [lancelot.LanceFile(path).take(r) for r in takes]
    monkeypatch.setattr(mb.PointReader, "of", classmethod(lambda cls, layout, word: None))
    monkeypatch.setattr(mb, "POINT_ROWS", -1)
    chunks = [lancelot.LanceFile(path).take(r) for r in takes]
    for rows, a, b, c in zip(takes, column, paged, chunks):
        assert a.equals(c) and b.equals(c), f"{case}: take {rows[:6]}"


def test_column_point_reader_is_used(written):
    """Top-level primitive fields of pylance files take the whole-column point path (mini-block and fixed-width
    full-zip pages)."""
    case, path = written
    f = lancelot.LanceFile(path)
    f.take([0, 3])
    reader = f._reader(f.schema.field("c"))
    expected = case in {
        "int64_widths",
        "int32_nullable",
        "float64",
        "bool_nullable",
        "runs",
        "text",
        "text_nullable",
        "low_cardinality",
        "binary",
        "vectors",
        "vectors_nullable",
        "general_zstd",
    }
    assert (reader._column_points() is not None) == expected, case


def test_ranges_either_side_of_the_point_span(written, monkeypatch):
    """Ranges up to POINT_SPAN_ROWS go value by value over the column, longer ones chunk by chunk: both equal
    pylance, and a long range forced through the point path equals the chunk path."""
    import lancelot.encodings.structural.field as fld

    case, path = written
    f = lancelot.LanceFile(path)
    n = f.num_rows
    span = fld.POINT_SPAN_ROWS
    for a, k in [(n // 5, span), (n // 5, span + 1), (n // 2 + 17, 3 * span + 5)]:
        a, b = min(a, n - 1), min(a + k, n)
        got = f.read_range(a, b).column("c").combine_chunks()
        assert got.equals(_pl(path, "read_range", a, b - a)), f"{case}: read_range({a}, {b})"
    a, b = n // 7, min(n, n // 7 + 10_000)
    chunks = f.read_range(a, b).column("c").combine_chunks()
    monkeypatch.setattr(fld, "POINT_SPAN_ROWS", 1 << 20)
    points = lancelot.LanceFile(path).read_range(a, b).column("c").combine_chunks()
    assert points.equals(chunks), case


# ----------------------------------------------------------------------------- kernels


def _unpack_reference(packed: np.ndarray, width: int, t: int) -> np.ndarray:
    """FastLanes unpacking spelled out bit by bit (bitpacking.py's module docstring), for checking the kernel."""
    lanes = 1024 // t
    words = packed.view(f"<u{t // 8}").reshape(-1, width, lanes)
    bits = np.unpackbits(words.transpose(0, 2, 1).copy().view(np.uint8), bitorder="little")
    bits = bits.reshape(len(words), lanes, width * t)[:, :, : t * width].reshape(len(words), lanes, t, width)
    rows = (bits.astype(np.uint64) << np.arange(width, dtype=np.uint64)).sum(axis=-1, dtype=np.uint64)
    out = np.zeros((len(words), 1024), dtype=np.uint64)
    order = np.array([0, 4, 2, 6, 1, 5, 3, 7])
    for r in range(t):
        first = order[r // 8] * 16 + (r % 8) * 128
        out[:, first : first + lanes] = rows[:, :, r]
    return out


@pytest.mark.parametrize("t", [8, 16, 32, 64])
def test_unpack_kernel_matches_bit_by_bit_reference(t):
    from lancelot.encodings.compression.bitpacking import unpack_chunks

    rng = np.random.default_rng(t)
    for width in sorted({1, 2, 3, t // 2 - 1, t // 2, t // 2 + 1, t - 1, t} - {0}):
        packed = rng.integers(0, 256, 3 * 128 * width, dtype=np.uint8)
        got = unpack_chunks(packed, width, t)
        assert got.dtype == np.dtype(f"uint{t}") and got.shape == (3, 1024)
        assert np.array_equal(got.astype(np.uint64), _unpack_reference(packed, width, t)), (t, width)
    with pytest.raises(ValueError):
        from lancelot.encodings.compression.bitpacking_kernel import unpack_words

        unpack_words(np.zeros((1, t + 1, 1024 // t), dtype=f"uint{t}"), t + 1)


def test_gather_matches_concatenation():
    rng = np.random.default_rng(1)
    data = rng.integers(0, 255, 5000, dtype=np.uint8)
    for trial in range(200):
        k = int(rng.integers(0, 12))
        if trial % 3 == 0:  # sorted, disjoint
            cuts = np.sort(rng.choice(5000, 2 * k, replace=False))
            starts, lengths = cuts[0::2], cuts[1::2] - cuts[0::2]
        else:  # anything, overlaps included
            starts = rng.integers(0, 4000, k)
            lengths = rng.integers(0, 900, k)
        want = np.concatenate([data[s : s + n] for s, n in zip(starts, lengths)]) if k else data[:0]
        assert np.array_equal(gather(data, starts, lengths), want)
        assert np.array_equal(data[ranges_index(starts, lengths)], want)
    m = segments_mask(np.array([2, 5]), np.array([2, 0]), 0, 8)
    assert m.tolist() == [False, False, True, True, False, False, False, False]


@pytest.mark.parametrize("width", [0, 1, 3, 9])
def test_out_of_line_level_chunks(width):
    """Rep/def levels of many chunks, each tail packed or raw (pylance's out-of-line bitpacking)."""
    rng = np.random.default_rng(width)
    counts = np.array([1024, 3000, 1, 700, 2048, 5, 0, 1500])
    parts, want, enc = [], [], None
    for c in counts:
        v = rng.integers(0, 1 << width, c).astype(np.uint16) if width else np.zeros(c, np.uint16)
        enc, (buf,) = compress_out_of_line_bitpacking(FixedWidthBlock(v.view(np.uint8), 16, int(c)), width)
        parts.append(buf)
        want.append(v)
    got = chunked.decompress_level_chunks(enc, segments(parts), counts)
    assert np.array_equal(got, np.concatenate(want))


def test_rle_chunks_drop_surplus_runs():
    rng = np.random.default_rng(2)
    counts = np.array([300, 1, 1000, 0, 77])
    values, lengths, want, enc = [], [], [], None
    for c in counts:
        v = np.repeat(rng.integers(0, 1 << 20, 40), rng.integers(1, 600, 40))[:c].astype(np.int32)
        enc, (vals, lens) = compress_rle(FixedWidthBlock(v.view(np.uint8), 32, int(c)))
        values.append(vals)
        lengths.append(lens)
        want.append(v)
    block = chunked.decompress_chunks(enc, [segments(values), segments(lengths)], counts)
    assert np.array_equal(block.data.view(np.int32), np.concatenate(want))


def test_fsst_symbol_table_is_parsed_once():
    chunked.symbol_table.cache_clear()
    arr = pa.array(_vocab(np.random.default_rng(3), 20000))
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = pylance_write_column(f"{d}/t.lance", arr, "2.2")
        f = lancelot.LanceFile(path)
        assert f.read().column("c").combine_chunks().equals(arr)
        f.take([1, 5000, 19999])
    info = chunked.symbol_table.cache_info()
    assert info.misses >= 1 and info.hits >= 1 and info.misses <= 4  # one parse per page's table


def test_unsupported_batch_kernel_falls_back():
    """A technique without a batch kernel answers None (the caller goes chunk by chunk), and General over it
    decompresses nothing (the bytes here are not even valid zstd)."""
    fsl = pb.CompressiveEncoding(
        fixed_size_list=pb.FixedSizeList(
            items_per_value=2, values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=32))
        )
    )
    seg = segments([np.zeros(16, np.uint8)])
    assert chunked.decompress_chunks(fsl, [seg], np.array([2])) is None
    general = pb.CompressiveEncoding(
        general=pb.General(compression=pb.BufferCompression(scheme=pb.COMPRESSION_ALGORITHM_ZSTD), values=fsl)
    )
    assert chunked.decompress_chunks(general, [seg], np.array([2])) is None


#: what pylance 14 chose for some cases (the kernels these tests are meant to reach)
EXPECTED = {
    "text": "fsst",
    "general_zstd": "general",
    "bss_lz4": "general",
    "runs": "rle",
    "binary": "variable",
    "int32_nullable": "flat",
    "int64_widths": "inline_bitpacking",
}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_cases_reach_their_kernels(tmp_path, case):
    from lancelot.format.container import read_metadata, unpack_encoding
    from lancelot.io.source import LocalFileSource

    rng = np.random.default_rng(zlib.crc32(f"{case}/2.1".encode()))
    path = pylance_write_column(tmp_path / "f.lance", _column(case, rng), "2.1", METADATA.get(case))
    src = LocalFileSource(path)
    page = read_metadata(src).columns[0].pages[0]
    layout = unpack_encoding(src, page.encoding, pb.PageLayout).mini_block_layout
    assert layout.value_compression.WhichOneof("compression") == EXPECTED[case]
    assert page.buffer_sizes[0] // 2 >= 8, "the page should hold many chunks"


# ----------------------------------------------------------------------------- bad bytes


def _damaged_file(tmp_path, case: str, version: str, damage) -> bytes:
    """The bytes of a pylance file of ``case`` with ``damage(data, chunks_pos, layout)`` applied to page 0."""
    from lancelot.format.container import read_metadata, unpack_encoding
    from lancelot.io.source import LocalFileSource

    rng = np.random.default_rng(zlib.crc32(f"{case}/{version}".encode()))
    path = pylance_write_column(tmp_path / "f.lance", _column(case, rng), version, METADATA.get(case))
    src = LocalFileSource(path)
    page = read_metadata(src).columns[0].pages[0]
    layout = unpack_encoding(src, page.encoding, pb.PageLayout).mini_block_layout
    data = bytearray(open(path, "rb").read())
    damage(data, int(page.buffer_offsets[1]), layout)
    return bytes(data)


def _value_size_field(layout) -> tuple[int, int]:
    """(byte offset in a chunk, width) of the first value buffer's size in the chunk header."""
    return 2 + 2 * layout.HasField("rep_compression") + 2 * layout.HasField(
        "def_compression"
    ), 4 if layout.has_large_chunk else 2


def _huge_value_buffer(data, pos, layout):
    at, width = _value_size_field(layout)
    data[pos + at : pos + at + width] = b"\xff" * width


def _bad_bit_width(data, pos, layout):
    at, width = _value_size_field(layout)
    head = at + width * layout.num_buffers
    start = pos + (head + 7) // 8 * 8  # no rep/def buffers in this case: the values come first
    data[start] = 200  # inline bitpacking: the chunk's width word


def _bad_offset(data, pos, layout):
    at, width = _value_size_field(layout)
    head = at + width * layout.num_buffers
    start = pos + (head + 7) // 8 * 8
    data[start + 4 : start + 8] = b"\xff\xff\xff\x7f"  # the second string offset of the first chunk


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "case,damage",
    [
        ("int64_widths", _huge_value_buffer),
        ("binary", _huge_value_buffer),
        ("int64_widths", _bad_bit_width),
        ("binary", _bad_offset),
        ("int32_nullable", _huge_value_buffer),
    ],
    ids=["bitpacked-size", "variable-size", "bit-width", "offset", "nullable-size"],
)
def test_damaged_chunks_raise_corrupt_file_error(tmp_path, version, case, damage):
    from lancelot.errors import CorruptFileError
    from lancelot.io.source import MemorySource

    data = _damaged_file(tmp_path, case, version, damage)
    for read in (
        lambda f: f.read(),
        lambda f: f.take([0, 1, 2]),
        lambda f: f.take([0, 5000, 9000]),
        lambda f: f.read_range(0, 10),
    ):
        f = lancelot.LanceFile(MemorySource(data, "bad.lance"))
        with pytest.raises(CorruptFileError) as info:
            read(f)
        assert info.value.column == 0 and info.value.page == 0, str(info.value)
        assert "bad.lance" in str(info.value)


# ----------------------------------------------------------------------------- constant pages, blobs in lists


NULL_NESTED = {
    "list_all_null": (pa.list_(pa.int32()), lambda i: None),
    "list_null_or_empty": (pa.list_(pa.int32()), lambda i: None if i % 3 == 0 else [] if i % 3 == 1 else [None]),
    "struct_of_list": (pa.struct([("a", pa.list_(pa.string()))]), lambda i: None if i % 2 else {"a": None}),
}


@pytest.mark.parametrize("case", sorted(NULL_NESTED))
def test_rle_levels_of_constant_pages(tmp_path, case):
    """2.2 all-null nested pages: constant layouts whose rep/def levels are RLE- or bitpacking-compressed
    whole buffers (block context)."""
    from lancelot.format.container import read_metadata, unpack_encoding
    from lancelot.io.source import LocalFileSource

    t, make = NULL_NESTED[case]
    arr = pa.array([make(i) for i in range(5000)], t)
    path = pylance_write_column(tmp_path / "f.lance", arr, "2.2")
    src = LocalFileSource(path)
    kinds = set()
    for cm in read_metadata(src).columns:
        for page in cm.pages:
            layout = unpack_encoding(src, page.encoding, pb.PageLayout)
            assert layout.WhichOneof("layout") == "constant_layout"
            c = layout.constant_layout
            kinds.update(
                getattr(c, f).WhichOneof("compression") for f in ("rep_compression", "def_compression") if c.HasField(f)
            )
    if case != "struct_of_list":
        assert "rle" in kinds
    f = lancelot.LanceFile(path)
    assert f.read().column("c").combine_chunks().equals(_pl(path, "read_all"))
    rows = [0, 7, 2500, 4999]
    assert f.take(rows).column("c").combine_chunks().equals(_pl(path, "take_rows", rows))
    assert f.read_range(10, 4000).column("c").combine_chunks().equals(_pl(path, "read_range", 10, 3990))


def test_blobs_inside_lists_are_refused(tmp_path):
    """pylance 14 writes blobs inside lists with one description per item and no repetition levels for
    valid items (the list structure is lost; its own reader fails on the file): we refuse the page."""
    from lancelot.errors import UnsupportedEncodingError

    item = pa.field("item", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    rng = np.random.default_rng(4)
    arr = pa.array(
        [[rng.bytes(int(rng.integers(1, 3000))) for _ in range(1 + i % 3)] for i in range(200)], pa.list_(item)
    )
    path = pylance_write_column(tmp_path / "f.lance", arr, "2.2")
    with pytest.raises(pa.ArrowInvalid, match="repetition"):  # pylance cannot read its own file
        LanceFileReader(path).read_all().to_table()
    with pytest.raises(UnsupportedEncodingError, match="blob values inside lists") as info:
        lancelot.LanceFile(path).read()
    assert info.value.column == 0 and info.value.page == 0


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_pages_with_their_own_tables(tmp_path, version):
    """A take across many FSST pages (one symbol table each) decodes every string with its page's table."""
    from lancelot.format.container import read_metadata, unpack_encoding
    from lancelot.io.source import LocalFileSource

    arr = pa.array(_vocab(np.random.default_rng(21), 40000))
    table = pa.table({"c": arr})
    path = str(tmp_path / "f.lance")
    w = LanceFileWriter(path, table.schema, version=version, data_cache_bytes=1)  # a page per batch
    for start in range(0, len(arr), 10000):
        w.write_batch(table.slice(start, 10000))
    w.close()
    src = LocalFileSource(path)
    pages = read_metadata(src).columns[0].pages
    tables = {
        unpack_encoding(src, p.encoding, pb.PageLayout).mini_block_layout.value_compression.fsst.symbol_table
        for p in pages
    }
    assert len(pages) >= 3 and len(tables) >= 3
    f = lancelot.LanceFile(path)
    reader = f._reader(f.schema.field("c"))
    f.take([0])
    assert reader._column_points().fsst_tables is not None
    rows = np.unique(np.random.default_rng(2).integers(0, len(arr), 200))
    assert f.take(rows).column("c").combine_chunks().equals(_pl(path, "take_rows", rows.tolist()))
    assert f.read_range(777, 9999).column("c").combine_chunks().equals(arr.slice(777, 9999 - 777))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_read_ahead_hints_cover_every_read(tmp_path, version, monkeypatch):
    """The byte ranges a multi-field read_range announces up front (its plans' ranges) hold every byte it then reads."""
    rng = np.random.default_rng(21)
    n = 60_000
    table = pa.table(
        {
            "i": pa.array(rng.integers(0, 1 << 40, n)),
            "s": pa.array(_words(rng, n)),
            "q": pa.array(_nullify(rng, rng.integers(0, 50, n).tolist(), 0.1), pa.int32()),
            "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4, dtype=np.float32)), 4),
        }
    )
    path = str(tmp_path / "multi.lance")
    w = LanceFileWriter(path, table.schema, version=version, max_page_bytes=64 * 1024)
    w.write_batch(table)
    w.close()
    f = lancelot.LanceFile(path)
    f.read_range(0, 1)
    reads = []
    inner, cached = f._src._read, f._src._read_cached
    f._src._read = lambda off, ln: (reads.append((off, ln)), inner(off, ln))[1]
    f._src._read_cached = lambda off, ln: (reads.append((off, ln)), cached(off, ln))[1]  # page cache hits
    hinted = set()
    for a, b in [(0, 600), (n // 3, n // 3 + 10_000), (n - 5000, n), (12_345, 12_345 + 40_000)]:
        assert f.read_range(a, b).equals(LanceFileReader(path).read_range(a, b - a).to_table()), (a, b)
        for name in table.column_names:
            plan = f._reader(f.schema.field(name)).plan(range(a, b))
            hints = plan.ranges
            if not hints:  # a decoder that fetches by itself
                continue
            hinted.add(name)
            reads.clear()
            f.read_range(a, b, [name])
            for off, ln in reads:  # a coalesced read may bridge a small gap between two hinted ranges
                covered = sum(max(0, min(off + ln, h + m) - max(off, h)) for h, m in hints)
                assert ln - covered <= f._src.coalesce_gap, (name, a, b, off, ln, hints)
    assert {"i", "q"} <= hinted
    import lancelot.reader as rd
    from lancelot import read_loop

    advised = []
    monkeypatch.setattr(rd.os, "posix_fadvise", lambda fd, off, ln, how: advised.append((off, ln, how)))
    f._src._read_cached = lambda off, ln: None  # nothing in the page cache: will_need hints it all
    f.read_range(100, 100 + rd.READ_AHEAD_MIN_ROWS)
    assert advised and all(how == rd.os.POSIX_FADV_WILLNEED for *_, how in advised)
    advised.clear()
    f.read_range(100, 100 + rd.READ_AHEAD_MIN_ROWS, ["i"])  # one field: nothing to overlap
    f.read_range(100, 100 + rd.READ_AHEAD_MIN_ROWS - 1)
    monkeypatch.setattr(read_loop, "READ_AHEAD_MAX_BYTES", 0)
    f.read_range(0, n)
    assert advised == []


@pytest.mark.parametrize("t", [8, 16, 32, 64])
def test_inline_chunks_kernel(t):
    """Inline-bitpacked chunks of mixed widths (0 included), partial and empty chunks, decoded in one call."""
    from lancelot.encodings.compression.bitpacking import pack_chunks
    from lancelot.encodings.compression.bitpacking_kernel import BAD_WIDTH, OK, SHORT_PACKED, inline_chunks

    rng = np.random.default_rng(t + 1)
    dt = np.dtype(f"<u{t // 8}")
    parts, want, counts = [], [], []
    for width, n in [(3, 1024), (0, 1024), (t, 1024), (1, 0), (t // 2, 700), (5 % t or 1, 1)]:
        v = np.zeros(1024, dtype=dt)
        if width:
            v[:] = rng.integers(0, 1 << min(width, 63), 1024, dtype=np.uint64).astype(dt)
        counts.append(n)
        if n == 0:
            parts.append(np.zeros(0, np.uint8))
            continue
        want.append(v[:n])
        body = pack_chunks(v[None, :], width, t) if width else np.zeros(0, np.uint8)
        chunk = np.concatenate([np.frombuffer(width.to_bytes(t // 8, "little"), np.uint8), body])
        parts.append(np.concatenate([chunk, np.zeros(-len(chunk) % 8, np.uint8)]))
    seg = segments(parts)
    counts = np.array(counts, dtype=np.int64)
    status, vals, _, _ = inline_chunks(seg.data, seg.starts, seg.sizes, counts, dt)
    assert status == OK and np.array_equal(vals, np.concatenate(want))
    data = seg.data.copy()
    data[seg.starts[0]] = t + 1  # a width beyond T
    status, _, k, w = inline_chunks(data, seg.starts, seg.sizes, counts, dt)
    assert (status, k, w) == (BAD_WIDTH, 0, t + 1)
    sizes = seg.sizes.copy()
    sizes[2] = 8  # the full-width chunk cut short
    assert inline_chunks(seg.data, seg.starts, sizes, counts, dt)[0] == SHORT_PACKED


@pytest.mark.parametrize("k", [40, 200])
@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_take_hints_cover_every_read(tmp_path, version, k):
    """A multi-field take reads only inside the byte ranges of its fields' plans, fetched for all
    fields in one read_ranges call (its requests are read from the page cache, or hinted then
    read); the result equals pylance's."""
    rng = np.random.default_rng(22)
    n = 50_000
    table = pa.table(
        {
            "i": pa.array(rng.integers(0, 1 << 40, n)),
            "s": pa.array(_words(rng, n)),
            "q": pa.array(_nullify(rng, rng.integers(0, 50, n).tolist(), 0.1), pa.int32()),
        }
    )
    path = str(tmp_path / "take.lance")
    w = LanceFileWriter(path, table.schema, version=version, max_page_bytes=64 * 1024)
    w.write_batch(table)
    w.close()
    f = lancelot.LanceFile(path)
    f.take([0])
    hinted, announced, reads = [], [], []
    f._src.will_need = lambda ranges: (hinted.extend(ranges), announced.extend(ranges))
    assert k < lancelot.reader.PARALLEL_MIN_TAKE  # one read_ranges call for all fields
    ranged = f._src.read_ranges
    f._src.read_ranges = lambda ranges: (hinted.extend(ranges), ranged(ranges))[1]
    inner, cached = f._src._read, f._src._read_cached
    f._src._read = lambda off, ln: (reads.append((off, ln)), inner(off, ln))[1]
    f._src._read_cached = lambda off, ln: (reads.append((off, ln)), cached(off, ln))[1]  # page cache hits
    rows = np.sort(rng.choice(n, k, replace=False))
    got = f.take(rows)
    assert got.equals(LanceFileReader(path).take_rows(rows).to_table())
    assert hinted and reads
    spans = sorted((h, h + m) for h, m in hinted)
    for off, ln in reads:  # a coalesced read may bridge gaps of at most coalesce_gap between hinted ranges
        pos = off
        for a, b in spans:
            if b <= pos or a >= off + ln:
                continue
            assert a - pos <= f._src.coalesce_gap, (off, ln, a, pos)
            pos = max(pos, b)
        assert pos >= off + ln, (off, ln, pos)
    announced.clear()
    assert f.take(rows, columns=["s"]).equals(table.select(["s"]).take(pa.array(rows)))  # one field: no hint
    assert announced == []
