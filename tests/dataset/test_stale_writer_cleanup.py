"""A stale writer: a dataset object opened at version 1 changes the dataset after other writers committed versions 2
and 3 and a cleanup removed every version but the latest, their transactions with them.  pylance checks only the
transactions still there and goes ahead; lancelot, same data and same calls, must end with pylance's rows and version
numbers, and never lose another writer's change: where pylance's delete or update overwrites a fragment another
writer changed in a removed version (it brings that writer's deleted rows back), lancelot ends as pylance does
when nothing was cleaned up."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelot


def _t(a: int, b: int, v: float = 0.0) -> pa.Table:
    return pa.table({"id": pa.array(range(a, b), pa.int64()), "v": pa.array([float(i) + v for i in range(a, b)])})


OPS: dict[str, Callable[[Any], object]] = {
    "delete": lambda ds: ds.delete("id = 3"),
    "delete_many": lambda ds: ds.delete("id >= 4 and id <= 16"),
    "insert": lambda ds: ds.insert(_t(100, 102)),
    "update": lambda ds: ds.update({"v": "v + 1000"}, "id = 4"),
    "merge_insert": lambda ds: (
        ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(_t(8, 12, -100.0))
    ),
    "merge_insert_new_keys": lambda ds: ds.merge_insert("id").when_not_matched_insert_all().execute(_t(30, 33)),
    "create_scalar_index": lambda ds: ds.create_scalar_index("id", "BTREE"),
}

#: what the other writers commit after the stale object opened version 1 (versions 2 and 3)
OTHERS: dict[str, Callable[[str], object]] = {
    "append_then_delete_elsewhere": lambda uri: (
        lance.write_dataset(_t(10, 20), uri, mode="append"),
        lance.dataset(uri).delete("id = 15"),
    ),
    "delete_same_fragment_then_append": lambda uri: (
        lance.dataset(uri).delete("id = 5"),
        lance.write_dataset(_t(10, 20), uri, mode="append"),
    ),
}


def _scenario(uri: str, lib: Any, op: str, others: str, cleanup: bool) -> tuple[object, ...]:
    lance.write_dataset(_t(0, 10), uri)
    stale = lib.dataset(uri)
    OTHERS[others](uri)
    if cleanup:
        lance.dataset(uri).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
        assert [v["version"] for v in lance.dataset(uri).versions()] == [3]
    OPS[op](stale)
    assert stale.version == 4
    ds = lance.dataset(uri)
    lance.dataset(uri).validate()
    indices = [(d.name, sorted(f for s in d.segments for f in s.fragment_ids)) for d in ds.describe_indices()]
    return ds.version, sorted(zip(ds.to_table()["id"].to_pylist(), ds.to_table()["v"].to_pylist())), indices


@pytest.mark.parametrize("op", list(OPS))
def test_stale_writer_after_cleanup_as_pylance(tmp_path: Path, op: str) -> None:
    others = "append_then_delete_elsewhere"  # (nothing of the stale writer's fragments changed meanwhile)
    want = _scenario(str(tmp_path / "theirs"), lance, op, others, cleanup=True)
    got = _scenario(str(tmp_path / "ours"), lancelot, op, others, cleanup=True)
    assert got == want
    assert want == _scenario(str(tmp_path / "kept"), lance, op, others, cleanup=False)


@pytest.mark.parametrize("op", list(OPS))
def test_stale_writer_after_cleanup_keeps_other_writers_changes(tmp_path: Path, op: str) -> None:
    others = "delete_same_fragment_then_append"  # (a version cleaned up deleted a row of the stale writer's fragment)
    want = _scenario(str(tmp_path / "kept"), lance, op, others, cleanup=False)
    got = _scenario(str(tmp_path / "ours"), lancelot, op, others, cleanup=True)
    assert got == want
    assert 5 not in [i for i, _ in got[1]]  # type: ignore[attr-defined]
