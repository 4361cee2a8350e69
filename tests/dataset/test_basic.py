"""Dataset basics: write_fragments + commit, write_dataset modes, reads, time travel, delete."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.dataset import CommitConflictError, FragmentMetadata, commit, write_fragments
from lancelot.errors import LanceError, SchemaMismatchError


def _table(n: int, start: int = 0) -> pa.Table:
    a = np.arange(start, start + n, dtype=np.int64)
    return pa.table(
        {
            "a": a,
            "s": pa.array([f"v{i}" for i in a], pa.string()),
            "st": pa.StructArray.from_arrays([pa.array(a.astype(np.int32))], ["x"]),
        }
    )


def test_write_fragments_then_commit(tmp_path):
    uri = str(tmp_path / "ds")
    frags = write_fragments(_table(10), uri, max_rows_per_file=4)
    assert [f.physical_rows for f in frags] == [4, 4, 2]
    with pytest.raises(LanceError):
        lancelot.dataset(uri)  # nothing visible before the commit
    frags = [pickle.loads(pickle.dumps(f)) for f in frags]
    frags = [FragmentMetadata.from_json(f.to_json()) for f in frags]
    ds = commit(uri, "create", fragments=frags, schema=_table(0).schema)
    assert ds.version == 1
    assert ds.to_table().equals(_table(10))
    more = write_fragments(_table(5, 10), uri)
    ds = commit(uri, "append", fragments=more, schema=_table(0).schema)
    assert ds.version == 2 and [f.fragment_id for f in ds.get_fragments()] == [0, 1, 2, 3]
    assert ds.to_table().equals(pa.concat_tables([_table(10), _table(5, 10)]))
    with pytest.raises(CommitConflictError):
        commit(uri, "create", fragments=more, schema=_table(0).schema)


def test_modes_time_travel_take_filter(tmp_path):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(_table(100), uri, max_rows_per_file=30)
    with pytest.raises(CommitConflictError):
        lancelot.write_dataset(_table(1), uri)
    with pytest.raises(SchemaMismatchError):
        lancelot.write_dataset(pa.table({"b": [1]}), uri, mode="append")
    ds = lancelot.write_dataset(_table(50, 100), uri, mode="append")
    full = pa.concat_tables([_table(100), _table(50, 100)])
    assert ds.count_rows() == 150
    sevens = pc.equal(pc.bit_wise_and(pc.field("a"), 7), 0)
    ds = ds.delete(sevens)
    live = full.filter(~sevens)
    assert ds.version == 3 and ds.count_rows() == live.num_rows
    assert ds.to_table().equals(live)
    idx = [5, 0, 120, 5, live.num_rows - 1]
    assert ds.take(idx).equals(live.take(idx))
    assert ds.take(idx, columns=["s"]).equals(live.select(["s"]).take(idx))
    assert ds.to_table(columns=["st"], filter=pc.field("a") > 90).equals(live.filter(pc.field("a") > 90).select(["st"]))
    assert ds.count_rows(filter=pc.field("a") < 10) == 8  # 0 and 8 deleted
    assert pa.Table.from_batches(list(ds.to_batches(batch_size=7))).equals(live)
    ds2 = lancelot.write_dataset(_table(3), uri, mode="overwrite")
    assert ds2.version == 4 and ds2.to_table().equals(_table(3))
    assert lancelot.dataset(uri, version=1).to_table().equals(_table(100))
    assert ds2.checkout_version(2).to_table().equals(full)
    assert [v["version"] for v in ds2.versions()] == [1, 2, 3, 4]
    with pytest.raises(LanceError, match="version 9 does not exist"):
        lancelot.dataset(uri, version=9)


def test_fragment_api(tmp_path):
    uri = str(tmp_path / "ds")
    ds = lancelot.write_dataset(_table(20), uri, max_rows_per_file=10)
    ds = ds.delete(pc.field("a").isin([0, 3, 15]))
    f0, f1 = ds.get_fragments()
    assert (f0.fragment_id, f0.physical_rows, f0.count_rows()) == (0, 10, 8)
    assert f1.read(columns=["a"]).column(0).to_pylist() == [10, 11, 12, 13, 14, 16, 17, 18, 19]
    assert f0.read_range(1, 3, columns=["a"]).column(0).to_pylist() == [2, 4, 5]
    assert f0.metadata.num_deleted_rows == 2
    # no columns (what a count asks): the live rows are still counted across deleted ones
    assert f0.read_range(1, 3, columns=[]).num_rows == 3
    assert f0.read_range(0, 100, columns=[]).num_rows == 8


def test_memory_uri():
    uri = "memory://lancelot-test-ds/basic"
    lancelot.write_dataset(_table(10), uri)
    ds = lancelot.write_dataset(_table(5, 10), uri, mode="append")
    assert ds.to_table().equals(pa.concat_tables([_table(10), _table(5, 10)]))
    assert ds.delete(pc.field("a") > 3).count_rows() == 4


def test_append_reorders_columns_to_the_dataset(tmp_path):
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"a": [1], "b": ["x"]}), uri)
    ds = lancelot.write_dataset(pa.table({"b": ["y"], "a": [2]}), uri, mode="append")
    assert ds.to_table().to_pydict() == {"a": [1, 2], "b": ["x", "y"]}
