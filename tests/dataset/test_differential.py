"""A stateful differential test: one random sequence of dataset operations applied through
lancelot on one directory and through pylance on a twin, each library keeping ONE long-lived
dataset object across the steps (where a stale per-object cache would hide); after every step
both objects must answer every read alike (rows, counts, takes, scans, version, schema,
history), and each library must read the other's directory as it reads its own."""

from __future__ import annotations

import os
import random
from datetime import timedelta
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelot
from tests.dataset.differential import BASE, make_batch, result_or_error, run

#: CI runs four short sequences (9 steps), whose setups (``Setup.of``) cover the axes: seed 0 a 2.3 dataset with large
#: string/binary columns and MORE_OPS, seed 2 a 2.2 one with stable row ids, a map column and MORE_OPS, seed 6 a 2.1 one
#: with vectors (nearest) and MORE_OPS, seed 9 a 2.0 one with timestamp/date/decimal columns.  A longer hunt:
#: LANCELOT_DIFF_SEEDS=200 LANCELOT_DIFF_STEPS=30 python -m pytest tests/dataset/test_differential.py -k sequence
#: (LANCELOT_DIFF_SEEDS=200:400 runs seeds 200 to 399); along one axis, LANCELOT_DIFF_SETUP (see ``Setup.of``), e.g.
#: LANCELOT_DIFF_SETUP="version=2.3,stable=1,column=vec,more=1" (``Setup`` and ``MORE_OPS`` are in differential.py)
SEEDS = (
    range(*map(int, os.environ["LANCELOT_DIFF_SEEDS"].split(":")))
    if "LANCELOT_DIFF_SEEDS" in os.environ
    else [0, 2, 6, 9]
)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_sequence_twins_agree(tmp_path, seed):
    run(tmp_path, None, seed, int(os.environ.get("LANCELOT_DIFF_STEPS", 9)))


# -- regressions the sequences found ----------------------------------------------------------------


def test_add_columns_sql_nullability_as_pylance(tmp_path):
    """A new column computed from non-null columns and literals is non-null in pylance's schema."""
    first = make_batch(random.Random(0), BASE, list(range(5)))
    new = {"a": "id + 1", "b": "x * 2", "c": "CAST(id AS INT)", "d": "concat(s, 'z')", "e": "1", "f": "abs(id)"}
    schemas = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        lib.write_dataset(first, p)
        ds = lib.dataset(p)
        ds.add_columns(new)
        schemas.append((ds.schema, lance.dataset(p).schema))
    assert schemas[1] == schemas[0]
    assert [schemas[0][0].field(c).nullable for c in new] == [False, False, False, True, False, True]


@pytest.mark.parametrize("between", ["restore", "overwrite"])
def test_insert_through_stale_object_conflicts(tmp_path, between):
    """``ds.insert`` (and ``write_dataset(data, ds)``) build on the version ``ds`` read: a concurrent restore or
    overwrite since is a conflict, as in pylance, not an append on top of what it put back."""
    first = make_batch(random.Random(1), BASE, list(range(6)))
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        lib.write_dataset(first, p)
        lib.write_dataset(first, p, mode="append")
        for by_object in (True, False):
            ds = lib.dataset(p)
            if between == "restore":
                lib.dataset(p).checkout_version(1).restore()
            else:
                lib.write_dataset(first, p, mode="overwrite")
            with pytest.raises(OSError, match="(?i)incompatible|conflict"):
                if by_object:
                    ds.insert(first)
                else:
                    lib.write_dataset(first, ds, mode="append")
    assert lancelot.dataset(str(tmp_path / "lancelot")).version == lance.dataset(str(tmp_path / "lance")).version


@pytest.mark.parametrize("target", [5, 8, 9])
def test_compaction_splits_rows_evenly_as_pylance(tmp_path, target):
    """34 live rows compacted with a target of 8 make fragments of 9, 9, 8, 8 (not 9, 9, 9, 7), as pylance's."""
    out = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        lance.write_dataset(make_batch(random.Random(2), BASE, list(range(40))), p)
        ds = lib.dataset(p)
        ds.delete("id % 7 = 2")
        ds.optimize.compact_files(target_rows_per_fragment=target)
        got = lance.dataset(p)
        out.append(([f.count_rows() for f in got.get_fragments()], got.to_table(with_row_id=True).to_pylist()))
    assert out[1] == out[0]


