"""Commit rules in one process: two writers that read the same version (conflict resolution)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.dataset import CommitConflictError, commit, write_fragments
from tests.dataset.helpers import int_table


def test_two_appends_from_the_same_version_both_land(tmp_path):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(int_table(10), uri)
    f1 = write_fragments(int_table(5, 10), uri)
    f2 = write_fragments(int_table(5, 20), uri)
    commit(uri, "append", fragments=f1, schema=int_table(0).schema, read_version=1)
    ds = commit(uri, "append", fragments=f2, schema=int_table(0).schema, read_version=1)  # rebased on version 2
    assert ds.version == 3
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 1, 2]
    assert sorted(ds.to_table().column("a").to_pylist()) == list(range(15)) + list(range(20, 25))


def test_append_against_a_concurrent_overwrite_conflicts(tmp_path):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(int_table(10), uri)
    frags = write_fragments(int_table(5, 10), uri)
    lancelot.write_dataset(int_table(3), uri, mode="overwrite")
    with pytest.raises(CommitConflictError, match="conflicts with version 2: a concurrent overwrite"):
        commit(uri, "append", fragments=frags, schema=int_table(0).schema, read_version=1)
    assert lancelot.dataset(uri).version == 2


def test_deletes_of_the_same_fragment_merge_their_deletions(tmp_path):
    """Deletes rebase over each other (pylance does too): on other fragments as they are, on the same
    fragment by merging the deletion files (rows deleted by both, once), a fragment left empty removed."""
    import lance

    uri = str(tmp_path / "ds")
    lancelot.write_dataset(int_table(20), uri, max_rows_per_file=10)
    a, b, c, d = (lancelot.dataset(uri) for _ in range(4))
    a.delete(pc.field("a") == 1)  # fragment 0
    b.delete(pc.field("a") == 15)  # fragment 1: no conflict, rebased
    assert b.version == 3 and b.count_rows() == 18
    c.delete((pc.field("a") == 2) | (pc.field("a") == 1))  # fragment 0 again: merged with a's
    assert c.version == 4 and c.count_rows() == 17
    d.delete((pc.field("a") == 0) | ((pc.field("a") >= 3) & (pc.field("a") < 10)))  # the rest of fragment 0: it goes
    assert [f.fragment_id for f in d.get_fragments()] == [1]
    kept = [i for i in range(10, 20) if i != 15]
    assert lancelot.dataset(uri).to_table().column("a").to_pylist() == kept
    pl = lance.dataset(uri)
    pl.validate()
    assert pl.to_table().column("a").to_pylist() == kept
    assert lance.dataset(uri, version=4).to_table().column("a").to_pylist() == [0, *range(3, 10), *kept]


def test_delete_rebases_over_an_append(tmp_path):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(int_table(10), uri)
    old = lancelot.dataset(uri)
    lancelot.write_dataset(int_table(10, 10), uri, mode="append")
    old.delete(pc.field("a") < 5)
    assert sorted(lancelot.dataset(uri).to_table().column("a").to_pylist()) == list(range(5, 20))


def test_streaming_input_and_file_rolling(tmp_path):
    uri = str(tmp_path / "ds")
    batches = (pa.record_batch([pa.array(np.arange(i * 7, i * 7 + 7, dtype=np.int64))], names=["a"]) for i in range(10))
    ds = lancelot.write_dataset(batches, uri, max_rows_per_file=20)
    assert [f.physical_rows for f in ds.get_fragments()] == [20, 20, 20, 10]
    assert ds.to_table().column("a").to_pylist() == list(range(70))


def test_conflicts_read_from_pylance_transactions(tmp_path):
    import lance

    uri = str(tmp_path / "ds")
    lancelot.write_dataset(int_table(20), uri, max_rows_per_file=10)
    ours = lancelot.dataset(uri)
    lance.dataset(uri).delete("a = 3")  # pylance's transaction touches fragment 0
    ours.delete(pc.field("a") == 14)  # fragment 1: rebased over pylance's delete
    assert sorted(lancelot.dataset(uri).to_table().column("a").to_pylist()) == [
        i for i in range(20) if i not in (3, 14)
    ]
    lance.dataset(uri).delete("a = 5")  # and pylance rebases over lancelot's merged file

    stale = lancelot.dataset(uri, version=1)
    stale.delete(pc.field("a") == 4)  # fragment 0 again: merged with pylance's deletion file
    frags = write_fragments(int_table(5, 100), uri)
    lance.write_dataset(int_table(2, 50), uri, mode="overwrite")
    with pytest.raises(CommitConflictError, match="a concurrent overwrite"):
        commit(uri, "append", fragments=frags, schema=int_table(0).schema, read_version=3)
    lance.dataset(uri).validate()
    assert sorted(lance.dataset(uri, version=5).to_table().column("a").to_pylist()) == [
        i for i in range(20) if i not in (3, 4, 5, 14)
    ]


def _count_syncs(monkeypatch) -> list[str]:
    """Record what every os.fsync / os.fdatasync syncs (the path behind the descriptor)."""
    import os

    synced: list[str] = []
    real_fsync, real_fdatasync = os.fsync, os.fdatasync

    def record(real):
        def sync(fd):
            synced.append(os.readlink(f"/proc/self/fd/{fd}"))
            return real(fd)

        return sync

    monkeypatch.setattr(os, "fsync", record(real_fsync))
    monkeypatch.setattr(os, "fdatasync", record(real_fdatasync))
    return synced


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self/fd"), reason="needs /proc to name synced files")
def test_local_durability_is_pylances_unless_fsync_is_asked(tmp_path, monkeypatch):
    """pylance's local store (object_store LocalFileSystem) never fsyncs; lancelot's dataset writes
    match it by default, and the ``fsync`` storage option syncs files and directories."""
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(int_table(10), uri)
    synced = _count_syncs(monkeypatch)
    lancelot.write_dataset(int_table(10, 10), uri, mode="append")
    lancelot.dataset(uri).delete(pc.field("a") < 3)
    assert synced == []
    ds = lancelot.write_dataset(int_table(10, 20), uri, mode="append", storage_options={"fsync": True})
    ds.delete(pc.field("a") == 25)
    where = {p.removeprefix(uri + "/").split("/")[0] for p in synced}
    assert {"data", "_versions", "_transactions", "_deletions"} <= where, synced
    assert {f"{uri}/data", f"{uri}/_versions"} <= set(synced)  # the directories, after the new names
    assert any(p.startswith(f"{uri}/data/") and p.endswith(".lance") for p in synced)  # the file (written in place)
    assert sorted(lancelot.dataset(uri).to_table().column("a").to_pylist()) == [
        a for a in range(30) if a >= 3 and a != 25
    ]


def test_append_writes_its_files_in_place_and_the_hint_not_through_a_hard_link(tmp_path, monkeypatch):
    """An append creates its data and transaction files under their own names (no temporary file
    left) and overwrites the version hint in place, cut to its new length; a hint hard-linked into
    a copy of the dataset is replaced instead, the copy's left as it was."""
    import os

    import lance

    uri = str(tmp_path / "ds")
    lancelot.write_dataset(int_table(10), uri)
    hint = tmp_path / "ds" / "_versions" / "latest_version_hint.json"
    hint.write_bytes(b'{"version":1234}')  # (longer than the next one)
    inode = os.stat(hint).st_ino
    renamed, replace = [], os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (renamed.append(str(b)), replace(a, b))[1])
    lancelot.write_dataset(int_table(10, 10), uri, mode="append")
    assert hint.read_bytes() == b'{"version":2}' and os.stat(hint).st_ino == inode
    os.link(hint, tmp_path / "copy.json")
    lancelot.write_dataset(int_table(10, 20), uri, mode="append")
    assert (tmp_path / "copy.json").read_bytes() == b'{"version":2}' and hint.read_bytes() == b'{"version":3}'
    assert renamed == [str(hint)]  # (only the linked hint: nothing renamed into data/ or _transactions/)
    for d in ("data", "_transactions", "_versions"):
        assert not [n for n in os.listdir(tmp_path / "ds" / d) if n.startswith(".")], d
    assert lance.dataset(uri).to_table().column("a").to_pylist() == list(range(30))


