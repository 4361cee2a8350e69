"""page_pool.run_all: every task once, the first failure raised after the running ones finish, nesting safe."""

from __future__ import annotations

import threading
import time

import pytest

from lancelot.encodings.structural import page_pool


def test_runs_every_task_once_on_several_threads(monkeypatch) -> None:
    monkeypatch.setattr(page_pool, "threads", lambda: 3)
    seen: list[int] = []
    names: set[str] = set()
    lock = threading.Lock()

    def task(i: int) -> None:
        time.sleep(0.01)
        with lock:
            seen.append(i)
            names.add(threading.current_thread().name)

    page_pool.run_all([lambda i=i: task(i) for i in range(12)])
    assert sorted(seen) == list(range(12))
    assert len(names) > 1


def test_first_failure_in_task_order_is_raised(monkeypatch) -> None:
    monkeypatch.setattr(page_pool, "threads", lambda: 2)
    finished: list[int] = []

    def ok(i: int) -> None:
        time.sleep(0.02)
        finished.append(i)

    def bad(msg: str, delay: float) -> None:
        time.sleep(delay)
        raise ValueError(msg)

    with pytest.raises(ValueError, match="first"):
        page_pool.run_all([lambda: bad("first", 0.05), lambda: bad("second", 0.0), lambda: ok(2)])


def test_nested_rounds_do_not_deadlock(monkeypatch) -> None:
    monkeypatch.setattr(page_pool, "threads", lambda: 2)
    out: list[int] = []
    lock = threading.Lock()

    def inner(i: int) -> None:
        def leaf(j: int) -> None:
            with lock:
                out.append(i * 10 + j)

        page_pool.run_all([lambda j=j: leaf(j) for j in range(3)])

    t = threading.Thread(target=lambda: page_pool.run_all([lambda i=i: inner(i) for i in range(4)]))
    t.start()
    t.join(30)
    assert not t.is_alive()
    assert sorted(out) == sorted(i * 10 + j for i in range(4) for j in range(3))
