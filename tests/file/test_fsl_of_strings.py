"""Fixed-size lists of strings under lists and structs: one leaf column of all-null pages.

pylance 14 stores a fixed-size list of strings / binary only when every value is null, as one leaf
whose levels count the lists (not their items); lancelot's writer does the same. Both libraries must
read what either wrote, nested under lists and structs too."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lancelot

lance_file = pytest.importorskip("lance.file", reason="pylance (the test oracle) is not installed")

FSL = pa.list_(pa.string(), 3)
CASES = {
    "top": (FSL, [None, None, None]),
    "list": (pa.list_(FSL), [None, [], [None], [None, None]]),
    "large_list_of_lists": (pa.large_list(pa.large_list(FSL)), [None, [None, [None]], [], [[]], [[None, None]]]),
    "struct": (pa.struct([("g", FSL), ("n", pa.int32())]), [None, {"g": None, "n": 1}, {"g": None, "n": 2}]),
    "binary_in_list": (pa.list_(pa.list_(pa.binary(), 2)), [[None], None, [None, None, None]]),
}


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("writer", ["pylance", "lancelot"])
def test_all_null_fixed_size_lists_of_strings_read_by_both(tmp_path, writer, case, version):
    t, values = CASES[case]
    table = pa.table({"c": pa.array(values, t), "i": pa.array(range(len(values)), pa.int64())})
    path = str(tmp_path / "f.lance")
    if writer == "pylance":
        if (case, version) == ("struct", "2.3"):  # pylance 14 panics writing null structs over it at 2.3
            with pytest.raises(BaseException, match="compute_stat should only be called once"):
                with lance_file.LanceFileWriter(path, table.schema, version=version) as w:
                    w.write_batch(table)
            return
        with lance_file.LanceFileWriter(path, table.schema, version=version) as w:
            w.write_batch(table)
    else:
        lancelot.write_table(table, path, version=version)
    assert lance_file.LanceFileReader(path).read_all().to_table().equals(table)
    f = lancelot.LanceFile(path)
    assert f.read().equals(table)
    assert f.take([len(values) - 1, 0]).equals(table.take([len(values) - 1, 0]))
    assert f.read_range(1, len(values)).equals(table.slice(1))
