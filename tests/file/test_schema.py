"""Arrow schema <-> FileDescriptor: byte-identical to what pylance stores, for every type."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lancelot.format.container import read_metadata
from lancelot.format.pb import file_pb2
from lancelot.io.source import open_source
from lancelot.schema import from_descriptor, logical_type, parse_logical_type, to_descriptor

lance_file = pytest.importorskip("lance.file", reason="pylance (the test oracle) is not installed")

SCHEMAS = {
    "flat": pa.schema(
        [
            pa.field("a", pa.int64(), False, {"k": "v"}),
            ("b", pa.timestamp("ns", "Asia/Tokyo")),
            ("c", pa.decimal256(50, 10)),
            ("d", pa.dictionary(pa.int16(), pa.string())),
        ],
        metadata={"owner": "me"},
    ),
    "nested": pa.schema(
        [
            ("l", pa.list_(pa.struct([("x", pa.large_list(pa.float16()))]))),
            ("v", pa.list_(pa.float32(), 4)),
            ("f", pa.binary(7)),
        ]
    ),
    "fsl_struct": pa.schema([("f", pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())]), 2))]),
    "map": pa.schema([("m", pa.map_(pa.string(), pa.list_(pa.int8())))]),
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_descriptor_identical_to_pylance(tmp_path, name):
    schema = SCHEMAS[name]
    path = tmp_path / "s.lance"
    with lance_file.LanceFileWriter(str(path), schema, version="2.2"):
        pass
    src = open_source(path)
    md = read_metadata(src)
    theirs = file_pb2.FileDescriptor()
    theirs.ParseFromString(bytes(src.read(*md.global_buffers[0])))
    assert to_descriptor(schema, theirs.length) == theirs
    assert from_descriptor(theirs).equals(schema, check_metadata=True)


def test_logical_types_round_trip():
    for t in [
        pa.time32("ms"),
        pa.duration("ns"),
        pa.timestamp("s"),
        pa.date64(),
        pa.large_binary(),
        pa.list_(pa.int8(), 3),
        pa.dictionary(pa.uint8(), pa.binary()),
    ]:
        assert parse_logical_type(logical_type(t)) == t
