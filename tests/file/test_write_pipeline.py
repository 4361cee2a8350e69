"""Pages encoded on several threads: same bytes as one thread, errors surface, nothing half-written."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader

import lancelot
from lancelot.encodings.structural import write_field
from lancelot.encodings.structural.write_pipeline import PageWorker
from lancelot.errors import LanceError


def _table(n: int = 60_000) -> pa.Table:
    rng = np.random.default_rng(7)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon quickly", "zeta"])
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "key": pa.array(np.repeat(np.arange(n // 4, dtype=np.int64), 4)),
            "small": pa.array(rng.integers(0, 100, n, dtype=np.int32), mask=rng.random(n) < 0.1),
            "cat": pa.array(words[rng.integers(0, 4, n)]),
            "text": pa.array([" ".join(words[rng.integers(0, 6, 5)]) + str(i) for i in range(n)]),
            "lst": pa.array([list(range(i % 5)) if i % 7 else None for i in range(n)], pa.list_(pa.int32())),
        }
    )


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_threads_write_identical_bytes(tmp_path, monkeypatch, version):
    t = _table()
    files = {}
    for threads in (1, 3):
        monkeypatch.setenv("LANCELOT_WRITE_THREADS", str(threads))
        p = tmp_path / f"t{threads}.lance"
        lancelot.write_table(t, p, version=version, max_page_bytes=64 * 1024)  # many pages per column
        files[threads] = p.read_bytes()
    assert files[1] == files[3]
    assert lancelot.LanceFile(tmp_path / "t3.lance").read().equals(t)
    assert LanceFileReader(str(tmp_path / "t3.lance")).read_all().to_table().equals(t)


def test_page_error_leaves_nothing(tmp_path, monkeypatch):
    """A page failing on a worker thread: the error reaches the caller, names the column, no file remains."""
    original = write_field.encode_miniblock

    def failing(values, *args, **kwargs):
        if values.type == pa.int32():  # every page of column 2 ("small")
            raise LanceError("injected failure")
        return original(values, *args, **kwargs)

    monkeypatch.setattr(write_field, "encode_miniblock", failing)
    p = tmp_path / "bad.lance"
    with pytest.raises(LanceError, match="injected failure") as err:
        lancelot.write_table(_table(), p, version="2.2", max_page_bytes=16 * 1024)
    assert (err.value.column, err.value.page) == (2, 0)
    assert os.listdir(tmp_path) == []


def test_commits_in_submission_order():
    """Later pages may finish encoding first; commits still run in submission order."""
    import time

    worker = PageWorker(workers=3, inline_bytes=0)
    order: list[int] = []
    for i in range(12):
        worker.submit(lambda i=i: time.sleep(0.002 * (12 - i)) or i, order.append)
    worker.drain()
    worker.close()
    assert order == list(range(12))


def test_costliest_queued_page_encodes_first():
    """Queued pages start largest cost first (a file's longest page should not start last); commits keep the
    submission order."""
    import threading

    worker = PageWorker(workers=1, inline_bytes=0)
    release = threading.Event()
    started: list[int] = []
    committed: list[int] = []
    worker.submit(lambda: release.wait(timeout=10) and 0, committed.append, nbytes=1)  # holds the one thread
    for i, cost in enumerate([3, 50, 3, 7], start=1):
        worker.submit(lambda i=i: started.append(i) or i, committed.append, nbytes=cost)
    release.set()
    worker.drain()
    worker.close()
    assert started == [2, 4, 1, 3]  # by cost, ties in submission order
    assert committed == [0, 1, 2, 3, 4]


def test_long_page_does_not_stall_other_workers():
    """A page still encoding does not hold the other threads: later pages encode meanwhile (their
    commits wait for it). Page 0 waits for page 5's encode, which needs a free second thread."""
    import threading

    worker = PageWorker(workers=2, inline_bytes=0)
    reached = threading.Event()
    order: list[int] = []
    seen: list[bool] = []
    worker.submit(lambda: seen.append(reached.wait(timeout=10)) or 0, order.append)
    for i in range(1, 7):
        worker.submit(lambda i=i: (reached.set() if i == 5 else None) or i, order.append)
    worker.drain()
    worker.close()
    assert seen == [True]
    assert order == list(range(7))


def test_first_error_in_page_order_and_sticky():
    """Errors surface in page order (a later page failing first does not hide an earlier one), and
    a failed worker keeps failing: no later drain passes."""
    import threading

    worker = PageWorker(workers=2, inline_bytes=0)
    late_failed = threading.Event()
    committed: list[int] = []

    def first():
        late_failed.wait(timeout=10)
        raise ValueError("page 0")

    def second():
        late_failed.set()
        raise KeyError("page 1")

    with pytest.raises(ValueError, match="page 0"):  # raised by the second submit or by drain
        worker.submit(first, committed.append)
        worker.submit(second, committed.append)
        worker.drain()
    with pytest.raises(ValueError, match="page 0"):
        worker.drain()
    worker.close()
    assert committed == []


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_abandoned_writer_leaves_nothing(tmp_path, version):
    """A LanceWriter dropped without close(): no target file, no temporary file, no writer threads left
    (the encode threads are the process's shared pool, kept for the next file: never more of them)."""
    import gc
    import threading

    from lancelot.encodings.structural import write_pipeline

    t = _table(5_000)
    w = lancelot.LanceWriter(tmp_path / "t.lance", t.schema, version=version)
    w.write(t)
    assert os.listdir(tmp_path)  # the temporary file exists while writing
    del w
    gc.collect()
    assert os.listdir(tmp_path) == []
    names = [th.name for th in threading.enumerate()]
    assert not any(n.startswith("lancelot-file") for n in names), names
    shared = sum(p._max_workers for p in write_pipeline._SHARED.values())  # one pool per thread count used
    assert sum(n.startswith("lancelot-pages") for n in names) <= shared, names


def test_caller_keeps_submitting_behind_a_long_page():
    """Encoded pages waiting behind a long first page do not count against ``max_pending`` (only
    twice as many): the caller queues page 4 while page 0 still encodes (it waits for page 4)."""
    import threading

    worker = PageWorker(workers=2, inline_bytes=0, max_pending=2)
    reached = threading.Event()
    order: list[int] = []
    seen: list[bool] = []
    worker.submit(lambda: seen.append(reached.wait(timeout=10)) or 0, order.append)
    for i in range(1, 5):
        worker.submit(lambda i=i: (reached.set() if i == 4 else None) or i, order.append)
    worker.drain()
    worker.close()
    assert seen == [True]
    assert order == list(range(5))


def test_uncommitted_bytes_bounded():
    """Pages waiting behind a long first page hold at most ``max_bytes`` (+ the page just queued): the
    caller queues page 3 only after page 0 committed (pages of 10 bytes, a bound of 25)."""
    import threading

    worker = PageWorker(workers=2, inline_bytes=0, max_bytes=25)
    release = threading.Event()
    order: list[int] = []

    def submit_all() -> None:
        worker.submit(lambda: release.wait(timeout=10) and 0, order.append, 10)
        for i in range(1, 6):
            worker.submit(lambda i=i: i, order.append, 10)

    caller = threading.Thread(target=submit_all)
    caller.start()
    with worker._cond:  # pages 1 and 2 encoded while page 0 waits: the caller stays in page 2's submit
        assert worker._cond.wait_for(lambda: worker._encoded >= 2, timeout=10)
    release.set()
    caller.join()
    worker.drain()
    worker.close()
    assert order == list(range(6))
    assert worker.peak_held == 30


def test_small_page_with_nothing_in_flight_runs_on_the_callers_thread():
    """A page under ``inline_bytes`` with every page before it committed is encoded and committed by the
    caller (a small file starts no thread); one submitted while a page is in flight goes to the pool,
    after it; an inline page's error is raised by its own submit and sticks."""
    import threading

    worker = PageWorker(workers=1, inline_bytes=100)
    me = threading.get_ident()
    where: list[tuple[int, bool]] = []
    worker.submit(lambda: 0, lambda r: where.append((r, threading.get_ident() == me)), nbytes=10)
    release = threading.Event()
    worker.submit(lambda: release.wait(timeout=10) and 1, lambda r: where.append((r, False)), nbytes=1000)
    worker.submit(lambda: 2, lambda r: where.append((r, threading.get_ident() == me)), nbytes=10)
    release.set()
    worker.drain()
    assert where == [(0, True), (1, False), (2, False)]

    def fail():
        raise ValueError("small page")

    with pytest.raises(ValueError, match="small page"):
        worker.submit(fail, where.append, nbytes=10)
    with pytest.raises(ValueError, match="small page"):
        worker.drain()
    worker.close()
    assert len(where) == 3


def test_small_file_is_written_without_a_file_thread(tmp_path, monkeypatch):
    """A file under the sink's ``inline_bytes`` is written by the caller (no "lancelot-file" thread); a larger
    one starts the thread at its first large write. pylance reads both."""
    from lancelot.io import sink

    started: list[int] = []
    original = sink.BackgroundWriter._start
    monkeypatch.setattr(sink.BackgroundWriter, "_start", lambda self: started.append(1) or original(self))
    for rows, threads in ((100, 0), (6_000, 1)):
        t = _table(rows)
        p = tmp_path / f"t{rows}.lance"
        lancelot.write_table(t, p)
        assert len(started) == threads
        assert LanceFileReader(str(p)).read_all().to_table().equals(t)
