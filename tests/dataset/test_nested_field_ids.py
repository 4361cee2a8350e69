"""Nested fields dropped or renamed (metadata-only changes): data files keep the old struct,
and every read matches the dataset's fields to the file's by id, as pylance does."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from tests.dataset.helpers import VERSIONS

N = 600


def _data() -> pa.Table:
    i = np.arange(N)
    st = pa.StructArray.from_arrays(
        [pa.array(i), pa.array([f"b{k}" for k in i]), pa.array((N - i) * 0.5)],
        names=["a", "b", "c"],
    )
    ls = pa.array([[{"p": int(k), "q": int(k) * 2}] if k % 4 else None for k in i])
    return pa.table({"id": i, "st": st, "ls": ls})


def _changes(mod, uri: str) -> None:
    """Drop st.b, then swap the names of st.a and st.c (through a temporary name)."""
    mod.dataset(uri).drop_columns(["st.b"])
    mod.dataset(uri).alter_columns({"path": "st.c", "name": "tmp"})
    mod.dataset(uri).alter_columns({"path": "st.a", "name": "c"})
    mod.dataset(uri).alter_columns({"path": "st.tmp", "name": "a"})


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("who", ["pylance", "lancelot"])
def test_reads_after_nested_drop_and_rename(tmp_path, version, who):
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    for p in (theirs, ours):
        lance.write_dataset(_data(), p, data_storage_version=version, max_rows_per_file=250)
    _changes(lance, theirs)
    _changes(lance if who == "pylance" else lancelot, ours)
    lt, lo = lance.dataset(theirs), lancelot.dataset(ours)
    assert lo.schema == lt.schema
    assert lo.version == lt.version
    for kw in [{}, {"columns": ["st.c", "id"]}, {"filter": "st.c > 400"}, {"filter": "st.a < 20", "columns": ["st"]}]:
        assert lo.to_table(**kw) == lt.to_table(**kw), kw
    assert lo.take([3, 299, 598]) == lt.take([3, 299, 598])
    lance.dataset(ours).validate()
    assert lance.dataset(ours).to_table() == lt.to_table()


def test_dropping_the_last_child_drops_the_struct(tmp_path):
    """pylance removes a struct left without fields (``m.x`` the only child of ``m``)."""
    t = pa.table({"id": [1, 2], "m": pa.array([{"x": {"y": 1}}, {"x": {"y": 2}}]), "k": [3, 4]})
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    for p in (theirs, ours):
        lance.write_dataset(t, p)
    lance.dataset(theirs).drop_columns(["m.x"])
    lancelot.dataset(ours).drop_columns(["m.x"])
    assert (
        lance.dataset(ours).schema == lance.dataset(theirs).schema == pa.schema([("id", pa.int64()), ("k", pa.int64())])
    )
    assert lancelot.dataset(ours).to_table() == lance.dataset(theirs).to_table()
