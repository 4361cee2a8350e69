"""The reference's python/python/tests/test_json.py (lancedb/lance: the ``arrow.json`` extension type and
the JSON SQL functions in filters), ported: each test runs the same code with pylance and with lancelot
(``lib``) on a dataset that library wrote, pylance the oracle; what lancelot writes is read back by
pylance."""

from __future__ import annotations

import json

import lance
import pyarrow as pa
import pytest

import lancelot
from tests.dataset.helpers import LIBS


def _is_json(t: pa.DataType) -> bool:
    """The reference's check: the ``arrow.json`` extension type (or its utf8 storage)."""
    return str(t) == "extension<arrow.json>" or t == pa.utf8()


def _json(values: list) -> pa.Array:
    return pa.array([json.dumps(v) if v is not None else None for v in values], type=pa.json_())


def _ids(ds, filt: str) -> list[int]:
    return ds.to_table(filter=filt)["id"].to_pylist()


@pytest.mark.parametrize("lib", LIBS)
def test_json_basic_write_read(tmp_path, lib) -> None:
    mod = LIBS[lib]
    data = [
        {"name": "Alice", "age": 30, "city": "New York"},
        {"name": "Bob", "age": 25, "city": "San Francisco"},
        {"name": "Charlie", "age": 35, "city": "Chicago"},
        None,
        {"nested": {"key": "value", "list": [1, 2, 3]}},
    ]
    table = pa.table({"id": pa.array([1, 2, 3, 4, 5], type=pa.int32()), "data": _json(data)})
    mod.write_dataset(table, tmp_path / "json_test.lance")
    ds = mod.dataset(tmp_path / "json_test.lance")
    assert len(ds.schema) == 2 and ds.schema.field("id").type == pa.int32() and _is_json(ds.schema.field("data").type)
    got = ds.to_table()
    assert _is_json(got.schema.field("data").type)
    assert got.num_rows == 5 and got.column("id").to_pylist() == [1, 2, 3, 4, 5]
    assert got == lance.dataset(tmp_path / "json_test.lance").to_table()


@pytest.mark.parametrize("lib", LIBS)
def test_json_with_other_types(tmp_path, lib) -> None:
    mod = LIBS[lib]
    data = [
        {"product": "laptop", "specs": {"cpu": "i7", "ram": 16}},
        {"product": "phone", "specs": {"screen": "6.1", "battery": 4000}},
    ]
    table = pa.table(
        {
            "id": pa.array([1, 2], type=pa.int64()),
            "name": pa.array(["Product A", "Product B"]),
            "price": pa.array([999.99, 599.99]),
            "metadata": _json(data),
            "in_stock": pa.array([True, False]),
        }
    )
    mod.write_dataset(table, tmp_path / "mixed_types.lance")
    ds = mod.dataset(tmp_path / "mixed_types.lance")
    assert len(ds.schema) == 5
    got = ds.to_table()
    assert got.num_rows == 2 and got.column("id").to_pylist() == [1, 2]
    assert got.column("name").to_pylist() == ["Product A", "Product B"]
    assert got.column("in_stock").to_pylist() == [True, False]


@pytest.mark.parametrize("lib", LIBS)
def test_json_null_handling(tmp_path, lib) -> None:
    mod = LIBS[lib]
    data = [{"key": "value1"}, None, {"key": "value2"}, None, {"key": "value3"}]
    mod.write_dataset(pa.table({"id": pa.array(range(5)), "optional_data": _json(data)}), tmp_path / "null_test.lance")
    col = mod.dataset(tmp_path / "null_test.lance").to_table().column("optional_data")
    assert col.null_count == 2 and col.is_null().to_pylist() == [False, True, False, True, False]


