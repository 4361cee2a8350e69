"""Distributed compaction (``lancelot.optimize.Compaction.plan`` / ``CompactionTask.execute`` / ``Compaction.commit``)
against pylance 14.0.2: the plan is pylance's, tasks run after pickling (as on a worker, each opening the dataset
itself), and what lancelot commits reads in pylance as pylance's own compaction of a twin dataset."""

from __future__ import annotations

import pickle

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.optimize import Compaction as PyCompaction
from lance.optimize import CompactionPlan as PyPlan
from lance.optimize import CompactionTask as PyTask
from lance.optimize import RewriteResult as PyResult

import lancelot
from lancelot.optimize import Compaction, CompactionPlan, CompactionTask, RewriteResult
from tests.dataset.helpers import counts

OPTS = {"target_rows_per_fragment": 500}


def _twins(tmp_path, rows: int = 3000, per_file: int = 200, delete: str | None = "i % 7 = 0") -> tuple[str, str]:
    """Two equal datasets written by pylance (the same fragments, the same deletions)."""
    table = pa.table({"i": np.arange(rows), "s": [f"v{i}" for i in range(rows)]})
    out = []
    for name in ("ours", "theirs"):
        uri = str(tmp_path / name)
        lance.write_dataset(table, uri, max_rows_per_file=per_file)
        if delete:
            lance.dataset(uri).delete(delete)
        out.append(uri)
    return out[0], out[1]


def _state(uri: str) -> tuple[list[int], int, int, pa.Table]:
    """What pylance reads: fragment row counts, version, number of versions, rows in order."""
    ds = lance.dataset(uri)
    return [f.count_rows() for f in ds.get_fragments()], ds.version, len(ds.versions()), ds.to_table()


def _task_ids(plan) -> list[list[int]]:
    return [[f.id for f in t.fragments] for t in plan.tasks]


def test_plan_execute_on_workers_commit_matches_pylance(tmp_path):
    ours, theirs = _twins(tmp_path)
    ds = lancelot.dataset(ours)
    plan = Compaction.plan(ds, OPTS)
    assert _task_ids(plan) == _task_ids(PyCompaction.plan(lance.dataset(theirs), OPTS))
    assert plan.read_version == 2 and plan.num_tasks() > 1
    wire = [pickle.dumps(t) for t in plan.tasks]  # to the workers
    results = [pickle.dumps(pickle.loads(w).execute(lancelot.dataset(ours))) for w in wire]  # and back
    m = Compaction.commit(ds, [pickle.loads(r) for r in results])
    pm = lance.dataset(theirs).optimize.compact_files(**OPTS)
    assert counts(m) == counts(pm)
    assert ds.version == lance.dataset(ours).version  # the object moved to the version committed
    assert _state(ours) == _state(theirs)
    txn = lance.dataset(ours).get_transactions(1)[0]
    assert type(txn.operation).__name__ == "Rewrite"


def test_tasks_committed_in_parts_and_in_any_order(tmp_path):
    ours, theirs = _twins(tmp_path)
    plan = Compaction.plan(lancelot.dataset(ours), OPTS)
    pplan = PyCompaction.plan(lance.dataset(theirs), OPTS)
    done = [t.execute(lancelot.dataset(ours)) for t in plan.tasks]
    pdone = [t.execute(lance.dataset(theirs)) for t in pplan.tasks]
    for results, commit, uri in ((done, Compaction.commit, ours), (pdone, PyCompaction.commit, theirs)):
        commit(LIB[uri == ours].dataset(uri), results[1:][::-1])  # the later tasks first, last to first
        commit(LIB[uri == ours].dataset(uri), results[:1])  # then the first, onto a newer version
    assert _state(ours) == _state(theirs)
    # a result committed again: its fragments are gone (pylance's retryable conflict, an OSError)
    for results, commit, uri in ((done, Compaction.commit, ours), (pdone, PyCompaction.commit, theirs)):
        with pytest.raises(OSError, match="(?i)conflict"):
            commit(LIB[uri == ours].dataset(uri), results[:1])


LIB = {True: lancelot, False: lance}


def test_commit_nothing_makes_no_version(tmp_path):
    ours, _ = _twins(tmp_path)
    ds = lancelot.dataset(ours)
    m = Compaction.commit(ds, [])
    assert (m.fragments_removed, m.fragments_added) == (0, 0)
    assert lance.dataset(ours).version == 2
    nothing = {"target_rows_per_fragment": 10, "materialize_deletions": False}
    assert Compaction.plan(ds, nothing).num_tasks() == PyCompaction.plan(lance.dataset(ours), nothing).num_tasks() == 0