@pytest.mark.parametrize("between", ["append", "update", "rename", "same_nullable"])
def test_alter_columns_through_stale_object(tmp_path, between):
    """alter_columns and drop_columns of an object a concurrent append or update left behind apply on the latest
    version, as pylance's; after a concurrent schema change they raise a retryable conflict, as pylance's."""
    first = make_batch(random.Random(3), BASE, list(range(6)))
    out = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        lib.write_dataset(first, p, max_rows_per_file=4)
        got = []
        for change in ("rename", "nullable", "drop"):
            ds, other = lib.dataset(p), lib.dataset(p)
            name = ds.schema.names[{"rename": 1, "nullable": 2, "drop": -1}[change]]
            if between == "append":
                lib.write_dataset(make_batch(random.Random(4), ds.schema, [50 + ds.version]), p, mode="append")
            elif between == "update":
                other.update({"id": "id + 100"}, where="id = 2")
            elif between == "rename":
                other.alter_columns({"path": other.schema.names[0], "name": f"k{ds.version}"})
            else:  # a Project that changes nothing still conflicts (pylance)
                other.alter_columns({"path": "s", "nullable": True})
            try:
                if change == "drop":
                    ds.drop_columns([name])
                else:
                    ds.alter_columns(
                        {"path": name, "name": f"r{ds.version}"}
                        if change == "rename"
                        else {"path": name, "nullable": True}
                    )
                got.append((ds.version, ds.schema, ds.to_table().to_pylist()))
            except OSError as e:
                got.append(("error", "conflict" in str(e).lower()))
        out.append(got)
    assert out[1] == out[0]


def test_stale_drop_columns_does_not_bring_back_a_dropped_column(tmp_path):
    """A drop_columns through an object older than a drop of another column whose version was cleaned up since:
    lancelot raises a conflict rather than commit the old schema (pylance commits it: the column dropped comes back
    as a non-null column no new fragment holds, and pylance cannot read the dataset)."""
    p = str(tmp_path / "ds")
    lancelot.write_dataset(make_batch(random.Random(5), BASE, list(range(8))), p)
    old = lancelot.dataset(p)
    old.tags.create("keep", 1)
    now = lancelot.dataset(p)
    now.drop_columns(["x"])
    now.delete("id = 3")
    now.cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False)
    with pytest.raises(OSError, match="conflict"):
        old.drop_columns(["s"])
    got = lance.dataset(p)
    assert got.schema.names == ["id", "s", "l", "st"]
    assert got.to_table().num_rows == 7


def _stale_twins(tmp_path: Any, between: Any, rows_per_file: int = 8) -> list[tuple[Any, str, Any]]:
    """(library, path, object at version 1) for pylance and lancelot, after ``between(lib, latest object)`` ran."""
    out = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        lib.write_dataset(make_batch(random.Random(6), BASE, list(range(20))), p, max_rows_per_file=rows_per_file)
        old = lib.dataset(p)
        between(lib, lib.dataset(p))
        out.append((lib, p, old))
    return out


def _cleaned(lib: Any, ds: Any) -> None:
    ds.tags.create("v1", 1)
    ds.delete("id < 3")
    ds.insert(make_batch(random.Random(7), ds.schema, [50, 51]))
    ds.cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False)


STALE_CHANGES = {
    "delete": lambda ds: ds.delete("id = 5 OR id > 15"),
    "update": lambda ds: ds.update({"x": "x + 1"}, where="id % 4 = 1"),
    "merge": lambda ds: (
        ds.merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(make_batch(random.Random(8), ds.schema, [1, 6, 60]))
    ),
}


def _uncleaned(lib: Any, ds: Any) -> None:
    ds.tags.create("v1", 1)
    ds.delete("id < 3")
    ds.insert(make_batch(random.Random(7), ds.schema, [50, 51]))


