"""Many versions: ``versions()``, time travel and cleanup read each manifest's few
fields off its bytes (dataset/manifest_wire.py) once the kernels are loaded; the answers are
pylance's either way.  Appends read the latest manifest once and list ``_versions/`` once."""

from __future__ import annotations

import datetime as _dt
import importlib
import os
import shutil

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from tests.dataset.helpers import files_of, table

history = importlib.import_module("lancelot.dataset.history")
cleanup = importlib.import_module("lancelot.dataset.cleanup")
wire = importlib.import_module("lancelot.dataset.manifest_wire")
store_mod = importlib.import_module("lancelot.dataset.store")
write_mod = importlib.import_module("lancelot.dataset.writing")  # (the machinery under write_dataset)


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> str:
    """Nine versions written by pylance: appends, deletes (deletion files), an index, a tag (on
    version 2), an overwrite and appends after it."""
    uri = str(tmp_path_factory.mktemp("history") / "ds")
    lance.write_dataset(table(30), uri, max_rows_per_file=10)
    for k in range(1, 4):
        lance.write_dataset(table(10, 100 * k), uri, mode="append")
    ds = lance.dataset(uri)
    ds.delete("id % 4 = 1")
    ds.create_scalar_index("id", "BTREE")
    ds.tags.create("kept", 2)
    lance.write_dataset(table(20, 1000), uri, mode="overwrite", max_rows_per_file=10)
    lance.write_dataset(table(5, 2000), uri, mode="append")
    lance.dataset(uri).delete("id = 1001")
    return uri


@pytest.fixture(params=["kernel", "parsed"])
def path(request, monkeypatch):
    """Both ways of reading manifests: the kernels loaded, or not (the protobuf messages)."""
    if request.param == "kernel":
        empty = np.frombuffer(b"\0", dtype=np.uint8)
        wire.scan_manifest(empty, 0, 0, True)
        wire.scan_files(empty, 0, 0)
        assert history._HOT.ready() and cleanup._HOT.ready()
    else:
        for hot in (history._HOT, cleanup._HOT):
            monkeypatch.setattr(hot, "ready", lambda: False)
            monkeypatch.setattr(hot, "numpy_call", lambda *a, **k: None)
    return request.param


def test_versions_equal_pylance(many, path):
    ours, theirs = lancelot.dataset(many).versions(), lance.dataset(many).versions()
    assert len(ours) == 9
    assert ours == theirs


def test_asof_opens_the_version_pylance_opens(many, path):
    for v in lance.dataset(many).versions():
        after = v["timestamp"] + _dt.timedelta(microseconds=1)
        assert lancelot.dataset(many, asof=after).version == lance.dataset(many, asof=after).version == v["version"]
    first = lance.dataset(many).versions()[0]["timestamp"]
    with pytest.raises(ValueError, match="earlier than the first version"):
        lancelot.dataset(many, asof=first - _dt.timedelta(days=1))


def test_cleanup_removes_what_pylance_removes(many, path, tmp_path):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(many, ours)
    shutil.copytree(many, theirs)
    a = lancelot.dataset(ours).cleanup_old_versions(retain_versions=2, error_if_tagged_old_versions=False)
    b = lance.dataset(theirs).cleanup_old_versions(retain_versions=2, error_if_tagged_old_versions=False)
    assert (a.old_versions, a.data_files_removed, a.deletion_files_removed, a.transaction_files_removed) == (
        b.old_versions,
        b.data_files_removed,
        b.deletion_files_removed,
        b.transaction_files_removed,
    )
    assert a.old_versions == 6 and a.data_files_removed > 0 and a.deletion_files_removed > 0
    assert files_of(ours) == files_of(theirs)
    for uri in (ours, theirs):
        assert lance.dataset(uri).to_table().equals(lance.dataset(many).to_table())
        assert lancelot.dataset(uri, version="kept").count_rows() == lance.dataset(many, version="kept").count_rows()


def test_malformed_manifest_bytes_fall_back_to_parsing(many, path):
    """The kernels refuse bytes they cannot read whole (then the manifest is parsed, and a damaged
    one is reported as before)."""
    name = sorted(os.listdir(os.path.join(many, "_versions")))[0]
    data = open(os.path.join(many, "_versions", name), "rb").read()
    arr = np.frombuffer(data, dtype=np.uint8)
    pos = int.from_bytes(data[-16:-8], "little")
    assert wire.scan_manifest(arr, pos + 4, len(data) - 16, True)[wire.OK] == 1
    assert wire.scan_manifest(arr, pos + 4, len(data) - 17, True)[wire.OK] == 0  # cut short
    assert wire.scan_files(arr, pos + 4, len(data) - 17)[0][wire.F_OK] == 0
    info = history.version_info(data, name, summary=True)
    assert info.summary == history.manifest_summary(lancelot.dataset(many).manifest)


