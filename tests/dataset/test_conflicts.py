"""Conflict resolution between concurrent commits (transaction.py ``conflict``): every pair of
operations as the reference resolves it (rust/lance/src/io/commit/conflict_resolver.rs, its
``test_conflicts`` table extended to all fifteen operations), and compactions that go through
concurrent deletes, checked against pylance 14.0.2."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap

import lancelot
from lancelot.dataset.transaction import INCOMPATIBLE, REBASE, RETRYABLE, conflict, conflicts
from lancelot.format.pb import table_pb2, transaction_pb2

C, B, R, N = None, REBASE, RETRYABLE, INCOMPATIBLE


def _frag(i: int) -> table_pb2.DataFragment:
    return table_pb2.DataFragment(id=i, physical_rows=10)


def _index(name: str = "test", fields=(0,), frags=None) -> table_pb2.IndexMetadata:
    idx = table_pb2.IndexMetadata(name=name, fields=list(fields))
    if frags is not None:
        idx.fragment_bitmap = BitMap(frags).serialize()
    return idx


def _txn(**op) -> transaction_pb2.Transaction:
    return transaction_pb2.Transaction(read_version=1, uuid="u", **op)


T = transaction_pb2.Transaction


def _update_config(upsert=(), delete=(), schema=False, fields=()) -> transaction_pb2.Transaction:
    u = T.UpdateConfig()
    for k in upsert:
        u.config_updates.update_entries.add(key=k, value="v")
    for k in delete:
        u.config_updates.update_entries.add(key=k)
    if schema:
        u.schema_metadata_updates.update_entries.add(key="schema-key", value="v")
    for f in fields:
        u.field_metadata_updates[f].update_entries.add(key="field-key", value="v")
    return _txn(update_config=u)


def _mem_wal(region: str = "r") -> table_pb2.MemWalIndexDetails.MemWal:
    w = table_pb2.MemWalIndexDetails.MemWal()
    w.id.region, w.id.generation = region, 1
    return w


def _rewrite(old, new) -> transaction_pb2.Transaction:
    return _txn(rewrite=T.Rewrite(groups=[T.Rewrite.RewriteGroup(old_fragments=old, new_fragments=new)]))


def _replacement(fragment: int, field: int) -> transaction_pb2.Transaction:
    g = T.DataReplacementGroup(fragment_id=fragment, new_file=table_pb2.DataFile(path="x.lance", fields=[field]))
    return _txn(data_replacement=T.DataReplacement(replacements=[g]))


#: the committed ("other") transactions, one per column of the table below
OTHERS = {
    "append": _txn(append=T.Append(fragments=[_frag(0)])),
    "create_index": _txn(create_index=T.CreateIndex(new_indices=[_index()], removed_indices=[_index()])),
    "delete": _txn(delete=T.Delete(updated_fragments=[_frag(0)], deleted_fragment_ids=[2], predicate="x > 2")),
    "merge": _txn(merge=T.Merge(fragments=[_frag(0), _frag(2)])),
    "overwrite": _txn(overwrite=T.Overwrite(fragments=[_frag(0)], config_upsert_values={"overwrite-key": "v"})),
    "rewrite": _rewrite([_frag(0)], [_frag(1)]),
    "reserve": _txn(reserve_fragments=T.ReserveFragments(num_fragments=3)),
    "update": _txn(
        update=T.Update(
            removed_fragment_ids=[1], updated_fragments=[_frag(0)], new_fragments=[_frag(2)], fields_modified=[0]
        )
    ),
    "update_config": _update_config(upsert=["lance.test"], delete=["remove-key"], schema=True, fields=[0]),
    "project": _txn(project=T.Project()),
    "restore": _txn(restore=T.Restore(version=1)),
    "data_replacement": _replacement(0, 0),
    "clone": _txn(clone=T.Clone(is_shallow=True)),
    "update_bases": _txn(update_bases=T.UpdateBases(new_bases=[table_pb2.BasePath(id=5, path="/x")])),
    "mem_wal": _txn(update_mem_wal_state=T.UpdateMemWalState(added=[_mem_wal()])),
}

#: (name, transaction being committed, outcome against each of OTHERS in order): C compatible,
#: B rebase (deletion files merged), R retryable, N incompatible
CASES = [
    ("append", _txn(append=T.Append(fragments=[_frag(0)])), [C, C, C, C, N, C, C, C, C, C, N, C, C, C, N]),
    (
        "delete other fragments",
        _txn(delete=T.Delete(updated_fragments=[_frag(1)], predicate="x > 2")),
        [C, C, C, R, N, C, C, R, C, C, N, C, C, C, N],  # (the update removed fragment 1: retryable)
    ),
    (
        "delete same fragments",
        _txn(delete=T.Delete(updated_fragments=[_frag(0), _frag(2)], predicate="x > 2")),
        [C, C, R, R, N, R, C, B, C, C, N, R, C, C, N],  # (the delete removed fragment 2: retryable)
    ),
    # overwrite against overwrite: retryable in pylance 14.0.2 (the reference's table: compatible)
    ("overwrite", _txn(overwrite=T.Overwrite(fragments=[_frag(0)])), [C] * 4 + [R] + [C] * 9 + [N]),
    (
        "create index",
        _txn(create_index=T.CreateIndex(new_indices=[_index()], removed_indices=[_index()])),
        [C, C, C, C, N, R, C, C, C, C, N, R, C, C, N],
    ),
    (
        "create index on other fragments",
        _txn(create_index=T.CreateIndex(new_indices=[_index(fields=[1], frags=[1])])),
        [C, C, C, C, N, C, C, C, C, C, N, C, C, C, N],
    ),
    (
        "rewrite other fragments",
        _rewrite([_frag(1)], [_frag(0)]),
        [C, R, C, R, N, C, C, R, C, C, N, C, C, C, C],
    ),
    (
        "rewrite same fragments",
        _txn(
            rewrite=T.Rewrite(
                groups=[T.Rewrite.RewriteGroup(old_fragments=[_frag(0), _frag(2)], new_fragments=[_frag(0)])]
            )
        ),
        [C, R, B, R, N, R, C, R, C, C, N, R, C, C, C],  # delete: R in the reference (module docstring)
    ),
    ("merge", _txn(merge=T.Merge(fragments=[_frag(0), _frag(2)])), [R, C, R, R, N, R, C, R, C, N, N, R, C, C, N]),
    (
        "reserve",
        _txn(reserve_fragments=T.ReserveFragments(num_fragments=2)),
        [C, C, C, C, N, C, C, C, C, C, N] + [C] * 4,
    ),
    (
        "update",
        _txn(update=T.Update(updated_fragments=[_frag(0)], new_fragments=[_frag(2)], fields_modified=[0])),
        [C, C, B, R, N, R, C, B, C, C, N, R, C, C, C],
    ),
    ("config other key", _update_config(upsert=["other-key"]), [C] * 15),
    ("config upserted key", _update_config(upsert=["lance.test"]), [C] * 8 + [N] + [C] * 6),
    ("config deleted key", _update_config(upsert=["remove-key"]), [C] * 8 + [N] + [C] * 6),
    ("config delete deleted key", _update_config(delete=["remove-key"]), [C] * 15),
    ("config delete upserted key", _update_config(delete=["lance.test"]), [C] * 8 + [N] + [C] * 6),
    ("config schema metadata", _update_config(schema=True), [C, C, C, C, N, C, C, C, N] + [C] * 6),
    ("config field metadata", _update_config(fields=[0]), [C, C, C, C, N, C, C, C, N] + [C] * 6),
    ("config other field metadata", _update_config(fields=[1]), [C, C, C, C, N] + [C] * 10),
    # project against append and update: retryable in pylance 14.0.2 (the reference's table: compatible)
    ("project", _txn(project=T.Project()), [R, C, C, R, N, C, C, R, C, R, N, C, C, C, N]),
    ("restore", _txn(restore=T.Restore(version=1)), [C] * 14 + [N]),
    ("replace other data", _replacement(1, 1), [C, C, C, C, N, C, C, C, C, C, N, C, C, C, N]),
    ("replace same data", _replacement(0, 0), [C, R, C, C, N, R, C, C, C, C, N, R, C, C, N]),
    ("clone", _txn(clone=T.Clone(is_shallow=True)), [C] * 15),
    (
        "add the same base",
        _txn(update_bases=T.UpdateBases(new_bases=[table_pb2.BasePath(id=5, path="/x")])),
        [C] * 13 + [N, C],
    ),
    (
        "add another base",
        _txn(update_bases=T.UpdateBases(new_bases=[table_pb2.BasePath(id=6, path="/y")])),
        [C] * 15,
    ),
    (
        "mem wal state",
        _txn(update_mem_wal_state=T.UpdateMemWalState(added=[_mem_wal()])),
        [N, C, N, N, N, C, C, N, C, N, N, N, N, C, N],
    ),
    (
        "mem wal state, other region",
        _txn(update_mem_wal_state=T.UpdateMemWalState(added=[_mem_wal("s")])),
        [N, C, N, N, N, C, C, N, C, N, N, N, N, C, C],
    ),
]


@pytest.mark.parametrize("name,mine,expected", CASES, ids=[c[0] for c in CASES])
def test_conflict_matrix(name, mine, expected):
    assert len(expected) == len(OTHERS)
    got = {}
    for other_name, other in OTHERS.items():
        c = conflict(mine, other)
        got[other_name] = None if c is None else c.kind
        assert (conflicts(mine, other) is None) == (c is None)
    assert got == dict(zip(OTHERS, expected, strict=True)), name


def test_a_version_without_transaction_or_with_an_unknown_one_conflicts():
    mine = CASES[0][1]
    assert conflict(mine, None).kind == INCOMPATIBLE
    assert conflict(mine, _txn()).kind == INCOMPATIBLE
    assert "no transaction file" in conflicts(mine, None)


# -- end to end ---------------------------------------------------------------------------------------


def _t(n: int, start: int = 0) -> pa.Table:
    return pa.table({"a": np.arange(start, start + n, dtype=np.int64), "s": [f"r{i}" for i in range(start, start + n)]})


def _small_big_small(uri: str) -> None:
    """Fragments of 10, 10, 500, 10, 10 rows: a compaction to 100 rows merges 0+1 and 3+4, not 2."""
    lancelot.write_dataset(_t(10), uri)
    for start, n in ((10, 10), (20, 500), (520, 10), (530, 10)):
        lancelot.write_dataset(_t(n, start), uri, mode="append")


@pytest.mark.parametrize("deleter", ["lancelot", "pylance"])
def test_compaction_concurrent_with_a_delete_elsewhere_commits(tmp_path, deleter):
    """A delete of a fragment the compaction does not rewrite, committed after the compaction read the
    dataset: the ReserveFragments and the Rewrite are rebuilt on top of it, with no second plan."""
    uri = str(tmp_path / "ds")
    _small_big_small(uri)
    stale = lancelot.dataset(uri)
    if deleter == "lancelot":
        import pyarrow.compute as pc

        lancelot.dataset(uri).delete((pc.field("a") >= 100) & (pc.field("a") < 110))  # fragment 2
    else:
        lance.dataset(uri).delete("a >= 100 AND a < 110")
    before = lance.dataset(uri).version
    m = stale.compact_files(target_rows_per_fragment=100)
    assert (m.fragments_removed, m.fragments_added) == (4, 2)
    pl = lance.dataset(uri)
    assert pl.version == before + 2  # one ReserveFragments, one Rewrite
    pl.validate()
    expected = [i for i in range(540) if not 100 <= i < 110]
    assert sorted(pl.to_table()["a"].to_pylist()) == expected
    assert sorted(lancelot.dataset(uri).to_table()["a"].to_pylist()) == expected
    assert [f.count_rows() for f in pl.get_fragments()] == [490, 20, 20]  # the big one kept its deletions


def test_pylance_compaction_rebases_over_a_lancelot_delete_elsewhere(tmp_path):
    """The other direction: pylance's compaction against lancelot's delete of an untouched fragment."""
    import pyarrow.compute as pc

    uri = str(tmp_path / "ds")
    _small_big_small(uri)
    stale = lance.dataset(uri)
    lancelot.dataset(uri).delete(pc.field("a") == 300)
    stale.optimize.compact_files(target_rows_per_fragment=100)
    expected = [i for i in range(540) if i != 300]
    assert sorted(lancelot.dataset(uri).to_table()["a"].to_pylist()) == expected
    lance.dataset(uri).validate()


def test_lancelot_delete_rebases_over_a_pylance_compaction_elsewhere(tmp_path):
    """A delete of the big fragment, planned before pylance compacted the small ones, still lands; one
    planned on a compacted fragment is a retryable conflict (pylance re-runs it; lancelot asks to)."""
    import pyarrow.compute as pc

    from lancelot.dataset.commit import RetryableCommitConflictError

    uri = str(tmp_path / "ds")
    _small_big_small(uri)
    a, b = lancelot.dataset(uri), lancelot.dataset(uri)
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=100)
    a.delete(pc.field("a") == 300)
    with pytest.raises(RetryableCommitConflictError, match="Rewrite"):
        b.delete(pc.field("a") == 5, conflict_retries=0)
    lance.dataset(uri).validate()
    assert sorted(lance.dataset(uri).to_table()["a"].to_pylist()) == [i for i in range(540) if i != 300]
    b.delete(pc.field("a") == 5)  # by default the delete re-runs on the latest version, as pylance's
    assert sorted(lance.dataset(uri).to_table()["a"].to_pylist()) == [i for i in range(540) if i not in (5, 300)]


@pytest.mark.parametrize("stable", [False, True])
def test_deletes_committed_during_a_compaction_are_carried_into_the_new_fragments(tmp_path, stable):
    """Deletes by both libraries of fragments a compaction rewrites, committed after it read the
    dataset (one fragment had deletions before): the rows stay deleted in the rewritten fragments, the
    compaction commits at once (pylance's fails), and stable row ids stay what they were."""
    import pyarrow.compute as pc

    uri = str(tmp_path / "ds")
    lancelot.write_dataset(_t(80), uri, max_rows_per_file=10, enable_stable_row_ids=stable)
    lancelot.dataset(uri).delete(pc.field("a") == 11)
    stale = lancelot.dataset(uri)
    lancelot.dataset(uri).delete(pc.field("a").isin([5, 12, 13]))
    lance.dataset(uri).delete("a = 29 OR a = 30 OR a = 79")
    before = lance.dataset(uri)
    ids = before.to_table(with_row_id=True) if stable else None
    m = stale.compact_files(target_rows_per_fragment=30)
    assert (m.fragments_removed, m.fragments_added) == (8, 2)
    pl = lance.dataset(uri)
    assert pl.version == before.version + 2
    pl.validate()
    want = [i for i in range(80) if i not in (5, 11, 12, 13, 29, 30, 79)]
    assert pl.to_table()["a"].to_pylist() == lancelot.dataset(uri).to_table()["a"].to_pylist() == want
    assert [f.count_rows() for f in pl.get_fragments()] == [34, 39]  # 39 and 40 rows read, 5 and 1 deleted since
    if stable:
        after = pl.to_table(with_row_id=True)
        assert after.sort_by("a").equals(ids.sort_by("a"))
    lance.dataset(uri).delete("a = 40")  # and pylance goes on deleting in the new fragments
    assert len(lancelot.dataset(uri).to_table()) == len(want) - 1


def test_delete_over_a_delete_then_a_compaction_of_its_fragment_is_retryable(tmp_path):
    """Every version in between is checked before deletion files are merged: a compaction that
    rewrote the fragment after another delete of it makes the stale delete retryable, never drops it."""
    import pyarrow.compute as pc

    from lancelot.dataset.commit import RetryableCommitConflictError

    uri = str(tmp_path / "ds")
    lancelot.write_dataset(_t(40), uri, max_rows_per_file=10)
    stale = lancelot.dataset(uri)
    lancelot.dataset(uri).delete(pc.field("a") == 1)  # fragment 0: a delete to merge with ...
    lancelot.dataset(uri).compact_files(target_rows_per_fragment=100)  # ... then fragment 0 rewritten
    with pytest.raises(RetryableCommitConflictError, match="rewrite"):
        stale.delete(pc.field("a") == 2, conflict_retries=0)
    assert 2 in lancelot.dataset(uri).to_table()["a"].to_pylist()
    stale.delete(pc.field("a") == 2)  # by default: re-run on the latest version
    assert lance.dataset(uri).to_table()["a"].to_pylist() == [i for i in range(40) if i not in (1, 2)]


# -- stale updates, deletes and merge_inserts over a concurrent Update or Delete, as pylance ---------------------------


def _upsert(ds, ids: list[int], xs: list[float], s: str = "m"):
    src = pa.table({"id": ids, "x": [float(v) for v in xs], "s": pa.array([s] * len(ids), pa.string())})
    return ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)


