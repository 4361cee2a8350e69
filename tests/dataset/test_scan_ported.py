"""The reference's python/python/tests/test_dataset.py (lancedb/lance) tests of scanning (to_table,
to_batches, scanner, count_rows, sql): filters, projections, limits, batch sizes, system columns, late
materialization, ported: each test runs the same code with pylance and with lancelot (``lib``), pylance the
oracle; what lancelot writes is read back by pylance. Row counts are scaled down where the test's logic allows
(noted). Where pylance 14.0.2 differs from the reference's assertion, the test follows pylance 14.0.2 and says
so. docs/ported-tests.md lists every reference test and where it is."""

from __future__ import annotations

import random

import lance
import lance.file
import lance.fragment
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pa_ds
import pytest

import lancelot
from tests.dataset.helpers import LIBS, both


@pytest.mark.parametrize("lib", LIBS)
def test_to_batches_with_partial_last_batch(tmp_path, lib) -> None:
    mod = LIBS[lib]
    base = tmp_path / "test_batches"
    per_file, bs = 32, 5
    rows = [{"colA": f"Row{i}", "colB": i} for i in range(per_file * 3)]
    batches = [pa.RecordBatch.from_pylist(rows[i * per_file : (i + 1) * per_file]) for i in range(3)]
    schema = pa.schema([pa.field("colA", pa.string()), pa.field("colB", pa.int64())])
    mod.write_dataset(batches, base, schema, max_rows_per_file=per_file)
    ds = mod.dataset(base)

    got = list(ds.to_batches(batch_size=bs, strict_batch_size=True))
    assert sum(b.num_rows for b in got) == 96
    assert all(b.num_rows == bs for b in got[:-1]) and got[-1].num_rows == 1
    assert [r for b in got for r in b.to_pylist()] == rows

    got = list(ds.to_batches(batch_size=10 * bs, strict_batch_size=True))
    assert all(b.num_rows == 50 for b in got[:-1]) and got[-1].num_rows == 46

    got = list(ds.to_batches(batch_size=bs, strict_batch_size=False))  # per fragment [5]*6 + [2]
    assert sum(b.num_rows for b in got) == 96
    partial = [b for b in got if b.num_rows < bs]
    assert len(partial) == 3 and all(b.num_rows == 2 for b in partial[:-1])

    got = list(ds.to_batches(batch_size=10 * bs, strict_batch_size=False))
    assert all(b.num_rows == 32 for b in got)

    ds = mod.write_dataset(pa.table({"a": range(32)}), base, max_rows_per_file=1, mode="overwrite")
    assert all(b.num_rows == 1 for b in ds.to_batches())
    assert all(b.num_rows == 1 for b in ds.to_batches(batch_size=8))
    assert all(b.num_rows == 8 for b in ds.to_batches(batch_size=8, strict_batch_size=True))


@pytest.mark.parametrize("lib", LIBS)
def test_filter(tmp_path, lib) -> None:
    mod = LIBS[lib]
    mod.write_dataset(pa.Table.from_pydict({"a": range(100), "b": range(100)}), tmp_path / "test")
    got = mod.dataset(tmp_path / "test").to_table(columns=["a"], filter=(pc.field("b") > 50))
    assert got == pa.Table.from_pydict({"a": range(51, 100)})


@pytest.mark.parametrize("lib", LIBS)
def test_filter_meta_columns(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.Table.from_pydict({"a": range(100), "b": range(100)}), tmp_path / "test")
    rng = random.Random(3)
    rowid = rng.choice(ds.to_table(with_row_id=True, columns=[]).column(0).to_pylist())
    assert len(ds.to_table(filter=f"_rowid = {rowid}", with_row_id=True)) == 1
    addr = rng.choice(ds.to_table(with_row_address=True, columns=[]).column(0).to_pylist())
    assert len(ds.to_table(filter=f"_rowaddr = {addr}", with_row_address=True)) == 1


