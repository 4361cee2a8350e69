"""The first write of a fresh process: page encoding imports neither numba nor pandas (nor numpy.random,
numpy.ma).

Until their kernels are loaded, FSST training and encoding, bitpacking and the rest run numpy
formulations (the same bytes); Arrow arrays are built from and read into numpy through their
buffers (util/arrays.py: ``pa.array`` on numpy, ``Array.to_numpy`` and ``pa.scalar`` import
pandas, ~0.17 s).  These tests write a table of many shapes in a new process with an empty numba
cache (hot paths kept on numpy) and check what it imported and that its bytes are the bytes this
process writes.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader

import lancelot

N = 40_000


def _table(seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "\u00e9t\u00e9", "na\u00efve"])
    text = [" ".join(rng.choice(words, int(rng.integers(2, 12)))) + f" {i}" for i in range(N)]
    mask = rng.random(N) < 0.1
    labels = rng.choice(["none", "returned", "open"], N, p=[0.9, 0.05, 0.05]).tolist()
    return pa.table(
        {
            "id": pa.array(np.arange(N, dtype=np.int64)),
            "small": pa.array(rng.integers(0, 50, N).astype(np.int32), mask=mask),
            "wide": pa.array(rng.integers(-(2**40), 2**40, N)),
            "value": pa.array(rng.normal(size=N)),
            "flag": pa.array(rng.random(N) < 0.3, mask=rng.random(N) < 0.05),
            "const": pa.array(np.full(N, 7, dtype=np.int32)),
            "runs": pa.array(np.repeat(rng.integers(0, 5, N // 100), 100).astype(np.int64)),
            "label": pa.array(labels),
            "label_nulls": pa.array(labels, mask=mask),
            "text": pa.array([None if m else t for m, t in zip(mask, text)]),
            "day": pa.array(rng.integers(8000, 9000, N).astype(np.int32), pa.date32()),
            "price": pa.array([int(v) for v in rng.integers(0, 10**9, N)], pa.decimal128(15, 2)),
            "keys": pa.array(np.sort(rng.integers(0, 3000, N))),
            "cat": pa.DictionaryArray.from_arrays(
                pa.array(rng.integers(0, 4, N).astype(np.int8), mask=rng.random(N) < 0.05),
                pa.array(["a", None, "c", "d"]),
            ),
            "tags": pa.array([[t] * int(k) for t, k in zip(labels, rng.integers(0, 3, N))]),
        }
    )


_CHILD = """
import sys, pyarrow as pa, lancelot
from lancelot.util import jit
jit.HOT_CALLS = 10**9  # no background preparation of hot kernels: every page runs the numpy paths
table = pa.ipc.open_file(sys.argv[1]).read_all()
w = lancelot.LanceWriter(sys.argv[2], table.schema, version=sys.argv[3])
w.write(table)
w.close()
print('numba' in sys.modules, 'pandas' in sys.modules, 'numpy.random' in sys.modules, 'numpy.ma' in sys.modules)
"""


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_fresh_process_write_imports_no_numba_nor_pandas(tmp_path, version):
    table = _table()
    src = str(tmp_path / "t.arrow")
    with pa.OSFile(src, "wb") as f, pa.ipc.new_file(f, table.schema) as w:
        w.write_table(table)
    fresh = str(tmp_path / "fresh.lance")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "empty-cache"))
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, src, fresh, version], env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "False False False False"  # numba, pandas, numpy.random, .ma
    assert not os.path.exists(tmp_path / "empty-cache")  # nothing compiled
    here = str(tmp_path / "here.lance")
    w = lancelot.LanceWriter(here, table.schema, version=version)
    w.write(table)
    w.close()
    with open(fresh, "rb") as a, open(here, "rb") as b:
        assert a.read() == b.read()
    assert _plain(lancelot.read_table(fresh)).equals(_plain(table))
    assert _plain(LanceFileReader(fresh).read_all().to_table()).equals(_plain(table))


def _plain(t: pa.Table) -> pa.Table:
    """Dictionary columns as their values (a dictionary's null entries come back as null indices)."""
    return pa.table(
        {
            n: c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c
            for n, c in zip(t.column_names, t.columns)
        }
    )


@pytest.mark.parametrize("n", [1, 2, 3, 7, 1000, 200_000, 2**31 - 1, 2**32 - 1, 2**32])
def test_pcg64_draws_are_numpys(n):
    """FSST's sample draws its strings through pcg64.py: numpy.random.default_rng(0).integers(0, n)."""
    import itertools

    from lancelot.encodings.compression import pcg64

    want = np.random.default_rng(0).integers(0, n, size=3000)
    assert np.array_equal(np.fromiter(itertools.islice(pcg64.integers(n), 3000), np.int64), want)


@pytest.mark.parametrize("mean_len", [1, 3, 40, 600])
def test_fsst_sample_is_the_numpy_generators(mean_len):
    from lancelot.encodings.compression import write_fsst

    rng = np.random.default_rng(mean_len)
    lens = rng.integers(0, 2 * mean_len + 1, 50_000)
    offs = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=offs[1:])
    data = rng.integers(0, 256, int(offs[-1])).astype(np.uint8)
    got, got_offs = write_fsst._sample(data, offs)
    n = len(offs) - 1
    picks = np.random.default_rng(0).integers(
        0, n, size=max(1, 4 * write_fsst.SAMPLE_TARGET // max(1, int(offs[-1]) // n))
    )
    starts = offs[picks]
    piece = np.minimum(offs[picks + 1] - starts, write_fsst.SAMPLE_PIECE)
    keep = np.cumsum(piece) <= write_fsst.SAMPLE_TARGET
    want = b"".join(data[s : s + k].tobytes() for s, k in zip(starts[keep], piece[keep]))
    assert got.tobytes() == want and np.array_equal(np.diff(got_offs), piece[keep])
