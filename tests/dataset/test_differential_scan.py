"""Differential tests of the scanner's options and of ``take`` against pylance: hypothesis draws a scan (columns,
nested paths and row-id columns, a filter, limit and offset, ``with_row_id``/``with_row_address``, a subset of the
fragments in any order, batch size) or a take (indices in any order, repeated; nested paths) over datasets pylance
wrote and then changed (deletions, updates, appends, compaction; with and without stable row ids); lancelot must
return the same table (schema, rows, row order) or raise what pylance raises.  Derandomized, so CI is deterministic;
the cases it found wrong are the regressions at the end."""

from __future__ import annotations

import warnings
from typing import Any

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lance.dataset import ColumnOrdering as TheirOrdering

import lancelot
from lancelot.dataset import ColumnOrdering as OurOrdering
from tests.helpers import assert_same_error

ROWS = 24


def _table(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "s": pa.array([None if i % 5 == 0 else ["a", "it's", "é", "A_b", "b"][i % 4] for i in ids]),
            "x": pa.array([[None, 1.5, -0.0, 0.0, float("nan"), 3.0, -2.0][i % 7] for i in ids], pa.float64()),
            "st": pa.array(
                [None if i % 9 == 4 else {"p": [None, i % 4, i % 4][i % 3], "q": ["u", None, "v"][i % 3]} for i in ids],
                pa.struct([("p", pa.int32()), ("q", pa.string())]),
            ),
            "l": pa.array([None if i % 8 == 3 else [i % 5] * (i % 3) for i in ids], pa.list_(pa.int32())),
        }
    )


