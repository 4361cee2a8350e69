"""Commits under faults: a manifest create whose reply is lost (the store's own retry then finds the
manifest there), and I/O errors while checking concurrent commits.

One operation must make one version, its rows once: a commit that finds its own transaction in the
version it tried to create has succeeded (pylance 14.0.2 does the same).  The S3 tests put an HTTP
proxy on 127.0.0.1 between s3fs and the local S3 server that forwards the conditional PUT of a
manifest, then closes the connection without the reply; botocore retries and gets 412.
"""

from __future__ import annotations

import errno
import sys

import lance
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.dataset import commit as lancelot_commit
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.store_create import ObjectAlreadyExistsError
from lancelot.errors import LanceError
from tests.dataset.helpers import int_table
from tests.s3 import DropReplyProxy, S3Endpoint, lose_manifest_create

commit_mod = sys.modules["lancelot.dataset.commit"]


def _a(uri: str, opts: dict | None = None, version: int | None = None) -> list[int]:
    return sorted(lancelot.dataset(uri, version=version, storage_options=opts).to_table().column("a").to_pylist())


@pytest.fixture
def lossy(s3_server):  # noqa: F811
    """(endpoint options, options through a proxy that loses the replies of manifest creates)."""
    proxy = DropReplyProxy(s3_server.url, lose_manifest_create, drops=1)
    try:
        yield proxy, S3Endpoint(proxy.url).pylance_options()
    finally:
        proxy.close()


OPS = ["create", "append", "delete", "overwrite", "compact", "update", "merge_insert"]


@pytest.mark.parametrize("op", OPS)
def test_lost_reply_to_a_manifest_create_on_s3_commits_once(op, s3_dataset, lossy):  # noqa: F811
    uri, direct = s3_dataset.uri, s3_dataset.pylance_options()
    proxy, through = lossy
    if op != "create":
        for i in range(4):  # small fragments, for the compaction
            lancelot.write_dataset(int_table(10, 10 * i), uri, mode="append" if i else "create", storage_options=direct)
    before = lancelot.dataset(uri, storage_options=direct).version if op != "create" else 0
    proxy.drops = 2 if op == "compact" else 1  # a compaction commits twice: lose both replies
    if op == "create":
        ds = lancelot.write_dataset(int_table(10), uri, storage_options=through)
        want, versions = list(range(10)), 1
    elif op == "append":
        ds = lancelot.write_dataset(int_table(10, 100), uri, mode="append", storage_options=through)
        want, versions = [*range(40), *range(100, 110)], 1
    elif op == "delete":
        ds = lancelot.dataset(uri, storage_options=through)
        ds.delete(pc.field("a") < 15)
        want, versions = list(range(15, 40)), 1
    elif op == "overwrite":
        ds = lancelot.write_dataset(int_table(5, 200), uri, mode="overwrite", storage_options=through)
        want, versions = list(range(200, 205)), 1
    elif op == "update":  # rows rewritten into a new fragment: still once
        ds = lancelot.dataset(uri, storage_options=through)
        assert ds.update({"a": "a + 1000"}, where="a < 5") == {"num_rows_updated": 5}
        want, versions = sorted([*range(5, 40), *range(1000, 1005)]), 1
    elif op == "merge_insert":  # upsert of 10 rows, 5 of them new: each once
        ds = lancelot.dataset(uri, storage_options=through)
        ds.merge_insert("a").when_matched_update_all().when_not_matched_insert_all().execute(int_table(10, 35))
        want, versions = list(range(45)), 1
    else:
        m = lancelot.dataset(uri, storage_options=through).compact_files(target_rows_per_fragment=100)
        assert (m.fragments_removed, m.fragments_added) == (4, 1)
        ds = lancelot.dataset(uri, storage_options=direct)
        want, versions = list(range(40)), 2  # ReserveFragments, Rewrite
    assert len(proxy.lost) == proxy.drops, proxy.lost  # the replies were really lost ...
    for _, path, status in proxy.lost:
        assert status == 200 and [p for _, p in proxy.seen].count(path) >= 2  # ... after the PUT took effect
    assert ds.version == before + versions
    assert [v["version"] for v in lancelot.dataset(uri, storage_options=direct).versions()] == list(
        range(1, before + versions + 1)
    )
    assert _a(uri, direct) == want
    pl = lance.dataset(uri, storage_options=direct)
    assert pl.version == before + versions
    pl.validate()
    assert sorted(pl.to_table()["a"].to_pylist()) == want


def test_pylance_acknowledges_a_lost_reply_once_too(s3_dataset, lossy):  # noqa: F811
    """The oracle under the same fault: one append, one version."""
    uri, direct = s3_dataset.uri, s3_dataset.pylance_options()
    proxy, through = lossy
    lancelot.write_dataset(int_table(10), uri, storage_options=direct)
    lance.write_dataset(int_table(10, 10), uri, mode="append", storage_options=through)
    assert len(proxy.lost) == 1
    assert lancelot.dataset(uri, storage_options=direct).version == 2
    assert _a(uri, direct) == list(range(20))


