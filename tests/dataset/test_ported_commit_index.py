"""The reference's test_commit_index.py and test_session.py (python/python/tests/, lancedb/lance), re-expressed: an
index built by one library, its files copied to a twin dataset and committed there with ``LanceOperation.CreateIndex``
of an ``Index`` value by either library, and sessions' cache sizes and sharing."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelot

LIBS = [lance, lancelot]
IDS = ["pylance", "lancelot"]


def _table() -> pa.Table:
    n = 300
    return pa.table({"price": [i / 3 for i in range(n)], "meta": [f"m{i % 37:03d}" for i in range(n)], "id": range(n)})


@pytest.mark.parametrize("builder", LIBS, ids=IDS)
@pytest.mark.parametrize("committer", LIBS, ids=IDS)
def test_commit_index(tmp_path, builder, committer) -> None:
    """A BTREE index's files copied into a dataset without it, then committed with a CreateIndex of an ``Index``
    (fragment ids given as a set): both datasets list the same index and pylance's plan uses it on both."""
    with_index = builder.write_dataset(_table(), str(tmp_path / "with"))
    with_index.create_scalar_index("meta", index_type="BTREE")
    index_id = lance.dataset(str(tmp_path / "with")).describe_indices()[0].segments[0].uuid
    without = committer.write_dataset(_table(), str(tmp_path / "without"))
    shutil.copytree(Path(tmp_path / "with" / "_indices" / index_id), Path(tmp_path / "without" / "_indices" / index_id))
    fields = lance.dataset(str(tmp_path / "without")).lance_schema.fields()
    field_id = next(f.id() for f in fields if f.name() == "meta")
    index_cls = sys.modules["lance.dataset"].Index if committer is lance else lancelot.Index
    index = index_cls(
        uuid=index_id,
        name="meta_idx",
        fields=[field_id],
        dataset_version=without.version,
        fragment_ids={f.fragment_id for f in without.get_fragments()},
        index_version=0,
    )
    op = committer.LanceOperation.CreateIndex(new_indices=[index], removed_indices=[])
    committed = committer.LanceDataset.commit(without.uri, op, read_version=without.version)
    assert committed.version == 2
    listed = []
    for uri in (str(tmp_path / "with"), str(tmp_path / "without")):
        for reader in LIBS:
            (desc,) = reader.dataset(uri).describe_indices()
            seg = desc.segments[0]
            listed.append((desc.name, tuple(desc.field_names), seg.uuid, tuple(seg.fragment_ids)))
        plan = lance.dataset(uri).scanner(fast_search=True, prefilter=True, filter="meta = 'hello'").explain_plan()
        assert "ScalarIndexQuery: query=[meta = hello]@meta_idx" in plan
        assert lance.dataset(uri).count_rows("meta = 'm005'") == lancelot.dataset(uri).count_rows("meta = 'm005'") == 8
    assert len(set(listed)) == 1


@pytest.mark.parametrize("lib", LIBS, ids=IDS)
def test_read_transaction_index_values(tmp_path, lib) -> None:
    """``read_transaction`` of a CreateIndex gives ``Index`` values with pylance's fields and types, whichever library
    built the index."""
    p = str(tmp_path / "d")
    ds = lib.write_dataset(_table(), p, max_rows_per_file=100)
    ds.create_scalar_index("id", index_type="BTREE")
    theirs = lance.dataset(p).read_transaction(2).operation.new_indices[0]
    ours = lancelot.dataset(p).read_transaction(2).operation.new_indices[0]
    assert type(ours).__name__ == "Index"
    names = ("uuid", "name", "fields", "dataset_version", "index_version", "created_at", "base_id", "index_details")
    for name in names:
        assert getattr(ours, name) == getattr(theirs, name), name
    assert set(ours.fragment_ids) == set(theirs.fragment_ids) == {0, 1, 2}
    assert [(f.path, f.size_bytes) for f in ours.files] == [(f.path, f.size_bytes) for f in theirs.files]


@pytest.mark.parametrize("lib", LIBS, ids=IDS)
def test_cache_size_bytes(tmp_path, lib) -> None:
    """A scan grows the session's cache."""
    lib.write_dataset(pa.table({"a": range(1000)}), str(tmp_path / "d"), max_rows_per_file=250)
    ds = lib.dataset(str(tmp_path / "d"))
    initial = ds.session().size_bytes()
    ds.scanner().to_table()
    assert ds.session().size_bytes() > initial


@pytest.mark.parametrize("lib", LIBS, ids=IDS)
def test_share_session(tmp_path, lib) -> None:
    """A dataset opened with another's session shares it: the same session, the same size, the same rows."""
    data = pa.table({"a": range(1000)})
    ds1 = lib.write_dataset(data, str(tmp_path / "d"), max_rows_per_file=250)
    assert ds1.to_table() == data
    ds2 = lib.dataset(str(tmp_path / "d"), session=ds1.session())
    assert ds1.session().is_same_as(ds2.session())
    assert ds1.session().size_bytes() == ds2.session().size_bytes()
    assert ds1.to_table() == ds2.to_table()


@pytest.mark.parametrize("committer", LIBS, ids=IDS)
def test_commit_index_keeps_its_files(tmp_path, committer) -> None:
    """An ``Index`` committed with its ``files`` (path and size) keeps them in the manifest, as pylance does."""
    built = lance.write_dataset(_table(), str(tmp_path / "with"))
    built.create_scalar_index("id", index_type="BTREE")
    source = lance.dataset(str(tmp_path / "with")).read_transaction(2).operation.new_indices[0]
    assert source.files
    without = committer.write_dataset(_table(), str(tmp_path / "without"))
    shutil.copytree(tmp_path / "with" / "_indices" / source.uuid, tmp_path / "without" / "_indices" / source.uuid)
    mod = sys.modules["lance.dataset"] if committer is lance else lancelot
    files = [mod.IndexFile(path=f.path, size_bytes=f.size_bytes) for f in source.files]
    index = mod.Index(
        uuid=source.uuid,
        name=source.name,
        fields=source.fields,
        dataset_version=without.version,
        fragment_ids={f.fragment_id for f in without.get_fragments()},
        index_version=source.index_version,
        files=files,
    )
    op = committer.LanceOperation.CreateIndex(new_indices=[index], removed_indices=[])
    committer.LanceDataset.commit(without.uri, op, read_version=without.version)
    for reader in LIBS:
        kept = reader.dataset(str(tmp_path / "without")).read_transaction(2).operation.new_indices[0].files
        assert [(f.path, f.size_bytes) for f in kept] == [(f.path, f.size_bytes) for f in source.files]
    assert lance.dataset(str(tmp_path / "without")).count_rows("id = 7") == 1
