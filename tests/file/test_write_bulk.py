"""The writer's one-pass paths give the bytes of the chunk-at-a-time ones, with the kernels loaded (as in a
long-running writer): whole-page chunk building (bulk encoders), page assembly (copy_slices), page dictionaries
found by the numba pass (write_dictionary.py), RLE chunks (write_rle.py) and FSST pages encoded in pieces; pylance
reads the files back."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lancelot.encodings.compression import rle, scatter, write_dictionary, write_fsst, write_rle
from lancelot.encodings.compression.block import FixedWidthBlock, VariableWidthBlock
from lancelot.encodings.compression.general import buffer_compression, compress_buffer, compress_buffers
from lancelot.encodings.compression.variable import compress_variable, compress_variable_chunks
from lancelot.encodings.structural import write_miniblock, write_strategy
from lancelot.writer import write_table

lance_file = pytest.importorskip("lance.file")


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@pytest.fixture(scope="module", autouse=True)
def kernels_loaded():
    """The kernels these paths switch to, compiled (or loaded from the cache) for the argument types they get."""
    data = _frozen(np.zeros(8, np.uint8))
    for offsets in (_frozen(np.zeros(1, np.int32)), _frozen(np.zeros(1, np.int64))):
        write_dictionary._encode(data, offsets, 0, 0, 2)
    none = np.zeros(0, np.int64)
    for src in (np.zeros(0, np.uint8), data[:0]):
        scatter._copy_slices(np.zeros(0, np.uint8), none, src, none, none)
    write_fsst._encode(data, _frozen(np.zeros(1, np.int64)), np.zeros(1, np.int64), np.ones(1, np.int64))
    write_fsst._train(np.zeros(0, np.uint8), np.zeros(1, np.int64))
    write_rle._warm()
    assert scatter.HOT.ready() and write_dictionary.HOT.ready() and write_fsst.HOT_ENCODE.ready()
    assert write_rle.HOT.ready()


@pytest.mark.parametrize("bits", [8, 16, 32, 64])
@pytest.mark.parametrize("frozen", [False, True])
def test_rle_pass_matches_numpy(monkeypatch, bits, frozen):
    """The kernel's runs are rle.py's numpy ones: runs longer than 255 cut from their start, any width."""
    rng = np.random.default_rng(bits)
    lengths = rng.choice([1, 2, 254, 255, 256, 600], 300)
    vals = np.repeat(rng.integers(0, 4, len(lengths)), lengths).astype(f"<u{bits // 8}")
    data = vals.view(np.uint8).copy()
    block = FixedWidthBlock(_frozen(data) if frozen else data, bits, len(vals))
    got = rle.compress_rle(block)[1]
    monkeypatch.setattr(rle, "split_runs", lambda *args: None)
    want = rle.compress_rle(block)[1]
    assert all(np.array_equal(g, w) and g.dtype == w.dtype for g, w in zip(got, want))
    assert got[1].max() == 255  # long runs were cut


def test_copy_slices():
    rng = np.random.default_rng(3)
    src = rng.integers(0, 256, 1000).astype(np.uint8)
    lens = rng.integers(0, 20, 40)
    starts = rng.integers(0, 980, 40)
    dst = np.concatenate([[0], np.cumsum(lens + 3)[:-1]])
    out = np.zeros(int(dst[-1] + lens[-1]), np.uint8)
    scatter.copy_slices(out, dst, src, starts, lens)
    for d, s, n in zip(dst, starts, lens):
        assert np.array_equal(out[d : d + n], src[s : s + n])


@pytest.mark.parametrize("scheme,level", [("lz4", None), ("zstd", 3), ("zstd", None)])
def test_compress_buffers_match_one_at_a_time(scheme, level):
    rng = np.random.default_rng(5)
    data = _frozen(rng.integers(0, 4, 50_000).astype(np.uint8))
    bounds = np.array([0, 0, 10, 16_000, 16_000, 33_333, 50_000])  # empty pieces too
    compression = buffer_compression(scheme, level)
    out, at = compress_buffers(compression, data, bounds)
    want = [compress_buffer(compression, data[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    assert np.array_equal(at, np.concatenate([[0], np.cumsum([len(w) for w in want])]))
    assert np.array_equal(out, np.concatenate(want))


@pytest.mark.parametrize("bits", [32, 64])
def test_variable_chunks_match_one_at_a_time(bits):
    rng = np.random.default_rng(bits)
    for _ in range(50):
        n = int(rng.integers(1, 300))
        offs = np.concatenate([[0], np.cumsum(rng.integers(0, 20, n))]) + int(rng.integers(0, 5))
        data = rng.integers(0, 256, int(offs[-1]) + 3).astype(np.uint8)
        cuts = np.unique(np.concatenate([[0, n], rng.integers(0, n, int(rng.integers(1, 10)))]))
        block = VariableWidthBlock(offs.astype(np.uint32 if bits == 32 else np.uint64), data, n)
        out, bounds = compress_variable_chunks(block, cuts, bits)
        for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
            one = compress_variable(VariableWidthBlock(block.offsets[a : b + 1], data, b - a), bits)[1][0]
            assert np.array_equal(out[bounds[k] : bounds[k + 1]], one)


def _dictionary_cases() -> list[pa.Array]:
    rng = np.random.default_rng(7)
    words = ["", "a", "ab", "abcdefgh", "abcdefghi", "abcdefghX", "Xbcdefghi", "DELIVER IN PERSON"]
    words += ["DELIVER IN PERSOX", "DELIVER XN PERSON", "x" * 40, "x" * 39 + "y"]
    # equal first and last words, differing between them: in a middle word, in the bytes after the words
    words += ["x" * 20 + "y" + "x" * 19, "x" * 8 + "y" + "x" * 31, "x" * 26 + "y" + "x" * 8, "x" * 24 + "yy" + "x" * 8]
    strings = pa.array([words[i] for i in rng.integers(0, len(words), 5000)])
    fsb = pa.array([bytes([x]) * 16 for x in rng.integers(0, 40, 3000)], pa.binary(16))
    many = pa.array([f"value {i}" for i in rng.integers(0, 5000, 20000)])  # outgrows the first table
    return [strings, strings.slice(33, 1000), strings.cast(pa.large_binary()), fsb, fsb.slice(5, 100), many]


@pytest.mark.parametrize("keys", _dictionary_cases(), ids=lambda a: str(a.type))
def test_dictionary_pass_is_arrows(keys):
    got = write_dictionary.dictionary_encode(keys, len(keys))
    want = pc.dictionary_encode(keys, null_encoding="mask")
    assert got.indices.equals(want.indices) and got.dictionary.equals(want.dictionary)


def test_dictionary_pass_stops_past_the_limit():
    keys = pa.array([f"value {i}" for i in range(3000)])
    assert write_dictionary.dictionary_encode(keys, 100) is None
    assert len(write_dictionary.dictionary_encode(keys, 3000).dictionary) == 3000


def _table(rng: np.random.Generator, n: int) -> pa.Table:
    words = np.array(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"])
    text = [" ".join(words[rng.integers(0, 8, int(k))]) for k in rng.integers(3, 12, n)]
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "small": pa.array(rng.integers(0, 1000, n, dtype=np.int32)),
            "price": pa.array(np.round(rng.random(n) * 1000, 2)),
            "amount": pa.array(rng.integers(0, 10**9, n)).cast(pa.decimal128(19, 0)).cast(pa.decimal128(15, 2)),
            "qty": pa.array(rng.integers(1, 50, n)).cast(pa.decimal128(19, 0)).cast(pa.decimal128(15, 2)),
            "flag": pa.array(rng.choice(["A", "N", "R"], n)),
            "mode": pa.array(rng.choice(["AIR", "MAIL", "REG AIR", "DELIVER IN PERSON"], n)),
            "text": pa.array(text),
            "maybe": pa.array(rng.integers(0, 9, n), mask=rng.random(n) < 0.2),
        }
    )


def test_bulk_pages_match_chunk_at_a_time(tmp_path, monkeypatch):
    """The same file with every page's chunks made one at a time (no bulk encoders), and pylance reads it."""
    table = _table(np.random.default_rng(11), 60_000)
    write_table(table, tmp_path / "bulk.lance")
    plan = write_strategy.plan_miniblock
    monkeypatch.setattr(write_miniblock, "plan_miniblock", lambda *a: dataclasses.replace(plan(*a), bulk=None))
    write_table(table, tmp_path / "chunks.lance")
    assert (tmp_path / "bulk.lance").read_bytes() == (tmp_path / "chunks.lance").read_bytes()
    assert lance_file.LanceFileReader(str(tmp_path / "bulk.lance")).read_all().to_table().equals(table)


