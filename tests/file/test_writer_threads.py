"""LanceWriter shared by several threads: every batch is written whole.

The shape of pylance's own test_multithreaded_writer (python/python/tests/test_file.py in the
reference): threads write batches of (thread_id, value, data) rows to one writer; afterwards
every row's columns must still belong together and every batch's rows must be contiguous,
read back by lancelot and by pylance.
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader

import lancelot

THREADS, BATCHES, ROWS = 5, 8, 97


def _batch(thread_id: int, k: int) -> pa.RecordBatch:
    value = thread_id * 1_000_000 + k * 1000 + np.arange(ROWS)
    return pa.record_batch(
        {
            "thread_id": pa.array(np.full(ROWS, thread_id), pa.int64()),
            "value": pa.array(value, pa.int64()),
            "data": pa.array([f"thread_{thread_id}_record_{v}" for v in value.tolist()]),
            "tags": pa.array([[int(v), int(v) + 1] if v % 3 else None for v in value.tolist()], pa.list_(pa.int64())),
        }
    )


def _check(t: pa.Table) -> None:
    assert t.num_rows == THREADS * BATCHES * ROWS
    tid = t.column("thread_id").to_numpy()
    value = t.column("value").to_numpy()
    data = t.column("data").to_pylist()
    tags = t.column("tags").to_pylist()
    # every row's columns come from one batch
    assert (value // 1_000_000 == tid).all()
    assert data == [f"thread_{a}_record_{b}" for a, b in zip(tid.tolist(), value.tolist())]
    assert tags == [[v, v + 1] if v % 3 else None for v in value.tolist()]
    # every batch's rows are contiguous and in order
    for s in range(0, t.num_rows, ROWS):
        v = value[s : s + ROWS]
        assert (np.diff(v) == 1).all() and v[0] % 1000 == 0, f"batch starting at row {s} is not whole"
    assert sorted(set(value[::ROWS].tolist())) == sorted(
        a * 1_000_000 + k * 1000 for a in range(THREADS) for k in range(BATCHES)
    )


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_multithreaded_writer(tmp_path, version):
    path = tmp_path / f"threads_{version}.lance"
    schema = _batch(0, 0).schema
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []
    with lancelot.LanceWriter(path, schema, version=version, max_page_bytes=4096) as w:

        def work(thread_id: int) -> None:
            try:
                start.wait()
                for k in range(BATCHES):
                    w.write(_batch(thread_id, k) if k % 2 else pa.Table.from_batches([_batch(thread_id, k)]))
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert not errors
    _check(lancelot.read_table(path))
    _check(LanceFileReader(str(path)).read_all().to_table())
