"""pylance's two-phase write API: LanceFragment.create + LanceDataset.commit(uri, LanceOperation...),
with fragments of either library committed by either library, read equal by both."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest
from lance.fragment import LanceFragment as PylanceFragment

import lancelot
from lancelot.dataset import LanceDataset, LanceFragment, LanceOperation

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def _t(lo: int, n: int) -> pa.Table:
    return pa.table({"id": range(lo, lo + n), "s": [f"r{i}" for i in range(lo, lo + n)]}, schema=SCHEMA)


def test_lancelot_fragments_committed_by_lancelot(tmp_path) -> None:
    p = str(tmp_path / "d")
    f0 = LanceFragment.create(p, _t(0, 5))
    ds = LanceDataset.commit(p, LanceOperation.Overwrite(SCHEMA, [f0]))
    assert ds.version == 1
    frags = [LanceFragment.create(p, _t(5, 3)), LanceFragment.create(p, _t(8, 4))]
    ds = LanceDataset.commit(p, LanceOperation.Append(frags), read_version=1)
    assert ds.version == 2
    want = _t(0, 12)
    assert lance.dataset(p).to_table().sort_by("id").equals(want)
    assert lancelot.dataset(p).to_table().sort_by("id").equals(want)
    assert lance.dataset(p).validate() is None


def test_pylance_fragments_committed_by_lancelot(tmp_path) -> None:
    p = str(tmp_path / "d")
    ds = LanceDataset.commit(p, LanceOperation.Overwrite(SCHEMA, [PylanceFragment.create(p, _t(0, 4))]))
    frag = PylanceFragment.create(p, _t(4, 4))
    ds = LanceDataset.commit(ds, LanceOperation.Append([frag]), read_version=ds.version)
    assert lance.dataset(p).to_table().sort_by("id").equals(_t(0, 8))
    assert lancelot.dataset(p).count_rows() == 8


def test_lancelot_fragments_committed_by_pylance(tmp_path) -> None:
    p = str(tmp_path / "d")
    lancelot.write_dataset(_t(0, 3), p)
    frag = LanceFragment.create(p, _t(3, 3))
    as_pylance = lance.fragment.FragmentMetadata.from_json(  # what a pylance driver receives
        __import__("json").dumps(
            {
                "id": 0,
                "files": [
                    {
                        "path": d.path,
                        "fields": list(d.fields),
                        "column_indices": list(d.column_indices),
                        "file_major_version": d.file_major_version,
                        "file_minor_version": d.file_minor_version,
                        "file_size_bytes": d.file_size_bytes,
                        "base_id": None,
                    }
                    for d in frag.files
                ],
                "physical_rows": frag.physical_rows,
                "deletion_file": None,
                "row_id_meta": None,
            }
        )
    )
    lance.LanceDataset.commit(p, lance.LanceOperation.Append([as_pylance]), read_version=1)
    assert lancelot.dataset(p).to_table().sort_by("id").equals(_t(0, 6))


def test_append_needs_read_version(tmp_path) -> None:
    p = str(tmp_path / "d")
    lancelot.write_dataset(_t(0, 3), p)
    with pytest.raises(ValueError, match="read_version is required"):
        LanceDataset.commit(p, LanceOperation.Append([LanceFragment.create(p, _t(3, 1))]))
    assert lancelot.dataset(p).version == 1
