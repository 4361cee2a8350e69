"""Blob columns at every file version pylance 14 writes them (2.0, 2.1, 2.2 and the unstable 2.3), legacy
(``lance-encoding:blob`` large_binary) and blob v2 (``lance.blob.v2``, 2.2 and later), written by one library and
read by the other: scans with and without the blob column (descriptions), ``take_blobs`` by indices, row ids and
row addresses, ``BlobFile`` reads and seeks, over two fragments with deletions, nulls, empty, inline, packed and
dedicated values; compaction by either library; and the blob bytes themselves, which sit in the data files and
sidecars exactly where and as pylance writes them (the regions and sidecars are byte-identical)."""

from __future__ import annotations

import glob
import os
import shutil
import warnings

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from tests.dataset.helpers import blob_bytes, blob_storage

BLOB = {"lance-encoding:blob": "true"}
#: null, empty, inline (<= 64 KiB), packed (<= 4 MiB) and dedicated values at 2.2+; small values after them
SIZES_1 = [10, None, 0, 65536, 65537, 70_000, 4 * 1024 * 1024 + 1, 3] + [i % 70 for i in range(120)]
SIZES_2 = [5, 70_000, None, 0, 64]
LIBS = {"pylance": lance, "lancelot": lancelot}
CASES = [(v, "legacy") for v in ["2.0", "2.1", "2.2", "2.3"]] + [(v, "v2") for v in ["2.2", "2.3"]]
CASE_IDS = [f"{v}-{k}" for v, k in CASES]


def _values(sizes: list[int | None], seed: int) -> list[bytes | None]:
    rng = np.random.default_rng(seed)
    return [None if s is None else rng.integers(0, 256, s, dtype=np.uint8).tobytes() for s in sizes]


def _table(lib: str, kind: str, values: list[bytes | None], first: int) -> pa.Table:
    ids = pa.array(range(first, first + len(values)), pa.int64())
    if kind == "v2":
        return pa.table({"id": ids, "b": LIBS[lib].blob_array(values)})
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("b", pa.large_binary(), metadata=BLOB)])
    return pa.Table.from_arrays([ids, pa.array(values, pa.large_binary())], schema=schema)


def _write(lib: str, path: str, version: str, kind: str) -> str:
    mod = LIBS[lib]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 2.3's UnstableVersionWarning
        mod.write_dataset(_table(lib, kind, _values(SIZES_1, 1), 0), path, data_storage_version=version)
        mod.write_dataset(_table(lib, kind, _values(SIZES_2, 2), 1000), path, mode="append")
    mod.dataset(path).delete("id = 4 or id = 1001 or id = 50")
    return path


@pytest.fixture(scope="module", params=CASES, ids=CASE_IDS)
def twins(request, tmp_path_factory):
    """The same blob dataset written by each library: {writer: path}, version, kind."""
    version, kind = request.param
    root = tmp_path_factory.mktemp(f"blobs_{version}_{kind}")
    return {lib: _write(lib, str(root / lib), version, kind) for lib in LIBS}, version, kind


def _state(mod, path: str) -> dict[str, object]:
    """What a library reads of a blob dataset, for comparison."""
    ds = mod.dataset(path)
    n = ds.count_rows()
    rows = list(range(n))
    rowids = ds.to_table(columns=["id"], with_row_id=True)["_rowid"].to_pylist()
    addrs = ds.to_table(columns=["id"], with_row_address=True)["_rowaddr"].to_pylist()
    files = ds.take_blobs("b", indices=[0, 3, 4, 5, 6])
    seeks = [(f.size(), f.seek(7), f.tell(), f.read(5), f.seek(-3, 2), f.read(), f.seek(0), f.readall()) for f in files]
    full = ds.to_table()
    return {
        "full": (full.schema, full.column("id"), blob_storage(full.column("b"))),
        "ids": ds.to_table(columns=["id"]),
        "blob only": blob_storage(ds.to_table(columns=["b"]).column("b")),
        "filtered": blob_storage(ds.to_table(columns=["b"], filter="id >= 100").column("b")),
        "projected": ds.scanner(columns=["b", "id"]).projected_schema,
        "by indices": blob_bytes(ds.take_blobs("b", indices=rows)),
        "by ids": blob_bytes(ds.take_blobs("b", ids=rowids[::-3])),
        "by addresses": [None if f is None else f.size() for f in ds.take_blobs("b", addresses=addrs[1::4])],
        "blob files": seeks,
    }


def _assert_same(theirs: dict[str, object], ours: dict[str, object]) -> None:
    for key in theirs:
        assert ours[key] == theirs[key], key


