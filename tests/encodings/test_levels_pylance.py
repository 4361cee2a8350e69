"""Interop: block-context RLE of rep/def levels and null rows of variable packed structs.

pylance 14.0.2 run-length encodes repetition/definition levels in one whole
buffer (a u64 values size, the u16 run values, the u8 run lengths): for the
levels of mini-block chunks (long lists) and of constant layouts (all-null
nested columns).  At 2.2 it writes a packed struct holding a string as full-zip
``variable_packed_struct`` rows where a null item is a row of zero bytes.
Each test reads the real pylance bytes with our decoders and compares with
levels / values computed from the source data, then reads the whole file
through ``lancelot.LanceFile`` and compares with pylance's own read.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

import lancelot
from lancelot.encodings.compression import FixedWidthBlock, VariableWidthBlock, decompress_block, decompress_per_value
from lancelot.encodings.compression.rle import compress_rle_block
from lancelot.errors import CorruptFileError, UnsupportedEncodingError
from lancelot.format.container import read_metadata
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.io.source import open_source
from tests.encodings.helpers import fixed_values, miniblock_chunks, read_pages, variable_values


def write(path, table: pa.Table, version: str, batches: list[int] | None = None) -> str:
    """One page per batch (tiny data cache)."""
    w = LanceFileWriter(str(path), table.schema, version=version, data_cache_bytes=1)
    pos = 0
    for b in batches or [table.num_rows]:
        w.write_batch(table.slice(pos, b))
        pos += b
    w.close()
    return str(path)


def same_as_pylance(path: str, rows: list[int]) -> None:
    lf, pl = lancelot.LanceFile(path), LanceFileReader(path)
    assert lf.read().equals(pl.read_all().to_table())
    assert lf.take(rows).equals(pl.take_rows(rows).to_table())


def levels(enc: pb.CompressiveEncoding, buf: np.ndarray, count: int) -> np.ndarray:
    block = decompress_block(enc, buf, count)
    assert isinstance(block, FixedWidthBlock) and block.bits_per_value == 16 and block.num_values == count
    return block.as_dtype("<u2")


# ----------------------------------------------------------------------------- block RLE: real files


@pytest.mark.parametrize("n", [1500, 70000])
def test_constant_layout_definition_levels(tmp_path, n):
    """An all-null struct at 2.2: each leaf page is a constant layout whose def levels are block RLE."""
    t = pa.struct([("a", pa.int32()), ("b", pa.string())])
    path = write(tmp_path / "n.lance", pa.table({"c": pa.array([None] * n, t)}), "2.2")
    pages = read_pages(path)
    assert pages
    for page, layout, bufs in pages:
        const = layout.constant_layout
        assert const.def_compression.WhichOneof("compression") == "rle"
        rle = const.def_compression.rle
        assert (rle.values.flat.bits_per_value, rle.run_lengths.flat.bits_per_value) == (16, 8)
        count = int(const.num_def_values)
        assert count == page.length == n
        buf = bufs[-1]
        runs = -(-n // 255)
        assert len(buf) == 8 + 3 * runs and int(buf[:8].view("<u8")[0]) == 2 * runs  # the layout we decode
        # leaf item and struct both nullable: a null struct is definition level 2
        np.testing.assert_array_equal(levels(const.def_compression, buf, count), np.full(n, 2, np.uint16))
    same_as_pylance(path, [0, n // 2, n - 1])


def _long_lists(n_rows: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [
        None if i % 13 == 0 else [] if i % 17 == 0 else rng.random(int(rng.integers(0, 2500))).tolist()
        for i in range(n_rows)
    ]


def _expected_levels(rows: list) -> tuple[np.ndarray, np.ndarray]:
    """Rep/def of list<non-null double> (layers: all-valid item, null-and-empty list): null 1, empty 2."""
    rep, dfn = [], []
    for r in rows:
        k = max(1, len(r or []))
        rep += [1] + [0] * (k - 1)
        dfn += [1] if r is None else [2] if not r else [0] * k
    return np.array(rep, np.uint16), np.array(dfn, np.uint16)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_mini_block_chunk_levels(tmp_path, version):
    """Long lists: every chunk's rep and def levels are block RLE at 2.2 (bitpacked at 2.1); together they
    are the column's levels."""
    rows = _long_lists(120, 3)
    table = pa.table({"c": pa.array(rows, pa.list_(pa.float64()))})
    path = write(tmp_path / "l.lance", table, version, [50, 70])
    reps, defs, kinds = [], [], set()
    for _, layout, bufs in read_pages(path):
        mb = layout.mini_block_layout
        kinds |= {mb.rep_compression.WhichOneof("compression"), mb.def_compression.WhichOneof("compression")}
        for _, num_levels, rep_buf, def_buf, _ in miniblock_chunks(mb, bufs, with_levels=True):
            reps.append(levels(mb.rep_compression, rep_buf, num_levels))
            defs.append(levels(mb.def_compression, def_buf, num_levels))
    assert kinds == ({"rle"} if version == "2.2" else {"out_of_line_bitpacking"})  # 2.1: no block RLE
    exp_rep, exp_def = _expected_levels(rows)
    np.testing.assert_array_equal(np.concatenate(reps), exp_rep)
    np.testing.assert_array_equal(np.concatenate(defs), exp_def)
    same_as_pylance(path, [1, 2, 49, 50, 60, 119])


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_all_null_nested_columns_read(tmp_path, version):
    """All-null lists / structs / nested lists read through the public API equal pylance's read."""
    n = 3000
    table = pa.table(
        {
            "l": pa.array([None] * n, pa.list_(pa.int32())),
            "s": pa.array([None] * n, pa.struct([("x", pa.float64()), ("y", pa.list_(pa.string()))])),
            "ll": pa.array([None if i % 3 else [] for i in range(n)], pa.list_(pa.list_(pa.int64()))),
        }
    )
    path = write(tmp_path / "a.lance", table, version, [1000, 2000])
    if version == "2.2":
        kinds = set()
        for col in range(len(read_metadata(open_source(path)).columns)):
            for _, layout, _ in read_pages(path, col):
                const = layout.constant_layout
                kinds |= {
                    (f, getattr(const, f).WhichOneof("compression"))
                    for f in ("rep_compression", "def_compression")
                    if const.HasField(f)
                }
        assert {("rep_compression", "rle"), ("def_compression", "rle")} <= kinds
    same_as_pylance(path, [0, 999, 1000, 2999])


