"""A ``migrate_manifest_paths_v2`` interrupted: ``_versions/`` holds some manifests under V1 names, some under V2 names
(or one under both).  pylance 14 refuses to open such a directory at its latest version (a ValueError that calls
itself an internal error and says to migrate), though it opens any version given by number and its migration, run
again from there, finishes; lancelot opens it at its latest version with either naming present, reads every version as
pylance reads it by number, commits on top with V2 names, and its migration finishes the directory for pylance."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelot

U64 = 2**64 - 1
CASES = {
    "oldest_renamed": ((1, 2), False),
    "newest_renamed": ((4, 5), False),
    "latest_under_both": ((5,), True),
    "all_but_oldest": ((2, 3, 4, 5), False),
}


def _t(a: int, b: int) -> pa.Table:
    return pa.table({"id": pa.array(range(a, b), pa.int64())})


def _half_migrated(uri: str, case: str, hint: bool) -> None:
    lance.write_dataset(_t(0, 3), uri, enable_v2_manifest_paths=False)
    for i in range(1, 5):
        lance.write_dataset(_t(10 * i, 10 * i + 3), uri, mode="append")
    vd = os.path.join(uri, "_versions")
    renamed, copied = CASES[case]
    for v in renamed:  # (pylance's migration renames; lancelot's writes the new name, then removes the old)
        (shutil.copy if copied else os.rename)(f"{vd}/{v}.manifest", f"{vd}/{U64 - v:020d}.manifest")
    if not hint:
        os.remove(f"{vd}/latest_version_hint.json")


def _ids(ds: object) -> list[int]:
    return sorted(ds.to_table()["id"].to_pylist())  # type: ignore[attr-defined]


@pytest.mark.parametrize("hint", [True, False])
@pytest.mark.parametrize("case", list(CASES))
def test_half_migrated_directory_opens_at_latest(tmp_path: Path, case: str, hint: bool) -> None:
    uri = str(tmp_path / "d")
    _half_migrated(uri, case, hint)
    with pytest.raises(ValueError, match="migrate_manifest_paths_v2"):
        lance.dataset(uri)  # (pylance 14's refusal: see the module docstring)
    ds = lancelot.dataset(uri)
    assert ds.version == 5
    assert [v["version"] for v in ds.versions()] == [1, 2, 3, 4, 5]
    for v in range(1, 6):
        assert _ids(lancelot.dataset(uri, version=v)) == _ids(lance.dataset(uri, version=v))
    lancelot.write_dataset(_t(100, 102), uri, mode="append")
    assert lancelot.dataset(uri).version == 6
    assert _ids(lancelot.dataset(uri)) == _ids(lance.dataset(uri, version=6))
    ds.migrate_manifest_paths_v2()
    assert all(len(n) == 29 for n in os.listdir(os.path.join(uri, "_versions")) if n.endswith(".manifest"))
    theirs = lance.dataset(uri)
    assert theirs.version == 6 and _ids(theirs) == _ids(lancelot.dataset(uri))


def test_pylance_migration_rerun_finishes_for_lancelot(tmp_path: Path) -> None:
    uri = str(tmp_path / "d")
    _half_migrated(uri, "oldest_renamed", True)
    before = _ids(lancelot.dataset(uri))
    lance.dataset(uri, version=3).migrate_manifest_paths_v2()
    assert lance.dataset(uri).version == lancelot.dataset(uri).version == 5
    assert _ids(lance.dataset(uri)) == _ids(lancelot.dataset(uri)) == before
