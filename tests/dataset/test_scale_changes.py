"""Dataset changes on datasets of many small fragments (issue 36) against pylance 14.0.2: update,
delete, merge_insert, add / drop columns and compaction read and join small fragments by groups of
``SCAN_ROWS`` rows, not one by one.  The groups are made small here too (a few fragments each, so a
group boundary falls inside every operation), on datasets with deleted rows in most fragments, with
and without stable row ids; each operation runs on twins, one per library, and every version must
read alike."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset import changes, column_files, compact_rewrite, merge_join
from tests.dataset.helpers import assert_twins, table


def _source(ids: np.ndarray) -> pa.Table:
    """Rows of ``table``'s schema with these ids (changed values)."""
    t = table(len(ids))
    t = t.set_column(0, "id", pa.array(ids.astype(np.int64)))
    return t.set_column(2, "x", pa.array(ids * 0.25 + 3))


#: name -> the same call on either library's dataset
OPS = {
    "update_all": lambda ds: ds.update({"x": "x + 1"}, where="id % 5 = 0"),
    "update_every_row": lambda ds: ds.update({"s": "'u'"}),
    "delete_all": lambda ds: ds.delete("id % 5 = 1"),
    "merge_spread": lambda ds: (
        ds.merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(_source(np.r_[np.arange(0, 300, 13), np.arange(1000, 1010)]))
    ),
    "merge_one": lambda ds: (
        ds.merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(_source(np.arange(40, 50)))
    ),
    "merge_by_source": lambda ds: (
        ds.merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_by_source_delete("id % 7 = 2")
        .execute(_source(np.arange(0, 300, 11)))
    ),
    "merge_by_source_all": lambda ds: (
        ds.merge_insert("id").when_not_matched_by_source_delete().execute(_source(np.arange(5, 300, 3)))
    ),
    "merge_two_keys": lambda ds: (
        ds.merge_insert(["id", "x"])
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(table(300).slice(20, 200))
    ),
    "add_columns": lambda ds: ds.add_columns({"y": "x * 2 + id"}),
    # the second one on fragments of two data files (read one by one), the third of no column
    "add_columns_thrice": lambda ds: (
        ds.add_columns({"y": "x * 2 + id"}),
        ds.add_columns({"z": "y - 1", "w": "concat(s, 'w')"}),
        ds.add_columns({"c": "7"}),
    ),
    "drop_columns": lambda ds: ds.drop_columns(["s"]),
    "alter_columns": lambda ds: ds.alter_columns({"path": "s", "name": "t"}),
    "compact": lambda ds: (lambda m: (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added))(
        ds.optimize.compact_files(target_rows_per_fragment=64)
    ),
}


@pytest.fixture(params=[False, True], ids=["plain", "stable"])
def twins(request, tmp_path) -> tuple[str, str, bool]:
    """30 fragments of 10 rows written by pylance, rows deleted from most of them, twice; whether
    they have stable row ids."""
    paths = []
    for who in ("theirs", "ours"):
        p = str(tmp_path / who)
        lance.write_dataset(table(300), p, max_rows_per_file=10, enable_stable_row_ids=request.param)
        lance.dataset(p).delete("id % 9 = 4")
        paths.append(p)
    return paths[0], paths[1], request.param


@pytest.mark.parametrize("scan_rows", [1 << 20, 35], ids=["one-group", "groups"])
@pytest.mark.parametrize("op", list(OPS))
def test_change_of_many_fragments(twins, op, scan_rows, monkeypatch):
    for mod in (changes, merge_join, compact_rewrite, column_files):
        monkeypatch.setattr(mod, "SCAN_ROWS", scan_rows)
    theirs, ours, stable = twins
    want = OPS[op](lance.dataset(theirs))
    got = OPS[op](lancelot.dataset(ours))
    if isinstance(want, dict):
        assert {k: got[k] for k in want} == want
    else:
        assert got == want
    assert_twins(theirs, ours, row_ids=stable)
    assert len(lance.dataset(ours).get_fragments()) == len(lance.dataset(theirs).get_fragments())