def test_append_reads_the_hint_and_one_manifest_without_listing(many, tmp_path, monkeypatch):
    uri = str(tmp_path / "ds")
    shutil.copytree(many, uri)
    calls = {"list": 0, "manifest reads": 0}
    real_list, real_read = store_mod.ObjectStore.list_names, store_mod.ObjectStore.read

    def list_names(self, prefix):
        calls["list"] += prefix == "_versions"
        return real_list(self, prefix)

    def read(self, p):
        calls["manifest reads"] += p.endswith(".manifest")
        return real_read(self, p)

    monkeypatch.setattr(store_mod.ObjectStore, "list_names", list_names)
    monkeypatch.setattr(store_mod.ObjectStore, "read", read)
    ds = lancelot.write_dataset(table(7, 5000), uri, mode="append")
    assert calls == {"list": 0, "manifest reads": 1}  # (the version hint, not a listing of _versions/)
    monkeypatch.undo()
    again = lancelot.dataset(uri)
    assert ds.version == again.version == 10
    assert ds.manifest == again.manifest
    assert ds.to_table().equals(again.to_table())
    assert lance.dataset(uri).count_rows() == ds.count_rows() == lance.dataset(many).count_rows() + 7


def test_append_on_a_stale_read_commits_on_top_of_the_newer_version(many, tmp_path):
    """What write_dataset read may be stale by the time it commits: creating the manifest fails,
    and the commit lists, checks and builds on the newer version."""
    uri = str(tmp_path / "ds")
    shutil.copytree(many, uri)
    store = store_mod.ObjectStore(uri)
    known = write_mod.listed_versions(store, uri)
    frags = write_mod.write_fragments(table(3, 7000), uri)
    lance.write_dataset(table(4, 8000), uri, mode="append")  # another writer commits version 10
    ds = write_mod.commit_version(uri, "append", fragments=frags, read_version=9, _store=store, _known=known)
    assert ds.version == 11
    got = lance.dataset(uri).to_table(columns=["id"]).column("id").to_pylist()
    assert set(range(7000, 7003)) <= set(got) and set(range(8000, 8004)) <= set(got)
    assert lancelot.dataset(uri).to_table().equals(lance.dataset(uri).to_table())


def test_versions_of_a_dataset_with_v1_manifest_names(tmp_path, path):
    """Manifests named by the V1 scheme (``<version>.manifest``) are listed as before."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"a": [1, 2]}), uri, enable_v2_manifest_paths=False)
    lance.write_dataset(pa.table({"a": [3]}), uri, mode="append")
    assert sorted(os.listdir(os.path.join(uri, "_versions")))[:2] == ["1.manifest", "2.manifest"]
    assert lancelot.dataset(uri).versions() == lance.dataset(uri).versions()
    assert lancelot.write_dataset(pa.table({"a": [4]}), uri, mode="append").version == 3
    assert "3.manifest" in os.listdir(os.path.join(uri, "_versions"))
    assert lance.dataset(uri).to_table().column("a").to_pylist() == [1, 2, 3, 4]


def test_latest_version_through_the_hint_file_or_a_listing(many, tmp_path, monkeypatch):
    """Opening the latest version reads ``latest_version_hint.json`` and the hinted manifest
    (no listing); a stale, wrong or damaged hint falls back to listing ``_versions/``."""
    uri = str(tmp_path / "ds")
    shutil.copytree(many, uri)
    hint = os.path.join(uri, "_versions", "latest_version_hint.json")
    listed = {"n": 0}
    real_list = store_mod.ObjectStore.list_names

    def list_names(self, prefix):
        listed["n"] += prefix == "_versions"
        return real_list(self, prefix)

    monkeypatch.setattr(store_mod.ObjectStore, "list_names", list_names)
    assert lancelot.dataset(uri).version == lance.dataset(uri).version == 9
    assert listed["n"] == 0  # pylance wrote the hint: no listing
    for text, why in (
        ('{"version": 4}', "stale: version 5 exists"),
        ('{"version": 12}', "no such version"),
        ("not json", "damaged"),
        ('{"version": 0}', "no version 0"),
    ):
        with open(hint, "w") as f:
            f.write(text)
        listed["n"] = 0
        ds = lancelot.dataset(uri)
        assert (ds.version, listed["n"]) == (9, 1), why
        assert ds.to_table().equals(lance.dataset(uri).to_table())
    os.remove(hint)
    assert lancelot.dataset(uri).version == 9
    lance.write_dataset(table(3, 9000), uri, mode="append")  # pylance writes the hint again
    listed["n"] = 0
    assert lancelot.dataset(uri).version == 10 and listed["n"] == 0
    assert lancelot.dataset(uri).count_rows() == lance.dataset(uri).count_rows()