@pytest.mark.parametrize("lib", LIBS)
def test_json_batch_operations(tmp_path, lib) -> None:
    """(5 appends of 200 rows, not of 1,000.)"""
    mod = LIBS[lib]
    n, batches = 200, 5
    path = tmp_path / "batch_test.lance"
    for b in range(batches):
        table = pa.table(
            {
                "id": pa.array(range(b * n, (b + 1) * n)),
                "batch_data": _json([{"batch": b, "item": i} for i in range(n)]),
            }
        )
        mod.write_dataset(table, path, mode="create" if b == 0 else "append")
    ds = mod.dataset(path)
    assert ds.count_rows() == n * batches
    got = list(ds.to_batches(batch_size=n))
    assert len(got) == batches and all(b.num_rows == n for b in got)


@pytest.mark.parametrize("lib", LIBS)
def test_json_path_queries(tmp_path, lib) -> None:
    mod = LIBS[lib]
    data = [
        {"user": {"name": "Alice", "age": 30}, "tags": ["python", "ml"]},
        {"user": {"name": "Bob", "age": 25}, "tags": ["rust", "db"]},
        {"user": {"name": "Charlie"}, "tags": []},
        None,
    ]
    ds = mod.write_dataset(pa.table({"id": [1, 2, 3, 4], "data": _json(data)}), tmp_path / "json_test.lance")
    assert _ids(ds, "json_extract(data, '$.user.name') = '\"Alice\"'") == [1]
    assert len(_ids(ds, "json_exists(data, '$.user.age')")) == 2
    assert _ids(ds, "json_array_contains(data, '$.tags', 'python')") == [1]


@pytest.mark.parametrize("lib", LIBS)
def test_json_get_functions(tmp_path, lib) -> None:
    mod = LIBS[lib]
    data = [
        {"name": "Alice", "age": 30, "active": True, "score": 95.5},
        {"name": "Bob", "age": 25, "active": False, "score": 87.3},
        {"name": "Charlie", "age": "35", "active": "true", "score": "92"},
        {"name": "David"},
    ]
    ds = mod.write_dataset(pa.table({"id": [1, 2, 3, 4], "data": _json(data)}), tmp_path / "json_get_test.lance")
    assert _ids(ds, "json_get_string(data, 'name') = 'Alice'") == [1]
    assert len(_ids(ds, "json_get_int(data, 'age') > 28")) == 2  # 30 and "35"
    assert len(_ids(ds, "json_get_bool(data, 'active') = true")) == 2  # true and "true"
    assert len(_ids(ds, "json_get_float(data, 'score') > 90")) == 2  # 95.5 and "92"


@pytest.mark.parametrize("lib", LIBS)
def test_nested_json_access(tmp_path, lib) -> None:
    mod = LIBS[lib]
    data = [
        {"user": {"profile": {"name": "Alice", "settings": {"theme": "dark"}}}},
        {"user": {"profile": {"name": "Bob", "settings": {"theme": "light"}}}},
    ]
    ds = mod.write_dataset(pa.table({"id": [1, 2], "data": _json(data)}), tmp_path / "nested_json_test.lance")
    assert _ids(ds, "json_get_string(json_get(json_get(data, 'user'), 'profile'), 'name') = 'Alice'") == [1]
    assert _ids(ds, "json_extract(data, '$.user.profile.settings.theme') = '\"dark\"'") == [1]


@pytest.mark.parametrize("lib", LIBS)
def test_json_array_operations(tmp_path, lib) -> None:
    mod = LIBS[lib]
    data = [
        {"items": ["apple", "banana", "orange"], "counts": [1, 2, 3, 4, 5]},
        {"items": ["grape", "melon"], "counts": [10, 20]},
        {"items": [], "counts": []},
    ]
    ds = mod.write_dataset(pa.table({"id": [1, 2, 3], "data": _json(data)}), tmp_path / "array_json_test.lance")
    assert _ids(ds, "json_array_contains(data, '$.items', 'apple')") == [1]
    assert _ids(ds, "json_array_length(data, '$.counts') > 3") == [1]
    assert _ids(ds, "json_array_length(data, '$.items') = 0") == [3]