@pytest.mark.parametrize("lib", LIBS)
def test_limit_offset(tmp_path, lib) -> None:
    """The reference's "stable" case; its "legacy" one writes 0.1 files, which lancelot does not write."""
    mod = LIBS[lib]
    table = pa.Table.from_pydict({"a": range(100), "b": range(100)})
    mod.write_dataset(table, tmp_path / "test", max_rows_per_file=10)
    ds = mod.dataset(tmp_path / "test")
    for kw, (start, n) in [
        ({"limit": 10}, (0, 10)),
        ({"limit": 100}, (0, 100)),
        ({"offset": 0}, (0, 100)),
        ({"offset": 10}, (10, 90)),
        ({"offset": 10, "limit": 10}, (10, 10)),
        ({"offset": 5, "limit": 20}, (5, 20)),
        ({"offset": 5, "limit": 3}, (5, 3)),
        ({"offset": 50, "limit": 25}, (50, 25)),
        ({"limit": 101}, (0, 100)),
        ({"offset": 50, "limit": 51}, (50, 50)),
        ({"offset": 100}, (100, 0)),
        ({"offset": 101}, (100, 0)),
        ({"offset": 100, "limit": 1}, (100, 0)),
        ({"offset": 101, "limit": 1}, (100, 0)),
    ]:
        assert ds.to_table(**kw) == table.slice(start, n), kw
    with pytest.raises(ValueError, match="Offset must be non-negative"):
        ds.to_table(offset=-1, limit=10)
    with pytest.raises(ValueError, match="Limit must be non-negative"):
        ds.to_table(offset=10, limit=-1)

    full = ds.version
    ds.delete("a % 2 = 0")
    odd = table.filter(pc.bit_wise_and(pc.field("a"), 1) != 0)
    assert ds.to_table(offset=10).combine_chunks() == odd.slice(10).combine_chunks()
    ds = ds.checkout_version(full)
    ds.restore()
    ds.delete("a > 2 AND a < 7")
    assert ds.to_table(offset=3, limit=1) == table.slice(7, 1)
    assert lance.dataset(tmp_path / "test").to_table(offset=3, limit=1) == table.slice(7, 1)


@pytest.mark.parametrize("lib", LIBS)
def test_to_batches(tmp_path, lib) -> None:
    mod = LIBS[lib]
    table = pa.Table.from_pydict({"a": range(100), "b": range(100)})
    mod.write_dataset(table, tmp_path / "test")
    ds = mod.dataset(tmp_path / "test")
    assert pa.Table.from_batches(ds.to_batches(batch_readahead=20)) == table
    unordered = ds.to_batches(batch_readahead=20, scan_in_order=False)
    assert pa.Table.from_batches(unordered).sort_by("a") == table


@pytest.mark.parametrize("lib", LIBS)
def test_nested_projection(tmp_path, lib) -> None:
    mod = LIBS[lib]
    table = pa.Table.from_pydict(
        {"a": range(100), "b": range(100), "struct": [{"x": i, "y": i % 2 == 0} for i in range(100)]}
    )
    mod.write_dataset(table, tmp_path / "test")
    ds = mod.dataset(tmp_path / "test")
    assert ds.to_table(columns=["struct.x"]) == pa.Table.from_pydict({"struct.x": range(100)})
    assert ds.to_table(columns=["struct.y"]) == pa.Table.from_pydict({"struct.y": [i % 2 == 0 for i in range(100)]})


@pytest.mark.parametrize("lib", LIBS)
def test_nested_projection_list(tmp_path, lib) -> None:
    mod = LIBS[lib]
    table = pa.Table.from_pydict(
        {"a": range(100), "b": range(100), "list_struct": [[{"x": i, "y": i % 2 == 0}] for i in range(100)]}
    )
    mod.write_dataset(table, tmp_path / "test")
    got = mod.dataset(tmp_path / "test").to_table(columns={"list_struct": "list_struct[1]['x']"})
    assert got == pa.Table.from_pydict({"list_struct": range(100)})


@pytest.mark.parametrize("lib", LIBS)
def test_count_rows(tmp_path, lib) -> None:
    mod = LIBS[lib]
    mod.write_dataset(pa.Table.from_pydict({"a": range(100), "b": range(100)}), tmp_path / "test")
    ds = mod.dataset(tmp_path / "test")
    assert ds.count_rows() == 100 and ds.count_rows(filter="a < 50") == 50


