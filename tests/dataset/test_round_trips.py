"""A dataset of many small fragments over an object store: opening it, counting its
rows and a take cost a bounded number of round trips, not one or more per fragment.  Through the
latency filesystem of tests/file/test_remote_reads.py (benchmarks/latency_fs.py), with listings
counted too; a round trip is a period with a request in flight.  Counts, not times."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest
from fsspec.implementations.local import LocalFileSystem

import lancelot
from benchmarks.latency_fs import LatencyFileSystem

FRAGMENTS = 2000
ROWS = 20
VERSIONS = 24


class ListingLatencyFileSystem(LatencyFileSystem):
    """The latency filesystem with directory listings as requests too (a LIST is a round trip)."""

    protocol = "latencyls"

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, str) and path.startswith("latencyls://"):
            path = path[len("latencyls://") :]
        return LatencyFileSystem._strip_protocol(path)

    def ls(self, path, detail=True, **kwargs):
        # one LIST request answers names and sizes (the local listing's own stat calls are not requests)
        return self._request(_PLAIN.ls, self._strip_protocol(path), detail=detail, **kwargs)


_PLAIN = LocalFileSystem()


@pytest.fixture(scope="module")
def stats():
    import fsspec

    old = LatencyFileSystem.latency
    LatencyFileSystem.latency = 0.020  # longer than scheduling jitter: requests issued together overlap
    fsspec.register_implementation("latencyls", ListingLatencyFileSystem, clobber=True)
    s = ListingLatencyFileSystem.stats
    yield s
    LatencyFileSystem.latency = old


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> str:
    """2,000 fragments of 20 rows written by pylance, then a delete (a deletion file in each)."""
    path = str(tmp_path_factory.mktemp("rt") / "ds")
    ids = np.arange(FRAGMENTS * ROWS, dtype=np.int64)
    lance.write_dataset(pa.table({"id": ids, "s": pa.array([f"r{i}" for i in ids])}), path, max_rows_per_file=ROWS)
    lance.dataset(path).delete("id % 7 = 3")
    return path


def test_open_and_count_in_bounded_round_trips(stats, many):
    stats.reset()
    ds = lancelot.dataset(f"latencyls://{many}")
    assert stats.round_trips <= 3, stats.round_trips  # list _versions/, read the manifest
    assert len(ds.get_fragments()) == FRAGMENTS
    stats.reset()
    assert ds.count_rows() == lance.dataset(many).count_rows()
    assert stats.requests == 0  # from the manifest: no data or deletion file


def test_take_touches_its_fragments_side_by_side(stats, many):
    ds = lancelot.dataset(f"latencyls://{many}")
    live = ds.count_rows()
    rows = np.sort(np.random.default_rng(3).choice(live, 10, replace=False))
    stats.reset()
    got = ds.take(rows)
    # each touched fragment: its deletion file, the data file's footer and metadata, its pages;
    # one after another that is 30+ round trips; fetched side by side, at most 2
    assert stats.requests >= 30
    assert stats.round_trips <= 2, (stats.round_trips, stats.requests)
    assert got.equals(lance.dataset(many).take(rows))
    stats.reset()
    ids = ds.take(rows, columns=["id"]).column("id").to_numpy()
    addr = lance.dataset(many).to_table(columns=["id"], with_row_address=True)
    where = addr.column("_rowaddr").to_numpy()[np.searchsorted(addr.column("id").to_numpy(), ids)]
    stats.reset()
    by_address = ds._take_rows(where)
    assert stats.round_trips <= 2, (stats.round_trips, stats.requests)  # files already open
    assert by_address.equals(got)


def test_checkout_of_an_old_version_in_bounded_round_trips(stats, many):
    stats.reset()
    ds = lancelot.dataset(f"latencyls://{many}", version=1)
    assert stats.round_trips <= 3, stats.round_trips
    assert ds.count_rows() == FRAGMENTS * ROWS


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> str:
    """24 versions written by pylance (one overwrite each)."""
    path = str(tmp_path_factory.mktemp("rt") / "history")
    for k in range(VERSIONS):
        lance.write_dataset(pa.table({"a": [k]}), path, mode="overwrite" if k else "create")
    return path


def test_versions_reads_manifests_side_by_side(stats, history):
    """``versions()`` reads every manifest (as pylance does): side by side, in a few rounds."""
    stats.reset()
    got = lancelot.dataset(f"latencyls://{history}").versions()
    assert stats.requests > VERSIONS
    assert stats.round_trips <= 8, (stats.round_trips, stats.requests)
    assert got == lance.dataset(history).versions()


def test_cleanup_reads_manifests_side_by_side(stats, history, tmp_path):
    """``cleanup_old_versions`` reads every manifest too, side by side, and removes what pylance's removes."""
    import shutil

    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(history, ours)
    shutil.copytree(history, theirs)
    ds = lancelot.dataset(f"latencyls://{ours}")
    stats.reset()
    got = ds.cleanup_old_versions(retain_versions=5)
    reads, round_trips = stats.requests, stats.round_trips
    want = lance.dataset(theirs).cleanup_old_versions(retain_versions=5)
    assert (got.old_versions, got.data_files_removed, got.bytes_removed) == (
        want.old_versions,
        want.data_files_removed,
        want.bytes_removed,
    )
    assert got.old_versions == VERSIONS - 5 and reads > VERSIONS
    # the manifests read side by side, the removed ones' sizes from one listing: a request per
    # manifest, one after another, would be 43 round trips
    assert round_trips <= 18, (round_trips, reads)
    assert lancelot.dataset(ours).to_table().equals(lance.dataset(theirs).to_table())


