"""The reference's python/python/tests/test_lance.py (lancedb/lance: round trips, input types, exact
nearest-neighbour search, row-id columns), ported: each test runs the same code with pylance and with
lancelot (``lib``), pylance the oracle; what lancelot writes is read back by pylance. Its vector-index
tests, schema JSON helpers and I/O counters are out of scope (docs/ported-tests.md)."""

from __future__ import annotations

import lance
import lance.arrow
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pa_ds
import pytest

from tests.dataset.helpers import LIBS


@pytest.mark.parametrize("lib", LIBS)
def test_table_roundtrip(tmp_path, lib) -> None:
    mod = LIBS[lib]
    tbl = pa.Table.from_pandas(pd.DataFrame({"a": range(100), "b": range(100)}))
    mod.write_dataset(tbl, tmp_path)
    ds = mod.dataset(tmp_path)
    assert ds.uri == str(tmp_path.absolute())
    assert tbl.schema == ds.schema and tbl == ds.to_table() == lance.dataset(tmp_path).to_table()
    assert ds.to_table(columns=["a"]) == tbl.select(["a"])
    table = ds.to_table(columns=["a"], limit=20)
    assert len(table) == 20
    assert ds.to_table(columns=["a"], offset=10, limit=10) == table[10:]


@pytest.mark.parametrize("lib", LIBS)
def test_input_types(tmp_path, lib) -> None:
    mod = LIBS[lib]
    df = pd.DataFrame({"a": range(100), "b": range(100)})
    tbl = pa.Table.from_pandas(df)

    def check(data, name: str) -> None:
        mod.write_dataset(data, tmp_path / name)
        assert tbl == mod.dataset(tmp_path / name).to_table() == lance.dataset(tmp_path / name).to_table()

    mod.write_dataset(df, str(tmp_path / "pandas.lance"), schema=tbl.schema)
    assert tbl == mod.dataset(str(tmp_path / "pandas.lance")).to_table()
    check(tbl, "table.lance")
    pa_ds.write_dataset(tbl, str(tmp_path / "dataset.parquet"), format="parquet")
    parquet = pa_ds.dataset(str(tmp_path / "dataset.parquet"))
    check(parquet, "ds.lance")
    scanner = pa_ds.Scanner.from_dataset(parquet)
    check(scanner, "scanner.lance")
    check(scanner.to_reader(), "reader.lance")


def _l2sq(vec, mat):
    return np.sum((mat - vec) ** 2, axis=1)


@pytest.mark.parametrize("lib", LIBS)
def test_nearest(tmp_path, lib) -> None:
    mod = LIBS[lib]
    schema = pa.schema([pa.field("emb", pa.list_(pa.float32(), 32), False)])
    npvals = np.random.default_rng(0).random((100, 32))
    npvals /= np.sqrt((npvals**2).sum(axis=1))[:, None]
    arr = pa.FixedSizeListArray.from_arrays(pa.array(npvals.ravel(), type=pa.float32()), 32)
    tbl = pa.Table.from_arrays([arr], schema=schema)
    mod.write_dataset(tbl, tmp_path)
    top10 = mod.dataset(tmp_path).to_table(nearest={"column": "emb", "q": arr[0].values, "k": 10, "nprobes": 10})
    distances = _l2sq(arr[0].values, npvals.reshape((100, 32)))
    indices = np.argsort(distances)
    assert tbl.take(indices[:10]).to_pandas().equals(top10.to_pandas()[["emb"]])
    assert np.allclose(distances[indices[:10]], top10.to_pandas()["_distance"].values)


@pytest.mark.parametrize("lib", LIBS)
def test_nearest_cosine(tmp_path, lib) -> None:
    mod = LIBS[lib]
    vec = pa.FixedSizeListArray.from_arrays(pa.array([2.5, 6, 7.4, 3.3], pa.float32()), 2)
    mod.write_dataset(pa.table({"vector": vec}), tmp_path)  # the reference's vec_to_table
    q = [483.5, 1384.5]
    rs = mod.dataset(tmp_path).to_table(nearest={"column": "vector", "q": q, "k": 10, "metric": "cosine"}).to_pandas()
    assert len(rs) == 2
    for i in range(len(rs)):
        v = rs.vector[i]
        want = 1 - np.dot(v, q) / (np.linalg.norm(v) * np.linalg.norm(q))
        assert rs["_distance"][i] == pytest.approx(want, abs=1e-6)
        assert 0 <= rs["_distance"][i] <= 1


