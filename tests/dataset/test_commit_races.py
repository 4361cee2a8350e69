"""Commits racing one another on one local dataset, lancelot against pylance: a detached commit
and appends, two writers under one ``commit_lock``, ``create_scalar_index`` and an append.

The races are made deterministic where the outcome depends on the order: the other writer
commits from inside the first one's commit lock, that is, after the first planned its commit
against the old version and before it writes the new manifest (its put-if-not-exists then
fails and it retries on top, as a real race would make it).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset import LanceDataset, LanceOperation, write_fragments
from tests.dataset.helpers import LIBS


def _rows(lo: int, n: int = 20) -> pa.Table:
    return pa.table(
        {"id": pa.array(range(lo, lo + n), pa.int64()), "v": pa.array([f"v{i}" for i in range(lo, lo + n)])}
    )


def test_detached_commits_racing_appends(tmp_path):
    """lancelot's detached commits, built on version 1, and pylance's appends in threads at once: the
    lineage holds exactly the appends; each detached version holds version 1 plus its own rows."""
    p = str(tmp_path / "d")
    lance.write_dataset(_rows(0), p)
    frags = [write_fragments(_rows(1000 * (i + 1)), p) for i in range(3)]
    start = threading.Barrier(6)
    detached: dict[int, int] = {}

    def detach(i: int) -> None:
        start.wait()
        v = LanceDataset.commit(p, LanceOperation.Append(frags[i]), read_version=1, detached=True).version
        detached[i] = v

    def append(i: int) -> None:
        start.wait()
        lance.write_dataset(_rows(100 * (i + 1)), p, mode="append")

    threads = [threading.Thread(target=f, args=(i,)) for i in range(3) for f in (detach, append)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert lance.dataset(p).version == lancelot.dataset(p).version == 4
    assert lance.dataset(p).count_rows() == 80
    for i, v in detached.items():
        want = sorted(list(range(20)) + list(range(1000 * (i + 1), 1000 * (i + 1) + 20)))
        for lib in LIBS.values():
            assert sorted(lib.dataset(p).checkout_version(v).to_table()["id"].to_pylist()) == want
    assert len(detached) == 3
    lance.dataset(p).validate()


@pytest.mark.parametrize("first", ["pylance", "lancelot"])
def test_commit_lock_serialises_two_writers(tmp_path, first):
    """Both libraries append in threads under one lock: holds never overlap, each version's
    manifest is written under one hold, and no commit is lost."""
    p = str(tmp_path / "d")
    lance.write_dataset(_rows(0), p)
    gate = threading.Lock()
    held: list[int] = []
    inside = [0]
    overlap = []

    def lock(version: int):
        @contextmanager
        def hold():
            with gate:
                inside[0] += 1
                overlap.append(inside[0])
                held.append(version)
                try:
                    yield
                finally:
                    inside[0] -= 1

        return hold()

    start = threading.Barrier(2)

    def writer(lib, base: int) -> None:
        start.wait()
        for k in range(3):
            lib.write_dataset(_rows(base + 20 * k), p, mode="append", commit_lock=lock)

    order = [LIBS[first], LIBS["lancelot" if first == "pylance" else "pylance"]]
    threads = [threading.Thread(target=writer, args=(lib, 1000 * (i + 1))) for i, lib in enumerate(order)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert max(overlap) == 1
    assert set(held) == set(range(2, 8))  # every version committed under the lock (a lost race asks again)
    for lib in LIBS.values():
        ds = lib.dataset(p)
        assert ds.version == 7
        assert sorted(ds.to_table()["id"].to_pylist()) == sorted(
            list(range(20)) + [b + 20 * k + j for b in (1000, 2000) for k in range(3) for j in range(20)]
        )


@pytest.mark.parametrize("indexer", ["pylance", "lancelot"])
def test_create_scalar_index_racing_an_append(tmp_path, indexer):
    """The index is planned on version 1; the other library's append commits version 2 before the
    index's manifest is written: the index commits on top (version 3) covering only the fragments it
    saw, and filters on it read the appended rows too, in both libraries."""
    p = str(tmp_path / "d")
    lance.write_dataset(_rows(0, 50), p, max_rows_per_file=25)
    other = lancelot if indexer == "pylance" else lance
    fired = []

    def lock(version: int):
        @contextmanager
        def hold():
            if not fired:
                fired.append(version)
                other.write_dataset(_rows(500), p, mode="append")  # the racing append, version 2
            yield

        return hold()

    ds = LIBS[indexer].dataset(p, commit_lock=lock)
    ds.create_scalar_index("id", "BTREE")  # (pylance rebases a CreateIndex over an Append: so must lancelot)
    assert fired == [2]
    for lib in LIBS.values():
        latest = lib.dataset(p)
        assert latest.version == 3
        got = latest.to_table(filter="id = 7 or id = 510")["id"].to_pylist()
        assert sorted(got) == [7, 510]
    desc = lance.dataset(p).describe_indices()
    assert len(desc) == 1
    idx = lance.dataset(p).list_indices()[0]
    assert sorted(idx["fragment_ids"]) == [0, 1]  # the appended fragment is not in the index
    lance.dataset(p).validate()
