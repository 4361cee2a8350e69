"""A dataset of 100,000 fragments opens and counts its rows in memory bounded by its manifest,
not by Python objects per fragment: the manifest (synthetic, written by lancelot's
manifest writer, every fragment a copy of one pylance-written fragment) is checked by pylance."""

from __future__ import annotations

import os
import tracemalloc

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset.manifest import manifest_name, parse_manifest_name, serialize_manifest
from lancelot.format.pb import table_pb2
from lancelot.util import jit
from lancelot.util.wire import encode_varint

FRAGMENTS = 100_000
ROWS = 10
#: the bound: an open and count_rows trace (tracemalloc) at most the manifest file's bytes plus
#: this much; the manifest is read once (no copy of its message) and parsed into protobuf's own
#: arena (about as large as the file, not traced), and no Python object is built per fragment
EXTRA_BYTES = 1 << 20


@pytest.fixture(scope="module")
def huge(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    """(uri, manifest bytes) of a dataset whose latest version lists FRAGMENTS fragments."""
    uri = str(tmp_path_factory.mktemp("huge") / "ds.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(ROWS), pa.int64())}), uri)
    ds = lancelot.dataset(uri)
    m = table_pb2.Manifest()
    m.CopyFrom(ds.manifest)
    one = table_pb2.DataFragment()
    one.CopyFrom(m.fragments[0])
    one.id = 0  # (proto3: not serialized; each copy gets its own id field first)
    body = one.SerializeToString()
    del m.fragments[:]
    m.version = ds.version + 1
    m.max_fragment_id = FRAGMENTS - 1
    tag = b"\x12"  # Manifest.fragments: field 2, length-delimited; DataFragment.id: field 1, varint
    ids = (b"\x08" + encode_varint(k) for k in range(FRAGMENTS))
    frags = b"".join(tag + encode_varint(len(i) + len(body)) + i + body for i in ids)
    m.MergeFromString(frags)
    assert len(m.fragments) == FRAGMENTS
    names = os.listdir(os.path.join(uri, "_versions"))
    scheme = next(p[1] for p in map(parse_manifest_name, names) if p is not None)
    data = serialize_manifest(m)
    with open(os.path.join(uri, "_versions", manifest_name(m.version, scheme)), "wb") as f:
        f.write(data)
    return uri, len(data)


def test_100k_fragment_manifest_opens_within_memory_bound(huge: tuple[str, int]) -> None:
    uri, size = huge
    jit.wait_for_warm_ups()  # (no background compile while tracemalloc starts or stops: CPython 3.11)
    tracemalloc.start()
    try:
        ds = lancelot.dataset(uri)
        assert ds.count_rows() == FRAGMENTS * ROWS
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        jit.wait_for_warm_ups()
        tracemalloc.stop()
    assert peak < size + EXTRA_BYTES, f"peak {peak} bytes for a manifest of {size}"
    last = ds.get_fragment(FRAGMENTS - 1)
    assert last is not None and last.count_rows() == ROWS


def test_pylance_reads_the_synthetic_manifest(huge: tuple[str, int]) -> None:
    uri, _ = huge
    ref = lance.dataset(uri)
    assert ref.count_rows() == FRAGMENTS * ROWS
    assert ref.version == lancelot.dataset(uri).version