@pytest.mark.parametrize("lib", LIBS)
def test_count_rows(tmp_path, lib) -> None:
    ds = LIBS[lib].write_dataset(pa.Table.from_pandas(pd.DataFrame({"values": range(100)})), tmp_path)
    assert ds.count_rows() == 100


@pytest.mark.parametrize("lib", LIBS)
def test_roundtrip_types(tmp_path, lib) -> None:
    """str, float16, pylance's bfloat16 extension type and a fixed-shape tensor."""
    nrows = 10
    tensor_type = pa.fixed_shape_tensor(pa.float32(), [2, 3])
    storage = pa.FixedSizeListArray.from_arrays(pa.array([float(x) for x in range(60)], pa.float32()), 6)
    data = pa.table(
        {
            "str": pa.array([str(i) for i in range(nrows)]),
            "float16": pa.array([np.float16(1.0 + i / 10) for i in range(nrows)], pa.float16()),
            "bfloat16": lance.arrow.bfloat16_array([1.0 + i / 10 for i in range(nrows)]),
            "tensor": pa.ExtensionArray.from_storage(tensor_type, storage),
        }
    )
    ds = LIBS[lib].write_dataset(data, tmp_path)
    assert ds.to_table() == data == lance.dataset(tmp_path).to_table()


@pytest.mark.parametrize("lib", LIBS)
def test_roundtrip_schema(tmp_path, lib) -> None:
    schema = pa.schema([pa.field("a", pa.float64())], metadata={"key": "value"})
    ds = LIBS[lib].write_dataset(pa.table({"a": [1.0, 2.0]}).to_batches(), tmp_path, schema=schema)
    assert ds.schema == schema == lance.dataset(tmp_path).schema


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("row_param, column_name", [("with_row_id", "_rowid"), ("with_row_address", "_rowaddr")])
def test_with_row_id(tmp_path, lib, row_param, column_name) -> None:
    mod = LIBS[lib]
    path = tmp_path / "test_with_inner_column.lance"
    mod.write_dataset(pa.table({"data_item_id": pa.array([1001, 1002, 1003]), "a": pa.array([1, 2, 3])}), path)
    ds = mod.dataset(path)
    table = ds.scanner(**{row_param: True, "columns": ["data_item_id", column_name]}).to_table()
    assert table.column(column_name).type == pa.uint64()
    table = ds.scanner(**{row_param: True, "columns": ["data_item_id"]}).to_table()
    assert column_name in table.column_names and table.column(column_name).type == pa.uint64()
    table = ds.scanner(**{row_param: False, "columns": ["data_item_id", column_name]}).to_table()
    assert column_name in table.column_names


@pytest.mark.parametrize("lib", LIBS)
def test_schema_to_json(lib) -> None:
    mod = LIBS[lib]
    schema = pa.schema([pa.field("embedding", pa.list_(pa.float32(), 32), False), pa.field("id", pa.int64(), True)])
    item = {"name": "item", "nullable": True, "type": {"type": "float"}}
    assert mod.schema_to_json(schema) == {
        "fields": [
            {
                "name": "embedding",
                "nullable": False,
                "type": {"type": "fixed_size_list", "fields": [item], "length": 32},
            },
            {"name": "id", "type": {"type": "int64"}, "nullable": True},
        ],
    }
    assert mod.json_to_schema(mod.schema_to_json(schema)) == schema


@pytest.mark.parametrize("lib", LIBS)
def test_io_counters(tmp_path, lib) -> None:
    mod = LIBS[lib]
    iops, read = mod.iops_counter(), mod.bytes_read_counter()
    mod.write_dataset(pa.table({"a": [1, 2, 3]}), tmp_path).to_table()
    assert mod.iops_counter() > iops and mod.bytes_read_counter() > read
