"""The fragment API (``LanceFragment``) with pylance 14.0.2 as the oracle, both writers: the reference's
test_fragment.py (test_scan_fragment, test_scan_fragment_with_dynamic_projection, test_fragment_count_rows,
test_fragment_metadata_pickle) ported; ``to_table``'s positional order, ``to_batches``, ``count_rows``' errors,
``delete_rows``, ``delete`` (a distributed delete), ``validate``, ``create_from_file`` and ``FragmentMetadata``'s JSON
(pylance's ``to_json()`` dict), each fragment written by one library and committed by the other."""

import json
import os
import pickle
import shutil

import lance
import lance.fragment
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.dataset import FragmentMetadata
from lancelot.sql.errors import CountFilterError
from tests.dataset.helpers import copies


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


def test_fragment_to_table_positional_and_to_batches(two_fragments: str) -> None:
    ft, fo = lance.dataset(two_fragments).get_fragments()[0], lancelot.dataset(two_fragments).get_fragments()[0]
    # pylance's positional order: columns, filter, limit, offset, with_row_id, with_row_address, blob_handling...
    args = (["id"], "id > 0", 2, 1, True, False, None, None, True, 1 << 20, True, None, None, None)
    assert fo.to_table(*args).equals(ft.to_table(*args))
    kw = dict(columns=["s"], batch_size=2, use_scalar_index=True, late_materialization=False, strict_batch_size=True)
    want, got = list(ft.to_batches(**kw)), list(fo.to_batches(**kw))
    assert [b.to_pydict() for b in got] == [b.to_pydict() for b in want] and len(got) == 2
    for frag in (ft, fo):
        with pytest.raises(TypeError):
            frag.to_batches(["id"])  # keyword-only, as pylance's


@pytest.mark.parametrize("bad", ["nope > 1", "id >>> 3", "s > 3"])
def test_fragment_count_rows_bad_filter_is_oserror(two_fragments: str, bad: str) -> None:
    with pytest.raises(OSError):
        lance.dataset(two_fragments).get_fragments()[0].count_rows(bad)
    with pytest.raises(CountFilterError) as e:
        lancelot.dataset(two_fragments).get_fragments()[0].count_rows(bad)
    assert isinstance(e.value, OSError) and isinstance(e.value, ValueError)
    assert lancelot.dataset(two_fragments).get_fragments()[0].count_rows("id > 0") == 2


def test_fragment_delete_rows_both_directions(two_fragments: str, tmp_path) -> None:
    theirs, ours = copies(two_fragments, tmp_path)
    for offsets in ([0, 2, 2], [1], []):  # row 1 of fragment 0 is deleted already
        want = lance.dataset(theirs).get_fragments()[0].delete_rows(offsets).to_json()
        got = lancelot.dataset(ours).get_fragments()[0].delete_rows(iter(offsets)).to_json()
        for j in (want, got):
            j["deletion_file"].pop("id")
        assert got == want
    assert lancelot.dataset(ours).get_fragments()[1].delete_rows([3, 0, 1, 2]) is None  # every row
    for lib in (lance, lancelot):
        frag = lib.dataset(ours).get_fragments()[0]
        with pytest.raises(ValueError):
            frag.delete_rows([4])
        with pytest.raises(OverflowError):
            frag.delete_rows([-1])
    # each commits the other's: lancelot's metadata by pylance, pylance's by lancelot
    mine = lancelot.dataset(ours).get_fragments()[0].delete_rows([3])
    op = lance.LanceOperation.Delete([lance.fragment.FragmentMetadata.from_json(json.dumps(mine.to_json()))], [], "x")
    lance.LanceDataset.commit(ours, op, read_version=2)
    yours = lance.dataset(theirs).get_fragments()[0].delete_rows([3])
    op2 = lancelot.LanceOperation.Delete([lancelot.FragmentMetadata.from_json(yours.to_json())], [], "x")
    lancelot.LanceDataset.commit(theirs, op2, read_version=2)
    for p in (ours, theirs):
        assert lance.dataset(p).to_table()["id"].to_pylist() == [0, 2, 4, 5, 6, 7]
        assert lancelot.dataset(p).to_table()["id"].to_pylist() == [0, 2, 4, 5, 6, 7]


def test_fragment_validate_like_pylance(two_fragments: str, tmp_path) -> None:
    p = str(tmp_path / "v")
    shutil.copytree(two_fragments, p)
    assert [f.validate() for f in lancelot.dataset(p).get_fragments()] == [None, None]
    for sub in ("_deletions", "data"):  # fragment 0's deletion file, then every data file, gone
        for name in os.listdir(os.path.join(p, sub)):
            os.remove(os.path.join(p, sub, name))
        for lib in (lance, lancelot):
            with pytest.raises(OSError):
                lib.dataset(p).get_fragments()[0].validate()


