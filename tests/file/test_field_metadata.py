"""Field-metadata rules (lancelot/field_metadata.py) against pylance 14.0.2's files.

One rule decides which fields own columns, for the 2.0 and 2.1+ readers and writers alike; these
tests pin it to what pylance's writer does, and check both ways that the files agree.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import lancelot
from lancelot import field_metadata as fm
from lancelot.encodings import strategy
from lancelot.encodings import v2_0 as enc20
from lancelot.encodings.structural import paths, write_repdef
from tests.support.conformance import file_encodings, page_lengths, write_pylance
from tests.support.crosscheck import pylance_read_isolated, rows_json

pytest.importorskip("lance.file", reason="pylance (the test oracle) is not installed")

STRUCT = pa.struct([("a", pa.int32()), ("b", pa.float64())])
ROWS = [{"a": 1, "b": 2.0}, {"a": 3, "b": 4.0}, {"a": 5, "b": 6.5}]


def _table(md: dict[str, str] | None) -> pa.Table:
    return pa.Table.from_arrays([pa.array(ROWS, STRUCT)], schema=pa.schema([pa.field("s", STRUCT, metadata=md)]))


def _columns(path: str) -> int:
    return len(page_lengths(path))


# pylance 14.0.2's writer, observed: (metadata, packed at 2.0, packed at 2.1+)
PACKED_CASES = [
    ({"lance-encoding:packed": "true"}, True, True),
    ({"lance-encoding:packed": "TRUE"}, True, True),
    ({"lance-encoding:packed": "1"}, True, True),
    ({"lance-encoding:packed": "yes"}, True, True),
    ({"lance-encoding:packed": "on"}, True, True),
    ({"lance-encoding:packed": "Y"}, True, True),
    ({"lance-encoding:packed": "false"}, True, False),  # 2.0: the key's presence is enough
    ({"lance-encoding:packed": " true"}, True, False),  # nothing is stripped
    ({"lance-encoding:packed": "t"}, True, False),
    ({"packed": "true"}, True, True),
    ({"packed": "1"}, True, True),
    ({"packed": "false"}, False, False),
    ({"packed": "t"}, False, False),
    ({"packed": "false", "lance-encoding:packed": "true"}, False, True),  # 2.0: the bare key decides
    ({"packed": "true", "lance-encoding:packed": "false"}, True, True),
    ({}, False, False),
]

# pylance's 2.1+ reader takes only "true" (any case) as packed, its 2.0 reader any truthy value of either key:
# on these files it fails whoever wrote them (the layout is the one its writer produces)
PYLANCE_CANNOT_READ = {
    ("2.0", '{"lance-encoding:packed": "false"}'),
    ("2.0", '{"lance-encoding:packed": " true"}'),
    ("2.0", '{"lance-encoding:packed": "t"}'),
    ("2.0", '{"packed": "false", "lance-encoding:packed": "true"}'),
    ("2.1", '{"lance-encoding:packed": "1"}'),
    ("2.1", '{"lance-encoding:packed": "yes"}'),
    ("2.1", '{"lance-encoding:packed": "on"}'),
    ("2.1", '{"lance-encoding:packed": "Y"}'),
    ("2.1", '{"packed": "1"}'),
}


def _key(md: dict[str, str]) -> str:
    import json

    return json.dumps(md)


@pytest.mark.parametrize("md,packed20,packed21", PACKED_CASES, ids=[_key(c[0]) for c in PACKED_CASES])
def test_packed_rule(md, packed20, packed21):
    f = pa.field("s", STRUCT, metadata=md)
    assert fm.is_packed_struct(f, "2.0") is packed20
    assert fm.is_packed_struct(f, "2.1") is fm.is_packed_struct(f, "2.2") is packed21
    # every reader and writer asks the same rule
    assert enc20.is_packed_struct(f) is packed20
    assert paths.is_packed(f) is write_repdef.is_packed(f) is packed21
    assert strategy.options_for(f, "2.1").packed is packed21
    assert enc20.column_count(f) == (1 if packed20 else 3) == fm.column_count(f, "2.0")
    assert paths.column_count(f) == (1 if packed21 else 2) == len(write_repdef.leaf_paths(f))
    assert fm.is_packed_struct(pa.field("x", pa.int32(), metadata=md), "2.1") is False  # structs only


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("md,packed20,packed21", PACKED_CASES, ids=[_key(c[0]) for c in PACKED_CASES])
def test_packed_files_both_ways(tmp_path, version, md, packed20, packed21):
    """Both writers give the field the same columns; lancelot reads both files; pylance reads both, except
    where it cannot read its own file either."""
    t = _table(md)
    want = 1 if (packed20 if version == "2.0" else packed21) else (3 if version == "2.0" else 2)
    ours, theirs = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    lancelot.write_table(t, ours, version=version)
    write_pylance(theirs, t, version)
    assert _columns(ours) == _columns(theirs) == want
    for p in (ours, theirs):
        assert lancelot.read_table(p).equals(t)
    v = "2.1" if version == "2.2" else version
    for p in (ours, theirs):
        rc, out = pylance_read_isolated(p) if (v, _key(md)) in PYLANCE_CANNOT_READ else (0, None)
        if (v, _key(md)) in PYLANCE_CANNOT_READ:
            # pylance's reader decides "packed" with a narrower rule than its writer: it fails on the layout
            # its own writer produced (2.1+: a Rust panic that aborts the process)
            assert rc != 0, f"pylance now reads {p}: drop it from PYLANCE_CANNOT_READ"
        else:
            from lance.file import LanceFileReader

            assert LanceFileReader(p).read_all().to_table().column(0).equals(t.column(0))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("flag", ["true", "false", "", "0", "anything"])
def test_blob_flag_is_the_key(tmp_path, version, flag):
    """``lance-encoding:blob`` with any value (even "false") is a blob, to pylance's writer and to ours."""
    b = pa.array([b"x" * 10, None, b"y" * 100, b""], pa.large_binary())
    t = pa.Table.from_arrays([b], schema=pa.schema([pa.field("b", b.type, metadata={"lance-encoding:blob": flag})]))
    f = t.schema.field("b")
    assert fm.is_blob(f) and paths.is_blob(f) and strategy.options_for(f, version).blob
    ours, theirs = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    lancelot.write_table(t, ours, version=version)
    write_pylance(theirs, t, version)
    assert "blob_layout" in file_encodings(ours) and "blob_layout" in file_encodings(theirs)
    from lance.file import LanceFileReader

    for p in (ours, theirs):
        assert lancelot.read_table(p).equals(t)
        assert LanceFileReader(p).read_all().to_table().equals(t)


