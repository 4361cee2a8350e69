"""Compaction and cleanup against pylance 14.0.2's ``optimize.compact_files`` and
``cleanup_old_versions``: same plans, same files removed, every version still read equal."""

from __future__ import annotations

import os
import shutil
import time
from datetime import timedelta

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.dataset.commit import CommitConflictError
from lancelot.dataset.compact import CompactionMetrics
from lancelot.errors import LanceError
from tests.dataset.helpers import counts, files_of

VERSIONS = ["2.0", "2.1", "2.2"]
#: appended fragment sizes: small ones, one large one (200 >= the target of 100) in the middle
SIZES = [30, 40, 200, 20, 25, 35, 10]
TARGET = 100


def _table(n: int, start: int = 0) -> pa.Table:
    a = np.arange(start, start + n, dtype=np.int64)
    s = pa.array([None if i % 11 == 3 else f"s{i * 7 % 13}" for i in a], pa.string())
    st = pa.StructArray.from_arrays([pa.array(a.astype(np.int32)), pa.array(a * 0.5)], ["x", "y"])
    lst = pa.array([[int(i)] * (int(i) % 4) if i % 9 else None for i in a], pa.list_(pa.int32()))
    return pa.table({"a": a, "s": s, "st": st, "l": lst})


def _build(uri: str, writer: str, version: str) -> None:
    """Many small appends, then deletions: a few rows everywhere, most of the large fragment."""
    start = 0
    for i, n in enumerate(SIZES):
        t = _table(n, start)
        if writer == "lancelot":
            lancelot.write_dataset(t, uri, mode="append" if i else "create", data_storage_version=version)
        else:
            lance.write_dataset(t, uri, mode="append" if i else "create", data_storage_version=version)
        start += n
    if writer == "lancelot":
        ds = lancelot.dataset(uri)
        ds.delete(pc.equal(pc.bit_wise_and(pc.field("a"), 15), 5))
        ds.delete((pc.field("a") >= 80) & (pc.field("a") < 150))
    else:
        ds = lance.dataset(uri)
        ds.delete("a % 16 = 5")
        ds.delete("a >= 80 AND a < 150")


