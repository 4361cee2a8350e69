"""Remote reads in round trips: through a filesystem that sleeps per request (40 ms here, longer
than any scheduling jitter, so the requests of one round overlap) and counts round trips
(periods with a request in flight; benchmarks/latency_fs.py), opening a file costs at most 3
and a 10-row take over all columns at most 2 after open (2.1/2.2; 2.0's first take also loads
its dictionaries, whose offsets come before their bytes).  Counts, not times."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileWriter

import lancelot
from benchmarks.latency_fs import LatencyFileSystem, register

N = 20_000


def _table() -> pa.Table:
    rng = np.random.default_rng(0)
    words = ["ok", "pending", "failed", "returned"]
    return pa.table(
        {
            "id": pa.array(np.arange(N, dtype=np.int64)),
            "key": pa.array(rng.integers(0, 10**6, N)),
            "status": pa.array(rng.choice(words, N).tolist()),
            "price": pa.array(rng.normal(size=N)),
            "flag": pa.array(rng.random(N) < 0.5),
            "const": pa.array(np.zeros(N, dtype=np.int32)),
            "comment": pa.array([f"comment {i} " + "x" * int(i % 37) for i in range(N)]),
            "maybe": pa.array(rng.integers(0, 100, N), mask=rng.random(N) < 0.2),
        }
    )


@pytest.fixture(scope="module")
def stats():
    old = LatencyFileSystem.latency
    s = register(0.040)  # longer than any scheduling jitter: requests of a round overlap
    yield s
    LatencyFileSystem.latency = old


@pytest.fixture(scope="module", params=["2.0", "2.1", "2.2"])
def remote_file(request, tmp_path_factory):
    table = _table()
    path = tmp_path_factory.mktemp("remote") / f"t{request.param}.lance"
    with LanceFileWriter(str(path), version=request.param) as w:
        for start in range(0, N, 5000):
            w.write_batch(table.slice(start, 5000))
    return request.param, f"latency://{path}", table


def test_open_and_take_round_trips(stats, remote_file):
    version, url, table = remote_file
    stats.reset()
    f = lancelot.LanceFile(url)
    assert stats.round_trips <= 3, stats.round_trips
    rng = np.random.default_rng(1)
    for k in range(3):
        rows = np.sort(rng.choice(N, 10, replace=False))
        stats.reset()
        got = f.take(rows)
        assert got.equals(table.take(rows))
        limit = 4 if (version == "2.0" and k == 0) else 2
        assert stats.round_trips <= limit, (version, k, stats.round_trips, stats.requests)


def test_staged_bytes_are_dropped_after_a_take(stats, remote_file):
    _, url, table = remote_file
    f = lancelot.LanceFile(url)
    f.take([5, 17, 19_999])
    assert f._src._staged == ()
    assert f.take([3]).equals(table.take([3]))


def test_far_ranges_go_out_side_by_side(stats, tmp_path):
    """Ranges further apart than the coalescing gap are separate requests of one round trip."""
    raw = np.random.default_rng(2).integers(0, 256, 9 << 20, dtype=np.uint8).tobytes()
    path = tmp_path / "blob.bin"
    path.write_bytes(raw)
    from lancelot.io.source import open_source

    src = open_source(f"latency://{path}")
    ranges = [(o, 1000) for o in range(0, 9 << 20, 2 << 20)]
    stats.reset()
    got = [bytes(b) for b in src.read_ranges(ranges)]
    assert got == [raw[o : o + n] for o, n in ranges]
    assert stats.requests == len(ranges) and stats.round_trips == 1
