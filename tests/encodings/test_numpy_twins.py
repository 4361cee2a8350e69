"""The numpy paths a fresh process writes with give exactly the kernels' output (so files stay byte-identical
whichever path wrote them): FSST training and encoding, inline bitpacking, zone-map string bounds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lancelot import zonemap_bounds
from lancelot.encodings.compression import bitpacking_kernel as bk
from lancelot.encodings.compression import write_fsst as fk
from lancelot.encodings.compression import write_fsst_numpy as fn
from lancelot.encodings.compression.bitpacking import CHUNK, _chunk_widths, pack_inline_chunks
from lancelot.encodings.compression.block import FixedWidthBlock
from lancelot.encodings.compression.segments import Segments


def _strings(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 1500))
    lens = rng.integers(0, int(rng.integers(1, 120)), n)
    if seed % 3 == 0:  # text-like: few distinct bytes, long repeats
        data = np.frombuffer(
            (b"the quick brown fox, jumps " * (int(lens.sum()) // 27 + 1))[: int(lens.sum())], np.uint8
        )
    else:
        data = rng.integers(0, int(rng.integers(2, 257)), int(lens.sum())).astype(np.uint8)
    offs = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offs[1:])
    return np.ascontiguousarray(data), offs


@pytest.mark.parametrize("seed", range(8))
def test_fsst_train_and_encode_match_the_kernels(seed: int, monkeypatch) -> None:
    if seed % 2:
        monkeypatch.setattr(fn, "BLOCK", 7)  # many blocks, some of only empty strings
    data, offs = _strings(seed)
    sample, s_offs = fk._sample(data, offs)
    sample = np.ascontiguousarray(sample)
    kv, kl = fk._train(sample, s_offs)
    nv, nl = fn.train(sample, s_offs)
    assert np.array_equal(kv, nv) and np.array_equal(kl, nl)
    padded = np.zeros(len(data) + 8, np.uint8)
    padded[: len(data)] = data
    kc, ko = fk._encode(padded, offs, kv, kl)
    nc, no = fn.encode(padded, offs, kv, kl)
    assert np.array_equal(ko, no)
    assert np.array_equal(kc, nc)


@pytest.mark.parametrize("t", [8, 16, 32, 64])
def test_inline_pack_numpy_matches_the_kernel(t: int) -> None:
    rng = np.random.default_rng(t)
    dt = np.dtype(f"uint{t}")
    for bits in (0, 1, t // 2, t):
        n = int(rng.integers(1, 5000))
        vals = (
            (rng.integers(0, 1 << 62, n, dtype=np.uint64) >> np.uint64(64 - bits)).astype(dt)
            if bits
            else np.zeros(n, dt)
        )
        vals[: n // 3] = 0  # chunks of different widths
        widths = _chunk_widths(vals, t).astype(np.int64)
        sizes = t // 8 + widths * (CHUNK // 8)
        starts = np.zeros(len(widths) + 1, np.int64)
        np.cumsum(sizes, out=starts[1:])
        ws, total = starts[:-1] // (t // 8), int(starts[-1]) // (t // 8)
        a, b = np.empty(total, dt), np.empty(total, dt)
        bk._pack_inline(vals, n, widths, ws, bk._ORDER, a)
        bk.pack_inline_numpy(vals, widths, ws, b)
        assert np.array_equal(a, b)


@pytest.mark.parametrize("seed", range(6))
def test_zone_string_bounds_per_zone_match_the_kernel(seed: int) -> None:
    rng = np.random.default_rng(seed)
    alpha = [
        b"",
        b"\x00",
        b"a",
        b"a\x00",
        b"ab",
        b"abcdefgh",
        b"abcdefgh\x00",
        b"abcdefghi",
        b"\xff" * 9,
        b"abcdefgabcdefgh",
        b"abcdefgabcdefgi",
    ]
    n = int(rng.integers(1, 3000))
    vals = [
        alpha[i] + bytes(rng.integers(0, 256, int(rng.integers(0, 12)) * (seed % 2)).astype(np.uint8))
        for i in rng.integers(0, len(alpha), n)
    ]
    arr = pa.array(vals, pa.binary(), mask=rng.random(n) < 0.2 * (seed % 3))
    for t in (pa.binary(), pa.large_binary(), pa.binary(16)):
        if t == pa.binary(16):
            fixed = [v[:16].ljust(16, b"\xfe") for v in vals]
            arr_t = pa.array(fixed, t, mask=rng.random(n) < 0.2 * (seed % 3))
        else:
            arr_t = arr.cast(t)
        for a in (arr_t, arr_t.slice(min(5, n - 1))):
            offsets, data = zonemap_bounds._offsets_and_data(a)
            valid = a.is_valid().to_numpy(zero_copy_only=False)
            for rpz in (1, 7, 256):
                nz = -(-len(a) // rpz)
                lo, hi = zonemap_bounds._zone_extremes(offsets, data, valid, rpz, nz)
                lo2, hi2 = zonemap_bounds.bounds_per_zone(a, rpz, nz)  # the path until the kernel is loaded
                lo2.validate(full=True)
                hi2.validate(full=True)
                assert lo2.type == hi2.type == a.type
                assert a.take(pa.array(lo, mask=lo < 0)).equals(lo2)
                assert a.take(pa.array(hi, mask=hi < 0)).equals(hi2)


def test_numpy_until_hot_prepares_after_enough_work() -> None:
    from lancelot.util.jit import HOT_CALLS, NumpyUntilHot, njit

    @njit(cache=False)
    def _k(x):  # never called: only the bookkeeping is tested
        return x

    ran = []
    hot = NumpyUntilHot(_k, warm_work=100)
    hot.numpy_call(lambda: ran.append(1), 60)
    assert hot.thread is None
    hot.numpy_call(lambda: ran.append(2), 60)  # 120 >= 100: prepared in the background, once
    hot.thread.join(5)
    assert ran == [2]
    for _ in range(HOT_CALLS):
        hot.numpy_call(lambda: ran.append(3), 0)
    assert ran == [2]


def test_numpy_until_hot_never_waits_for_the_preparation() -> None:
    """A path keeps running numpy while its kernels are prepared (on an empty numba cache that compiles for
    seconds: a large read that waited for it took 10x longer), and switches once they are loaded."""
    import threading

    from lancelot.util.jit import NumpyUntilHot, njit

    @njit(cache=False)
    def _k(x):
        return x + 1

    hot = NumpyUntilHot(_k, warm_work=1)
    assert not hot.ready() and hot.thread is None
    release = threading.Event()
    hot.numpy_call(lambda: (release.wait(5), _k(1)), 1)
    assert hot.thread is not None and hot.thread.is_alive()
    assert not hot.ready()  # under way: the caller runs numpy now instead of blocking
    release.set()
    hot.thread.join(5)
    assert hot.ready()  # loaded: the next call takes the kernel


# ------------------------------------------------------------------ reads (the first scan of a fresh process)


def _inline_chunks_input(t: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Inline-bitpacked chunks of random widths (some chunks short of 1024 values, some empty), laid out
    with gaps in one buffer, as a page read gives them."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(f"uint{t}")
    n_chunks = int(rng.integers(1, 12))
    parts, starts, sizes, counts = [], [], [], []
    pos = 0
    for k in range(n_chunks):
        bits = int(rng.integers(0, t + 1))
        n = 1024 if k < n_chunks - 1 or seed % 2 else int(rng.integers(1, 1025))
        if seed % 3 == 0 and k == 1:
            n = int(rng.integers(0, 1025))  # a partial or empty chunk in the middle
        vals = (
            (rng.integers(0, 1 << 62, 1024, dtype=np.uint64) >> np.uint64(64 - bits)).astype(dt)
            if bits
            else np.zeros(1024, dt)
        )
        vals[n:] = 0
        packed, _ = pack_inline_chunks(FixedWidthBlock(vals.view(np.uint8), t, 1024))
        gap = np.zeros(int(rng.integers(0, 9)), np.uint8)
        parts += [gap, packed]
        starts.append(pos + len(gap))
        sizes.append(len(packed))
        counts.append(n)
        pos += len(gap) + len(packed)
    data = np.concatenate(parts)
    return data, np.array(starts, np.int64), np.array(sizes, np.int64), np.array(counts, np.int64)


@pytest.mark.parametrize("t", [8, 16, 32, 64])
@pytest.mark.parametrize("seed", range(4))
def test_inline_unpack_numpy_matches_the_kernel(t: int, seed: int) -> None:
    data, starts, sizes, counts = _inline_chunks_input(t, seed)
    dt = np.dtype(f"uint{t}")
    cases = [(data, starts, sizes, counts)]
    bad_width = data.copy()
    bad_width[starts[-1]] = t + 1  # a width beyond the values' bits
    short = sizes.copy()
    short[len(short) // 2] = t // 8 + 1  # packed words past the chunk (or the header, for width 0: fine)
    cases += [
        (bad_width, starts, sizes, counts),
        (data, starts, short, counts),
        (data, starts, np.minimum(sizes, t // 8 - 1), counts),  # headers past the chunk (t > 8)
        (data, starts, sizes, counts + 1025),
    ]
    for d, s, z, c in cases:
        ks, kv, kk, kw = bk.inline_chunks_kernel(d, s, z, c, dt)
        ns, nv, nk, nw = bk.inline_chunks_numpy(d, s, z, c, dt)
        assert ks == ns
        if ks != bk.OK:  # the first bad chunk (and its width)
            assert (kk, kw) == (nk, nw)
        else:
            assert kv.dtype == nv.dtype and np.array_equal(kv, nv)


@pytest.mark.parametrize("ow", [4, 8])
@pytest.mark.parametrize("seed", range(4))
def test_variable_join_numpy_matches_the_kernels(ow: int, seed: int) -> None:
    from lancelot.encodings.compression import variable_kernel as vk
    from lancelot.encodings.compression import variable_numpy as vn

    rng = np.random.default_rng(seed)
    parts, starts, sizes, counts = [], [], [], []
    pos = 0
    for _ in range(int(rng.integers(1, 10))):
        n = int(rng.integers(0, 50))
        lens = rng.integers(0, 9, n)
        offs = (n + 1) * ow + np.concatenate([[0], np.cumsum(lens)])
        buf = np.concatenate([offs.astype(f"<u{ow}").view(np.uint8), rng.integers(0, 256, int(lens.sum()), np.uint8)])
        gap = np.zeros(int(rng.integers(0, 5)) * (seed % 2), np.uint8)  # unaligned chunks on odd seeds
        parts += [gap, buf]
        starts.append(pos + len(gap))
        sizes.append(len(buf))
        counts.append(n)
        pos += len(gap) + len(buf)
    data = np.concatenate(parts)
    starts, sizes, counts = (np.array(a, np.int64) for a in (starts, sizes, counts))
    k = len(starts) - 1
    decreasing = data.copy()
    if counts[k] > 1:
        decreasing[starts[k] + ow : starts[k] + 2 * ow] = 255  # offset 1 beyond offset 2
    past = data.copy()
    past[starts[k] + counts[k] * ow] = 255  # the last offset past the chunk
    overlap = data.copy()
    overlap[starts[k] : starts[k] + ow] = 0  # the first offset inside the offsets
    short = sizes.copy()
    short[k] = counts[k] * ow
    for d, z in ((data, sizes), (decreasing, sizes), (past, sizes), (overlap, sizes), (data, short)):
        fk, lk, fn, ln = (np.full(len(starts), -1, np.int64) for _ in range(4))
        sk = vk.extents(d, starts, z, counts, ow, fk, lk)
        assert sk == vn.extents_numpy(d, starts, z, counts, ow, fn, ln)
        if sk != vk.OK:
            continue
        assert np.array_equal(fk, fn) and np.array_equal(lk, ln)
        total = int((lk - fk).sum())
        ok, dk = np.empty(int(counts.sum()) + 1, np.int64), np.empty(total, np.uint8)
        on, dn = np.empty_like(ok), np.empty_like(dk)
        sk = vk.join(d, np.zeros(0, f"<u{ow}"), starts, counts, ow, fk, lk, ok, dk)
        assert sk == vn.join_numpy(d, starts, counts, ow, fn, ln, on, dn)
        if sk == vk.OK:
            assert np.array_equal(ok, on) and np.array_equal(dk, dn)


@pytest.mark.parametrize("seed", range(6))
def test_chunk_headers_numpy_match_the_kernel(seed: int) -> None:
    from lancelot.encodings.structural import miniblock_chunks as mc

    rng = np.random.default_rng(seed)
    nlev, nvals, word = seed % 3, 1 + seed % 2, (2, 4)[seed % 2]
    nbuf = nlev + nvals
    head = 2 + 2 * nlev + word * nvals
    chunks, pos, size = [], [], []
    at = 0
    for _ in range(int(rng.integers(1, 20))):
        lens = rng.integers(0, 40, nbuf)
        hdr = [int(rng.integers(0, 1024)).to_bytes(2, "little")] + [
            int(x).to_bytes(2 if i < nlev else word, "little") for i, x in enumerate(lens)
        ]
        body = -(-head // 8) * 8 + sum(-(-int(x) // 8) * 8 for x in lens)
        chunk = np.zeros(body, np.uint8)
        chunk[:head] = np.frombuffer(b"".join(hdr), np.uint8)
        chunks.append(chunk)
        pos.append(at)
        size.append(body)
        at += body
    data, pos, size = np.concatenate(chunks), np.array(pos, np.int64), np.array(size, np.int64)
    short_body, short_head = size.copy(), size.copy()
    short_body[-1] -= 9
    short_head[len(size) // 2] = head - 1
    for z in (size, short_body, short_head):
        out = []
        for f in (mc.parse_headers, mc.parse_headers_numpy):
            res = (
                np.empty(len(pos), np.int64),
                np.empty((len(pos), nbuf), np.int64),
                np.empty((len(pos), nbuf), np.int64),
                np.zeros(3, np.int64),
            )
            status = f(data, pos, z, head, nlev, word, nbuf, *res)
            out.append((status, res))
        (sk, rk), (sn, rn) = out
        assert sk == sn
        if sk:
            assert np.array_equal(rk[3], rn[3])
        else:
            assert all(np.array_equal(a, b) for a, b in zip(rk[:3], rn[:3]))


@pytest.mark.parametrize("seed", range(6))
def test_fsst_decode_numpy_blocks_match_the_kernels(seed: int, monkeypatch) -> None:
    """Several tables (strings of several pages), strings scattered with gaps (full-zip rows), escapes and
    literal 0xFF bytes, bad codes and escapes at a string's end; decoded in groups smaller than the input."""
    from lancelot.encodings.compression import fsst_kernel
    from lancelot.encodings.compression import fsst_numpy as fnp

    monkeypatch.setattr(fnp, "BLOCK_CODES", 64)
    rng = np.random.default_rng(seed)
    contiguous = seed % 3 != 1  # else one table's strings scattered with gaps (what the one-table kernel reads)
    n_tables = 1 + seed % 3 if contiguous else 1
    n_symbols = rng.integers(1, 255, n_tables)
    symbols = rng.integers(0, 256, (n_tables, 256, 8)).astype(np.uint8)
    lengths = rng.integers(1, 9, (n_tables, 256)).astype(np.uint8)
    parts, starts, ends, table_of, pos = [], [], [], [], 0
    for _ in range(int(rng.integers(1, 400))):
        t = int(rng.integers(0, n_tables))
        k = int(rng.integers(0, 30))
        codes = rng.integers(0, int(n_symbols[t]) + (2 if seed % 2 else 0), k)
        codes[rng.random(k) < 0.2] = 255
        gap = 0 if contiguous else int(rng.integers(0, 3))
        parts += [np.full(gap, 7, np.uint8), codes.astype(np.uint8)]
        starts.append(pos + gap)
        pos += gap + k
        ends.append(pos)
        table_of.append(t)
    codes = np.concatenate(parts)
    starts, ends, table_of = (np.array(a, np.int64) for a in (starts, ends, table_of))
    status, out, offs = fnp.decode_numpy_blocks(codes, starts, ends, symbols, lengths, n_symbols, table_of)
    koffs = np.concatenate([starts, ends[-1:]])
    if contiguous:  # the kernel for strings of several tables (back to back)
        size = fsst_kernel.decoded_size_tables(codes, koffs, table_of, lengths, n_symbols)
    else:
        size = fsst_kernel.decoded_size(codes, starts, ends, lengths[0], int(n_symbols[0]))
    if size < 0:
        assert status == -1 - size
        return
    assert status == fnp.OK
    k_out = np.empty(size + 8, np.uint8)
    k_offs = np.zeros(len(starts) + 1, np.int64)
    if contiguous:
        assert fsst_kernel.decode_tables(codes, koffs, table_of, symbols, lengths, n_symbols, k_out, k_offs) == 0
    else:
        one = (symbols[0], lengths[0], int(n_symbols[0]), k_out, k_offs, 0, 0)
        assert fsst_kernel.decode_from(codes, starts, ends, *one)[0] == 0
    assert np.array_equal(out, k_out[:size]) and np.array_equal(offs, k_offs)


