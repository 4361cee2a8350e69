"""Scans (``ds.scanner``, ``to_table``, ``to_batches``, ``count_rows``, ``take``, ``_take_rows``,
``sample``, ``head``), ported from the reference's test_dataset.py (test_take*, test_filter*,
test_limit_offset, test_nested_projection, test_count_rows*, test_scan_with_batch_size,
test_scan_no_columns, test_with_row_offset, test_system_columns, test_scanner_schemas,
test_scan_deleted_rows, test_dynamic_projection, test_load_scanner_from_fragments,
test_to_batches, test_sample, test_roundtrip_reader), each compared with pylance 14.0.2 on
datasets written by lancelot and by pylance."""

import random

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from tests.dataset.helpers import LIBS

TABLE = pa.table(
    {
        "a": pa.array(range(100), pa.int64()),
        "b": pa.array(range(100), pa.int64()),
        "s": pa.array([{"x": i, "y": i % 2 == 0} for i in range(100)]),
        "t": [f"v{i}" for i in range(100)],
    }
)


@pytest.fixture(scope="module", params=["lancelot", "pylance"])
def pair(request, tmp_path_factory):
    """(lancelot dataset, pylance dataset) of TABLE in 10-row fragments with rows deleted, written by
    either library; the deletions by pylance (lancelot's delete is tested with its own module)."""
    uri = str(tmp_path_factory.mktemp(f"scan_{request.param}") / "ds")
    LIBS[request.param].write_dataset(TABLE, uri, max_rows_per_file=10)
    lance.dataset(uri).delete("a % 7 = 3 OR (a >= 20 AND a < 30)")
    return lancelot.dataset(uri), lance.dataset(uri)


SCANS = [
    {},
    {"columns": ["b", "a"]},
    {"columns": ["s.x"]},
    {"columns": ["s.y", "a", "s.x"]},
    {"columns": ["a"], "with_row_id": True},
    {"columns": ["a"], "with_row_address": True, "with_row_id": True},
    {"columns": ["a", "_rowid", "_rowaddr", "_rowoffset"]},
    {"columns": [], "with_row_id": True},
    {"columns": ["a"], "filter": "b > 50"},
    {"columns": ["a"], "filter": pc.field("b") > 50},
    {"filter": "s.x < 15 OR t = 'v77'"},
    {"limit": 10},
    {"offset": 10},
    {"offset": 10, "limit": 10},
    {"offset": 5, "limit": 20},
    {"offset": 5, "limit": 3},
    {"offset": 50, "limit": 25},
    {"limit": 101},
    {"offset": 50, "limit": 51},
    {"offset": 100},
    {"offset": 101, "limit": 1},
    {"limit": 0},
    {"filter": "a > 30", "offset": 4, "limit": 7, "columns": ["a", "_rowid"]},
    {"columns": {"a2": "a * 2", "bup": "upper(t)", "a": "a + 1"}},
    {"columns": {"x": "s.x", "r": "_rowid"}, "filter": "a < 20"},
    {"columns": {"bool": "a > 5"}},
    {"columns": {"a": "a", "one": "1", "x": "'x'", "n": "NULL", "z": "a IS NULL"}},  # literals: not null
    {"columns": {"one": "1 + 1"}, "with_row_id": True},  # only constants: rows thanks to the row id
    {"columns": ["a"], "filter": "1 < 2"},  # filters of constants only, over many fragments
    {"filter": "'a' LIKE 'b%'"},
    {"columns": ["a"], "with_row_id": True, "include_deleted_rows": True, "filter": "a > 15"},
    {"filter": "_rowaddr >= 4294967296 AND _rowaddr < 4294967300", "with_row_address": True},
]


@pytest.mark.parametrize("scan", SCANS, ids=[str(s) for s in SCANS])
def test_to_table_matches_pylance(pair, scan):
    ours, theirs = pair
    assert ours.to_table(**scan).equals(theirs.to_table(**scan))
    assert ours.scanner(**scan).projected_schema.equals(theirs.scanner(**scan).projected_schema)


