"""The numpy paths a fresh process writes with give exactly the kernels' output (so files stay byte-identical
whichever path wrote them): FSST training and encoding, inline bitpacking, zone-map string bounds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lancelot import zonemap_bounds
from lancelot.encodings.compression import bitpacking_kernel as bk
from lancelot.encodings.compression import fsst_encode as fk
from lancelot.encodings.compression import fsst_encode_numpy as fn
from lancelot.encodings.compression.bitpacking import CHUNK, _chunk_widths


def _strings(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 1500))
    lens = rng.integers(0, int(rng.integers(1, 120)), n)
    if seed % 3 == 0:  # text-like: few distinct bytes, long repeats
        data = np.frombuffer((b"the quick brown fox, jumps " * (int(lens.sum()) // 27 + 1))[:int(lens.sum())], np.uint8)
    else:
        data = rng.integers(0, int(rng.integers(2, 257)), int(lens.sum())).astype(np.uint8)
    offs = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offs[1:])
    return np.ascontiguousarray(data), offs


@pytest.mark.parametrize("seed", range(8))
def test_fsst_train_and_encode_match_the_kernels(seed: int) -> None:
    data, offs = _strings(seed)
    sample, s_offs = fk._sample(data, offs)
    sample = np.ascontiguousarray(sample)
    kv, kl = fk._train(sample, s_offs)
    nv, nl = fn.train(sample, s_offs)
    assert np.array_equal(kv, nv) and np.array_equal(kl, nl)
    padded = np.zeros(len(data) + 8, np.uint8)
    padded[:len(data)] = data
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
        vals = (rng.integers(0, 1 << 62, n, dtype=np.uint64) >> np.uint64(64 - bits)).astype(dt) if bits else \
            np.zeros(n, dt)
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
def test_zone_string_bounds_numpy_match_the_kernel(seed: int) -> None:
    rng = np.random.default_rng(seed)
    alpha = [b"", b"\x00", b"a", b"a\x00", b"ab", b"abcdefgh", b"abcdefgh\x00", b"abcdefghi", b"\xff" * 9,
             b"abcdefgabcdefgh", b"abcdefgabcdefgi"]
    n = int(rng.integers(1, 3000))
    vals = [alpha[i] + bytes(rng.integers(0, 256, int(rng.integers(0, 12)) * (seed % 2)).astype(np.uint8))
            for i in rng.integers(0, len(alpha), n)]
    arr = pa.array(vals, pa.binary(), mask=rng.random(n) < 0.2 * (seed % 3))
    for a in (arr, arr.slice(min(5, n - 1))):
        offsets, data = zonemap_bounds._offsets_and_data(a)
        valid = a.is_valid().to_numpy(zero_copy_only=False)
        for rpz in (1, 7, 256):
            nz = -(-len(a) // rpz)
            lo, hi = zonemap_bounds._zone_extremes(offsets, data, valid, rpz, nz)
            lo2, hi2 = zonemap_bounds._zone_extremes_numpy(offsets, data, valid, rpz, nz)
            assert np.array_equal(lo < 0, lo2 < 0) and np.array_equal(hi < 0, hi2 < 0)
            assert a.take(pa.array(lo, mask=lo < 0)).equals(a.take(pa.array(lo2, mask=lo2 < 0)))
            assert a.take(pa.array(hi, mask=hi < 0)).equals(a.take(pa.array(hi2, mask=hi2 < 0)))


def test_numpy_until_hot_prepares_after_enough_work() -> None:
    from lancelot.encodings.compression.jit import HOT_CALLS, NumpyUntilHot, njit

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
