"""Errors of pylance's builtin classes (each also a LanceError), appends that pylance accepts,
and objects that move on after a commit; every case is checked against what pylance 14.0.2
does with the same input (ported facts: the reference's test_dataset.py test_dataset_append,
test_relative_paths' ValueError for a missing dataset, test_limit_offset's argument errors)."""

import datetime
import shutil

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset import CommitConflictError
from lancelot.errors import LanceError
from tests.dataset.helpers import files_of


@pytest.fixture
def uri(tmp_path):
    u = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"a": pa.array([1, 2, 3], pa.int64()), "b": ["x", "y", "z"]}), u)
    return u


def _both(cls, call_pylance, call_lancelot, match=None):
    """Both calls raise ``cls``; lancelot's error is a LanceError too."""
    with pytest.raises(cls):
        call_pylance()
    with pytest.raises(cls, match=match) as e:
        call_lancelot()
    assert isinstance(e.value, LanceError)
    return e.value


def test_missing_dataset(tmp_path):
    missing = str(tmp_path / "nothing")
    e = _both(ValueError, lambda: lance.dataset(missing), lambda: lancelot.dataset(missing), "does not exist")
    assert isinstance(e, FileNotFoundError) and e.filename == missing  # what Python code expects too


def test_bad_arguments_are_value_errors(uri):
    ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
    _both(ValueError, lambda: theirs.to_table(columns=["zz"]), lambda: ours.to_table(columns=["zz"]), "zz")
    _both(ValueError, lambda: theirs.to_table(filter="zz > 1"), lambda: ours.to_table(filter="zz > 1"), "zz")
    _both(ValueError, lambda: theirs.to_table(filter="a >"), lambda: ours.to_table(filter="a >"))
    _both(ValueError, lambda: theirs.to_table(limit=-1), lambda: ours.to_table(limit=-1))
    _both(ValueError, lambda: theirs.sample(10), lambda: ours.sample(10))
    _both(
        ValueError,
        lambda: lance.write_dataset(pa.table({"a": [1]}), uri, mode="bogus"),
        lambda: lancelot.write_dataset(pa.table({"a": [1]}), uri, mode="bogus"),
    )


def test_take_out_of_range(uri):
    ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
    e = _both(OSError, lambda: theirs.take([7]), lambda: ours.take([7]), "take index 7 is out of range for 3 rows")
    assert isinstance(e, IndexError)
    _both(OSError, lambda: theirs._take_rows([50]), lambda: ours._take_rows([50]))


def test_versions_and_tags(uri):
    _both(ValueError, lambda: lance.dataset(uri, version=5), lambda: lancelot.dataset(uri, version=5))
    _both(ValueError, lambda: lance.dataset(uri, version="nope"), lambda: lancelot.dataset(uri, version="nope"))
    ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
    _both(OSError, lambda: theirs.checkout_version("nope"), lambda: ours.checkout_version("nope"), "tag nope")
    _both(OSError, lambda: theirs.checkout_version(5), lambda: ours.checkout_version(5))
    old = datetime.datetime(2000, 1, 1)
    _both(ValueError, lambda: lance.dataset(uri, asof=old), lambda: lancelot.dataset(uri, asof=old))
    _both(ValueError, lambda: theirs.tags.delete("nope"), lambda: ours.tags.delete("nope"))


def test_create_over_an_existing_dataset(uri):
    before = files_of(uri)
    t = pa.table({"a": pa.array([1], pa.int64()), "b": ["q"]})
    e = _both(OSError, lambda: lance.write_dataset(t, uri), lambda: lancelot.write_dataset(t, uri), "already exists")
    assert isinstance(e, FileExistsError) and isinstance(e, CommitConflictError)
    assert files_of(uri) == before


def test_append_schema_mismatch_names_the_field(uri):
    before = files_of(uri)
    wrong_type = pa.table({"a": pa.array([1.5]), "b": ["q"]})
    e = _both(
        OSError,
        lambda: lance.write_dataset(wrong_type, uri, mode="append"),
        lambda: lancelot.write_dataset(wrong_type, uri, mode="append"),
        "field 'a' should have type int64 but the data's is double",
    )
    assert isinstance(e, lancelot.SchemaMismatchError) and isinstance(e, ValueError)
    other = pa.table({"a": pa.array([1], pa.int64()), "c": ["q"]})
    _both(
        OSError,
        lambda: lance.write_dataset(other, uri, mode="append"),
        lambda: lancelot.write_dataset(other, uri, mode="append"),
        r"missing=\['b'\], unexpected=\['c'\]",
    )
    assert files_of(uri) == before