@pytest.mark.parametrize("batch_size", [3, 7, 10, 64])
def test_to_batches_sizes_match_pylance(pair, batch_size):
    """Reference test_scan_with_batch_size: batches never exceed batch_size, nor cross fragments."""
    ours, theirs = pair
    mine = list(ours.to_batches(batch_size=batch_size, columns=["a"]))
    want = list(theirs.to_batches(batch_size=batch_size, columns=["a"]))
    assert [b.num_rows for b in mine] == [b.num_rows for b in want]
    assert pa.Table.from_batches(mine).equals(pa.Table.from_batches(want))
    reader = ours.scanner(batch_size=batch_size, filter="a > 40").to_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.read_all().equals(theirs.to_table(filter="a > 40"))


def test_count_rows(pair):
    """Reference test_count_rows, test_count_rows_via_scanner (pylance 14.0.2 counts scans that
    select columns: the reference's "should not be called on a plan selecting columns" errors are gone)."""
    ours, theirs = pair
    assert ours.count_rows() == theirs.count_rows()
    assert ours.count_rows("a < 50") == theirs.count_rows(filter="a < 50")
    assert ours.count_rows(filter=pc.field("a") < 50) == theirs.count_rows(filter="a < 50")
    for kw in [{"filter": "a < 50", "columns": [], "with_row_id": True}, {"columns": ["a"]}, {}, {"filter": "TRUE"}]:
        assert ours.scanner(**kw).count_rows() == theirs.scanner(**kw).count_rows()
    for ds in pair:  # a bad filter: pylance's dataset count_rows raises OSError (its scanner's ValueError)
        with pytest.raises(OSError):
            ds.count_rows("nope > 1")
        with pytest.raises(ValueError):
            ds.scanner(filter="nope > 1").count_rows()
    with pytest.raises(ValueError):
        theirs.scanner(limit=2).count_rows()
    with pytest.raises(ValueError):
        ours.scanner(limit=2).count_rows()


def test_limit_offset_errors(pair):
    ours, theirs = pair
    for kw in [{"offset": -1, "limit": 10}, {"offset": 10, "limit": -1}]:
        with pytest.raises(ValueError):
            theirs.to_table(**kw)
        with pytest.raises(ValueError, match="non-negative"):
            ours.to_table(**kw)


def test_limit_reads_only_the_fragments_it_needs(pair, monkeypatch):
    """A limit (or an offset) without a filter never opens fragments outside its rows."""
    ours, _ = pair
    ds = lancelot.dataset(ours.uri)
    opened = []
    for f in ds.get_fragments():
        orig = f.file_columns

        def spy(orig=orig, fid=f.fragment_id):
            opened.append(fid)
            return orig()

        monkeypatch.setattr(f, "file_columns", spy)
    assert ds.to_table(offset=12, limit=5).column("a").to_pylist() == ours.to_table(offset=12, limit=5)["a"].to_pylist()
    assert set(opened) <= {f.fragment_id for f in ds.get_fragments()[1:3]}


def test_take(pair):
    """Reference test_take, test_take_with_columns, test_take_duplicate_index, test_take_rowid_rowaddr."""
    ours, theirs = pair
    n = theirs.count_rows()
    for idx in [[0, 1], [], [1, 1], [1, 1, 20, 20, 21], [21, 0, 21, 1, 0], random.sample(range(n), 10)]:
        assert ours.take(idx).equals(theirs.take(idx))
    idx = [1, 2, 3, 4, 5, 6, 7, 8, 9, n - 1]
    for cols in [["_rowid"], ["_rowid", "_rowid"], ["_rowaddr"], ["_rowaddr", "_rowid"], ["a", "_rowid", "_rowaddr"]]:
        got = ours.take(idx, columns=cols)
        assert got.equals(theirs.take(idx, columns=cols)), cols
    assert ours.take([0], columns=["b"]).equals(theirs.take([0], columns=["b"]))
    proj = {"a2": "a*2", "bup": "UPPER(t)"}
    assert ours.take([0, 5], columns=proj).equals(theirs.take([0, 5], columns=proj))
    with pytest.raises(OSError):
        theirs.take([n])
    with pytest.raises(IndexError):  # lancelot: IndexError and pylance's OSError
        ours.take([n])
    with pytest.raises(OSError):
        ours.take([n])


