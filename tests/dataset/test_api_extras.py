"""validate, drop, slice, fragment_ids and truncate_table as pylance's."""

from __future__ import annotations

import os

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.errors import DatasetNotFoundError


@pytest.fixture()
def two_fragments(tmp_path) -> str:
    p = str(tmp_path / "d")
    lance.write_dataset(pa.table({"id": range(10)}), p, max_rows_per_file=6)
    lance.dataset(p).delete("id = 2")
    return p


def test_slice_and_fragment_ids(two_fragments: str) -> None:
    ours, theirs = lancelot.dataset(two_fragments), lance.dataset(two_fragments)
    for start, end in [(0, 3), (1, 7), (5, 100), (4, 4)]:
        assert ours.slice(start, end).equals(theirs.slice(start, end))
    assert ours.slice(1, 3, columns=["id"]).equals(theirs.slice(1, 3, columns=["id"]))
    assert set(ours.fragment_ids()) == set(theirs.fragment_ids()) == {0, 1}
    with pytest.raises(ValueError):
        ours.slice(3, 1)


def test_truncate_table_like_pylance(tmp_path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    for p in (a, b):
        lance.write_dataset(pa.table({"id": range(5)}), p)
    lancelot.dataset(a).truncate_table()
    lance.dataset(b).truncate_table()
    assert lance.dataset(a).version == lance.dataset(b).version == 2
    assert lance.dataset(a).count_rows() == 0 and lancelot.dataset(a).count_rows() == 0
    assert lance.dataset(a).schema == lance.dataset(b).schema
    assert lance.dataset(a).validate() is None


def test_validate_passes_and_finds_a_missing_file(two_fragments: str) -> None:
    lancelot.dataset(two_fragments).validate()
    victim = sorted(os.listdir(os.path.join(two_fragments, "data")))[0]
    os.remove(os.path.join(two_fragments, "data", victim))
    with pytest.raises(OSError, match="missing"):
        lancelot.dataset(two_fragments).validate()
    with pytest.raises(OSError):  # pylance finds it too
        lance.dataset(two_fragments).validate()


def test_drop(two_fragments: str) -> None:
    lancelot.LanceDataset.drop(two_fragments)
    assert not os.path.exists(two_fragments)
    with pytest.raises(DatasetNotFoundError):
        lancelot.LanceDataset.drop(two_fragments)
    lancelot.LanceDataset.drop(two_fragments, ignore_not_found=True)


def test_to_pandas_of_scanner_and_fragment(two_fragments: str) -> None:
    pytest.importorskip("pandas", reason="pandas is an optional dependency of to_pandas")
    ours, theirs = lancelot.dataset(two_fragments), lance.dataset(two_fragments)
    assert ours.scanner(filter="id > 3").to_pandas().equals(theirs.scanner(filter="id > 3").to_pandas())
    a, b = ours.get_fragments()[1], theirs.get_fragments()[1]
    assert a.to_pandas(columns=["id"], limit=2).equals(b.to_pandas(columns=["id"], limit=2))
