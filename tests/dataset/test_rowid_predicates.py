"""Change predicates naming the row-id columns (``_rowid``, ``_rowaddr``), against pylance: twin datasets written and
changed by pylance (a delete, then an update that moves rows, so row ids and addresses differ when row ids are
stable), then the same change by each library, both read back by pylance."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lancelot

lance = pytest.importorskip("lance")


def _build(path: str, stable: bool) -> None:
    """30 rows in fragments of 5; rows deleted, then some updated (moved to a new fragment)."""
    t = pa.table({"id": pa.array(range(30), pa.int64()), "x": pa.array([float(i) for i in range(30)])})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = lance.write_dataset(t, path, max_rows_per_file=5, enable_stable_row_ids=stable)
    ds.delete("id % 3 = 1")
    ds.update({"id": "id + 100"}, where="id % 4 = 2")


def _both(tmp_path: Path, stable: bool, change: Callable[[Any, Any], Any]) -> list[tuple[Any, list[dict[str, Any]]]]:
    """(what ``change(dataset, library)`` returned, the rows pylance then reads) for pylance, then lancelot."""
    out = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        _build(p, stable)
        got = change(lib.dataset(p), lib)
        out.append((got, lance.dataset(p).to_table(columns=["id", "x"], with_row_id=True).to_pylist()))
    return out


STABLE = pytest.mark.parametrize("stable", [False, True], ids=["addresses", "stable"])


@STABLE
@pytest.mark.parametrize(
    "predicate",
    [
        "_rowid > 5",
        "_rowid >= 4294967296",
        "_rowaddr < 4294967296",
        "_rowaddr >= 12884901888",
        "_rowid IN (0, 2, 4294967298, 7)",
        "_rowid = _rowaddr",
        "_rowid IS NULL",
        "_rowid % 3 = 0 AND id > 4",
    ],
)
def test_delete_by_row_id_columns(tmp_path: Path, stable: bool, predicate: str) -> None:
    (want, want_rows), (got, got_rows) = _both(tmp_path, stable, lambda ds, lib: dict(ds.delete(predicate)))
    assert got == want
    assert got_rows == want_rows


@STABLE
@pytest.mark.parametrize("where", ["_rowid > 20", "_rowaddr > 8589934592", "_rowid % 2 = 0 AND x > 10"])
def test_update_where_row_id_columns(tmp_path: Path, stable: bool, where: str) -> None:
    (want, want_rows), (got, got_rows) = _both(tmp_path, stable, lambda ds, lib: ds.update({"x": "-1.0"}, where=where))
    assert got == want
    assert got_rows == want_rows


@STABLE
def test_update_blob_dataset_where_row_id(tmp_path: Path, stable: bool) -> None:
    """A dataset with a blob column takes update's other path (matched positions, then takes)."""
    blob = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    out = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        t = pa.table(
            [pa.array(range(20), pa.int64()), pa.array([bytes([i]) * 10 for i in range(20)], blob.type)],
            schema=pa.schema([pa.field("id", pa.int64()), blob]),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds = lance.write_dataset(t, p, max_rows_per_file=5, enable_stable_row_ids=stable)
        ds.delete("id % 3 = 1")
        ds.update({"id": "id + 100"}, where="id % 4 = 2")
        got = lib.dataset(p).update({"id": "id * 2"}, where="_rowid > 6")
        d = lance.dataset(p)
        blobs = [b.readall() for b in d.take_blobs("b", indices=list(range(d.count_rows())))]
        out.append((got, d.to_table(columns=["id"], with_row_id=True).to_pylist(), blobs))
    assert out[1] == out[0]


@STABLE
@pytest.mark.parametrize("predicate", ["_rowid > 7", "_rowaddr > 4294967297", "_rowid < 3"])
def test_fragment_delete_by_row_id_columns(tmp_path: Path, stable: bool, predicate: str) -> None:
    """``LanceFragment.delete`` then ``LanceOperation.Delete``, each library committing its own."""

    def change(ds: Any, lib: Any) -> None:
        meta = ds.get_fragment(1).delete(predicate)
        kept, gone = ([meta], []) if meta is not None else ([], [1])
        op = lib.LanceOperation.Delete(updated_fragments=kept, deleted_fragment_ids=gone, predicate=predicate)
        lib.LanceDataset.commit(ds.uri, op, read_version=ds.version)

    (_, want_rows), (_, got_rows) = _both(tmp_path, stable, change)
    assert got_rows == want_rows


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda ds: ds.delete("_rowoffset > 3"), OSError),  # not a column a change predicate may name
        (lambda ds: ds.update({"x": "CAST(_rowid AS DOUBLE)"}), ValueError),  # nor an update's new value
        (  # nor a merge_insert's by-source filter
            lambda ds: (
                ds.merge_insert("id")
                .when_not_matched_by_source_delete("_rowid > 10")
                .execute(pa.table({"id": pa.array([0], pa.int64()), "x": [0.0]}))
            ),
            ValueError,
        ),
        (  # the source has no row ids
            lambda ds: (
                ds.merge_insert("id")
                .when_matched_update_all(condition="source._rowid > 1")
                .execute(pa.table({"id": pa.array([0, 3], pa.int64()), "x": [0.0, 0.0]}))
            ),
            OSError,
        ),
        (  # nor a merge_insert's update condition
            lambda ds: (
                ds.merge_insert("id")
                .when_matched_update_all(condition="target._rowoffset > 1")
                .execute(pa.table({"id": pa.array([0, 3], pa.int64()), "x": [0.0, 0.0]}))
            ),
            OSError,
        ),
    ],
    ids=["delete_rowoffset", "update_value_rowid", "by_source_rowid", "merge_source_rowid", "merge_rowoffset"],
)
def test_row_id_columns_refused_as_pylance(tmp_path: Path, change: Callable[[Any], Any], error: type) -> None:
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        _build(p, True)
        ds = lib.dataset(p)
        with pytest.raises(error):
            change(ds)
        assert lance.dataset(p).version == ds.version  # nothing committed