@pytest.mark.parametrize(
    "idx",
    [
        [19, 19, 5, 20, 0, 19],  # duplicates, unsorted, across fragments (fragment 2 is all deleted)
        [60, 3, 60, 3, 55],  # rows after deleted ones, each asked twice
        [41, 40, 39, 38, 37, 36],  # descending inside one fragment
    ],
)
def test_take_orders_duplicates_and_deleted_rows(pair, idx):
    """One mapping serves every take: the answer is in the order asked, duplicates repeated, indices
    counting live rows only (the deleted ones are stepped over), with or without row-id columns."""
    ours, theirs = pair
    for cols in (None, ["t", "_rowaddr"], {"a2": "a * 2"}):
        assert ours.take(idx, columns=cols).equals(theirs.take(idx, columns=cols)), cols
    assert ours.take(pa.array(idx, pa.uint32()), columns=["a"]).equals(theirs.take(idx, columns=["a"]))
    assert ours.take(idx, columns=[]).num_rows == len(idx)  # no column: still one row per index


@pytest.mark.parametrize(
    "bad, error",
    [([3, -1], OverflowError), ([-70], OverflowError), ([1.0], TypeError), ([0, 10**6], OSError)],
)
def test_take_refuses_as_pylance(pair, bad, error):
    """Negative indices and row ids: pylance's OverflowError; non-integers its TypeError; past the
    end its OSError (lancelot's are LanceErrors too)."""
    ours, theirs = pair
    for call in (lambda ds: ds.take(bad, columns=["a"]), lambda ds: ds._take_rows(bad, columns=["a"])):
        with pytest.raises(error):
            call(theirs)
        with pytest.raises(error) as e:
            call(ours)
        assert isinstance(e.value, lancelot.LanceError)


def test_take_rows_by_row_id(pair):
    """``_take_rows``: row ids in the order asked; deleted rows are left out, as pylance leaves them."""
    ours, theirs = pair
    ids = theirs.to_table(columns=[], with_row_id=True).column("_rowid").to_pylist()
    for pick in ([ids[7], ids[0], ids[40], ids[7]], [ids[40], ids[7], ids[0]], [ids[50], ids[3], ids[33], ids[1]]):
        assert ours._take_rows(pick).equals(theirs._take_rows(pick))
        assert ours.take([ids.index(i) for i in pick], columns=["a", "_rowid"]).column("_rowid").to_pylist() == pick
    proj = {"a2": "a*2", "bup": "UPPER(t)"}
    assert ours._take_rows(pick, columns=proj).equals(theirs._take_rows(pick, columns=proj))
    deleted = (1 << 32) | 3  # a = 13, deleted
    assert ours._take_rows([ids[0], deleted]).equals(theirs._take_rows([ids[0], deleted]))
    mixed = [ids[9], deleted, ids[0], ids[9], deleted, (4 << 32) | 0, ids[0]]  # a = 40: deleted too
    for cols in (None, ["a", "_rowid"]):
        assert ours._take_rows(mixed, columns=cols).equals(theirs._take_rows(mixed, columns=cols))
        got = ours._take_rows(mixed, columns=cols, ignore_deletions=True)
        assert got.equals(theirs._take_rows(mixed, columns=cols, ignore_deletions=True))
    with pytest.raises(OSError):
        theirs._take_rows([(1 << 32) | 50])
    with pytest.raises(OSError):
        ours._take_rows([(1 << 32) | 50])


def test_sample_and_head(pair):
    """Reference test_sample; head as pylance's (the first rows of a scan, scanner options allowed)."""
    ours, theirs = pair
    s = ours.sample(3)
    assert s.num_rows == 3 and s.schema == theirs.schema
    s = ours.sample(4, columns=["a"], randomize_order=False)
    assert s.num_columns == 1 and s.column("a").to_pylist() == sorted(s.column("a").to_pylist())
    live = set(theirs.to_table(columns=["a"]).column("a").to_pylist())
    assert set(s.column("a").to_pylist()) <= live
    with pytest.raises(ValueError):
        theirs.sample(1000)
    with pytest.raises(ValueError):
        ours.sample(1000)
    assert ours.head(5).equals(theirs.head(5))
    assert ours.head(5, columns=["a"], filter="a > 60").equals(theirs.head(5, columns=["a"], filter="a > 60"))
    assert ours.scanner(columns=["b"]).head(3).equals(theirs.scanner(columns=["b"]).head(3))


def test_scanner_on_fragments(pair):
    """Reference test_load_scanner_from_fragments: ``fragments=`` scans those fragments, in that order."""
    ours, theirs = pair
    fo, ft = ours.get_fragments(), theirs.get_fragments()
    mine = ours.scanner(fragments=[fo[3], fo[0]], columns=["a"], with_row_id=True).to_table()
    want = theirs.scanner(fragments=[ft[3], ft[0]], columns=["a"], with_row_id=True).to_table()
    assert mine.equals(want)