def _build(path: str, stable: bool, recipe: str) -> None:
    """A dataset pylance wrote and changed: fragments of 5 rows, then the recipe's changes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = lance.write_dataset(
            _table(0, ROWS), path, max_rows_per_file=5, data_storage_version="2.1", enable_stable_row_ids=stable
        )
    for step in recipe.split(","):
        if step == "delete":
            ds.delete("id % 3 = 1 OR id = 10")
        elif step == "update":
            ds.update({"id": "id + 100"}, where="id % 4 = 2")
        elif step == "append":
            ds = lance.write_dataset(_table(200, 7), path, mode="append", max_rows_per_file=4)
        elif step == "compact":
            ds.optimize.compact_files(target_rows_per_fragment=8)


#: (stable row ids, the changes) of each dataset the tests read
DATASETS = {
    "deleted": (False, "delete"),
    "stable_updated": (True, "delete,update,append"),
    "compacted": (False, "delete,append,compact,update"),
    "stable_compacted": (True, "update,delete,compact,append,delete"),
}


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, Any]]:
    out = {}
    for name, (stable, recipe) in DATASETS.items():
        p = str(tmp_path_factory.mktemp("scan") / name)
        _build(p, stable, recipe)
        out[name] = (lance.dataset(p), lancelot.dataset(p))
    return out


NAMES = ["id", "s", "x", "st", "l", "st.p", "st.q", "_rowid", "_rowaddr", "_rowoffset"]
FILTERS = [
    "id > 5",
    "x > 0",
    "x = 'NaN'",
    "s = 'it''s'",
    "s LIKE 'A\\_%'",
    "st.p = 2",
    "st.q IS NULL",
    "st IS NULL",
    "NOT (x > 0)",
    "id IN (1, 2, NULL)",
    "id NOT IN (1, NULL)",
    "array_has(l, 2)",
    "s IS NOT NULL AND x < 2",
    "_rowid > 3",
    "_rowaddr >= 4294967296",
    "_rowid % 2 = 0 OR id < 3",
    "_rowoffset > 3",  # (pylance refuses it in a filter, as lancelot now does)
]


def outcome(fn: Any) -> tuple[str, Any]:
    """("ok", the table's schema and rows) or ("error", the exception)."""
    try:
        t = fn()
    except Exception as e:  # noqa: BLE001 - compared
        return "error", e
    return "ok", (t.schema, repr(t.to_pylist()))  # (repr: NaN equals NaN, -0.0 is not 0.0)


def _same(theirs: tuple[str, Any], ours: tuple[str, Any], what: Any) -> None:
    assert ours[0] == theirs[0], (what, theirs, ours)
    if ours[0] == "error":  # lancelot's: a LanceError of the builtin class pylance raised
        assert_same_error(theirs[1], ours[1], (what, theirs, ours))
    else:
        assert ours[1][0] == theirs[1][0], (what, theirs[1][0], ours[1][0])
        assert ours[1][1] == theirs[1][1], what


@st.composite
def scans(draw: st.DrawFn) -> dict[str, Any]:
    o: dict[str, Any] = {}
    if draw(st.booleans()):
        o["columns"] = draw(st.lists(st.sampled_from(NAMES), max_size=4, unique=draw(st.integers(0, 9)) > 0))
    if draw(st.booleans()):
        o["filter"] = draw(st.sampled_from(FILTERS))
    for key, top in (("limit", 12), ("offset", 12)):
        if draw(st.booleans()):
            o[key] = draw(st.integers(0, top))
    for key in ("with_row_id", "with_row_address"):
        if draw(st.integers(0, 3)) == 0:
            o[key] = True
    if draw(st.integers(0, 3)) == 0:
        o["fragments"] = draw(st.permutations(range(12)))[: draw(st.integers(0, 4))]  # positions, mapped below
    if draw(st.integers(0, 3)) == 0:
        o["batch_size"] = draw(st.integers(1, 6))
    return o


def _scanner(ds: Any, o: dict[str, Any]) -> Any:
    o = dict(o)
    if "fragments" in o:
        frags = ds.get_fragments()
        o["fragments"] = [frags[i] for i in o["fragments"] if i < len(frags)]
    return ds.scanner(**o)


def _scan(ds: Any, o: dict[str, Any]) -> pa.Table:
    return _scanner(ds, o).to_table()


def _batches(ds: Any, o: dict[str, Any]) -> list[pa.RecordBatch]:
    return list(_scanner(ds, o).to_batches())


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(name=st.sampled_from(sorted(DATASETS)), o=scans())
def test_scan_options_as_pylance(twins: dict[str, tuple[Any, Any]], name: str, o: dict[str, Any]) -> None:
    theirs, ours = twins[name]
    _same(outcome(lambda: _scan(theirs, o)), outcome(lambda: _scan(ours, o)), (name, o))
    if "batch_size" in o:  # the batches' lengths too (pylance's cut: late materialisation coalesces them)
        t, u = (outcome(lambda ds=ds: pa.table({"n": [b.num_rows for b in _batches(ds, o)]})) for ds in (theirs, ours))
        _same(t, u, (name, "batches", o))
    if "filter" in o:
        t, u = (outcome(lambda ds=ds: pa.table({"n": [ds.count_rows(filter=o["filter"])]})) for ds in (theirs, ours))
        _same(t, u, (name, "count_rows", o["filter"]))


TAKE_NAMES = ["id", "s", "x", "st", "l", "st.p", "st.q", "_rowid", "_rowaddr"]


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(
    name=st.sampled_from(sorted(DATASETS)),
    picks=st.lists(st.integers(0, 1000), max_size=6),
    columns=st.one_of(st.none(), st.lists(st.sampled_from(TAKE_NAMES), min_size=1, max_size=5)),
)
def test_take_as_pylance(
    twins: dict[str, tuple[Any, Any]], name: str, picks: list[int], columns: list[str] | None
) -> None:
    """Indices in range (pylance drops some out-of-range ones silently, lancelot raises: not compared here), any
    order, repeated; columns with nested paths, repeats and row-id columns (pylance merges paths into structs)."""
    theirs, ours = twins[name]
    n = theirs.count_rows()
    idx = [p % n for p in picks]
    _same(outcome(lambda: theirs.take(idx, columns=columns)), outcome(lambda: ours.take(idx, columns=columns)), idx)
    ids = theirs.to_table(columns=[], with_row_id=True).column("_rowid").to_pylist()
    rows = [ids[i] for i in sorted(set(idx))]  # (pylance's _take_rows wants them ascending where ids are addresses)
    t, u = (outcome(lambda ds=ds: ds._take_rows(rows, columns=columns)) for ds in (theirs, ours))
    _same(t, u, ("_take_rows", rows, columns))


# -- regressions the tests above found ---------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"filter": "id > 5", "offset": 2},
        {"filter": "id NOT IN (1, NULL)", "limit": 3},
        {"filter": "x > 0", "limit": 2, "offset": 1},
        {"limit": 3, "offset": 30},
        {"filter": "_rowid > 3", "offset": 4},
    ],
    ids=["offset", "limit-no-row-passes", "both", "offset-past-end", "rowid-filter"],
)
def test_no_columns_counts_rows_after_filter_limit_offset(twins, options):
    """``columns=[]`` with a filter and a limit or offset: the rows that pass, windowed (pyarrow's slice of a table
    without columns keeps rows past its end: lancelot returned every row the limit allowed, or ignored the offset)."""
    theirs, ours = twins["deleted"]
    want = theirs.scanner(columns=[], **options).to_table().num_rows
    assert ours.scanner(columns=[], **options).to_table().num_rows == want
    assert ours.scanner(columns=[], order_by=["id"], **options).to_table().num_rows == want