@pytest.mark.parametrize("lib", LIBS)
def test_count_rows_via_scanner(tmp_path, lib) -> None:
    """pylance 14.0.2 counts a scan that selects columns, and one with no row id (the reference's
    snapshot raises "should not be called on a plan selecting columns" / "with_row_id is false")."""
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.table({"a": range(100), "b": range(100)}), tmp_path)
    assert ds.scanner(filter="a < 50", columns=[], with_row_id=True).count_rows() == 50
    assert ds.scanner(filter="a < 50", columns=["a"], with_row_id=True).count_rows() == 50
    assert ds.scanner(with_row_id=True).count_rows() == 100
    assert ds.scanner(columns=[]).count_rows() == 100


@pytest.mark.parametrize("lib", LIBS)
def test_flat_vector_search_with_delete(tmp_path, lib) -> None:
    mod = LIBS[lib]
    table = pa.Table.from_pydict(
        {"id": list(range(10)), "vector": pa.array([[1.0, 1.0] for _ in range(10)], pa.list_(pa.float32(), 2))}
    )
    ds = mod.write_dataset(table, tmp_path / "dataset", mode="create")
    ds.delete("id = 0")
    assert ds.scanner(nearest={"column": "vector", "k": 10, "q": [1.0, 1.0]}).to_table().num_rows == 9


@pytest.mark.parametrize("lib", LIBS)
def test_null_reader_with_deletes(tmp_path, lib) -> None:
    mod = LIBS[lib]
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("other", pa.int64())])
    ds = mod.write_dataset([], tmp_path, schema=schema, mode="create")
    ds.insert(pa.table({"id": [1, 2, 3, 4, 5]}))
    ds.delete("id in (1, 2)")
    want = pa.table({"id": [3, 4, 5], "other": pa.array([None] * 3, pa.int64())})
    assert ds.to_table() == want and both(tmp_path) == want


@pytest.mark.parametrize("lib", LIBS)
def test_scan_with_batch_size(tmp_path, lib, monkeypatch) -> None:
    """(1,000 rows, not 10,000: 16-row batches and a 12-row default still end each file short.)"""
    mod = LIBS[lib]
    ds = mod.write_dataset(pd.DataFrame({"a": range(1000), "b": range(1000)}), tmp_path / "dataset")
    batches = list(ds.scanner(batch_size=16, scan_in_order=True).to_batches())
    for idx, batch in enumerate(batches[:-1]):
        assert batch.num_rows == 16 and batch.to_pandas()["a"].iloc[0] == idx * 16
    assert batches[-1].num_rows == 1000 % 16
    monkeypatch.setenv("LANCE_DEFAULT_BATCH_SIZE", "12")
    assert all(b.num_rows in (12, 1000 % 12) for b in ds.scanner(scan_in_order=True).to_batches())
    monkeypatch.delenv("LANCE_DEFAULT_BATCH_SIZE")
    assert all(b.num_rows != 12 for b in ds.scanner(scan_in_order=True).to_batches())


@pytest.mark.parametrize("lib", LIBS)
def test_io_buffer_size(tmp_path, lib) -> None:
    """The reference's slow regression (batches bigger than the I/O buffer), scaled to 20,000 rows of
    two int64 columns: a 2M-row batch over pages bigger than the 5,000-byte buffer, then batch size 1
    after an added column. lancelot accepts io_buffer_size and ignores it."""
    mod = LIBS[lib]
    n = 20_000
    ds = mod.write_dataset(pa.table({"a": range(n), "b": range(n)}), tmp_path)
    got = ds.scanner(batch_size=2 * 1024 * 1024, io_buffer_size=5000).to_table()
    assert got == pa.table({"a": range(n), "b": range(n)})
    ds.add_columns({"c": "b"})
    got = ds.scanner(batch_size=1, io_buffer_size=5000, columns=["c"], limit=50).to_table()
    assert got == pa.table({"c": range(50)})


