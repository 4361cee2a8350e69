"""Historical datasets of the reference implementation (tests/data/README.md, "reference_datasets/").

Each dataset, written by an old Lance release, is opened with lancelot and with pylance 14.0.2 at
every version and compared: versions, schema, data storage version, row counts, fragments
(physical rows, deleted rows), whole tables, projections and takes.  Datasets whose data files
lancelot reads are then appended to and deleted from with lancelot (on a copy), and pylance must
read the result equal and validate it.  Where lancelot cannot follow (legacy 0.1 / 0.2 data files,
data files the reference repository does not keep) it must raise a clear LanceError subclass
naming the dataset: never a wrong answer, never a raw exception.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.errors import LanceFileNotFoundError, UnsupportedEncodingError, UnsupportedVersionError

lance = pytest.importorskip("lance", reason="pylance (the test oracle) is not installed")

DATA = Path(__file__).parents[1] / "data" / "reference_datasets"

#: 2.0 data files (or none): lancelot reads them as pylance does, and can append and delete
READABLE = [
    "v0.5.9/no_fragments",
    "v0.15.0/v1_no_files.lance",
    "v0.15.0/v2_no_files.lance",
    "v0.15.0/v2_with_files.lance",
    "v0.16.0/wrong_data_version_can_fix.lance",
    "v0.18.2/index_no_details.lance",
    "v0.20.0/old_btree_bitmap_indices.lance",
    "v0.21.0/bad_index_fragment_bitmap",
    "0.27.0/legacy_fts_index",
    "v0.27.1/pq_in_schema",
    "0.36.0/btree_in_index_pkg.lance",
    # Lance 0.13 stored each string / binary field of a 2.0 file as two columns (List<UInt8>)
    "0.13.0/0.13.0_string_encoding.lance",
]
#: legacy (0.1) data files, which pylance reads and lancelot refuses (UnsupportedVersionError)
LEGACY = [
    "v0.7.5/with_deletions",
    "v0.8.0/migrated_from_v0.7.5",
    "v0.10.5/corrupt_schema",
    "v0.15.0/v1_with_files.lance",
    "v0.16.0/wrong_data_version_no_fix.lance",
]
#: the reference repository keeps these datasets' manifests and indices but not their data files
NO_DATA_FILES = ["v0.5.9/dataset_with_fragments", "v0.30.0_pre_created_at/index_without_created_at"]

#: per dataset: a filter selecting some rows to delete
DELETE = {
    "v0.5.9/no_fragments": pc.field("id") == 1,
    "v0.15.0/v1_no_files.lance": pc.field("x") == 1,
    "v0.15.0/v2_no_files.lance": pc.field("x") == 1,
    "v0.15.0/v2_with_files.lance": pc.field("x") == 1,
    "v0.16.0/wrong_data_version_can_fix.lance": pc.field("foo") == 2,
    "v0.18.2/index_no_details.lance": pc.field("id") < 5,
    "v0.20.0/old_btree_bitmap_indices.lance": pc.field("btree") == 3,
    "v0.21.0/bad_index_fragment_bitmap": pc.list_element(pc.field("vector"), 0) > 0.5,
    "0.27.0/legacy_fts_index": pc.field("text") == "frodo was a puppy",
    "v0.27.1/pq_in_schema": pc.is_in(pc.field("id"), pa.array([1, 5, 100, 511])),
    "0.36.0/btree_in_index_pkg.lance": (pc.field("x") > 10) & (pc.field("x") < 600),
    "0.13.0/0.13.0_string_encoding.lance": pc.field("strings") == "bar",
}


def _path(name: str) -> str:
    return str(DATA / name)


def _copy(name: str, tmp_path: Path) -> str:
    dst = tmp_path / Path(name).name
    shutil.copytree(DATA / name, dst)
    return str(dst)


def _versions(ds) -> list[tuple[int, object]]:
    return [(v["version"], v["timestamp"]) for v in ds.versions()]


def _named(name: str) -> str:
    """A pattern matching an error message that names the dataset ``name`` (any copy of it)."""
    return re.escape("dataset '") + r"[^']*" + re.escape(Path(name).name + "'")


def _live_positions(ours) -> dict[int, list[int]]:
    return {f.fragment_id: f.live_positions().tolist() for f in ours.get_fragments()}


def _pylance_live_positions(theirs) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {int(f.fragment_id): [] for f in theirs.get_fragments()}
    if theirs.count_rows():
        for rid in theirs.to_table(columns=[], with_row_id=True).column("_rowid").to_pylist():
            out[rid >> 32].append(rid & 0xFFFFFFFF)
    return out


def assert_same_version(ours, theirs) -> None:
    """One version of one dataset, read alike by lancelot and pylance."""
    assert ours.version == theirs.version
    assert ours.schema.equals(theirs.schema, check_metadata=True)
    assert ours.data_storage_version == theirs.data_storage_version
    n = theirs.count_rows()
    assert ours.count_rows() == n
    frags = theirs.get_fragments()
    assert [f.fragment_id for f in ours.get_fragments()] == [f.fragment_id for f in frags]
    assert [f.physical_rows for f in ours.get_fragments()] == [f.physical_rows for f in frags]
    assert [f.metadata.physical_rows for f in ours.get_fragments()] == [
        f.metadata.physical_rows or 0 for f in frags
    ]  # the manifest's entries, as recorded
    assert [f.count_rows() for f in ours.get_fragments()] == [f.count_rows() for f in frags]
    assert _live_positions(ours) == _pylance_live_positions(theirs)
    expected = theirs.to_table()
    assert ours.to_table().equals(expected)
    for name in expected.column_names:
        assert ours.to_table(columns=[name]).equals(expected.select([name]))
    if n:
        rows = sorted({0, n // 3, n // 2, n - 1})
        idx = rows[::-1] + [rows[0]]  # any order, a duplicate
        assert ours.take(idx).equals(theirs.take(idx))
        assert ours.take(idx).equals(expected.take(idx))
    for ofrag, tfrag in zip(ours.get_fragments(), frags):
        assert ofrag.read().equals(tfrag.to_table())
    ints = [f.name for f in expected.schema if pa.types.is_integer(f.type)]
    if n and ints:  # a filter (pylance takes the same Expression)
        flt = pc.field(ints[0]) >= expected.column(ints[0])[n // 2]
        want = expected.filter(flt)
        try:
            assert theirs.to_table(filter=flt).equals(want)
        except (OSError, ValueError) as e:  # pylance 14's scanner: a 0.1-labelled dataset of 2.0 files, or
            assert re.search("v1 reader|missing row count stats", str(e))  # unrecorded row counts
        assert ours.to_table(filter=flt).equals(want)
        assert ours.count_rows(filter=flt) == want.num_rows


def test_reference_datasets_present():
    """Every dataset directory is listed once, with a manifest, and the copies stay small."""
    found = sorted(str(p.parent.relative_to(DATA)) for p in DATA.glob("*/*/_versions"))
    listed = sorted(READABLE + LEGACY + NO_DATA_FILES)
    assert found == listed
    assert set(DELETE) == set(READABLE)
    assert sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file()) < 1024 * 1024


@pytest.mark.parametrize("name", READABLE)
def test_every_version_reads_as_pylance_reads(name):
    uri = _path(name)
    ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
    assert _versions(ours) == _versions(theirs)
    for v, _ in _versions(theirs):
        assert_same_version(lancelot.dataset(uri, version=v), lance.dataset(uri, version=v))
        assert_same_version(ours.checkout_version(v), theirs.checkout_version(v))


def _validate(uri: str) -> str | None:
    """pylance's validate(): None if it passes, else its message."""
    try:
        lance.dataset(uri).validate()
    except Exception as e:  # noqa: BLE001 - pylance raises OSError / ValueError
        return str(e)
    return None