@pytest.mark.parametrize("writer", list(LIBS))
def test_each_reads_the_others(twins, writer):
    paths, _, _ = twins
    _assert_same(_state(lance, paths[writer]), _state(lancelot, paths[writer]))


def test_twins_read_alike(twins):
    paths, _, _ = twins
    _assert_same(_state(lance, paths["pylance"]), _state(lancelot, paths["lancelot"]))


def test_values_are_the_written_ones(twins):
    paths, _, _ = twins
    ds = lancelot.dataset(paths["lancelot"])
    written = [v for i, v in enumerate(_values(SIZES_1, 1)) if i not in (4, 50)]
    written += [v for i, v in enumerate(_values(SIZES_2, 2)) if i != 1]
    assert blob_bytes(ds.take_blobs("b", indices=list(range(ds.count_rows())))) == written


def _blob_ends(path: str) -> list[int]:
    """Per data file (in fragment order), the end of its last value stored in the file itself."""
    ds = lance.dataset(path)
    ends = []
    for frag in ds.get_fragments():
        desc = blob_storage(frag.to_table(columns=["b"]).column("b")).to_pylist()
        inline = [d for d in desc if d and d["size"] and d.get("kind", 0) == 0]
        ends.append(max(d["position"] + d["size"] for d in inline))
    return ends


def _data_files(path: str) -> list[str]:
    frags = lance.dataset(path).get_fragments()
    return [os.path.join(path, "data", f.path) for frag in frags for f in frag.data_files()]


def _sidecars(path: str) -> list[list[bytes]]:
    """The sidecar files of each data file (in fragment order), by name."""
    out = []
    for data_file in _data_files(path):
        names = sorted(glob.glob(os.path.join(data_file.removesuffix(".lance"), "*.blob")))
        out.append([open(p, "rb").read() for p in names])
    return out


def test_blob_bytes_are_pylances(twins):
    """Values and the padding between them (pylance's 0x48) are byte-identical, in the data file and sidecars."""
    paths, _, _ = twins
    ends = _blob_ends(paths["pylance"])
    assert ends == _blob_ends(paths["lancelot"])
    for end, theirs, ours in zip(ends, _data_files(paths["pylance"]), _data_files(paths["lancelot"])):
        with open(theirs, "rb") as a, open(ours, "rb") as b:
            assert a.read(end) == b.read(end)
    assert _sidecars(paths["lancelot"]) == _sidecars(paths["pylance"])


@pytest.mark.parametrize("compactor", list(LIBS))
@pytest.mark.parametrize("writer", list(LIBS))
def test_compaction_both_ways(twins, tmp_path, writer, compactor):
    paths, _, _ = twins
    before = _state(lance, paths[writer])["by indices"]
    copy = str(tmp_path / "ds")
    shutil.copytree(paths[writer], copy)
    LIBS[compactor].dataset(copy).optimize.compact_files()
    assert len(lance.dataset(copy).get_fragments()) == 1
    theirs, ours = _state(lance, copy), _state(lancelot, copy)
    _assert_same(theirs, ours)
    assert theirs["by indices"] == before


@pytest.mark.parametrize("version", ["2.2", "2.3"])
def test_thresholds_and_pack_rollover_as_pylance(tmp_path, version):
    """``blob_field`` thresholds: inline, packed and dedicated values interleaved, packed sidecars that fill up and
    roll over; sidecar ids are given in row order, so descriptions and sidecars are pylance's, byte for byte."""
    values = _values([5, 10, 11, 500, 999, 1000, 1001, 5000, None, 0] * 30, 3)
    paths = {}
    for lib, mod in LIBS.items():
        field = mod.blob_field(
            "b", inline_size_threshold=10, dedicated_size_threshold=1000, pack_file_size_threshold=20000
        )
        schema = pa.schema([pa.field("id", pa.int64()), field])
        table = pa.Table.from_arrays([pa.array(range(len(values))), mod.blob_array(values)], schema=schema)
        paths[lib] = _write_once(lib, str(tmp_path / lib), table, version)
    theirs, ours = (lance.dataset(paths[lib]).to_table().column("b") for lib in LIBS)
    assert blob_storage(ours).equals(blob_storage(theirs))
    assert _sidecars(paths["lancelot"]) == _sidecars(paths["pylance"])
    for path in paths.values():
        for mod in LIBS.values():
            assert blob_bytes(mod.dataset(path).take_blobs("b", indices=list(range(len(values))))) == values


def _write_once(lib: str, path: str, table: pa.Table, version: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        LIBS[lib].write_dataset(table, path, data_storage_version=version, max_rows_per_file=120)
    return path
