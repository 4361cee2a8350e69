"""Children of null structs, written by lancelot, read by pylance one leaf at a time.

pylance pushes a struct's nulls down into its children's layers (Arrow's flattened validity) and
reads a child projected alone (``columns=["s.i"]``, a filter on ``s.i``) through them: a file
that declared the child's layer all-valid gave pylance the placeholder values of the null rows.
"""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

import lancelot

INNER = pa.StructArray.from_arrays([pa.array([1, 2, 3, 4])], names=["i"])
CASES = {
    "struct": pa.table(
        {
            "s": pa.StructArray.from_arrays(
                [pa.array([10, 40, 50, 60])], names=["i"], mask=pa.array([False, True, False, True])
            )
        }
    ),
    "nested": pa.table(
        {
            "s": pa.StructArray.from_arrays(
                [INNER, pa.array([5, 6, 7, 8])], names=["in", "j"], mask=pa.array([False, True, False, False])
            )
        }
    ),
    "list_of_struct": pa.table({"l": pa.array([[{"i": 1}, None], [{"i": 3}], [None], [{"i": 4}]])}),
}
LEAVES = {"struct": ["s.i"], "nested": ["s.in.i", "s.j"], "list_of_struct": ["l"]}


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("case", list(CASES))
def test_pylance_projects_children_of_null_structs(tmp_path, version, case):
    t = CASES[case]
    ours, theirs = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    lancelot.write_table(t, ours, version=version)
    with LanceFileWriter(theirs, version=version) as w:
        w.write_batch(t)
    for leaf in LEAVES[case]:
        expected = LanceFileReader(theirs, columns=[leaf]).read_all().to_table()
        assert LanceFileReader(ours, columns=[leaf]).read_all().to_table() == expected, leaf


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_pylance_filters_on_children_of_null_structs(tmp_path, version):
    t = CASES["nested"].append_column("id", pa.array([0, 1, 2, 3]))
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lancelot.write_dataset(t, ours, data_storage_version=version)
    lance.write_dataset(t, theirs, data_storage_version=version)
    for f in ["s.j > 5", "s.in.i IS NULL", "s.in.i >= 2"]:
        assert lance.dataset(ours).to_table(filter=f) == lance.dataset(theirs).to_table(filter=f), f