#: what pylance's validate() says of the dataset as the reference repository keeps it
INVALID_AS_SHIPPED = {"v0.21.0/bad_index_fragment_bitmap": 'Index "vector_idx" has overlapping fragments'}


@pytest.mark.parametrize("name", READABLE)
def test_lancelot_appends_and_deletes_pylance_reads(name, tmp_path):
    uri = _copy(name, tmp_path)
    before = lance.dataset(uri)
    problem = INVALID_AS_SHIPPED.get(name)
    assert (_validate(uri) is None) if problem is None else (problem in _validate(uri))
    had_files = any(f.data_files() for f in before.get_fragments())
    dsv = before.data_storage_version
    n = before.count_rows()
    schema = before.schema
    if n:
        new = before.to_table().take(np.arange(min(n, 7)))
    else:  # an empty dataset: one int64 column
        new = pa.table({schema.names[0]: pa.array([1, 2, 3], schema.field(0).type)}, schema=schema)

    appended = lancelot.write_dataset(new, uri, mode="append")
    theirs = lance.dataset(uri)
    assert appended.version == theirs.version == before.version + 1
    assert_same_version(lancelot.dataset(uri), theirs)
    assert theirs.count_rows() == n + new.num_rows
    assert theirs.to_table().slice(n).equals(new)
    if had_files:  # new files keep the dataset's file version (a legacy-labelled 2.0 dataset: 2.0)
        assert theirs.data_storage_version == ("2.0" if dsv == "0.1" else dsv)
    else:  # lancelot writes no legacy files: an empty legacy dataset gets its default version
        assert theirs.data_storage_version in (dsv, "2.2")
    assert (_validate(uri) is None) if problem is None else (problem in _validate(uri))

    ours = lancelot.dataset(uri)
    expected = ours.to_table().filter(~DELETE[name])
    assert 0 < expected.num_rows < ours.count_rows()
    ours.delete(DELETE[name])
    theirs = lance.dataset(uri)
    assert theirs.version == ours.version == before.version + 2
    assert theirs.to_table().equals(expected)
    assert_same_version(lancelot.dataset(uri), theirs)
    assert (_validate(uri) is None) if problem is None else (problem in _validate(uri))
    # pylance continues after lancelot
    lance.write_dataset(new, uri, mode="append")
    assert_same_version(lancelot.dataset(uri), lance.dataset(uri))


