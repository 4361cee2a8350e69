"""The reference's python/python/tests/test_optimize.py (lancedb/lance: compaction), ported: each test
runs the same code with pylance and with lancelot (``lib``), pylance the oracle; what lancelot writes
is read back by pylance. The vector-index remapping tests are out of scope (docs/ported-tests.md)."""

from __future__ import annotations

import pickle
import re
import threading

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.lance import Compaction
from lance.optimize import RewriteResult

import lancelot
import lancelot.optimize

LIBS = {"pylance": lance, "lancelot": lancelot}


def _compaction(lib: str):
    """pylance's ``lance.lance.Compaction``, or lancelot's ``lancelot.optimize.Compaction``."""
    return Compaction if lib == "pylance" else lancelot.optimize.Compaction


@pytest.mark.parametrize("lib", LIBS)
def test_dataset_optimize(tmp_path, lib) -> None:
    mod = LIBS[lib]
    data = pa.table({"a": range(1000), "b": range(1000)})
    ds = mod.write_dataset(data, tmp_path / "dataset", max_rows_per_file=100)
    assert ds.version == 1 and len(ds.get_fragments()) == 10
    m = ds.optimize.compact_files(target_rows_per_fragment=1000, materialize_deletions=False, num_threads=1)
    assert (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added) == (10, 1, 10, 1)
    assert ds.version == 3
    assert lance.dataset(tmp_path / "dataset").to_table() == data


@pytest.mark.parametrize("lib", LIBS)
def test_blob_compaction(tmp_path, lib) -> None:
    mod = LIBS[lib]
    blob_field = pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    schema = pa.schema([pa.field("id", pa.int32()), blob_field])
    blobs = [b"\x01\x02", b"\x03\x04\x05"]
    table = pa.table(
        {"id": pa.array([0, 1], type=pa.int32()), "blob": pa.array(blobs, type=pa.large_binary())}, schema=schema
    )
    ds = mod.write_dataset(
        table, tmp_path / "blob_dataset", schema=schema, max_rows_per_file=1, data_storage_version="stable"
    )
    assert len(ds.get_fragments()) == 2
    ds.optimize.compact_files(num_threads=1)
    assert len(ds.get_fragments()) == 1
    assert [f.readall() for f in ds.take_blobs("blob", indices=[0, 1])] == blobs
    theirs = lance.dataset(tmp_path / "blob_dataset")
    assert [f.readall() for f in theirs.take_blobs("blob", indices=[0, 1])] == blobs


def _fsl_table() -> pa.Table:
    """The reference's 4,096 rows of 1,024 int64s (32 MiB: its file counts hang on pylance's 8 MiB pages)."""
    return pa.table({"a": pa.FixedSizeListArray.from_arrays(pa.array(range(4 * 1024 * 1024)), 1024)})


@pytest.mark.parametrize("lib", LIBS)
def test_optimize_max_bytes(tmp_path, lib) -> None:
    """The reference's compact_files parts (its Compaction.plan part: test_optimize_max_bytes_plan)."""
    mod = LIBS[lib]
    data = _fsl_table()
    ds = mod.write_dataset(data, tmp_path / "dataset", max_rows_per_file=2 * 1024, data_storage_version="stable")
    assert len(ds.get_fragments()) == 2
    # max_bytes_per_file too small: tiny files (4, as nothing is written until a page's 8 MiB are held)
    m = ds.optimize.compact_files(
        target_rows_per_fragment=100 * 1024, materialize_deletions=False, max_bytes_per_file=1000, batch_size=128
    )
    assert (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added) == (2, 4, 2, 4)
    assert len(ds.get_fragments()) == 4
    assert lance.dataset(tmp_path / "dataset").to_table() == data

    ds = mod.write_dataset(
        data, tmp_path / "dataset", max_rows_per_file=2 * 1024, data_storage_version="stable", mode="overwrite"
    )
    # the whole input in one batch: one file per input fragment
    m = ds.optimize.compact_files(
        target_rows_per_fragment=100 * 1024, materialize_deletions=False, max_bytes_per_file=1000, batch_size=2 * 1024
    )
    assert (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added) == (2, 2, 2, 2)
    assert len(ds.get_fragments()) == 2


@pytest.mark.parametrize("lib", LIBS)
def test_optimize_max_bytes_plan(tmp_path, lib) -> None:
    """The reference's test_optimize_max_bytes, its Compaction.plan part."""
    mod, compaction = LIBS[lib], _compaction(lib)
    plan_of = compaction.plan  # (before the 32 MiB are written)
    ds = mod.write_dataset(
        _fsl_table(), tmp_path / "dataset", max_rows_per_file=2 * 1024, data_storage_version="stable"
    )
    plan = plan_of(ds, options=dict(target_rows_per_fragment=100 * 1024, max_bytes_per_file=1000, batch_size=128))
    m = compaction.commit(ds, [task.execute(ds) for task in plan.tasks])
    assert (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added) == (2, 4, 2, 4)


@pytest.mark.parametrize("lib", LIBS)
def test_compact_with_write(tmp_path, lib) -> None:
    """Compaction concurrent with appends leaves fragments out of id order; the next one reorders them.
    (The reference's vector column, 8 random float64s a row, is kept; no index is built.)"""
    mod = LIBS[lib]
    base = tmp_path / "dataset"
    num_frags, rows = 5, 300
    vec = pa.FixedSizeListArray.from_arrays(pa.array(np.random.default_rng(0).uniform(0, 1, rows * 8)), 8)
    data = pa.table({"vector": vec, "id": np.arange(rows)})
    mod.write_dataset(data, base)
    for _ in range(num_frags):
        mod.write_dataset(data, base, mode="append")

    def compact() -> None:
        mod.dataset(base).optimize.compact_files()

    thread = threading.Thread(target=compact)
    thread.start()
    for _ in range(num_frags):
        mod.write_dataset(data, base, mode="append")
    thread.join()
    ds = mod.dataset(base)
    ds.optimize.compact_files()
    assert ds.to_table().num_rows == rows * (num_frags * 2 + 1)
    assert lance.dataset(base).count_rows() == rows * (num_frags * 2 + 1)


@pytest.mark.parametrize("lib", LIBS)
def test_dataset_distributed_optimize(tmp_path, lib) -> None:
    mod, compaction = LIBS[lib], _compaction(lib)
    ds = mod.write_dataset(pa.table({"a": range(800), "b": range(800)}), tmp_path / "dataset", max_rows_per_file=200)
    fragments = ds.get_fragments()
    assert len(fragments) == 4
    plan = compaction.plan(ds, options=dict(target_rows_per_fragment=400, num_threads=1))
    assert plan.read_version == 1 and plan.num_tasks() == 2
    assert plan.tasks[0].fragments == [f.metadata for f in fragments[0:2]]
    assert plan.tasks[1].fragments == [f.metadata for f in fragments[2:4]]
    assert repr(plan) == "CompactionPlan(read_version=1, tasks=<2 compaction tasks>)"
    assert pickle.loads(pickle.dumps(plan)) == plan
    assert pickle.loads(pickle.dumps(plan.tasks[0])) == plan.tasks[0]
    result1 = plan.tasks[0].execute(ds)
    result = pickle.loads(pickle.dumps(result1))
    assert result == result1
    if lib == "pylance":
        assert isinstance(result, RewriteResult)
    assert re.match(r"RewriteResult\(read_version=1, new_fragments=\[.+\], old_fragments=\[.+\]\)", repr(result))
    m = compaction.commit(ds, [result1])
    assert (m.fragments_removed, m.fragments_added) == (2, 1)
    assert ds.version == 3  # two transactions
