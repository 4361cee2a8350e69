"""The object store under datasets (lancelot/dataset/store.py): paths, reads, writes and the
commit primitive ``put_if_not_exists`` on a local disk, memory:// and S3 (moto, localhost)."""

from __future__ import annotations

import os
import threading
import uuid

import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset import store_files as store_mod
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.store_create import ObjectAlreadyExistsError, UnsafeCommitError
from lancelot.dataset.store_paths import UnsafePathError
from lancelot.errors import CorruptFileError, LanceError
from lancelot.io.storage_options import s3_options


@pytest.fixture(params=["local", "memory", "s3"])
def store(request, tmp_path):
    if request.param == "local":
        return ObjectStore(str(tmp_path / "ds"))
    if request.param == "memory":
        return ObjectStore(f"memory://lancelot-store-{uuid.uuid4().hex}/ds")
    s3 = request.getfixturevalue("s3_dataset")
    return ObjectStore(s3.uri, storage_options=s3.pylance_options())


ESCAPES = [
    "../x",
    "data/../../x",
    "data/..",
    "..",
    "/etc/passwd",
    "s3://other-bucket/x",
    "file:///etc/passwd",
    "memory://elsewhere/x",
    "",
    "a\\..\\b",
    "C:/x",
    "data/x\x00",
]


@pytest.mark.parametrize("bad", ESCAPES)
def test_paths_leaving_the_root_are_refused(store, bad):
    for op in (
        store.read,
        store.exists,
        store.delete,
        store.size,
        store.open_input,
        lambda p: store.put(p, b"x"),
        lambda p: store.put_if_not_exists(p, b"x"),
        lambda p: store.read_range(p, 0, 1),
        store.list if bad else (lambda p: store._rel(p)),
    ):
        with pytest.raises(UnsafePathError) as ei:
            op(bad)
        assert isinstance(ei.value, LanceError)
    assert store.list("") == []  # nothing was written anywhere


def test_relative_paths_are_normalised(store):
    store.put("data/./a.bin", b"abc")
    assert store.read("data//a.bin") == b"abc"
    assert store.list("data") == ["a.bin"]
    assert store.url("data/a.bin") == store.uri + "/data/a.bin"


def test_read_write_list_delete(store):
    assert store.list("_versions") == []
    assert not store.exists("_versions/1.manifest")
    store.put("_versions/1.manifest", b"0123456789")
    store.put("_versions/2.manifest", b"xy")
    store.put("_versions/sub/ignored.txt", b"z")
    assert store.list("_versions") == ["1.manifest", "2.manifest"]  # no directories
    assert store.read("_versions/1.manifest") == b"0123456789"
    assert store.read_range("_versions/1.manifest", 3, 4) == b"3456"
    assert store.read_range("_versions/1.manifest", 10, 0) == b""
    assert store.size("_versions/1.manifest") == 10
    assert store.exists("_versions/1.manifest")
    store.put("_versions/2.manifest", b"replaced")
    assert store.read("_versions/2.manifest") == b"replaced"
    store.delete("_versions/2.manifest")
    store.delete("_versions/2.manifest")  # already gone: no error
    assert store.list("_versions") == ["1.manifest"]
    assert not store.exists("_versions/2.manifest")


def test_missing_and_short_reads_are_clear_errors(store):
    with pytest.raises(FileNotFoundError) as ei:
        store.read("_versions/9.manifest")
    assert isinstance(ei.value, LanceError) and "9.manifest" in str(ei.value)
    with pytest.raises(FileNotFoundError):
        store.open_input("data/none.lance")
    store.put("a.bin", b"abc")
    with pytest.raises(CorruptFileError, match="past the end"):
        store.read_range("a.bin", 2, 5)
    with pytest.raises(LanceError):
        store.read_range("a.bin", -1, 1)


def test_put_if_not_exists_refuses_a_second_create(store):
    store.put_if_not_exists("_versions/1.manifest", b"first")
    with pytest.raises(FileExistsError) as ei:
        store.put_if_not_exists("_versions/1.manifest", b"second")
    assert isinstance(ei.value, ObjectAlreadyExistsError) and isinstance(ei.value, LanceError)
    assert store.read("_versions/1.manifest") == b"first"
    assert store.list("_versions") == ["1.manifest"]  # no temporary file left behind


@pytest.mark.parametrize("rounds", [6])
def test_put_if_not_exists_race_has_exactly_one_winner(store, rounds):
    """Threads race to create the same object: one wins, every other sees FileExistsError,
    and the object holds the winner's bytes whole."""
    n = 8
    for r in range(rounds):
        name = f"_versions/{r}.manifest"
        barrier = threading.Barrier(n)
        results: list = [None] * n

        def attempt(i, name=name, barrier=barrier, results=results):
            payload = bytes([i]) * (1000 + i)
            barrier.wait()
            try:
                store.put_if_not_exists(name, payload)
                results[i] = "won"
            except FileExistsError:
                results[i] = "lost"
            except BaseException as e:  # noqa: BLE001 - reported below
                results[i] = e

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(x in ("won", "lost") for x in results), results
        winners = [i for i, x in enumerate(results) if x == "won"]
        assert len(winners) == 1, results
        assert store.read(name) == bytes([winners[0]]) * (1000 + winners[0])
    assert store.list("_versions") == sorted(f"{r}.manifest" for r in range(rounds))


