"""Small fragments of one scan task are read together (dataset/fragment_groups.py): one deletion
filter and one filter over the rows of all, the other columns only where rows passed.  Rows,
projections, row ids and row addresses stay those of each row's fragment, as pylance returns them."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> str:
    """60 fragments of 10 rows (two appends), deletion files in most, a whole fragment deleted."""
    uri = str(tmp_path_factory.mktemp("groups") / "ds.lance")
    ids = np.arange(600, dtype=np.int64)
    t = pa.table({"id": ids, "x": (ids * 7 % 101).astype(np.float64), "s": pa.array([f"r{i}" for i in ids])})
    lance.write_dataset(t.slice(0, 300), uri, max_rows_per_file=10)
    lance.write_dataset(t.slice(300), uri, max_rows_per_file=10, mode="append")
    ds = lance.dataset(uri)
    ds.delete("id % 7 = 3 OR (id >= 100 AND id < 110)")
    return uri


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"filter": "x = 7.0"},
        {"filter": "x > 1000"},
        {"filter": "x >= 0", "columns": ["s"]},
        {"columns": ["s"], "filter": "x < 3", "with_row_id": True},
        {"columns": ["id"], "with_row_address": True},
        {"columns": ["s", "id"], "filter": "s LIKE 'r2%' AND x > 50"},
    ],
)
def test_grouped_scans_match_pylance(small: str, kw: dict) -> None:
    got, ref = lancelot.dataset(small).to_table(**kw), lance.dataset(small).to_table(**kw)
    assert got.equals(ref), kw


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Fragments of 2,500 rows (pages of several chunks) and of 10, with columns of every page kind
    a group decodes (Flat, Variable, large strings, binary, decimals, dictionary, constant) and some
    it leaves to each fragment's own read (nulls, booleans, lists)."""
    uri = str(tmp_path_factory.mktemp("varied") / "ds.lance")
    n = 7520
    ids = np.arange(n, dtype=np.int64)
    t = pa.table(
        {
            "id": ids,
            "i32": (ids % 1000).astype(np.int32),
            "s": pa.array([f"row-{i}-{'x' * (i % 13)}" for i in ids]),
            "ls": pa.array([f"L{i % 97}" for i in ids], pa.large_string()),
            "b": pa.array([bytes([i % 251]) * (i % 5) for i in ids], pa.binary()),
            "d": pa.array([i * 3 for i in ids.tolist()], pa.decimal128(12, 2)),
            "cat": pa.array(["red", "green", "blue"] * (n // 3) + ["red"] * (n % 3)),
            "k": pa.array(np.full(n, 5, np.int16)),
            "nul": pa.array([None if i % 5 == 0 else i for i in ids.tolist()], pa.int64()),
            "flag": pa.array(ids % 3 == 0),
            "lst": pa.array([[int(i)] * (i % 3) for i in ids]),
        }
    )
    lance.write_dataset(t.slice(0, 7500), uri, max_rows_per_file=2500)
    lance.write_dataset(t.slice(7500), uri, max_rows_per_file=10, mode="append")
    lance.dataset(uri).delete("id % 11 = 4 OR (id >= 7500 AND id < 7505)")
    return uri


GROUPED = ["id", "i32", "s", "ls", "b", "d", "cat", "k"]


@pytest.mark.parametrize(
    "kw",
    [
        {"columns": GROUPED},
        {"columns": GROUPED, "filter": "i32 < 20"},
        {"columns": ["s", "ls", "b"], "filter": "id % 9 = 2", "with_row_id": True},
        {"columns": GROUPED + ["nul", "flag", "lst"]},
        {"columns": ["nul", "s"], "filter": "nul > 7400"},
        {},
    ],
)
def test_grouped_page_kinds_match_pylance(varied: str, kw: dict) -> None:
    got, ref = lancelot.dataset(varied).to_table(**kw), lance.dataset(varied).to_table(**kw)
    assert got.equals(ref), kw


def test_groups_read_their_files_together_or_not_at_all(small: str, varied: str) -> None:
    """The group reader takes the files it can decode whole and hands back the others."""
    from lancelot.dataset.group_files import group_files

    frags = lancelot.dataset(small).get_fragments()
    assert group_files(frags[:20], ["id", "x", "s"], False) is not None
    frags = lancelot.dataset(varied).get_fragments()
    assert group_files(frags, GROUPED, False) is not None
    assert group_files(frags, ["flag"], False) is None  # booleans: each fragment's own read
    assert group_files(frags, ["lst"], False) is None


def test_damaged_files_in_a_group_are_named(small: str, tmp_path) -> None:
    """A damaged deletion file or data file among a group's is reported as each fragment's read
    reports it."""
    import shutil

    uri = str(tmp_path / "ds.lance")
    shutil.copytree(small, uri)
    ds = lancelot.dataset(uri)
    frag = ds.get_fragments()[5]
    from lancelot.dataset.deletion import deletion_path

    with open(f"{uri}/{deletion_path(frag.fragment_id, frag.data_fragment.deletion_file)}", "r+b") as fh:
        fh.truncate(100)
    with pytest.raises(lancelot.LanceError, match=f"fragment {frag.fragment_id}"):
        lancelot.dataset(uri).to_table()
    shutil.rmtree(uri)
    shutil.copytree(small, uri)
    frag = lancelot.dataset(uri).get_fragments()[7]
    with open(f"{uri}/data/{frag.data_fragment.files[0].path}", "r+b") as fh:
        fh.truncate(200)
    with pytest.raises(lancelot.LanceError, match=f"fragment {frag.fragment_id}: data file"):
        lancelot.dataset(uri).to_table()


@pytest.mark.parametrize("kw", [{}, {"filter": "x < 30", "columns": ["s"]}, {"with_row_id": True, "batch_size": 7}])
def test_grouped_batches_and_counts_match_pylance(small: str, kw: dict) -> None:
    """A stream of batches reads runs of small fragments together; a batch of a scan without a
    filter still holds the rows of one fragment, as pylance's do; counts with a filter read the runs
    together too."""
    got, ref = list(lancelot.dataset(small).to_batches(**kw)), list(lance.dataset(small).to_batches(**kw))
    if "filter" not in kw:
        assert [b.num_rows for b in got] == [b.num_rows for b in ref]
    assert pa.Table.from_batches(got).equals(pa.Table.from_batches(ref))
    if "filter" in kw:
        assert lancelot.dataset(small).count_rows(filter=kw["filter"]) == lance.dataset(small).count_rows(kw["filter"])
