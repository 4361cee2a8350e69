"""Damaged blob datasets: the corrupt-input and fuzz contract of
tests/encodings/test_corrupt_compression.py extended to blob layouts.

pylance-written blob datasets at 2.0, 2.1 and 2.2 (2.2 with inline values, a packed sidecar and
dedicated sidecars) are damaged, seeded, in the ways below, then read through every blob API
(``to_table``, ``take``, ``take_blobs`` with 1-byte / middle / tail reads, ``read_blobs``,
``read_blob_ranges``).  Each read returns or raises a LanceError that names the file (data file or
sidecar) and, for a bad description, the column and row; never another exception, a hang, a huge
allocation, or a read outside a file (every local read is checked against the file's size).

* ``page``: random bytes, bit flips or u64 edge words in the page buffers of the blob column;
* ``sidecar``: a sidecar truncated, removed, or overwritten with random bytes (2.2);
* ``truncate``: the data file cut short (its footer gone);
* ``description``: one 2.0 description's position or size set to an edge value (2.0 stores them raw).
"""

from __future__ import annotations

import glob
import os
import random
import shutil
import struct
from contextlib import contextmanager

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.errors import CorruptFileError, LanceError
from lancelot.format.container import read_metadata
from lancelot.io import source as source_mod
from lancelot.io.source import MemorySource
from tests.helpers import bounded

VERSIONS = ["2.0", "2.1", "2.2", "2.3"]
BLOB = {"lance-encoding:blob": "true"}
ROWS = 40
TRIALS = 12
MAX_TRACED = 64 << 20  # the datasets are < 200 KB: no read of them needs more
WATCHDOG_SECONDS = 30
EDGES = [0, 1, 2**31 - 1, 2**32, 2**63 - 1, 2**64 - 1]


def _table(version: str) -> pa.Table:
    rng = np.random.default_rng(32)
    sizes = rng.integers(0, 3000, ROWS)
    vals = [None if k % 9 == 4 else rng.integers(0, 256, int(s), dtype=np.uint8).tobytes() for k, s in enumerate(sizes)]
    if version == "2.2":  # small thresholds: inline, packed and dedicated values in a small dataset
        field = lance.blob_field("blob", inline_size_threshold=500, dedicated_size_threshold=2000)
        col = lance.blob_array(vals)
    else:
        field, col = pa.field("blob", pa.large_binary(), metadata=BLOB), pa.array(vals, pa.large_binary())
    return pa.Table.from_arrays(
        [pa.array(range(ROWS), pa.int64()), col], schema=pa.schema([pa.field("id", pa.int64()), field])
    )


@pytest.fixture(scope="module", params=VERSIONS)
def original(request, tmp_path_factory):
    v = request.param
    path = str(tmp_path_factory.mktemp(f"blob_corrupt_{v}") / "ds")
    lance.write_dataset(_table(v), path, data_storage_version=v)
    if v == "2.2":
        kinds = set(lance.dataset(path).to_table().column("blob").combine_chunks().field("kind").to_pylist())
        assert {0, 1, 2} <= kinds
    return path, v


def _copy(original, tmp_path) -> tuple[str, str]:
    path, _ = original
    dst = str(tmp_path / "ds")
    shutil.copytree(path, dst)
    return dst, glob.glob(os.path.join(dst, "data", "*.lance"))[0]


@contextmanager
def guarded(monkeypatch):
    """A watchdog, a tracemalloc bound, and every local read checked against its file's size."""
    reads: list[tuple[str, int, int, int]] = []
    inner = source_mod.LocalFileSource.read_ranges

    def checked(self, ranges):
        for offset, length in ranges:
            reads.append((self.path, offset, length, self.size))
            assert 0 <= offset and offset + length <= self.size, f"read [{offset}, {offset + length}) of {self.path}"
        return inner(self, ranges)

    monkeypatch.setattr(source_mod.LocalFileSource, "read_ranges", checked)

    try:
        with bounded(MAX_TRACED, WATCHDOG_SECONDS):
            yield reads
    finally:
        monkeypatch.undo()


