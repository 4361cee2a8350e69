"""Files written alike (a dataset's small fragments) share their parsed metadata and the point
readers of their columns (format/container.py, encodings/structural/field.py): each file still
reads its own rows, equal to pylance's, and a damaged copy is still refused."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

from lancelot.errors import CorruptFileError
from lancelot.reader import LanceFile

ROWS = [0, 3, 50, 99]


def _write(path, seed: int, version: str) -> str:
    rng = np.random.default_rng(seed)
    table = pa.table(
        {
            "x": rng.random(100),  # plain doubles: the same bytes of metadata in every file
            "s": pa.array(rng.choice(["ab", "cd", "ef"], 100)),  # a page dictionary
            "t": pa.array([f"{v:06d}" for v in rng.integers(0, 10**6, 100)]),
        }
    )
    w = LanceFileWriter(str(path), table.schema, version=version)
    w.write_batch(table)
    w.close()
    return str(path)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_files_written_alike_take_their_own_rows(tmp_path, version):
    paths = [_write(tmp_path / f"{k}.lance", k, version) for k in range(3)]
    files = [LanceFile(p) for p in paths]
    for lf, p in zip(files, paths):
        for rows in (ROWS, [7]):
            assert lf.take(rows).equals(LanceFileReader(p).take_rows(rows).to_table()), p
        assert lf.explain_take([1])["x"] == ["points/ColumnPoints"]
    # the doubles' metadata and point reader are the first file's (the shared path ran)
    assert files[1].columns["x"][0].meta is files[0].columns["x"][0].meta
    assert files[2]._readers["x"]._points is files[0]._readers["x"]._points


@pytest.mark.parametrize("column", ["x", "t"])
def test_damaged_copy_of_a_file_written_alike_is_refused(tmp_path, column):
    good = LanceFile(_write(tmp_path / "a.lance", 1, "2.1"))
    good.take(ROWS)  # its point readers are kept for the files of the same metadata and search bytes
    data = bytearray(open(good.path, "rb").read())
    chunk = good.columns[column][0].meta.pages[0].buffer_offsets[1]
    data[chunk + 2 : chunk + 4] = b"\xff\xff"  # the column's chunk header: a buffer size past the chunk
    bad_path = tmp_path / "b.lance"
    bad_path.write_bytes(bytes(data))
    bad = LanceFile(bad_path)
    with pytest.raises(CorruptFileError):
        bad.take(ROWS, columns=[column])
    assert bad._readers[column]._points is good._readers[column]._points  # (the shared path ran)
