"""A filtered scan with a limit reads each fragment in chunks and stops once enough rows passed
(fragment_reads._chunks): its results equal pylance's (rows, order, row ids, offset, batches) over
deletions and filters that pass many, few or no rows, and it reads fewer rows than the fragment."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset import fragment_reads

ROWS, PER_FRAGMENT = 9000, 3000


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    """Three fragments written by pylance, rows deleted in the first and the third, opened by both."""
    path = str(tmp_path_factory.mktemp("limit_chunks") / "ds")
    rng = np.random.default_rng(7)
    table = pa.table(
        {
            "i": pa.array(np.arange(ROWS), pa.int64()),
            "q": pa.array(rng.integers(0, 100, ROWS), pa.int32()),
            "s": [f"row {i}" for i in range(ROWS)],
        }
    )
    ref = lance.write_dataset(table, path, max_rows_per_file=PER_FRAGMENT)
    ref.delete("i % 7 = 3 AND (i < 2000 OR i > 7000)")
    return lancelot.dataset(path), lance.dataset(path)


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    """Chunks of a few rows, so these small fragments are read in several."""
    monkeypatch.setattr(fragment_reads, "FIRST_CHUNK_ROWS", 64)


SCANS = [
    {"filter": "q > 90", "limit": 20},
    {"filter": "q > 90", "limit": 20, "offset": 250},
    {"filter": "q > 90", "limit": 400, "offset": 100, "with_row_id": True},
    {"filter": "q > 98", "limit": 5, "columns": ["s"]},
    {"filter": "q = 7 AND i > 5000", "limit": 30, "with_row_address": True},
    {"filter": "q < 0", "limit": 10},
    {"filter": "i >= 2990", "limit": 25, "with_row_id": True},
    {"filter": "q > 50", "limit": 4000, "columns": ["i", "q"]},
]


@pytest.mark.parametrize("scan", SCANS, ids=range(len(SCANS)))
def test_filtered_limit_as_pylance(twin, scan) -> None:
    ours, theirs = twin
    assert ours.to_table(**scan).equals(theirs.to_table(**scan))


@pytest.mark.parametrize("scan", SCANS[:4], ids=range(4))
def test_filtered_limit_batches_as_pylance(twin, scan) -> None:
    ours, theirs = twin
    got = [b.num_rows for b in ours.to_batches(batch_size=100, **scan)]
    want = [b.num_rows for b in theirs.to_batches(batch_size=100, **scan)]
    assert got == want
    assert pa.Table.from_batches(ours.to_batches(batch_size=100, **scan)).equals(theirs.to_table(**scan))


def test_sql_limit_as_pylance(twin) -> None:
    ours, theirs = twin
    sql = "SELECT i, s FROM dataset WHERE q > 90 LIMIT 20"
    got = ours.sql(sql).build().to_stream_reader().read_all()
    assert got.equals(theirs.sql(sql).build().to_stream_reader().read_all())


def test_filtered_limit_reads_part_of_a_fragment(twin, monkeypatch) -> None:
    """The first rows that pass are found in the first chunks: the scan reads far fewer rows than the fragment."""
    ours, _ = twin
    read: list[int] = []
    frag_class = type(ours.get_fragments()[0])
    original = frag_class.read_physical

    def counted(self, columns, a, b):
        read.append(b - a)
        return original(self, columns, a, b)

    monkeypatch.setattr(frag_class, "read_physical", counted)
    assert ours.to_table(filter="q > 50", limit=10).num_rows == 10
    assert 0 < max(read) < PER_FRAGMENT // 4, read
