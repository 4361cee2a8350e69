"""Corrupt 2.1/2.2 pages raise CorruptFileError naming the column and page, never a crash.

Files come from pylance 14.0.2; the damage is done either to the file bytes
(read through a MemorySource) or to the page metadata after our container
reader parsed it (sizes, layouts), which is how a truncated or inconsistent
page looks to the structural layer.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2
from lance.file import LanceFileReader, LanceFileWriter

from lancelot.encodings import structural
from lancelot.encodings.base import ColumnInfo, FieldContext
from lancelot.errors import CorruptFileError, LanceError
from lancelot.format.container import pack_encoding, read_metadata, unpack_encoding
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.io.source import MemorySource
from tests.encodings.helpers import forget_shared

pytestmark = pytest.mark.usefixtures("own_metadata")  # (tests/encodings/conftest.py)


VERSIONS = ["2.1", "2.2"]


def whole(a):
    """A field read as one array (a range read may come back as one chunk per page)."""
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def _write(tmp_path, arr: pa.Array, version: str, metadata=None, batches=(300, 200)) -> bytes:
    schema = pa.schema([pa.field("c", arr.type, metadata=metadata)])
    path = str(tmp_path / "f.lance")
    w = LanceFileWriter(path, schema, version=version, data_cache_bytes=1)
    pos = 0
    for b in batches:
        w.write_batch(pa.Table.from_arrays([arr.slice(pos, b)], schema=schema))
        pos += b
    w.close()
    with open(path, "rb") as f:
        return f.read()


class Damaged:
    """A file's bytes and parsed metadata, to break before reading."""

    def __init__(self, data: bytes, field: pa.Field, num_rows: int) -> None:
        self.data = bytearray(data)
        forget_shared()  # (the damage is made to the parsed metadata: this file's own)
        self.md = read_metadata(MemorySource(bytes(data), "f.lance"))
        self.field = field
        self.num_rows = num_rows

    def page(self, col: int = 0, page: int = 0):
        return self.md.columns[col].pages[page]

    def layout(self, col: int = 0, page: int = 0) -> pb.PageLayout:
        return unpack_encoding(MemorySource(bytes(self.data)), self.page(col, page).encoding, pb.PageLayout)

    def set_layout(self, layout: pb.PageLayout, col: int = 0, page: int = 0) -> None:
        self.page(col, page).encoding.CopyFrom(pack_encoding(layout))

    def reader(self):
        src = MemorySource(bytes(self.data), "f.lance")
        cols = [ColumnInfo(i, c) for i, c in enumerate(self.md.columns)]
        return structural.make_field_reader(FieldContext(src, self.md.version, self.field, cols, self.num_rows, {}))


def _damaged(tmp_path, arr, version, metadata=None, batches=(300, 200)) -> Damaged:
    data = _write(tmp_path, arr, version, metadata, batches)
    field = LanceFileReader(str(tmp_path / "f.lance")).metadata().schema.field("c")
    return Damaged(data, field, len(arr))


def _expect_corrupt(d: Damaged, page: int = 0, column: int = 0, rows=None) -> CorruptFileError:
    with pytest.raises(CorruptFileError) as info:
        r = d.reader()
        if rows is None:
            whole(r.read(range(0, d.num_rows)))
        else:
            r.read(np.asarray(rows))
    err = info.value
    assert err.column == column and err.page == page, str(err)
    assert "f.lance" in str(err)
    return err


def _floats(n=500, seed=0):
    rng = np.random.default_rng(seed)
    return pa.array([None if i % 7 == 0 else float(v) for i, v in enumerate(rng.random(n))])


def _lists(n=500, seed=0):
    rng = np.random.default_rng(seed)
    return pa.array(
        [None if i % 9 == 0 else rng.random(int(rng.integers(0, 6))).tolist() for i in range(n)], pa.list_(pa.float64())
    )


def _big_strings(n=500, seed=0):
    rng = np.random.default_rng(seed)
    return pa.array([None if i % 5 == 0 else rng.bytes(300).hex() for i in range(n)])


@pytest.mark.parametrize("version", VERSIONS)
def test_chunk_size_past_the_chunk_buffer(tmp_path, version):
    d = _damaged(tmp_path, _floats(), version)
    off, _ = d.page(0, 1).buffer_offsets[0], d.page(0, 1).buffer_sizes[0]
    word = 4 if version == "2.2" else 2
    last = off + d.page(0, 1).buffer_sizes[0] - word
    d.data[last : last + word] = (0xFFF0).to_bytes(word, "little")  # last chunk: 4096 words
    err = _expect_corrupt(d, page=1)
    assert "chunk" in err.message


@pytest.mark.parametrize("version", VERSIONS)
def test_chunk_buffer_size_past_the_chunk(tmp_path, version):
    d = _damaged(tmp_path, _floats(), version)
    pos = d.page(0, 0).buffer_offsets[1]
    # header: u16 levels, u16 def size, then the value buffer's size
    d.data[pos + 4 : pos + 6] = b"\xff\x7f"
    _expect_corrupt(d, page=0)


@pytest.mark.parametrize("version", VERSIONS)
def test_truncated_chunk_buffer(tmp_path, version):
    d = _damaged(tmp_path, _floats(), version)
    d.page(0, 1).buffer_sizes[1] //= 2
    err = _expect_corrupt(d, page=1)
    assert "bytes" in err.message


@pytest.mark.parametrize("version", VERSIONS)
def test_chunk_metadata_not_whole_words(tmp_path, version):
    d = _damaged(tmp_path, _floats(), version)
    d.page(0, 0).buffer_sizes[0] -= 1
    _expect_corrupt(d, page=0)


