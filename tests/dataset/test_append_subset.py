"""Appends that leave out nullable fields (top-level or nested, any order): written as pylance
writes them (data files holding only the given fields), read as nulls by both libraries."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancelot
from tests.dataset.helpers import VERSIONS

BASE = pa.table(
    {
        "a": pa.array([1, 2], pa.int64()),
        "b": ["x", "y"],
        "c": [1.0, 2.0],
        "s": pa.array([{"p": 1, "q": 2}] * 2),
    }
)
APPENDS = [
    pa.table({"a": pa.array([3], pa.int64()), "s": pa.array([{"q": 5}])}),
    pa.table({"c": [4.0]}),
    pa.table({"s": pa.array([{"q": 5, "p": 7}]), "b": ["u"]}),  # out of order at both levels
]


def _files(uri: str) -> list[list[list[int]]]:
    return [[list(d.fields) for d in f.files] for f in lancelot.dataset(uri).manifest.fragments]


@pytest.mark.parametrize("version", VERSIONS)
def test_append_of_some_fields_is_pylance_s(tmp_path, version):
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    for mod, p in ((lance, theirs), (lancelot, ours)):
        lance.write_dataset(BASE, p, data_storage_version=version)
        for t in APPENDS:
            mod.write_dataset(t, p, mode="append")
    expected = lance.dataset(theirs).to_table()
    assert lance.dataset(ours).to_table() == expected
    assert lancelot.dataset(ours).to_table() == expected
    assert _files(ours) == _files(theirs)  # the same field ids in each data file
    lance.dataset(ours).validate()


def test_append_missing_a_non_nullable_field_is_refused(tmp_path):
    uri = str(tmp_path / "ds")
    schema = pa.schema([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.string())])
    lance.write_dataset(pa.Table.from_pydict({"a": [1], "b": ["x"]}, schema=schema), uri)
    with pytest.raises(OSError, match="missing"):
        lance.write_dataset(pa.table({"b": ["y"]}), uri, mode="append")
    with pytest.raises(OSError, match="missing"):
        lancelot.write_dataset(pa.table({"b": ["y"]}), uri, mode="append")
    assert lance.dataset(uri).version == 1