def test_a_data_file_written_in_place_is_removed_by_abort(tmp_path):
    """A data file written in place (write_fragments') is at its name while written; abort removes it."""
    from lancelot.dataset.store import ObjectStore

    store, t = ObjectStore(str(tmp_path)), int_table(10)
    w = store.open_output("data/x.lance", t.schema, in_place=True)
    w.write(t)
    assert store.list("data") == ["x.lance"]
    w.abort()
    assert store.list("data") == []


def test_appends_set_the_feature_flags_pylance_sets(tmp_path):
    """An append's deletion-file flag (taken from the base's flag, not a walk of every fragment)
    is the one pylance's append sets, with and without deletion files in the dataset."""
    import lance

    from lancelot.dataset.commit import list_versions, load_manifest
    from lancelot.dataset.store import ObjectStore

    def flags(uri):
        store = ObjectStore(uri)
        vs = list_versions(store, uri)
        m = load_manifest(store, uri, vs, vs.latest).manifest
        return m.reader_feature_flags, m.writer_feature_flags

    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    for uri in (ours, theirs):
        lance.write_dataset(int_table(4), uri, max_rows_per_file=2)
    for deleted in (False, True):
        if deleted:
            for uri in (ours, theirs):
                lance.dataset(uri).delete("a = 3")
        lancelot.write_dataset(int_table(2), ours, mode="append")
        lance.write_dataset(int_table(2), theirs, mode="append")
        assert flags(ours) == flags(theirs)
        assert bool(flags(ours)[0] & 1) is deleted


