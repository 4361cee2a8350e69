"""A dataset object moved on by a commit (``delete``, ``update``, ``add_columns``, ``alter_columns``, ``restore``)
shows the new version whole, as pylance's does: its own options kept (default scan options), nothing built for the old
version reused (fragments, schema, file column maps: dataset/snapshot.py)."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancelot

OPTIONS = {"with_row_id": True}


def _moved(lib, path, op: str):
    lib.write_dataset(pa.table({"id": list(range(10)), "x": [float(i) for i in range(10)]}), path)
    ds = lib.dataset(path, default_scan_options=OPTIONS)
    ds.to_table()  # (the old version's fragments, schema and file column maps built)
    if op == "delete":
        ds.delete("id < 3")
    elif op == "update":
        ds.update({"x": "x + 1"}, where="id > 5")
    elif op == "add_columns":
        ds.add_columns({"y": "id * 2"})
    elif op == "alter_columns":
        ds.alter_columns({"path": "x", "name": "z"})
    else:
        ds.delete("id < 3")
        ds = lib.dataset(path, version=1, default_scan_options=OPTIONS)
        ds.to_table()
        ds.restore()
    return ds


@pytest.mark.parametrize("op", ["delete", "update", "add_columns", "alter_columns", "restore"])
def test_a_moved_dataset_is_the_new_version_with_its_options(tmp_path, op):
    ours, theirs = _moved(lancelot, tmp_path / "ours", op), _moved(lance, tmp_path / "theirs", op)
    assert ours.version == theirs.version
    assert ours.schema == theirs.schema  # (the default scan options' schema: _rowid kept)
    assert ours.count_rows() == theirs.count_rows()
    assert ours.to_table().to_pydict() == theirs.to_table().to_pydict()
    assert [f.fragment_id for f in ours.get_fragments()] == [f.fragment_id for f in theirs.get_fragments()]
