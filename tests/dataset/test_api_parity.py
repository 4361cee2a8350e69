"""Call-for-call parity with pylance 14 where lancelot answered differently: exception classes of bad merge_insert
sources and of schema mismatches, Expression filters naming the row-id columns, the chunk layout of ``take``, the
schema of blob columns, ``alter_columns`` forms, ``optimize.optimize_indices``.  pylance runs the same call on a twin
dataset and is the oracle."""

from __future__ import annotations

from decimal import Decimal

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lance.file import LanceFileWriter

import lancelot

LIBS = [lance, lancelot]
IDS = ["pylance", "lancelot"]


def _raised(fn, *args, **kwargs) -> BaseException | None:
    """The exception ``fn(*args, **kwargs)`` raises, or None."""
    try:
        fn(*args, **kwargs)
    except Exception as e:
        return e
    return None


def _same_builtin(a: BaseException | None, b: BaseException | None) -> None:
    """``b`` (lancelot's) is every builtin class ``a`` (pylance's) is."""
    assert a is not None and b is not None, (a, b)
    for cls in (ValueError, OSError, TypeError, IndexError, KeyError, pa.ArrowInvalid):
        if isinstance(a, cls):
            assert isinstance(b, cls), (cls, a, b)


# -- merge_insert: a source whose own schema declares a column non-nullable yet holds nulls -----------------------

_DECLARED = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string(), nullable=False)])


@pytest.mark.parametrize("as_reader", [False, True], ids=["table", "reader"])
@pytest.mark.parametrize("column", ["id", "v"])
def test_merge_insert_source_declared_non_null_with_nulls(tmp_path, as_reader, column) -> None:
    """pylance refuses it before merging, whatever the dataset says: ValueError for a Table, OSError for a reader;
    nothing is committed."""
    declared = pa.schema([pa.field(f.name, f.type, nullable=f.name != column) for f in _DECLARED])
    src = pa.table({"id": [1, None if column == "id" else 7], "v": ["x", None if column == "v" else "y"]}, declared)
    errors = []
    for lib in LIBS:
        ds = lib.write_dataset(pa.table({"id": [1, 2], "v": ["a", "b"]}), str(tmp_path / lib.__name__))
        data = pa.RecordBatchReader.from_batches(src.schema, src.to_batches()) if as_reader else src
        merge = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        errors.append(_raised(merge.execute, data))
        assert lib.dataset(str(tmp_path / lib.__name__)).version == 1
    _same_builtin(*errors)
    assert isinstance(errors[1], ValueError if not as_reader else OSError)
    assert "declared as non-nullable" in str(errors[0]) and "declared as non-nullable" in str(errors[1])


def test_merge_insert_nulls_into_non_nullable_target(tmp_path) -> None:
    """A nullable source column with nulls inserted into a non-nullable dataset column: OSError in both."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    errors = []
    for lib in LIBS:
        ds = lib.write_dataset(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema), str(tmp_path / lib.__name__))
        merge = ds.merge_insert("id").when_not_matched_insert_all()
        errors.append(_raised(merge.execute, pa.table({"id": [1, None], "v": ["x", "y"]})))
    _same_builtin(*errors)


# -- schema mismatches --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["columns", "type"])
def test_file_writer_schema_mismatch_is_value_error(tmp_path, bad) -> None:
    """A batch of other columns or types than the file writer's schema: pylance's ValueError; lancelot's
    SchemaMismatchError is one."""
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
    batch = pa.table({"a": [1], "c": ["q"]}) if bad == "columns" else pa.table({"a": ["1"], "b": ["q"]})
    w1 = LanceFileWriter(str(tmp_path / "p.lance"), schema)
    e1 = _raised(w1.write_batch, batch)
    w2 = lancelot.LanceWriter(str(tmp_path / "l.lance"), schema)
    e2 = _raised(w2.write, batch)
    _same_builtin(e1, e2)
    assert isinstance(e2, lancelot.SchemaMismatchError)


def test_write_dataset_batches_of_other_columns(tmp_path) -> None:
    """An iterable of batches whose later batch has other columns than ``schema``: OSError in both, nothing
    written."""
    b1 = pa.record_batch({"a": [1], "b": ["x"]})
    b2 = pa.record_batch({"a": [2], "c": ["y"]})
    errors = [
        _raised(lib.write_dataset, iter([b1, b2]), str(tmp_path / lib.__name__), schema=b1.schema) for lib in LIBS
    ]
    _same_builtin(*errors)
    assert isinstance(errors[1], lancelot.SchemaMismatchError)
    for lib in LIBS:
        with pytest.raises(ValueError):
            lance.dataset(str(tmp_path / lib.__name__))


# -- Expression filters naming the row-id columns ------------------------------------------------------------------


@pytest.mark.parametrize("column,option", [("_rowid", "with_row_id"), ("_rowaddr", "with_row_address")])
def test_expression_filter_on_row_columns_refused(tmp_path, column, option) -> None:
    """pylance binds a pyarrow Expression to the dataset's schema, which has no row-id columns, even when the scan
    asks for them: pyarrow's ArrowInvalid; SQL text may name them."""
    errors, counts = [], []
    for lib in LIBS:
        ds = lib.write_dataset(pa.table({"id": range(10)}), str(tmp_path / lib.__name__), max_rows_per_file=4)
        errors.append(_raised(ds.to_table, filter=pc.field(column) > 2, **{option: True}))
        counts.append(ds.to_table(filter=f"{column} > 2", **{option: True}).num_rows)
    _same_builtin(*errors)
    assert isinstance(errors[1], pa.ArrowInvalid)
    assert counts[0] == counts[1]


