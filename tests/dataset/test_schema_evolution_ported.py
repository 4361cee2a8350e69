"""The reference's python/python/tests/test_schema_evolution.py (lancedb/lance) tests that
tests/dataset/test_schema_evolution.py and test_add_columns_udf.py do not already port: each runs the
same code with pylance and with lancelot (``lib``), pylance the oracle; what lancelot writes is read
back by pylance."""

from __future__ import annotations

import lance
import lance.file
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from tests.dataset.helpers import LIBS


def _write_file(lib: str, table: pa.Table, path) -> None:
    """A Lance file of ``table`` by ``lib``'s own file writer (the two libraries' file APIs differ)."""
    if lib == "pylance":
        with lance.file.LanceFileWriter(str(path)) as writer:
            writer.write_batch(table)
    else:
        lancelot.write_table(table, str(path))


def _read_file(lib: str, path) -> pa.Table:
    if lib == "pylance":
        return lance.file.LanceFileReader(str(path)).read_all().to_table()
    return lancelot.read_table(str(path))


@pytest.mark.parametrize("lib", LIBS)
def test_add_columns_from_file(tmp_path, lib) -> None:
    mod = LIBS[lib]
    tab = pa.table({"a": range(100), "b": range(100)})
    ds = mod.write_dataset(tab, tmp_path / "dataset", max_rows_per_file=25)
    _write_file(lib, ds.to_table(columns={"double_b": "b * 2"}, limit=50), tmp_path / "tbl_0")
    _write_file(lib, ds.to_table(columns={"double_b": "b * 2"}, offset=50, limit=50), tmp_path / "tbl_1")

    def data_gen():
        for i in range(2):
            yield from _read_file(lib, tmp_path / f"tbl_{i}").to_batches()

    ds.add_columns(data_gen(), reader_schema=pa.schema([pa.field("double_b", pa.int64())]))
    expected = tab.append_column("double_b", pa.array([2 * x for x in range(100)]))
    assert ds.to_table() == expected == lance.dataset(tmp_path / "dataset").to_table()


@pytest.mark.parametrize("lib", LIBS)
def test_query_after_merge(tmp_path, lib) -> None:
    """A vector search over a dataset merged with another column (exact search in lancelot)."""
    mod = LIBS[lib]
    rng = np.random.default_rng(0)
    tab = pa.table(
        {"id": range(100), "vec": pa.FixedShapeTensorArray.from_numpy_ndarray(rng.random((100, 128)).astype("float32"))}
    )
    ds = mod.write_dataset(tab, tmp_path)
    ds.merge(pa.table({"id": range(100), "data": range(100, 200)}), left_on="id")
    q = rng.random(128).astype("float32")
    got = ds.to_table(nearest=dict(column="vec", k=10, q=q))
    assert got.num_rows == 10 and got.column_names == ["id", "vec", "data", "_distance"]
    assert got["id"] == lance.dataset(tmp_path).to_table(nearest=dict(column="vec", k=10, q=q))["id"]


@pytest.mark.parametrize("lib", LIBS)
def test_merge_columns_from_reader(tmp_path, lib) -> None:
    mod = LIBS[lib]
    base = tmp_path / "test"
    mod.write_dataset(pa.Table.from_pydict({"a": range(100), "b": range(100)}), base)
    ds = mod.dataset(base)
    fragment = ds.get_fragments()[0]
    _write_file(lib, pa.table({"c": range(100), "d": range(100)}), tmp_path / "some_file")

    def datareader():
        yield from _read_file(lib, tmp_path / "some_file").to_batches(max_chunksize=10)

    metadata, schema = fragment.merge_columns(
        datareader(), reader_schema=pa.schema([pa.field("c", pa.int64()), pa.field("d", pa.int64())]), batch_size=15
    )
    ds = mod.LanceDataset.commit(base, mod.LanceOperation.Overwrite(schema.to_pyarrow(), [metadata]))
    assert ds.schema == schema.to_pyarrow()
    want = pa.Table.from_pydict({"a": range(100), "b": range(100), "c": range(100), "d": range(100)})
    assert ds.to_table() == want == lance.dataset(base).to_table()


@pytest.mark.parametrize("lib", LIBS)
def test_merge_batch_size(tmp_path, lib) -> None:
    """(3 fragments of 100 rows, as the reference's; batch sizes 1, 3, 10, 100.)"""
    mod = LIBS[lib]
    table = pa.table({"a": range(300)})
    for batch_size in [1, 3, 10, 100]:
        path = str(tmp_path / str(batch_size))
        ds = mod.write_dataset(table, path, max_rows_per_file=100)
        fragments = []

        def mutate(batch, batch_size=batch_size):
            assert batch.num_rows <= batch_size
            return pa.RecordBatch.from_pydict({"b": batch.column("a")})

        for frag in ds.get_fragments():
            merged, schema = frag.merge_columns(mutate, batch_size=batch_size)
            fragments.append(merged)
        ds = mod.LanceDataset.commit(path, mod.LanceOperation.Merge(fragments, schema), read_version=ds.version)
        ds.validate()
        want = pa.table({"a": range(300), "b": range(300)})
        assert ds.to_table() == want == lance.dataset(path).to_table()


@pytest.mark.parametrize("lib", LIBS)
def test_no_checkpoint_merge_columns(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.table({"a": range(100), "b": range(100)}), tmp_path, max_rows_per_file=20)

    @mod.batch_udf(checkpoint_file=tmp_path / "cache.sqlite")
    def some_udf(batch):
        return batch

    with pytest.raises(ValueError, match="A checkpoint file cannot be used"):
        ds.get_fragments()[0].merge_columns(some_udf, columns=["a"])
