"""Blob columns of datasets written by pylance, read by lancelot: scans return pylance's
descriptions (2.0 / 2.1: position and size; 2.2: blob v2), ``take_blobs`` / ``read_blobs`` /
``read_blob_ranges`` return the bytes pylance returns, deleted rows are never returned, and a
description that points outside its file is a CorruptFileError naming the file, column and row."""

from __future__ import annotations

import glob
import os
import shutil
import struct

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.dataset.blob import BlobColumnError, DeletedRowError, NoSuchColumnError, blob_file_name
from lancelot.errors import CorruptFileError, LanceError
from tests.dataset.helpers import blob_bytes, blob_storage

VERSIONS = ["2.0", "2.1", "2.2", "2.3"]
BLOB = {"lance-encoding:blob": "true"}
#: sizes that cover pylance 14's blob v2 kinds: inline (<= 64 KiB), packed (<= 4 MiB), dedicated
SIZES = [10, None, 0, 65536, 65537, 200_000, 4 * 1024 * 1024 + 1, 3]


def _values(sizes: list[int | None], seed: int) -> pa.Array:
    rng = np.random.default_rng(seed)
    return pa.array(
        [None if s is None else rng.integers(0, 256, s, dtype=np.uint8).tobytes() for s in sizes], pa.large_binary()
    )


def _table(sizes: list[int | None], seed: int, first_id: int = 0) -> pa.Table:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("blob", pa.large_binary(), metadata=BLOB)])
    ids = pa.array(range(first_id, first_id + len(sizes)), pa.int64())
    return pa.Table.from_arrays([ids, _values(sizes, seed)], schema=schema)


@pytest.fixture(scope="module", params=VERSIONS)
def blob_ds(request, tmp_path_factory):
    """A pylance dataset with a blob column at each version: two fragments (an append), deletions
    in both, nulls and empty values, values of every v2 kind."""
    v = request.param
    path = str(tmp_path_factory.mktemp(f"blobs_{v}") / "ds")
    lance.write_dataset(_table(SIZES, 1), path, data_storage_version=v)
    lance.write_dataset(_table([5, 70_000, None, 0, 64], 2, first_id=100), path, mode="append")
    ds = lance.dataset(path)
    ds.delete("id = 3 or id = 102")
    return path, v


def test_scan_returns_pylance_descriptions(blob_ds):
    path, v = blob_ds
    theirs, ours = lance.dataset(path).to_table(), lancelot.dataset(path).to_table()
    assert ours.schema.field("blob") == theirs.schema.field("blob")
    assert ours.schema.field("blob").metadata == theirs.schema.field("blob").metadata
    assert blob_storage(ours.column("blob")).equals(blob_storage(theirs.column("blob")))
    assert ours.column("id").equals(theirs.column("id"))
    if v == "2.2":
        kinds = set(blob_storage(ours.column("blob")).field("kind").to_pylist())
        assert kinds == {0, 1, 2}  # inline, packed and dedicated all met


def test_scan_with_filter_and_take(blob_ds):
    path, _ = blob_ds
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    expr = pc.field("id") >= 4
    a = ours.to_table(filter=expr)
    b = theirs.to_table(filter=expr)
    assert blob_storage(a.column("blob")).equals(blob_storage(b.column("blob")))
    n = ours.count_rows()
    idx = [n - 1, 0, 5, 5]
    assert blob_storage(ours.take(idx, columns=["blob"]).column(0)).equals(
        blob_storage(theirs.take(idx, columns=["blob"]).column(0))
    )


def test_take_blobs_by_indices_addresses_ids(blob_ds):
    path, _ = blob_ds
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    n = theirs.count_rows()
    idx = list(range(n))[::-1]
    expect = blob_bytes(theirs.take_blobs("blob", indices=idx))
    assert blob_bytes(ours.take_blobs("blob", indices=idx)) == expect
    assert sum(x is None for x in expect) == 1 and b"" in expect
    addresses = [int(a) for a in theirs.to_table(with_row_address=True).column("_rowaddr").to_pylist()]
    pick = addresses[::2]
    assert blob_bytes(ours.take_blobs("blob", addresses=pick)) == blob_bytes(theirs.take_blobs("blob", addresses=pick))
    assert blob_bytes(ours.take_blobs("blob", ids=pa.array(pick, pa.uint64()))) == blob_bytes(
        theirs.take_blobs("blob", ids=pick)
    )
    sizes = [f.size() if f else None for f in ours.take_blobs("blob", indices=idx)]
    assert sizes == [None if b is None else len(b) for b in expect]
    mixed = [n - 1, 0, 4, n - 1, 4, 1]  # duplicates, unsorted, across both fragments
    assert blob_bytes(ours.take_blobs("blob", indices=mixed)) == blob_bytes(theirs.take_blobs("blob", indices=mixed))
    picks = [addresses[-1], addresses[0], addresses[-1]]
    assert ours.read_blobs("blob", addresses=picks) == theirs.read_blobs("blob", addresses=picks)