def test_scanner_object(pair):
    ours, theirs = pair
    s = ours.scanner(columns=["a", "s.x"], filter="a > 3", with_row_id=True)
    assert isinstance(s, lancelot.LanceScanner)
    assert s.dataset_schema == theirs.schema
    assert s.to_table().equals(theirs.scanner(columns=["a", "s.x"], filter="a > 3", with_row_id=True).to_table())
    plan = s.explain_plan()
    assert "a > 3" in plan and "num_fragments=" in plan
    # reference test_select_none: a scan of no columns still reads the filter's
    assert "projection=[a]" in ours.scanner(columns=[], filter="a < 50", with_row_id=True).explain_plan(True)
    # pyarrow Scanner's other doors, as pylance has them: refused, but for scan_batches (whose batches
    # pylance's own loses to a StopIteration)
    assert pa.Table.from_batches(s.scan_batches()).equals(s.to_table())
    for sc in (s, theirs.scanner()):
        with pytest.raises(NotImplementedError):
            sc.take([0])
        with pytest.raises(NotImplementedError):
            type(sc).from_dataset(ours)
        with pytest.raises(NotImplementedError):
            type(sc).from_batches([])


def test_write_a_scan_back(tmp_path, pair):
    """Reference test_roundtrip_reader: a scan's batches (and a whole dataset) are data to write."""
    ours, theirs = pair
    lancelot.write_dataset(ours.to_batches(), str(tmp_path / "t2"), schema=ours.schema)
    assert lance.dataset(str(tmp_path / "t2")).to_table().equals(theirs.to_table())
    lancelot.write_dataset(ours, str(tmp_path / "t3"))
    assert lance.dataset(str(tmp_path / "t3")).to_table().equals(theirs.to_table())


def test_stable_row_ids(tmp_path):
    """Reference test_enable_stable_row_ids, test_scan_with_row_ids: with stable row ids, _rowid is the
    row's id (kept through compaction), _rowaddr its place; both libraries agree."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(TABLE, uri, max_rows_per_file=30, enable_stable_row_ids=True)
    lance.dataset(uri).delete("a < 40")
    lance.dataset(uri).optimize.compact_files()
    ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
    kw = {"columns": ["a"], "with_row_id": True, "with_row_address": True}
    assert ours.to_table(**kw).equals(theirs.to_table(**kw))
    assert ours.to_table(**kw).column("_rowid").to_pylist() == list(range(40, 100))
    ids = [45, 99, 40]
    assert ours._take_rows(ids).equals(theirs._take_rows(ids))
    assert ours.to_table(filter="_rowid = 77", columns=["a"]).column("a").to_pylist() == [77]
    for gone in ([5], [5, 77], [10**6]):  # deleted before compaction, or never given: no row, as pylance's
        assert ours._take_rows(gone).equals(theirs._take_rows(gone))
    assert ours._take_rows([5]).num_rows == 0


def test_nested_projection_names(tmp_path):
    """Reference test_nested_projection: a nested path is a column named by its path."""
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(TABLE, uri)
    ds = lancelot.dataset(uri)
    assert ds.to_table(columns=["s.x"]) == pa.table({"s.x": pa.array(range(100), pa.int64())})
    assert ds.to_table(columns=["s.y"]).column("s.y").to_pylist() == [i % 2 == 0 for i in range(100)]
    with pytest.raises(ValueError, match="s.z"):
        ds.to_table(columns=["s.z"])
    with pytest.raises(ValueError):
        lance.dataset(uri).to_table(columns=["s.z"])


def test_unsupported_scan_options_refused(pair):
    ours, _ = pair
    with pytest.raises(ValueError, match="full_text_query"):
        ours.scanner(full_text_query="x")
    assert ours.to_table(batch_readahead=4, fragment_readahead=2, scan_in_order=False, use_stats=True).num_rows == (
        ours.count_rows()
    )


def test_fragment_scan_api(pair):
    """Reference test_fragment.py facts: Fragment.to_table / scanner / to_batches / count_rows / take /
    head, with limit, offset and row ids, as pylance's LanceFragment."""
    ours, theirs = pair
    fo, ft = ours.get_fragments()[2], theirs.get_fragments()[2]
    assert fo.fragment_id == ft.fragment_id
    kw = {"columns": ["a"], "with_row_id": True, "with_row_address": True, "offset": 1, "limit": 3}
    assert fo.to_table(**kw).equals(ft.to_table(**kw))
    assert fo.to_table(filter="a > 24").equals(ft.to_table(filter="a > 24"))
    assert fo.scanner(columns=["b"]).to_table().equals(ft.scanner(columns=["b"]).to_table())
    assert [b.num_rows for b in fo.to_batches(batch_size=2)] == [b.num_rows for b in ft.to_batches(batch_size=2)]
    assert fo.count_rows() == ft.count_rows() and fo.count_rows("a > 24") == ft.count_rows("a > 24")
    assert fo.take([0, 2], columns=["a"]).equals(ft.take([0, 2], columns=["a"]))
    assert fo.head(2).equals(ft.head(2))
    assert fo.physical_rows == ft.physical_rows and fo.num_deletions == ft.num_deletions
    assert fo.deletion_file() == ft.deletion_file()
    assert [d.path for d in fo.data_files()] == [d.path for d in ft.data_files()]
    assert [list(d.fields) for d in fo.data_files()] == [d.fields for d in ft.data_files()]
    assert fo.schema == ft.schema
    assert fo.metadata.id == ft.metadata.id and fo.metadata.physical_rows == ft.metadata.physical_rows


