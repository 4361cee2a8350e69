"""FSST decode through the kernels: the one-pass decode into an estimated output (grown when the
sample underestimates), the resumable kernel, equal to the numpy formulation."""

from __future__ import annotations

import numpy as np
import pytest

from lancelot.encodings.compression import fsst, fsst_kernel
from lancelot.encodings.compression.fsst_numpy import decode_numpy_blocks
from lancelot.errors import LanceError


def _table(rng: np.random.Generator, n: int) -> fsst.SymbolTable:
    symbols = rng.integers(0, 256, (n, 8)).astype(np.uint8)
    lengths = rng.integers(1, 9, n).astype(np.uint8)
    return fsst.SymbolTable(symbols, lengths, True)


def _strings(rng: np.random.Generator, table: fsst.SymbolTable, n: int, long_every: int = 0):
    """Codes of ``n`` strings back to back; every ``long_every``-th string is long (64 codes of the
    table's longest symbol), the others short."""
    longest = int(np.argmax(table.lengths))
    shortest = int(np.argmin(table.lengths))
    parts, starts, ends, pos = [], [], [], 0
    for s in range(n):
        if long_every and s % long_every == long_every // 2:
            codes = np.full(64, longest)
        else:
            tokens = []
            for _ in range(int(rng.integers(0, 6))):
                if rng.random() < 0.1:  # an escape and its literal byte (0xFF included)
                    tokens += [255, int(rng.integers(0, 256))]
                else:
                    c = int(rng.integers(0, table.n_symbols))
                    tokens.append(shortest if c == longest else c)
            codes = np.array(tokens, np.int64)
        parts.append(codes.astype(np.uint8))
        starts.append(pos)
        pos += len(parts[-1])
        ends.append(pos)
    return np.concatenate(parts), np.array(starts, np.int64), np.array(ends, np.int64)


def _numpy(table, codes, starts, ends):
    status, out, offs = decode_numpy_blocks(
        codes,
        starts,
        ends,
        table.symbols[None],
        table.lengths[None],
        np.array([table.n_symbols]),
        np.zeros(len(starts), np.int64),
    )
    assert status == 0
    return out, offs


@pytest.mark.parametrize("learned", [0.01, 1.0, 8.0])
def test_kernel_decode_sized_from_a_learned_ratio(learned: float, monkeypatch) -> None:
    """A table's bytes per code, learned from its last decode, sizes the next output (no sampling
    pass); a wrong ratio (far too small or too large) still gives the right strings."""
    rng = np.random.default_rng(7)
    table = _table(rng, 200)
    codes, starts, ends = _strings(rng, table, 3000, long_every=5)
    monkeypatch.setitem(fsst.mode, "decode", "kernel")
    first = fsst._decode_spans(table, codes, starts, ends)
    out, offs = _numpy(table, codes, starts, ends)
    assert table.bytes_per_code == pytest.approx(len(out) / len(codes))
    monkeypatch.setattr(fsst, "_estimate", lambda *a: pytest.fail("sampled again"))
    table.bytes_per_code = learned
    again = fsst._decode_spans(table, codes, starts, ends)
    for block in (first, again):
        assert np.array_equal(np.asarray(block.data), out) and np.array_equal(block.offsets, offs)


