"""Dictionary columns through dataset operations, against pylance on twin datasets.

A 2.0 file stores null as a dictionary item, so the fragments of one dataset read back with different
dictionaries, some holding a null value, which pyarrow cannot unify; and Arrow sorts no dictionary arrays."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancelot

TABLE = pa.table(
    {
        "id": pa.array(range(12), pa.int64()),
        "x": pa.array(range(12), pa.int64()),
        "dc": pa.array(["a", "c", "b", "a", None, "c", "a", "b", "b", "c", "a", None]).dictionary_encode(),
    }
)
CHANGES = {
    "update": lambda ds: ds.update({"x": "x + 1"}, where="id % 3 = 0"),
    "compact": lambda ds: ds.optimize.compact_files(target_rows_per_fragment=100),
    "merge_insert": lambda ds: ds.merge_insert("id").when_matched_update_all().execute(TABLE.slice(2, 8)),
}
QUERIES = [
    "SELECT dc, count(*) AS n FROM dataset GROUP BY dc ORDER BY dc",
    "SELECT dc, id FROM dataset ORDER BY dc DESC, id LIMIT 5",
    "SELECT DISTINCT dc FROM dataset ORDER BY dc NULLS FIRST",
]


def _twins(tmp_path, version: str) -> tuple[str, str]:
    paths = str(tmp_path / "theirs"), str(tmp_path / "ours")
    for p in paths:
        lance.write_dataset(TABLE, p, data_storage_version=version, max_rows_per_file=4)
    return paths


def _rows(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


@pytest.mark.parametrize("version", ["2.0", "2.2"])
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_changes_of_a_dataset_with_a_dictionary_column(tmp_path, change, version):
    theirs, ours = _twins(tmp_path, version)
    CHANGES[change](lance.dataset(theirs))
    CHANGES[change](lancelot.dataset(ours))
    assert _rows(lancelot.dataset(ours).to_table()) == _rows(lance.dataset(theirs).to_table())
    assert _rows(lance.dataset(ours).to_table()) == _rows(lance.dataset(theirs).to_table())


@pytest.mark.parametrize("version", ["2.0", "2.2"])
@pytest.mark.parametrize("query", QUERIES)
def test_sql_groups_and_sorts_dictionary_columns(tmp_path, query, version):
    theirs, ours = _twins(tmp_path, version)
    expected = pa.Table.from_batches(lance.dataset(theirs).sql(query).build().to_batch_records())
    got = pa.Table.from_batches(lancelot.dataset(ours).sql(query).build().to_batch_records())
    assert got.to_pylist() == expected.to_pylist()
    assert got.schema == expected.schema