@pytest.mark.parametrize("change", sorted(STALE_CHANGES))
def test_stale_change_after_cleanup_as_without_cleanup(tmp_path, change):
    """A delete, update or merge_insert through an object at version 1 after the versions up to the latest but one were
    cleaned up: lancelot gives what pylance's stale object gives when nothing was cleaned up (the change matched at
    version 1, the deletions of version 2 merged in).  (pylance's own stale object over the cleaned-up versions cannot
    check them and rebases over what is left: the rows version 2 deleted come back, a bug;
    tests/dataset/test_stale_writer_cleanup.py.)"""
    (_, pt, theirs) = _stale_twins(tmp_path / "uncleaned", _uncleaned)[0]
    (_, po, ours) = _stale_twins(tmp_path / "cleaned", _cleaned)[1]
    got = [STALE_CHANGES[change](ds) for ds in (theirs, ours)]
    assert dict(got[1]) == dict(got[0])
    assert ours.version == theirs.version == lance.dataset(pt).version
    assert (
        lance.dataset(po).to_table().sort_by("id").to_pylist() == lance.dataset(pt).to_table().sort_by("id").to_pylist()
    )
    assert not {0, 2} & set(ours.to_table()["id"].to_pylist())  # (deleted at version 2; the merge inserts 1 again)


def _cast(lib: Any, ds: Any) -> None:
    ds.alter_columns({"path": "x", "data_type": pa.float32()})


def test_stale_update_after_cast_plans_again(tmp_path):
    """An update through an object from before a cast of the column it sets conflicts (the cast rewrote the column) and
    runs again on the latest version, planned there: as pylance's update through a fresh object.  (pylance's own retry
    keeps the expressions planned at the old schema and fails: "Invalid arithmetic operation: Float32 + Float64".)"""
    (_, pt, _), (_, po, old) = _stale_twins(tmp_path, _cast)
    assert old.update({"x": "x + 1"}, where="id < 4") == lance.dataset(pt).update({"x": "x + 1"}, where="id < 4")
    assert lance.dataset(po).to_table().to_pylist() == lance.dataset(pt).to_table().to_pylist()


SCHEMA_CHANGES = {
    "rename": lambda ds: ds.alter_columns({"path": "x", "name": "y"}),
    "drop": lambda ds: ds.drop_columns(["s"]),
    "rename_add": lambda ds: (ds.alter_columns({"path": "x", "name": "y"}), ds.add_columns({"x": "concat(s, 'z')"})),
    "add_non_null": lambda ds: ds.add_columns({"c": "id * 10"}),
    "cast": lambda ds: ds.alter_columns({"path": "x", "data_type": pa.float32()}),
}


@pytest.mark.parametrize("change", sorted(SCHEMA_CHANGES))
def test_stale_insert_maps_columns_by_field_id(tmp_path, change):
    """``ds.insert(data)`` through an object from before a rename, drop or add of columns: the data means the columns
    the object shows, found in the latest schema by field id, as pylance's (a renamed column takes the data under its
    new name, a dropped one loses it, an added one is null).  A non-null column added or cast since refuses the data
    (OSError), as pylance's (a retryable conflict there).  (A nullable column cast since: lancelot checks the data
    against the new type and refuses it, where pylance's fragments keep the old field id and the values read back as
    nulls.)"""
    twins = _stale_twins(tmp_path, lambda lib, ds: SCHEMA_CHANGES[change](ds))
    data = make_batch(random.Random(9), BASE, [70, 71])
    for _, _, old in twins:
        if change in ("cast", "add_non_null"):
            with pytest.raises(OSError):
                old.insert(data)
        else:
            old.insert(data)
    (_, pt, theirs), (_, po, ours) = twins
    assert ours.schema == theirs.schema and ours.version == theirs.version
    assert (
        lance.dataset(po).to_table().sort_by("id").to_pylist() == lance.dataset(pt).to_table().sort_by("id").to_pylist()
    )


def test_stale_merge_insert_retry_refuses_a_dropped_column(tmp_path):
    """A merge_insert through an object from before an update of the rows it matches and a drop of a column its source
    has: the retry on the latest version refuses the source (OSError), as pylance's."""

    def between(lib: Any, ds: Any) -> None:
        ds.update({"x": "x + 100"}, where="id = 3")
        ds.drop_columns(["s"])

    for _, p, old in _stale_twins(tmp_path, between):
        with pytest.raises(OSError, match="(?i)schema|columns"):
            old.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
                make_batch(random.Random(10), BASE, [3, 50])
            )
        assert lance.dataset(p).version == 3


