"""``merge`` (``LanceDataset.merge``, ``LanceFragment.merge``) and ``LanceFragment.update_columns``, against pylance.

Fragments joined and updated (written, committed later with ``LanceOperation.Merge`` / ``Update``) on twin datasets,
and across the libraries: one writes the fragment, the other commits it.  Right-side data of no record batch at all,
as pylance 14: refused (``LanceDataset.merge`` an OSError, ``LanceFragment.merge`` a ValueError), nothing written; one
empty batch instead is data whose keys match no row (a column of nulls).  And ``write_dataset`` of an empty iterable
of batches without a schema: pylance's ValueError."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import pandas as pd
import pyarrow as pa
import pytest

import lancelot
from tests.dataset.helpers import LIBS, assert_twins, files_of, table, twins


def _twin(tmp_path, name: str) -> str:
    """4 rows, the last deleted (version 2)."""
    p = str(tmp_path / name)
    lance.write_dataset(pa.table({"id": [1, 2, 3, 4], "a": [10, 20, 30, 40], "b": ["w", "x", "y", "z"]}), p)
    lance.dataset(p).delete("id = 4")
    return p


def _as(lib, frag_meta, schema=None):
    """``frag_meta`` (and a LanceSchema) as ``lib``'s objects, through their JSON and Arrow forms."""
    from lance.schema import LanceSchema as Theirs

    from lancelot.dataset.transaction_api import LanceSchema as Ours

    meta = lib.FragmentMetadata.from_json(json.dumps(frag_meta.to_json()))
    return meta, None if schema is None else (Theirs if lib is lance else Ours).from_pyarrow(schema.to_pyarrow())


@pytest.mark.parametrize(
    "writer,committer", [(lance, lance), (lancelot, lancelot), (lancelot, lance), (lance, lancelot)]
)
def test_update_columns_then_merge(tmp_path, writer, committer) -> None:
    """update_columns by a key and by ``_rowid`` (the default), then merge: the same files' field ids and the same
    table as pylance alone."""
    want = _twin(tmp_path, "want")
    got = _twin(tmp_path, "got")
    for p, w, c in ((want, lance, lance), (got, writer, committer)):
        meta, ids, offsets = (
            w.dataset(p)
            .get_fragments()[0]
            .update_columns(pa.table({"id": [4, 1, 2], "a": [400, None, 22]}), "id", with_offsets=True)
        )
        assert [d["fields"] for d in meta.to_json()["files"]] == [[0, -2, 2], [1]] and ids == [1]
        assert (
            offsets
            == lance.dataset(want)
            .get_fragments()[0]
            .update_columns(  # live rows 0 and 1 matched
                pa.table({"id": [1, 2], "a": [0, 0]}), "id", with_offsets=True
            )[2]
        )
        m, _ = _as(c, meta)
        c.LanceDataset.commit(p, c.LanceOperation.Update(updated_fragments=[m], fields_modified=ids), read_version=2)
        meta, ids = (
            w.dataset(p).get_fragments()[0].update_columns(pa.table({"_rowid": pa.array([0], pa.uint64()), "b": ["W"]}))
        )
        m, _ = _as(c, meta)
        c.LanceDataset.commit(p, c.LanceOperation.Update(updated_fragments=[m], fields_modified=ids), read_version=3)
        meta, schema = (
            w.dataset(p).get_fragments()[0].merge(pa.table({"k": [1, 3, 3, 7], "c": [1.5, 3.5, 3.6, 7.5]}), "id", "k")
        )
        assert [d["fields"] for d in meta.to_json()["files"]] == [[0, -2, -2], [1], [2], [3]]
        m, s = _as(c, meta, schema)
        c.LanceDataset.commit(p, c.LanceOperation.Merge([m], s), read_version=4)
    t = lance.dataset(want).to_table()
    assert t.to_pydict() == {"id": [1, 2, 3], "a": [None, 22, 30], "b": ["W", "x", "y"], "c": [1.5, None, 3.6]}
    assert lance.dataset(got).to_table() == t and lancelot.dataset(got).to_table() == t


@pytest.mark.parametrize("lib", LIBS.values(), ids=list(LIBS))
def test_fragment_join_errors(tmp_path, lib) -> None:
    frag = lib.dataset(_twin(tmp_path, "d")).get_fragments()[0]
    for bad in (
        lambda: frag.merge(pa.table({"id": [1], "a": [1]}), "id"),  # a column both sides have
        lambda: frag.merge(pa.table({"q": [1], "z": [1]}), "id"),  # no key on the right
        lambda: frag.update_columns(pa.table({"id": [1], "zz": [1]}), "id"),  # a column the fragment lacks
    ):
        with pytest.raises(ValueError):
            bad()


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