@pytest.mark.parametrize("t", [8, 16, 32, 64])
def test_out_of_line_unpack_numpy_matches_the_kernel(t: int) -> None:
    rng = np.random.default_rng(t)
    dt = np.dtype(f"uint{t}")
    for w in (1, t // 2 + 1, t):
        words = rng.integers(0, 1 << 62, (3, w, 1024 // t), dtype=np.uint64).astype(dt)
        out = np.empty((3, 1024), dt)
        bk._unpack_rows_numpy(words, w, out)
        kernel = np.empty(3 * 1024, dt)
        bk._unpack(words.reshape(3, -1), w, t, bk._ORDER, kernel)
        assert np.array_equal(out.reshape(-1), kernel)


@pytest.mark.parametrize("seed", range(8))
def test_rle_numpy_matches_the_kernel(seed: int) -> None:
    from lancelot.encodings.compression import rle_kernel as rk

    rng = np.random.default_rng(seed)
    dt, lb = np.dtype(["uint8", "uint16", "uint32", "uint64"][seed % 4]), (1, 2)[seed % 2]
    vparts, lparts, vstarts, vsizes, lstarts, lsizes, counts = [], [], [], [], [], [], []
    vpos = lpos = 0
    for _ in range(int(rng.integers(1, 30))):
        runs = int(rng.integers(0 if seed > 5 else 1, 20))
        lens = rng.integers(0, 1 << (8 * lb), runs)
        n = int(rng.integers(0, int(lens.sum()) + 1)) if seed < 4 else int(lens.sum()) + int(rng.integers(0, 2))
        vals = rng.integers(0, 1 << 62, runs, dtype=np.uint64).astype(dt).view(np.uint8)
        vparts.append(vals)
        lparts.append(lens.astype(f"<u{lb}").view(np.uint8))
        vstarts.append(vpos)
        vsizes.append(len(vals))
        lstarts.append(lpos)
        lsizes.append(runs * lb)
        counts.append(n)
        vpos += len(vals)
        lpos += runs * lb
    vdata, ldata = np.concatenate(vparts), np.concatenate(lparts)
    args = [np.array(a, np.int64) for a in (vstarts, vsizes, lstarts, lsizes, counts)]
    cases = [args]
    if len(counts) > 2 and dt.itemsize > 1:
        odd = [a.copy() for a in args]
        odd[1][1] += 1  # a part value in chunk 1
        cases.append(odd)
    for vs, vz, ls, lz, c in cases:
        ok = np.empty(int(c.sum()), dt)
        sk = rk._runs(vdata, vs, vz, ldata, ls, lz, c, dt.itemsize, lb, ok)
        sn, on = rk.decode_runs_numpy(Segments(vdata, vs, vz), Segments(ldata, ls, lz), c, dt, lb)
        assert sk == sn
        if sk == rk.OK:
            assert np.array_equal(ok, on)


def test_from_numpy_and_to_numpy_match_pyarrow() -> None:
    from lancelot.util.arrays import from_numpy, to_numpy

    mask = np.array([0, 1, 0, 1], bool)
    cases = [
        (np.arange(5), None, None),
        (np.arange(5, dtype=np.int32), pa.int64(), None),
        (np.array([True, False, True]), pa.bool_(), None),
        (np.arange(4), None, mask),
        (np.arange(10)[::2], pa.int64(), None),
        (np.array([1.5, -0.0]), None, None),
        (np.arange(4, dtype=np.uint8), pa.int32(), mask),
        (np.arange(4, dtype=np.int64), pa.int32(), None),
        (np.array([True, False, True, True]), None, mask),
    ]
    for values, t, m in cases:
        got = from_numpy(values, t, m)
        got.validate(full=True)
        assert got.equals(pa.array(values, t, mask=m))
    with pytest.raises(pa.ArrowInvalid):
        from_numpy(np.array([2**40]), pa.int32())  # pa.array's overflow error kept
    arr = pa.array([1, 2, 3, 4], pa.int16()).slice(1, 2)
    assert np.array_equal(to_numpy(arr), [2, 3]) and to_numpy(arr).dtype == np.int16
    flags = pa.array([i % 3 == 0 or i % 7 == 1 for i in range(40)])
    for a, b in [(0, 40), (3, 17), (8, 0), (9, 31), (39, 1)]:
        part = flags.slice(a, b)
        got = to_numpy(part)
        assert got.dtype == bool and np.array_equal(got, part.to_numpy(zero_copy_only=False))
    with_nulls = pa.array([1, None, 3])
    assert np.array_equal(to_numpy(with_nulls), with_nulls.to_numpy(zero_copy_only=False), equal_nan=True)
