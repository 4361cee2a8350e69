"""lancelot/versions.py: the one place that knows what differs between 2.0, 2.1 and 2.2."""

from __future__ import annotations

import pickle

import pytest

from lancelot import encodings, versions
from lancelot.errors import UnsupportedVersionError
from lancelot.versions import FileVersion


def test_parse_names_and_aliases():
    assert versions.parse(None) is FileVersion.V2_2
    assert versions.parse("stable") is FileVersion.V2_2
    assert [versions.parse(v) for v in ("2.0", "2.1", "2.2")] == list(FileVersion)[:3]
    # "next" is the unstable 2.3 and "legacy" the v1 format in pylance 14 (refused by name, never written as 2.2)
    assert versions.parse("next") is versions.parse("2.3") is FileVersion.V2_3
    for name, says in (("legacy", "v1"), ("0.1", "v1")):
        with pytest.raises(UnsupportedVersionError, match=says):
            versions.parse(name)
    with pytest.raises(UnsupportedVersionError, match="unknown file version '9.9'"):
        versions.parse("9.9")


def test_aliases_mean_what_pylance_means(tmp_path):
    """pylance writes "stable" as 2.2 and "next" as 2.3 data files (lancelot too, warning that 2.3 is unstable)."""
    import lance
    import pyarrow as pa

    for name in ("stable", "next"):
        ds = lance.write_dataset(pa.table({"a": [1]}), tmp_path / name, data_storage_version=name)
        df = ds.get_fragments()[0].data_files()[0]
        on_disk = (df.file_major_version, df.file_minor_version)
        if name == "stable":
            assert versions.from_disk(*on_disk) is versions.parse(name)
        else:
            assert versions.from_disk(*on_disk) is FileVersion.V2_3
            with pytest.warns(versions.UnstableVersionWarning):
                assert versions.resolve_writable(name) is FileVersion.V2_3


def test_a_version_is_its_public_string():
    v = versions.parse("2.1")
    assert v == "2.1" and str(v) == "2.1" and f"{v}" == "2.1" and {"2.1": 1}[v] == 1
    assert pickle.loads(pickle.dumps(v)) is v
    assert FileVersion.V2_0 < FileVersion.V2_1 < FileVersion.V2_2
    assert sorted([FileVersion.V2_3, FileVersion.V2_2, FileVersion.V2_0, FileVersion.V2_1]) == list(FileVersion)


def test_footer_versions():
    assert versions.from_disk(0, 3) is versions.from_disk(2, 0) is FileVersion.V2_0
    assert [v.disk for v in FileVersion] == [(0, 3), (2, 1), (2, 2), (2, 3)]
    assert all(versions.from_disk(*v.disk) is v for v in FileVersion)
    with pytest.raises(UnsupportedVersionError, match="legacy"):
        versions.from_disk(0, 2)
    with pytest.raises(UnsupportedVersionError, match="unknown file version 3.0"):
        versions.from_disk(3, 0)


def test_feature_switches():
    v20, v21, v22, _ = FileVersion
    assert not v20.structural and v21.structural and v22.structural
    for switch in (
        "large_chunks",
        "constant_values",
        "maps",
        "fixed_size_list_structs",
        "variable_packed_structs",
        "compressed_dictionaries",
        "dictionary_64bit",
    ):
        assert not getattr(v21, switch) and getattr(v22, switch), switch
    assert encodings.page_worker(v20) is None
    assert encodings.field_package(v20).__name__ == "lancelot.encodings.v2_0"
    assert encodings.field_package(v21) is encodings.field_package(v22)