@pytest.mark.parametrize("flag", ["true", "false"])
def test_blob_at_2_0_like_pylance(tmp_path, flag):
    """2.0 blobs as pylance writes them: a ``blob`` column encoding over packed (position, size)
    descriptions, the bytes out of line; each reader reads both files."""
    from lancelot.format.container import read_metadata, unpack_encoding
    from lancelot.format.pb import encodings_v2_0_pb2 as pb20
    from lancelot.io.source import open_source

    b = pa.array([b"x" * 10, None, b"y" * 1000, b""], pa.large_binary())
    t = pa.Table.from_arrays([b], schema=pa.schema([pa.field("b", b.type, metadata={"lance-encoding:blob": flag})]))
    ours, theirs = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    lancelot.write_table(t, ours, version="2.0")
    write_pylance(theirs, t, "2.0")
    from lance.file import LanceFileReader

    for p in (ours, theirs):
        src = open_source(p)
        try:
            col = read_metadata(src).columns[0]
            enc = unpack_encoding(src, col.encoding, pb20.ColumnEncoding)
        finally:
            src.close()
        assert enc.WhichOneof("column_encoding") == "blob", p
        assert lancelot.read_table(p).equals(t)
        assert LanceFileReader(p).read_all().to_table().equals(t)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_blob_key_on_other_types(tmp_path, version):
    """The key on a non-binary type is no blob to the readers; the 2.1+ writers refuse it, as pylance does."""
    f = pa.field("s", pa.string(), metadata={"lance-encoding:blob": "true"})
    assert not fm.is_blob(f) and fm.asks_blob(f)
    t = pa.Table.from_arrays([pa.array(["a"])], schema=pa.schema([f]))
    with pytest.raises(lancelot.UnsupportedTypeError, match="blob field 's'"):
        lancelot.write_table(t, tmp_path / "o.lance", version=version)
    with pytest.raises(Exception, match="Blob encoding is not available for field"):
        write_pylance(tmp_path / "p.lance", t, version)


@pytest.mark.parametrize(
    "t,fixed",
    [
        (pa.bool_(), True),
        (pa.int8(), True),
        (pa.float16(), True),
        (pa.decimal128(9, 2), True),
        (pa.binary(4), True),
        (pa.timestamp("us"), True),
        (pa.date32(), True),
        (pa.list_(pa.int32(), 3), True),
        (pa.list_(pa.list_(pa.float32(), 2), 3), True),
        (pa.null(), False),
        (pa.string(), False),
        (pa.dictionary(pa.int8(), pa.string()), False),
        (pa.list_(pa.string(), 2), False),
        (pa.list_(pa.int32()), False),
    ],
)
def test_is_fixed_width_is_one_rule(t, fixed):
    assert fm.is_fixed_width(t) is fixed
    assert paths.is_fixed_width is fm.is_fixed_width


@pytest.mark.parametrize(
    "t",
    [
        pa.struct([("a", pa.list_(pa.int32())), ("b", pa.struct([("c", pa.string()), ("d", pa.list_(pa.int8(), 2))]))]),
        pa.list_(pa.struct([("x", pa.list_(pa.int64())), ("y", pa.string())])),
        pa.map_(pa.string(), pa.list_(pa.int32())),
        pa.struct([]),
        pa.list_(pa.float32(), 8),
    ],
)
def test_column_counts_agree(tmp_path, t):
    """Reader and writer allocation agree with pylance's files (2.2 for maps)."""
    from tests.support.data import gen_array

    arr = gen_array(t, 20, "some", null_structs=False) if t.num_fields else pa.array([{}] * 20, t)
    table = pa.table({"c": arr})
    for version in ["2.2"] if pa.types.is_map(t) else ["2.0", "2.1", "2.2"]:
        if version == "2.0" and t == pa.struct([]):
            continue  # 2.0 writes no struct without children (neither writer)
        theirs = write_pylance(tmp_path / f"p{version}.lance", table, version)
        lancelot.write_table(table, tmp_path / f"o{version}.lance", version=version)
        n = fm.column_count(table.schema.field("c"), version)
        assert _columns(theirs) == _columns(str(tmp_path / f"o{version}.lance")) == n


def test_pylance_reads_isolated_helper(tmp_path):
    p = str(tmp_path / "x.lance")
    t = _table(None)
    lancelot.write_table(t, p, version="2.1")
    assert pylance_read_isolated(p) == (0, rows_json(t))
