"""Errors of evaluating SQL over rows (an integer divided by zero), as pylance raises them: each operation runs on
twin datasets (a fresh copy per call, as a failing change must leave the dataset as it was), and lancelot's error
must be a LanceError of the builtin class pylance's is (OSError from the changes and count_rows, ValueError from
scans and ``ds.sql``), the dataset unchanged."""

from __future__ import annotations

import shutil

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.errors import LanceError
from lancelot.sql.errors import EvaluationError

_TABLE = pa.table({"x": pa.array([1, 2, 3], pa.int64()), "y": pa.array([0, 1, 0], pa.int32()), "f": [1.0, 2.0, 3.0]})
_SOURCE = pa.table({"x": pa.array([1, 5], pa.int64()), "y": pa.array([0, 0], pa.int32()), "f": [1.0, 5.0]})


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    path = tmp_path_factory.mktemp("sql_errors") / "base"
    lance.write_dataset(_TABLE, str(path))
    return path


#: (a failing filter, the failing value in it)
FAILING = [("x / 0 > 1", "x / 0"), ("x % 0 > 1", "x % 0"), ("x / y > 1", "x / y"), ("x % y = 1", "x % y")]

OPERATIONS = {
    "count_rows": lambda ds, f, v: ds.count_rows(filter=f),
    "to_table": lambda ds, f, v: ds.to_table(filter=f),
    "scanner": lambda ds, f, v: ds.scanner(filter=f).to_table(),
    "update_where": lambda ds, f, v: ds.update({"x": "x + 1"}, where=f),
    "delete": lambda ds, f, v: ds.delete(f),
    "update_value": lambda ds, f, v: ds.update({"x": v}),
    "add_columns": lambda ds, f, v: ds.add_columns({"z": v}),
    "scan_columns": lambda ds, f, v: ds.to_table(columns={"z": v}),
    "sql": lambda ds, f, v: ds.sql(f"SELECT {v} FROM dataset").build().to_batch_records(),
    "merge_insert": lambda ds, f, v: (
        ds.merge_insert("x")
        .when_matched_update_all(f.replace("x", "target.x").replace("y", "target.y"))
        .execute(_SOURCE)
    ),
}


def _raised(lib, base, tmp_path, name: str, op: str, failing: tuple[str, str]) -> BaseException:
    path = tmp_path / name
    shutil.copytree(base, path)
    ds = lib.dataset(str(path))
    with pytest.raises(Exception) as e:
        OPERATIONS[op](ds, *failing)
    assert lib.dataset(str(path)).version == 1  # nothing committed
    return e.value


@pytest.mark.parametrize("failing", FAILING, ids=[v for _, v in FAILING])
@pytest.mark.parametrize("op", list(OPERATIONS))
def test_division_by_zero(base, tmp_path, op: str, failing: tuple[str, str]) -> None:
    theirs = _raised(lance, base, tmp_path, "pl", op, failing)
    ours = _raised(lancelot, base, tmp_path, "lt", op, failing)
    builtin = OSError if type(theirs) is OSError else ValueError
    assert isinstance(theirs, builtin)
    assert isinstance(ours, LanceError) and isinstance(ours, builtin), (type(theirs), type(ours), str(ours))
    assert "zero" in str(ours)


def test_evaluation_error_is_both() -> None:
    """One class for the failure wherever it arises: pylance's OSError (changes) and ValueError (scans)."""
    assert issubclass(EvaluationError, OSError) and issubclass(EvaluationError, ValueError)
    assert str(EvaluationError("divide by zero")) == "divide by zero"


def test_float_division_by_zero_is_no_error(base, tmp_path) -> None:
    """A float divided by zero is an infinity or a NaN, not an error, in both."""
    for lib, name in ((lance, "pl"), (lancelot, "lt")):
        shutil.copytree(base, tmp_path / name)
        ds = lib.dataset(str(tmp_path / name))
        assert ds.count_rows(filter="f / 0 > 1") == 3
        assert ds.update({"f": "f / 0"}, where="f / 0 > 1")["num_rows_updated"] == 3