@pytest.mark.parametrize("lib", LIBS)
def test_scan_no_columns(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pd.DataFrame({"a": range(100)}), tmp_path / "dataset")
    for batch in ds.scanner(columns=[], with_row_id=True).to_batches():
        assert batch.schema == pa.schema([pa.field("_rowid", pa.uint64())])
    batches = list(ds.scanner(columns=[], batch_size=10).to_batches())
    assert len(batches) == 10 and all(b.schema.names == [] and b.num_rows == 10 for b in batches)
    ds.delete("a = 5")
    assert sum(b.num_rows for b in ds.scanner(columns=[], with_row_id=True).to_batches()) == 99


@pytest.mark.parametrize("lib", LIBS)
def test_scan_prefilter(tmp_path, lib) -> None:
    mod = LIBS[lib]
    vecs = pa.array([[i, i] for i in range(1, 7)], type=pa.list_(pa.float32(), 2))
    df = pa.Table.from_pydict({"index": [1, 2, 3, 4, 5, 6], "type": ["a", "a", "a", "b", "b", "b"], "vecs": vecs})
    ds = mod.write_dataset(df, tmp_path / "dataset")
    args = {
        "columns": ["index"],
        "filter": "type = 'b'",
        "nearest": {"column": "vecs", "q": pa.array([1, 1], pa.float32()), "k": 2, "use_index": False},
    }
    assert ds.scanner(**args).to_table().num_rows == 0  # post-filter: the two nearest are 'a'
    args["prefilter"] = True
    want = pa.array([4, 5])
    assert ds.scanner(**args).to_table().column("index").combine_chunks() == want
    assert ds.to_table(**args).column("index").combine_chunks() == want
    assert pa.Table.from_batches(ds.to_batches(**args)).column("index").combine_chunks() == want


@pytest.mark.parametrize("lib", LIBS)
def test_scan_count_rows(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pd.DataFrame({"a": range(42), "b": range(42)}), tmp_path / "dataset")
    assert ds.scanner(columns=[], with_row_id=True).count_rows() == 42
    assert ds.count_rows(filter="a < 10") == 10
    assert ds.count_rows(filter=pa_ds.field("a") < 20) == 20


@pytest.mark.parametrize("lib", LIBS)
def test_with_row_offset(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pd.DataFrame({"a": range(100)}), tmp_path / "dataset", max_rows_per_file=25)
    got = ds.scanner(columns=["_rowoffset"]).to_table().combine_chunks()
    assert got == pa.table({"_rowoffset": pa.array(range(100), pa.uint64())})


@pytest.mark.parametrize("lib", LIBS)
def test_system_columns(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pd.DataFrame({"a": range(100)}), tmp_path / "dataset", max_rows_per_file=25)
    for cols in (["_rowid", "_rowaddr", "_rowoffset"], ["_rowoffset", "_rowid", "_rowaddr"]):
        assert ds.scanner(columns=cols).to_table().schema.names == cols
    assert ds.scanner(with_row_id=True).to_table().schema.names == ["a", "_rowid"]
    assert ds.scanner(with_row_address=True).to_table().schema.names == ["a", "_rowaddr"]
    assert ds.scanner(with_row_address=True, with_row_id=True).to_table().schema.names == ["a", "_rowid", "_rowaddr"]


@pytest.mark.parametrize("lib", LIBS)
def test_scoring_columns(tmp_path, lib) -> None:
    mod = LIBS[lib]
    df = pa.table({"vec": pa.array([[i, i] for i in range(100)], pa.list_(pa.float32(), 2))})
    ds = mod.write_dataset(df, tmp_path / "dataset")
    nearest = {"column": "vec", "q": pa.array([1, 1], pa.float32()), "k": 10, "use_index": False}

    def names(**kw) -> list[str]:
        return ds.scanner(nearest=nearest, **kw).to_table().schema.names

    assert names() == ["vec", "_distance"]
    assert names(with_row_id=True) == ["vec", "_distance", "_rowid"]
    assert names(with_row_address=True) == ["vec", "_distance", "_rowaddr"]
    assert names(with_row_address=True, with_row_id=True) == ["vec", "_distance", "_rowid", "_rowaddr"]
    assert names(columns=["_rowid", "vec"], disable_scoring_autoprojection=False) == ["_rowid", "vec", "_distance"]
    assert names(columns=["vec", "_rowaddr"], disable_scoring_autoprojection=False) == ["vec", "_rowaddr", "_distance"]
    assert names(columns=["vec"], disable_scoring_autoprojection=False) == ["vec", "_distance"]
    assert names(columns=["vec"], disable_scoring_autoprojection=True) == ["vec"]