# ----------------------------------------------------------------------------- block RLE: unit


def test_block_rle_round_trip_and_layout():
    vals = np.repeat(np.array([3, 0, 7, 1], np.uint16), [600, 1, 255, 256])
    enc, buf = compress_rle_block(FixedWidthBlock(vals.view(np.uint8), 16, len(vals)))
    runs = 3 + 1 + 1 + 2  # 600 = 255 + 255 + 90, 256 = 255 + 1
    assert int(buf[:8].view("<u8")[0]) == 2 * runs and len(buf) == 8 + 3 * runs
    np.testing.assert_array_equal(levels(enc, buf, len(vals)), vals)
    np.testing.assert_array_equal(levels(enc, buf, 700), vals[:700])  # runs may cover more than asked for
    assert decompress_block(enc, np.zeros(0, np.uint8), 0).num_values == 0
    # wrapped in general compression, the inner buffer is the same layout
    from lancelot.encodings.compression.general import buffer_compression, compress_buffer, general_encoding

    bc = buffer_compression("zstd")
    np.testing.assert_array_equal(levels(general_encoding(bc, enc), compress_buffer(bc, buf), len(vals)), vals)


def test_block_rle_wider_run_lengths():
    """Run lengths are read at the width the encoding names (pylance may widen them for long runs)."""
    enc = pb.CompressiveEncoding(
        rle=pb.Rle(
            values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=16)),
            run_lengths=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=32)),
        )
    )
    values, lengths = np.array([5, 6], "<u2"), np.array([70000, 3], "<u4")
    buf = np.concatenate([np.array([4], "<u8").view(np.uint8), values.view(np.uint8), lengths.view(np.uint8)])
    np.testing.assert_array_equal(levels(enc, buf, 70003), np.repeat(values, lengths))
    # 64-bit lengths whose sum overflows: only the first num_values count
    enc.rle.run_lengths.flat.bits_per_value = 64
    values, lengths = np.array([1, 2, 3], "<u2"), np.array([0, (1 << 64) - 1, (1 << 63) + 1], "<u8")
    buf = np.concatenate([np.array([6], "<u8").view(np.uint8), values.view(np.uint8), lengths.view(np.uint8)])
    np.testing.assert_array_equal(levels(enc, buf, 9), np.full(9, 2, np.uint16))


def test_block_rle_bad_input():
    vals = np.repeat(np.arange(5, dtype=np.uint16), 10)
    enc, buf = compress_rle_block(FixedWidthBlock(vals.view(np.uint8), 16, 50))
    bad = [
        (buf, 51),  # runs cover only 50
        (buf[:7], 50),  # no header
        (buf[:-1], 50),  # a run length missing
        (np.concatenate([np.array([1 << 62], "<u8").view(np.uint8), buf[8:]]), 50),  # values size past the end
        (np.concatenate([np.array([9], "<u8").view(np.uint8), buf[8:]]), 50),  # odd values size for u16
    ]
    for b, count in bad:
        with pytest.raises(CorruptFileError):
            decompress_block(enc, b, count)
    odd = pb.CompressiveEncoding()
    odd.CopyFrom(enc)
    odd.rle.run_lengths.flat.bits_per_value = 12
    with pytest.raises(UnsupportedEncodingError):
        decompress_block(odd, buf, 50)


