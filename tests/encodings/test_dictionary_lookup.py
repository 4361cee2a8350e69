"""Dictionary lookups of string and binary values (leaf.apply_dictionary): the gather kernel (fixed-word
and to-length copies) and its numpy twin give Arrow's take, nulls for out-of-range indices included."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lancelot.encodings.compression import variable_kernel as vk
from lancelot.encodings.compression.variable_numpy import gather_values_numpy
from lancelot.encodings.structural import leaf


def _dictionary(rng: np.random.Generator, n: int, longest: int, t: pa.DataType) -> pa.Array:
    words = [bytes(rng.integers(0, 256, int(rng.integers(0, longest + 1))).astype(np.uint8)) for _ in range(n)]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        words = [w.hex()[: len(w)] for w in words]
    return pa.array(words, t)


@pytest.mark.parametrize("t", [pa.string(), pa.binary(), pa.large_string(), pa.large_binary()])
@pytest.mark.parametrize("longest", [3, 16, 31, 200])
@pytest.mark.parametrize("path", ["kernel", "numpy"])
def test_lookup_equals_arrow_take(t, longest: int, path: str, monkeypatch) -> None:
    rng = np.random.default_rng(longest)
    dictionary = _dictionary(rng, 37, longest, t)
    if longest == 31:
        dictionary = dictionary.slice(5, 20)  # a sliced dictionary: offsets not from zero
    idx = rng.integers(0, len(dictionary), 20_000).astype(np.int64)
    bad_rows = rng.random(len(idx)) < 0.05
    idx[bad_rows] = len(dictionary) + 3  # out of range: a null
    monkeypatch.setattr(leaf.HOT_GATHER, "ready", lambda: path == "kernel")
    got = leaf.apply_dictionary(idx, dictionary, t)
    got.validate(full=True)
    want = dictionary.take(pa.array(np.where(bad_rows, 0, idx), mask=bad_rows))
    assert got.type == t and got.equals(want)


@pytest.mark.parametrize("words", [0, 1, 3])
def test_gather_kernel_equals_numpy(words: int) -> None:
    rng = np.random.default_rng(words)
    lens = rng.integers(0, 8 * words + 1 if words else 40, 50)
    offs = np.zeros(51, np.int64)
    np.cumsum(lens, out=offs[1:])
    data = rng.integers(0, 256, int(offs[-1])).astype(np.uint8)
    idx = rng.integers(0, 50, 1000).astype(np.int64)
    out_offs = np.zeros(1001, np.int64)
    np.cumsum(lens[idx], out=out_offs[1:])
    total = int(out_offs[-1])
    padded = np.concatenate([data, np.zeros(8 * words, np.uint8)])
    out = np.full(total + 8 * max(words, 1), 7, np.uint8)
    vk.gather_values(padded if words else data, offs[:-1].copy(), idx, out_offs, out, words)
    assert np.array_equal(out[:total], gather_values_numpy(data, offs[:-1], idx, out_offs))


def test_pooled_empty_is_writable_aligned_and_typed() -> None:
    from lancelot.util import arrays

    small = arrays.empty(10, np.int32)
    big = arrays.empty((arrays.POOL_MIN_BYTES // 8) + 3, np.int64)
    assert small.dtype == np.int32 and len(small) == 10
    assert big.dtype == np.int64 and len(big) == arrays.POOL_MIN_BYTES // 8 + 3
    assert big.flags.writeable and big.flags.c_contiguous and big.ctypes.data % 64 == 0
    big[:] = 7
    arr = pa.Array.from_buffers(pa.int64(), len(big), [None, pa.py_buffer(big)])
    del big
    assert arr.to_pylist()[-1] == 7


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.uint32])
def test_out_of_range_indices_are_found_and_read_as_nulls(dtype) -> None:
    """``out_of_range`` names exactly the indices outside [0, n) (None when there are none), and a
    fixed-width lookup reads those as nulls."""
    ok = np.array([0, 4, 2, 4], dtype=dtype)
    assert leaf.out_of_range(ok, 5) is None
    assert leaf.out_of_range(ok[:0], 0) is None
    wild = np.array([0, 5, 2, 255], dtype=dtype)
    assert leaf.out_of_range(wild, 5).tolist() == [False, True, False, True]
    if np.dtype(dtype).kind == "i":
        assert leaf.out_of_range(np.array([1, -1, 0], dtype=dtype), 5).tolist() == [False, True, False]
    got = leaf.apply_dictionary(wild, pa.array([10, 11, 12, 13, 14], pa.int32()), pa.int32())
    assert got.to_pylist() == [10, None, 12, None]