def test_delete_operation_over_a_concurrent_delete_conflicts(tmp_path):
    """``LanceDataset.commit`` of a Delete operation (deletion files, not rows) read at version 1, after a delete of the
    same fragment at version 2: a retryable conflict (OSError), as pylance's; nothing committed."""
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        lib.write_dataset(pa.table({"id": list(range(12))}), p, max_rows_per_file=6)
        frag = lib.dataset(p).get_fragment(0).delete("id = 1")
        lib.dataset(p).delete("id = 2")
        with pytest.raises(OSError, match="(?i)retry|conflict"):
            lib.LanceDataset.commit(p, lib.LanceOperation.Delete([frag], [], "id = 1"), read_version=1)
        assert lib.dataset(p).version == 2


@pytest.mark.parametrize("between", ["delete", "update"])
def test_stale_compaction_carries_deletions(tmp_path, between):
    """``compact_files`` through an object from before a delete or update of fragments it rewrites: pylance's fails
    with a retryable conflict ("Please retry") after committing its fragment reservation.  Lancelot's commits: the rows
    a delete removed since are marked deleted in the new fragments (a version fewer than pylance's retry, which plans
    again); over an update, whose rewritten rows moved to new fragments, it plans again on the latest version, as
    pylance's retry does.  Either way the rows are those of pylance's retry."""
    change = {"delete": lambda ds: ds.delete("id % 5 = 1"), "update": lambda ds: ds.update({"x": "x + 1"}, "id = 3")}
    (_, pt, theirs), (_, po, ours) = _stale_twins(tmp_path, lambda lib, ds: change[between](ds), rows_per_file=5)
    with pytest.raises(OSError, match="Retryable commit conflict"):
        theirs.optimize.compact_files(target_rows_per_fragment=1000)
    theirs.checkout_latest()
    got = [ds.optimize.compact_files(target_rows_per_fragment=1000) for ds in (ours, theirs)]
    assert [(m.fragments_removed, m.fragments_added) for m in got] == [(4 + (between == "update"), 1)] * 2
    assert lance.dataset(po).version == lance.dataset(pt).version - (between == "delete")
    assert [f.count_rows() for f in lance.dataset(po).get_fragments()] == [20 - 4 * (between == "delete")]
    assert lance.dataset(po).to_table().to_pylist() == lance.dataset(pt).to_table().to_pylist()


def test_stale_update_reading_a_cast_column_plans_again(tmp_path):
    """An update whose expression reads a column cast since runs again planned at the new type (lancelot's SQL
    kernels are typed: an expression planned for a double column does not take a float column), as pylance's."""
    (_, pt, theirs), (_, po, ours) = _stale_twins(tmp_path, _cast)
    got = [ds.update({"s": "concat(s, CAST(x AS STRING))"}, where="id < 3") for ds in (ours, theirs)]
    assert got[0] == got[1]
    assert lance.dataset(po).to_table().to_pylist() == lance.dataset(pt).to_table().to_pylist()


def test_stale_update_of_a_column_dropped_since_refuses(tmp_path):
    """An update of ``s`` through an object from before a drop of ``s`` and an update of the same rows (a retryable
    conflict: the update runs again on the latest version, which has no ``s``): an OSError in both libraries, nothing
    committed."""

    def between(lib: Any, ds: Any) -> None:
        ds.drop_columns(["s"])
        ds.update({"x": "x + 1"})

    for lib, p, old in _stale_twins(tmp_path, between):
        with pytest.raises(OSError, match="(?i)schema"):
            old.update({"s": "NULL"}, where="id > 9")
        assert lib.dataset(p).version == 3


