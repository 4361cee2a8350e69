"""lancelot/io/sink.py: ordered background writes, bounded queue, errors raised in the caller."""

from __future__ import annotations

import io
import threading

import pytest

from lancelot.io.sink import BackgroundWriter


class SlowFile(io.BytesIO):
    """Writes wait for a gate, and may fail at the n-th write."""

    def __init__(self, fail_at: int | None = None) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.calls = 0
        self.fail_at = fail_at

    def write(self, data) -> int:
        self.gate.wait()
        self.calls += 1
        if self.calls == self.fail_at:
            raise OSError(28, "No space left on device")
        return super().write(data)


def test_writes_in_order_and_flush_waits():
    f = SlowFile()
    w = BackgroundWriter(f, max_bytes=1 << 20, sync_every=1 << 40)
    parts = [bytes([i]) * (1000 + i) for i in range(50)]
    for p in parts:
        w.write(memoryview(p))
    assert f.getvalue() == b""  # nothing written while the file blocks
    f.gate.set()
    w.flush()
    w.close()
    assert f.getvalue() == b"".join(parts)


def test_queue_is_bounded():
    f = SlowFile()
    w = BackgroundWriter(f, max_bytes=4096, sync_every=1 << 40)
    w.write(b"a" * 3000)
    blocked = threading.Thread(target=w.write, args=(b"b" * 3000,))
    blocked.start()
    blocked.join(0.2)
    assert blocked.is_alive()  # 6000 bytes would exceed the bound: the caller waits
    f.gate.set()
    blocked.join(5)
    assert not blocked.is_alive()
    w.flush()
    w.close()
    assert f.getvalue() == b"a" * 3000 + b"b" * 3000


def test_write_error_reaches_the_caller():
    f = SlowFile(fail_at=2)
    f.gate.set()
    w = BackgroundWriter(f, sync_every=1 << 40)
    w.write(b"one")
    w.write(b"two")
    with pytest.raises(OSError, match="No space left"):
        w.flush()
    with pytest.raises(OSError):
        w.write(b"three")
    w.abort()
    assert f.getvalue() == b"one"


def test_periodic_sync_releases_free_memory(tmp_path, monkeypatch):
    """Each periodic sync hands the C heap's free pages back (io/heap.py), once per ``sync_every`` bytes."""
    from lancelot.io import heap, sink

    calls: list[int] = []
    monkeypatch.setattr(sink, "release_free_memory", lambda: calls.append(1) or True)
    with open(tmp_path / "f", "wb") as f:
        w = BackgroundWriter(f, sync_every=4096)
        for _ in range(10):
            w.write(b"x" * 1000)
        w.flush()
        w.close()
    assert len(calls) == 2  # after 4000 + 1000 and 5000 more bytes
    assert heap.release_free_memory() in (True, False)  # callable here, whatever the C library
