"""One LanceFile shared by several threads: few-row takes (one-call fetch, will_need's early blocks,
per-file selection and dictionary caches), larger takes and range reads stay exact under contention.
Files written by pylance, at every version."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileWriter

import lancelot


def _table(n: int) -> pa.Table:
    rng = np.random.default_rng(5)
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    return pa.table(
        {
            "k": pa.array(np.arange(n, dtype=np.int64)),
            "q": pa.array([None if i % 7 == 0 else int(v) for i, v in enumerate(rng.integers(0, 50, n))], pa.int32()),
            "flag": pa.array([words[int(v)] for v in rng.integers(0, 5, n)]),
            "text": pa.array([f"row {i} " + "x" * int(v) for i, v in enumerate(rng.integers(0, 40, n))]),
            "price": pa.array(rng.normal(size=n)),
        }
    )


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_threads_share_one_file(tmp_path, version):
    n = 30_000
    table = _table(n)
    path = str(tmp_path / f"t{version}.lance")
    with LanceFileWriter(path, table.schema, version=version, max_page_bytes=64 * 1024) as w:
        w.write_batch(table)
    f = lancelot.LanceFile(path)
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        start.wait()
        try:
            for i in range(40):
                k = (3, 10, 64, 300)[i % 4]
                rows = np.sort(rng.choice(n, k, replace=False))
                columns = None if i % 3 else ["text", "q"]
                want = table.take(pa.array(rows))
                want = want if columns is None else want.select(columns)
                assert f.take(rows, columns=columns).equals(want)
                a = int(rng.integers(0, n - 50))
                assert f.read_range(a, a + 20).equals(table.slice(a, 20))
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
