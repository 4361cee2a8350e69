"""Compaction of an indexed dataset while another writer (pylance) replaces an index: the Rewrite
conflicts with the CreateIndex that covers fragments it rewrites (a retryable conflict, as pylance
rules it); lancelot plans the compaction again on the latest version and commits it, and the index
that wins is the replacement (never the old one brought back), valid for pylance's index queries."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset import compact
from lancelot.dataset.commit import RetryableCommitConflictError

lance = pytest.importorskip("lance")

FILTERS = ["id = 5", "id = 57", "id > 150", "id < 20", "cat = 'c1'"]


def _build(path: str, stable: bool) -> None:
    for s in range(0, 200, 40):
        t = pa.table({"id": np.arange(s, s + 40), "cat": [f"c{i % 4}" for i in range(s, s + 40)]})
        lance.write_dataset(t, path, mode="append", enable_stable_row_ids=stable)
    ds = lance.dataset(path)
    ds.delete("id % 9 = 2")
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")


def _replace_during_rewrite(monkeypatch: pytest.MonkeyPatch, path: str, times: int = 1) -> list[int]:
    """Make pylance replace the ``id`` index just before each of the first ``times`` Rewrite commits."""
    real = compact.commit_transaction
    done: list[int] = []

    def commit(store, uri, txn, build, **kw):  # type: ignore[no-untyped-def]
        if txn.WhichOneof("operation") == "rewrite" and len(done) < times:
            lance.dataset(path).create_scalar_index("id", "BTREE", replace=True)
            done.append(lance.dataset(path).version)
        return real(store, uri, txn, build, **kw)

    monkeypatch.setattr(compact, "commit_transaction", commit)
    return done


def _check(path: str, twin: str) -> None:
    mine, theirs = lance.dataset(path), lance.dataset(twin)
    mine.validate()
    names = {i["name"]: i for i in mine.list_indices()}
    assert sorted(names) == sorted(i["name"] for i in theirs.list_indices())
    live = {f.fragment_id for f in mine.get_fragments()}
    for i in mine.list_indices():
        assert set(i["fragment_ids"]) == live, i["name"]  # every fragment covered after the remap
    for f in FILTERS:
        want = theirs.to_table(filter=f).sort_by("id")
        assert mine.to_table(filter=f).sort_by("id") == want, f
        assert mine.to_table(filter=f, use_scalar_index=False).sort_by("id") == want, f
        assert lancelot.dataset(path).to_table(filter=f).sort_by("id") == want, f
    assert mine.count_rows() == theirs.count_rows() == lancelot.dataset(path).count_rows()


@pytest.mark.parametrize("stable", [False, True])
def test_compaction_replans_after_index_replacement(tmp_path, monkeypatch, stable) -> None:
    path, twin = str(tmp_path / "ours"), str(tmp_path / "twin")
    _build(path, stable)
    _build(twin, stable)
    before = {i["name"]: i["uuid"] for i in lance.dataset(path).list_indices()}
    replaced_at = _replace_during_rewrite(monkeypatch, path)
    metrics = lancelot.dataset(path).compact_files(target_rows_per_fragment=100)
    assert replaced_at and metrics.fragments_removed == 5
    after = lance.dataset(path)
    uuids = {i["name"]: i["uuid"] for i in after.list_indices()}
    # the replacement survived: the id index is neither the old one nor missing; its transaction
    # is in the history, followed by the re-planned compaction
    replaced = lance.dataset(path, version=replaced_at[0])
    new_id = next(i["uuid"] for i in replaced.list_indices() if i["name"] == "id_idx")
    assert new_id != before["id_idx"]
    # (pylance 14.0.2's get_transactions fails on any Rewrite with rewritten indices: lancelot's reads them)
    ops = [type(t.operation).__name__ for t in lancelot.dataset(path).get_transactions(4) if t is not None]
    assert ops[0] == "Rewrite" and "CreateIndex" in ops
    assert uuids["id_idx"] != before["id_idx"]
    rewrite = lancelot.dataset(path).read_transaction(after.version).operation
    assert new_id in {r.old_id for r in rewrite.rewritten_indices}  # the replacement was remapped
    assert before["id_idx"] not in {r.old_id for r in rewrite.rewritten_indices}
    # pylance's twin: the index replaced, then compacted
    lance.dataset(twin).create_scalar_index("id", "BTREE", replace=True)
    lance.dataset(twin).optimize.compact_files(target_rows_per_fragment=100)
    _check(path, twin)


def test_compaction_gives_up_after_repeated_index_replacements(tmp_path, monkeypatch) -> None:
    """A writer replacing the index before every attempt: the compaction stops after its attempts
    with a retryable commit conflict, having committed no Rewrite; the dataset stays valid."""
    path = str(tmp_path / "ours")
    _build(path, False)
    _replace_during_rewrite(monkeypatch, path, times=compact.COMPACTION_ATTEMPTS)
    with pytest.raises(RetryableCommitConflictError, match="CreateIndex"):
        lancelot.dataset(path).compact_files(target_rows_per_fragment=100)
    ds = lance.dataset(path)
    ds.validate()
    history = lancelot.dataset(path).get_transactions(20)
    assert all(type(t.operation).__name__ != "Rewrite" for t in history if t is not None)
    assert ds.count_rows() == ds.count_rows(filter="id >= 0") == 200 - len([i for i in range(200) if i % 9 == 2])
    assert ds.to_table(filter="id = 57").num_rows == 1