def test_read_blobs_and_ranges(blob_ds):
    path, _ = blob_ds
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    idx = [4, 0, 1, 6, 9]
    assert ours.read_blobs("blob", indices=idx) == theirs.read_blobs("blob", indices=idx)
    assert ours.read_blobs("blob", indices=idx, preserve_order=False) == sorted(theirs.read_blobs("blob", indices=idx))
    n = theirs.count_rows()
    sizes = {i: (f.size() if f else 0) for i, f in enumerate(theirs.take_blobs("blob", indices=list(range(n))))}
    reqs = [(0, 0, 1), (4, sizes[4] - 1, 1), (5, sizes[5] // 2, 100), (1, 0, 0), (9, 0, 0), (5, 3, 7)]
    assert ours.read_blob_ranges("blob", reqs, selector="indices") == theirs.read_blob_ranges(
        "blob", reqs, selector="indices"
    )
    unordered = ours.read_blob_ranges("blob", reqs, selector="indices", preserve_order=False)
    assert sorted(unordered) == sorted(theirs.read_blob_ranges("blob", reqs, selector="indices"))
    with pytest.raises(ValueError, match="exceeds blob size"):
        ours.read_blob_ranges("blob", [(0, 5, 10)], selector="indices")
    with pytest.raises(ValueError):
        theirs.read_blob_ranges("blob", [(0, 5, 10)], selector="indices")


def test_deleted_rows_never_returned(blob_ds):
    path, _ = blob_ds
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    assert ours.count_rows() == theirs.count_rows() == len(SIZES) + 5 - 2
    with pytest.raises(NotImplementedError):
        theirs.take_blobs("blob", addresses=[3])
    with pytest.raises(DeletedRowError, match="deleted") as e:
        ours.take_blobs("blob", addresses=[3])
    assert isinstance(e.value, NotImplementedError) and isinstance(e.value, LanceError)
    with pytest.raises(NotImplementedError):
        ours.read_blobs("blob", ids=[(1 << 32) | 2])
    with pytest.raises(BlobColumnError, match="out of range"):
        ours.take_blobs("blob", indices=[ours.count_rows()])


def test_selection_and_column_errors(blob_ds):
    path, _ = blob_ds
    ours = lancelot.dataset(path)
    with pytest.raises(ValueError, match="Exactly one"):
        ours.take_blobs("blob")
    with pytest.raises(ValueError, match="Exactly one"):
        ours.take_blobs("blob", ids=[0], indices=[0])
    with pytest.raises(ValueError, match="not a blob column"):
        ours.take_blobs("id", indices=[0])
    with pytest.raises(NoSuchColumnError):
        ours.take_blobs("nope", indices=[0])
    with pytest.raises(RuntimeError):
        lance.dataset(path).take_blobs("nope", indices=[0])
    with pytest.raises(TypeError):
        ours.take_blobs("blob", indices=[0], buffer_size=1.5)
    theirs = lance.dataset(path)
    for bad, error in (
        ({"indices": [-1]}, OverflowError),
        ({"addresses": [2, -1]}, OverflowError),
        ({"indices": [0.5]}, TypeError),
    ):
        with pytest.raises(error):
            theirs.take_blobs("blob", **bad)
        with pytest.raises(error) as e:
            ours.take_blobs("blob", **bad)
        assert isinstance(e.value, LanceError)


@pytest.mark.parametrize("blob_ds", ["2.2"], indirect=True)  # blob v2 files are 2.2
def test_lancefile_reads_pylance_blob_v2_file(blob_ds):
    """The data file of a 2.2 blob dataset lists its description's children with id -1: they are
    the struct's children (pylance's own file reader cannot read this file)."""
    path, v = blob_ds
    ds = lance.dataset(path)
    frag = ds.get_fragments()[0]
    f = os.path.join(path, "data", frag.data_files()[0].path)
    with lancelot.LanceFile(f) as lf:
        assert lf.schema.names == ["id", "blob"]
        t = lf.read()
    whole = lance.dataset(path, version=1).to_table()  # the first fragment before its deletion
    assert t.schema.field("blob") == whole.schema.field("blob")
    assert t.column("blob").combine_chunks().equals(blob_storage(whole.column("blob")))


def test_blob_file_names():
    assert blob_file_name(1) == "1" + "0" * 31
    assert blob_file_name(2) == "01" + "0" * 30
    assert blob_file_name(3) == "11" + "0" * 30
    assert blob_file_name(0x80000000) == "0" * 31 + "1"


def test_sidecar_names_match_pylance(tmp_path):
    """Packed values share one ``.blob`` file, each dedicated value has its own, named by blob id."""
    path = str(tmp_path / "ds")
    lance.write_dataset(_table([70_000, 80_000, 4 * 1024 * 1024 + 5, 4 * 1024 * 1024 + 6], 3), path)
    desc = lancelot.dataset(path).to_table().column("blob").combine_chunks()
    stem = glob.glob(os.path.join(path, "data", "*.lance"))[0][: -len(".lance")]
    names = sorted(os.listdir(stem))
    assert names == sorted(f"{blob_file_name(i)}.blob" for i in set(desc.field("blob_id").to_pylist()))
    assert desc.field("kind").to_pylist() == [1, 1, 2, 2]
    assert desc.field("position").to_pylist()[:2] == [0, 70_000]


def test_external_blobs(tmp_path):
    ext = tmp_path / "ext.bin"
    ext.write_bytes(bytes(range(256)) * 4)
    uri = "file://" + str(ext)
    path = str(tmp_path / "ds")
    arr = lance.blob_array([b"abc", uri, lance.blob.Blob.from_uri(uri, 5, 7), None, b""])
    lance.write_dataset(pa.table({"blob": arr}), path, allow_external_blob_outside_bases=True)
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    assert blob_storage(ours.to_table().column("blob")).equals(blob_storage(theirs.to_table().column("blob")))
    got = blob_bytes(ours.take_blobs("blob", indices=range(5)))
    assert got == blob_bytes(theirs.take_blobs("blob", indices=range(5)))
    assert got[1] == ext.read_bytes() and got[2] == ext.read_bytes()[5:12]


def test_description_outside_file_2_0(tmp_path):
    """A 2.0 description whose size runs past the end of the data file."""
    path = str(tmp_path / "ds")
    lance.write_dataset(_table([10, 100_000, 3], 4), path, data_storage_version="2.0")
    f = glob.glob(os.path.join(path, "data", "*.lance"))[0]
    data = bytearray(open(f, "rb").read())
    want = lance.dataset(path).to_table().column("blob").combine_chunks()[1].as_py()
    old = struct.pack("<QQ", want["position"], want["size"])
    at = data.find(old)
    assert at > 0
    data[at : at + 16] = struct.pack("<QQ", want["position"], 10**9)
    open(f, "wb").write(bytes(data))
    ours = lancelot.dataset(path)
    with pytest.raises(CorruptFileError, match=r"column 'blob', row 1.*outside the file") as e:
        ours.take_blobs("blob", indices=[1])
    assert os.path.basename(f) in str(e.value)
    assert ours.read_blobs("blob", indices=[0]) == [(0, lance.dataset(path).read_blobs("blob", indices=[0])[0][1])]


def test_description_outside_blob_file(tmp_path):
    """A packed ``.blob`` file shorter than its descriptions say."""
    path = str(tmp_path / "ds")
    lance.write_dataset(_table([70_000, 80_000], 5), path)
    sidecar = glob.glob(os.path.join(path, "data", "*", "*.blob"))[0]
    with open(sidecar, "r+b") as fh:
        fh.truncate(100_000)
    ours = lancelot.dataset(path)
    assert ours.take_blobs("blob", indices=[0])[0].read(5) == lance.dataset(path).take_blobs("blob", indices=[0])[
        0
    ].read(5)
    with pytest.raises(CorruptFileError, match=r"column 'blob', row 1.*outside") as e:
        ours.take_blobs("blob", indices=[1])[0].read(1)
    assert os.path.basename(sidecar) in str(e.value)
    shutil.rmtree(path)


# -- writing -------------------------------------------------------------------------------------
def _listing(path: str) -> list[tuple[str, int]]:
    """The sidecars (name, size) under data/, and the number of data files."""
    out = []
    for root, _, files in os.walk(os.path.join(path, "data")):
        for f in files:
            if f.endswith(".blob"):
                out.append((f, os.path.getsize(os.path.join(root, f))))
    return sorted(out)


def _manifest(path: str):
    return lancelot.dataset(path).manifest


def _wide(sizes, seed):
    t = _table(sizes, seed)
    return t.append_column("name", pa.array([f"n{i}" for i in range(len(sizes))]))


def test_write_blob_v2_like_pylance(tmp_path):
    """lancelot writes a 2.2 blob column as pylance does: the same manifest fields, DataFile field
    lists, descriptions (kinds, positions, blob ids), sidecar files and bytes."""
    t = _wide(SIZES + [70_000, 0, None], 6)
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    lance.write_dataset(t, theirs)
    lancelot.write_dataset(t, ours)
    assert list(_manifest(ours).fields) == list(_manifest(theirs).fields)
    fa, fb = _manifest(ours).fragments[0].files[0], _manifest(theirs).fragments[0].files[0]
    assert list(fa.fields) == list(fb.fields) and list(fa.column_indices) == list(fb.column_indices)
    a, b = lance.dataset(ours), lance.dataset(theirs)
    assert a.schema == b.schema
    assert a.to_table().equals(b.to_table())  # the descriptions themselves, positions included
    assert _listing(ours) == _listing(theirs)
    n = len(t)
    assert blob_bytes(a.take_blobs("blob", indices=range(n))) == t.column("blob").to_pylist()
    assert blob_storage(lancelot.dataset(ours).to_table().column("blob")).equals(
        blob_storage(b.to_table().column("blob"))
    )
    with lancelot.LanceFile(glob.glob(os.path.join(ours, "data", "*.lance"))[0]) as lf:
        desc = lf._descriptor.schema.fields
        assert [(f.id, f.parent_id) for f in desc if f.name in ("kind", "blob_uri")] == [(-1, -1), (-1, -1)]


def test_write_blob_v2_extension_input(tmp_path):
    """``lance.blob_field`` / ``lance.blob_array`` input: thresholds from the field's metadata, external
    URIs kept as references, the logical type pylance keeps."""
    ext = tmp_path / "ext.bin"
    ext.write_bytes(b"0123456789" * 100)
    uri = "file://" + str(ext)
    field = lance.blob_field("blob", inline_size_threshold=16, dedicated_size_threshold=100_000)
    arr = lance.blob_array([b"abc" * 10, uri, lance.blob.Blob.from_uri(uri, 5, 7), None, b"", b"z" * 200_000, b"q"])
    t = pa.Table.from_arrays([arr], schema=pa.schema([field]))
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    lance.write_dataset(t, theirs, allow_external_blob_outside_bases=True)
    with pytest.raises(OSError, match="allow_external_blob_outside_bases") as e:  # as pylance refuses it
        lancelot.write_dataset(t, ours)
    assert isinstance(e.value, LanceError) and "'blob'" in str(e.value)
    with pytest.raises(OSError):
        lance.write_dataset(t, str(tmp_path / "refused"))
    lancelot.write_dataset(t, ours, allow_external_blob_outside_bases=True)
    assert list(_manifest(ours).fields) == list(_manifest(theirs).fields)
    a, b = lance.dataset(ours), lance.dataset(theirs)
    assert a.to_table().equals(b.to_table())
    assert set(a.to_table().column("blob").combine_chunks().field("kind").to_pylist()) == {0, 1, 2, 3, None}
    assert _listing(ours) == _listing(theirs)
    assert blob_bytes(a.take_blobs("blob", indices=range(7))) == blob_bytes(b.take_blobs("blob", indices=range(7)))
    assert blob_bytes(lancelot.dataset(ours).take_blobs("blob", indices=range(7))) == blob_bytes(
        b.take_blobs("blob", indices=range(7))
    )


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_write_blob_v1_read_by_pylance(tmp_path, version):
    """At 2.0 and 2.1 lancelot writes the blob layout of those versions: pylance scans the same
    descriptions (but for where the bytes sit) and takes the same bytes."""
    t = _table([10, None, 0, 100_000, 70_000, 3], 7)
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    lance.write_dataset(t, theirs, data_storage_version=version)
    lancelot.write_dataset(t, ours, data_storage_version=version)
    a, b = lance.dataset(ours), lance.dataset(theirs)
    assert a.schema == b.schema and a.data_storage_version == version
    da, db = a.to_table().column("blob").combine_chunks(), b.to_table().column("blob").combine_chunks()
    assert da.type == db.type and da.field("size").to_pylist() == db.field("size").to_pylist()
    assert da.is_valid().equals(db.is_valid())
    assert blob_bytes(a.take_blobs("blob", indices=range(6))) == t.column("blob").to_pylist()
    assert a.read_blobs("blob", indices=[4, 1, 2]) == b.read_blobs("blob", indices=[4, 1, 2])
    assert blob_storage(lancelot.dataset(ours).to_table().column("blob")).equals(da)


def test_appends_both_ways_with_deletes(tmp_path):
    """pylance appends to a blob v2 dataset lancelot made and the other way round; deleted rows'
    blobs stay out of both readers' results."""
    one, two = _table([10, 70_000, None, 4 * 1024 * 1024 + 3], 8), _table([0, 65537, 5], 9, first_id=10)
    p, q = str(tmp_path / "p"), str(tmp_path / "q")
    lancelot.write_dataset(one, p)
    lance.write_dataset(two, p, mode="append")
    lance.write_dataset(one, q)
    lancelot.write_dataset(two, q, mode="append")
    for path in (p, q):
        lance.dataset(path).delete("id = 1 or id = 11")
        theirs, ours = lance.dataset(path), lancelot.dataset(path)
        want = [
            v
            for i, v in zip([0, 1, 2, 3, 10, 11, 12], one.column("blob").to_pylist() + two.column("blob").to_pylist())
            if i not in (1, 11)
        ]
        assert blob_bytes(theirs.take_blobs("blob", indices=range(5))) == want
        assert blob_bytes(ours.take_blobs("blob", indices=range(5))) == want
        assert blob_storage(ours.to_table().column("blob")).equals(blob_storage(theirs.to_table().column("blob")))
    assert list(_manifest(p).fields) == list(_manifest(q).fields)


def test_schema_adopts_unnumbered_children():
    """from_descriptor: the id -1 fields after a struct without children are its children; to_descriptor
    writes a blob v2 description column that way; other schemas are unchanged."""
    from lancelot.dataset.blob import DESCRIPTION_V2
    from lancelot.schema import from_descriptor, to_descriptor

    md = {"lance-encoding:packed": "true", "lance-encoding:blob": "true"}
    s = pa.schema([pa.field("a", pa.int32()), pa.field("b", DESCRIPTION_V2, True, md), pa.field("c", pa.string())])
    fd = to_descriptor(s, 3)
    assert [(f.name, f.id, f.parent_id) for f in fd.schema.fields] == [
        ("a", 0, -1),
        ("b", 1, -1),
        ("kind", -1, -1),
        ("position", -1, -1),
        ("size", -1, -1),
        ("blob_id", -1, -1),
        ("blob_uri", -1, -1),
        ("c", 2, -1),
    ]
    assert from_descriptor(fd) == s
    plain = pa.schema([pa.field("s", pa.struct([("x", pa.int8())])), pa.field("y", pa.int8())])
    assert from_descriptor(to_descriptor(plain, 0)) == plain


@pytest.mark.parametrize("version", VERSIONS)
def test_compaction_keeps_blob_values(tmp_path, version):
    """lancelot's compaction rewrites a pylance blob dataset with its values (not its descriptions):
    pylance then reads the same bytes, deleted rows gone."""
    path = str(tmp_path / "ds")
    lance.write_dataset(_table([10, 70_000, None, 0], 10), path, data_storage_version=version)
    lance.write_dataset(_table([4 * 1024 * 1024 + 9, 3], 11, first_id=4), path, mode="append")
    lance.dataset(path).delete("id = 1")
    want = blob_bytes(lance.dataset(path).take_blobs("blob", indices=range(5)))
    ours = lancelot.dataset(path)
    metrics = ours.compact_files(target_rows_per_fragment=100)
    assert metrics.fragments_removed == 2 and metrics.fragments_added == 1
    theirs = lance.dataset(path)
    assert len(theirs.get_fragments()) == 1
    assert blob_bytes(theirs.take_blobs("blob", indices=range(5))) == want
    assert blob_bytes(lancelot.dataset(path).take_blobs("blob", indices=range(5))) == want
    assert theirs.schema == lance.dataset(path, version=1).schema


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_blob_inside_struct_scans_as_pylance(tmp_path, version):
    """A blob field under a struct scans as its description too, nulls at both levels."""
    t = pa.struct([pa.field("b", pa.large_binary(), metadata=BLOB), ("i", pa.int32())])
    arr = pa.array([{"b": b"abc", "i": 1}, {"b": None, "i": 2}, None, {"b": b"x" * 70_000, "i": 4}], t)
    path = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"s": arr, "n": pa.array([1, 2, 3, 4])}), path, data_storage_version=version)
    theirs, ours = lance.dataset(path).to_table(), lancelot.dataset(path).to_table()
    assert ours.column("s").to_pylist() == theirs.column("s").to_pylist()
    assert ours.column("s").type == theirs.column("s").type
    assert lancelot.dataset(path).take([3, 0], columns=["s"]).column(0).to_pylist() == (
        lance.dataset(path).take([3, 0], columns=["s"]).column(0).to_pylist()
    )