# -- take: one chunk per column, dictionaries joined as arrow-rs joins them -----------------------------------------


def _dictionary_table() -> pa.Table:
    n = 20
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "d": pa.array([i % 3 * 10 for i in range(n)], pa.int64()).dictionary_encode(),
            "s": pa.array([None if i % 4 == 0 else f"v{i % 3}" for i in range(n)]).dictionary_encode(),
        }
    )


@pytest.mark.parametrize("writer", LIBS, ids=IDS)
@pytest.mark.parametrize(
    "indices",
    [[1, 6, 11, 18], list(range(20)), list(range(19, -1, -1)), [0, 4, 8, 12, 16], [18, 1], [2], [3, 3, 8], []],
    ids=["spread", "all", "reversed", "null-keys", "two", "one", "dup", "none"],
)
def test_take_chunks_and_dictionaries(tmp_path, writer, indices) -> None:
    """``take`` and ``_take_rows`` across fragments: one chunk per column, and each dictionary column's dictionary
    the one pylance returns (merged to the used values when the fragments' dictionaries are at least as long as the
    answer, else concatenated)."""
    p = str(tmp_path / "d")
    writer.write_dataset(_dictionary_table(), p, max_rows_per_file=5)
    ours, theirs = lancelot.dataset(p), lance.dataset(p)
    addresses = [(i // 5) << 32 | i % 5 for i in indices]
    pairs = [(theirs.take(indices), ours.take(indices)), (theirs._take_rows(addresses), ours._take_rows(addresses))]
    for a, b in pairs:
        assert b.equals(a)
        assert [c.num_chunks for c in b.columns] == [c.num_chunks for c in a.columns] == [1, 1, 1]
        for name in ("d", "s"):
            assert b.column(name).chunk(0).dictionary.equals(a.column(name).chunk(0).dictionary), name


# -- alter_columns: casts of struct fields -------------------------------------------------------------------------


def _nested_table() -> pa.Table:
    rows = [None if i == 4 else {"a": i, "b": f"x{i}", "t": {"x": float(i), "y": i}} for i in range(9)]
    return pa.table({"id": pa.array(range(9), pa.int64()), "s": pa.array(rows), "f": pa.array(range(9), pa.float32())})


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize(
    "alterations",
    [
        [{"path": "s.a", "data_type": pa.int32()}],
        [{"path": "s.t.x", "data_type": pa.float32()}, {"path": "f", "data_type": pa.float64()}],
        [{"path": "s.a", "data_type": pa.int16(), "name": "aa"}, {"path": "s.b", "data_type": pa.large_string()}],
    ],
    ids=["leaf", "deep-and-top", "two-renamed"],
)
def test_alter_columns_casts_struct_fields(tmp_path, version, alterations) -> None:
    """A cast of a struct's field, as pylance 14 makes it from 2.1: a new field id, and a data file per fragment of
    the cast fields alone under their structs; each library reads the other's result as its writer does."""
    layouts = []
    for lib in LIBS:
        p = str(tmp_path / lib.__name__)
        lib.write_dataset(_nested_table(), p, max_rows_per_file=4, data_storage_version=version)
        lib.dataset(p).alter_columns(*alterations)
        theirs, ours = lance.dataset(p), lancelot.dataset(p)
        assert ours.schema == theirs.schema
        assert ours.to_table().equals(theirs.to_table())
        assert ours.take([1, 4, 8]).equals(theirs.take([1, 4, 8]))
        assert ours.to_table(filter="s.t.y > 5").equals(theirs.to_table(filter="s.t.y > 5"))
        layouts.append(
            (
                [(f.fields, f.column_indices) for fr in theirs.get_fragments() for f in fr.metadata.files],
                str(theirs.lance_schema),
            )
        )
    assert layouts[0] == layouts[1]


def test_alter_columns_struct_field_cast_refused_at_2_0(tmp_path) -> None:
    """At 2.0 (structs have columns of their own) lancelot refuses, where pylance 14 commits a version it cannot read
    back; a bad cast of a struct field is refused by both."""
    t = pa.table({"s": pa.array([{"a": i, "b": "x"} for i in range(4)])})
    ds = lancelot.write_dataset(t, str(tmp_path / "old"), data_storage_version="2.0")
    with pytest.raises(OSError, match="2.1"):
        ds.alter_columns({"path": "s.a", "data_type": pa.int32()})
    assert ds.version == 1
    errors = []
    for lib in LIBS:
        ds = lib.write_dataset(t, str(tmp_path / lib.__name__))
        errors.append(_raised(ds.alter_columns, {"path": "s.b", "data_type": pa.int32()}))
    _same_builtin(*errors)


_CASTS = {
    "t": (pa.array([1, 1500, None], pa.timestamp("us")), [pa.timestamp("ms"), pa.timestamp("ns"), pa.date32()]),
    "d": (pa.array([18000, None, 1], pa.date32()), [pa.date64(), pa.timestamp("s"), pa.int64()]),
    "m": (pa.array([Decimal("1.5"), None, Decimal("2.5")], pa.decimal128(5, 1)), [pa.decimal128(10, 2), pa.float64()]),
    "l": (pa.array([[1], [2, 3], None], pa.list_(pa.int32())), [pa.list_(pa.int64()), pa.list_(pa.string())]),
    "i": (pa.array([1, 2, None], pa.int32()), [pa.float64(), pa.bool_(), pa.int8()]),
}


@pytest.mark.parametrize("column,target", [(c, t) for c, (_, ts) in _CASTS.items() for t in ts], ids=str)
def test_alter_columns_cast_kinds(tmp_path, column, target) -> None:
    """Which casts pylance allows (integers, floats, temporal types, decimals among themselves; lists by their
    items) and their values (a finer time unit truncated): the same in lancelot; refusals are OSErrors in both."""
    t = pa.table({c: a for c, (a, _) in _CASTS.items()})
    got = []
    for lib in LIBS:
        ds = lib.write_dataset(t, str(tmp_path / lib.__name__))
        e = _raised(ds.alter_columns, {"path": column, "data_type": target})
        got.append(e if e is not None else lance.dataset(str(tmp_path / lib.__name__)).to_table())
    if isinstance(got[0], BaseException):
        _same_builtin(*got)
    else:
        assert isinstance(got[1], pa.Table) and got[1].equals(got[0])


# -- optimize.optimize_indices -------------------------------------------------------------------------------------


def _segments(uri: str) -> list:
    return sorted((i.name, [sorted(s.fragment_ids) for s in i.segments]) for i in lance.dataset(uri).describe_indices())


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"num_indices_to_merge": 0}, {"index_names": ["c_idx"]}, {"retrain": True}],
    ids=["default", "delta", "named", "retrain"],
)
def test_optimize_indices(tmp_path, kwargs) -> None:
    """Appended fragments join the BTREE and BITMAP indices' newest segment (or a new one), deleted fragments leave
    them, nothing new commits nothing: the same versions and segments as pylance's, and pylance's indexed queries
    answer the same on both."""
    got = []
    for lib in LIBS:
        p = str(tmp_path / lib.__name__)
        ds = lib.write_dataset(pa.table({"id": range(100), "c": [i % 5 for i in range(100)]}), p, max_rows_per_file=50)
        ds.create_scalar_index("id", "BTREE")
        ds.create_scalar_index("c", "BITMAP")
        steps = []
        for r in range(2):
            lib.write_dataset(pa.table({"id": range(100 + r * 10, 110 + r * 10), "c": [r] * 10}), p, mode="append")
            ds = lib.dataset(p)
            ds.optimize.optimize_indices(**kwargs)
            steps.append((lib.dataset(p).version, _segments(p)))
        ds.delete("id < 50")
        ds.optimize.optimize_indices(**kwargs)
        ds.optimize.optimize_indices(**kwargs)  # (nothing new)
        t = lance.dataset(p)
        steps.append((t.version, _segments(p)))
        steps.append([t.to_table(filter=f).num_rows for f in ("id >= 105 and id < 115", "c = 1", "id = 45")])
        got.append(steps)
    assert got[0] == got[1]


