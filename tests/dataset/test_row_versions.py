"""The row-version columns (``_row_created_at_version``, ``_row_last_updated_at_version``) against pylance: histories
of appends, updates, merge_inserts, deletes, compactions and restores made by one library, by the other, or by both in
turn (each writing every other version), then read by both; and the same reads (projections, filters, takes, fragment
scans, deleted rows) on twin datasets."""

from __future__ import annotations

import itertools
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lancelot
from tests.helpers import builtin_class

lance = pytest.importorskip("lance")

C, U = "_row_created_at_version", "_row_last_updated_at_version"


def _rows(a: int, b: int, v: str = "r") -> pa.Table:
    return pa.table({"id": pa.array(range(a, b), pa.int64()), "v": [f"{v}{i}" for i in range(a, b)]})


OPS: dict[str, Callable[[Any, Any], Any]] = {
    "append": lambda lib, ds: lib.write_dataset(_rows(100, 104), ds.uri, mode="append"),
    "update": lambda lib, ds: ds.update({"v": "'u'"}, where="id % 3 = 0"),
    "update_all": lambda lib, ds: ds.update({"v": "'all'"}),
    "upsert": lambda lib, ds: (
        ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(_rows(8, 14, "m"))
    ),
    "upsert_cond": lambda lib, ds: (
        ds.merge_insert("id")
        .when_matched_update_all("target.id > 7")
        .when_not_matched_insert_all()
        .execute(_rows(6, 12, "c"))
    ),
    "upsert_by_source": lambda lib, ds: (
        ds.merge_insert("id").when_matched_update_all().when_not_matched_by_source_delete().execute(_rows(2, 6, "s"))
    ),
    "insert_only": lambda lib, ds: ds.merge_insert("id").when_not_matched_insert_all().execute(_rows(8, 14, "i")),
    "delete": lambda lib, ds: ds.delete("id = 5 OR id = 101"),
    "delete_fragment": lambda lib, ds: ds.delete("id < 4"),
    "compact": lambda lib, ds: ds.optimize.compact_files(target_rows_per_fragment=1000),
    "compact_deletions": lambda lib, ds: ds.optimize.compact_files(
        target_rows_per_fragment=6, materialize_deletions_threshold=0.01
    ),
    "drop": lambda lib, ds: ds.drop_columns(["v"]),
    "rename": lambda lib, ds: ds.alter_columns({"path": "v", "name": "w"}),
    "overwrite": lambda lib, ds: lib.write_dataset(_rows(50, 55), ds.uri, mode="overwrite"),
    "restore": lambda lib, ds: lib.dataset(ds.uri, version=2).restore(),
    "add_sql": lambda lib, ds: ds.add_columns({"z": "id * 2"}),
    "add_null": lambda lib, ds: ds.add_columns(pa.field("n", pa.int32())),
    "merge_join": lambda lib, ds: ds.merge(pa.table({"id": pa.array(range(20), pa.int64()), "j": range(20)}), "id"),
    "cast": lambda lib, ds: ds.alter_columns({"path": "id", "data_type": pa.int32()}),
    "merge_one_fragment": lambda lib, ds: _merge_one_fragment(lib, ds),
}


def _merge_one_fragment(lib: Any, ds: Any) -> Any:
    """A column added to the second fragment only (its other rows read as null), committed as a ``Merge``."""
    frags = [f.metadata for f in ds.get_fragments()]
    one, schema = ds.get_fragments()[1].merge_columns(
        lambda b: pa.record_batch([pa.array([7] * b.num_rows)], names=["k"]), columns=["id"]
    )
    frags[1] = one
    return lib.LanceDataset.commit(ds.uri, lib.LanceOperation.Merge(frags, schema), read_version=ds.version)


HISTORIES = [
    ["append", "update", "upsert", "delete", "compact", "update"],
    ["upsert", "compact", "upsert"],
    ["delete", "compact"],
    ["update", "update", "upsert"],
    ["upsert_by_source", "upsert"],
    ["upsert_cond"],
    ["delete_fragment", "update_all", "compact_deletions"],
    ["update", "overwrite", "update"],
    ["update", "restore", "update"],
    ["insert_only", "update"],
    ["append", "delete", "compact_deletions", "upsert"],
    ["update", "drop", "compact"],
    ["update", "rename", "delete", "compact"],
    ["update", "add_sql", "append", "update"],
    ["add_null", "update"],
    ["delete", "merge_join", "compact"],
    ["upsert", "cast"],
    ["update", "merge_one_fragment", "update"],
]