def test_local_commit_temp_names_never_end_in_manifest(tmp_path, monkeypatch):
    """pylance lists _versions/*.manifest: a half-written temporary must not look like one."""
    st = ObjectStore(str(tmp_path))
    seen = []
    monkeypatch.setattr(store_mod, "fault_hook", lambda point: seen.append((point, os.listdir(tmp_path / "_v"))))
    st.put_if_not_exists("_v/00001.manifest", b"m")
    st.put("_v/hint.json", b"{}")
    points = dict(seen)
    assert set(points) >= {"temp:written", "create:before", "create:after", "put:before", "put:after"}
    temps = [n for _, names in seen for n in names if n not in ("00001.manifest", "hint.json")]
    assert temps and not any(n.endswith(".manifest") for n in temps)
    assert sorted(os.listdir(tmp_path / "_v")) == ["00001.manifest", "hint.json"]


def test_store_without_atomic_create_is_refused():
    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    class PlainStore(MemoryFileSystem):  # a store with plain puts only
        protocol = "plainstore"
        store: dict = {}
        pseudo_dirs = [""]

    fsspec.register_implementation("plainstore", PlainStore, clobber=True)
    st = ObjectStore("plainstore://bucket/ds")
    st.put("data/a.bin", b"ok")  # plain writes and reads work
    assert st.read("data/a.bin") == b"ok"
    with pytest.raises(UnsafeCommitError, match="no atomic create"):
        st.put_if_not_exists("_versions/1.manifest", b"m")
    assert not st.exists("_versions/1.manifest")


def test_pylance_style_s3_options_are_mapped():
    opts = s3_options(
        {
            "aws_endpoint": "http://127.0.0.1:9",
            "allow_http": "true",
            "aws_region": "eu-west-1",
            "aws_access_key_id": "AK",
            "aws_secret_access_key": "SK",
            "aws_session_token": "T",
            "max_concurrency": 4,
        }
    )
    assert opts == {
        "endpoint_url": "http://127.0.0.1:9",
        "key": "AK",
        "secret": "SK",
        "token": "T",
        "max_concurrency": 4,
        "client_kwargs": {"region_name": "eu-west-1"},
        "config_kwargs": {"max_pool_connections": 64},  # one reader round (64 requests) at once, not waves of 10
    }
    pool = {"config_kwargs": {"max_pool_connections": 64}}
    assert s3_options({"endpoint_url": "u", "key": "k"}) == {"endpoint_url": "u", "key": "k", **pool}
    mine = {"config_kwargs": {"max_pool_connections": 5, "retries": {"max_attempts": 2}}}
    assert s3_options(mine) == mine


def test_s3_options_in_both_spellings_reach_the_endpoint(s3_dataset):  # noqa: F811
    a = ObjectStore(s3_dataset.uri, storage_options=s3_dataset.lancelot_options())
    b = ObjectStore(s3_dataset.uri, storage_options=s3_dataset.pylance_options())
    a.put_if_not_exists("x.bin", b"1")
    with pytest.raises(FileExistsError):
        b.put_if_not_exists("x.bin", b"2")
    assert b.read("x.bin") == b"1"


def _table(n=5000):
    return pa.table({"i": pa.array(range(n), pa.int64()), "s": pa.array([f"v{i % 97}" for i in range(n)])})


def test_open_output_and_open_input_round_trip_a_lance_file(store):
    t = _table()
    w = store.open_output("data/f1.lance", t.schema, version="2.1")
    w.write(t)
    assert "f1.lance" not in store.list("data")  # nothing at the name before close
    w.close()
    assert [n for n in store.list("data") if not n.startswith(".")] == ["f1.lance"]
    assert w.file_size == store.size("data/f1.lance") > 0
    src = store.open_input("data/f1.lance", size=w.file_size)
    f = lancelot.LanceFile(src)
    assert f.read().equals(t)
    assert f.take([0, 4999, 17]).column("i").to_pylist() == [0, 4999, 17]


def test_open_output_abort_leaves_nothing(store, tmp_path):
    t = _table(10)
    w = store.open_output("data/f2.lance", t.schema)
    w.write(t)
    w.abort()
    assert store.list("data") == []
    if store.is_local:
        d = os.path.join(store.root, "data")
        assert not os.path.exists(d) or os.listdir(d) == []


def test_file_urls_and_relative_roots_are_local(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a = ObjectStore(f"file://{tmp_path}/ds")
    b = ObjectStore("ds")
    assert a.is_local and b.is_local and a.root == b.root == str(tmp_path / "ds")
    a.put_if_not_exists("_versions/1.manifest", b"m")
    with pytest.raises(FileExistsError):
        b.put_if_not_exists("_versions/1.manifest", b"n")
    assert b.read("_versions/1.manifest") == b"m"