def test_take_blobs_by_stable_row_ids(tmp_path):
    path = str(tmp_path / "ds")
    lance.write_dataset(_table([10, 70_000, None], 12), path, enable_stable_row_ids=True)
    lance.write_dataset(_table([5, 0, 100_000], 13, first_id=10), path, mode="append")
    lance.dataset(path).delete("id = 0 or id = 10")
    theirs, ours = lance.dataset(path), lancelot.dataset(path)
    ids = theirs.to_table(with_row_id=True).column("_rowid").to_pylist()[::-1]
    assert blob_bytes(ours.take_blobs("blob", ids=ids)) == blob_bytes(theirs.take_blobs("blob", ids=ids))
    for bad in ([0], [3], [99]):  # deleted in each fragment, never assigned
        with pytest.raises(ValueError):
            theirs.take_blobs("blob", ids=bad)
        with pytest.raises(ValueError):
            ours.take_blobs("blob", ids=bad)


@pytest.mark.parametrize(
    "desc,match",
    [
        ({"kind": 0, "position": 10**12, "size": 5}, r"outside the file"),
        ({"kind": 1, "position": 0, "size": 10**9}, r"outside .*\.blob"),
        ({"kind": 2, "position": 0, "size": 5, "blob_id": 77}, r"blob file .*\.blob is missing"),
        ({"kind": 9, "position": 0, "size": 5}, r"unknown kind 9"),
    ],
)
def test_bad_v2_descriptions(tmp_path, monkeypatch, desc, match):
    """Descriptions that point outside their file, at a missing sidecar or of an unknown kind: a
    CorruptFileError naming the data file, the column and the row, never a crash or a huge read."""
    from lancelot.dataset import blob as blob_mod

    path = str(tmp_path / "ds")
    lance.write_dataset(_table([10, 70_000, 3], 14), path)
    full = {"kind": 0, "position": 0, "size": 0, "blob_id": 1, "blob_uri": ""} | desc

    class Fake:
        def __init__(self, lf):
            self.lf = lf

        def take(self, rows, columns):
            return pa.table({columns[0]: pa.array([full] * len(rows), blob_mod.DESCRIPTION_V2)})

    monkeypatch.setattr(blob_mod, "described", Fake)
    ours = lancelot.dataset(path)
    data_file = os.path.basename(ours.get_fragments()[0]._pb.files[0].path)
    with pytest.raises(CorruptFileError, match=match) as e:
        f = ours.take_blobs("blob", indices=[2])[0]
        f.read(1)
    assert data_file in str(e.value) and "column 'blob', row 2" in str(e.value)
