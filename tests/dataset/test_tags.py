"""Tags (``ds.tags``) checked against pylance 14.0.2 in both directions: tags lancelot writes are
read by pylance, tags pylance writes are read by lancelot, on datasets either library wrote.  The
reference's test_tag is ported in test_versions_ported.py (run with each library); its
test_tag_order is here."""

import json

import lance
import pyarrow as pa
import pytest

import lancelot

TABLE = pa.table({"colA": [1, 2, 3], "colB": [4, 5, 6]})


@pytest.fixture(params=["lancelot", "lance"])
def two_versions(request, tmp_path):
    """A dataset of two versions written by either library; returns (uri, writer module)."""
    mod = lancelot if request.param == "lancelot" else lance
    uri = str(tmp_path / "test")
    mod.write_dataset(TABLE, uri)
    mod.write_dataset(TABLE, uri, mode="append")
    return uri


def test_tags_pylance_writes_are_read(two_versions):
    uri = two_versions
    theirs = lance.dataset(uri)
    theirs.tags.create("from-pylance", 2)
    theirs.tags.create("old", 1)
    theirs.tags.update("old", 2)
    ours = lancelot.dataset(uri)
    assert ours.tags.list() == lance.dataset(uri).tags.list()
    assert ours.tags.get_version("old") == 2
    assert (
        lancelot.dataset(uri, version="from-pylance").to_table().equals(lance.dataset(uri, "from-pylance").to_table())
    )
    ours.tags.delete("old")
    assert sorted(lance.dataset(uri).tags.list()) == ["from-pylance"]


def test_tag_file_layout_matches_pylance(tmp_path):
    """Both write ``_refs/tags/<name>.json`` with the same keys and value types."""
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    lancelot.write_dataset(TABLE, a)
    lance.write_dataset(TABLE, b)
    lancelot.dataset(a).tags.create("t", 1)
    lance.dataset(b).tags.create("t", 1)
    mine = json.loads((tmp_path / "a" / "_refs" / "tags" / "t.json").read_text())
    theirs = json.loads((tmp_path / "b" / "_refs" / "tags" / "t.json").read_text())
    assert list(mine) == list(theirs)
    assert {k: type(v) for k, v in mine.items()} == {k: type(v) for k, v in theirs.items()}
    assert mine["version"] == theirs["version"] == 1 and mine["branch"] is None
    assert mine["createdAt"].endswith("Z") and len(mine["createdAt"]) == len(theirs["createdAt"])
    assert (
        mine["manifestSize"]
        == (tmp_path / "a" / "_versions")
        .joinpath(next(p.name for p in (tmp_path / "a" / "_versions").iterdir() if p.name.endswith(".manifest")))
        .stat()
        .st_size
    )


def test_tag_order(two_versions):
    """Reference test_tag_order: list_ordered sorts by version, newest first unless order='asc'."""
    uri = two_versions
    lancelot.write_dataset(TABLE, uri, mode="append")
    ds = lancelot.dataset(uri)
    expected = {"tag3": 3, "tag2": 2, "tag1": 1}
    for name, version in expected.items():
        ds.tags.create(name, version)
    asc = ds.tags.list_ordered(order="asc")
    assert [t[0] for t in asc] == sorted(expected)
    desc = ds.tags.list_ordered(order="desc")
    assert [t[0] for t in desc] == list(expected)
    assert ds.tags.list_ordered() == desc
    assert [t[0] for t in lance.dataset(uri).tags.list_ordered()] == [t[0] for t in desc]
    ds.tags.update("tag1", 2)  # a tag lancelot moves, on a dataset either library wrote: pylance follows it
    assert lance.dataset(uri, "tag1").version == 2


@pytest.mark.parametrize("name", ["", "../ref", "a/b", ".dot", "dot.", "a..b", "x.lock", "sp ace"])
def test_invalid_tag_names_refused_as_pylance(tmp_path, name):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(TABLE, uri)
    with pytest.raises(OSError, match="Ref"):
        lance.dataset(uri).tags.create(name, 1)
    with pytest.raises(OSError) as e:  # pylance's class; a ValueError too (a bad argument)
        lancelot.dataset(uri).tags.create(name, 1)
    assert isinstance(e.value, ValueError)
    assert not (tmp_path / "ds" / "_refs").exists() or not list((tmp_path / "ds" / "_refs").rglob("*.json"))


def test_tag_without_reference_names_the_latest(tmp_path):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(TABLE, uri)
    lancelot.write_dataset(TABLE, uri, mode="append")
    ds = lancelot.dataset(uri)
    ds.tags.create("latest")  # no reference: the latest version
    assert lance.dataset(uri).tags.get_version("latest") == 2