def test_optimize_indices_bad_arguments(tmp_path) -> None:
    """A negative ``num_indices_to_merge`` is an OverflowError and a str ``index_names`` a TypeError-worded
    ValueError in pylance; unknown keywords are ignored by both."""
    errors = []
    for lib in LIBS:
        ds = lib.write_dataset(pa.table({"id": range(10)}), str(tmp_path / lib.__name__))
        ds.optimize.optimize_indices(bogus=1)
        errors.append(_raised(ds.optimize.optimize_indices, num_indices_to_merge=-1))
        errors.append(_raised(ds.optimize.optimize_indices, index_names="id_idx"))
    _same_builtin(errors[0], errors[2])
    _same_builtin(errors[1], errors[3])
    assert isinstance(errors[2], OverflowError) and isinstance(errors[3], ValueError)


# -- stats.index_stats ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lib", LIBS, ids=IDS)
def test_index_stats(tmp_path, lib) -> None:
    """``stats.index_stats``: ranges (ints, floats, strings, booleans, all nulls), pages, bitmaps, covered and missed
    fragments and live rows of every segment, the same from either library on a dataset either built."""
    n = 4500  # (two BTREE pages of 4096 rows)
    t = pa.table(
        {
            "i": range(n),
            "s": [f"k{i % 7}" for i in range(n)],
            "f": [i / 4 for i in range(n)],
            "b": [i % 2 == 0 for i in range(n)],
            "z": pa.array([None] * n, pa.int64()),
        }
    )
    p = str(tmp_path / "d")
    ds = lib.write_dataset(t, p, max_rows_per_file=2000)
    for c in "isfbz":
        ds.create_scalar_index(c, "BTREE")
    ds.create_scalar_index("s", "BITMAP", name="sb")
    ds.delete("i < 10")
    lib.write_dataset(
        pa.table({"i": [1], "s": ["q"], "f": [0.5], "b": [True], "z": pa.array([None], pa.int64())}), p, mode="append"
    )
    lib.dataset(p).optimize.optimize_indices(index_names=["i_idx"], num_indices_to_merge=0)
    for name in ("i_idx", "s_idx", "f_idx", "b_idx", "z_idx", "sb"):
        a, b = lance.dataset(p).stats.index_stats(name), lancelot.dataset(p).stats.index_stats(name)
        assert b == a, name
    errors = [_raised(m.dataset(p).stats.index_stats, "nope") for m in LIBS]
    _same_builtin(*errors)
    assert isinstance(errors[1], KeyError)


