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
            "flag": pa.array(rng.random(N) < 0.5, mask=rng.random(N) < 0.1),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(4 * N), pa.float32()), 4),
            "dec": pa.array(rng.integers(0, 10**6, N)).cast(pa.decimal128(19, 0)).cast(pa.decimal128(15, 2)),
            "none": pa.nulls(N, pa.int32()),
            "note": pa.array([f"n{i}" for i in range(N)], mask=rng.random(N) < 0.3),
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


def test_v2_0_whole_reads_take_the_whole_column_path(tmp_path, monkeypatch):
    """Every column of a small pylance 2.0 file (plain, nullable, boolean, vector, decimal, all-null,
    binary and dictionary strings) is read whole in one round by encodings/v2_0/whole.py; pages
    whose bytes do not add up go to the node decoder."""
    from lancelot.encodings.served import recording
    from lancelot.encodings.v2_0 import whole

    path = str(tmp_path / "w.lance")
    with LanceFileWriter(path, version="2.0") as w:
        w.write_batch(_table())
    want = LanceFileReader(path).read_all().to_table()
    with recording() as rec:
        assert lancelot.LanceFile(path).read().equals(want)
    assert {n: rec.paths(n, "range") for n in want.column_names} == {n: ["whole/v2_0"] for n in want.column_names}
    monkeypatch.setattr(whole, "decode_page", lambda *a: None)
    with recording() as rec:
        assert lancelot.LanceFile(path).read().equals(want)
    assert rec.paths("id", "range") == ["decoder/LeafNode"]