#: (what another object commits first, what the stale object then does, stable row ids); the first commits of the
#: dataset's one fragment: disjoint rows rebase (the stale predicate read at its version), shared rows or a fragment
#: removed whole are retried on the latest version
STALE = [
    ("upsert 17, 18 with x < 12, insert 30", "update x < 12", False),  # rebase: 12 rows, not the upserted ones
    ("upsert 17, 18 with x < 12, insert 30", "delete x < 12", True),  # rebase
    ("upsert 17 and 40", "upsert 3, 19 and 40", True),  # rebase: 40 twice, as pylance
    ("update id >= 15", "delete x < 12", False),  # rebase (the same as a re-run)
    ("delete id >= 12", "update x < 12", True),  # rebase: the two leave no row of the fragment, which goes
    ("update id < 3", "update x < 12", True),  # shared rows: re-run, 9 rows
    ("delete id < 3", "delete x < 12", False),  # shared rows, deletes too: re-run, 9 rows deleted
    ("delete all", "upsert 3, 19 and 40", False),  # fragment removed: re-run, all inserted
]
_FIRST = {
    "upsert 17, 18 with x < 12, insert 30": lambda d: _upsert(d, [17, 18, 30], [1, 2, 3], "o"),
    "upsert 17 and 40": lambda d: _upsert(d, [17, 40], [1, 2], "o"),
    "update id >= 15": lambda d: d.update({"x": "x + 100"}, "id >= 15"),
    "update id < 3": lambda d: d.update({"x": "x + 100"}, "id < 3"),
    "delete id < 3": lambda d: d.delete("id < 3"),
    "delete id >= 12": lambda d: d.delete("id >= 12"),
    "delete all": lambda d: d.delete("id >= 0"),
}
_THEN = {
    "update x < 12": lambda d: d.update({"s": "'u'"}, "x < 12"),
    "delete x < 12": lambda d: d.delete("x < 12"),
    "upsert 3, 19 and 40": lambda d: _upsert(d, [3, 19, 40], [5, 6, 7]),
}