def test_small_dataset_api(pair, tmp_path):
    """len, has_stable_row_ids, max_field_id, to_pandas, get_fragments(filter), checkout_latest as pylance."""
    ours, theirs = pair
    assert len(ours) == len(theirs)
    assert ours.has_stable_row_ids == theirs.has_stable_row_ids
    assert ours.max_field_id == theirs.max_field_id
    assert ours.to_pandas(columns=["a"], filter="a > 90").equals(theirs.to_pandas(columns=["a"], filter="a > 90"))
    with pytest.raises(ValueError):
        theirs.get_fragments(filter=pc.field("a") > 1)
    with pytest.raises(ValueError):
        ours.get_fragments(filter=pc.field("a") > 1)
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"a": [1]}), uri)
    ds = lancelot.dataset(uri)
    lancelot.write_dataset(pa.table({"a": [2]}), uri, mode="append")
    ds.checkout_latest()
    assert ds.version == 2 and ds.count_rows() == 2


def test_system_columns_and_empty_projections(tmp_path):
    """Reference test_scan_no_columns, test_with_row_offset, test_system_columns, test_scanner_schemas,
    test_scan_deleted_rows: the order of row-id columns, column-less batches that keep their row
    counts, deleted rows only with row ids."""
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"a": range(100), "b": range(100)}), uri, max_rows_per_file=25)
    ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
    for kw in [
        {"columns": ["_rowid", "_rowaddr", "_rowoffset"]},
        {"columns": ["_rowoffset", "_rowid", "_rowaddr"]},
        {"with_row_id": True},
        {"with_row_address": True},
        {"with_row_address": True, "with_row_id": True},
    ]:
        assert ours.scanner(**kw).to_table().equals(theirs.scanner(**kw).to_table())
    offsets = ours.scanner(columns=["_rowoffset"]).to_table().combine_chunks()
    assert offsets == pa.table({"_rowoffset": pa.array(range(100), pa.uint64())})
    mine = list(ours.scanner(columns=[], batch_size=10).to_batches())
    want = list(theirs.scanner(columns=[], batch_size=10).to_batches())
    assert [b.num_rows for b in mine] == [b.num_rows for b in want] and mine[0].schema.names == []
    assert ours.scanner(columns=["a"]).projected_schema == pa.schema([pa.field("a", pa.int64())])
    lance.dataset(uri).delete("a < 30")
    ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
    kw = {"with_row_id": True, "include_deleted_rows": True}
    assert ours.scanner(**kw).to_table().equals(theirs.scanner(**kw).to_table())
    assert ours.scanner(**kw).to_table().num_rows == 75
    assert ours.scanner(filter="a < 32", **kw).to_table().num_rows == 7
    with pytest.raises(ValueError, match="with_row_id is false"):
        theirs.scanner(include_deleted_rows=True, filter="a < 30").to_table()
    with pytest.raises(ValueError, match="with_row_id is false"):
        ours.scanner(include_deleted_rows=True, filter="a < 30").to_table()


