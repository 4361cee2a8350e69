"""Damaged datasets: a clear LanceError naming dataset, version and fragment; never a wrong answer."""

from __future__ import annotations

import os

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.dataset.deletion import serialize_deletions
from lancelot.dataset.manifest import parse_manifest, serialize_manifest
from lancelot.errors import CorruptFileError, LanceError, LanceFileNotFoundError, UnsupportedVersionError


def _make(tmp_path, deletes: bool = False) -> str:
    uri = str(tmp_path / "ds")
    ds = lancelot.write_dataset(pa.table({"a": np.arange(20, dtype=np.int64)}), uri, max_rows_per_file=10)
    if deletes:
        ds.delete(pc.field("a") == 12)
    return uri


def _manifest_path(uri: str) -> str:
    d = os.path.join(uri, "_versions")
    return os.path.join(d, min(n for n in os.listdir(d) if n.endswith(".manifest")))  # newest (inverted names)


def _rewrite(uri: str, change) -> None:
    p = _manifest_path(uri)
    mf = parse_manifest(open(p, "rb").read(), p)
    change(mf.manifest)
    with open(p, "wb") as f:
        f.write(serialize_manifest(mf.manifest, mf.index_section))


@pytest.mark.parametrize("damage", ["truncate", "magic", "protobuf", "length"])
def test_bad_manifest(tmp_path, damage):
    uri = _make(tmp_path)
    p = _manifest_path(uri)
    data = bytearray(open(p, "rb").read())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "magic":
        data[-1] ^= 0xFF
    elif damage == "protobuf":
        data[4:12] = b"\xff" * 8
    else:
        data[-16:-8] = (len(data) * 3).to_bytes(8, "little")
    open(p, "wb").write(bytes(data))
    with pytest.raises(LanceError, match=r"dataset .*ds' version 1") as e:
        lancelot.dataset(uri).to_table()
    assert isinstance(e.value, CorruptFileError)


def test_missing_data_file(tmp_path):
    uri = _make(tmp_path)
    ds = lancelot.dataset(uri)
    os.unlink(os.path.join(uri, "data", ds.get_fragments()[1].metadata.files[0].path))
    with pytest.raises(LanceError, match=r"version 1 fragment 1: data file .* is missing"):
        lancelot.dataset(uri).to_table()
    assert lancelot.dataset(uri).get_fragments()[0].read().num_rows == 10  # the other fragment still reads


def test_deletion_file_past_the_fragment(tmp_path):
    uri = _make(tmp_path, deletes=True)
    d = os.path.join(uri, "_deletions")
    (name,) = os.listdir(d)
    _, data = serialize_deletions(np.array([1, 10], dtype=np.uint32))  # the fragment has 10 rows
    open(os.path.join(d, name), "wb").write(data)
    _rewrite(uri, lambda m: setattr(m.fragments[1].deletion_file, "num_deleted_rows", 2))
    with pytest.raises(
        CorruptFileError, match=r"version 2 fragment 1\b.*_deletions/.*marks row 10 but the fragment has 10 rows"
    ):
        lancelot.dataset(uri).to_table()


def test_missing_deletion_file(tmp_path):
    uri = _make(tmp_path, deletes=True)
    d = os.path.join(uri, "_deletions")
    os.unlink(os.path.join(d, os.listdir(d)[0]))
    assert lancelot.dataset(uri).count_rows() == 19  # from the manifest, as pylance counts
    with pytest.raises(LanceFileNotFoundError, match="version 2 fragment 1: deletion file .* is missing"):
        lancelot.dataset(uri).to_table()  # as a missing data file: one class for missing files


def test_deletion_file_without_a_count_is_counted_from_the_file(tmp_path):
    """Older writers leave num_deleted_rows 0: count_rows reads the deletion file instead."""
    uri = _make(tmp_path, deletes=True)
    _rewrite(uri, lambda m: setattr(m.fragments[1].deletion_file, "num_deleted_rows", 0))
    ds = lancelot.dataset(uri)
    assert [f.count_rows() for f in ds.get_fragments()] == [10, 9]
    assert ds.count_rows() == 19 == ds.to_table().num_rows
    assert lancelot.dataset(uri).take([11, 12]).column("a").to_pylist() == [11, 13]  # the deleted 12 is skipped


def test_unknown_reader_flag(tmp_path):
    uri = _make(tmp_path)
    _rewrite(uri, lambda m: setattr(m, "reader_feature_flags", m.reader_feature_flags | (1 << 6)))
    with pytest.raises(UnsupportedVersionError, match=r"version 1: reader feature flag\(s\) unknown flag 64"):
        lancelot.dataset(uri)