def test_legacy_labelled_dataset_is_relabelled_as_pylance_does(tmp_path):
    """Lance 0.16 recorded storage version 0.1 for a dataset of 2.0 files.  pylance 14 reads it,
    but a delete that must read rows fails (it opens the files with its legacy reader); a commit
    that reads none (``delete("false")``) records 2.0.  lancelot's delete reads the rows and
    records 2.0 too."""
    name = "v0.16.0/wrong_data_version_can_fix.lance"
    uri, ref = _copy(name, tmp_path / "a"), _copy(name, tmp_path / "b")
    assert lancelot.dataset(uri).data_storage_version == lance.dataset(uri).data_storage_version == "0.1"
    with pytest.raises(OSError, match="with the v1 reader because it has version 2.0"):
        lance.dataset(ref).delete("foo = 2")
    lance.dataset(ref).delete("false")
    assert lance.dataset(ref).data_storage_version == "2.0"
    lancelot.dataset(uri).delete(pc.field("foo") == 2)
    assert lancelot.dataset(uri).data_storage_version == lance.dataset(uri).data_storage_version == "2.0"
    assert lance.dataset(uri).to_table().column("foo").to_pylist() == [1, 3]
    assert _validate(uri) is None
    lance.dataset(uri).delete("foo = 3")  # pylance deletes on what lancelot relabelled
    assert lancelot.dataset(uri).to_table().column("foo").to_pylist() == [1]


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_data_files_refused_clearly(name, tmp_path):
    """Manifest facts agree with pylance; reading, appending and deleting give a clear
    UnsupportedVersionError naming the dataset (pylance reads the legacy 0.1 files)."""
    uri = _copy(name, tmp_path)
    ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
    assert _versions(ours) == _versions(theirs)
    for v, _ in _versions(theirs):
        o, t = lancelot.dataset(uri, version=v), lance.dataset(uri, version=v)
        assert o.schema.equals(t.schema, check_metadata=True)
        assert o.data_storage_version == t.data_storage_version
        assert [f.fragment_id for f in o.get_fragments()] == [f.fragment_id for f in t.get_fragments()]
        assert t.to_table().num_rows == t.count_rows()
        legacy = f"{_named(name)} version {v} fragment .*legacy Lance format 0.[12]"
        if o.manifest.HasField("writer_version"):  # counts the manifest records reliably
            assert o.count_rows() == t.count_rows()
            assert [f.physical_rows for f in o.get_fragments()] == [f.metadata.physical_rows for f in t.get_fragments()]
        else:  # Lance < 0.8.x: no counts, or wrong ones (0.8.0 stored live rows): the files must say
            with pytest.raises(UnsupportedVersionError, match=legacy):
                o.count_rows()
        if t.count_rows():
            with pytest.raises(UnsupportedVersionError, match=legacy):
                o.to_table()
            with pytest.raises(UnsupportedVersionError, match=legacy):
                o.take(list(range(t.count_rows())))
        for of, tf in zip(o.get_fragments(), t.get_fragments()):  # 0.16's mixture: its 2.0 files read
            if all(d.file_major_version or d.file_minor_version == 3 for d in of.metadata.files):
                assert of.read().equals(tf.to_table())
    latest = theirs.version
    assert ours.data_storage_version == theirs.data_storage_version == "0.1"
    with pytest.raises(UnsupportedVersionError, match=f"{_named(name)} version {latest}: (the dataset|data files)"):
        lancelot.write_dataset(theirs.to_table().slice(0, 1), uri, mode="append")
    with pytest.raises(UnsupportedVersionError, match=_named(name)):
        lancelot.dataset(uri).delete(pc.field(theirs.schema.names[0]) == 1)
    assert lance.dataset(uri).version == latest  # nothing committed
    assert _versions(lancelot.dataset(uri)) == _versions(theirs)


