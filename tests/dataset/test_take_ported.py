"""The reference's python/python/tests/test_dataset.py (lancedb/lance) tests of take and sample, ported: each
test runs the same code with pylance and with lancelot (``lib``), pylance the oracle; what lancelot writes is
read back by pylance. Row counts are scaled down where the test's logic allows (noted). Where pylance 14.0.2
differs from the reference's assertion, the test follows pylance 14.0.2 and says so. docs/ported-tests.md
lists every reference test and where it is."""

from __future__ import annotations

import random

import lance
import lance.file
import lance.fragment
import pyarrow as pa
import pytest

from tests.dataset.helpers import LIBS


@pytest.mark.parametrize("lib", LIBS)
def test_sample(tmp_path, lib) -> None:
    mod = LIBS[lib]
    mod.write_dataset(pa.Table.from_pydict({"x": [0, 10, 20, 30, 40, 50], "y": range(6)}), tmp_path / "test")
    ds = mod.dataset(tmp_path / "test")
    sampled = ds.sample(3)
    assert (sampled.num_rows, sampled.num_columns) == (3, 2)
    sampled = ds.sample(4, columns=["x"])
    assert (sampled.num_rows, sampled.num_columns) == (4, 1)
    assert all(v.as_py() % 10 == 0 for v in sampled.column(0).chunk(0))


@pytest.mark.parametrize("lib", LIBS)
def test_take_rowid_rowaddr(tmp_path, lib) -> None:
    """(As the reference: counts of rows and columns; and here also equal to pylance's take.)"""
    mod = LIBS[lib]
    base = tmp_path / "test"
    mod.write_dataset(
        pa.table({"a": range(1000), "b": range(1000)}), base, enable_stable_row_ids=False, max_rows_per_file=50
    )
    ds = mod.dataset(base)
    theirs = lance.dataset(base)
    sampled = random.Random(7).sample(range(len(ds)), 10)
    fixed = [1, 2, 3, 4, 5, 6, 7, 8, 9, 100]
    for columns in (
        ["_rowid"],
        ["_rowid", "_rowid"],
        ["_rowaddr"],
        ["_rowaddr", "_rowid"],
        ["_rowid", "_rowaddr"],
        ["a", "_rowid", "_rowaddr"],
        ["_rowid", "_rowaddr", "b"],
        ["a", "b"],
    ):
        for idx in (sampled, fixed):
            got = ds.take(idx, columns=columns)
            assert (got.num_rows, got.num_columns) == (10, len(columns))
            assert got == theirs.take(idx, columns=columns)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("indices", [[], [1, 1], [1, 1, 20, 20, 21], [21, 0, 21, 1, 0]])
def test_take_duplicate_index(tmp_path, lib, indices) -> None:
    mod = LIBS[lib]
    table = pa.table({"x": range(24)})
    ds = mod.write_dataset(table, tmp_path, max_rows_per_group=3, max_rows_per_file=9)
    assert ds.take(indices) == table.take(pa.array(indices, pa.int64()))


@pytest.mark.parametrize("lib", LIBS)
def test_take_with_columns(tmp_path, lib) -> None:
    mod = LIBS[lib]
    mod.write_dataset(pa.Table.from_pylist([{"a": 1, "b": 2}, {"a": 10, "b": 20}]), tmp_path / "test")
    assert mod.dataset(tmp_path / "test").take([0], columns=["b"]) == pa.Table.from_pylist([{"b": 2}])


@pytest.mark.parametrize("lib", LIBS)
def test_take_with_projection(tmp_path, lib) -> None:
    mod = LIBS[lib]
    mod.write_dataset(pa.Table.from_pylist([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]), tmp_path / "test")
    ds = mod.dataset(tmp_path / "test")
    got = ds.take([0], columns={"a2": "a*2", "bup": "UPPER(b)"})
    assert got == pa.Table.from_pylist([{"a2": 2, "bup": "X"}])
    assert ds._take_rows([0], columns={"a2": "a*2", "bup": "UPPER(b)"}) == got


# -- the reference's tests whose facts other files already check (test_versions.py, test_tags.py,
# -- test_pickle.py, test_metadata.py), ported here as they are, line for line ---------------------


@pytest.mark.parametrize("lib", LIBS)
def test_take(tmp_path, lib) -> None:
    mod = LIBS[lib]
    table = pa.Table.from_pylist([{"a": 1, "b": 2}, {"a": 10, "b": 20}])
    mod.write_dataset(table, tmp_path / "test")
    got = mod.dataset(tmp_path / "test").take([0, 1])
    assert isinstance(got, pa.Table) and got == table