def _read_all(path: str) -> list[LanceError]:
    """Every blob API over the dataset; the LanceErrors raised (one per API at most)."""
    errors: list[LanceError] = []

    def attempt(fn):
        try:
            fn()
        except LanceError as e:
            errors.append(e)

    ds = None

    def open_ds():
        nonlocal ds
        ds = lancelot.dataset(path)
        ds.to_table()

    attempt(open_ds)
    if ds is None:
        return errors
    attempt(lambda: ds.take([0, ROWS - 1, 7, 7]))

    def files():
        for f in ds.take_blobs("blob", indices=range(ROWS)):
            if f is None:
                continue
            n = f.size()
            one = f.read(1)
            f.seek(n // 2)
            mid = f.read(17)
            f.seek(max(n - 1, 0))
            tail = f.read(10)
            assert len(one) == min(1, n) and len(mid) == min(17, n - n // 2) and len(tail) == min(1, n)

    attempt(files)
    attempt(lambda: ds.read_blobs("blob", indices=range(ROWS)))
    attempt(lambda: ds.read_blob_ranges("blob", [(i, 0, 0) for i in range(ROWS)], selector="indices"))
    return errors


def _names(path: str) -> set[str]:
    out = set()
    for _root, _, files in os.walk(os.path.join(path, "data")):
        out.update(files)
    return out


def _check(errors: list[LanceError], path: str, names: set[str]) -> None:
    for e in errors:
        text = str(e)
        assert any(n in text for n in names), f"the error names no file of the dataset: {text}"
        if "blob description" in text or "blob file" in text:
            assert "column 'blob', row" in text, text


def _blob_pages(data: bytes) -> list[tuple[int, int]]:
    """(offset, size) of each buffer of the blob column's pages (column 1: ``id`` is column 0)."""
    meta = read_metadata(MemorySource(data, "f.lance"))
    out = []
    for col in meta.columns[1:]:
        for page in col.pages:
            out += [(int(o), int(s)) for o, s in zip(page.buffer_offsets, page.buffer_sizes) if s]
    return out


def _damage_page(data: bytearray, rnd: random.Random) -> None:
    off, size = rnd.choice(_blob_pages(bytes(data)))
    how = rnd.choice(["bytes", "bits", "word"])
    if how == "bytes":
        for _ in range(rnd.randint(1, 8)):
            data[off + rnd.randrange(size)] = rnd.randrange(256)
    elif how == "bits":
        for _ in range(rnd.randint(1, 8)):
            data[off + rnd.randrange(size)] ^= 1 << rnd.randrange(8)
    elif size >= 8:
        at = off + rnd.randrange(size - 7)
        data[at : at + 8] = struct.pack("<Q", rnd.choice(EDGES))


@pytest.mark.parametrize("seed", range(TRIALS))
def test_damaged_blob_pages(original, tmp_path, monkeypatch, seed):
    path, data_file = _copy(original, tmp_path)
    data = bytearray(open(data_file, "rb").read())
    _damage_page(data, random.Random(seed * 7919 + len(original[1])))
    open(data_file, "wb").write(bytes(data))
    with guarded(monkeypatch):
        errors = _read_all(path)
    _check(errors, path, _names(path))


def test_truncated_data_file(original, tmp_path, monkeypatch):
    path, data_file = _copy(original, tmp_path)
    size = os.path.getsize(data_file)
    with open(data_file, "r+b") as fh:
        fh.truncate(size // 2)
    with guarded(monkeypatch):
        errors = _read_all(path)
    assert errors
    _check(errors, path, {os.path.basename(data_file)})


@pytest.mark.parametrize("original", ["2.2"], indirect=True)  # sidecars are 2.2's
@pytest.mark.parametrize("how", ["truncate", "remove", "scribble", "empty"])
def test_damaged_sidecars(original, tmp_path, monkeypatch, how):
    """A packed sidecar cut short or gone: the rows whose bytes it no longer holds fail naming the
    sidecar, the data file, the column and the row; the other rows still read as before."""
    path, _ = _copy(original, tmp_path)
    before = lancelot.dataset(original[0]).read_blobs("blob", indices=range(ROWS))
    sidecars = sorted(glob.glob(os.path.join(path, "data", "*", "*.blob")), key=os.path.getsize)
    victim = sidecars[-1]  # the packed one (the largest)
    rnd = random.Random(len(how))
    left = {"truncate": os.path.getsize(victim) // 3, "remove": -1, "empty": 0}.get(how, os.path.getsize(victim))
    if how == "truncate":
        with open(victim, "r+b") as fh:
            fh.truncate(left)
    elif how == "remove":
        os.remove(victim)
    elif how == "empty":
        open(victim, "wb").close()
    else:
        blob = bytearray(open(victim, "rb").read())
        for _ in range(20):
            blob[rnd.randrange(len(blob))] = rnd.randrange(256)
        open(victim, "wb").write(bytes(blob))
    ours = lancelot.dataset(path)
    desc = ours.to_table().column("blob").combine_chunks()
    name = os.path.basename(victim)
    from lancelot.dataset.blob import blob_file_name

    hit = [
        i
        for i, d in enumerate(desc.to_pylist())
        if d
        and d["kind"] in (1, 2)
        and f"{blob_file_name(d['blob_id'])}.blob" == name
        and d["position"] + d["size"] > left
    ]
    assert hit or how == "scribble"
    with guarded(monkeypatch):
        errors = _read_all(path)
        if how == "scribble":  # the sizes still hold: other bytes, no error (Lance has no checksums)
            assert not errors
        else:
            assert errors
            _check(errors, path, {name})
            for i in hit:
                with pytest.raises(CorruptFileError, match=rf"column 'blob', row {i}\b.*{name}") as e:
                    ours.take_blobs("blob", indices=[i])[0].read(1)
                assert os.path.basename(ours.get_fragments()[0]._pb.files[0].path) in str(e.value)
            others = [i for i in range(ROWS) if i not in hit]
            assert ours.read_blobs("blob", indices=others) == [before[i] for i in others]


@pytest.mark.parametrize("value", EDGES)
@pytest.mark.parametrize("which", ["position", "size"])
@pytest.mark.parametrize("original", ["2.0"], indirect=True)  # 2.0 stores descriptions raw
def test_bad_2_0_description(original, tmp_path, monkeypatch, which, value):
    """2.0 stores each description as two raw u64s: one set to an edge value reads as the bytes it
    names when they lie inside the file, else fails naming the file, column and row."""
    path, data_file = _copy(original, tmp_path)
    data = bytearray(open(data_file, "rb").read())
    descs = lance.dataset(original[0]).to_table().column("blob").combine_chunks().to_pylist()
    row = max(range(ROWS), key=lambda i: descs[i]["size"])
    at = data.find(struct.pack("<QQ", descs[row]["position"], descs[row]["size"]))
    assert at > 0
    at += 0 if which == "position" else 8
    data[at : at + 8] = struct.pack("<Q", value)
    open(data_file, "wb").write(bytes(data))
    pos = value if which == "position" else descs[row]["position"]
    size = value if which == "size" else descs[row]["size"]
    ours = lancelot.dataset(path)
    with guarded(monkeypatch):
        if (pos, size) == (1, 0):  # 2.0's null
            assert ours.take_blobs("blob", indices=[row]) == [None]
        elif pos + size <= len(data):
            assert ours.take_blobs("blob", indices=[row])[0].readall() == bytes(data[pos : pos + size])
        else:
            with pytest.raises(CorruptFileError, match=rf"column 'blob', row {row}\b.*outside") as e:
                ours.take_blobs("blob", indices=[row])
            assert os.path.basename(data_file) in str(e.value)
            with pytest.raises(CorruptFileError, match=rf"row {row}\b"):
                ours.read_blobs("blob", indices=[row])
        _check(_read_all(path), path, {os.path.basename(data_file)})
