"""``merge`` (dataset and fragment) given right-side data of no record batch at all, as pylance 14: refused
(``LanceDataset.merge`` an OSError, ``LanceFragment.merge`` a ValueError), nothing written; one empty batch instead
is data whose keys match no row (a column of nulls).  And ``write_dataset`` of an empty iterable of batches without a
schema: pylance's ValueError."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import pandas as pd
import pyarrow as pa
import pytest

import lancelot
from tests.dataset.helpers import assert_twins, files_of, table, twins

SCHEMA = pa.schema([("id", pa.int64()), ("b", pa.string())])
EMPTY = pa.record_batch([pa.array([], pa.int64()), pa.array([], pa.string())], schema=SCHEMA)

NO_BATCH: dict[str, Callable[[], Any]] = {
    "table": lambda: SCHEMA.empty_table(),
    "reader": lambda: pa.RecordBatchReader.from_batches(SCHEMA, []),
    "record_batch": lambda: EMPTY,  # (pylance goes through a Table, which drops the empty batch)
    "pandas": lambda: pd.DataFrame({"id": pd.Series([], dtype="int64"), "b": pd.Series([], dtype="str")}),
}


def _outcome(call: Callable[[], object]) -> type[BaseException] | None:
    try:
        call()
    except Exception as e:  # noqa: BLE001 (the class raised is what is compared)
        return type(e)
    return None


@pytest.mark.parametrize("kind", list(NO_BATCH))
def test_merge_of_no_batch_refused_as_pylance(tmp_path: Path, kind: str) -> None:
    theirs, ours = twins(tmp_path, table(30))
    before = files_of(theirs), files_of(ours)
    want = _outcome(lambda: lance.dataset(theirs).merge(NO_BATCH[kind](), left_on="id"))
    got = _outcome(lambda: lancelot.dataset(ours).merge(NO_BATCH[kind](), left_on="id"))
    assert want is OSError
    assert got is not None and issubclass(got, want) and issubclass(got, lancelot.LanceError)
    frag_want = _outcome(lambda: lance.dataset(theirs).get_fragments()[0].merge(NO_BATCH[kind](), "id"))
    frag_got = _outcome(lambda: lancelot.dataset(ours).get_fragments()[0].merge(NO_BATCH[kind](), "id"))
    assert frag_want is ValueError
    assert frag_got is not None and issubclass(frag_got, frag_want)
    assert (files_of(theirs), files_of(ours)) == before
    assert_twins(theirs, ours)


def test_merge_of_one_empty_batch_adds_nulls_as_pylance(tmp_path: Path) -> None:
    theirs, ours = twins(tmp_path, table(30))
    lance.dataset(theirs).merge(pa.RecordBatchReader.from_batches(SCHEMA, [EMPTY]), left_on="id")
    lancelot.dataset(ours).merge(pa.RecordBatchReader.from_batches(SCHEMA, [EMPTY]), left_on="id")
    assert lance.dataset(theirs).to_table().column("b").null_count == 30
    assert_twins(theirs, ours)


@pytest.mark.parametrize("make", [list, lambda: iter([])], ids=["list", "generator"])
def test_write_of_an_empty_iterable_without_schema_refused_as_pylance(tmp_path: Path, make: Callable[[], Any]) -> None:
    with pytest.raises(ValueError, match="schema"):
        lance.write_dataset(make(), str(tmp_path / "theirs"))
    with pytest.raises(ValueError, match="schema") as got:
        lancelot.write_dataset(make(), str(tmp_path / "ours"))
    assert isinstance(got.value, lancelot.LanceError)
    assert not (tmp_path / "ours").exists() or not any((tmp_path / "ours").rglob("*.manifest"))