@pytest.mark.parametrize("hint", [None, 1, 3, 9, "garbage"])
def test_append_lands_on_the_latest_version_whatever_the_hint_says(tmp_path, hint):
    """An append finds the latest version through latest_version_hint.json; a missing, stale,
    future or damaged hint falls back to the listing, and pylance reads the version committed."""
    import json
    import os

    import lance

    uri = str(tmp_path / "ds")
    for k in range(3):
        lance.write_dataset(int_table(4, 4 * k), uri, mode="append" if k else "create")
    path = os.path.join(uri, "_versions", "latest_version_hint.json")
    if hint is None:
        os.remove(path)
    else:
        with open(path, "w") as f:
            f.write(json.dumps({"version": hint}) if isinstance(hint, int) else hint)
    assert lancelot.write_dataset(int_table(2, 100), uri, mode="append").version == 4
    ds = lance.dataset(uri)
    assert (ds.version, ds.count_rows()) == (4, 14)
    with open(path) as f:
        assert json.load(f) == {"version": 4}


def test_commits_on_a_pylance_manifest_drop_its_unknown_fields_and_leave_opened_datasets_alone(tmp_path):
    """Appends, deletes and LanceDataset.commit build on the manifest they read (taking it over,
    not copying it): what they write holds no field this proto does not know (pylance 14 writes
    one), pylance reads every version as lancelot does, and a dataset opened before is unchanged."""
    import lance
    from google.protobuf.unknown_fields import UnknownFieldSet

    uri = str(tmp_path / "ds")
    lance.write_dataset(int_table(10), uri)
    before = lancelot.dataset(uri)
    assert [u.field_number for u in UnknownFieldSet(before.manifest_file.manifest)]  # (else: nothing to check)
    lancelot.write_dataset(int_table(5, 10), uri, mode="append")
    lancelot.dataset(uri).delete("a = 3")
    op = lancelot.LanceOperation.Delete([], [0], "a < 10")
    ds = lancelot.LanceDataset.commit(uri, op, read_version=3)
    assert ds.version == 4 and ds.to_table().column("a").to_pylist() == list(range(10, 15))
    for v in range(2, 5):
        ours, theirs = lancelot.dataset(uri, version=v), lance.dataset(uri, version=v)
        assert not [u.field_number for u in UnknownFieldSet(ours.manifest_file.manifest)]
        assert ours.to_table() == theirs.to_table()
        assert [f.fragment_id for f in ours.get_fragments()] == [f.fragment_id for f in theirs.get_fragments()]
    assert before.version == 1 and before.count_rows() == 10 and len(before.get_fragments()) == 1


_CHANGES = {
    "delete": lambda ds: ds.delete("a % 7 = 3"),
    "update": lambda ds: ds.update({"a": "a + 1000"}, where="a % 7 = 3"),
    "config": lambda ds: ds.update_config({"k": "v"}),
    "metadata": lambda ds: ds.update_metadata({"m": "1"}),
    "index": lambda ds: ds.create_scalar_index("a", "BTREE"),
}


@pytest.mark.parametrize("stale_hint", [False, True], ids=["hint", "stale-hint"])
@pytest.mark.parametrize("change", sorted(_CHANGES))
def test_commit_of_the_latest_version_reads_the_hint_not_a_listing(tmp_path, monkeypatch, change, stale_hint):
    """A commit on top of the version a dataset read builds on that read when a fresh read of the
    version hint says it is still the latest: no listing of ``_versions/``.  A stale hint (naming an
    older version) lists.  pylance reads the result the same."""
    import json

    import lance

    from lancelot.dataset import store as store_mod

    uri = str(tmp_path / "ds")
    lance.write_dataset(int_table(20), uri, max_rows_per_file=10)
    lance.write_dataset(int_table(10, 20), uri, mode="append")
    ds = lancelot.dataset(uri)
    if stale_hint:
        (tmp_path / "ds" / "_versions" / "latest_version_hint.json").write_text(json.dumps({"version": 1}))
    listed = []
    real = store_mod.ObjectStore.list_names
    monkeypatch.setattr(store_mod.ObjectStore, "list_names", lambda self, p: listed.append(p) or real(self, p))
    _CHANGES[change](ds)
    monkeypatch.undo()
    assert ("_versions" in listed) == stale_hint
    theirs = lance.dataset(uri)
    assert ds.version == theirs.version == 3
    assert ds.to_table().sort_by("a").equals(theirs.to_table().sort_by("a"))
    assert (ds.config(), ds.metadata, len(ds.describe_indices())) == (
        theirs.config(),
        theirs.metadata,
        len(theirs.describe_indices()),
    )