# ----------------------------------------------------------------------------- variable packed struct: null rows


def full_zip_nullable_rows(layout: pb.PageLayout, bufs) -> tuple[VariableWidthBlock, np.ndarray]:
    """Unzip a full-zip page of one-byte def levels + u32-length-prefixed values (test-only): the
    rows (a null row has no bytes) and the validity."""
    fz = layout.full_zip_layout
    assert fz.bits_rep == 0 and fz.bits_def == 1 and fz.bits_per_offset == 32
    data = bufs[0]
    width = len(bufs[1]) // (fz.num_items + 1)
    index = bufs[1].view(f"<u{width}").astype(np.int64)
    valid = data[index[:-1]] == 0
    starts = np.where(valid, index[:-1] + 5, index[1:])  # def byte, u32 length, then the row
    lengths = index[1:] - starts
    offs = np.zeros(len(starts) + 1, np.uint64)
    offs[1:] = np.cumsum(lengths)
    body = np.concatenate([data[a:b] for a, b in zip(starts, index[1:])])
    return VariableWidthBlock(offs, body, len(starts)), valid


def test_variable_packed_struct_null_rows_2_2(tmp_path):
    rng = np.random.default_rng(16)
    n = 3000
    a = rng.integers(0, 1 << 30, n).astype(np.int32)
    s = ["y" * int(k) for k in rng.integers(0, 30, n)]
    d = rng.random(n)
    nulls = rng.random(n) < 0.25
    arr = pa.StructArray.from_arrays([pa.array(a), pa.array(s), pa.array(d)], ["a", "s", "d"], mask=pa.array(nulls))
    field = pa.field("c", arr.type, metadata={"packed": "true"})
    path = write(tmp_path / "vps.lance", pa.Table.from_arrays([arr], schema=pa.schema([field])), "2.2", [1000, 2000])
    pages = read_pages(path)
    assert len(pages) == 2
    got_valid, got_a, got_s, got_d = [], [], [], []
    for _, layout, bufs in pages:
        enc = layout.full_zip_layout.value_compression
        assert enc.WhichOneof("compression") == "variable_packed_struct"
        rows, valid = full_zip_nullable_rows(layout, bufs)
        assert not np.any(np.diff(rows.offsets.astype(np.int64))[~valid])  # null rows carry no bytes
        out = decompress_per_value(enc, rows)
        got_valid.append(valid)
        got_a.append(fixed_values(out.children[0], np.int32))
        got_s += variable_values(out.children[1])
        got_d.append(fixed_values(out.children[2], np.float64))
    valid = np.concatenate(got_valid)
    np.testing.assert_array_equal(valid, ~nulls)
    np.testing.assert_array_equal(np.concatenate(got_a), np.where(nulls, 0, a))  # null rows decode as zeros
    np.testing.assert_array_equal(np.concatenate(got_d), np.where(nulls, 0.0, d))
    assert got_s == [b"" if z else v.encode() for v, z in zip(s, nulls)]
    same_as_pylance(path, [0, 5, 999, 1000, 2999])


# ----------------------------------------------------------------------------- block RLE: pylance reads ours


def test_pylance_reads_our_block_rle_levels(tmp_path, monkeypatch):
    """Our writer's 2.2 all-null pages with the levels re-encoded by compress_rle_block: pylance reads them."""
    from lancelot.encodings.structural import write_field

    plain = write_field.encode_all_null
    used = []

    def rle_levels(levels, version):
        layout, buffers = plain(levels, version)
        const = layout.constant_layout
        for i, name in enumerate(("rep_compression", "def_compression")):
            if const.HasField(name):
                enc, buf = compress_rle_block(FixedWidthBlock(buffers[i], 16, len(buffers[i]) // 2))
                getattr(const, name).CopyFrom(enc)
                buffers[i] = buf
                used.append(name)
        return layout, buffers

    monkeypatch.setattr(write_field, "encode_all_null", rle_levels)
    n = 2000
    table = pa.table(
        {
            "s": pa.array([None] * n, pa.struct([("x", pa.int32())])),
            "l": pa.array([None if i % 3 else [] for i in range(n)], pa.list_(pa.int64())),
        }
    )
    path = str(tmp_path / "ours.lance")
    lancelot.write_table(table, path, version="2.2")
    assert {"rep_compression", "def_compression"} <= set(used)
    assert LanceFileReader(path).read_all().to_table().equals(table)
    assert lancelot.LanceFile(path).read().equals(table)