def test_legacy_counts_pylance_reports():
    """What the reference's own tests assert of the 0.7.5 / 0.8.0 datasets, via pylance: lancelot
    never repeats the wrong counts Lance 0.8.0 wrote (physical_rows 90 for 100 rows)."""
    t = lance.dataset(_path("v0.7.5/with_deletions"))
    assert t.count_rows() == 90 and t.to_table().column("x").to_pylist() == list(range(10)) + list(range(20, 100))
    t = lance.dataset(_path("v0.8.0/migrated_from_v0.7.5"))
    assert t.count_rows() == 92 and t.get_fragments()[0].metadata.physical_rows == 90
    ours = lancelot.dataset(_path("v0.8.0/migrated_from_v0.7.5"))
    assert ours.get_fragments()[1].metadata.physical_rows == 2  # the manifest's entry, as recorded
    with pytest.raises(UnsupportedVersionError):
        ours.count_rows()


def test_mixed_file_versions_refused_as_pylance_refuses(tmp_path):
    """A dataset mixing 2.0 and legacy files (Lance 0.16): pylance refuses to commit on it."""
    name = "v0.16.0/wrong_data_version_no_fix.lance"
    uri = _copy(name, tmp_path)
    with pytest.raises(OSError, match="mixture of file versions"):
        lance.dataset(uri).delete("false")
    with pytest.raises(OSError, match="mixture of file versions"):
        lancelot.dataset(uri).delete("false")
    with pytest.raises(UnsupportedVersionError, match=f"mixture of file versions.*{_named(name)} version 2: data"):
        lancelot.write_dataset(pa.table({"foo": [9]}), uri, mode="append")
    assert _versions(lancelot.dataset(uri)) == _versions(lance.dataset(uri))


@pytest.mark.parametrize("name", NO_DATA_FILES)
def test_missing_data_files_refused_clearly(name):
    uri = _path(name)
    ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
    assert _versions(ours) == _versions(theirs)
    for v, _ in _versions(theirs):
        o, t = lancelot.dataset(uri, version=v), lance.dataset(uri, version=v)
        assert o.schema.equals(t.schema, check_metadata=True)
        assert o.data_storage_version == t.data_storage_version
        missing = f"{_named(name)} version {v} fragment 0: data file data/.*\\.lance is missing"
        with pytest.raises(Exception, match="Not found"):
            t.to_table()
        with pytest.raises(LanceFileNotFoundError, match=missing):
            o.to_table()
        with pytest.raises(LanceFileNotFoundError, match=missing):
            o.take([0])
        if o.manifest.HasField("writer_version"):  # the manifest records the counts
            assert o.count_rows() == t.count_rows()
        else:  # Lance 0.5.9 recorded none: both need the files
            with pytest.raises(Exception, match="Not found"):
                t.count_rows()
            with pytest.raises(LanceFileNotFoundError, match=missing):
                o.count_rows()


def test_two_column_strings_read_as_pylance_reads(tmp_path):
    """Lance 0.13 wrote each string / binary field of a 2.0 file as two columns (offsets, then
    bytes; the manifest's column_indices say 0, 1, 3, 5); lancelot's appends beside them are
    ordinary 2.0 files with one column per string, and both kinds read in one dataset."""
    name = "0.13.0/0.13.0_string_encoding.lance"
    uri = _copy(name, tmp_path)
    ours = lancelot.dataset(uri)
    assert list(ours.get_fragments()[0].metadata.files[0].column_indices) == [0, 1, 3, 5]
    expected = lance.dataset(uri).to_table()
    assert expected.column("strings").to_pylist() == ["foo", "bar", "baz"]
    assert ours.to_table().equals(expected)
    lancelot.write_dataset(expected, uri, mode="append")
    assert list(lancelot.dataset(uri).get_fragments()[1].metadata.files[0].column_indices) == [0, 1, 2, 3]
    assert lance.dataset(uri).to_table().equals(pa.concat_tables([expected, expected]))
    assert lancelot.dataset(uri).take([4, 1]).equals(expected.take([1, 1]))


