"""The reference's python/python/tests/test_migration.py (lancedb/lance: datasets written by old Lance
releases, tests/data/reference_datasets/), ported: each test runs the same code with pylance and with
lancelot (``lib``) on a copy of the dataset, pylance the oracle; what lancelot commits is read back
by pylance. Where pylance 14.0.2 differs from the reference's assertion, the test follows it."""

from __future__ import annotations

import shutil
from pathlib import Path

import lance
import lance.file
import pyarrow as pa
import pytest

import lancelot

LIBS = {"pylance": lance, "lancelot": lancelot}
DATA = Path(__file__).parents[1] / "data" / "reference_datasets"


def _gap(reason: str):
    """``lib`` values with the lancelot variant an expected (strict) failure: a gap, not a pass."""
    return ["pylance", pytest.param("lancelot", marks=pytest.mark.xfail(strict=True, reason=reason))]


def prep_dataset(mod, tmp_path: Path, version: str, name: str):
    """A copy of the historical dataset ``version/name``, opened by ``mod``."""
    shutil.copytree(DATA / version / name, tmp_path / version / name)
    return mod.dataset(tmp_path / version / name)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize(
    "name,expected",
    [("v2_no_files.lance", "stable"), ("v2_with_files.lance", "2.0")],
)
def test_add_data_storage_version(tmp_path, lib, name, expected) -> None:
    """Datasets of 0.15 (no data storage version in the manifest): the version is inferred from the
    writer flags and files, and kept by an append. (The two 0.1 datasets: test_add_data_storage_version_legacy.)"""
    mod = LIBS[lib]
    want = lance.file.stable_version() if expected == "stable" else expected
    ds = prep_dataset(mod, tmp_path, "v0.15.0", name)
    assert ds.data_storage_version == want
    mod.write_dataset(pa.table({"x": range(1024)}), ds.uri, mode="append")
    assert ds.data_storage_version == want
    assert lance.dataset(ds.uri).data_storage_version == want
    assert lance.dataset(ds.uri).to_table() == lancelot.dataset(ds.uri).to_table()


@pytest.mark.parametrize(
    "lib",
    _gap(
        "appending to a legacy (0.1) dataset: lancelot does not write 0.1 data files (into one with files it "
        "refuses; into an empty one it writes 2.2 files, and the dataset becomes 2.2 where pylance keeps 0.1)"
    ),
)
@pytest.mark.parametrize("name", ["v1_no_files.lance", "v1_with_files.lance"])
def test_add_data_storage_version_legacy(tmp_path, lib, name) -> None:
    """The reference's test_add_data_storage_version, its 0.1 datasets (and what the dataset is after the
    append, as pylance reads it)."""
    mod = LIBS[lib]
    ds = prep_dataset(mod, tmp_path, "v0.15.0", name)
    assert ds.data_storage_version == "0.1"
    mod.write_dataset(pa.table({"x": range(1024)}), ds.uri, mode="append")
    assert ds.data_storage_version == "0.1" == lance.dataset(ds.uri).data_storage_version


@pytest.mark.parametrize("lib", LIBS)
def test_fix_data_storage_version(tmp_path, lib) -> None:
    """0.16 wrote 0.1 for datasets of 2.0 files: a commit fixes it. (The reference's second half, a
    mixture of file versions refused: test_fix_data_storage_version_mixed.)"""
    mod = LIBS[lib]
    ds = prep_dataset(mod, tmp_path, "v0.16.0", "wrong_data_version_can_fix.lance")
    assert ds.data_storage_version == "0.1"
    ds.delete("false")
    assert ds.data_storage_version == "2.0" == lance.dataset(ds.uri).data_storage_version


@pytest.mark.parametrize("lib", LIBS)
def test_fix_data_storage_version_mixed(tmp_path, lib) -> None:
    mod = LIBS[lib]
    ds = prep_dataset(mod, tmp_path, "v0.16.0", "wrong_data_version_no_fix.lance")
    assert ds.data_storage_version == "0.1"
    with pytest.raises(OSError, match="The dataset contains a mixture of file versions"):
        ds.delete("false")


@pytest.mark.parametrize("lib", LIBS)
def test_old_btree_bitmap_indices(tmp_path, lib) -> None:
    """Filters on columns with old (0.20) BTREE and BITMAP indices. The reference also asserts that
    pylance's plan uses them; lancelot's scans use no index (docs/pylance.md): the results are checked."""
    ds = prep_dataset(LIBS[lib], tmp_path, "v0.20.0", "old_btree_bitmap_indices.lance")
    for filt in ("bitmap > 2", "btree > 2"):
        assert ds.to_table(filter=filt) == pa.table({"bitmap": [3, 4], "btree": [3, 4]})
        if lib == "pylance":
            plan = ds.scanner(filter=filt).explain_plan()
            assert "ScalarIndexQuery" in plan or "MaterializeIndex" in plan


@pytest.mark.parametrize("lib", LIBS)
def test_index_no_details(tmp_path, lib) -> None:
    ds = prep_dataset(LIBS[lib], tmp_path, "v0.18.2", "index_no_details.lance")
    assert ds.to_table(filter="id > 2").num_rows == 97