def test_fragment_create_from_file_both_directions(two_fragments: str, tmp_path) -> None:
    name = lance.dataset(two_fragments).get_fragments()[1].data_files()[0].path
    want = lance.LanceFragment.create_from_file(name, lance.dataset(two_fragments), 7).to_json()
    got = lancelot.LanceFragment.create_from_file(name, lancelot.dataset(two_fragments), 7).to_json()
    assert got == want and want["files"][0]["file_size_bytes"] is None  # the size is not recorded
    for bad in ("nope.lance", f"data/{name}"):
        for lib in (lance, lancelot):
            with pytest.raises(OSError):
                lib.LanceFragment.create_from_file(bad, lib.dataset(two_fragments), 3)
    # a fragment recovered by lancelot, committed by pylance; and the other way
    theirs, ours = copies(two_fragments, tmp_path)
    for lib, other, p in ((lancelot, lance, ours), (lance, lancelot, theirs)):
        frag = lib.LanceFragment.create_from_file(name, lib.dataset(p), 0)
        meta = other.FragmentMetadata.from_json(json.dumps(frag.to_json()))
        other.LanceDataset.commit(p, other.LanceOperation.Overwrite(lance.dataset(p).schema, [meta]), read_version=2)
        assert lancelot.dataset(p).to_table() == lance.dataset(p).to_table()
        assert lance.dataset(p).to_table()["id"].to_pylist() == [4, 5, 6, 7]


@pytest.mark.parametrize("lib", [lance, lancelot], ids=["pylance", "lancelot"])
def test_create_from_file_appends_and_rewrites(tmp_path, lib) -> None:
    """The reference's flow (test_fragment.py): files written outside the dataset become fragments by Append, then
    replace them by Rewrite; the files by the other library's writer, the fragments by ``lib``, commits by pylance."""
    from lance.file import LanceFileWriter

    data = pa.table({"a": range(50), "b": range(50)})
    p = str(tmp_path / "d")
    lance.write_dataset([], p, schema=data.schema, data_storage_version="2.2")
    os.makedirs(os.path.join(p, "data"), exist_ok=True)  # (an empty dataset has no data directory yet)

    def write(name: str, t: pa.Table) -> str:
        if lib is lance:
            with lancelot.LanceWriter(os.path.join(p, "data", name), t.schema, version="2.2") as w:
                w.write(t)
        else:
            with LanceFileWriter(os.path.join(p, "data", name)) as w:
                w.write_batch(t)
        return name

    def meta(name: str) -> lance.fragment.FragmentMetadata:
        frag = lib.LanceFragment.create_from_file(name, lib.dataset(p), 0)
        return lance.fragment.FragmentMetadata.from_json(json.dumps(frag.to_json()))

    for i, name in enumerate(["one.lance", "two.lance"]):
        write(name, data)
        ds = lance.LanceDataset.commit(p, lance.LanceOperation.Append([meta(name)]), read_version=i + 1)
        assert [f.fragment_id for f in ds.get_fragments()] == list(range(i + 1))
    write("all.lance", lance.dataset(p).to_table())
    group = lance.LanceOperation.RewriteGroup([f.metadata for f in ds.get_fragments()], [meta("all.lance")])
    ds = lance.LanceDataset.commit(p, lance.LanceOperation.Rewrite([group], []), read_version=3)
    assert [f.fragment_id for f in ds.get_fragments()] == [2]
    assert lancelot.dataset(p).to_table() == ds.to_table() and ds.count_rows() == 100
    write("reordered.lance", data.select(["b", "a"]))
    with pytest.raises(OSError):  # the dataset's fields, in its order
        lib.LanceFragment.create_from_file("reordered.lance", lib.dataset(p), 0)


@pytest.fixture
def stable_ids(tmp_path) -> str:
    """Fragments with deletion files, stable row ids and row versions, written by pylance."""
    p = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"a": list(range(10))}), p, max_rows_per_file=4, enable_stable_row_ids=True)
    lance.dataset(p).delete("a = 1")
    lance.dataset(p).update({"a": "a + 100"}, where="a = 5")
    return p


def test_to_json_is_pylance_s(stable_ids):
    for f in lance.dataset(stable_ids).get_fragments():
        theirs = f.metadata.to_json()
        ours = lancelot.dataset(stable_ids).get_fragment(f.fragment_id).metadata
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