@pytest.mark.parametrize("lib", LIBS)
def test_scanner_schemas(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pd.DataFrame({"a": range(50), "s": [f"s-{i}" for i in range(50)]}), tmp_path / "dataset")
    scanner = ds.scanner(columns=["a"])
    assert scanner.dataset_schema == ds.schema
    assert scanner.projected_schema == pa.schema([pa.field("a", pa.int64())])


@pytest.mark.parametrize("lib", LIBS)
def test_scan_deleted_rows(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pd.DataFrame({"a": range(100), "b": range(100)}), tmp_path / "dataset", max_rows_per_file=25)
    ds.create_scalar_index("b", "BTREE")
    ds.delete("a < 30")
    assert ds.count_rows() == 70
    assert ds.scanner(with_row_id=True).to_table().num_rows == 70
    with_deleted = ds.scanner(with_row_id=True, include_deleted_rows=True).to_table()
    assert with_deleted.num_rows == 75
    want = pa.table({"a": range(25, 30), "b": range(25, 30), "_rowid": pa.array([None] * 5, pa.uint64())})
    assert with_deleted.slice(0, 5) == want
    assert ds.scanner(with_row_id=True, include_deleted_rows=True, filter="a < 32").to_table().num_rows == 7
    assert ds.scanner(include_deleted_rows=True, with_row_id=True, filter="b < 30").to_table().num_rows == 5
    with pytest.raises(ValueError, match="with_row_id is false"):
        ds.scanner(include_deleted_rows=True, filter="a < 30").to_table()


@pytest.mark.parametrize("lib", LIBS)
def test_default_scan_options(tmp_path, lib) -> None:
    mod = LIBS[lib]
    mod.write_dataset(pa.table({"a": range(100), "b": range(100)}), tmp_path)
    assert mod.dataset(tmp_path).schema.names == ["a", "b"]
    assert mod.dataset(tmp_path, default_scan_options={"with_row_id": True}).schema.names == ["a", "b", "_rowid"]
    assert mod.dataset(tmp_path, default_scan_options={"with_row_address": True}).schema.names == ["a", "b", "_rowaddr"]


@pytest.mark.parametrize("lib", LIBS)
def test_scan_with_row_ids(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.table({"a": range(1000)}), tmp_path, max_rows_per_file=250)
    tbl = ds.scanner(filter="a % 10 == 0 AND a < 500", with_row_id=True).to_table()
    row_ids = tbl["_rowid"].to_pylist()
    assert row_ids == list(range(0, 250, 10)) + list(range(2**32, 2**32 + 250, 10))
    assert ds._take_rows(row_ids)["a"] == tbl["a"]


@pytest.mark.parametrize("lib", LIBS)
def test_dynamic_projection(tmp_path, lib) -> None:
    mod = LIBS[lib]
    mod.write_dataset(pa.Table.from_pylist([{"a": 1, "b": 2}, {"a": 10, "b": 20}]), tmp_path / "test")
    got = mod.dataset(tmp_path / "test").to_table(columns={"bool": "a > 5"})
    assert got == pa.Table.from_pylist([{"bool": False}, {"bool": True}])


