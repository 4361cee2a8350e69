"""The reference's test_ingestion.py and the dataset parts of test_arrow.py (python/python/tests/, lancedb/lance),
re-expressed: appends that respect or break nullability (top level, in structs, in lists) into datasets created by
either library, refused with pylance's "contained null values"; extension types through take; a packed struct of
variable-width children at 2.2."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancelot

LIBS = [lance, lancelot]
IDS = ["pylance", "lancelot"]

_S = pa.string()
#: (schema of the dataset, schema the data claims, rows, whether the append is accepted)
_CASES = {
    "nullable-into-nullable": ([("a", _S, True)], [("a", _S, True)], {"a": ["7", None]}, True),
    "nonnull-into-nullable": ([("a", _S, True)], [("a", _S, False)], {"a": ["7"]}, True),
    "nonnull-into-nonnull": ([("a", _S, False)], [("a", _S, False)], {"a": ["7"]}, True),
    "nullable-no-nulls-into-nonnull": ([("a", _S, False)], [("a", _S, True)], {"a": ["7"]}, True),
    "null-into-nonnull": ([("a", _S, False)], [("a", _S, True)], {"a": [None]}, False),
    "null-claimed-nonnull": ([("a", _S, False)], [("a", _S, False)], {"a": [None]}, False),
}


def _schema(fields: list[tuple[str, pa.DataType, bool]]) -> pa.Schema:
    return pa.schema([pa.field(n, t, nullable=ok) for n, t, ok in fields])


def _struct(outer: bool, inner: bool) -> pa.Schema:
    return pa.schema([pa.field("point", pa.struct([pa.field("x", _S, nullable=inner)]), nullable=outer)])


def _list(outer: bool, inner: bool) -> pa.Schema:
    return pa.schema([pa.field("list", pa.list_(pa.field("item", _S, nullable=inner)), nullable=outer)])


_NESTED = {
    "struct-null-outer-ok": (_struct(True, False), {"point": [None]}, True),
    "struct-null-inner-refused": (_struct(True, False), {"point": [{"x": None}]}, False),
    "struct-null-nonnull-outer-refused": (_struct(False, True), {"point": [None]}, False),
    "struct-null-inner-ok": (_struct(False, True), {"point": [{"x": None}]}, True),
    "list-null-outer-ok": (_list(True, False), {"list": [None]}, True),
    "list-null-item-refused": (_list(True, False), {"list": [[None]]}, False),
    "list-null-nonnull-outer-refused": (_list(False, True), {"list": [None]}, False),
    "list-null-item-ok": (_list(False, True), {"list": [[None]]}, True),
}


def _append(creator, appender, uri: str, schema: pa.Schema, data: dict, claimed: pa.Schema, version: str) -> bool:
    """Create an empty dataset of ``schema`` with ``creator``, append ``data`` with ``appender``: accepted or not
    (a refusal must name the nulls, as pylance's "contained null values" does, and leave the dataset as it was)."""
    creator.write_dataset([], uri, schema=schema, data_storage_version=version)
    try:
        appender.write_dataset(pa.table(data, schema=claimed), uri, mode="append")
    except Exception as e:
        assert "null values" in str(e) or "nulls" in str(e), e  # (pylance: "... contained null values ...")
        assert isinstance(e, OSError), type(e)
        assert lance.dataset(uri).version == 1
        return False
    return True


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("case", list(_CASES))
@pytest.mark.parametrize("creator", LIBS, ids=IDS)
def test_nullability(tmp_path, version, case, creator) -> None:
    """Top-level columns: the append of each library is accepted or refused as pylance's."""
    target, claimed, data, ok = _CASES[case]
    got = [
        _append(creator, lib, str(tmp_path / lib.__name__), _schema(target), data, _schema(claimed), version)
        for lib in LIBS
    ]
    assert got == [ok, ok]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("case", list(_NESTED))
def test_nested_nullability(tmp_path, version, case) -> None:
    """Nulls under structs and lists: a non-nullable child may be null only under a null parent."""
    schema, data, ok = _NESTED[case]
    got = [_append(lib, lib, str(tmp_path / lib.__name__), schema, data, schema, version) for lib in LIBS]
    assert got == [ok, ok]


@pytest.mark.parametrize("writer", LIBS, ids=IDS)
def test_roundtrip_take_ext_types(tmp_path, writer) -> None:
    """A fixed-shape tensor column survives a take, read by either library."""
    storage = pa.FixedSizeListArray.from_arrays(pa.array([float(x) for x in range(18)], pa.float32()), 6)
    tensors = pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(pa.float32(), [2, 3]), storage)
    writer.write_dataset(pa.Table.from_arrays([tensors], ["tensor"]), str(tmp_path / "d"))
    for reader in LIBS:
        rows = reader.dataset(str(tmp_path / "d")).take([0, 2])
        assert rows.schema.field("tensor").type == tensors.type
        assert rows["tensor"].to_pylist() == [[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [12.0, 13.0, 14.0, 15.0, 16.0, 17.0]]


@pytest.mark.parametrize("writer", LIBS, ids=IDS)
def test_struct_variable_children_roundtrip(tmp_path, writer) -> None:
    """A packed struct (``lance-encoding:packed``) of variable-width children at 2.2: written with pylance's
    variable packed-struct encoding and read back equal, with its metadata, by both."""
    struct_type = pa.struct([("id", pa.int32()), ("text", pa.utf8()), ("payload", pa.binary())])
    field = pa.field("record", struct_type, metadata={"lance-encoding:packed": "true"})
    arr = pa.StructArray.from_arrays(
        [
            pa.array([1, 2, 3, 4], pa.int32()),
            pa.array(["alpha", "beta", "gamma", "delta"]),
            pa.array([b"\x01\x02", b"\xff", b"\x03\x04\x05", b"\x10"]),
        ],
        type=struct_type,
    )
    table = pa.Table.from_arrays([arr], schema=pa.schema([field]))
    p = tmp_path / "d"
    writer.write_dataset(table, str(p), data_storage_version="2.2")
    for reader in LIBS:
        got = reader.dataset(str(p)).to_table()
        assert got.schema == table.schema and got.equals(table)
    from lance.file import LanceFileReader

    data_file = next((p / "data").glob("*.lance"))
    encodings = [page.encoding for page in LanceFileReader(str(data_file)).metadata().columns[0].pages]
    assert any("VariablePackedStruct" in e for e in encodings), encodings