# -- small accessors -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lib", LIBS, ids=IDS)
def test_base_paths_and_unpartitioned(tmp_path, lib) -> None:
    """``base_paths()`` (a shallow clone's source), ``storage_options_accessor`` (None) and the
    ``partition_expression`` of datasets and fragments (NotImplementedError), as pylance's, on either writer's."""
    src = lib.write_dataset(pa.table({"a": range(10)}), str(tmp_path / "src"))
    src.shallow_clone(str(tmp_path / "clone"), 1)
    for uri in (str(tmp_path / "src"), str(tmp_path / "clone")):
        theirs, ours = lance.dataset(uri), lancelot.dataset(uri)
        want = {k: (v.id, v.name, str(v.path), v.is_dataset_root) for k, v in theirs.base_paths().items()}
        assert {k: (v.id, v.name, v.path, v.is_dataset_root) for k, v in ours.base_paths().items()} == want
        assert ours.storage_options_accessor is theirs.storage_options_accessor is None
        for obj in (ours, ours.get_fragment(0)):
            with pytest.raises(NotImplementedError):
                _ = obj.partition_expression
    assert len(lancelot.dataset(str(tmp_path / "clone")).base_paths()) == 1


def _list_table() -> pa.Table:
    rows = [[{"k": 1, "v": "a"}], [], None, [{"k": 2, "v": "b"}, None], [{"k": 3, "v": None}], [{"k": 4, "v": "d"}]]
    return pa.table(
        {
            "a": range(6),
            "l": pa.array([[1], [2, 3], None, [], [4], [5, 6]], pa.list_(pa.int32())),
            "ls": pa.array(rows),
            "L": pa.array([[1], [2], None, [3], [4], []], pa.large_list(pa.int64())),
        }
    )


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize(
    "alterations",
    [
        [{"path": "l.item", "data_type": pa.int64()}],
        [{"path": "ls.item.k", "data_type": pa.int32()}],
        [{"path": "L.item", "data_type": pa.int16()}, {"path": "l.item", "data_type": pa.int8()}],
    ],
    ids=["item", "struct-in-list", "two-numbered-in-call-order"],
)
def test_alter_columns_casts_list_items(tmp_path, version, alterations) -> None:
    """Casts of list items (and of struct fields inside list items), as pylance 14 makes them: the new ids numbered
    in the order of the alterations, the same data files, read back equal by both libraries."""
    layouts = []
    for lib in LIBS:
        p = str(tmp_path / lib.__name__)
        lib.write_dataset(_list_table(), p, max_rows_per_file=4, data_storage_version=version)
        lib.dataset(p).alter_columns(*alterations)
        theirs, ours = lance.dataset(p), lancelot.dataset(p)
        assert ours.schema == theirs.schema
        assert ours.to_table().equals(theirs.to_table())
        assert ours.take([1, 3, 5]).equals(theirs.take([1, 3, 5]))
        files = [f.fields for fr in theirs.get_fragments() for f in fr.metadata.files]
        layouts.append((files, str(theirs.lance_schema)))
    assert layouts[0] == layouts[1]


