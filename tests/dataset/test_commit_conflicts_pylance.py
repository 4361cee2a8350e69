"""Conflicts of two-phase commits, lancelot against pylance: an operation planned at version 1
(a merge_insert's Update, a fragment-level Delete, a Project, an Append...), another one committed
by pylance meanwhile, then the first committed by lancelot on one dataset and by pylance on a twin.
Both must agree: committed (with the same rows and schema), a retryable conflict, or an
incompatible one. Where pylance 14.0.2 differs from the reference's conflict table (Project against
Append and Update, Overwrite against Overwrite, a fragment-level Delete over a delete of the same
fragment), pylance is followed."""

from __future__ import annotations

import warnings
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lance.schema import LanceSchema as PylanceSchema

import lancelot
from lancelot.dataset import LanceDataset, LanceSchema
from lancelot.dataset.commit import CommitConflictError, RetryableCommitConflictError


def _t(lo: int = 0, n: int = 30) -> pa.Table:
    return pa.table({"id": pa.array(range(lo, lo + n), pa.int64()), "x": [float(i) for i in range(lo, lo + n)]})


def _plan(kind: str, mod: Any, p: str) -> tuple[Any, int | None]:
    """(transaction or operation, read version) planned by ``mod`` at the dataset's version 1."""
    ds = mod.dataset(p)
    ops = mod.LanceOperation
    if kind == "mi_same":
        src = pa.table({"id": pa.array([1, 2], pa.int64()), "x": [9.0, 9.0]})
        return ds.merge_insert("id").when_matched_update_all().execute_uncommitted(src)[0], None
    if kind == "mi_insert":
        src = pa.table({"id": pa.array([100], pa.int64()), "x": [9.0]})
        return ds.merge_insert("id").when_not_matched_insert_all().execute_uncommitted(src)[0], None
    if kind == "delete":
        return ops.Delete([ds.get_fragments()[0].delete("id = 3")], [], "id = 3"), 1
    if kind == "append":
        return ops.Append([mod.LanceFragment.create(p, _t(200, 5))]), 1
    if kind == "merge":
        frags, schema = [], None
        for f in ds.get_fragments():
            m, schema = f.merge_columns(lambda b: pa.record_batch([pc.multiply(b["id"], 2)], ["y"]), ["id"])
            frags.append(m)
        return ops.Merge(frags, schema), 1
    if kind == "project":
        schema_cls = PylanceSchema if mod is lance else LanceSchema
        return ops.Project(schema_cls.from_pyarrow(pa.schema([("id", pa.int64())]))), 1
    if kind == "config":
        return ops.UpdateConfig(config_updates=ops.UpdateMap({"k": "v"})), 1
    raise AssertionError(kind)


def _other(kind: str, p: str) -> None:
    ds = lance.dataset(p)
    if kind == "append":
        lance.write_dataset(_t(300, 5), p, mode="append")
    elif kind == "delete_same":
        ds.delete("id = 4")
    elif kind == "delete_other":
        ds.delete("id = 24")
    elif kind == "update_same":
        ds.update({"x": "x + 1"}, "id = 5")
    elif kind == "add_columns":
        ds.add_columns({"z": "id + 1"})
    elif kind == "drop_columns":
        ds.drop_columns(["x"])
    elif kind == "config":
        ds.update_config({"k": "w"})
    elif kind == "overwrite":
        lance.write_dataset(_t(600, 5), p, mode="overwrite")
    elif kind == "compact":
        ds.optimize.compact_files(target_rows_per_fragment=100)
    else:
        raise AssertionError(kind)


def _outcome(mod: Any, p: str, plan: str, other: str) -> tuple[Any, ...]:
    lance.write_dataset(_t(), p, max_rows_per_file=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        c, read_version = _plan(plan, mod, p)
    _other(other, p)
    cls = lance.LanceDataset if mod is lance else LanceDataset
    try:
        cls.commit(p, c, read_version=read_version) if read_version else cls.commit(p, c)
    except (OSError, CommitConflictError) as e:
        text = str(e)
        if isinstance(e, RetryableCommitConflictError) or "etryable" in text:
            return ("retryable",)
        assert isinstance(e, CommitConflictError) or "ncompatible" in text, text
        return ("incompatible",)
    t = lance.dataset(p).to_table()
    assert lancelot.dataset(p).to_table().sort_by("id") == t.sort_by("id")
    lance.dataset(p).validate()
    return ("ok", lance.dataset(p).version, t.num_rows, t.schema.names)


PAIRS = [
    ("mi_same", "delete_same"),
    ("mi_same", "delete_other"),
    ("mi_same", "update_same"),
    ("mi_same", "add_columns"),
    ("mi_same", "drop_columns"),
    ("mi_same", "compact"),
    ("mi_same", "overwrite"),
    ("mi_insert", "update_same"),
    ("delete", "delete_same"),
    ("delete", "delete_other"),
    ("delete", "compact"),
    ("append", "drop_columns"),
    ("append", "overwrite"),
    ("merge", "append"),
    ("merge", "config"),
    ("project", "append"),
    ("project", "update_same"),
    ("project", "delete_same"),
    ("project", "add_columns"),
    ("config", "config"),
    ("config", "append"),
]


@pytest.mark.parametrize(("plan", "other"), PAIRS)
def test_two_phase_commit_conflicts_as_pylance(tmp_path, plan: str, other: str) -> None:
    theirs = _outcome(lance, str(tmp_path / "theirs"), plan, other)
    ours = _outcome(lancelot, str(tmp_path / "ours"), plan, other)
    assert ours == theirs