@pytest.mark.parametrize("lib", LIBS)
def test_late_materialization_param(tmp_path, lib) -> None:
    """The results part: the reference's plan-text assertions are pylance's DataFusion plan."""
    mod = LIBS[lib]
    table = pa.table({"filter": range(4), "values": pa.array([b"abcd", b"efgh", b"ijkl", b"mnop"])})
    ds = mod.write_dataset(table, tmp_path, data_storage_version="stable", max_rows_per_file=10000)
    filt = "filter % 2 == 0"
    expected = ds.to_table(filter=filt)
    assert expected == table.filter(pa.array([i % 2 == 0 for i in range(4)]))
    batches = list(ds.to_batches(filter=filt))
    for late in (None, False, True, ["values"]):
        assert ds.to_table(filter=filt, late_materialization=late) == expected
        assert list(ds.to_batches(filter=filt, late_materialization=late)) == batches


@pytest.mark.parametrize("lib", LIBS)
def test_late_materialization_batch_size(tmp_path, lib) -> None:
    mod = LIBS[lib]
    table = pa.table({"filter": range(32 * 32), "values": range(32 * 32)})
    ds = mod.write_dataset(table, tmp_path, data_storage_version="stable", max_rows_per_file=10000)
    batches = list(
        ds.to_batches(columns=["values"], filter="filter % 2 == 0", batch_size=32, late_materialization=True)
    )
    assert batches and all(b.num_rows == 32 for b in batches)


@pytest.mark.parametrize("lib", LIBS)
def test_dataset_schema(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.table({"x": [0]}), str(tmp_path))
    ds._default_scan_options = {"with_row_id": True}
    assert ds.schema == ds.to_table().schema
    assert ds.schema.names == ["x", "_rowid"]


@pytest.mark.parametrize("lib", LIBS)
def test_dataset_sql(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = mod.write_dataset(pa.table({"id": [1, 2, 3], "value": ["a", "b", "c"]}), tmp_path / "test")
    got = ds.sql("SELECT * FROM test WHERE id > 1").table_name("test").build().to_batch_records()
    assert pa.Table.from_batches(got) == pa.table({"id": [2, 3], "value": ["b", "c"]})
    reader = ds.sql("SELECT value FROM test WHERE id = 1").table_name("test").build().to_stream_reader()
    batches = list(reader)
    assert len(batches) == 1 and batches[0].to_pydict() == {"value": ["a"]}
    query = ds.sql("SELECT id as user_id, UPPER(value) as val FROM dataset WHERE id BETWEEN 1 AND 3").build()
    assert pa.Table.from_batches(query.to_batch_records()) == pa.table({"user_id": [1, 2, 3], "val": ["A", "B", "C"]})


# -- not the reference's: the batch shapes its tests above touch, over more cases, against pylance ----


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """One table in four fragments, written by lancelot and by pylance (shared: the tests only read)."""
    base = tmp_path_factory.mktemp("twins")
    t = pa.table({"a": range(1000), "b": range(1000), "s": [str(i) for i in range(1000)]})
    return lancelot.write_dataset(t, base / "ours", max_rows_per_file=300), lance.write_dataset(
        t, base / "theirs", max_rows_per_file=300
    )


@pytest.mark.parametrize(
    "kw",
    [
        {"batch_size": 64, "strict_batch_size": True, "order_by": ["a"]},
        {"batch_size": 64, "strict_batch_size": True, "filter": "a % 3 = 0"},
        {"batch_size": 100, "strict_batch_size": True, "offset": 5, "limit": 500, "columns": ["a"]},
        {"batch_size": 100, "strict_batch_size": True, "with_row_id": True},
        {"batch_size": 100, "strict_batch_size": True, "columns": []},
        *(
            {"batch_size": 32, "filter": "a % 2 == 0", "columns": cols, "late_materialization": late}
            for late in (None, True, False, ["b"], ["a"], ["s"])
            for cols in (["b"], ["b", "s"])
        ),
    ],
)
def test_batch_shapes_match_pylance(twins, kw) -> None:
    ours, theirs = twins
    got = list(ours.to_batches(**kw))
    want = list(theirs.to_batches(**kw))
    assert [b.num_rows for b in got] == [b.num_rows for b in want]
    assert pa.Table.from_batches(got, ours.scanner(**kw).projected_schema) == pa.Table.from_batches(
        want, theirs.scanner(**kw).projected_schema
    )
