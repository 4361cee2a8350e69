"""Remote reads in round trips: through a filesystem that sleeps per request (40 ms here, longer
than any scheduling jitter, so the requests of one round overlap) and counts round trips
(periods with a request in flight; benchmarks/latency_fs.py), opening a file costs at most 3
and a 10-row take over all columns at most 2 after open (a 2.0 file's first take fetches its
dictionaries in its first round).  Counts, not times."""

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
        assert stats.round_trips <= 2, (version, k, stats.round_trips, stats.requests)


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


def test_first_take_of_a_2_0_file_fetches_its_dictionaries_in_its_first_round(stats, tmp_path):
    """Two dictionary-encoded string columns of several pages each: the first take's first round
    fetches every page's dictionary beside the rows' indices, not page after page."""
    rng = np.random.default_rng(3)
    words = np.array(["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"])
    table = pa.table({"a": words[rng.integers(0, 5, N)], "b": words[rng.integers(0, 3, N)], "k": np.arange(N)})
    path = tmp_path / "dict20.lance"
    with LanceFileWriter(str(path), version="2.0", max_page_bytes=8 * 1024, data_cache_bytes=8 * 1024) as w:
        for start in range(0, N, 2000):
            w.write_batch(table.slice(start, 2000))
    f = lancelot.LanceFile(f"latency://{path}")
    for name in ("a", "b"):
        col = f._reader(f.schema.field(name)).root.col
        kinds = [col.encoding(i).WhichOneof("array_encoding") for i in range(len(col.info.meta.pages))]
        assert kinds.count("dictionary") >= 3, (name, kinds)
    rows = np.sort(rng.choice(N, 10, replace=False))
    stats.reset()
    assert f.take(rows).equals(table.take(rows))
    assert stats.round_trips <= 2, (stats.round_trips, stats.requests)