def test_column_layout_disagreeing_with_the_manifest_is_refused(tmp_path):
    """A 2.0 data file whose manifest places a field at another column than lancelot's reader
    does is refused (UnsupportedEncodingError naming the dataset), never decoded as another field."""
    from lancelot.dataset.manifest import manifest_name, parse_manifest, serialize_manifest

    uri = str(tmp_path / "ds")
    t = pa.table({"a": pa.array([1, 2, 3], pa.int64()), "b": pa.array([4, 5, 6], pa.int64())})
    ds = lancelot.write_dataset(t, uri, data_storage_version="2.0")
    path = Path(uri, "_versions", manifest_name(ds.version, "v2"))
    mf = parse_manifest(path.read_bytes(), str(path))
    assert list(mf.manifest.fragments[0].files[0].column_indices) == [0, 1]
    mf.manifest.fragments[0].files[0].column_indices[:] = [0, 2]
    path.write_bytes(serialize_manifest(mf.manifest, mf.index_section, mf.transaction))
    refused = r"ds' version 1 fragment 0: data file .* stores field 'b' at column 2, lancelot's 2.0 reader expects 1"
    with pytest.raises(UnsupportedEncodingError, match=refused):
        lancelot.dataset(uri).to_table()


def test_unrecorded_row_counts_come_from_the_data_files(tmp_path):
    """The 0.5.9 - 0.8.0 manifest facts on 2.x files: ``physical_rows`` 0 (not recorded) or any
    count in a manifest without a writer version (0.8.0 wrote live rows there) is not trusted;
    pylance and lancelot both count the data file."""
    from lancelot.dataset.manifest import manifest_name, parse_manifest, serialize_manifest

    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"x": np.arange(30)}), uri, max_rows_per_file=10)
    lancelot.dataset(uri).delete(pc.field("x") < 3)
    ours = lancelot.dataset(uri)
    path = Path(uri, "_versions", manifest_name(ours.version, "v2"))
    mf = parse_manifest(path.read_bytes(), str(path))
    mf.manifest.ClearField("writer_version")
    mf.manifest.fragments[0].physical_rows = 7  # the live rows, as 0.8.0 wrote them
    mf.manifest.fragments[1].physical_rows = 0  # not recorded
    path.write_bytes(serialize_manifest(mf.manifest, mf.index_section, mf.transaction))
    theirs = lance.dataset(uri)
    assert theirs.count_rows() == 27
    assert_same_version(lancelot.dataset(uri), theirs)
    # lancelot's commits stamp a writer version: the counts it could not trust become "not
    # recorded", so pylance keeps counting the files (it would trust the 7 otherwise)
    lancelot.write_dataset(pa.table({"x": np.arange(30, 35)}), uri, mode="append")
    lancelot.dataset(uri).delete(pc.field("x") == 31)
    ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
    assert [f.metadata.physical_rows for f in ours.get_fragments()] == [0, 0, 0, 5]
    assert theirs.count_rows() == 31 and _validate(uri) is None
    assert_same_version(ours, theirs)
    assert theirs.to_table().column("x").to_pylist() == [*range(3, 31), *range(32, 35)]


@pytest.mark.parametrize("name", LEGACY + NO_DATA_FILES + ["0.13.0/0.13.0_string_encoding.lance"])
def test_inspect_describes_what_it_cannot_read(name):
    """``lancelot inspect`` shows the manifest of datasets whose data lancelot cannot read."""
    from lancelot.dataset.describe import describe_dataset

    text = describe_dataset(_path(name))
    theirs = lance.dataset(_path(name))
    assert f"data storage version {theirs.data_storage_version}," in text
    assert f"fragments: {len(theirs.get_fragments())}," in text
    m = lancelot.dataset(_path(name)).manifest
    if not m.HasField("writer_version"):
        assert "written by an unrecorded writer" in text and "? (not recorded reliably) rows" in text
        assert "rows unknown (" in text
    else:
        assert f"fragments: {len(theirs.get_fragments())}, {theirs.count_rows()} rows" in text
