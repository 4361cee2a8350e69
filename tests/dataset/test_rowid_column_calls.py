"""Calls around the row-id and row-version columns that pylance refuses or accepts, run on twin datasets (one per
library, the same writes): a refused call raises an instance of the class pylance raises (pyarrow's ArrowInvalid for a
pyarrow Expression naming a field the dataset lacks, OSError for an update predicate naming ``_rowoffset``, ...); an
accepted one gives the same answer and leaves the same rows."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot

lance = pytest.importorskip("lance")

C = "_row_created_at_version"
SOURCE = pa.table({"id": pa.array([1, 2, 20], pa.int64()), "x": ["a", "b", "c"]})


def _merge(cond: str) -> Callable[[Any], Any]:
    return lambda d: d.merge_insert("id").when_matched_update_all(cond).execute(SOURCE)


def _by_source(expr: Any) -> Callable[[Any], Any]:
    return lambda d: d.merge_insert("id").when_not_matched_by_source_delete(expr).execute(SOURCE)


CALLS: dict[str, Callable[[Any], Any]] = {
    "update_rowoffset": lambda d: d.update({"x": "'1'"}, where="_rowoffset > 1"),
    "update_rowid": lambda d: d.update({"x": "'1'"}, where="_rowid > 5"),
    "update_version": lambda d: d.update({"x": "'1'"}, where=f"{C} > 0"),
    "update_expression_rowid": lambda d: d.update({"x": "'1'"}, where=pc.field("_rowid") > 5),
    "update_expression": lambda d: d.update({"x": "'1'"}, where=pc.field("id") > 5),
    "delete_expression_rowid": lambda d: d.delete(pc.field("_rowid") > 5),
    "delete_expression_rowaddr": lambda d: d.delete(pc.field("_rowaddr") > 5),
    "delete_expression_version": lambda d: d.delete(pc.field(C) > 0),
    "delete_expression_unknown": lambda d: d.delete(pc.field("nope") > 5),
    "delete_expression": lambda d: d.delete(pc.field("id") > 5),
    "delete_rowid": lambda d: d.delete("_rowid > 5"),
    "delete_version": lambda d: d.delete(f"{C} > 5"),
    "delete_rowoffset": lambda d: d.delete("_rowoffset > 5"),
    "scan_expression_rowid": lambda d: d.to_table(filter=pc.field("_rowid") > 5),
    "scan_expression_version": lambda d: d.to_table(filter=pc.field(C) > 0),
    "scan_rowid": lambda d: d.to_table(filter="_rowid > 5"),
    "count_expression_rowid": lambda d: d.count_rows(filter=pc.field("_rowid") > 5),
    "count_version": lambda d: d.count_rows(filter=f"{C} >= 1"),
    "fragment_count_expression_rowid": lambda d: d.get_fragment(0).count_rows(pc.field("_rowid") > 1),
    "fragment_count_version": lambda d: d.get_fragment(0).count_rows(f"{C} > 1"),
    "fragment_scan_expression_rowid": lambda d: d.get_fragment(0).to_table(filter=pc.field("_rowid") > 1),
    "merge_quoted_rowid": _merge('target."_rowid" > 0'),
    "merge_quoted_column": _merge('target."id" > 0'),
    "merge_quoted_source": _merge("source.\"x\" = 'a'"),
    "merge_backticks": _merge("target.`_rowid` > 0"),
    "merge_plain": _merge("target._rowid > 0"),
    "merge_quote_in_literal": _merge("target.x = 'target.\"id\"'"),
    "merge_condition_expression": lambda d: d.merge_insert("id").when_matched_update_all(pc.field("id") > 0),
    "merge_by_source_expression": _by_source(pc.field("id") > 5),
    "merge_by_source_text": _by_source("id > 5"),
    "merge_by_source_rowid": _by_source("_rowid > 5"),
    "deleted_rows_without_row_id": lambda d: d.to_table(columns=["id"], include_deleted_rows=True),
    "deleted_rows": lambda d: d.to_table(columns=["id", C], include_deleted_rows=True, with_row_id=True),
}


def _twin(lib: Any, path: Path, stable: bool) -> Any:
    shutil.rmtree(path, ignore_errors=True)
    t = pa.table({"id": pa.array(range(10), pa.int64()), "x": [str(i) for i in range(10)]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = lib.write_dataset(t, str(path), max_rows_per_file=4, enable_stable_row_ids=stable)
    ds.delete("id = 1")
    return lib.dataset(str(path))


def _run(call: Callable[[Any], Any], ds: Any) -> tuple[Any, BaseException | None]:
    try:
        got = call(ds)
    except Exception as e:  # compared with pylance's class
        return None, e
    return (got.to_pydict() if isinstance(got, pa.Table) else got), None


@pytest.mark.parametrize("stable", [True, False], ids=["stable", "addresses"])
@pytest.mark.parametrize("name", list(CALLS))
def test_same_answer_or_error_class(tmp_path: Path, name: str, stable: bool) -> None:
    """Lancelot raises what pylance raises (an instance of its class), or answers and changes the rows alike."""
    theirs, ours = _twin(lance, tmp_path / "pylance", stable), _twin(lancelot, tmp_path / "lancelot", stable)
    want, refused = _run(CALLS[name], theirs)
    got, error = _run(CALLS[name], ours)
    if refused is not None:
        assert isinstance(error, type(refused)), (type(refused), error)
        assert isinstance(error, lancelot.LanceError) or isinstance(refused, TypeError)  # (an argument's type)
    else:
        assert error is None
        assert got == want
    after = [lance.dataset(str(tmp_path / n)).to_table().to_pydict() for n in ("pylance", "lancelot")]
    assert after[1] == after[0]