def _assert_same(uri: str, version: int) -> None:
    ours, theirs = lancelot.dataset(uri, version=version), lance.dataset(uri, version=version)
    expected = theirs.to_table()
    assert ours.count_rows() == theirs.count_rows() == expected.num_rows
    assert ours.to_table().equals(expected), f"version {version}"
    if expected.num_rows:
        idx = np.array([expected.num_rows - 1, 0, 3, 3, expected.num_rows // 2])
        assert ours.take(idx).equals(theirs.take(idx))


def _shape(uri: str) -> list[tuple[int, int, int]]:
    return [(f.fragment_id, f.physical_rows, f.count_rows()) for f in lance.dataset(uri).get_fragments()]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("writer", ["lancelot", "pylance"])
def test_compaction_matches_pylance(tmp_path, writer, version):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _build(ours, writer, version)
    shutil.copytree(ours, theirs)
    before = lance.dataset(ours).to_table()
    old_versions = lance.dataset(ours).version

    m = lancelot.dataset(ours).compact_files(target_rows_per_fragment=TARGET)
    pm = lance.dataset(theirs).optimize.compact_files(target_rows_per_fragment=TARGET)
    assert isinstance(m, CompactionMetrics)
    assert counts(m) == counts(pm)
    assert m.fragments_removed > 0
    # same plan: same fragment ids, row counts, versions (ReserveFragments + Rewrite)
    assert _shape(ours) == _shape(theirs)
    assert lance.dataset(ours).version == lance.dataset(theirs).version == old_versions + 2
    ds = lance.dataset(ours)
    ds.validate()
    assert ds.data_storage_version == version
    assert ds.to_table().equals(before)
    assert not any(f.deletion_file() for f in ds.get_fragments() if f.fragment_id > 6)
    txn = ds.read_transaction(ds.version) if hasattr(ds, "read_transaction") else None
    if txn is not None:
        assert type(txn.operation).__name__ == "Rewrite"
    for v in range(1, ds.version + 1):
        _assert_same(ours, v)
    # lancelot reads pylance's compaction
    assert lancelot.dataset(theirs).to_table().equals(before)
    assert [(f.fragment_id, f.physical_rows) for f in lancelot.dataset(theirs).get_fragments()] == [
        (a, b) for a, b, _ in _shape(theirs)
    ]
    # a second compaction has nothing to do (as pylance's)
    assert lancelot.dataset(ours).compact_files(target_rows_per_fragment=TARGET) == CompactionMetrics()
    # pylance continues: append, delete, then lancelot reads it
    lance.write_dataset(_table(5, 1000), ours, mode="append")
    lance.dataset(ours).delete("a = 1")
    lance.dataset(ours).validate()
    _assert_same(ours, lance.dataset(ours).version)


def test_compaction_options_match_pylance(tmp_path):
    """materialize_deletions off, a threshold, the default target: the plans stay pylance's."""
    base = str(tmp_path / "base")
    _build(base, "lancelot", "2.1")
    for i, kw in enumerate(
        [
            {"target_rows_per_fragment": TARGET, "materialize_deletions": False},
            {"target_rows_per_fragment": 30, "materialize_deletions_threshold": 0.5},
            {"target_rows_per_fragment": 60},
            {},
        ]
    ):
        ours, theirs = str(tmp_path / f"o{i}"), str(tmp_path / f"t{i}")
        shutil.copytree(base, ours)
        shutil.copytree(base, theirs)
        m = lancelot.dataset(ours).optimize.compact_files(**kw)
        pm = lance.dataset(theirs).optimize.compact_files(**kw)
        assert (m.fragments_removed, m.fragments_added) == (pm.fragments_removed, pm.fragments_added), kw
        assert _shape(ours) == _shape(theirs), kw
        lance.dataset(ours).validate()


def test_compaction_concurrent_with_append(tmp_path):
    uri = str(tmp_path / "ds")
    _build(uri, "lancelot", "2.2")
    stale = lancelot.dataset(uri)  # compaction plans on this version ...
    lance.write_dataset(_table(7, 5000), uri, mode="append")  # ... while pylance appends
    lancelot.write_dataset(_table(3, 6000), uri, mode="append")  # ... and lancelot too
    expected = lance.dataset(uri).to_table()
    m = stale.compact_files(target_rows_per_fragment=TARGET)
    assert m.fragments_removed > 0
    ds = lance.dataset(uri)
    ds.validate()
    got = ds.to_table()
    assert got.num_rows == expected.num_rows
    assert got.sort_by("a").equals(expected.sort_by("a"))
    ids = [f.fragment_id for f in ds.get_fragments()]
    assert len(ids) == len(set(ids))
    _assert_same(uri, ds.version)


def test_pylance_compaction_rebases_over_lancelot_append(tmp_path):
    """The other direction: pylance compacts a version older than lancelot's append."""
    uri = str(tmp_path / "ds")
    _build(uri, "lancelot", "2.0")
    stale = lance.dataset(uri)
    lancelot.write_dataset(_table(4, 7000), uri, mode="append")
    expected = lancelot.dataset(uri).to_table()
    assert stale.optimize.compact_files(target_rows_per_fragment=TARGET).fragments_removed > 0
    lance.dataset(uri).validate()
    ours = lancelot.dataset(uri)
    assert ours.to_table().sort_by("a").equals(expected.sort_by("a"))
    lancelot.write_dataset(_table(2, 8000), uri, mode="append")  # and lancelot appends on top
    _assert_same(uri, lance.dataset(uri).version)


def test_compaction_carries_a_delete_of_a_fragment_it_rewrites(tmp_path):
    """pylance's compaction fails here (a retryable conflict); lancelot's marks the row deleted in the
    rewritten fragment and commits."""
    uri = str(tmp_path / "ds")
    _build(uri, "lancelot", "2.1")
    stale = lancelot.dataset(uri)
    lance.dataset(uri).delete("a = 2")  # fragment 0, which the compaction rewrites
    expected = lance.dataset(uri).to_table()
    latest = lance.dataset(uri).version
    m = stale.compact_files(target_rows_per_fragment=TARGET)
    assert m.fragments_removed > 0
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.to_table().sort_by("a").equals(expected.sort_by("a"))
    assert 2 not in ds.to_table()["a"].to_pylist()
    assert ds.version == latest + 2  # ReserveFragments, Rewrite: no second plan
    assert sum(f.metadata.deletion_file is not None for f in ds.get_fragments()) == 1
    _assert_same(uri, ds.version)


def test_compaction_missing_file_is_clear_error(tmp_path):
    uri = str(tmp_path / "ds")
    _build(uri, "lancelot", "2.2")
    victim = lancelot.dataset(uri).get_fragments()[1]._pb.files[0].path
    os.remove(os.path.join(uri, "data", victim))
    before = lance.dataset(uri).version
    with pytest.raises(LanceError, match=f"compaction.*{victim}"):
        lancelot.dataset(uri).compact_files(target_rows_per_fragment=TARGET)
    assert lancelot.dataset(uri).version == before  # nothing committed


@pytest.mark.parametrize("writer", ["lancelot", "pylance"])
def test_compaction_keeps_stable_row_ids(tmp_path, writer):
    """Row ids and their created/updated versions survive compaction exactly as in pylance's,
    including a row pylance's update moved (ids out of order in the new fragment)."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    for i, n in enumerate(SIZES):
        t, mode = _table(n, sum(SIZES[:i])), "append" if i else "create"
        if writer == "lancelot":
            lancelot.write_dataset(t, ours, mode=mode, enable_stable_row_ids=not i)
        else:
            lance.write_dataset(t, ours, mode=mode, enable_stable_row_ids=not i)
    lance.dataset(ours).delete("a % 16 = 5 OR (a >= 80 AND a < 150)")
    lance.dataset(ours).update({"s": "'moved'"}, where="a = 12")
    shutil.copytree(ours, theirs)
    lancelot.dataset(ours).compact_files(target_rows_per_fragment=TARGET)
    lance.dataset(theirs).optimize.compact_files(target_rows_per_fragment=TARGET)
    assert _shape(ours) == _shape(theirs)
    cols = ["a", "s", "_rowid", "_row_created_at_version", "_row_last_updated_at_version"]
    got, want = lance.dataset(ours), lance.dataset(theirs)
    got.validate()
    assert got.to_table(columns=cols).equals(want.to_table(columns=cols))
    ids = want.to_table(columns=["_rowid"])["_rowid"].to_pylist()[::7]
    assert got._take_rows(ids).equals(want._take_rows(ids))
    lance.write_dataset(_table(3, 9000), ours, mode="append")  # new ids continue after the old ones
    assert lance.dataset(ours).to_table(columns=["_rowid"])["_rowid"].to_pylist()[-3:] == [
        sum(SIZES),
        sum(SIZES) + 1,
        sum(SIZES) + 2,
    ]
    for v in range(1, lance.dataset(ours).version + 1):
        _assert_same(ours, v)


def _history(uri: str) -> None:
    """Versions with overwritten, compacted and deleted data, plus an in-flight leftover."""
    _build(uri, "lancelot", "2.1")
    lancelot.dataset(uri).compact_files(target_rows_per_fragment=TARGET)
    lancelot.dataset(uri).delete(pc.field("a") == 7)
    lancelot.write_dataset(_table(20, 9000), uri, mode="append")


@pytest.mark.parametrize("policy", ["all_old", "retain_3"])
@pytest.mark.parametrize("unverified", [False, True])
def test_cleanup_matches_pylance(tmp_path, unverified, policy):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _history(ours)
    # a data file no manifest names (a writer that died before its commit): young, so kept
    # unless delete_unverified
    shutil.copy(
        os.path.join(ours, "data", lancelot.dataset(ours).get_fragments()[0]._pb.files[0].path),
        os.path.join(ours, "data", "0123456789abcdef0123456789abcdef.lance"),
    )
    temps = ["_versions/.tmp-deadbeef.partial", "data/.lancelot-x1y2.tmp", "_versions/5.manifest#3"]
    for t in temps:  # writers that died: lancelot's temporary names, and pylance's object store's
        with open(os.path.join(ours, t), "wb") as f:
            f.write(b"a commit that died")
        hour_ago = time.time() - 3600  # younger than 7 days: kept unless delete_unverified
        os.utime(os.path.join(ours, t), (hour_ago, hour_ago))
    shutil.copytree(ours, theirs)  # copy2: same mtimes
    latest = lance.dataset(ours).version
    kw = {"older_than": timedelta(0)} if policy == "all_old" else {"retain_versions": 3}
    keep_from = latest if policy == "all_old" else latest - 2

    stats = lancelot.dataset(ours).cleanup_old_versions(**kw, delete_unverified=unverified)
    pstats = lance.dataset(theirs).cleanup_old_versions(**kw, delete_unverified=unverified)
    assert stats.old_versions == pstats.old_versions > 0
    for k in ("data_files_removed", "transaction_files_removed", "deletion_files_removed"):
        assert getattr(stats, k) == getattr(pstats, k), k
    # pylance 14.0.2 leaves most temporary files; lancelot removes them as it removes unverified files
    assert stats.temp_files_removed == (3 if unverified else 0)
    left = set(temps) & files_of(theirs) if unverified else set()
    assert stats.bytes_removed == pstats.bytes_removed + len(left) * len(b"a commit that died")
    assert files_of(ours) == files_of(theirs) - (set(temps) if unverified else set())
    assert ("data/0123456789abcdef0123456789abcdef.lance" in files_of(ours)) is (not unverified)
    remaining = [v["version"] for v in lance.dataset(ours).versions()]
    assert remaining == [v["version"] for v in lancelot.dataset(ours).versions()]
    assert remaining == list(range(keep_from, latest + 1))
    for v in remaining:
        _assert_same(ours, v)
    lance.dataset(ours).validate()
    with pytest.raises(LanceError, match="does not exist"):
        lancelot.dataset(ours, version=1)


def test_cleanup_keeps_tagged_and_latest(tmp_path):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _history(ours)
    lance.dataset(ours).tags.create("keep", 3)
    shutil.copytree(ours, theirs)
    with pytest.raises(LanceError, match="tagged"):
        lancelot.dataset(ours).cleanup_old_versions(timedelta(0))
    stats = lancelot.dataset(ours).cleanup_old_versions(timedelta(0), error_if_tagged_old_versions=False)
    pstats = lance.dataset(theirs).cleanup_old_versions(timedelta(0), error_if_tagged_old_versions=False)
    assert stats.old_versions == pstats.old_versions
    assert files_of(ours) == files_of(theirs)
    assert [v["version"] for v in lancelot.dataset(ours).versions()] == [3, lance.dataset(ours).version]
    _assert_same(ours, 3)
    _assert_same(ours, lance.dataset(ours).version)
    # nothing old enough: nothing removed
    assert lancelot.dataset(ours).cleanup_old_versions().old_versions == 0


def test_maintenance_on_memory_store():
    uri = "memory://maintenance/ds"
    for i in range(5):
        lancelot.write_dataset(_table(10, i * 10), uri, mode="append" if i else "create")
    ds = lancelot.dataset(uri)
    ds.delete(pc.field("a") < 3)
    expected = ds.to_table()
    m = ds.compact_files()
    assert (m.fragments_removed, m.fragments_added, m.files_removed) == (5, 1, 6)
    stats = lancelot.dataset(uri).cleanup_old_versions(timedelta(0))
    assert stats.old_versions == lancelot.dataset(uri).version - 1
    assert stats.data_files_removed == 5 and stats.deletion_files_removed == 1
    ds = lancelot.dataset(uri)
    assert [v["version"] for v in ds.versions()] == [ds.version]
    assert ds.to_table().equals(expected)
    assert len(ds.store.list_files("data")) == 1


def test_maintenance_on_s3(s3_dataset):  # noqa: F811
    """Compaction and cleanup through the S3 store (moto's server): pylance reads the result."""
    uri, lo, po = s3_dataset.uri, s3_dataset.lancelot_options(), s3_dataset.pylance_options()
    for i in range(4):
        lancelot.write_dataset(_table(15, i * 15), uri, mode="append" if i else "create", storage_options=lo)
    lancelot.dataset(uri, storage_options=lo).delete(pc.field("a") < 4)
    expected = lance.dataset(uri, storage_options=po).to_table()
    m = lancelot.dataset(uri, storage_options=lo).compact_files(target_rows_per_fragment=TARGET)
    assert (m.fragments_removed, m.fragments_added) == (4, 1)
    stats = lancelot.dataset(uri, storage_options=lo).cleanup_old_versions(timedelta(0))
    assert stats.old_versions == 6 and stats.data_files_removed == 4 and stats.deletion_files_removed == 1
    pl = lance.dataset(uri, storage_options=po)
    pl.validate()
    assert [v["version"] for v in pl.versions()] == [pl.version]
    assert pl.to_table().equals(expected)
    assert len(lancelot.dataset(uri, storage_options=lo).store.list_files("data")) == 1


def test_compaction_against_concurrent_overwrite_and_stale_delete(tmp_path):
    uri = str(tmp_path / "ds")
    _build(uri, "lancelot", "2.2")
    stale = lancelot.dataset(uri)
    lancelot.write_dataset(_table(5, 100), uri, mode="overwrite")
    with pytest.raises(CommitConflictError, match="overwrite"):
        stale.compact_files(target_rows_per_fragment=TARGET)
    assert lance.dataset(uri).count_rows() == 5
    # a delete planned before a compaction must not land on the rewritten fragments
    uri2 = str(tmp_path / "ds2")
    _build(uri2, "lancelot", "2.2")
    old = lancelot.dataset(uri2)
    lancelot.dataset(uri2).compact_files(target_rows_per_fragment=TARGET)
    with pytest.raises(CommitConflictError, match="rewrite"):
        old.delete(pc.field("a") == 1, conflict_retries=0)
    lance.dataset(uri2).validate()
    assert 1 in lance.dataset(uri2).to_table()["a"].to_pylist()
    old.delete(pc.field("a") == 1)  # by default re-run on the latest version, as pylance does
    assert 1 not in lance.dataset(uri2).to_table()["a"].to_pylist()


def test_compaction_keeps_btree_index_valid(tmp_path):
    """An indexed dataset compacts (tests/dataset/test_compact_indexed.py has the rest): the BTREE
    index is remapped and pylance's index-using filter equals a full scan."""
    uri = str(tmp_path / "ds")
    _build(uri, "pylance", "2.1")
    lance.dataset(uri).create_scalar_index("a", "BTREE")
    lancelot.dataset(uri).compact_files(target_rows_per_fragment=TARGET)
    ds = lance.dataset(uri)
    ds.validate()
    got = ds.to_table(filter="a < 50").sort_by("a")
    assert got.equals(ds.to_table(filter="a < 50", use_scalar_index=False).sort_by("a"))
    assert "ScalarIndexQuery" in ds.scanner(filter="a < 50").explain_plan()
