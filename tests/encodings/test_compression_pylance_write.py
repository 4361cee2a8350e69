"""Interop, writer direction: pylance 14.0.2 reads what our compress_* functions produce.

A small test-only page writer puts one column of one page into a 2.1/2.2 file
(mini-block without rep/def, or full-zip without rep/def) around the buffers
and CompressiveEncoding our encoders return; pylance must read the values back.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader

from lancelot.encodings.compression import FixedSizeListBlock, FixedWidthBlock, StructBlock, VariableWidthBlock
from lancelot.encodings.compression.bitpacking import compress_inline_bitpacking
from lancelot.encodings.compression.byte_stream_split import compress_byte_stream_split
from lancelot.encodings.compression.fixed_size_list import compress_fsl, compress_fsl_per_value
from lancelot.encodings.compression.flat import compress_flat
from lancelot.encodings.compression.general import (
    buffer_compression,
    compress_buffer,
    compress_values,
    general_encoding,
)
from lancelot.encodings.compression.packed import compress_packed_struct, compress_variable_packed_struct
from lancelot.encodings.compression.rle import compress_rle
from lancelot.encodings.compression.variable import compress_variable, compress_variable_block, variable_encoding
from lancelot.encodings.compression.write_fsst import compress_fsst, compress_fsst_per_value, train_fsst
from lancelot.format.container import ContainerWriter, pack_encoding
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.format.pb import file2_pb2
from lancelot.schema import to_descriptor
from tests.encodings.helpers import var_block

VERSIONS = ["2.1", "2.2"]
#: the column-level encoding pylance writes for 2.1+ columns (an Any of lance.encodings.ColumnEncoding)
COLUMN_ENCODING = b"\n\037/lance.encodings.ColumnEncoding\022\002\n\000"


def _pad8(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 8)


def miniblock_buffers(chunks: list[tuple[int, list[np.ndarray]]], large: bool) -> tuple[bytes, bytes]:
    """The chunk-metadata words and the chunk data of a mini-block page without rep/def."""
    words, data = [], b""
    size_dt = "<u4" if large else "<u2"
    for i, (n, bufs) in enumerate(chunks):
        last = i == len(chunks) - 1
        assert last or (n & (n - 1)) == 0
        chunk = _pad8(b"\0\0" + np.array([len(b) for b in bufs], size_dt).tobytes())
        for b in bufs:
            chunk += _pad8(np.asarray(b, np.uint8).tobytes())
        log = 0 if last else n.bit_length() - 1
        words.append(((len(chunk) // 8 - 1) << 4) | log)
        data += chunk
    return np.array(words, "<u4" if large else "<u2").tobytes(), data


def write_file(path, field: pa.Field, version: str, layout: pb.PageLayout, bufs: list[bytes], num_rows: int) -> str:
    cw = ContainerWriter(str(path), version)
    pos = [cw.write_buffer(b) for b in bufs]
    page = file2_pb2.ColumnMetadata.Page(
        buffer_offsets=[p for p, _ in pos],
        buffer_sizes=[s for _, s in pos],
        length=num_rows,
        encoding=pack_encoding(layout),
        priority=0,
    )
    cm = file2_pb2.ColumnMetadata(
        encoding=file2_pb2.Encoding(direct=file2_pb2.DirectEncoding(encoding=COLUMN_ENCODING)), pages=[page]
    )
    cw.finish([cm], [to_descriptor(pa.schema([field]), num_rows).SerializeToString()])
    return str(path)


def write_miniblock(
    path,
    arr: pa.Array,
    version: str,
    chunks,
    enc: pb.CompressiveEncoding,
    dictionary: tuple[pb.CompressiveEncoding, bytes, int] | None = None,
) -> str:
    large = version == "2.2"
    meta, data = miniblock_buffers(chunks, large)
    mb = pb.MiniBlockLayout(
        value_compression=enc,
        layers=[pb.REPDEF_ALL_VALID_ITEM],
        num_buffers=len(chunks[0][1]),
        num_items=len(arr),
        has_large_chunk=large,
    )
    bufs = [meta, data]
    if dictionary is not None:
        mb.dictionary.CopyFrom(dictionary[0])
        mb.num_dictionary_items = dictionary[2]
        bufs.append(dictionary[1])
    field = pa.field("c", arr.type, nullable=False)
    return write_file(path, field, version, pb.PageLayout(mini_block_layout=mb), bufs, len(arr))


def write_full_zip_variable(
    path, arr: pa.Array, version: str, enc: pb.CompressiveEncoding, values: VariableWidthBlock
) -> str:
    """Full-zip of variable values: each value as a u32 length + bytes; u64 repetition index."""
    offs = np.asarray(values.offsets, np.int64)
    data = values.data.tobytes()
    zipped, index = b"", [0]
    for i in range(values.num_values):
        zipped += np.array([offs[i + 1] - offs[i]], "<u4").tobytes() + data[offs[i] : offs[i + 1]]
        index.append(len(zipped))
    fz = pb.FullZipLayout(
        bits_per_offset=32,
        num_items=len(arr),
        num_visible_items=len(arr),
        value_compression=enc,
        layers=[pb.REPDEF_ALL_VALID_ITEM],
    )
    field = pa.field("c", arr.type, nullable=False)
    return write_file(
        path, field, version, pb.PageLayout(full_zip_layout=fz), [zipped, np.array(index, "<u8").tobytes()], len(arr)
    )


def write_full_zip_fixed(
    path, arr: pa.Array, version: str, enc: pb.CompressiveEncoding, values: FixedWidthBlock
) -> str:
    fz = pb.FullZipLayout(
        bits_per_value=values.bits_per_value,
        num_items=len(arr),
        num_visible_items=len(arr),
        value_compression=enc,
        layers=[pb.REPDEF_ALL_VALID_ITEM],
    )
    field = pa.field("c", arr.type, nullable=False)
    return write_file(path, field, version, pb.PageLayout(full_zip_layout=fz), [values.data.tobytes()], len(arr))


def read_back(path: str) -> pa.Array:
    return LanceFileReader(path).read_all().to_table().column(0).combine_chunks()


def fixed_block(vals: np.ndarray) -> FixedWidthBlock:
    return FixedWidthBlock(vals.view(np.uint8), vals.itemsize * 8, len(vals))


def chunked(n: int, size: int) -> list[slice]:
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


def fixed_chunks(vals: np.ndarray, size: int, compress) -> tuple[list, pb.CompressiveEncoding]:
    chunks, enc = [], None
    for s in chunked(len(vals), size):
        enc, bufs = compress(fixed_block(vals[s]))
        chunks.append((len(vals[s]), bufs))
    return chunks, enc


# ----------------------------------------------------------------------------- tests


@pytest.mark.parametrize("version", VERSIONS)
def test_flat(tmp_path, version):
    vals = np.random.default_rng(0).random(3000)
    chunks, enc = fixed_chunks(vals, 512, compress_flat)
    arr = pa.array(vals)
    assert read_back(write_miniblock(tmp_path / "f.lance", arr, version, chunks, enc)).equals(arr)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.int64])
def test_inline_bitpacking(tmp_path, version, dtype):
    rng = np.random.default_rng(1)
    vals = np.concatenate([rng.integers(0, 100, 2048), rng.integers(-5, 5, 1024), rng.integers(0, 2, 700)])
    vals = vals.astype(dtype)
    chunks, enc = fixed_chunks(vals, 1024, compress_inline_bitpacking)
    arr = pa.array(vals)
    assert read_back(write_miniblock(tmp_path / "bp.lance", arr, version, chunks, enc)).equals(arr)


@pytest.mark.parametrize("version", VERSIONS)
def test_rle(tmp_path, version):
    rng = np.random.default_rng(2)
    vals = np.repeat(rng.integers(0, 1000, 40), rng.integers(1, 700, 40)).astype(np.int32)
    chunks, enc = fixed_chunks(vals, 1024, compress_rle)
    arr = pa.array(vals)
    assert read_back(write_miniblock(tmp_path / "rle.lance", arr, version, chunks, enc)).equals(arr)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scheme", ["lz4", "zstd"])
def test_general_over_byte_stream_split(tmp_path, version, scheme):
    vals = np.cumsum(np.random.default_rng(3).random(5000))
    bc = buffer_compression(scheme)
    chunks, enc = [], None
    for s in chunked(len(vals), 512):
        inner, bufs = compress_byte_stream_split(fixed_block(vals[s]))
        enc = general_encoding(bc, inner)
        chunks.append((len(vals[s]), [compress_buffer(bc, bufs[0])]))
    arr = pa.array(vals)
    assert read_back(write_miniblock(tmp_path / "bss.lance", arr, version, chunks, enc)).equals(arr)


@pytest.mark.parametrize("version", VERSIONS)
def test_variable(tmp_path, version):
    vals = [str(i).encode() * (i % 5) for i in range(3000)]
    chunks, enc = [], None
    for s in chunked(len(vals), 256):
        enc, bufs = compress_variable(var_block(vals[s]))
        chunks.append((len(vals[s]), bufs))
    arr = pa.array(vals, pa.binary())
    assert read_back(write_miniblock(tmp_path / "v.lance", arr, version, chunks, enc)).equals(arr)


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_miniblock(tmp_path, version):
    rng = np.random.default_rng(4)
    vocab = ["lorem", "ipsum", "dolor", "sit", "amet", "ünïcødé", "consectetur", "42"]
    vals = [" ".join(rng.choice(vocab, rng.integers(0, 10))).encode() for _ in range(6000)]
    table = train_fsst(var_block(vals))
    assert table.switch_on and table.n_symbols > 0
    chunks, enc = [], None
    for s in chunked(len(vals), 128):
        enc, bufs = compress_fsst(var_block(vals[s]), table)
        chunks.append((len(vals[s]), bufs))
    arr = pa.array([v.decode() for v in vals])
    assert read_back(write_miniblock(tmp_path / "fsst.lance", arr, version, chunks, enc)).equals(arr)


@pytest.mark.parametrize("version", VERSIONS)
def test_dictionary(tmp_path, version):
    rng = np.random.default_rng(5)
    vals = [f"category-{i}".encode() for i in rng.integers(0, 40, 5000)]
    uniq = list(dict.fromkeys(vals))
    idx = np.array([uniq.index(v) for v in vals], "<u4")
    items = var_block(uniq)
    dict_enc, dict_bufs = compress_variable_block(items)
    dict_buf = dict_bufs[0].tobytes()
    if version == "2.2":  # as pylance 2.2 does: lz4 over the block
        bc = buffer_compression("lz4")
        dict_enc, dict_buf = general_encoding(bc, dict_enc), compress_buffer(bc, dict_bufs[0]).tobytes()
    chunks, enc = fixed_chunks(idx, 1024, compress_inline_bitpacking)
    arr = pa.array([v.decode() for v in vals])
    path = write_miniblock(tmp_path / "d.lance", arr, version, chunks, enc, (dict_enc, dict_buf, items.num_values))
    assert read_back(path).equals(arr)


@pytest.mark.parametrize("version", VERSIONS)
def test_fixed_size_list(tmp_path, version):
    items = np.random.default_rng(6).random(2000 * 3).astype(np.float32)
    arr = pa.FixedSizeListArray.from_arrays(pa.array(items), 3)
    chunks, enc = [], None
    for s in chunked(2000, 256):
        sub = items[s.start * 3 : s.stop * 3]
        enc, bufs = compress_fsl(FixedSizeListBlock(fixed_block(sub), 3, s.stop - s.start))
        chunks.append((s.stop - s.start, bufs))
    assert read_back(write_miniblock(tmp_path / "fsl.lance", arr, version, chunks, enc)).equals(arr)
    block = FixedSizeListBlock(fixed_block(items), 3, 2000)
    enc, zipped = compress_fsl_per_value(block)
    assert read_back(write_full_zip_fixed(tmp_path / "fslz.lance", arr, version, enc, zipped)).equals(arr)


@pytest.mark.parametrize("version", VERSIONS)
def test_packed_struct(tmp_path, version):
    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 99, 3000).astype(np.int32), rng.random(3000)
    arr = pa.StructArray.from_arrays([pa.array(a), pa.array(b)], ["a", "b"])
    chunks, enc = [], None
    for s in chunked(3000, 256):
        enc, bufs = compress_packed_struct(StructBlock([fixed_block(a[s]), fixed_block(b[s])], s.stop - s.start))
        chunks.append((s.stop - s.start, bufs))
    field = pa.field("c", arr.type, nullable=False, metadata={"packed": "true"})
    meta, data = miniblock_buffers(chunks, version == "2.2")
    mb = pb.MiniBlockLayout(
        value_compression=enc,
        layers=[pb.REPDEF_ALL_VALID_ITEM],
        num_buffers=1,
        num_items=3000,
        has_large_chunk=version == "2.2",
    )
    path = write_file(tmp_path / "ps.lance", field, version, pb.PageLayout(mini_block_layout=mb), [meta, data], 3000)
    assert read_back(path).equals(arr)


def test_variable_packed_struct_2_2(tmp_path):
    rng = np.random.default_rng(8)
    a = rng.integers(0, 99, 500).astype(np.int32)
    c = [("y" * int(k)).encode() for k in rng.integers(0, 30, 500)]
    arr = pa.StructArray.from_arrays([pa.array(a), pa.array([v.decode() for v in c])], ["a", "c"])
    enc, rows = compress_variable_packed_struct(StructBlock([fixed_block(a), var_block(c)], 500))
    fz = pb.FullZipLayout(
        bits_per_offset=32,
        num_items=500,
        num_visible_items=500,
        value_compression=enc,
        layers=[pb.REPDEF_ALL_VALID_ITEM],
    )
    offs = np.asarray(rows.offsets, np.int64)
    data = rows.data.tobytes()
    zipped, index = b"", [0]
    for i in range(500):
        zipped += np.array([offs[i + 1] - offs[i]], "<u4").tobytes() + data[offs[i] : offs[i + 1]]
        index.append(len(zipped))
    field = pa.field("c", arr.type, nullable=False, metadata={"packed": "true"})
    path = write_file(
        tmp_path / "vps.lance",
        field,
        "2.2",
        pb.PageLayout(full_zip_layout=fz),
        [zipped, np.array(index, "<u8").tobytes()],
        500,
    )
    assert read_back(path).equals(arr)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scheme", ["zstd", "lz4"])
def test_general_per_value(tmp_path, version, scheme):
    rng = np.random.default_rng(9)
    vals = [rng.bytes(50) * 200 for _ in range(20)]
    bc = buffer_compression(scheme, 0 if scheme == "zstd" else None)
    enc = general_encoding(bc, variable_encoding(32))
    arr = pa.array(vals, pa.binary())
    path = write_full_zip_variable(tmp_path / "g.lance", arr, version, enc, compress_values(bc, var_block(vals)))
    assert read_back(path).equals(arr)


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_per_value(tmp_path, version):
    vals = [(f"text {i} " * 60).encode() for i in range(300)]
    enc, compressed = compress_fsst_per_value(var_block(vals))
    assert len(compressed.data) < sum(map(len, vals))
    arr = pa.array([v.decode() for v in vals])
    assert read_back(write_full_zip_variable(tmp_path / "fz.lance", arr, version, enc, compressed)).equals(arr)
