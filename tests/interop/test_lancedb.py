"""Datasets exchanged with LanceDB (its own Rust core, a newer lance than the pylance oracle): a
LanceDB database is a directory of ``<table>.lance`` datasets, so what lancelot writes LanceDB
opens, searches, indexes and appends to, and what LanceDB writes lancelot reads."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancelot

lancedb = pytest.importorskip("lancedb", reason="lancedb (a second oracle, pyproject's dev extra) is not installed")
BTree = lancedb.index.BTree

N, DIM = 2000, 8


def sample() -> tuple[pa.Table, np.ndarray]:
    rng = np.random.default_rng(0)
    vec = rng.random((N, DIM), dtype=np.float32)
    table = pa.table(
        {
            "id": pa.array(np.arange(N)),
            "name": [f"item {i}" if i % 7 else None for i in range(N)],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), DIM),
        }
    )
    return table, vec


def sort(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


def test_lancedb_opens_searches_and_appends_to_a_lancelot_table(tmp_path):
    table, vec = sample()
    lancelot.write_dataset(table, str(tmp_path / "ours.lance"))
    db = lancedb.connect(str(tmp_path))
    tbl = db.open_table("ours")
    assert tbl.count_rows() == N
    assert tbl.to_arrow().equals(table)
    # exact (flat) nearest neighbours over lancelot's vector column
    for q in (17, 1234):
        got = tbl.search(vec[q]).limit(3).to_arrow().column("id").to_pylist()
        assert got == np.argsort(((vec - vec[q]) ** 2).sum(1))[:3].tolist()
    assert tbl.search().where("id = 43").to_arrow().column("name").to_pylist() == ["item 43"]
    # LanceDB appends and deletes; lancelot reads its versions
    tbl.add(table.slice(0, 10))
    tbl.delete("id < 5")
    ours = lancelot.dataset(str(tmp_path / "ours.lance"))
    assert ours.version == 3
    assert ours.count_rows() == tbl.count_rows() == N  # +10 appended, -10 with id < 5
    assert sort(ours.to_table()).equals(sort(tbl.to_arrow()))


def test_lancelot_reads_and_appends_to_a_lancedb_table_with_indices(tmp_path):
    table, vec = sample()
    db = lancedb.connect(str(tmp_path))
    tbl = db.create_table("theirs", table)
    tbl.add(table.slice(0, 100))
    tbl.delete("id > 1900")
    tbl.create_index("id", config=BTree())
    uri = str(tmp_path / "theirs.lance")
    ds = lancelot.dataset(uri)
    assert ds.count_rows() == tbl.count_rows() == 1901 + 100
    assert sort(ds.to_table()).equals(sort(tbl.to_arrow()))
    assert ds.take([0, 1900, 1901]).column("id").to_pylist() == [0, 1900, 0]
    # lancelot appends on top of LanceDB's indexed table; LanceDB sees it and its index still answers
    lancelot.write_dataset(table.slice(500, 3), uri, mode="append")
    tbl.checkout_latest()
    assert tbl.count_rows() == lancelot.dataset(uri).count_rows() == 2004
    assert [ix.name for ix in tbl.list_indices()] == ["id_idx"]
    assert tbl.search().where("id = 501").to_arrow().column("id").to_pylist() == [501, 501]
    assert tbl.search(vec[1234]).limit(1).to_arrow().column("id").to_pylist() == [1234]
