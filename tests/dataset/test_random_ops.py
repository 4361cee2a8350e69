"""Random sequences of appends, deletes and overwrites by lancelot and pylance, alternating;
after every step both libraries read every version the same and pylance's validate() passes."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot


def _batch(rng: np.random.Generator, start: int, n: int) -> pa.Table:
    a = np.arange(start, start + n, dtype=np.int64)
    s = pa.array([None if v % 5 == 1 else f"k{v % 17}" for v in a], pa.string())
    return pa.table({"a": a, "s": s, "f": rng.random(n).astype(np.float32)})


@pytest.mark.parametrize("seed", list(range(1, 7)))
def test_random_operations_alternating(tmp_path, seed):
    rng = np.random.default_rng(seed)
    uri = str(tmp_path / "ds")
    version = ["2.0", "2.1", "2.2"][seed % 3]
    nxt = 0
    lancelot.write_dataset(_batch(rng, 0, 40), uri, data_storage_version=version, max_rows_per_file=15)
    nxt = 40
    for _ in range(12):
        lib = rng.choice(["lancelot", "pylance"])
        op = rng.choice(["append", "append", "delete", "delete", "overwrite"], p=[0.3, 0.1, 0.3, 0.2, 0.1])
        n = int(rng.integers(1, 30))
        if op == "append" or op == "overwrite":
            t = _batch(rng, nxt, n)
            nxt += n
            if lib == "lancelot":
                lancelot.write_dataset(t, uri, mode=op, max_rows_per_file=int(rng.integers(5, 40)))
            else:
                lance.write_dataset(t, uri, mode=op, max_rows_per_file=int(rng.integers(5, 40)))
        else:
            lo = int(rng.integers(0, max(1, nxt)))
            hi = lo + int(rng.integers(1, 25))
            if lib == "lancelot":
                lancelot.dataset(uri).delete((pc.field("a") >= lo) & (pc.field("a") < hi))
            else:
                lance.dataset(uri).delete(f"a >= {lo} AND a < {hi}")
        theirs = lance.dataset(uri)
        theirs.validate()
        ours = lancelot.dataset(uri)
        assert ours.version == theirs.version
        expected = theirs.to_table()
        assert ours.to_table().equals(expected)
        assert ours.count_rows(filter=pc.field("s") == "k3") == theirs.count_rows(filter="s = 'k3'")
        if expected.num_rows:
            idx = rng.integers(0, expected.num_rows, 6)
            assert ours.take(idx).equals(theirs.take(idx))
    for v in lance.dataset(uri).versions():
        assert (
            lancelot.dataset(uri, version=v["version"])
            .to_table()
            .equals(lance.dataset(uri, version=v["version"]).to_table())
        )