def test_order_by(tmp_path):
    """``order_by`` (names or ColumnOrdering): a stable sort before offset and limit, as pylance's.
    (pylance 14.0.2 fails to plan an order_by column left out of the projection; lancelot sorts by it.)"""
    from lance.dataset import ColumnOrdering as TheirOrdering

    from lancelot.dataset import ColumnOrdering

    uri = str(tmp_path / "ds")
    lancelot.write_dataset(
        pa.table({"a": [3, None, 1, 2, 2, 5], "b": ["x", "y", "z", "w", "v", "u"]}), uri, max_rows_per_file=2
    )
    ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
    cases = [
        (["a"], ["a"], {}),
        ([TheirOrdering("a", ascending=False, nulls_first=True)], [ColumnOrdering("a", False, True)], {"limit": 3}),
        (["b"], ["b"], {"columns": ["a", "b"], "offset": 1}),
        (["a", "b"], ["a", "b"], {"filter": "a > 1"}),
        (
            [TheirOrdering("a"), TheirOrdering("b", ascending=False)],
            [ColumnOrdering("a"), ColumnOrdering("b", False)],
            {"with_row_id": True},
        ),
    ]
    for theirs_order, our_order, kw in cases:
        assert ours.to_table(order_by=our_order, **kw).equals(theirs.to_table(order_by=theirs_order, **kw))
    assert ours.to_table(columns=["a"], order_by=["b"]).column("a").to_pylist() == [5, 2, 2, 3, None, 1]


def test_batch_size_and_its_environment_default(tmp_path, monkeypatch):
    """Reference test_scan_with_batch_size: full batches in order; LANCE_DEFAULT_BATCH_SIZE sets the default."""
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"a": range(1000), "b": range(1000)}), uri)
    ds = lancelot.dataset(uri)
    for i, batch in enumerate(ds.scanner(batch_size=16, scan_in_order=True).to_batches()):
        assert batch.num_rows == (16 if i < 62 else 8) and batch.column("a")[0].as_py() == i * 16
    monkeypatch.setenv("LANCE_DEFAULT_BATCH_SIZE", "12")
    sizes = {b.num_rows for b in ds.scanner(scan_in_order=True).to_batches()}
    assert sizes == {12, 4}
    monkeypatch.delenv("LANCE_DEFAULT_BATCH_SIZE")
    assert {b.num_rows for b in ds.scanner().to_batches()} == {1000}


def test_take_reads_each_fragment_once_in_order(pair, monkeypatch):
    """The dataset maps a take's rows once: each touched data file is asked once, for ascending
    unique rows (the file reader then neither sorts nor reorders); the answer is still pylance's."""
    from lancelot.reader import LanceFile

    ours, theirs = pair
    calls = []
    orig = LanceFile.take

    def spy(self, indices, columns=None):
        calls.append((self.path, list(indices)))
        return orig(self, indices, columns)

    monkeypatch.setattr(LanceFile, "take", spy)
    idx = [50, 3, 50, 12, 3, 49, 0]
    assert ours.take(idx, columns=["a", "t"]).equals(theirs.take(idx, columns=["a", "t"]))
    touched = {a >> 32 for a in theirs.take(idx, columns=["_rowaddr"]).column("_rowaddr").to_pylist()}
    assert len({p for p, _ in calls}) == len(calls) == len(touched) > 1
    assert all(rows == sorted(set(rows)) for _, rows in calls)


@pytest.mark.parametrize("order_by", [["d"], ["id"]])
def test_order_by_over_unlike_dictionaries_of_2_0_fragments(tmp_path, order_by) -> None:
    """2.0 files keep a dictionary per fragment; sorting the whole scan takes across them (pyarrow
    cannot unify dictionaries holding a null) and sorts a dictionary key by its values, as pylance."""
    schema = pa.schema([("id", pa.int64()), ("d", pa.dictionary(pa.int32(), pa.string()))])
    path = str(tmp_path / "d")
    for i, values in enumerate([["b", "a", None], ["c", None, "a"]]):
        t = pa.table({"id": [3 * i, 3 * i + 1, 3 * i + 2], "d": pa.array(values).dictionary_encode()}).cast(schema)
        lance.write_dataset(t, path, mode="append" if i else "create", data_storage_version="2.0")
    ours = lancelot.dataset(path).to_table(order_by=order_by)
    theirs = lance.dataset(path).to_table(order_by=order_by)
    assert ours.column("id").to_pylist() == theirs.column("id").to_pylist()
    assert ours.column("d").to_pylist() == theirs.column("d").to_pylist()
