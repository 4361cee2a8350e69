"""The first read of a freshly opened small file (what a dataset scan does per fragment): a whole
read of every column fetches the file in one request (ByteSource.stage) and serves the fields from
memory, so over a store it costs one round trip after open; a read of some columns reads only
theirs.  Results equal to pylance's read of the same file; the staged bytes are dropped after.
Counts, not times (benchmarks/latency_fs.py)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

import lancelot
from benchmarks.latency_fs import LatencyFileSystem, register

N = 3_000


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table(
        {
            "id": pa.array(np.arange(N, dtype=np.int64)),
            "key": pa.array(rng.integers(0, 10**6, N)),
            "status": pa.array(rng.choice(["ok", "pending", "failed"], N).tolist()),
            "price": pa.array(rng.normal(size=N)),
            "comment": pa.array([f"comment {i} " + "x" * int(i % 23) for i in range(N)]),
            "maybe": pa.array(rng.integers(0, 100, N), mask=rng.random(N) < 0.2),
        }
    )


@pytest.fixture(scope="module")
def stats():
    old = LatencyFileSystem.latency
    s = register(0.020)
    yield s
    LatencyFileSystem.latency = old


@pytest.fixture(scope="module", params=["2.0", "2.1", "2.2"])
def small_file(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("first_read") / f"t{request.param}.lance"
    with LanceFileWriter(str(path), version=request.param) as w:
        w.write_batch(_table())
    return str(path)


def test_whole_read_is_one_round_trip_after_open(stats, small_file):
    want = LanceFileReader(small_file).read_all().to_table()
    f = lancelot.LanceFile(f"latency://{small_file}")
    stats.reset()
    got = f.read()
    assert got.equals(want)
    assert stats.round_trips == 1, (stats.round_trips, stats.requests)
    assert f._src._staged == ()


def test_local_whole_and_partial_reads_equal_pylance(small_file):
    want = LanceFileReader(small_file).read_all().to_table()
    with lancelot.LanceFile(small_file) as f:
        assert f.read().equals(want)
        assert f._src._staged == ()
        assert f.read(["comment", "id"]).equals(want.select(["comment", "id"]))
        assert f.read_range(0, N, columns=list(reversed(want.column_names))).equals(
            want.select(list(reversed(want.column_names)))
        )
        assert f.read_range(10, 2_000).equals(want.slice(10, 1_990))