@pytest.mark.parametrize(
    "path",
    ["../outside.lance", "/etc/passwd", "s3://bucket/x.lance", "a/../../x.lance", "file:///etc/passwd", "C:/x.lance"],
)
def test_data_file_path_escaping_the_root(tmp_path, path):
    uri = _make(tmp_path)
    (tmp_path / "outside.lance").write_bytes(
        open(os.path.join(uri, "data", os.listdir(os.path.join(uri, "data"))[0]), "rb").read()
    )

    def change(m):
        m.fragments[0].files[0].path = path

    _rewrite(uri, change)
    with pytest.raises(CorruptFileError, match=r"version 1 fragment 0: data file path .* escapes the dataset root"):
        lancelot.dataset(uri).to_table()


def test_deletion_on_unknown_base_refused(tmp_path):
    uri = _make(tmp_path, deletes=True)
    _rewrite(uri, lambda m: setattr(m.fragments[1].deletion_file, "base_id", 3))
    with pytest.raises(CorruptFileError, match="version 2 fragment 1: base path id 3 is not declared"):
        lancelot.dataset(uri).to_table()


def test_old_manifest_names_kept_and_a_misnamed_manifest_refused(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"a": [1, 2]}), uri, enable_v2_manifest_paths=False)
    lancelot.write_dataset(pa.table({"a": [3]}), uri, mode="append")
    assert sorted(os.listdir(os.path.join(uri, "_versions"))) == [
        "1.manifest",
        "2.manifest",
        "latest_version_hint.json",
    ]
    assert lance.dataset(uri).to_table().column("a").to_pylist() == [1, 2, 3]
    os.link(
        os.path.join(uri, "_versions", "2.manifest"),
        os.path.join(uri, "_versions", f"{(1 << 64) - 1 - 3:020d}.manifest"),
    )
    # (a V2 name among V1 names is an interrupted migration, read as such: test_migration_interrupted.py; this one
    # holds another version's manifest)
    with pytest.raises(CorruptFileError, match="holds version 2, its name says 3"):
        lancelot.dataset(uri)


def test_schema_mismatch_and_missing_dataset(tmp_path):
    uri = _make(tmp_path)
    with pytest.raises(LanceError, match="field .a. should have type int64 but the data.s is int32"):
        lancelot.write_dataset(pa.table({"a": pa.array([1], pa.int32())}), uri, mode="append")
    with pytest.raises(LanceError, match="does not exist"):
        lancelot.dataset(str(tmp_path / "nothing"))
    with pytest.raises(LanceError, match="no column named 'zz'"):
        lancelot.dataset(uri).to_table(columns=["zz"])
    with pytest.raises(LanceError, match="out of range"):
        lancelot.dataset(uri).take([20])


def test_undeclared_base_path_refused(tmp_path):
    uri = _make(tmp_path)
    _rewrite(uri, lambda m: setattr(m.fragments[0].files[0], "base_id", 7))
    with pytest.raises(CorruptFileError, match="version 1 fragment 0: base path id 7 is not declared"):
        lancelot.dataset(uri).to_table()


def test_schema_with_a_missing_parent(tmp_path):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"st": [{"x": 1}]}), uri)
    _rewrite(uri, lambda m: setattr(m.fields[1], "parent_id", 99))
    with pytest.raises(CorruptFileError, match="version 1: schema: field 1 names parent 99"):
        lancelot.dataset(uri)


def test_random_manifest_damage_is_always_a_lance_error(tmp_path):
    uri = _make(tmp_path, deletes=True)
    p = _manifest_path(uri)
    orig = open(p, "rb").read()
    rng = np.random.default_rng(0)
    for _ in range(150):
        d = bytearray(orig)
        for i in rng.integers(0, len(d) - 16, 3):
            d[i] = int(rng.integers(0, 256))
        open(p, "wb").write(bytes(d))
        try:
            t = lancelot.dataset(uri).to_table()
        except LanceError:
            continue
        assert t.num_rows <= 20


def test_data_file_type_disagreeing_with_the_schema(tmp_path):
    uri = _make(tmp_path)
    _rewrite(uri, lambda m: setattr(m.fields[0], "logical_type", "string"))  # int64 data, strings in the schema
    with pytest.raises(
        CorruptFileError, match="fragment 0: column 'a' is int64 in its data file, the dataset's schema says string"
    ):
        lancelot.dataset(uri).to_table()
