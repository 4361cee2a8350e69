"""Bad input gives a clear LanceError naming the file; never a crash or a half-written file."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.errors import CorruptFileError, LanceError, NotALanceFileError, UnsupportedVersionError


@pytest.fixture()
def good(tmp_path):
    t = pa.table(
        {
            "a": pa.array(np.arange(1000)),
            "s": pa.array([f"v{i}" for i in range(1000)]),
            "l": pa.array([[i, i + 1] if i % 3 else None for i in range(1000)]),
        }
    )
    p = tmp_path / "good.lance"
    lancelot.write_table(t, p, max_page_bytes=1024)
    return p, t


def write_bytes(tmp_path, data: bytes):
    p = tmp_path / "bad.lance"
    p.write_bytes(data)
    return p


def test_not_a_lance_file(tmp_path):
    p = write_bytes(tmp_path, b"PAR1" + bytes(100) + b"PAR1")
    with pytest.raises(NotALanceFileError, match="bad.lance.*magic"):
        lancelot.LanceFile(p)


def test_empty_and_tiny(tmp_path):
    for data in (b"", b"LANC"):
        with pytest.raises(NotALanceFileError, match="too short"):
            lancelot.LanceFile(write_bytes(tmp_path, data))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(LanceError, match="no such file"):
        lancelot.LanceFile(tmp_path / "nope.lance")
    with pytest.raises(LanceError, match="directory"):
        lancelot.LanceFile(tmp_path)


def test_truncated(good, tmp_path):
    data = good[0].read_bytes()
    for cut in (len(data) // 2, len(data) - 10, 41):
        with pytest.raises(LanceError):
            lancelot.LanceFile(write_bytes(tmp_path, data[:cut])).read()


def test_unknown_version(good, tmp_path):
    data = bytearray(good[0].read_bytes())
    data[-8:-4] = struct.pack("<HH", 9, 7)
    with pytest.raises(UnsupportedVersionError, match="9.7"):
        lancelot.LanceFile(write_bytes(tmp_path, bytes(data)))


def test_offset_outside_file(good, tmp_path):
    data = bytearray(good[0].read_bytes())
    # point the column-metadata offset table far past the end
    data[-32:-24] = struct.pack("<Q", len(data) * 10)
    with pytest.raises(CorruptFileError, match="outside"):
        lancelot.LanceFile(write_bytes(tmp_path, bytes(data)))


def test_page_buffer_past_end(tmp_path):
    """A page whose buffer lies past the data region is refused, naming column and page."""
    from lancelot.encodings.v2_0.encode import encode_values
    from lancelot.format.container import ContainerWriter, pack_encoding
    from lancelot.format.pb import file2_pb2
    from lancelot.schema import to_descriptor

    path = tmp_path / "c.lance"
    out = ContainerWriter(path, "2.0")
    bufs: list = []
    enc = encode_values(pa.array([1, 2, 3]), bufs)
    page = file2_pb2.ColumnMetadata.Page(
        buffer_offsets=[10**12], buffer_sizes=[24], length=3, encoding=pack_encoding(enc)
    )
    out.finish(
        [file2_pb2.ColumnMetadata(pages=[page])], [to_descriptor(pa.schema([("a", pa.int64())]), 3).SerializeToString()]
    )
    with pytest.raises(CorruptFileError, match=r"c.lance.*column 0.*page 0"):
        lancelot.LanceFile(path)


def test_random_corruption_never_crashes(good, tmp_path):
    """Flip bytes in the metadata region: always a LanceError or a successful read."""
    data = good[0].read_bytes()
    meta_start = struct.unpack_from("<Q", data, len(data) - 40)[0]
    rng = np.random.default_rng(0)
    for _trial in range(150):
        d = bytearray(data)
        for pos in rng.integers(meta_start, len(d) - 4, 3):
            d[pos] = int(rng.integers(0, 256))
        p = write_bytes(tmp_path, bytes(d))
        try:
            f = lancelot.LanceFile(p)
            f.read()
            f.take([0, 999])
        except LanceError:
            pass


def test_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "out.lance"
    schema = pa.schema([("a", pa.int64())])

    def batches():
        yield pa.record_batch([pa.array([1, 2, 3])], schema=schema)
        raise RuntimeError("source failed mid-stream")

    with pytest.raises(RuntimeError):
        lancelot.write_table(batches(), target)
    assert list(tmp_path.iterdir()) == []


def test_schema_mismatch(tmp_path):
    target = tmp_path / "out.lance"
    with pytest.raises(lancelot.SchemaMismatchError, match="'a'"):
        with lancelot.LanceWriter(target, pa.schema([("a", pa.int64())])) as w:
            w.write(pa.table({"a": pa.array(["x"])}))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(lancelot.SchemaMismatchError, match="columns"):
        lancelot.write_table(iter([pa.record_batch({"a": [1]}), pa.record_batch({"b": [1]})]), target)
    assert not target.exists()


def test_overwrite_keeps_old_file_on_failure(good, tmp_path):
    path, t = good
    before = path.read_bytes()
    with pytest.raises(RuntimeError):
        with lancelot.LanceWriter(path, t.schema) as w:
            w.write(t)
            raise RuntimeError("boom")
    assert path.read_bytes() == before


def test_unsupported_versions_are_clear(tmp_path):
    with pytest.raises(UnsupportedVersionError, match="unknown file version"):
        lancelot.write_table(pa.table({"a": [1]}), tmp_path / "x.lance", version="3.9")


def test_take_out_of_range(good):
    f = lancelot.LanceFile(good[0])
    with pytest.raises(LanceError, match="out of range"):
        f.take([1000])
    with pytest.raises(LanceError, match="no column"):
        f.read(columns=["zzz"])


def test_written_file_has_the_usual_mode(tmp_path):
    import os

    path = tmp_path / "m.lance"
    lancelot.write_table(pa.table({"a": [1]}), path)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
