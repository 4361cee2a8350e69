"""Cleanups that never break a listed version, and commits that do not step over cleaned-up versions.

A cleanup removes the manifests of old versions before their files, so one interrupted at any step
leaves every listed version readable (by lancelot and pylance 14.0.2) and, at worst, files no
manifest names, which a later cleanup removes.  A commit over a version committed since its read
version that has been cleaned up cannot check it for conflicts: a retryable conflict asks to re-read.
"""

from __future__ import annotations

import errno
import os
import shutil
from datetime import timedelta

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.dataset.commit import RetryableCommitConflictError
from lancelot.dataset.deletion import read_deletions
from lancelot.dataset.store import ObjectStore
from lancelot.errors import LanceFileNotFoundError
from tests.dataset.helpers import copies, int_table


def _a(t: pa.Table) -> list[int]:
    return sorted(t.column("a").to_pylist())


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> str:
    """Appends, deletes, a compaction and an overwrite: every kind of file a cleanup removes."""
    uri = str(tmp_path_factory.mktemp("cleanup") / "ds")
    lancelot.write_dataset(int_table(20), uri, max_rows_per_file=10)
    lance.write_dataset(int_table(10, 20), uri, mode="append")
    lancelot.dataset(uri).delete(pc.field("a") == 3)
    lance.dataset(uri).delete("a = 25")
    lancelot.dataset(uri).compact_files(target_rows_per_fragment=100)
    lancelot.write_dataset(int_table(10, 100), uri, mode="append")
    lancelot.dataset(uri).delete(pc.field("a") == 104)
    lancelot.write_dataset(int_table(5, 200), uri, mode="overwrite")
    lancelot.write_dataset(int_table(5, 300), uri, mode="append")
    return uri


def _check_listed_versions(uri: str) -> None:
    ours = [v["version"] for v in lancelot.dataset(uri).versions()]
    assert ours == [v["version"] for v in lance.dataset(uri).versions()]
    for v in ours:
        mine, theirs = lancelot.dataset(uri, version=v).to_table(), lance.dataset(uri, version=v).to_table()
        assert mine.equals(theirs), f"version {v}"
    lance.dataset(uri).validate()


class _Interrupted(OSError):
    pass


def test_cleanup_interrupted_at_every_step_leaves_every_listed_version_readable(history, tmp_path, monkeypatch):
    real = ObjectStore.delete
    steps: list[str] = []

    def counting(self, path):
        steps.append(path)
        real(self, path)

    full = str(tmp_path / "full")
    shutil.copytree(history, full)
    monkeypatch.setattr(ObjectStore, "delete", counting)
    lancelot.dataset(full).cleanup_old_versions(timedelta(0), delete_unverified=True)
    monkeypatch.undo()
    n = len(steps)
    assert n > 20 and steps[0].startswith("_versions/")  # the manifests go first
    final = lancelot.dataset(full).to_table()
    for k in range(n):
        uri = str(tmp_path / f"cut{k}")
        shutil.copytree(history, uri)
        done = [0]

        def failing(self, path, k=k, done=done):
            if done[0] == k:
                raise _Interrupted(errno.EIO, "injected: cleanup interrupted", path)
            done[0] += 1
            real(self, path)

        monkeypatch.setattr(ObjectStore, "delete", failing)
        with pytest.raises(_Interrupted):
            lancelot.dataset(uri).cleanup_old_versions(timedelta(0), delete_unverified=True)
        monkeypatch.undo()
        _check_listed_versions(uri)
        assert lancelot.dataset(uri).to_table().equals(final)
        lancelot.dataset(uri).cleanup_old_versions(timedelta(0), delete_unverified=True)  # finishes the job
        assert sorted(os.listdir(os.path.join(uri, "data"))) == sorted(os.listdir(os.path.join(full, "data")))
        _check_listed_versions(uri)
        shutil.rmtree(uri)