@pytest.mark.parametrize("writer", ["lancelot", "lance"])
def test_nullable_data_appended_into_non_null_fields(tmp_path, writer):
    """As pylance: data whose fields are nullable appends into non-null fields (the dataset's schema
    stays non-null), refused when it holds nulls there, naming the field; the other way round is fine."""
    mod = lancelot if writer == "lancelot" else lance
    strict = pa.schema(
        [
            pa.field("a", pa.int64(), nullable=False),
            pa.field("s", pa.struct([pa.field("x", pa.int64(), nullable=False)])),
            pa.field("b", pa.string()),
        ]
    )
    uri = str(tmp_path / "ds")
    mod.write_dataset(pa.table({"a": [1, 2], "s": [{"x": 1}, {"x": 2}], "b": ["x", "y"]}, schema=strict), uri)
    loose = pa.table({"a": [3], "s": [{"x": 3}], "b": ["z"]})
    assert loose.schema.field("a").nullable
    ds = lancelot.write_dataset(loose, uri, mode="append")
    assert ds.schema == strict == lance.dataset(uri).schema
    assert lance.dataset(uri).to_table().column("a").to_pylist() == [1, 2, 3]
    before = files_of(uri)
    with_null = pa.table({"a": pa.array([None], pa.int64()), "s": [{"x": 4}], "b": ["w"]})
    _both(
        OSError,
        lambda: lance.write_dataset(with_null, uri, mode="append"),
        lambda: lancelot.write_dataset(with_null, uri, mode="append"),
        "field 'a' contains null values",
    )
    null_child = pa.table({"a": [4], "s": pa.array([{"x": None}], pa.struct([("x", pa.int64())])), "b": ["w"]})
    with pytest.raises(OSError, match="'s.x' contains null values"):
        lancelot.write_dataset(null_child, uri, mode="append")
    assert files_of(uri) == before  # nothing written by the refused appends
    assert lancelot.dataset(uri).count_rows() == 3


def test_non_null_data_appended_into_nullable_fields(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"a": [1, 2]}), uri)
    strict = pa.table({"a": [3]}, schema=pa.schema([pa.field("a", pa.int64(), nullable=False)]))
    lancelot.write_dataset(strict, uri, mode="append")
    assert lance.dataset(uri).schema.field("a").nullable and lance.dataset(uri).count_rows() == 3


def test_compact_files_moves_the_dataset(tmp_path):
    uri = str(tmp_path / "ds")
    for i in range(3):
        lancelot.write_dataset(pa.table({"a": [i]}), uri, mode="append")
    shutil.copytree(uri, str(tmp_path / "copy"))
    ds = lancelot.dataset(uri)
    theirs = lance.dataset(str(tmp_path / "copy"))
    ds.compact_files()
    theirs.optimize.compact_files()  # pylance's object moves the same way
    assert ds.version == theirs.version == ds.latest_version > 3
    assert len(ds.get_fragments()) == 1 and ds.to_table().column("a").to_pylist() == [0, 1, 2]
    v = ds.version
    ds.optimize.compact_files()  # nothing left to compact: no new version
    assert ds.version == v == ds.latest_version


def test_dir_lists_the_public_api():
    names = dir(lancelot)
    for n in ["dataset", "write_dataset", "LanceDataset", "LanceScanner", "LanceFragment", "read_table", "LanceError"]:
        assert n in names
    assert not [n for n in names if not n.startswith("_") and n in ("Any", "TYPE_CHECKING")]


def test_options_lancelot_does_not_honour_are_refused(uri):
    # default_scan_options is honoured now (tests/dataset/test_scan_ported.py::test_default_scan_options)
    with pytest.raises(ValueError, match="full_text_query"):
        lancelot.dataset(uri).to_table(full_text_query="x")
    # cache sizes and the like are accepted (and have no effect)
    assert lancelot.dataset(uri, index_cache_size=10, metadata_cache_size_bytes=1 << 20).count_rows() == 3
