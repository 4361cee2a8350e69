"""Fragment descriptions as pylance's ``FragmentMetadata.to_json()`` dict (both libraries'
drivers commit either's workers' fragments) and ``LanceFragment.delete`` (a distributed delete)."""

from __future__ import annotations

import json

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset import FragmentMetadata


@pytest.fixture
def stable(tmp_path) -> str:
    """Fragments with deletion files, stable row ids and row versions, written by pylance."""
    p = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"a": list(range(10))}), p, max_rows_per_file=4, enable_stable_row_ids=True)
    lance.dataset(p).delete("a = 1")
    lance.dataset(p).update({"a": "a + 100"}, where="a = 5")
    return p


def test_to_json_is_pylance_s(stable):
    for f in lance.dataset(stable).get_fragments():
        theirs = f.metadata.to_json()
        ours = lancelot.dataset(stable).get_fragment(f.fragment_id).metadata
        assert ours.to_json() == theirs
        assert FragmentMetadata.from_json(json.dumps(theirs)).to_json() == theirs  # text or dict
        assert FragmentMetadata.from_json(theirs) == ours


def test_fragment_delete_committed_by_pylance(tmp_path):
    p = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"a": list(range(10))}), p, max_rows_per_file=4)
    frags = lancelot.dataset(p).get_fragments()
    assert frags[0].delete("a > 100") == frags[0].metadata  # nothing matched: unchanged
    assert frags[2].delete("a >= 8") is None  # every row: the fragment goes
    kept = frags[0].delete("a % 2 = 0")
    assert kept is not None and kept.to_json()["deletion_file"]["num_deleted_rows"] == 2
    assert lance.dataset(p).version == 1  # nothing committed yet
    theirs = lance.fragment.FragmentMetadata.from_json(json.dumps(kept.to_json()))
    lance.LanceDataset.commit(p, lance.LanceOperation.Delete([theirs], [2], "a % 2 = 0 OR a >= 8"), read_version=1)
    expected = [1, 3, 4, 5, 6, 7]
    assert lance.dataset(p).to_table()["a"].to_pylist() == expected
    assert lancelot.dataset(p).to_table()["a"].to_pylist() == expected