def test_pylance_reads_what_an_interrupted_cleanup_left(history, tmp_path, monkeypatch):
    """Interrupted right after the manifests: pylance lists, reads and cleans the rest."""
    uri = str(tmp_path / "ds")
    shutil.copytree(history, uri)
    real = ObjectStore.delete

    def failing(self, path):
        if not path.startswith("_versions/"):
            raise _Interrupted(errno.EIO, "injected", path)
        real(self, path)

    monkeypatch.setattr(ObjectStore, "delete", failing)
    with pytest.raises(_Interrupted):
        lancelot.dataset(uri).cleanup_old_versions(timedelta(0))
    monkeypatch.undo()
    assert [v["version"] for v in lance.dataset(uri).versions()] == [lancelot.dataset(uri).version]
    _check_listed_versions(uri)
    lance.dataset(uri).cleanup_old_versions(timedelta(0), delete_unverified=True)
    _check_listed_versions(uri)


def test_commit_whose_read_version_was_cleaned_up_checks_the_versions_after_it(tmp_path):
    """The read version's own manifest is not needed: the versions after it say what changed since."""
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(int_table(20), uri, max_rows_per_file=10)
    stale, stale2 = lancelot.dataset(uri), lancelot.dataset(uri)  # version 1
    lancelot.dataset(uri).delete(pc.field("a") == 1)  # version 2 (fragment 0)
    lancelot.dataset(uri).cleanup_old_versions(timedelta(0))  # version 1 goes
    stale.delete(pc.field("a") == 15)  # fragment 1: rebased over version 2
    stale2.delete(pc.field("a") == 2)  # fragment 0: merged with version 2's deletions
    want = [i for i in range(20) if i not in (1, 2, 15)]
    assert _a(lancelot.dataset(uri).to_table()) == _a(lance.dataset(uri).to_table()) == want
    lance.dataset(uri).validate()


def test_commit_over_a_cleaned_up_version_in_between_is_a_retryable_conflict(tmp_path):
    """pylance 14.0.2 skips the missing version and may bring back rows it deleted; lancelot refuses."""
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(int_table(20), uri, max_rows_per_file=10)
    lancelot.write_dataset(int_table(10, 20), uri, mode="append")  # version 2
    stale = lancelot.dataset(uri)
    lance.dataset(uri).tags.create("keep", 2)  # the read version stays
    lancelot.dataset(uri).delete(pc.field("a") < 10)  # version 3: fragment 0 removed
    lancelot.write_dataset(int_table(1, 50), uri, mode="append")  # version 4
    lancelot.dataset(uri).cleanup_old_versions(timedelta(0), error_if_tagged_old_versions=False)
    assert [v["version"] for v in lancelot.dataset(uri).versions()] == [2, 4]
    with pytest.raises(RetryableCommitConflictError, match="version 3.*cleaned up"):
        stale.delete(pc.field("a") == 5, conflict_retries=0)
    stale.delete(pc.field("a") == 5)  # by default: re-run on the latest version (a = 5 is gone already)
    want = [*range(10, 30), 50]
    assert _a(lancelot.dataset(uri).to_table()) == _a(lance.dataset(uri).to_table()) == want


def test_cleanup_raises_a_stale_version_hint_over_the_gap_it_makes(tmp_path):
    """A version hint left behind (a writer that died before writing it) names a kept version whose
    successor the cleanup removes: the hint is raised to the latest first, so no commit finds the
    gap and creates that version number again (its rows would be lost behind the latest)."""
    uri = str(tmp_path / "ds")
    for i in range(4):
        lancelot.write_dataset(int_table(5, 5 * i), uri, mode="append" if i else "create")
    lance.dataset(uri).tags.create("keep", 2)
    (tmp_path / "ds" / "_versions" / "latest_version_hint.json").write_text('{"version":2}')
    lancelot.dataset(uri).cleanup_old_versions(timedelta(0), error_if_tagged_old_versions=False)
    assert [v["version"] for v in lance.dataset(uri).versions()] == [2, 4]
    assert lancelot.dataset(uri).latest_version == 4
    lancelot.write_dataset(int_table(5, 20), uri, mode="append")
    theirs = lance.dataset(uri)
    assert theirs.version == lancelot.dataset(uri).version == 5
    assert _a(theirs.to_table()) == list(range(25))


def test_missing_deletion_file_is_a_file_not_found_error(tmp_path):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(int_table(20), uri, max_rows_per_file=10)
    ds = lancelot.dataset(uri).delete(pc.field("a") == 3)
    frag = ds.get_fragments()[0]._pb
    store = ObjectStore(uri)
    where = f"dataset {uri!r} version {ds.version} fragment 0"
    assert read_deletions(store, 0, frag.deletion_file, 10, where).tolist() == [3]
    os.remove(os.path.join(uri, "_deletions", os.listdir(os.path.join(uri, "_deletions"))[0]))
    with pytest.raises(LanceFileNotFoundError, match=r"version 2 fragment 0: deletion file _deletions/0-1-") as e:
        read_deletions(store, 0, frag.deletion_file, 10, where)
    assert isinstance(e.value, FileNotFoundError) and e.value.path.startswith(uri)


