"""Scans over many small fragments: rows per batch as pylance 14.0.2 cuts them (a fragment read
``batch_size`` live rows at a time, each batch filtered, empty batches dropped, offset and limit
applied to the stream), with and without a filter, deletions and row ids; pages with nulls read
together across fragments."""

import lance
import pyarrow as pa
import pytest

import lancelot


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> str:
    """300 rows in 30-row fragments (a nullable column), some rows deleted by pylance."""
    uri = str(tmp_path_factory.mktemp("scan_batches") / "ds")
    n = 300
    t = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "x": pa.array([i if i % 7 else None for i in range(n)]),
            "s": pa.array([None if i % 5 == 1 else f"s{i}" for i in range(n)]),
        }
    )
    lance.write_dataset(t, uri, max_rows_per_file=30)
    lance.dataset(uri).delete("id % 10 < 3 AND id < 150")
    return uri


SCANS = [
    {"batch_size": 8, "filter": "id % 3 = 0"},
    {"batch_size": 8, "filter": "x > 10", "columns": ["x"], "with_row_id": True},
    {"batch_size": 8, "filter": "id % 30 < 5"},
    {"batch_size": 8, "filter": "id % 3 = 0", "offset": 7, "limit": 40},
    {"batch_size": 8, "filter": "_rowid % 3 = 0"},
    {"batch_size": 8, "offset": 5, "limit": 50},
    {"filter": "id % 3 = 0", "limit": 25},
    # a string column read after the filter (late materialisation): batches joined
    {"batch_size": 8, "filter": "id % 3 = 0", "columns": ["id", "s"]},
    {"batch_size": 8, "filter": "id % 3 = 0", "columns": ["s"], "offset": 3, "limit": 50},
    # zone-map filters too; a batch of batch_size rows passes on alone, after those held
    {"batch_size": 8, "filter": "id > 50", "columns": ["id", "s"]},
    {"batch_size": 8, "filter": "x > 10", "columns": ["s"]},
]


@pytest.mark.parametrize("scan", SCANS, ids=[str(s) for s in SCANS])
def test_batch_sizes_match_pylance(small: str, scan: dict) -> None:
    scan = {"columns": ["id", "x"], **scan}
    ours, theirs = lancelot.dataset(small), lance.dataset(small)
    got, want = list(ours.to_batches(**scan)), list(theirs.to_batches(**scan))
    assert [b.num_rows for b in got] == [b.num_rows for b in want]
    assert pa.Table.from_batches(got).equals(pa.Table.from_batches(want))
    sizes = [b.num_rows for b in ours.scanner(**scan).to_batches()]
    assert sizes == [b.num_rows for b in want]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_small_fragments_with_nulls_read_together(small: str, tmp_path, version: str) -> None:
    """Pages of nullable items (definition levels) decode together across a group of small fragments
    (dataset/group_files.py), with nulls where pylance has them."""
    from lancelot.dataset.group_files import group_files

    uri = small
    if version != "2.2":
        uri = str(tmp_path / "v")
        lance.write_dataset(lance.dataset(small).to_table(), uri, max_rows_per_file=30, data_storage_version=version)
    ours, theirs = lancelot.dataset(uri), lance.dataset(uri)
    assert group_files(ours.get_fragments()[:4], ["x", "s"], False) is not None
    for kw in [{}, {"filter": "x > 100 OR s = 's12'", "columns": ["s", "id"]}]:
        got = ours.to_table(**kw)
        got.validate(full=True)
        assert got.equals(theirs.to_table(**kw))


def test_bitpacked_pages_with_nulls_read_together(tmp_path) -> None:
    from lancelot.dataset.group_files import group_files

    uri = str(tmp_path / "packed")
    y = pa.array([i * 1000003 % 100000 if i % 7 else None for i in range(600)], pa.int64())
    lance.write_dataset(pa.table({"y": y}), uri, max_rows_per_file=300)
    files = group_files(lancelot.dataset(uri).get_fragments(), ["y"], False)
    assert files is not None and files[0][1]["y"][0][0].packed  # (inline-bitpacked, with levels)
    got = lancelot.dataset(uri).to_table()
    got.validate(full=True)
    assert got.equals(lance.dataset(uri).to_table())


@pytest.mark.parametrize(
    "scan", [{"batch_size": 7}, {"batch_size": 7, "offset": 12, "limit": 200}, {"batch_size": 64, "with_row_id": True}]
)
def test_batches_of_a_fragment_read_several_at_once_cut_as_pylance(tmp_path, monkeypatch, scan: dict) -> None:
    """An unfiltered ``to_batches`` reads a fragment a few batches at a time (``READ_BYTES``), then cuts them:
    the batches and their rows stay pylance's, across reads and deletions."""
    from lancelot.dataset import scan_batches

    uri = str(tmp_path / "ds")
    n = 1000
    t = pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array([f"s{i}" if i % 9 else None for i in range(n)])})
    lance.write_dataset(t, uri, max_rows_per_file=400)
    lance.dataset(uri).delete("id % 13 = 0")
    reads: list[int] = []
    rows_of = scan_batches._read_rows
    monkeypatch.setattr(scan_batches, "READ_BYTES", 3000)  # (a few batches per read)
    monkeypatch.setattr(scan_batches, "_read_rows", lambda f, c: reads.append(rows_of(f, c)) or reads[-1])
    got, want = list(lancelot.dataset(uri).to_batches(**scan)), list(lance.dataset(uri).to_batches(**scan))
    assert [b.num_rows for b in got] == [b.num_rows for b in want]
    assert pa.Table.from_batches(got).equals(pa.Table.from_batches(want))
    assert reads and all(r % scan["batch_size"] == 0 and r > scan["batch_size"] for r in reads)