@pytest.fixture
def create_answers_exists(monkeypatch):
    """Every manifest create takes effect, then reports "already exists" (what a store's own retry of
    a create whose reply was lost reports), on any store."""
    real = ObjectStore.put_if_not_exists
    calls: list[str] = []

    def put_if_not_exists(self, path, data):
        real(self, path, data)
        calls.append(path)
        raise ObjectAlreadyExistsError("already exists (the retry of a create that took effect)", path=path)

    monkeypatch.setattr(ObjectStore, "put_if_not_exists", put_if_not_exists)
    return calls


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_create_reported_as_existing_after_it_took_effect_commits_once(kind, tmp_path, create_answers_exists):
    uri = str(tmp_path / "ds") if kind == "local" else f"memory://lost-replies-{kind}-{id(tmp_path)}/ds"
    assert lancelot.write_dataset(int_table(10), uri).version == 1
    assert lancelot.write_dataset(int_table(10, 10), uri, mode="append").version == 2
    ds = lancelot.dataset(uri)
    ds.delete(pc.field("a") == 3)
    assert ds.version == 3
    assert lancelot.write_dataset(int_table(3, 50), uri, mode="overwrite").version == 4
    assert len(create_answers_exists) == 4
    assert [v["version"] for v in lancelot.dataset(uri).versions()] == [1, 2, 3, 4]
    assert _a(uri, version=3) == [i for i in range(20) if i != 3]
    assert _a(uri) == [50, 51, 52]
    if kind == "local":
        assert lance.dataset(uri).version == 4


# -- I/O errors while checking the commits in between -----------------------------------------------------


@pytest.fixture
def failing_transaction_reads(monkeypatch):
    """``fail[0]`` reads of a ``_transactions/`` file fail with EIO (then they work); the count of
    failures is ``fail[1]``."""
    monkeypatch.setattr(commit_mod, "READ_RETRY_DELAYS", (0.0, 0.0, 0.0))
    real = ObjectStore.read
    state = [0, 0]

    def read(self, path):
        if path.startswith("_transactions/") and state[1] < state[0]:
            state[1] += 1
            raise OSError(errno.EIO, "injected I/O error", self.url(path))
        return real(self, path)

    monkeypatch.setattr(ObjectStore, "read", read)
    return state


def _two_appends_from_version_1(uri: str):
    lancelot.write_dataset(int_table(10), uri)
    frags = lancelot.write_fragments(int_table(5, 100), uri)
    lancelot.write_dataset(int_table(5, 200), uri, mode="append")  # version 2, committed in between
    return frags


def test_transient_io_error_while_checking_a_transaction_is_retried(tmp_path, failing_transaction_reads):
    uri = str(tmp_path / "ds")
    frags = _two_appends_from_version_1(uri)
    failing_transaction_reads[0] = 2
    ds = lancelot_commit(uri, "append", fragments=frags, schema=int_table(0).schema, read_version=1)
    assert failing_transaction_reads[1] == 2
    assert ds.version == 3
    assert _a(uri) == [*range(10), *range(100, 105), *range(200, 205)]


def test_lasting_io_error_while_checking_is_an_io_error_not_a_conflict(tmp_path, failing_transaction_reads):
    from lancelot.dataset.commit import CommitConflictError, CommitIOError

    uri = str(tmp_path / "ds")
    frags = _two_appends_from_version_1(uri)
    failing_transaction_reads[0] = 1000
    with pytest.raises(CommitIOError, match="injected I/O error") as e:
        lancelot_commit(uri, "append", fragments=frags, schema=int_table(0).schema, read_version=1)
    assert isinstance(e.value, OSError) and isinstance(e.value, LanceError)
    assert not isinstance(e.value, CommitConflictError)
    assert "version 2" in str(e.value) and "_transactions/" in str(e.value)
    assert failing_transaction_reads[1] == 4  # tried, then retried three times
    assert lancelot.dataset(uri).version == 2  # nothing committed; trying again works
    failing_transaction_reads[0] = 0
    assert lancelot_commit(uri, "append", fragments=frags, schema=int_table(0).schema, read_version=1).version == 3


def test_missing_transaction_file_stays_a_conflict(tmp_path):
    """As pylance: a version in between whose transaction file is gone cannot be checked: a conflict."""
    import os

    from lancelot.dataset.commit import CommitConflictError

    uri = str(tmp_path / "ds")
    frags = _two_appends_from_version_1(uri)
    txn = lancelot.dataset(uri).manifest.transaction_file
    os.remove(os.path.join(uri, "_transactions", txn))
    with pytest.raises(CommitConflictError, match="no transaction file"):
        lancelot_commit(uri, "append", fragments=frags, schema=int_table(0).schema, read_version=1)