@pytest.mark.parametrize("insert", [True, False])
def test_merge_insert_partial_source_without_a_non_null_column(tmp_path, insert):
    """A merge_insert source lacking a non-null column of the dataset: an OSError before anything is written when it
    would insert rows, as pylance's (was a SchemaMismatchError from the file writer, no OSError); an update of the
    matched rows only goes through."""
    got = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        lib.write_dataset(make_batch(random.Random(11), BASE, list(range(6))), p)
        b = lib.dataset(p).merge_insert("id").when_matched_update_all()
        b = b.when_not_matched_insert_all() if insert else b
        src = pa.table({"id": [2, 30], "s": ["a", "b"]})
        if insert:
            with pytest.raises(OSError, match="non-nullable"):
                b.execute(src)
        got.append((None if insert else b.execute(src), lance.dataset(p).to_table().to_pylist()))
    assert got[1] == got[0]


def test_take_rows_of_stable_row_ids_no_row_holds(tmp_path):
    """``_take_rows`` of stable row ids no row holds (never given out, or deleted) leaves them out, as pylance's row id
    index does (lancelot raised a DatasetIndexError); past its fragment, a row address stays an error in both."""
    got = []
    for lib in (lance, lancelot):
        for stable in (True, False):
            p = str(tmp_path / f"{lib.__name__}{stable}")
            data = make_batch(random.Random(12), BASE, list(range(20)))
            lib.write_dataset(data, p, max_rows_per_file=8, enable_stable_row_ids=stable)
            ds = lib.dataset(p)
            ds.delete("id = 3")
            asked = [1020, 5, 3, 2**32 + 1, 7, 2**32 * 5]
            got.append(result_or_error(lambda d=ds, a=asked: d._take_rows(a, columns=["id"]).to_pylist()))
    assert got[:2] == got[2:]
    assert got[0] == [{"id": 5}, {"id": 7}]


@pytest.mark.parametrize("change", ["create", "append", "insert", "update", "merge_insert"])
def test_data_the_file_version_cannot_hold_is_an_oserror(tmp_path, change):
    """Null structs inside a list at 2.0, or a map at 2.1, through any write (an update: rewritten rows written at that
    version): an OSError as pylance's (lancelot raised an UnsupportedTypeError that was no OSError); nothing
    committed."""
    nested = pa.array([[{"a": 1}, None], None], pa.list_(pa.struct([("a", pa.int32())])))
    maps = pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int32()))
    for version, values in [("2.0", nested), ("2.1", maps)]:
        data = pa.table({"id": [1, 2], "c": values})
        if change in ("append", "insert", "merge_insert") and version == "2.1":
            continue  # (a 2.1 dataset cannot have a map column to append to)
        for lib in (lance, lancelot):
            p = str(tmp_path / f"{lib.__name__}{version}")
            if change == "update":
                lib.write_dataset(data, p, data_storage_version="2.2")
            elif change != "create":  # (all-null lists: no null struct)
                lib.write_dataset(data.set_column(1, "c", pa.nulls(2, values.type)), p, data_storage_version=version)
            with pytest.raises(OSError):
                if change in ("create", "append"):
                    lib.write_dataset(data, p, mode=change, data_storage_version=version)
                elif change == "insert":
                    lib.dataset(p).insert(data)
                elif change == "update":
                    lib.dataset(p).update({"id": "id + 1"}, data_storage_version=version)
                else:
                    new = data.set_column(0, "id", pa.array([11, 12]))
                    lib.dataset(p).merge_insert("id").when_not_matched_insert_all().execute(new)
            assert change == "create" or lib.dataset(p).version == 1


@pytest.mark.parametrize(
    "config",
    [
        {"lance.compaction.materialize_deletions_threshold": "0.5"},
        {"lance.compaction.materialize_deletions": "FALSE"},
        {"lance.compaction.target_rows_per_fragment": "5"},
        {"lance.compaction.target_rows_per_fragment": "10", "lance.compaction.materialize_deletions": "true"},
        {"lance.compaction.materialize_deletions": "no"},
        {"lance.compaction.target_rows_per_fragment": "-3"},
        {"lance.compaction.materialize_deletions_threshold": "abc"},
    ],
)
def test_compaction_options_default_to_the_table_config(tmp_path, config):
    """``lance.compaction.<option>`` config keys are the defaults of the options not given, as pylance's (lancelot
    ignored them: other fragments compacted); a value that does not parse is a ValueError in both."""
    got = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        lib.write_dataset(pa.table({"id": list(range(40))}), p, max_rows_per_file=10)
        ds = lib.dataset(p)
        ds.delete("id % 10 < 3")
        ds.update_config(config)
        for more in ({}, {"materialize_deletions": True}):
            given = {"target_rows_per_fragment": 10, **more}
            try:
                ds.optimize.compact_files(**given)
                got.append([f.count_rows() for f in lance.dataset(p).get_fragments()])
            except ValueError:
                got.append("ValueError")
    assert got[2:] == got[:2]


