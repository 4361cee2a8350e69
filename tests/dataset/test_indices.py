"""describe_indices / list_indices / has_index read from the manifest equal pylance's, for every
scalar index type and a vector index pylance builds, after deletes and an unindexed append."""

from __future__ import annotations

import warnings

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> str:
    p = str(tmp_path_factory.mktemp("idx") / "d")
    n = 600
    vec = pa.FixedSizeListArray.from_arrays(pa.array(np.random.default_rng(0).random(n * 8).astype("float32")), 8)
    t = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "s": [f"x{i % 5}" for i in range(n)],
            "tags": [[f"t{i % 3}"] for i in range(n)],
            "txt": [f"hello world {i}" for i in range(n)],
            "v": vec,
        }
    )
    ds = lance.write_dataset(t, p, max_rows_per_file=200)
    for col, kind in [("id", "BTREE"), ("s", "BITMAP"), ("tags", "LABEL_LIST"), ("txt", "INVERTED"), ("id", "ZONEMAP")]:
        ds.create_scalar_index(col, kind, name=f"{col}_{kind.lower()}")
    ds.create_index("v", "IVF_PQ", num_partitions=2, num_sub_vectors=2)
    ds.delete("id < 50")
    lance.write_dataset(t.slice(0, 10), p, mode="append")
    return p


def test_describe_indices_equal_pylance(indexed: str) -> None:
    ours, theirs = lancelot.dataset(indexed).describe_indices(), lance.dataset(indexed).describe_indices()
    assert [d.name for d in ours] == [d.name for d in theirs]
    for a, b in zip(ours, theirs):
        assert (a.type_url, a.index_type, a.num_rows_indexed) == (b.type_url, b.index_type, b.num_rows_indexed)
        assert (a.fields, a.field_names, a.total_size_bytes) == (
            list(b.fields),
            list(b.field_names),
            b.total_size_bytes,
        )
        assert len(a.segments) == len(b.segments)
        for s, t in zip(a.segments, b.segments):
            assert s.uuid == t.uuid and set(s.fragment_ids) == set(t.fragment_ids)
            assert (s.index_version, s.dataset_version_at_last_update) == (
                t.index_version,
                t.dataset_version_at_last_update,
            )
            assert (s.size_bytes, s.base_id, s.created_at) == (t.size_bytes, t.base_id, t.created_at)


def test_list_indices_and_has_index(indexed: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        theirs = lance.dataset(indexed).list_indices()
    with pytest.warns(DeprecationWarning):
        ours = lancelot.dataset(indexed).list_indices()
    assert [{**d, "fragment_ids": set(d["fragment_ids"])} for d in ours] == [
        {**d, "fragment_ids": set(d["fragment_ids"])} for d in theirs
    ]
    assert lancelot.dataset(indexed).has_index is True


def test_no_index(tmp_path: pytest.TempPathFactory) -> None:
    p = str(tmp_path / "d")  # type: ignore[operator]
    lancelot.write_dataset(pa.table({"a": [1, 2]}), p)
    ds = lancelot.dataset(p)
    assert ds.describe_indices() == [] and ds.has_index is False and lance.dataset(p).has_index is False


def test_cleanup_removes_replaced_index_directories(tmp_path) -> None:
    """After a compaction rewrote an index (new uuid), cleanup leaves only the live index's
    directory under _indices/, as pylance's cleanup does on a twin."""
    import datetime
    import os

    dirs = []
    for name, lib in (("ours", lancelot), ("theirs", lance)):
        p = str(tmp_path / name)
        lance.write_dataset(pa.table({"id": range(40)}), p, max_rows_per_file=10)
        lance.dataset(p).create_scalar_index("id", "BTREE")
        lib.dataset(p).optimize.compact_files()
        lib.dataset(p).cleanup_old_versions(older_than=datetime.timedelta(0), delete_unverified=True)
        live = {s.uuid for d in lance.dataset(p).describe_indices() for s in d.segments}
        dirs.append((sorted(os.listdir(os.path.join(p, "_indices"))), sorted(live)))
    assert dirs[0][0] == dirs[0][1] and len(dirs[1][0]) == len(dirs[0][0]) == 1