@STABLE
@pytest.mark.parametrize(
    "condition",
    [
        "target._rowid > 10",
        "_rowid > 10",
        "target._rowaddr > 8589934592",
        "_rowaddr > 8589934592",
        "_rowid = _rowaddr",
        "target._rowid < source.id",
        "`_rowid` % 2 = 0 AND target.x > 5",
    ],
)
@pytest.mark.parametrize("insert", [False, True], ids=["update", "upsert"])
def test_merge_insert_update_condition_row_id_columns(
    tmp_path: Path, stable: bool, insert: bool, condition: str
) -> None:
    """The target's row ids / addresses, qualified or not (only the target has them), in the update condition."""
    src = pa.table({"id": pa.array([0, 3, 5, 9, 12, 15, 27, 102, 500], pa.int64()), "x": [-1.0] * 9})

    def change(ds: Any, lib: Any) -> Any:
        b = ds.merge_insert("id").when_matched_update_all(condition=condition)
        return (b.when_not_matched_insert_all() if insert else b).execute(src)

    (want, want_rows), (got, got_rows) = _both(tmp_path, stable, change)
    assert got == want
    assert got_rows == want_rows


@pytest.mark.parametrize("condition", ["y > 5", "y > source.x", "_rowid > 3 AND y < 8", "x > 5"])
def test_merge_insert_update_condition_unqualified_names(tmp_path: Path, condition: str) -> None:
    """A name only one side has may go unqualified (the target's row-id columns, a column the source lacks); one both
    sides have is ambiguous (OSError), as in pylance."""
    src = pa.table({"id": pa.array([1, 3, 7, 8], pa.int64()), "x": [-1.0, 9.0, 2.0, 20.0]})
    out = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        t = pa.table({"id": pa.array(range(10), pa.int64()), "x": [float(i) for i in range(10)], "y": list(range(10))})
        lance.write_dataset(t, p)
        try:
            got: Any = lib.dataset(p).merge_insert("id").when_matched_update_all(condition=condition).execute(src)
        except OSError:
            got = OSError
        out.append((got, lance.dataset(p).to_table().to_pylist()))
    assert out[1] == out[0]