@pytest.mark.parametrize("seed", range(4))
def test_kernel_decode_grows_an_underestimated_output(seed: int, monkeypatch) -> None:
    rng = np.random.default_rng(seed)
    table = _table(rng, int(rng.integers(8, 255)))
    codes, starts, ends = _strings(rng, table, 3000, long_every=7)
    monkeypatch.setattr(fsst, "_estimate", lambda *a: 50)  # far too small: grown several times
    monkeypatch.setitem(fsst.mode, "decode", "kernel")
    calls = []
    real = fsst_kernel.decode_from

    def spy(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(fsst_kernel, "decode_from", spy)
    block = fsst._decode_spans(table, codes, starts, ends)
    out, offs = _numpy(table, codes, starts, ends)
    assert len(calls) > 1  # the output filled up and was grown
    assert np.array_equal(np.asarray(block.data), out) and np.array_equal(block.offsets, offs)


@pytest.mark.parametrize("seed", range(4))
def test_kernel_decode_equals_numpy(seed: int, monkeypatch) -> None:
    rng = np.random.default_rng(100 + seed)
    table = _table(rng, int(rng.integers(1, 255)))
    codes, starts, ends = _strings(rng, table, int(rng.integers(1, 20000)))
    monkeypatch.setitem(fsst.mode, "decode", "kernel")
    block = fsst._decode_spans(table, codes, starts, ends)
    out, offs = _numpy(table, codes, starts, ends)
    assert np.array_equal(np.asarray(block.data), out) and np.array_equal(block.offsets, offs)
    # the block vouches for its offsets (leaf._variable then skips their check): they must hold
    assert block.ordered and not np.any(np.diff(block.offsets) < 0) and block.offsets[-1] == len(block.data)


def test_decode_from_stops_at_a_string_that_does_not_fit() -> None:
    symbols = np.zeros((2, 8), np.uint8)
    symbols[0, :3] = [1, 2, 3]
    symbols[1, :8] = np.arange(10, 18)
    lengths = np.array([3, 8], np.uint8)
    codes = np.array([0, 0, 1, 1, 0], np.uint8)  # strings: [0 0] [1 1] [0] -> 6, 16, 3 bytes
    starts, ends = np.array([0, 2, 4]), np.array([2, 4, 5])
    out = np.zeros(20 + 8, np.uint8)  # room for 20 bytes: the first string only
    offs = np.zeros(4, np.int64)
    status, nxt, pos = fsst_kernel.decode_from(codes, starts, ends, symbols, lengths, 2, out, offs, 0, 0)
    assert (status, nxt, pos) == (fsst_kernel.NO_ROOM, 1, 6)
    bigger = np.zeros(6 + 19 + 8, np.uint8)
    bigger[:6] = out[:6]
    status, nxt, pos = fsst_kernel.decode_from(codes, starts, ends, symbols, lengths, 2, bigger, offs, nxt, pos)
    assert (status, nxt, pos) == (fsst_kernel.OK, 3, 25)
    assert list(offs) == [0, 6, 22, 25]
    assert list(bigger[:25]) == [1, 2, 3, 1, 2, 3, *range(10, 18), *range(10, 18), 1, 2, 3]


@pytest.mark.parametrize("bad", [np.array([0, 255], np.uint8), np.array([0, 7], np.uint8)])
def test_kernel_decode_reports_bad_codes(bad, monkeypatch) -> None:
    table = _table(np.random.default_rng(1), 5)
    codes = np.concatenate([np.zeros(50_000, np.uint8), bad])
    starts = np.arange(0, 50_000, 5, dtype=np.int64)
    ends = starts + 5
    ends[-1] = len(codes)
    monkeypatch.setitem(fsst.mode, "decode", "kernel")
    with pytest.raises(LanceError, match="FSST"):
        fsst._decode_spans(table, codes, starts, ends)


def _variable_chunks(rng: np.random.Generator, n_chunks: int, ow: int, hi: int = 256):
    """Mini-block chunk buffers of the Variable layout ((count + 1) offsets of ``ow`` bytes from the
    buffer start, then the values), 8-byte aligned, with gaps between them."""
    from lancelot.encodings.compression.segments import Segments

    parts, starts, sizes, counts, pos = [], [], [], [], 0
    for _ in range(n_chunks):
        n = int(rng.integers(0, 50))
        lens = rng.integers(0, 30, n)
        offs = (n + 1) * ow + np.concatenate([[0], np.cumsum(lens)])
        buf = np.concatenate(
            [offs.astype(f"<u{ow}").view(np.uint8), rng.integers(0, hi, int(lens.sum())).astype(np.uint8)]
        )
        pad = (-pos) % 8 + 8 * int(rng.integers(0, 2))
        parts += [np.zeros(pad, np.uint8), buf]
        pos += pad
        starts.append(pos)
        sizes.append(len(buf))
        counts.append(n)
        pos += len(buf)
    data = np.concatenate(parts)
    return Segments(data, np.array(starts, np.int64), np.array(sizes, np.int64)), np.array(counts, np.int64)


@pytest.mark.parametrize("ow", [4, 8])
def test_spans_kernel_equals_numpy(ow: int) -> None:
    from lancelot.encodings.compression import variable_kernel as vk
    from lancelot.encodings.compression import variable_numpy as vn

    seg, counts = _variable_chunks(np.random.default_rng(ow), 40, ow)
    first, last = np.empty(len(counts), np.int64), np.empty(len(counts), np.int64)
    assert vk.extents(seg.data, seg.starts, seg.sizes, counts, ow, first, last) == vk.OK
    n = int(counts.sum())
    ks, ke, ns, ne = (np.empty(n, np.int64) for _ in range(4))
    words = seg.data[: len(seg.data) // ow * ow].view(f"<u{ow}")
    assert vk.spans(seg.data, words, seg.starts, seg.sizes, counts, ow, ks, ke) == vk.OK
    assert vn.spans_numpy(seg.data, seg.starts, counts, ow, ns, ne) == vk.OK
    assert np.array_equal(ks, ns) and np.array_equal(ke, ne)
    joined = np.concatenate([seg.data[a:b] for a, b in zip(ks, ke)])
    offsets = np.zeros(n + 1, np.int64)
    data = np.empty(int((last - first).sum()), np.uint8)
    assert vk.join(seg.data, words, seg.starts, counts, ow, first, last, offsets, data) == vk.OK
    assert np.array_equal(joined, data) and np.array_equal(np.diff(offsets), ke - ks)


def test_fsst_chunks_decoded_where_they_lie_equal_the_joined_path(monkeypatch) -> None:
    """chunked.decompress_chunks on FSST over Variable: the spans path (kernels loaded) gives the strings
    of the join-then-decode path."""
    from lancelot.encodings.compression import chunked
    from lancelot.format.pb import encodings_v2_1_pb2 as pb

    rng = np.random.default_rng(11)
    table = _table(rng, 200)
    seg, counts = _variable_chunks(rng, 60, 4, hi=table.n_symbols)  # codes of symbols only
    offsets = pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=32))
    enc = fsst.fsst_description(table, pb.CompressiveEncoding(variable=pb.Variable(offsets=offsets)))
    monkeypatch.setitem(fsst.mode, "decode", "kernel")
    spans_calls = []
    real = chunked._fsst_variable
    monkeypatch.setattr(chunked, "_fsst_variable", lambda *a: spans_calls.append(1) or real(*a))
    monkeypatch.setattr(chunked.HOT_VARIABLE, "ready", lambda: True)
    fast = chunked.decompress_chunks(enc, [seg], counts)
    monkeypatch.setattr(chunked.HOT_VARIABLE, "ready", lambda: False)
    slow = chunked.decompress_chunks(enc, [seg], counts)
    assert spans_calls == [1]
    assert np.array_equal(np.asarray(fast.data), np.asarray(slow.data))
    assert np.array_equal(np.asarray(fast.offsets, np.int64), np.asarray(slow.offsets, np.int64))


