"""The first take of a fresh process: no numba import, and numpy paths that agree with the kernels.

A take of a few rows runs miniblock_points_numpy / fsst_numpy while the numba kernels are not
loaded (util/jit.py makes every kernel lazy); these tests check that a fresh process
opening pylance's 2.1/2.2 files and taking rows never imports numba, and that the numpy
formulations return exactly what the kernels return, on good files and on damaged chunks.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

import lancelot
from lancelot.encodings.compression import fsst, fsst_kernel
from lancelot.encodings.compression.fsst_numpy import decode_numpy_blocks
from lancelot.encodings.structural import miniblock_points
from lancelot.errors import LanceError
from lancelot.io.source import MemorySource

N = 6000


def _table(seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "\u00e9t\u00e9", "na\u00efve"])
    text = [
        " ".join(rng.choice(words, int(rng.integers(1, 9)))) + bytes(rng.integers(0, 256, 3, dtype=np.uint8)).hex()
        for _ in range(N)
    ]
    mask = rng.random(N) < 0.1
    return pa.table(
        {
            "id": pa.array(np.arange(N, dtype=np.int64)),
            "small": pa.array(rng.integers(0, 50, N).astype(np.int32), mask=mask),
            "wide": pa.array(rng.integers(-(2**40), 2**40, N)),
            "value": pa.array(rng.normal(size=N)),
            "flag": pa.array(rng.random(N) < 0.3),
            "const": pa.array(np.full(N, 7, dtype=np.int32)),
            "runs": pa.array(np.repeat(rng.integers(0, 5, N // 100), 100).astype(np.int64)),
            "label": pa.array(rng.choice(["none", "returned", "open"], N, p=[0.9, 0.05, 0.05]).tolist()),
            "text": pa.array([None if m else t for m, t in zip(mask, text)]),
            "day": pa.array(rng.integers(8000, 9000, N).astype(np.int32), pa.date32()),
            "price": pa.array([int(v) for v in rng.integers(0, 10**9, N)], pa.decimal128(15, 2)),
            "rare_null": pa.array(
                np.where(rng.random(N) < 0.002, rng.integers(1, 10**6, N), 0), mask=rng.random(N) < 0.002
            ),  # RLE values and RLE definition levels at 2.2
        }
    )


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def written(request, tmp_path_factory):
    table = _table()
    path = str(tmp_path_factory.mktemp("cold") / f"t{request.param}.lance")
    with LanceFileWriter(path, version=request.param) as w:
        for start in range(0, N, 2000):
            w.write_batch(table.slice(start, 2000))
    return path, table


def test_fresh_process_take_imports_no_numba(written, tmp_path):
    path, table = written
    rows = [3, 1999, 2000, 4321, 5999]
    result = str(tmp_path / "result.arrow")
    code = (
        "import sys, pyarrow as pa, lancelot\n"
        f"t = lancelot.LanceFile({path!r}).take({rows!r})\n"
        f"with pa.OSFile({result!r}, 'wb') as f, pa.ipc.new_file(f, t.schema) as w:\n"
        "    w.write_table(t)\n"
        "print('numba' in sys.modules)\n"
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "empty-cache"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
    assert pa.ipc.open_file(result).read_all().equals(table.take(rows))
    assert not os.path.exists(tmp_path / "empty-cache")  # nothing compiled


def test_fresh_process_full_read_imports_no_numba_nor_pandas(written, tmp_path):
    """The first scan of a fresh process runs the numpy decoders (mini-block headers, bitpacking, variable,
    FSST, RLE) and builds Arrow arrays from numpy buffers (``pa.array`` on numpy imports pandas)."""
    path, table = written
    result = str(tmp_path / "result.arrow")
    code = (
        "import sys, pyarrow as pa, lancelot\n"
        f"t = lancelot.LanceFile({path!r}).read()\n"
        f"with pa.OSFile({result!r}, 'wb') as f, pa.ipc.new_file(f, t.schema) as w:\n"
        "    w.write_table(t)\n"
        "print('numba' in sys.modules, 'pandas' in sys.modules)\n"
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "empty-cache"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False False"
    assert pa.ipc.open_file(result).read_all().equals(table)
    assert not os.path.exists(tmp_path / "empty-cache")


@pytest.fixture
def modes():
    saved = dict(miniblock_points.mode), dict(fsst.mode)
    yield
    miniblock_points.mode.update(saved[0])
    fsst.mode.update(saved[1])


def _set(mode: str) -> None:
    miniblock_points.mode["points"] = mode
    fsst.mode["decode"] = mode


def test_numpy_points_match_the_kernel(written, modes):
    path, table = written
    f = lancelot.LanceFile(path)
    expected_pylance = LanceFileReader(path)
    rng = np.random.default_rng(5)
    for _ in range(12):
        rows = np.sort(rng.choice(N, int(rng.integers(1, 70)), replace=False))
        want = table.take(rows)
        for mode in ("numpy", "kernel"):
            _set(mode)
            assert f.take(rows).equals(want), (mode, rows)
        assert expected_pylance.take_rows(rows.tolist()).to_table().equals(want)


def test_auto_mode_picks_numpy_for_few_rows_until_the_kernel_is_loaded(modes, monkeypatch):
    _set("auto")
    monkeypatch.setattr(miniblock_points.HOT, "ready", lambda: False)
    assert not miniblock_points.use_kernel(10)
    assert miniblock_points.use_kernel(miniblock_points.NUMPY_ROWS + 1)
    monkeypatch.setattr(miniblock_points.HOT, "ready", lambda: True)
    assert miniblock_points.use_kernel(10)


def test_a_hot_numpy_path_prepares_its_kernel_in_the_background(written):
    """In a fresh process, after HOT_CALLS numpy takes the point kernel is prepared on a thread
    with a real call's arguments; then few-row takes switch to it."""
    path, _ = written
    code = (
        "import lancelot\n"
        "from lancelot.util import jit\n"
        "from lancelot.encodings.structural import miniblock_points as mp\n"
        f"f = lancelot.LanceFile({path!r})\n"
        "assert not mp.HOT.ready()\n"
        "for k in range(jit.HOT_CALLS - 1):\n"
        "    f.take([k, 3000 + k], columns=['id'])\n"
        "assert mp.HOT.thread is None and not mp.use_kernel(2)\n"
        "f.take([5, 7], columns=['id'])\n"
        "mp.HOT.thread.join()\n"
        "assert mp.HOT.ready() and mp.use_kernel(2)\n"
        "assert f.take([1, 4000], columns=['id']).column(0).to_pylist() == [1, 4000]\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def _outcome(read):
    try:
        return ("ok", read())
    except LanceError as e:
        return ("error", type(e).__name__, e.message if hasattr(e, "message") else str(e))


def test_numpy_points_match_the_kernel_on_damaged_chunks(written, modes):
    """Byte flips in page buffers: the numpy path returns the kernel's values or raises its error."""
    path, _ = written
    data = bytearray(open(path, "rb").read())
    md = lancelot.LanceFile(path)
    regions = []
    from lancelot.format.container import read_metadata

    meta = read_metadata(MemorySource(bytes(data), "f.lance"))
    for col in meta.columns:
        for p in col.pages:
            regions += [(o, s) for o, s in zip(p.buffer_offsets, p.buffer_sizes) if s]
    del md
    rng = np.random.default_rng(11)
    for trial in range(40):
        damaged = bytearray(data)
        o, s = regions[int(rng.integers(0, len(regions)))]
        for _ in range(int(rng.integers(1, 5))):
            damaged[o + int(rng.integers(0, s))] = int(rng.integers(0, 256))
        rows = np.sort(rng.choice(N, int(rng.integers(1, 40)), replace=False))
        results = []
        for mode in ("numpy", "kernel"):
            _set(mode)
            f = lancelot.LanceFile(MemorySource(bytes(damaged), "f.lance"))
            results.append(_outcome(lambda f=f, rows=rows: f.take(rows)))
        a, b = results
        if a[0] == "ok" and b[0] == "ok":
            assert a[1].equals(b[1]), trial
        else:
            assert a == b, (trial, a, b)


def _random_codes(rng, n_strings: int, n_symbols: int, with_errors: bool):
    parts, starts, ends, pos = [], [], [], 0
    for _ in range(n_strings):
        k = int(rng.integers(0, 12))
        codes = rng.integers(0, n_symbols + (3 if with_errors else 0), k)
        codes[rng.random(k) < 0.3] = 255  # escapes, runs of 0xFF included
        parts.append(codes.astype(np.uint8))
        starts.append(pos)
        pos += k
        ends.append(pos)
    return (
        np.concatenate(parts) if parts else np.zeros(0, np.uint8),
        np.array(starts, dtype=np.int64),
        np.array(ends, dtype=np.int64),
    )


@pytest.mark.parametrize("with_errors", [False, True])
def test_fsst_numpy_matches_the_kernel(with_errors):
    rng = np.random.default_rng(3)
    for trial in range(200):
        n_symbols = int(rng.integers(1, 255))
        symbols = rng.integers(0, 256, (n_symbols, 8)).astype(np.uint8)
        lengths = rng.integers(1, 9, n_symbols).astype(np.uint8)
        codes, starts, ends = _random_codes(rng, int(rng.integers(0, 20)), n_symbols, with_errors)
        size = fsst_kernel.decoded_size(codes, starts, ends, lengths, n_symbols)
        status, out, offs = decode_numpy_blocks(
            codes, starts, ends, symbols[None], lengths[None], np.array([n_symbols]), np.zeros(len(starts), np.int64)
        )
        if size < 0:
            assert status == -1 - size, trial
            continue
        k_out = np.empty(size + 8, np.uint8)
        k_offs = np.zeros(len(starts) + 1, np.int64)
        assert fsst_kernel.decode_from(codes, starts, ends, symbols, lengths, n_symbols, k_out, k_offs, 0, 0)[0] == 0
        assert status == 0
        assert np.array_equal(out, k_out[:size]) and np.array_equal(offs, k_offs), trial