SCAN_FRAGMENTS = 128


@pytest.fixture(scope="module")
def scanned(tmp_path_factory) -> str:
    """128 fragments of 20 rows written by pylance, then a delete (a deletion file in each)."""
    path = str(tmp_path_factory.mktemp("rt") / "scan")
    ids = np.arange(SCAN_FRAGMENTS * ROWS, dtype=np.int64)
    lance.write_dataset(pa.table({"id": ids, "s": pa.array([f"r{i}" for i in ids])}), path, max_rows_per_file=ROWS)
    lance.dataset(path).delete("id % 7 = 3")
    return path


@pytest.mark.parametrize(
    ("filter", "how"),
    [(None, "whole"), ("id >= 100 AND s != 'r7'", "whole"), ("id >= 100 AND s != 'r7'", "own path"), (None, "alone")],
)
def test_scan_keeps_requests_in_flight_side_by_side(stats, scanned, filter, how, monkeypatch):
    """A scan reads a task's fragments side by side: each data file whole with the deletion files
    (the manifest gives the data files' sizes); when the files are not read whole, each fragment
    by its own path, side by side; fragments read alone (large ones), several tasks at once."""
    import importlib

    if how == "own path":
        monkeypatch.setattr(importlib.import_module("lancelot.dataset.group_files"), "MAX_FILE_BYTES", 0)
    if how == "alone":
        monkeypatch.setattr(importlib.import_module("lancelot.dataset.fragment_readahead"), "TASK_FRAGMENTS", 1)
    ds = lancelot.dataset(f"latencyls://{scanned}")
    want = lance.dataset(scanned).to_table(filter=filter)
    stats.reset()
    got = ds.to_table(filter=filter)
    requests, round_trips = stats.requests, stats.round_trips
    assert got.equals(want)
    # whole: a deletion file and a data file per fragment; else also the data file's size
    assert requests <= (2 if how == "whole" else 3) * SCAN_FRAGMENTS, requests
    # one request after another this was 3 * F round trips; side by side a scan task (32 fragments)
    # is one round trip (its requests, 32 in flight, overlap), so the bound is ceil(F/32); read by
    # each fragment's own path (16 at a time), ceil(F/16); alone (8 tasks at once), ceil(F/16) * 3
    bound = {"whole": -(-SCAN_FRAGMENTS // 32), "own path": -(-SCAN_FRAGMENTS // 16)}.get(
        how, -(-SCAN_FRAGMENTS // 16) * 3
    )
    assert round_trips <= bound, (round_trips, requests)
    if how != "whole":
        return  # (batches read the fragments by the same paths)
    stats.reset()
    assert ds.scanner(filter=filter).to_reader().read_all().equals(want)
    assert stats.requests <= requests, stats.requests  # (no file opened for an empty batch)
    assert stats.round_trips <= bound, (stats.round_trips, stats.requests)  # (next run read meanwhile: 1 or 2)
    if filter is not None:
        stats.reset()
        assert lancelot.dataset(f"latencyls://{scanned}").count_rows(filter) == want.num_rows
        assert stats.round_trips <= bound + 2, (stats.round_trips, stats.requests)  # (+ open)


@pytest.mark.parametrize("scan", [{"limit": 300}, {"offset": 100, "limit": 200}, {"filter": "id % 5 = 0", "limit": 60}])
def test_limit_reads_fragments_side_by_side(stats, scanned, scan):
    """A scan with a limit (``head`` too) reads a few fragments side by side (READ_AHEAD), and issues
    no read past the limit without a filter (the manifest's row counts plan it), a bounded few with one."""
    from lancelot.dataset.fragment_readahead import READ_AHEAD

    ds, ref = lancelot.dataset(f"latencyls://{scanned}"), lance.dataset(scanned)
    live = -(-ROWS * 6 // 7)  # rows per fragment after the delete (at most)
    stats.reset()
    assert ds.to_table(**scan).equals(ref.to_table(**scan))
    # one after another: 3 requests (deletion file, data file's size, its pages) per fragment
    needed = -(-(scan.get("offset", 0) + scan["limit"] * (5 if "filter" in scan else 1)) // (live - 1))
    assert stats.requests <= 3 * (needed + (READ_AHEAD if "filter" in scan else 0)), (stats.requests, needed)
    assert stats.round_trips <= 6, (stats.round_trips, stats.requests)
    if "filter" not in scan and "offset" not in scan:
        stats.reset()
        assert ds.head(scan["limit"]).equals(ref.head(scan["limit"]))
        assert stats.round_trips <= 6, (stats.round_trips, stats.requests)