def test_task_reads_its_version_after_an_append(tmp_path):
    """A worker given a newer dataset reads the plan's version; the commit rebases over the append."""
    ours, theirs = _twins(tmp_path)
    plan, pplan = Compaction.plan(lancelot.dataset(ours), OPTS), PyCompaction.plan(lance.dataset(theirs), OPTS)
    more = pa.table({"i": np.arange(3000, 3100), "s": [f"v{i}" for i in range(3000, 3100)]})
    lance.write_dataset(more, ours, mode="append")
    lance.write_dataset(more, theirs, mode="append")
    ds, pds = lancelot.dataset(ours), lance.dataset(theirs)
    Compaction.commit(ds, [t.execute(ds) for t in plan.tasks])
    PyCompaction.commit(pds, [t.execute(pds) for t in pplan.tasks])
    assert _state(ours) == _state(theirs)


def test_json_moves_between_the_libraries(tmp_path):
    """A plan's JSON is pylance's: a pylance worker runs a lancelot task and the other way round."""
    ours, _ = _twins(tmp_path)
    ds, pds = lancelot.dataset(ours), lance.dataset(ours)
    plan = Compaction.plan(ds, OPTS)
    pplan = PyCompaction.plan(pds, OPTS)
    assert CompactionPlan.from_json(pplan.json()) == plan
    assert _task_ids(PyPlan.from_json(plan.json())) == _task_ids(plan)
    theirs_done = PyTask.from_json(plan.tasks[0].json()).execute(pds)  # pylance worker, lancelot task
    ours_done = CompactionTask.from_json(pplan.tasks[1].json()).execute(ds)  # lancelot worker, pylance task
    rest = [t.execute(ds) for t in plan.tasks[2:]]
    m = Compaction.commit(ds, [RewriteResult.from_json(theirs_done.json()), ours_done, *rest])
    PyResult.from_json(ours_done.json())  # pylance reads lancelot's result
    assert m.fragments_removed == sum(len(t.fragments) for t in plan.tasks)
    got = lance.dataset(ours)
    assert sorted(got.to_table().column("i").to_pylist()) == [i for i in range(3000) if i % 7]
    assert len(got.get_fragments()) == sum(len(r.new_fragments) for r in [theirs_done, ours_done, *rest])


def test_plan_repr_pickle_and_task_fragments(tmp_path):
    ours, _ = _twins(tmp_path, delete=None)
    ds = lancelot.dataset(ours)
    frags = ds.get_fragments()
    plan = Compaction.plan(ds, {"target_rows_per_fragment": 400, "num_threads": 1})
    assert repr(plan) == repr(PyCompaction.plan(lance.dataset(ours), {"target_rows_per_fragment": 400}))
    assert plan.tasks[0].fragments == [f.metadata for f in frags[0:2]]
    assert pickle.loads(pickle.dumps(plan)) == plan
    result = plan.tasks[0].execute(ds)
    assert pickle.loads(pickle.dumps(result)) == result
    assert [f.num_rows for f in result.new_fragments] == [400]
    assert result.original_fragments == plan.tasks[0].fragments
    assert lance.dataset(ours).version == 1  # nothing committed by execute


def test_indexed_dataset_distributed(tmp_path):
    """A BTREE index stays right through lancelot's distributed compaction, as through pylance's."""
    ours, theirs = _twins(tmp_path)
    for uri in (ours, theirs):
        lance.dataset(uri).create_scalar_index("i", "BTREE")
    ds = lancelot.dataset(ours)
    plan = Compaction.plan(ds, OPTS)
    Compaction.commit(ds, [pickle.loads(pickle.dumps(t)).execute(lancelot.dataset(ours)) for t in plan.tasks])
    lance.dataset(theirs).optimize.compact_files(**OPTS)
    assert _state(ours) == _state(theirs)
    for uri in (ours, theirs):
        got = lance.dataset(uri).to_table(filter="i >= 1500 AND i < 1520").column("i").to_pylist()
        assert got == [i for i in range(1500, 1520) if i % 7]


def test_stable_row_ids_distributed(tmp_path):
    """Row ids and their versions survive a distributed compaction as they survive pylance's."""
    got = []
    for lib, compaction, name in ((lancelot, Compaction, "ours"), (lance, PyCompaction, "theirs")):
        uri = str(tmp_path / name)
        lance.write_dataset(pa.table({"a": range(1000)}), uri, max_rows_per_file=100, enable_stable_row_ids=True)
        lance.dataset(uri).delete("a % 3 = 0")
        lance.dataset(uri).update({"a": "a + 1000"}, where="a < 50")
        ds = lib.dataset(uri)
        tasks = [pickle.loads(pickle.dumps(t)) for t in compaction.plan(ds, {"target_rows_per_fragment": 300}).tasks]
        compaction.commit(ds, [t.execute(lib.dataset(uri)) for t in tasks])
        cols = ["a", "_rowid", "_row_created_at_version", "_row_last_updated_at_version"]
        got.append((_state(uri)[:3], lance.dataset(uri).to_table(columns=cols).to_pydict()))
    assert got[0] == got[1]