def _stale_outcome(lib, path: str, first: str, then: str, stable: bool, first_lib) -> tuple:
    data = pa.table({"id": range(20), "x": [float(i) for i in range(20)], "s": pa.array(["a"] * 20, pa.string())})
    lance.write_dataset(data, path, enable_stable_row_ids=stable)
    stale = lib.dataset(path) if stable else lib.dataset(path).checkout_version(1)
    _FIRST[first](first_lib.dataset(path))
    got = dict(_THEN[then](stale))  # (the counts: the rows found at the stale version, or by the re-run)
    t = lance.dataset(path).to_table(with_row_id=stable)
    assert lib.dataset(path).to_table(with_row_id=stable).sort_by("id") == t.sort_by("id")  # pylance reads ours
    lance.dataset(path).validate()
    return got, stale.version, sorted(t.to_pylist(), key=lambda r: (r["id"], r["x"]))


@pytest.mark.parametrize("other_lib_first", [False, True], ids=["same", "mixed"])
@pytest.mark.parametrize(("first", "then", "stable"), STALE)
def test_stale_change_over_a_concurrent_update_as_pylance(tmp_path, first, then, stable, other_lib_first):
    """``mixed``: the first commit by the other library (lancelot rebases over pylance's Update, and pylance over
    lancelot's)."""
    theirs = _stale_outcome(lance, str(tmp_path / "t"), first, then, stable, lancelot if other_lib_first else lance)
    ours = _stale_outcome(lancelot, str(tmp_path / "o"), first, then, stable, lance if other_lib_first else lancelot)
    assert ours == theirs
