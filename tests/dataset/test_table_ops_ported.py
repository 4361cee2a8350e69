"""The reference's python/python/tests/test_table_ops.py (lancedb/lance: a DataReplacement against a
BTREE index built concurrently), ported: each test runs the same code with pylance and with lancelot
(``lib``), pylance the oracle; what lancelot commits is read back by pylance. The data files are
written by each library's own file writer and described by pylance's ``DataFile`` (lancelot's
LanceOperation takes it; it has no DataFile class of its own)."""

from __future__ import annotations

import uuid

import lance
import lance.file
import pyarrow as pa
import pytest
from lance.fragment import DataFile

import lancelot
from tests.dataset.helpers import LIBS


def make_data_file(lib: str, ds, fields: list[int], data: pa.Table) -> DataFile:
    name = f"{uuid.uuid4()}.lance"
    path = f"{ds.uri}/data/{name}"
    stable = lance.file.stable_version()
    if lib == "pylance":
        with lance.file.LanceFileWriter(path) as writer:
            writer.write_batch(data)
    else:
        lancelot.write_table(data, path, version=stable)
    major, minor = (int(p) for p in stable.split("."))
    return DataFile(
        path=name,
        fields=fields,
        column_indices=list(range(len(fields))),
        file_major_version=major,
        file_minor_version=minor,
    )


def _replace(mod, ds, data_file: DataFile, read_version: int):
    op = mod.LanceOperation.DataReplacement([mod.LanceOperation.DataReplacementGroup(0, data_file)])
    return ds.commit(ds.uri, op, read_version=read_version)


@pytest.mark.parametrize("lib", LIBS)
def test_index_after_replacement(tmp_path, lib) -> None:
    """An index on a column a replacement did not touch commits over it; one on the replaced column is
    a retryable conflict; from a later read version it commits."""
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.Table.from_pydict({"a": range(100)}), tmp_path)
    ds.add_columns({"b": "a + 1"})
    ds2, ds3 = mod.dataset(tmp_path), mod.dataset(tmp_path)
    _replace(mod, ds, make_data_file(lib, ds, [1], pa.table({"b": range(100, 200)})), ds.version)
    ds2.create_scalar_index("a", "BTREE")
    with pytest.raises(Exception, match="Retryable commit conflict for version 3"):
        ds3.create_scalar_index("b", "BTREE")
    mod.dataset(tmp_path).create_scalar_index("b", "BTREE")
    theirs = lance.dataset(tmp_path)
    assert len(theirs.describe_indices()) == 2
    assert theirs.to_table(filter="b >= 150").num_rows == 50
    theirs.validate()


@pytest.mark.parametrize("lib", LIBS)
def test_replacement_after_index(tmp_path, lib) -> None:
    """A replacement of a column no index covers commits over the index; of an indexed one, a
    retryable conflict."""
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.Table.from_pydict({"a": range(100)}), tmp_path)
    ds.add_columns({"b": "a + 1"})
    ds2, ds3 = mod.dataset(tmp_path), mod.dataset(tmp_path)
    ds.create_scalar_index("a", "BTREE")
    _replace(mod, ds2, make_data_file(lib, ds, [1], pa.table({"b": range(100, 200)})), ds2.version)
    with pytest.raises(Exception, match="Retryable commit conflict for version 3"):
        _replace(mod, ds3, make_data_file(lib, ds, [0], pa.table({"a": range(100, 200)})), ds3.version)
    theirs = lance.dataset(tmp_path)
    assert theirs.to_table() == pa.table({"a": range(100), "b": range(100, 200)})
    theirs.validate()