def _history(path: Path, ops: list[str], libs: list[Any], stable: bool) -> str:
    """Write 10 rows in fragments of 4, then run ``ops``, the libraries ``libs`` taking turns from the first write."""
    shutil.rmtree(path, ignore_errors=True)
    turn = itertools.cycle(libs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        next(turn).write_dataset(_rows(0, 10), str(path), max_rows_per_file=4, enable_stable_row_ids=stable)
        for op in ops:
            lib = next(turn)
            OPS[op](lib, lib.dataset(str(path)))
    return str(path)


def _read(lib: Any, path: str) -> dict[str, list[Any]]:
    ds = lib.dataset(path)
    cols = [c for c in ds.schema.names if c != "id"]
    return dict(ds.to_table(columns=["id", *cols, C, U, "_rowid"]).sort_by("id").to_pydict())


@pytest.mark.parametrize("stable", [True, False], ids=["stable", "addresses"])
@pytest.mark.parametrize("ops", HISTORIES, ids=["-".join(h) for h in HISTORIES])
def test_history_versions_match(tmp_path: Path, ops: list[str], stable: bool) -> None:
    """A history's row versions are the same whoever wrote it and whoever reads it; pylance reads the transaction of
    every version (a lancelot commit after pylance's restore once kept pylance's inline-transaction position)."""
    want = _read(lance, _history(tmp_path / "pylance", ops, [lance], stable))
    for name, libs in (("lancelot", [lancelot]), ("mixed1", [lance, lancelot]), ("mixed2", [lancelot, lance])):
        path = _history(tmp_path / name, ops, libs, stable)
        for reader in (lance, lancelot):
            assert _read(reader, path) == want, (name, reader.__name__)
        ds = lance.dataset(path)
        assert len(ds.get_transactions(ds.version)) == ds.version


@pytest.fixture(scope="module", params=[True, False], ids=["stable", "addresses"])
def twins(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """The same history (append, update, delete) written by each library on its own."""
    out = []
    for lib in (lance, lancelot):
        path = tmp_path_factory.mktemp(lib.__name__)
        out.append(lib.dataset(_history(path / "d", ["append", "update", "delete"], [lib], request.param)))
    return out[0], out[1]


READS: dict[str, Callable[[Any], Any]] = {
    "columns": lambda d: d.to_table(columns=["id", C, U]),
    "reversed": lambda d: d.to_table(columns=[U, "id", C]),
    "mixed": lambda d: d.to_table(columns=[U, "_rowaddr", "id", C, "_rowid", "_rowoffset"]),
    "only": lambda d: d.to_table(columns=[C]),
    "flags": lambda d: d.to_table(columns=["id", C], with_row_address=True, with_row_id=True),
    "filter": lambda d: d.to_table(columns=["id"], filter=f"{U} > 2"),
    "filter_both": lambda d: d.to_table(filter=f"{C} = 2 AND {U} = 3"),
    "dict": lambda d: d.to_table(columns={"a": "id", "b": C, "c": U}),
    "dict_expression": lambda d: d.to_table(columns={"a": f"{U} + 1"}),
    "take": lambda d: d.take([0, 3, 9], columns=["id", C, U]),
    "take_rows": lambda d: d._take_rows(d.to_table(columns=["_rowid"]).column(0).to_pylist()[2:5], columns=[C, U]),
    "deleted_rows": lambda d: d.to_table(columns=["id", C, U], include_deleted_rows=True, with_row_id=True),
    "deleted_rows_no_id": lambda d: d.to_table(columns=["id", C, U], include_deleted_rows=True),
    "schema": lambda d: d.scanner(columns=["id", C, U]).projected_schema,
    "count": lambda d: d.count_rows(filter=f"{U} > 2"),
    "fragment": lambda d: d.get_fragments()[-1].to_table(columns=["id", C, U]),
    "fragment_filter": lambda d: d.get_fragments()[0].scanner(columns=["id", C], filter=f"{U} >= 1").to_table(),
    "window": lambda d: d.to_table(columns=[C, U], limit=3, offset=5),
    "batches": lambda d: pa.Table.from_batches(list(d.to_batches(columns=[C], batch_size=2))),
    "order_by": lambda d: d.to_table(columns=["id", C], order_by=[C]),
}


def _outcome(call: Callable[[Any], Any], ds: Any) -> Any:
    """What ``call`` gives: a table's schema and rows, or the builtin class of its exception."""
    try:
        got = call(ds)
    except Exception as e:  # compared by the builtin class pylance raises
        return builtin_class(e)
    if isinstance(got, pa.Table):
        return got.schema.remove_metadata(), got.to_pydict()
    return got


@pytest.mark.parametrize("name", list(READS))
def test_reads_match(twins: tuple[Any, Any], name: str) -> None:
    """Each read answers alike (rows, schema, or exception class) on twin datasets."""
    theirs, ours = twins
    assert _outcome(READS[name], ours) == _outcome(READS[name], theirs)
