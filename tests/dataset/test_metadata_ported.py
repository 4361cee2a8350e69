"""The reference's python/python/tests/test_dataset.py (lancedb/lance) tests of metadata: schema, table and
field metadata, config, stats, the metadata cache, ported: each test runs the same code with pylance and with
lancelot (``lib``), pylance the oracle; what lancelot writes is read back by pylance. Row counts are scaled
down where the test's logic allows (noted). Where pylance 14.0.2 differs from the reference's assertion, the
test follows pylance 14.0.2 and says so. docs/ported-tests.md lists every reference test and where it is."""

from __future__ import annotations

import base64
import pickle

import lance
import lance.file
import lance.fragment
import pyarrow as pa
import pytest

from tests.dataset.helpers import LIBS


@pytest.mark.parametrize("lib", LIBS)
def test_schema_metadata(tmp_path, lib) -> None:
    mod = LIBS[lib]
    schema = pa.schema(
        [pa.field("a", pa.int64(), metadata={b"thisis": "a"}), pa.field("b", pa.int64(), metadata={b"thisis": "b"})],
        metadata={b"foo": b"bar", b"baz": b"qux"},
    )
    table = pa.Table.from_pydict({"a": range(100), "b": range(100)}, schema=schema)
    ds = mod.write_dataset(table, tmp_path)

    def check(meta: dict, a: bytes, b: bytes = b"b") -> None:
        for s in (ds.schema, lance.dataset(tmp_path).schema):
            assert s.metadata == meta
            assert s.field("a").metadata == {b"thisis": a} and s.field("b").metadata == {b"thisis": b}

    check({b"foo": b"bar", b"baz": b"qux"}, b"a")
    ds.update_schema_metadata({"foo": "baz"}, replace=True)
    check({b"foo": b"baz"}, b"a")
    ds.update_field_metadata({"a": {"thisis": "c"}}, replace=True)
    check({b"foo": b"baz"}, b"c")
    ds = mod.write_dataset(table, tmp_path, mode="overwrite")  # an overwrite's metadata is its data's
    check({b"foo": b"bar", b"baz": b"qux"}, b"a")


@pytest.mark.parametrize("lib", LIBS)
def test_access_config(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.Table.from_pydict({"a": range(100), "b": range(100)}), tmp_path / "test", mode="create")
    ds.update_config({"test_key": "test_value"})
    assert ds.config()["test_key"] == "test_value" and len(ds.config()) == 1
    ds.delete_config_keys(["test_key"])
    assert len(ds.config()) == 0 and lance.dataset(tmp_path / "test").config() == {}


@pytest.mark.parametrize("lib", LIBS)
def test_metadata(tmp_path, lib) -> None:
    mod = LIBS[lib]
    data = pa.table({"a": range(100)}).replace_schema_metadata({"foo": pickle.dumps("foo")})
    with pytest.raises(ValueError):  # not UTF-8
        mod.write_dataset(data, tmp_path)
    data = data.replace_schema_metadata({"foo": base64.b64encode(pickle.dumps("foo"))})
    mod.write_dataset(data, tmp_path)
    assert lance.dataset(tmp_path).schema.metadata == data.schema.metadata


@pytest.mark.parametrize("lib", LIBS)
def test_stats(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.table({"x": [1, 2, 3, 4], "y": ["foo", "bar", "baz", "qux"]}), tmp_path)
    stats = ds.stats.dataset_stats()
    assert (stats["num_deleted_rows"], stats["num_fragments"], stats["num_small_files"]) == (0, 1, 1)
    fields = ds.stats.data_stats().fields
    assert [f.id for f in fields[:2]] == [0, 1] and all(f.bytes_on_disk > 0 for f in fields[:2])
    ds.add_columns({"z": "y"})
    ds.insert(pa.table({"x": [5], "z": ["quux"]}))
    fields = ds.stats.data_stats().fields
    assert [f.id for f in fields[:3]] == [0, 1, 2] and all(f.bytes_on_disk > 0 for f in fields[:3])


def _field_meta(ds, name: str) -> dict:
    """The metadata of top-level field ``name`` as the reference reads it (``lance_schema.fields()``)."""
    return next(f for f in ds.lance_schema.fields() if f.name() == name).metadata


@pytest.mark.parametrize("lib", LIBS)
def test_table_metadata_updates(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.table({"a": pa.array([1, 2, 3])}), tmp_path)
    ds.update_metadata({"key1": "value1", "key2": "value2"})
    assert ds.metadata["key1"] == "value1" and ds.metadata["key2"] == "value2"
    ds.update_metadata({"key1": "updated_value1", "key3": "value3"})
    assert ds.metadata == {"key1": "updated_value1", "key2": "value2", "key3": "value3"}
    ds.update_metadata({"key2": None, "key4": "value4"})
    assert ds.metadata == {"key1": "updated_value1", "key3": "value3", "key4": "value4"}
    ds.update_metadata({"new_key": "new_value"}, replace=True)
    assert ds.metadata == {"new_key": "new_value"} == lance.dataset(tmp_path).metadata


