"""``LanceDataset.delta`` (inserted rows, updated rows, deleted row ids, transactions between two versions) against
pylance's: the same calls on twin datasets, each history written by one library, answer alike (rows, schemas, the
kinds of the transactions, or the exception class)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lancelot
from tests.helpers import builtin_class

lance = pytest.importorskip("lance")


def _history(lib: Any, path: Path, stable: bool) -> Any:
    """Six versions: a write in two fragments, an append, an update, two deletes (one of an appended row)."""
    t = pa.table({"id": pa.array([1, 2, 3, 5, 6], pa.int64()), "v": ["a", "b", "c", "e", "f"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib.write_dataset(t, str(path), max_rows_per_file=3, enable_stable_row_ids=stable)
        lib.write_dataset(pa.table({"id": pa.array([4, 7], pa.int64()), "v": ["d", "g"]}), str(path), mode="append")
    ds = lib.dataset(str(path))
    ds.update({"v": "'u'"}, where="id = 2 OR id = 7")
    ds.delete("id = 3 OR id = 4")
    ds.delete("id = 6")
    return lib.dataset(str(path))


RANGES = {
    "compared_1": ((1,), {}),
    "compared_3": ((3,), {}),
    "compared_current": ((5,), {}),
    "range_2_4": ((), {"begin_version": 2, "end_version": 4}),
    "range_backwards": ((), {"begin_version": 4, "end_version": 2}),
    "compared_wins": ((1,), {"begin_version": 3, "end_version": 4}),
    "nothing": ((), {}),
    "begin_only": ((), {"begin_version": 1}),
    "end_only": ((), {"end_version": 2}),
}
READS = ("get_inserted_rows", "get_updated_rows", "get_deleted_row_ids", "list_transactions")


def _outcome(ds: Any, args: tuple[Any, ...], kwargs: dict[str, Any], read: str) -> Any:
    try:
        got = getattr(ds.delta(*args, **kwargs), read)()
    except Exception as e:  # compared by class
        return builtin_class(e)
    if isinstance(got, pa.RecordBatchReader):
        t = got.read_all()
        return t.schema.remove_metadata(), t.to_pydict()
    return [type(t.operation).__name__ for t in got]


@pytest.fixture(scope="module", params=[True, False], ids=["stable", "addresses"])
def twins(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    return tuple(_history(lib, tmp_path_factory.mktemp(lib.__name__) / "d", request.param) for lib in (lance, lancelot))


@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize("name", list(RANGES))
def test_delta_matches(twins: tuple[Any, Any], name: str, read: str) -> None:
    """Each read of each range answers alike on twin datasets, from the latest version and from version 3."""
    args, kwargs = RANGES[name]
    theirs, ours = twins
    assert _outcome(ours, args, kwargs, read) == _outcome(theirs, args, kwargs, read)
    old = [lib.dataset(ds.uri, version=3) for lib, ds in ((lance, theirs), (lancelot, ours))]
    assert _outcome(old[1], args, kwargs, read) == _outcome(old[0], args, kwargs, read)


def test_delta_reads_the_other_librarys_history(tmp_path: Path) -> None:
    """lancelot's delta of a history pylance wrote is pylance's, and the other way round."""
    for writer, reader in ((lance, lancelot), (lancelot, lance)):
        ds = _history(writer, tmp_path / writer.__name__, True)
        for read in READS[:3]:
            want = _outcome(writer.dataset(ds.uri), (1,), {}, read)
            assert _outcome(reader.dataset(ds.uri), (1,), {}, read) == want
