"""``lancelot inspect DATASET``."""

from __future__ import annotations

import io

import lance
import pyarrow as pa
import pyarrow.compute as pc

import lancelot
from lancelot.cli import main


def _inspect(path: str) -> str:
    """``lancelot inspect PATH``'s report, written to a stream of the test's own: in the whole suite
    in one process, ``sys.stdout`` (captured by ``capsys`` or ``redirect_stdout``) was twice found
    swapped back by then, and the report reached another stream."""
    out = io.StringIO()
    assert main(["inspect", path], out=out) == 0
    return out.getvalue()


def test_inspect_dataset(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(
        pa.table({"a": list(range(10)), "st": [{"x": i} for i in range(10)]}), uri, data_storage_version="2.1"
    )
    lancelot.write_dataset(pa.table({"a": [10, 11], "st": [{"x": 1}, {"x": 2}]}), uri, mode="append")
    lancelot.dataset(uri).delete(pc.field("a") < 3)
    out = _inspect(uri)
    assert "version 3 (of 1..3" in out
    assert "data storage version 2.1" in out
    for line in (
        "overwrite",
        "append",
        "delete",
        "fragments: 2, 9 rows (3 deleted)",
        "3 deleted (_deletions/0-2-",
        "x: int64  (id 2)",
        "v2.1",
        "fields [0, 2]",
        "written by lancelot",
    ):
        assert line in out, line


def test_inspect_file_still_works(tmp_path):
    p = str(tmp_path / "f.lance")
    lancelot.write_table(pa.table({"a": [1, 2]}), p)
    assert "dataset" not in _inspect(p).splitlines()[0]