@pytest.mark.parametrize("version", VERSIONS)
def test_repetition_index_of_wrong_size(tmp_path, version):
    d = _damaged(tmp_path, _lists(), version)
    layout = d.layout(0, 1)
    assert layout.mini_block_layout.repetition_index_depth == 1
    d.page(0, 1).buffer_sizes[len(d.page(0, 1).buffer_sizes) - 1] -= 8
    _expect_corrupt(d, page=1)


@pytest.mark.parametrize("version", VERSIONS)
def test_repetition_index_row_count_mismatch(tmp_path, version):
    d = _damaged(tmp_path, _lists(), version)
    p = d.page(0, 0)
    pos = p.buffer_offsets[len(p.buffer_offsets) - 1]
    d.data[pos : pos + 8] = struct.pack("<Q", 10**6)
    err = _expect_corrupt(d, page=0, rows=[3])
    assert "rows" in err.message


@pytest.mark.parametrize("version", VERSIONS)
def test_fullzip_repetition_index_past_the_data(tmp_path, version):
    d = _damaged(tmp_path, _big_strings(), version)
    assert d.layout(0, 1).WhichOneof("layout") == "full_zip_layout"
    p = d.page(0, 1)
    pos, size = p.buffer_offsets[1], p.buffer_sizes[1]
    width = size // (p.length + 1)
    d.data[pos + size - width : pos + size] = b"\xff" * width
    _expect_corrupt(d, page=1, rows=[450])


@pytest.mark.parametrize("version", VERSIONS)
def test_fullzip_truncated_data(tmp_path, version):
    d = _damaged(tmp_path, _big_strings(), version)
    p = d.page(0, 0)
    p.buffer_sizes[0] = p.buffer_sizes[0] // 3
    _expect_corrupt(d, page=0)


@pytest.mark.parametrize("version", VERSIONS)
def test_fullzip_value_length_past_the_row(tmp_path, version):
    d = _damaged(tmp_path, _big_strings(), version)
    p = d.page(0, 0)
    pos = p.buffer_offsets[0]
    # row 0 is null (control word only); row 1 is: control word, u32 length, bytes
    d.data[pos + 2 : pos + 6] = struct.pack("<I", 1 << 30)
    _expect_corrupt(d, page=0)


@pytest.mark.parametrize("version", VERSIONS)
def test_layers_that_do_not_fit_the_field(tmp_path, version):
    d = _damaged(tmp_path, _lists(), version)
    layout = d.layout(0, 0)
    del layout.mini_block_layout.layers[:]
    layout.mini_block_layout.layers.append(pb.REPDEF_NULLABLE_ITEM)
    d.set_layout(layout, 0, 0)
    _expect_corrupt(d, page=0)


@pytest.mark.parametrize("version", VERSIONS)
def test_definition_levels_above_the_layers(tmp_path, version):
    d = _damaged(tmp_path, _floats(), version)
    layout = d.layout(0, 1)
    # claim the page has no nulls: its def levels of 1 are now out of range
    del layout.mini_block_layout.layers[:]
    layout.mini_block_layout.layers.append(pb.REPDEF_ALL_VALID_ITEM)
    d.set_layout(layout, 0, 1)
    err = _expect_corrupt(d, page=1)
    assert "definition level" in err.message


def test_page_rows_do_not_add_up(tmp_path):
    d = _damaged(tmp_path, _floats(), "2.1")
    d.page(0, 1).length += 5
    with pytest.raises(CorruptFileError) as info:
        d.reader()
    assert info.value.column == 0


def test_page_that_is_not_a_page_layout(tmp_path):
    d = _damaged(tmp_path, _floats(), "2.1")
    a = any_pb2.Any()
    a.Pack(pb.Flat(bits_per_value=3), type_url_prefix="/")
    d.page(0, 1).encoding.direct.encoding = a.SerializeToString()
    _expect_corrupt(d, page=1, rows=[450])


@pytest.mark.parametrize("version", VERSIONS)
def test_random_damage_never_crashes(tmp_path, version):
    """Seeded byte flips in page buffers: any failure is a LanceError naming column and page."""
    rng = np.random.default_rng(7)
    arrays = [_floats(), _lists(), _big_strings()]
    for k, arr in enumerate(arrays):
        base = _damaged(tmp_path, arr, version)
        pages = base.md.columns[0].pages
        regions = [(o, s) for p in pages for o, s in zip(p.buffer_offsets, p.buffer_sizes) if s]
        for trial in range(25):
            d = Damaged(bytes(base.data), base.field, base.num_rows)
            o, s = regions[int(rng.integers(0, len(regions)))]
            for _ in range(int(rng.integers(1, 4))):
                i = o + int(rng.integers(0, s))
                d.data[i] = int(rng.integers(0, 256))
            try:
                whole(d.reader().read(range(0, d.num_rows)))
            except LanceError as e:
                assert e.column == 0 and e.page is not None, f"array {k} trial {trial}: {e}"


@pytest.mark.parametrize("version", VERSIONS)
def test_blob_position_past_the_file(tmp_path, version):
    rng = np.random.default_rng(3)
    arr = pa.array([rng.bytes(2000) for _ in range(500)], pa.large_binary())
    d = _damaged(tmp_path, arr, version, {"lance-encoding:blob": "true"})
    layout = d.layout(0, 0)
    assert layout.WhichOneof("layout") == "blob_layout"
    # the descriptions are (u64 position, u64 size) after the 8-byte chunk header: move row 0 far away
    pos = d.page(0, 0).buffer_offsets[1] + 8
    d.data[pos : pos + 8] = struct.pack("<Q", 1 << 40)
    err = _expect_corrupt(d, page=0, rows=[0])
    assert "outside" in err.message