@pytest.mark.parametrize("lib", LIBS)
def test_config_updates(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.table({"a": pa.array([1, 2, 3])}), tmp_path)
    original = ds.config()
    ds.update_config({"custom_key1": "value1", "custom_key2": "value2"})
    assert ds.config() == {**original, "custom_key1": "value1", "custom_key2": "value2"}
    ds.update_config({"custom_key1": "updated_value1", "custom_key3": "value3"})
    assert ds.config() == {
        **original,
        "custom_key1": "updated_value1",
        "custom_key2": "value2",
        "custom_key3": "value3",
    }
    ds.update_config({"custom_key2": None, "custom_key4": "value4"})
    assert "custom_key2" not in ds.config() and ds.config()["custom_key4"] == "value4"
    ds.update_config({"only_custom": "only_value"}, replace=True)
    assert ds.config() == {"only_custom": "only_value"} == lance.dataset(tmp_path).config()


@pytest.mark.parametrize("lib", LIBS)
def test_schema_metadata_updates(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.table({"a": pa.array([1, 2, 3])}), tmp_path)
    ds.update_schema_metadata({"schema_key1": "value1", "schema_key2": "value2"})
    assert ds.schema_metadata == {"schema_key1": "value1", "schema_key2": "value2"}
    ds.update_schema_metadata({"schema_key1": "updated_value1", "schema_key3": "value3"})
    assert ds.schema_metadata == {"schema_key1": "updated_value1", "schema_key2": "value2", "schema_key3": "value3"}
    ds.update_schema_metadata({"schema_key2": None, "schema_key4": "value4"})
    assert ds.schema_metadata == {"schema_key1": "updated_value1", "schema_key3": "value3", "schema_key4": "value4"}
    ds.update_schema_metadata({"only_schema": "only_value"}, replace=True)
    assert ds.schema_metadata == {"only_schema": "only_value"} == lance.dataset(tmp_path).schema_metadata


@pytest.mark.parametrize("lib", LIBS)
def test_field_metadata_updates(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.table({"a": pa.array([1, 2, 3])}), tmp_path)
    ds.update_field_metadata({"a": {"field_key1": "value1", "field_key2": "value2"}})
    assert _field_meta(ds, "a") == {"field_key1": "value1", "field_key2": "value2"}
    ds.update_field_metadata({"a": {"field_key1": "updated_value1", "field_key3": "value3"}})
    assert _field_meta(ds, "a") == {"field_key1": "updated_value1", "field_key2": "value2", "field_key3": "value3"}
    ds.update_field_metadata({"a": {"field_key2": None, "field_key4": "value4"}})
    assert _field_meta(ds, "a") == {"field_key1": "updated_value1", "field_key3": "value3", "field_key4": "value4"}
    ds.update_field_metadata({"a": {"only_field": "only_value"}}, replace=True)
    assert _field_meta(ds, "a") == {"only_field": "only_value"} == _field_meta(lance.dataset(tmp_path), "a")


@pytest.mark.parametrize("lib", LIBS)
def test_field_metadata_multiple_fields(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.table({"num": pa.array([1, 2, 3]), "str": pa.array(["a", "b", "c"])}), tmp_path)
    ds.update_field_metadata(
        {"num": {"type": "numeric", "unit": "count"}, "str": {"type": "string", "encoding": "utf8"}}
    )
    assert _field_meta(ds, "num") == {"type": "numeric", "unit": "count"}
    assert _field_meta(ds, "str") == {"type": "string", "encoding": "utf8"}
    ds.update_field_metadata({"num": {"unit": "items", "description": "Item count"}})
    assert _field_meta(ds, "num") == {"type": "numeric", "unit": "items", "description": "Item count"}
    assert _field_meta(ds, "str") == {"type": "string", "encoding": "utf8"}
    assert _field_meta(lance.dataset(tmp_path), "num") == _field_meta(ds, "num")


@pytest.mark.parametrize("lib", LIBS)
def test_metadata_apis_return_post_image(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.table({"a": pa.array([1, 2, 3])}), tmp_path)
    assert ds.update_metadata({"key1": "value1", "key2": "value2"}) == {"key1": "value1", "key2": "value2"}
    got = ds.update_metadata({"key1": "updated", "key3": "value3"})
    assert got == {"key1": "updated", "key2": "value2", "key3": "value3"}
    original = ds.config()
    assert ds.update_config({"custom": "value"}) == {**original, "custom": "value"}
    assert ds.update_schema_metadata({"schema_key": "schema_value"})["schema_key"] == "schema_value"


@pytest.mark.parametrize("lib", LIBS)
def test_metadata_cache_size(tmp_path, lib) -> None:
    mod = LIBS[lib]
    mod.write_dataset(pa.table({"id": [1, 2, 3]}), tmp_path / "test")
    ds = mod.dataset(tmp_path / "test")
    ds.to_table()
    default_size = ds.session().size_bytes()
    assert default_size > 0
    ds = mod.dataset(tmp_path / "test", metadata_cache_size_bytes=0)
    ds.to_table()
    assert ds.session().size_bytes() < default_size
