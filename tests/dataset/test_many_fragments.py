"""A dataset of 3,000 small fragments written by pylance reads as pylance reads it: the
per-fragment paths (deletion files, the scan's fragment pool, takes across fragments, filters,
counts from the manifest) at a scale where per-fragment shortcuts show."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot

FRAGMENTS = 3000
ROWS_PER_FILE = 10


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> str:
    uri = str(tmp_path_factory.mktemp("many") / "ds.lance")
    ids = np.arange(FRAGMENTS * ROWS_PER_FILE, dtype=np.int64)
    t = pa.table({"id": ids, "x": (ids * 7 % 101).astype(np.float64), "s": pa.array([f"r{i}" for i in ids])})
    lance.write_dataset(t, uri, max_rows_per_file=ROWS_PER_FILE)
    ds = lance.dataset(uri)
    ds.delete("id % 37 = 3")  # a deletion file in most fragments
    return uri


def test_counts_and_takes_match_pylance(many: str) -> None:
    ref, ds = lance.dataset(many), lancelot.dataset(many)
    assert len(ds.get_fragments()) == len(ref.get_fragments()) == FRAGMENTS
    assert ds.count_rows() == ref.count_rows()
    assert [f.count_rows() for f in ds.get_fragments()[:50]] == [f.count_rows() for f in ref.get_fragments()[:50]]
    picks = np.sort(np.random.default_rng(3).choice(ref.count_rows(), 25, replace=False))
    assert ds.take(picks).equals(ref.take(picks))
    assert ds.take(picks, columns=["s", "id"]).equals(ref.take(picks, columns=["s", "id"]))


def test_scan_matches_pylance(many: str) -> None:
    ds, ref = lancelot.dataset(many), lance.dataset(many)
    got = ds.to_table()
    assert got.equals(ref.to_table())
    ids = got.column("id").to_numpy()
    assert len(ids) == FRAGMENTS * ROWS_PER_FILE - int(np.sum(np.arange(FRAGMENTS * ROWS_PER_FILE) % 37 == 3))
    assert not np.any(ids % 37 == 3)
    # a scan lets go of each fragment's open files: the same dataset object still reads a fragment
    assert ds.get_fragments()[1234].to_table().equals(ref.get_fragments()[1234].to_table())


def test_filter_matches_pylance(many: str) -> None:
    ds, ref = lancelot.dataset(many), lance.dataset(many)
    assert ds.to_table(filter="x = 7.0").equals(ref.to_table(filter="x = 7.0"))