@pytest.mark.parametrize(
    "options",
    [
        {"columns": ["st"], "filter": "st.p = 2"},  # q (text) is not in the filter: read after it
        {"columns": ["st.q", "id"], "filter": "x > 0"},
        {"columns": ["st.p", "st.q"], "filter": "st IS NULL"},  # (the struct's validity names no child)
        {"columns": ["st.p"], "filter": "x > 0"},  # an int32 leaf: read with the filter
    ],
    ids=["struct", "text-leaf", "struct-validity", "int-leaf"],
)
def test_batches_of_struct_leaves_as_pylance(twins, options):
    """pylance reads a projected leaf field the filter does not name after the filter when it has no fixed width
    (late materialisation), which coalesces the filtered batches: a struct's text child counts (was: structs never)."""
    theirs, ours = twins["deleted"]
    o = {**options, "batch_size": 2}
    assert [b.num_rows for b in _batches(ours, o)] == [b.num_rows for b in _batches(theirs, o)]


@pytest.mark.parametrize("columns", [["id", "id"], ["st.p", "x", "st.p"], ["_rowid", "_rowid"]], ids=str)
def test_scan_refuses_a_column_twice(twins, columns):
    """pylance 14 refuses a projection naming a column twice ("Duplicate column name")."""
    theirs, ours = twins["deleted"]
    with pytest.raises(ValueError, match="Duplicate column name"):
        theirs.scanner(columns=columns)
    with pytest.raises(ValueError, match="Duplicate column name"):
        ours.scanner(columns=columns).to_table()


@pytest.mark.parametrize(
    "options",
    [
        {"columns": ["_rowaddr", "id"], "with_row_id": True, "with_row_address": True},
        {"columns": ["_rowaddr", "id", "_rowid"], "with_row_address": True},
        {"columns": ["_rowid", "id", "_rowaddr"], "with_row_id": True},
        {"columns": {"_rowaddr": "_rowaddr", "b": "id"}, "with_row_address": True},
    ],
    ids=["both", "addr", "id", "dict"],
)
def test_row_id_flags_move_their_column_last(twins, options):
    """A row-id column both listed and asked by its flag comes last (``_rowid`` before ``_rowaddr``), as pylance's."""
    theirs, ours = twins["stable_compacted"]
    _same(outcome(lambda: _scan(theirs, options)), outcome(lambda: _scan(ours, options)), options)