@pytest.mark.parametrize("lib", LIBS)
def test_json_filter_append_missing_json_cast(tmp_path, lib) -> None:
    mod = LIBS[lib]
    path = tmp_path / "json_append_issue.lance"
    initial = pa.table(
        {"article_metadata": _json([{"article_journal": "Cell"}]), "article_journal": pa.array(["Cell"])}
    )
    mod.write_dataset(initial, path)
    schema = mod.dataset(path).schema
    assert _is_json(schema.field("article_metadata").type)
    append = pa.table(
        {
            "article_metadata": _json([{"article_journal": "PLoS One"}, {"article_journal": "Nature"}]),
            "article_journal": pa.array(["PLoS One", "Nature"]),
        }
    ).cast(schema)
    assert isinstance(append.column("article_metadata").to_pylist()[0], str)
    mod.write_dataset(append, path, mode="append")
    ds = mod.dataset(path)
    assert ds.count_rows() == 3
    got = ds.to_table(filter="json_get(article_metadata, 'article_journal') IS NOT NULL")
    assert got.num_rows == 3 and got.column("article_journal").to_pylist() == ["Cell", "PLoS One", "Nature"]


# -- not the reference's: each JSON function on awkward values, against pylance ---------------------

_PROBE = [
    {
        "s": "x",
        "i": 30,
        "f": 95.5,
        "b": True,
        "n": None,
        "a": [1, "2", 3.5, True, None, "x"],
        "o": {"k": 1},
        "si": "35",
        "sb": "true",
        "sf": "92",
        "sbad": "abc",
        "fi": 2.7,
        "ib": 1,
        "bs": "false",
        "b0": 0,
        "neg": -2.5,
        "big": 1e20,
        "u": 'é"q',
    },
    {"s": "y"},
    None,
    [1, 2, 3],
    "str",
    5,
]


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    base = tmp_path_factory.mktemp("json_probe")
    table = pa.table({"id": range(len(_PROBE)), "d": _json(_PROBE)})
    return lancelot.write_dataset(table, base / "ours"), lance.write_dataset(table, base / "theirs")


@pytest.mark.parametrize(
    "expr",
    [
        *(
            f"json_extract(d, '{p}')"
            for p in ("$.s", "$.i", "$.o", "$.a[1]", "$.n", "$.zz", "$", "$[0]", "$.a", "$.big", "$.u")
        ),
        *(f"json_exists(d, '{p}')" for p in ("$.n", "$.zz", "$.a[2]", "$")),
        *(f"json_get(d, '{k}')" for k in ("s", "o", "0", "n", "a")),
        *(f"json_get_string(d, '{k}')" for k in ("s", "i", "f", "b", "o", "n", "big", "u", "0")),
        *(f"json_get_int(d, '{k}')" for k in ("i", "si", "f", "sbad", "b", "fi", "neg", "sf", "1")),
        *(f"json_get_float(d, '{k}')" for k in ("f", "sf", "i", "b", "sbad", "si")),
        *(f"json_get_bool(d, '{k}')" for k in ("b", "sb", "ib", "b0", "bs", "s")),
        *(f"json_array_contains(d, '$.a', '{v}')" for v in ("2", "x", "3.5", "true", "1", "null")),
        "json_array_contains(d, '$.s', 'x')",
        "json_array_contains(d, '$', '1')",
        *(f"json_array_length(d, '{p}')" for p in ("$.a", "$.s", "$", "$.zz", "$.o")),
        "json_get(json_get(d, 'o'), 'k')",
        "json_get_int(json_get(d, 'o'), 'k')",
        "json_get_string(json_get(d, 'a'), '1')",
    ],
)
def test_json_functions_match_pylance(probes, expr) -> None:
    ours, theirs = probes
    try:
        want = theirs.to_table(columns={"v": expr})
    except ValueError:  # a value the function cannot convert: both refuse
        with pytest.raises(ValueError, match="Failed to convert"):
            ours.to_table(columns={"v": expr})
        return
    got = ours.to_table(columns={"v": expr})
    assert got.schema == want.schema and got == want