def test_compaction_over_a_cleaned_up_delete_plans_again(tmp_path):
    """A compaction planned before a delete that a cleanup has since removed cannot see that delete
    in its conflict check: it plans again on the latest version, and the row stays deleted
    (pylance 14.0.2 passes over the missing version and brings the row back)."""
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(int_table(40), uri, max_rows_per_file=10)
    stale = lancelot.dataset(uri)
    lancelot.dataset(uri).delete(pc.field("a") == 5)
    lancelot.write_dataset(int_table(1, 100), uri, mode="append")
    lancelot.dataset(uri).cleanup_old_versions(timedelta(0))
    m = stale.compact_files(target_rows_per_fragment=100)
    assert m.fragments_removed == 5  # the second plan's: the four fragments and the appended one
    want = [i for i in range(40) if i != 5] + [100]
    assert _a(lancelot.dataset(uri).to_table()) == _a(lance.dataset(uri).to_table()) == want
    lance.dataset(uri).validate()


def test_compaction_of_a_version_cleaned_up_with_its_files_plans_again(tmp_path):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(int_table(40), uri, max_rows_per_file=10)
    lancelot.dataset(uri).delete(pc.field("a") == 5)
    stale = lancelot.dataset(uri)  # its fragment 0 has a deletion file ...
    lancelot.dataset(uri).delete(pc.field("a") == 6)  # ... which this version replaces
    stats = lancelot.dataset(uri).cleanup_old_versions(timedelta(0))
    assert stats.deletion_files_removed == 1  # the stale version's deletion file is gone
    m = stale.compact_files(target_rows_per_fragment=100)
    assert m.fragments_removed == 4
    want = [i for i in range(40) if i not in (5, 6)]
    assert _a(lancelot.dataset(uri).to_table()) == _a(lance.dataset(uri).to_table()) == want


def test_cleanup_removes_blob_sidecars_with_their_data_file(tmp_path) -> None:
    """Blob v2 sidecars (data/<file stem>/<id>.blob) go with the data file they belong to, as
    pylance's cleanup removes them; the live version's sidecars stay and read."""
    import datetime as _dt

    import lance

    schema = pa.schema(
        [pa.field("id", pa.int64()), pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})]
    )

    def rows(lo: int) -> pa.Table:
        return pa.table({"id": [lo, lo + 1], "b": [bytes(100_000), b"x" * 5_000_000]}, schema=schema)

    left = []
    for name, lib in (("ours", lancelot), ("theirs", lance)):
        p = str(tmp_path / name)
        lance.write_dataset(rows(0), p, data_storage_version="2.2")
        lance.write_dataset(rows(10), p, mode="overwrite", data_storage_version="2.2")
        stats = lib.dataset(p).cleanup_old_versions(older_than=_dt.timedelta(0), delete_unverified=True)
        files = sorted(
            os.path.relpath(os.path.join(d, f), p).count("/")
            for d, _, fs in os.walk(os.path.join(p, "data"))
            for f in fs
        )
        left.append((files, stats.data_files_removed))  # (pylance leaves the emptied directory)
    assert left[0] == left[1]
    blobs = lancelot.dataset(str(tmp_path / "ours")).take_blobs("b", indices=[1])
    assert blobs[0].read() == b"x" * 5_000_000


def test_cleanup_stats_have_pylance_s_fields_and_values(tmp_path):
    """The same cleanup on twin histories counts alike in both libraries, field for field of pylance's
    ``CleanupStats`` (``failed_deletes`` included)."""
    stats = []
    for lib in (lance, lancelot):
        uri = str(tmp_path / lib.__name__)
        lance.write_dataset(int_table(50), uri, max_rows_per_file=20)
        lance.dataset(uri).delete("a % 7 = 0")
        lance.write_dataset(int_table(10), uri, mode="overwrite")
        stats.append(lib.dataset(uri).cleanup_old_versions(older_than=timedelta(0)))
    # (bytes_removed aside: the removed manifests hold timestamps and ids whose varints vary in length)
    names = [n for n in dir(stats[0]) if not n.startswith("_") and n != "bytes_removed"]
    assert "failed_deletes" in names and stats[1].bytes_removed > 0
    assert {n: getattr(stats[1], n) for n in names} == {n: getattr(stats[0], n) for n in names}


