"""``create_scalar_index`` (BTREE, BITMAP) and ``drop_index`` against pylance 14.0.2: the
index files and metadata pylance writes for the same data, and pylance's queries through
lancelot's indices equal to its scans without them."""

from __future__ import annotations

import uuid

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset.index_remap import read_indices
from lancelot.reader import LanceFile
from tests.dataset.helpers import VERSIONS

N = 3000
FILTERS = ["a = 7", "a > 480", "a IN (1, 2, 3)", "s = 'k5'", "s IS NULL", "b = 2", "b IN (0, 5)", "f > 1.5", "isnan(f)"]


def _data() -> pa.Table:
    rng = np.random.default_rng(0)
    i = np.arange(N)
    return pa.table(
        {
            "a": rng.integers(0, 500, N),
            "s": pa.array([None if k % 37 == 0 else f"k{k % 311}" for k in i]),
            "b": pa.array(rng.integers(0, 6, N), pa.int32()),
            "f": np.where(i % 50 == 0, np.nan, rng.standard_normal(N)),
        }
    )


def _twins(tmp_path, version: str, stable: bool) -> tuple[str, str]:
    paths = []
    for who in ("theirs", "ours"):
        p = str(tmp_path / who)
        lance.write_dataset(
            _data(), p, max_rows_per_file=1200, data_storage_version=version, enable_stable_row_ids=stable
        )
        lance.dataset(p).delete("a % 17 = 3")
        paths.append(p)
    return paths[0], paths[1]


def _rows(t: pa.Table) -> list[tuple]:
    """The table's rows, NaN equal to NaN."""
    return [tuple("nan" if isinstance(v, float) and v != v else v for v in r.values()) for r in t.to_pylist()]


def _content(uri: str, idx) -> dict[str, pa.Table]:
    """Each index file's rows, sorted (pylance orders equal values' ids as its sort left them)."""
    out = {}
    for f in idx.files:
        t = LanceFile(f"{uri}/_indices/{uuid.UUID(bytes=idx.uuid.uuid)}/{f.path}").read()
        out[f.path] = (t.sort_by([(t.column_names[0], "ascending"), (t.column_names[1], "ascending")]), t.schema)
    return out


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("version", VERSIONS)
def test_indices_as_pylance_builds_them(tmp_path, version, stable):
    theirs, ours = _twins(tmp_path, version, stable)
    for column, kind in [("a", "BTREE"), ("s", "BTREE"), ("f", "BTREE"), ("b", "BITMAP"), ("s", "BITMAP")]:
        name = f"{column}_{kind.lower()}"
        lance.dataset(theirs).create_scalar_index(column, kind, name=name)
        ds = lancelot.dataset(ours)
        assert ds.create_scalar_index(column, kind, name=name) is None
        assert ds.version == lance.dataset(theirs).version  # moved on, as pylance's dataset does
    mine, pylance_s = (read_indices(lancelot.dataset(p).manifest_file.index_section) for p in (ours, theirs))
    for x, y in zip(mine, pylance_s, strict=True):
        for key in ("name", "fields", "dataset_version", "fragment_bitmap", "index_version"):
            assert getattr(x, key) == getattr(y, key), (x.name, key)
        assert x.index_details == y.index_details
        a, b = _content(ours, x), _content(theirs, y)
        assert a.keys() == b.keys()
        for k in a:
            assert a[k][1] == b[k][1] and a[k][1].metadata == b[k][1].metadata, (x.name, k)
            assert _rows(a[k][0]) == _rows(b[k][0]), (x.name, k)
    ds = lance.dataset(ours)
    ds.validate()
    for f in FILTERS:
        assert "ScalarIndexQuery" in ds.scanner(filter=f).explain_plan() or "isnan" in f or "IS NULL" in f
        used = ds.to_table(filter=f, with_row_id=True).sort_by("_rowid")
        scanned = ds.to_table(filter=f, with_row_id=True, use_scalar_index=False).sort_by("_rowid")
        assert _rows(used) == _rows(scanned), f
    assert [d.name for d in lancelot.dataset(ours).describe_indices()] == [d.name for d in ds.describe_indices()]


def test_replace_drop_and_errors(tmp_path):
    _, ours = _twins(tmp_path, "2.2", False)
    ds = lancelot.dataset(ours)
    ds.create_scalar_index("a", "BTREE")
    with pytest.raises(RuntimeError, match="a_idx"):
        ds.create_scalar_index("a", "BTREE", replace=False)
    ds.create_scalar_index("a", "BTREE")  # replaces
    assert [i.name for i in lance.dataset(ours).describe_indices()] == ["a_idx"]
    with pytest.raises(KeyError):
        ds.create_scalar_index("nope", "BTREE")
    with pytest.raises(ValueError, match="INVERTED"):
        ds.create_scalar_index("s", "INVERTED")
    ds.drop_index("a_idx")
    assert lance.dataset(ours).describe_indices() == [] and ds.version == lance.dataset(ours).version == 5
    with pytest.raises(RuntimeError, match="a_idx"):
        ds.drop_index("a_idx")


def test_compaction_keeps_lancelot_s_index_right(tmp_path):
    """pylance's compaction remaps lancelot's index; queries stay right, then lancelot's compaction."""
    _, ours = _twins(tmp_path, "2.1", False)
    lancelot.dataset(ours).create_scalar_index("a", "BTREE")
    lancelot.write_dataset(_data().slice(0, 500), ours, mode="append")
    lance.dataset(ours).optimize.compact_files(target_rows_per_fragment=2000)
    ds = lance.dataset(ours)
    for f in FILTERS[:3]:
        assert _rows(ds.to_table(filter=f, with_row_id=True).sort_by("_rowid")) == _rows(
            ds.to_table(filter=f, with_row_id=True, use_scalar_index=False).sort_by("_rowid")
        )
    lancelot.dataset(ours).optimize.compact_files(target_rows_per_fragment=10_000)
    ds = lance.dataset(ours)
    ds.validate()
    for f in FILTERS[:3]:
        assert _rows(ds.to_table(filter=f, with_row_id=True).sort_by("_rowid")) == _rows(
            ds.to_table(filter=f, with_row_id=True, use_scalar_index=False).sort_by("_rowid")
        )