@pytest.mark.parametrize("n", [3, 100])
def test_unordered_blocks_offsets_are_checked(n: int) -> None:
    """Only a decoder's own block skips the offsets check: offsets read from a file that go
    backwards or past the data are a corrupt file (few values and many)."""
    import pyarrow as pa

    from lancelot.encodings.compression.block import VariableWidthBlock
    from lancelot.encodings.structural.leaf import block_to_arrow
    from lancelot.errors import CorruptFileError

    data = np.arange(10 * n, dtype=np.uint8)
    good = np.arange(n + 1, dtype=np.int64) * 10
    assert block_to_arrow(VariableWidthBlock(good, data, n), pa.binary()).to_pylist()[1] == bytes(data[10:20])
    backwards = good.copy()
    backwards[1] = 15
    backwards[2] = 5
    past = good.copy()
    past[-1] = len(data) + 1
    for offsets in (backwards, past):
        with pytest.raises(CorruptFileError):
            block_to_arrow(VariableWidthBlock(offsets, data, n), pa.binary())


def _chunk(offsets: list[int], payload: bytes, ow: int = 4) -> bytes:
    return b"".join(o.to_bytes(ow, "little") for o in offsets) + payload


@pytest.mark.parametrize(
    ("chunk", "count", "status"),
    [
        (_chunk([12, 14, 16], b"abcd"), 2, "OK"),
        (_chunk([12, 14, 16], b"abcd"), 5, "SHORT_BUFFER"),  # 6 offsets need 24 bytes of 16
        (_chunk([4, 14, 16], b"abcd"), 2, "OVERLAP"),  # values start inside the offsets
        (_chunk([12, 14, 17], b"abcd"), 2, "PAST_END"),  # the last offset is past the chunk
        (_chunk([14, 13, 12], b"abcd"), 2, "PAST_END"),  # the first offset after the last
        (_chunk([12, 15, 14], b"abcd"), 2, "DECREASING"),  # 15 then 14, between first and last
    ],
)
def test_spans_kernel_checks_every_chunk(chunk: bytes, count: int, status: str) -> None:
    """``spans`` reports a bad chunk the way ``extents`` and ``join`` do (a corrupt file, not a crash),
    after a good chunk, aligned offsets or not."""
    from lancelot.encodings.compression import variable_kernel as vk

    good = _chunk([8, 10], b"xy..")  # 12 bytes: the next chunk's offsets stay aligned
    for pad in (0, 1):  # offsets read as aligned words, or byte by byte
        data = np.frombuffer(b"\0" * pad + good + chunk, np.uint8)
        starts = np.array([pad, pad + len(good)], np.int64)
        sizes = np.array([len(good), len(chunk)], np.int64)
        counts = np.array([1, count], np.int64)
        words = data[: len(data) // 4 * 4].view("<u4") if pad == 0 else np.zeros(0, "<u4")
        n = int(counts.sum())
        out_s, out_e = np.empty(n, np.int64), np.empty(n, np.int64)
        got = vk.spans(data, words, starts, sizes, counts, 4, out_s, out_e)
        assert got == getattr(vk, status)
        if status == "OK":
            assert [bytes(data[a:b]) for a, b in zip(out_s, out_e)] == [b"xy", b"ab", b"cd"]