@pytest.mark.parametrize(
    "columns",
    [["st.p", "id"], ["id", "st.q", "x", "st.p"], ["st.p", "st"], ["id", "id"], ["_rowaddr", "st.p", "_rowaddr"]],
    ids=str,
)
def test_take_merges_paths_as_pylance(twins, columns):
    """``take``'s columns are pylance's schema projection: nested paths merged into their struct (children in the
    schema's order), a column named twice once; row-id columns as often as named (a scan keeps ``st.p`` flat)."""
    theirs, ours = twins["compacted"]
    idx = [3, 0, 3, 7]
    _same(outcome(lambda: theirs.take(idx, columns=columns)), outcome(lambda: ours.take(idx, columns=columns)), idx)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(
    name=st.sampled_from(sorted(DATASETS)),
    keys=st.lists(st.tuples(st.sampled_from(["x", "s", "id"]), st.booleans(), st.booleans()), min_size=1, max_size=2),
    filter=st.one_of(st.none(), st.sampled_from(["id > 5", "x > 0", "st.q IS NULL", "NOT (x > 0)", "s < 'b'"])),
    limit=st.one_of(st.none(), st.integers(1, 10)),  # (limit=0 with order_by: pylance 14 panics, "k > 0")
    offset=st.one_of(st.none(), st.integers(0, 5)),
)
def test_order_by_as_pylance(twins, name, keys, filter, limit, offset):
    """``order_by`` in DataFusion's order: floats in IEEE total order (-0.0 before 0.0, NaN above infinity, apart from
    the nulls).  pylance's sort is not stable, so only the sort keys' values are compared, in order."""
    theirs, ours = twins[name]
    names = list(dict.fromkeys(k for k, _, _ in keys))
    outs = []
    for ds, ordering in ((theirs, TheirOrdering), (ours, OurOrdering)):
        order = [ordering(k, asc, nulls_first) for k, asc, nulls_first in keys]
        t = ds.scanner(columns=names, order_by=order, filter=filter, limit=limit, offset=offset).to_table()
        outs.append(repr(t.to_pylist()))  # (repr: -0.0 is not 0.0, NaN is NaN)
    assert outs[1] == outs[0], (keys, filter, limit, offset)


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_batches_of_a_dictionary_column_as_pylance(tmp_path, version):
    """A dictionary column of text is read after the filter as text is (its values have no fixed width; was: its
    4-byte indices counted, so the batches were not coalesced as pylance's); batches joined across 2.0 fragments,
    one dictionary each holding a null, are encoded anew (was: pyarrow's "cannot unify dictionaries with nulls")."""
    p = str(tmp_path / "ds")
    t = pa.table({"id": range(23), "dc": pa.array(["a", "b", None] * 7 + ["a", "b"]).dictionary_encode()})
    t = t.append_column("b", pa.array([i % 3 == 0 for i in range(23)]))
    lance.write_dataset(t, p, max_rows_per_file=7, data_storage_version=version)
    lance.dataset(p).delete("id % 5 = 3")
    for f in ["b", "id > 4", "dc IS NULL"]:
        o = {"columns": ["dc"], "filter": f, "batch_size": 2}
        theirs, ours = (_batches(lib.dataset(p), o) for lib in (lance, lancelot))
        assert [b.num_rows for b in ours] == [b.num_rows for b in theirs], f
        assert [r for b in ours for r in b.to_pylist()] == [r for b in theirs for r in b.to_pylist()]
    o = {"columns": ["dc", "id"], "batch_size": 4, "strict_batch_size": True}  # (batches across fragments)
    theirs, ours = (_batches(lib.dataset(p), o) for lib in (lance, lancelot))
    assert [b.to_pylist() for b in ours] == [b.to_pylist() for b in theirs]


@pytest.mark.parametrize("predicate", ["_rowid > 5", "_rowaddr < 4294967296", "_rowid % 3 = 0 AND id > 4"])
def test_delete_by_row_id_columns_as_pylance(tmp_path, predicate):
    out = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        _build(p, True, "delete,update,append")
        lib.dataset(p).delete(predicate)
        out.append(lance.dataset(p).to_table(columns=["id"], with_row_id=True).to_pylist())
    assert out[1] == out[0]


def test_update_where_row_id_as_pylance(tmp_path):
    out = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        _build(p, False, "delete")
        lib.dataset(p).update({"x": "1.0"}, where="_rowid > 20")
        out.append(lance.dataset(p).to_table(columns=["id", "x"]).to_pylist())
    assert out[1] == out[0]