@pytest.mark.parametrize(
    "alterations",
    [
        [{"path": "a", "name": None}],
        [{"path": "a", "nullable": 1}],
        [{"path": "a", "data_type": "int64"}],
        [{"path": "a", "nullable": False, "data_type": pa.int32()}],
        [{"path": "a", "nullable": False}, {"path": "l", "data_type": pa.list_(pa.int64())}],
        [{"path": "a"}],
        [{"path": "a", "bogus": 1}],
        [{"path": "zz", "name": "y"}],
        [{"path": "a", "name": "l"}],
    ],
    ids=[
        "name-none",
        "nullable-int",
        "type-str",
        "nonnull-and-cast",
        "nonnull-and-other-cast",
        "nothing",
        "bogus",
        "unknown",
        "duplicate",
    ],
)
def test_alter_columns_refusals(tmp_path, alterations) -> None:
    """Alterations pylance refuses: the same builtin error class from lancelot, nothing committed."""
    errors = []
    for lib in LIBS:
        ds = lib.write_dataset(_list_table(), str(tmp_path / lib.__name__))
        errors.append(_raised(ds.alter_columns, *alterations))
        assert lance.dataset(str(tmp_path / lib.__name__)).version == 1
    _same_builtin(*errors)


def test_optimizer_and_stats_signatures() -> None:
    """``ds.optimize`` and ``ds.stats`` have every method pylance's have, with the same parameters and defaults."""
    import inspect
    import sys

    from lancelot.dataset.compact import Optimizer
    from lancelot.dataset.stats import LanceStats

    theirs = sys.modules["lance.dataset"]

    def params(fn) -> list:
        return [(p.name, p.kind.name, p.default) for p in inspect.signature(fn).parameters.values()]

    for a, b in ((theirs.DatasetOptimizer, Optimizer), (theirs.LanceStats, LanceStats)):
        names = [n for n in dir(a) if not n.startswith("_")]
        assert names and all(hasattr(b, n) for n in names), (a, names)
        for n in names:
            assert params(getattr(b, n)) == params(getattr(a, n)), n