def test_fsst_pieces_are_one_encode(monkeypatch):
    rng = np.random.default_rng(5)
    words = np.array(["quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "packages", "deposits"])
    values = pa.array([" ".join(words[rng.integers(0, 10, int(k))]) for k in rng.integers(2, 15, 20_000)])
    block = write_strategy.to_block(values)
    table = write_fsst.train_fsst(block)
    whole = write_fsst.fsst_encode(table, block)
    monkeypatch.setattr(write_strategy, "FSST_PIECE_BYTES", 10_000)
    monkeypatch.setattr(write_strategy.page_pool, "threads", lambda: 2)
    pieces = write_strategy._fsst_encode_pieces(table, block)
    assert np.array_equal(np.asarray(pieces.offsets), np.asarray(whole.offsets))
    assert np.array_equal(np.asarray(pieces.data), np.asarray(whole.data))


def test_string_zone_bounds_kernel_is_arrows():
    """The zone-bounds kernel (prefix words, ties settled 8 bytes at a time) against pyarrow's min_max per zone."""
    from lancelot import zonemap_bounds

    rng = np.random.default_rng(2)
    words = [b"", b"\x00", b"a", b"ab", b"ab\x00", b"abcdefg", b"abcdefgh", b"abcdefgh\x00", b"abcdefghi", b"abcdefgha"]
    words += [b"\xff" * 9, b"b", b"DELIVER IN PERSON", b"DELIVER IN PERSOM", b"x" * 20, b"x" * 19 + b"\x00"]
    for trial in range(200):
        n = int(rng.integers(1, 400))
        picks = rng.integers(0, len(words), n)
        vals = [words[i] if rng.random() < 0.7 else rng.bytes(int(rng.integers(0, 12))) for i in picks]
        arr = pa.array(vals, pa.binary(), mask=rng.random(n) < 0.1)
        if trial % 3 == 0:
            arr = arr.slice(int(rng.integers(0, n - 1)))
        rows = int(rng.integers(1, 50))
        zones = -(-len(arr) // rows)
        offsets, data = zonemap_bounds._offsets_and_data(arr)
        valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))
        lo, hi = zonemap_bounds._zone_extremes(offsets, data, valid, rows, zones)
        want_lo, want_hi = zonemap_bounds.bounds_per_zone(arr, rows, zones)
        assert arr.take(pa.array(lo, mask=lo < 0)).equals(want_lo.cast(pa.binary()))
        assert arr.take(pa.array(hi, mask=hi < 0)).equals(want_hi.cast(pa.binary()))