def test_take_of_dictionaries_holding_a_null_from_two_fragments(tmp_path):
    """``take`` and ``_take_rows`` of a dictionary column from two fragments of a 2.0 dataset, whose dictionaries
    differ and hold a null: the rows, as pylance's (pyarrow cannot unify such dictionaries: lancelot raised its
    ArrowInvalid)."""
    kind = pa.dictionary(pa.int32(), pa.string())
    got = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        lib.write_dataset(
            pa.table({"id": [0, 1, 2], "dc": pa.array(["a", None, "a"], kind)}), p, data_storage_version="2.0"
        )
        lib.write_dataset(pa.table({"id": [3, 4, 5], "dc": pa.array(["b", None, "c"], kind)}), p, mode="append")
        ds = lib.dataset(p)
        got.append((ds.take([5, 0, 4, 5]).to_pylist(), ds._take_rows([2**32 + 2, 0, 1]).to_pylist()))
    assert got[1] == got[0]
    assert got[0][0] == [{"id": 5, "dc": "c"}, {"id": 0, "dc": "a"}, {"id": 4, "dc": None}, {"id": 5, "dc": "c"}]


@pytest.mark.parametrize(
    "right",
    [
        pa.table({"id": [3, 1, 40], "j": pa.array([{"a": 1}, None, {"a": 2}], pa.struct([("a", pa.int32())]))}),
        pa.table({"id": [3, 1], "j": pa.array([[1, None], None], pa.list_(pa.int32())), "v": pa.array([b"x", None])}),
        pa.table({"id": [3], "j": pa.array([[1.0, 2.0]], pa.list_(pa.float32(), 2))}),
        pa.table({"id": pa.array([3], pa.int32()), "j": ["x"]}),
    ],
)
def test_merge_joins_columns_of_any_type(tmp_path, right):
    """``merge`` of a table with struct, list, binary or vector columns: joined as pylance's (lancelot's pyarrow join
    refused them: "Data type ... is not supported in join non-key field"); a key of another type than the dataset's is
    an OSError in both."""
    got = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        lib.write_dataset(
            pa.table({"id": list(range(6)), "s": ["a", None, "b", "c", None, "d"]}), p, max_rows_per_file=4
        )
        ds = lib.dataset(p)
        ds.delete("id = 2")
        got.append(result_or_error(lambda d=ds: (d.merge(right, left_on="id"), d.version, d.to_table().to_pylist())))
        got.append(result_or_error(lambda p=p: lance.dataset(p).to_table().to_pylist()))
    assert got[2:] == got[:2]


@pytest.mark.parametrize("wrong", ["rows", "type"])
def test_batch_udf_answer_of_another_shape_is_an_oserror(tmp_path, wrong):
    """``add_columns`` with a batch UDF that answers a row too many, or another type than its output schema: an OSError
    as pylance's (lancelot raised a ValueError only); nothing committed."""
    got = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        lib.write_dataset(pa.table({"id": list(range(6))}), p, max_rows_per_file=4)

        def f(b: pa.RecordBatch) -> pa.RecordBatch:
            n = b.num_rows + (wrong == "rows")
            return pa.record_batch([pa.array([1] * n, pa.float64() if wrong == "rows" else pa.int64())], names=["u"])

        udf = lib.batch_udf(output_schema=pa.schema([("u", pa.float64())]))(f)
        with pytest.raises(OSError):
            lib.dataset(p).add_columns(udf, read_columns=["id"])
        got.append(lance.dataset(p).version)
    assert got == [1, 1]
