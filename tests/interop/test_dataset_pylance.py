"""Datasets against pylance 14.0.2, both directions, at data storage versions 2.0, 2.1, 2.2."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot

VERSIONS = ["2.0", "2.1", "2.2"]


def _table(n: int, start: int = 0, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed + start)
    a = np.arange(start, start + n, dtype=np.int64)
    s = pa.array([None if i % 11 == 3 else f"s{i * 7 % 13}" for i in a], pa.string())
    st = pa.StructArray.from_arrays([pa.array(a.astype(np.int32)), pa.array(rng.random(n))], ["x", "y"])
    lst = pa.array([[int(i)] * (int(i) % 4) if i % 9 else None for i in a], pa.list_(pa.int32()))
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 2).astype(np.float32)), 2)
    return pa.table({"a": a, "s": s, "st": st, "l": lst, "v": vec})


def _assert_same(uri: str, version: int) -> None:
    """lancelot and pylance agree on one version: scan, count, projection, filter, take."""
    ours, theirs = lancelot.dataset(uri, version=version), lance.dataset(uri, version=version)
    expected = theirs.to_table()
    assert ours.schema == theirs.schema
    assert ours.count_rows() == theirs.count_rows() == expected.num_rows
    assert ours.to_table().equals(expected), f"version {version}"
    cols = ["s", "a"]
    assert ours.to_table(columns=cols).equals(theirs.to_table(columns=cols))
    flt = (pc.field("a") > 40) & (pc.field("a") < 260)
    assert ours.to_table(filter=flt).equals(theirs.to_table(filter=flt))
    assert ours.count_rows(filter=flt) == theirs.count_rows(filter=flt)
    if expected.num_rows:
        idx = np.array([expected.num_rows - 1, 0, 3, 3, expected.num_rows // 2])
        idx = idx[idx < expected.num_rows]
        assert ours.take(idx).equals(theirs.take(idx))
        assert ours.take(idx, columns=["st"]).equals(theirs.take(idx, columns=["st"]))


def _assert_all_versions(uri: str) -> None:
    for v in lance.dataset(uri).versions():
        _assert_same(uri, v["version"])


@pytest.mark.parametrize("stable", [False, True], ids=["rowaddr", "stable_row_ids"])
@pytest.mark.parametrize("version", VERSIONS)
def test_pylance_writes_lancelot_reads(tmp_path, version, stable):
    uri = str(tmp_path / "ds")
    lance.write_dataset(
        _table(250), uri, data_storage_version=version, max_rows_per_file=100, enable_stable_row_ids=stable
    )
    lance.write_dataset(_table(60, 250), uri, mode="append")
    ds = lance.dataset(uri)
    ds.delete("a % 5 = 0 OR a = 101")
    ds = lance.dataset(uri)
    ds.add_columns({"b": "a * 2"})  # every fragment gets a second data file
    ds = lance.dataset(uri)
    ds.delete("b < 30")
    frag_files = [len(f.metadata.files) for f in lance.dataset(uri).get_fragments()]
    assert frag_files and all(n == 2 for n in frag_files)
    _assert_all_versions(uri)
    ours = lancelot.dataset(uri)
    assert ours.to_table(columns=["b"]).equals(lance.dataset(uri).to_table(columns=["b"]))
    lance.write_dataset(_table(30, 1000), uri, mode="overwrite")
    _assert_all_versions(uri)


@pytest.mark.parametrize("version", VERSIONS)
def test_lancelot_writes_pylance_reads_alternating(tmp_path, version):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(_table(250), uri, data_storage_version=version, max_rows_per_file=100)
    lancelot.write_dataset(_table(60, 250), uri, mode="append")
    lancelot.dataset(uri).delete((pc.field("a") < 7) | (pc.field("a") == 120))
    lance.dataset(uri).validate()
    _assert_all_versions(uri)
    assert lance.dataset(uri).data_storage_version == version
    # pylance continues on lancelot's dataset ...
    lance.write_dataset(_table(40, 400), uri, mode="append")
    lance.dataset(uri).delete("a >= 410 AND a < 420")
    lance.dataset(uri).validate()
    # ... and lancelot after pylance
    ds = lancelot.write_dataset(_table(20, 600), uri, mode="append")
    ds = ds.delete(pc.field("a") == 605)
    assert [f.fragment_id for f in ds.get_fragments()] == list(range(len(ds.get_fragments())))
    lance.dataset(uri).validate()
    _assert_all_versions(uri)
    ds = lancelot.write_dataset(_table(10, 900), uri, mode="overwrite")
    lance.dataset(uri).validate()
    assert lance.dataset(uri).to_table().equals(_table(10, 900))
    _assert_all_versions(uri)
    assert {
        f.metadata.files[0].file_major_version * 10 + f.metadata.files[0].file_minor_version
        for f in lance.dataset(uri).get_fragments()
    } == {int(version.replace(".", ""))}


def test_large_deletions_use_bitmaps_both_ways(tmp_path):
    uri = str(tmp_path / "ds")
    t = pa.table({"a": np.arange(12000, dtype=np.int64)})
    lancelot.write_dataset(t, uri, max_rows_per_file=7000)
    ds = lancelot.dataset(uri).delete(pc.field("a") < 6000)  # 6000 rows of fragment 0: the .bin form
    names = {p.suffix for p in (tmp_path / "ds" / "_deletions").iterdir()}
    assert names == {".bin"}
    lance.dataset(uri).validate()
    assert lance.dataset(uri).to_table().equals(ds.to_table())
    lance.dataset(uri).delete("a >= 7000 AND a < 7003")  # three rows: pylance's Arrow form
    assert {p.suffix for p in (tmp_path / "ds" / "_deletions").iterdir()} == {".bin", ".arrow"}
    _assert_all_versions_simple(uri)


def _assert_all_versions_simple(uri):
    for v in lance.dataset(uri).versions():
        ours, theirs = lancelot.dataset(uri, version=v["version"]), lance.dataset(uri, version=v["version"])
        assert ours.to_table().equals(theirs.to_table())
        assert ours.count_rows() == theirs.count_rows()


def test_lancelot_appends_to_stable_row_ids(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(50), uri, enable_stable_row_ids=True, data_storage_version="2.1")
    lancelot.write_dataset(_table(30, 50), uri, mode="append")
    lance.write_dataset(_table(20, 80), uri, mode="append")
    ds = lance.dataset(uri)
    ds.validate()
    rowids = ds.to_table(columns=["a"], with_row_id=True).column("_rowid").to_pylist()
    assert rowids == list(range(100))
    lancelot.dataset(uri).delete(pc.field("a") < 3)
    lancelot.write_dataset(_table(5, 100), uri, mode="append")
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.to_table(columns=["a"], with_row_id=True).column("_rowid").to_pylist() == list(range(3, 105))
    _assert_all_versions(uri)
    lancelot.write_dataset(_table(2, 500), uri, mode="overwrite")
    lance.write_dataset(_table(1, 600), uri, mode="append")
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.to_table(columns=["a"], with_row_id=True).column("_rowid").to_pylist() == [105, 106, 107]


def test_empty_dataset(tmp_path):
    uri = str(tmp_path / "ds")
    ds = lancelot.write_dataset(pa.table({"a": pa.array([], pa.int64())}), uri)
    assert ds.count_rows() == 0 and ds.to_table().num_rows == 0 and ds.get_fragments() == []
    lance.dataset(uri).validate()
    lancelot.write_dataset(pa.table({"a": [1]}), uri, mode="append")
    assert lance.dataset(uri).to_table().to_pydict() == {"a": [1]}


def test_config_metadata_and_indices_carried_over(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(100), uri)
    ds = lance.dataset(uri)
    ds.update_config({"lancelot.test": "yes"})
    ds = lance.dataset(uri)
    ds.create_scalar_index("a", "BTREE")
    lancelot.write_dataset(_table(10, 100), uri, mode="append")
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.config()["lancelot.test"] == "yes"
    assert [i.name for i in ds.describe_indices()] == ["a_idx"]
    assert ds.to_table(filter="a = 105").num_rows == 1


def test_append_after_pylance_dropped_a_column(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"a": [1, 2], "b": [3, 4], "c": ["x", "y"]}), uri, data_storage_version="2.1")
    lance.dataset(uri).drop_columns(["b"])  # field ids now 0 and 2
    ds = lancelot.write_dataset(pa.table({"a": [5], "c": ["z"]}), uri, mode="append")
    assert ds.get_fragments()[1].metadata.files[0].fields == [0, 2]
    theirs = lance.dataset(uri)
    theirs.validate()
    assert theirs.to_table().to_pydict() == {"a": [1, 2, 5], "c": ["x", "y", "z"]}
    assert ds.to_table().equals(theirs.to_table())


def test_field_in_no_data_file_reads_as_nulls(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"a": [1, 2]}), uri)
    lance.dataset(uri).add_columns(pa.field("n", pa.string()))  # schema only: no data file holds "n"
    assert [len(f.metadata.files) for f in lance.dataset(uri).get_fragments()] == [1]
    assert lancelot.dataset(uri).to_table().to_pydict() == {"a": [1, 2], "n": [None, None]}
    lancelot.write_dataset(pa.table({"a": [3], "n": ["x"]}), uri, mode="append")
    theirs = lance.dataset(uri)
    theirs.validate()
    assert lancelot.dataset(uri).to_table().equals(theirs.to_table())
    assert lancelot.dataset(uri).take([2, 0], columns=["n"]).to_pydict() == {"n": ["x", None]}


def test_shallow_clone_reads_files_of_a_declared_base_path(tmp_path):
    src, clone = str(tmp_path / "src"), str(tmp_path / "clone")
    lance.write_dataset(pa.table({"a": [1, 2, 3]}), src)
    lance.dataset(src).delete("a = 2")
    ds = lance.dataset(src)
    ds.shallow_clone(clone, ds.version)  # fragments point at src's data and deletion files (base_id)
    assert lancelot.dataset(clone).to_table().to_pydict() == {"a": [1, 3]}
    lancelot.write_dataset(pa.table({"a": [10]}), clone, mode="append")
    lancelot.dataset(clone).delete(pc.field("a") == 3)
    theirs = lance.dataset(clone)
    theirs.validate()
    assert theirs.to_table().to_pydict() == lancelot.dataset(clone).to_table().to_pydict() == {"a": [1, 10]}
    assert lance.dataset(src).to_table().to_pydict() == {"a": [1, 3]}  # the source is untouched


def test_lancelot_creates_stable_row_ids(tmp_path):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(_table(30), uri, enable_stable_row_ids=True, max_rows_per_file=10)
    lance.write_dataset(_table(5, 30), uri, mode="append")
    lancelot.write_dataset(_table(5, 35), uri, mode="append")
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.to_table(columns=["a"], with_row_id=True).column("_rowid").to_pylist() == list(range(40))
    assert lancelot.dataset(uri).manifest.next_row_id == 40


@pytest.mark.parametrize("how", ["write_dataset", "write_fragments+commit"])
def test_overwrite_after_pylance_dropped_a_column(tmp_path, how):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"a": [1, 2], "b": [3, 4], "c": ["x", "y"]}), uri)
    lance.dataset(uri).drop_columns(["b"])  # field ids now 0 and 2
    new = pa.table({"a": [7], "c": ["q"]})
    if how == "write_dataset":
        lancelot.write_dataset(new, uri, mode="overwrite")
    else:
        from lancelot.dataset import commit, write_fragments

        commit(uri, "overwrite", fragments=write_fragments(new, uri), schema=new.schema)
    theirs = lance.dataset(uri)
    theirs.validate()
    assert theirs.to_table().to_pydict() == lancelot.dataset(uri).to_table().to_pydict() == {"a": [7], "c": ["q"]}


def test_pylance_update_rename_compaction(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(
        pa.table({"a": list(range(30)), "s": [str(i) for i in range(30)]}),
        uri,
        max_rows_per_file=10,
        data_storage_version="2.1",
    )
    lance.dataset(uri).update({"s": "'u'"}, where="a < 5")  # deletion files + a new fragment
    lance.dataset(uri).alter_columns({"path": "s", "name": "s2"})  # files still say "s"
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=100)
    _assert_all_versions_simple(uri)
    assert lancelot.dataset(uri).schema.names == ["a", "s2"]
    lancelot.write_dataset(pa.table({"a": [99], "s2": ["z"]}), uri, mode="append")
    lancelot.dataset(uri).delete(pc.field("a") == 7)
    theirs = lance.dataset(uri)
    theirs.validate()
    assert theirs.to_table().equals(lancelot.dataset(uri).to_table())
