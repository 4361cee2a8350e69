"""Arrow dictionary fields keep their dictionary as pylance keeps it, entries no row uses included.

A dictionary page re-encoded from its values would drop the entries no row uses; pylance keeps them.
Each file, ours and pylance's, must read back (with either reader) exactly the dictionary and indices
pylance reads from its own file.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import lancelot
from tests.support.conformance import write_pylance
from tests.support.crosscheck import write_lancelot

lance_file = pytest.importorskip("lance.file", reason="pylance (the test oracle) is not installed")


def _dict(indices, items, index_type=None):
    return pa.DictionaryArray.from_arrays(pa.array(indices, index_type or pa.int32()), pa.array(items))


SHARED = _dict([0, 0, 1, None, 1], ["p", "q", "r"])

CASES = {
    "unused entry": [_dict([0, 0, 1, 1], ["foo", "bar", "baz"])],
    "unused first entries": [_dict([2, 2, 3], ["a", "b", "c", "d"], pa.int8())],
    "null rows and a null entry": [_dict([2, None, 2, 0], ["foo", "bar", "baz", None], pa.int8())],
    "integer items": [_dict([1, 1, None], [10, 20, 30], pa.int16())],
    "reversed use": [_dict([1, 0, 1], ["x", "y", "unused"], pa.uint8())],
    "batches with differing dictionaries": [
        _dict([0, 1, 1], ["a", "b", "z"], pa.int8()),
        _dict([1, 0], ["a", "c"], pa.int8()),
    ],
    "equal dictionaries built apart": [_dict([0, 0], ["p", "q", "r"]), _dict([1, None], ["p", "q", "r"])],
    "batches sharing one dictionary": [SHARED.slice(0, 2), SHARED.slice(2, 3)],
}


def _single(col: pa.ChunkedArray) -> pa.DictionaryArray:
    assert col.num_chunks == 1, f"expected one page, read {col.num_chunks} chunks"
    return col.chunk(0)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("name", list(CASES))
def test_dictionary_kept_like_pylance(tmp_path, version, name):
    arrays = CASES[name]
    table = pa.Table.from_batches([pa.record_batch([a], names=["d"]) for a in arrays])
    sizes = [len(a) for a in arrays]
    ours = write_lancelot(tmp_path / "ours.lance", table, version, sizes)
    theirs = write_pylance(tmp_path / "theirs.lance", table, version, sizes, data_cache_bytes=None, max_page_bytes=None)
    expected = _single(lance_file.LanceFileReader(theirs).read_all().to_table().column(0))
    assert expected.to_pylist() == table.column(0).to_pylist()
    for who, path in (("ours", ours), ("pylance's", theirs)):
        for reader, got in (
            ("pylance", lance_file.LanceFileReader(path).read_all().to_table().column(0)),
            ("lancelot", lancelot.read_table(path).column(0)),
        ):
            got = _single(got)
            assert got.dictionary.equals(expected.dictionary), (who, reader, got.dictionary, expected.dictionary)
            assert got.indices.equals(expected.indices), (who, reader, got.indices, expected.indices)