@pytest.fixture(scope="module")
def overwrites(tmp_path_factory) -> str:
    """Six versions (overwrites: each leaves a data file behind) plus a stray file no manifest names."""
    p = str(tmp_path_factory.mktemp("overwrites") / "h")
    for i in range(6):
        lance.write_dataset(pa.table({"id": [i]}), p, mode="overwrite" if i else "create")
    with open(os.path.join(p, "data", "stray.lance"), "wb") as f:
        f.write(b"x")
    return p


@pytest.mark.parametrize(
    "args, kw",
    [
        ((), dict(retain_versions=2)),
        ((timedelta(0), 3), {}),  # retain_versions is positional, as pylance's
        ((timedelta(days=1), 2), {}),  # both conditions must hold: none is older than a day
        ((), dict(versions=[2, 3, 6, 99])),  # only these (never the current; unknown ones ignored)
        ((), dict(versions=[2, 5], retain_versions=3)),
        ((timedelta(0),), dict(delete_rate_limit=1000, delete_concurrency=2, delete_unverified=True)),
        ((), dict(retain_versions=0)),
        ((), dict(retain_versions=-1)),
        ((timedelta(0),), dict(delete_rate_limit=0)),
        ((timedelta(0),), dict(delete_concurrency=0)),
    ],
)
def test_cleanup_options_like_pylance(overwrites: str, tmp_path, args: tuple, kw: dict) -> None:
    theirs, ours = copies(overwrites, tmp_path)
    out = []
    for lib, p in ((lance, theirs), (lancelot, ours)):
        try:
            s = lib.dataset(p).cleanup_old_versions(*args, **kw)
            out.append((s.old_versions, s.data_files_removed, s.transaction_files_removed, s.bytes_removed))
        except (OSError, OverflowError) as e:
            out.append(type(e) if isinstance(e, OverflowError) else OSError)
        out.append([v["version"] for v in lance.dataset(p).versions()])
        out.append(sorted(os.listdir(os.path.join(p, "data"))))
    assert out[:3] == out[3:]


def test_cleanup_of_a_tagged_version_is_oserror(overwrites: str, tmp_path) -> None:
    theirs, ours = copies(overwrites, tmp_path)
    lance.dataset(theirs).tags.create("t", 2)
    lance.dataset(ours).tags.create("t", 2)
    for lib, p in ((lance, theirs), (lancelot, ours)):
        with pytest.raises(OSError):
            lib.dataset(p).cleanup_old_versions(timedelta(0))
        lib.dataset(p).cleanup_old_versions(timedelta(0), error_if_tagged_old_versions=False)
        assert [v["version"] for v in lance.dataset(p).versions()] == [2, 6]


def test_explain_cleanup_like_pylance(overwrites: str) -> None:
    theirs, ours = lance.dataset(overwrites), lancelot.dataset(overwrites)
    for kw in (dict(include_files=True), dict(include_files=True, max_files=2), dict(retain_versions=2)):
        want, got = (
            theirs.explain_cleanup_old_versions(timedelta(0), **kw),
            ours.explain_cleanup_old_versions(timedelta(0), **kw),
        )
        for key in ("bytes_removed", "old_versions", "data_files_removed", "transaction_files_removed"):
            assert getattr(got.stats, key) == getattr(want.stats, key), (kw, key)
        assert (got.read_version, got.candidate_file_limit, got.warnings) == (
            want.read_version,
            want.candidate_file_limit,
            want.warnings,
        )
        assert got.candidate_files_truncated == want.candidate_files_truncated
        files = [{(c.path, c.kind, c.unverified, c.size_bytes) for c in e.candidate_files} for e in (got, want)]
        assert files[0] == files[1] if not kw.get("max_files") else len(files[0]) == len(files[1]) == 2
    assert len(lance.dataset(overwrites).versions()) == 6  # a dry run
    for ds in (theirs, ours):
        with pytest.raises(ValueError):
            ds.explain_cleanup_old_versions(max_files=0)
