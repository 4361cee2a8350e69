"""The fragment API (``LanceFragment``), ported from the reference's test_fragment.py
(test_scan_fragment, test_scan_fragment_with_dynamic_projection, test_fragment_count_rows,
test_fragment_metadata_pickle) with pylance 14.0.2 as the oracle, both writers."""

import pickle

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot


@pytest.fixture(params=["lancelot", "lance"])
def frags(request, tmp_path):
    uri = str(tmp_path / "ds")
    (lancelot if request.param == "lancelot" else lance).write_dataset(
        pa.table({"a": range(800), "b": range(100, 900)}), uri
    )
    return lancelot.dataset(uri).get_fragments()[0], lance.dataset(uri).get_fragments()[0]


def test_scan_fragment(frags):
    ours, theirs = frags
    got = ours.to_table(columns=["b"], filter="a >= 2", offset=20)
    assert got == pa.table({"b": range(122, 900)}) == theirs.to_table(columns=["b"], filter="a >= 2", offset=20)
    got = ours.to_table(columns={"b_proj": "b"}, filter="a >= 2", offset=20)
    assert got == pa.table({"b_proj": range(122, 900)})


def test_fragment_count_rows(frags):
    ours, theirs = frags
    assert ours.count_rows() == theirs.count_rows() == 800
    assert ours.count_rows("a < 200") == theirs.count_rows("a < 200") == 200
    assert ours.count_rows(pc.field("a") < 200) == 200


@pytest.mark.parametrize("stable", [False, True])
def test_fragment_metadata_pickle(tmp_path, stable):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"a": range(100)}), uri, enable_stable_row_ids=stable)
    lance.dataset(uri).delete("a < 50")
    frag = lancelot.dataset(uri).get_fragments()[0]
    meta = frag.metadata
    assert meta.deletion_file is not None
    assert (meta.row_id_meta is not None) == stable
    assert pickle.loads(pickle.dumps(meta)) == meta
    theirs = lance.dataset(uri).get_fragments()[0]
    assert frag.deletion_file() == theirs.deletion_file() and frag.num_deletions == theirs.num_deletions == 50


def test_get_fragments(tmp_path):
    """Reference test_get_fragments: the first fragment's counts, metadata, head, table and take."""
    table = pa.table({"a": range(100), "b": range(100)})
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(table, uri)
    fragment = lancelot.dataset(uri).get_fragments()[0]
    assert fragment.count_rows() == fragment.physical_rows == 100 and fragment.num_deletions == 0
    assert fragment.metadata.id == 0
    assert fragment.head(10) == table.slice(0, 10)
    assert fragment.to_table() == table
    assert fragment.take([18, 20, 33, 53]) == pa.table({"a": [18, 20, 33, 53], "b": [18, 20, 33, 53]})
