"""pylance's commit options and the operations ``LanceDataset.commit`` takes beyond the common ones:
commit messages and transaction properties, a commit lock, detached commits, a caller's Rewrite, and
the conflict error's class. Each test runs with pylance and with lancelot (``lib``): pylance is the
oracle, and what either writes is read back by the other."""

from __future__ import annotations

from contextlib import contextmanager

import lance
import lance.commit
import pyarrow as pa
import pytest

import lancelot
import lancelot.commit
from lancelot.dataset import Transaction
from lancelot.errors import LanceError
from tests.dataset.helpers import API, LIBS, index_section

OTHER = {"pylance": lancelot, "lancelot": lance}
T = pa.table({"id": pa.array(range(10), pa.int64()), "s": [f"r{i}" for i in range(10)]})


def _props(path: str, version: int) -> tuple[dict[str, str], dict[str, str]]:
    """The version's transaction properties as pylance and as lancelot read them."""
    theirs = lance.dataset(path).read_transaction(version).transaction_properties
    ours = lancelot.dataset(path).read_transaction(version).transaction_properties
    return dict(theirs or {}), dict(ours or {})


@pytest.mark.parametrize("lib", LIBS)
def test_commit_message_and_properties(tmp_path, lib) -> None:
    mod, cls, ops, _, frag = API[lib]
    p = str(tmp_path / "d")
    ds = mod.write_dataset(T, p, commit_message="first", transaction_properties={"k": "v"})
    ds.insert(T, transaction_properties={"x": "y", "__lance_commit_message": "lost"}, commit_message="second")
    mod.write_dataset(T, p, mode="append")
    ds = cls.commit(p, ops.Append([frag.create(p, T)]), read_version=3, commit_message="fourth")
    want = [
        {"__lance_commit_message": "first", "k": "v"},
        {"__lance_commit_message": "second", "x": "y"},
        {},
        {"__lance_commit_message": "fourth"},
    ]
    for v, props in enumerate(want, 1):
        assert _props(p, v) == (props, props)
    txn = lance.dataset(p).read_transaction(4) if lib == "pylance" else ds.read_transaction(4)
    with pytest.raises(ValueError, match="commit_message is not supported"):
        cls.commit(p, txn, commit_message="no")
    with pytest.raises(TypeError, match="commit_lock must be a function"):
        cls.commit(p, ops.Append([]), read_version=4, commit_lock=3)
    assert lance.dataset(p).version == 4 and lance.dataset(p).validate() is None


@pytest.mark.parametrize("lib", LIBS)
def test_commit_lock(tmp_path, lib) -> None:
    mod, cls, ops, _, frag = API[lib]
    p = str(tmp_path / "d")
    calls: list[tuple[str, int, object]] = []

    @contextmanager
    def lock(version: int):
        calls.append(("enter", version, None))
        try:
            yield
        except BaseException as e:
            calls.append(("failed", version, type(e)))
            raise
        calls.append(("exit", version, None))

    mod.write_dataset(T, p, commit_lock=lock)
    cls.commit(p, ops.Append([frag.create(p, T)]), read_version=1, commit_lock=lock)
    mod.write_dataset(T, p, mode="overwrite", commit_lock=lock)
    assert calls == [("enter", v, None) if i % 2 == 0 else ("exit", v, None) for v in (1, 2, 3) for i in (0, 1)]
    assert OTHER[lib].dataset(p).count_rows() == 10
    # a dataset opened with a lock commits every change under it, inserts too
    taken: list[int] = []

    @contextmanager
    def lock2(version: int):
        taken.append(version)
        yield

    ds = mod.dataset(p, commit_lock=lock2)
    ds.insert(T)
    ds.delete("id < 0")
    ds.update({"s": "'x'"}, where="id = 1")
    assert taken == [4, 5, 6] and OTHER[lib].dataset(p).count_rows() == 20


@pytest.mark.parametrize("lib", LIBS)
def test_detached_commit(tmp_path, lib) -> None:
    mod, cls, ops, _, frag = API[lib]
    p = str(tmp_path / "d")
    mod.write_dataset(T, p)
    d = cls.commit(p, ops.Append([frag.create(p, T.slice(0, 3))]), read_version=1, detached=True)
    assert d.version >= 1 << 63 and d.count_rows() == 13
    for other in (lance, lancelot):
        ds = other.dataset(p)
        assert ds.version == 1 and ds.latest_version == 1 and [v["version"] for v in ds.versions()] == [1]
        at = ds.checkout_version(d.version)
        assert at.version == d.version and at.to_table().sort_by("id") == pa.concat_tables([T, T.slice(0, 3)]).sort_by(
            "id"
        )
    assert lance.dataset(p).checkout_version(d.version).validate() is None
    # an attached commit afterwards is version 2, unaffected by the detached one
    v2 = cls.commit(p, ops.Append([frag.create(p, T.slice(0, 1))]), read_version=1)
    assert v2.version == 2 and OTHER[lib].dataset(p).count_rows() == 11


def _fragments(path: str) -> list[tuple[int, int, bool]]:
    return [
        (f.fragment_id, f.metadata.physical_rows, f.metadata.deletion_file is not None)
        for f in lance.dataset(path).get_fragments()
    ]


@pytest.mark.parametrize("stable", [False, True])
def test_rewrite_equals_pylance(tmp_path, stable) -> None:
    """A caller's compaction (fragments 0 and 1, one with a deletion, rewritten into one; fragment 2
    kept), committed by lancelot, reads as pylance's own commit of the same Rewrite on a twin (the
    index not named in ``rewritten_indices`` kept as it was). With stable row ids, new fragments
    without row ids are refused by both (an OSError), nothing committed."""
    results = []
    for who in ("pylance", "lancelot"):
        mod, cls, ops, _, frag = API[who]
        p = str(tmp_path / who)
        lance.write_dataset(T, p, max_rows_per_file=4, enable_stable_row_ids=stable)
        lance.dataset(p).delete("id = 1")
        lance.dataset(p).create_scalar_index("id", "BTREE")
        ds = lance.dataset(p)
        old = [f.metadata for f in ds.get_fragments()][:2]
        new = lance.fragment.LanceFragment.create(p, pa.concat_tables([f.to_table() for f in ds.get_fragments()[:2]]))
        op = ops.Rewrite([ops.RewriteGroup(old, [new])], [])
        if stable:
            with pytest.raises(OSError, match="row ids"):
                cls.commit(p, op, read_version=ds.version)
            assert lance.dataset(p).version == ds.version
            continue
        out = cls.commit(p, op, read_version=ds.version)
        assert out.version == ds.version + 1
        assert lance.dataset(p).validate() is None
        txn = OTHER[who].dataset(p).read_transaction(out.version)
        assert type(txn.operation).__name__ == "Rewrite" and len(txn.operation.groups) == 1
        results.append((_fragments(p), lance.dataset(p).to_table(), index_section(p)))
        assert lancelot.dataset(p).to_table() == results[-1][1]
    if results:
        assert results[0] == results[1]


@pytest.mark.parametrize("lib", LIBS)
def test_commit_conflict_error_is_oserror(tmp_path, lib) -> None:
    """pylance's CommitConflictError is an OSError with ``retryable``: so is lancelot's."""
    mod, cls, ops, _, frag = API[lib]
    p = str(tmp_path / "d")
    mod.write_dataset(T, p)
    mod.write_dataset(T, p, mode="append")
    with pytest.raises(OSError) as info:
        cls.commit(p, ops.Overwrite(T.schema, [frag.create(p, T)]), read_version=1, max_retries=0)
    assert type(info.value).__name__ == "CommitConflictError" and isinstance(info.value.retryable, bool)
    if lib == "lancelot":
        assert isinstance(info.value, LanceError) and isinstance(info.value, lancelot.commit.CommitConflictError)
    else:
        assert isinstance(info.value, lance.commit.CommitConflictError)
    assert OTHER[lib].dataset(p).version == 2


@pytest.mark.parametrize("lib", LIBS)
def test_shallow_clone(tmp_path, lib) -> None:
    """A shallow clone (by commit of a Clone operation, and by ``shallow_clone`` of a tag) reads in both
    libraries as the source's version, keeps the source's version number, copies no data file, and
    takes appends of the other library in its own root."""
    mod, cls, ops, _, frag = API[lib]
    src = str(tmp_path / "src")
    lance.write_dataset(T, src, max_rows_per_file=4)
    lance.dataset(src).delete("id < 2")
    lance.dataset(src).tags.create("t", 1)
    c1 = cls.commit(str(tmp_path / "c1"), ops.Clone(True, None, 2, src, None), read_version=0)
    c2 = mod.dataset(src).shallow_clone(str(tmp_path / "c2"), "t")
    for path, version, want in ((tmp_path / "c1", 2, T.slice(2)), (tmp_path / "c2", 1, T)):
        for reader in (lance, lancelot):
            ds = reader.dataset(str(path))
            assert ds.version == version and ds.to_table().sort_by("id") == want
        assert lance.dataset(str(path)).validate() is None
        assert not (path / "data").exists()
        txn = OTHER[lib].dataset(str(path)).read_transaction(version).operation
        assert (type(txn).__name__, txn.is_shallow, txn.ref_version, txn.ref_path) == ("Clone", True, version, src)
    assert c1.version == 2 and c2.version == 1
    OTHER[lib].write_dataset(T.slice(0, 1), str(tmp_path / "c1"), mode="append")
    assert lance.dataset(str(tmp_path / "c1")).count_rows() == 9 and lancelot.dataset(str(tmp_path / "c1")).version == 3
    assert lance.dataset(src).count_rows() == 8 and lance.dataset(str(tmp_path / "c1")).validate() is None


@pytest.mark.parametrize("lib", LIBS)
def test_transaction_keeps_uuid_and_v1_paths(tmp_path, lib) -> None:
    """A committed Append ``Transaction`` keeps its uuid and properties; ``enable_v2_manifest_paths=False``
    names a new dataset's manifests by version; ``data_obj`` is write_dataset's keyword."""
    mod, cls, ops, _, frag = API[lib]
    txn_cls = lance.Transaction if lib == "pylance" else Transaction
    p = str(tmp_path / "d")
    mod.write_dataset(data_obj=T, uri=p, enable_v2_manifest_paths=False)
    u = "11111111-2222-3333-4444-555555555555"
    cls.commit(p, txn_cls(1, ops.Append([frag.create(p, T)]), uuid=u, transaction_properties={"p": "q"}))
    for reader in (lance, lancelot):
        txn = reader.dataset(p).read_transaction(2)
        assert (txn.uuid, txn.transaction_properties, txn.read_version) == (u, {"p": "q"}, 1)
    assert sorted(f.name for f in (tmp_path / "d" / "_versions").glob("*.manifest")) == ["1.manifest", "2.manifest"]


def test_rewrite_with_rewritten_index(tmp_path) -> None:
    """A Rewrite naming a rewritten index (its files copied under the new uuid, as a caller's own
    remap would write them): lancelot moves the index's fragment bitmap and uuid as pylance does
    (pylance 14.0.2 puts the new fragments' ids as given, here 0, into the bitmap: so does lancelot)."""
    import shutil
    import uuid

    from lancelot.format.pb import table_pb2

    results = []
    for who in ("pylance", "lancelot"):
        mod, cls, ops, _, frag = API[who]
        p = str(tmp_path / who)
        lance.write_dataset(T, p, max_rows_per_file=4)
        lance.dataset(p).create_scalar_index("id", "BTREE")
        ds = lance.dataset(p)
        sec = table_pb2.IndexSection()
        sec.ParseFromString(lancelot.dataset(p).manifest_file.index_section)
        idx = sec.indices[0]
        old_id, new_id = str(uuid.UUID(bytes=bytes(idx.uuid.uuid))), str(uuid.uuid4())
        shutil.copytree(f"{p}/_indices/{old_id}", f"{p}/_indices/{new_id}")
        rewritten = ops.RewrittenIndex(
            old_id, new_id, idx.index_details.type_url, bytes(idx.index_details.value), int(idx.index_version)
        )
        old = [f.metadata for f in ds.get_fragments()][:2]
        new = lance.fragment.LanceFragment.create(p, pa.concat_tables([f.to_table() for f in ds.get_fragments()[:2]]))
        cls.commit(p, ops.Rewrite([ops.RewriteGroup(old, [new])], [rewritten]), read_version=ds.version)
        after = lance.dataset(p)
        assert after.validate() is None and [i.uuid for i in after.describe_indices()[0].segments] == [new_id]
        results.append((_fragments(p), index_section(p), after.to_table(filter="id = 5").num_rows))
    assert results[0] == results[1]


BUILTINS = (ValueError, OSError, KeyError, IndexError, TypeError, FileNotFoundError, NotImplementedError)
BAD_INPUT = {
    "missing dataset": lambda m, p: m.dataset(p + "-nope"),
    "bad version": lambda m, p: m.dataset(p, version=9),
    "checkout bad version": lambda m, p: m.dataset(p).checkout_version(9),
    "bad column": lambda m, p: m.dataset(p).to_table(columns=["zz"]),
    "sql error": lambda m, p: m.dataset(p).to_table(filter="id >"),
    "update bad column": lambda m, p: m.dataset(p).update({"zz": "1"}),
    "duplicate keys": lambda m, p: (
        m.dataset(p)
        .merge_insert("id")
        .when_matched_update_all()
        .execute(pa.table({"id": pa.array([1, 1], pa.int64()), "s": ["x", "y"]}))
    ),
    "restore missing": lambda m, p: m.LanceDataset.commit(p, m.LanceOperation.Restore(99)),
    "append read version missing": lambda m, p: m.LanceDataset.commit(p, m.LanceOperation.Append([]), read_version=99),
    "read version missing": lambda m, p: m.LanceDataset.commit(
        p, m.LanceOperation.Delete([], [], "x"), read_version=99
    ),
}


@pytest.mark.parametrize("case", BAD_INPUT)
def test_error_classes_match_pylance(tmp_path, case) -> None:
    """On the same bad input, lancelot's error is a LanceError and every builtin class pylance's is."""
    p = str(tmp_path / "d")
    lance.write_dataset(T, p)
    errors = []
    for mod in (lance, lancelot):
        with pytest.raises(Exception) as info:
            BAD_INPUT[case](mod, p)
        errors.append(info.value)
    theirs, ours = errors
    assert isinstance(ours, LanceError)
    assert [isinstance(ours, b) for b in BUILTINS if isinstance(theirs, b)] == [True] * sum(
        isinstance(theirs, b) for b in BUILTINS
    )
    assert lance.dataset(p).version == 1


@pytest.mark.parametrize("lib", LIBS)
def test_use_legacy_format_false_is_stable(tmp_path, lib) -> None:
    """pylance's deprecated ``use_legacy_format=False``: the stable data storage version, with a warning."""
    mod = LIBS[lib]
    with pytest.warns(DeprecationWarning, match="use_legacy_format is deprecated"):
        mod.write_dataset(T, str(tmp_path / "d"), use_legacy_format=False, data_cache_bytes=1 << 20)
    stable = lance.write_dataset(T, str(tmp_path / "s"), data_storage_version="stable").data_storage_version
    assert lance.dataset(str(tmp_path / "d")).data_storage_version == stable


@pytest.mark.parametrize("lib", LIBS)
def test_deep_clone(tmp_path, lib) -> None:
    """A deep clone copies the version's data, deletion and index files: it reads as the source's
    version in both libraries after the source is gone; committing a deep Clone directly is refused."""
    import shutil

    mod, cls, ops, _, frag = API[lib]
    src = str(tmp_path / "src")
    mod.write_dataset(T, src, max_rows_per_file=5)
    mod.dataset(src).delete("id < 2")
    lance.dataset(src).create_scalar_index("id", "BTREE")
    mod.write_dataset(T.slice(0, 1), src, mode="append")
    clone = mod.dataset(src).deep_clone(str(tmp_path / "c"), 3)
    assert clone.version == 3
    with pytest.raises(OSError, match="deep Clone cannot be committed directly"):
        cls.commit(str(tmp_path / "c2"), ops.Clone(False, None, 3, src, None), read_version=0)
    shutil.rmtree(src)
    for reader in (lance, lancelot):
        ds = reader.dataset(str(tmp_path / "c"))
        assert ds.version == 3 and ds.to_table().sort_by("id") == T.slice(2)
        txn = ds.read_transaction(3)
        assert (txn.operation.is_shallow, txn.operation.ref_version, txn.read_version) == (False, 3, 3)
    theirs = lance.dataset(str(tmp_path / "c"))
    assert theirs.validate() is None and theirs.to_table(filter="id = 5").num_rows == 1
    assert [i.name for i in theirs.describe_indices()] == ["id_idx"]


@pytest.mark.parametrize("lib", LIBS)
def test_append_read_at_version_zero(tmp_path, lib) -> None:
    """An Append with ``read_version=0`` is checked against nothing (pylance's rule): it lands after an
    overwrite, where one read at version 1 is refused."""
    mod, cls, ops, _, frag = API[lib]
    p = str(tmp_path / "d")
    mod.write_dataset(T, p)
    mod.write_dataset(T, p, mode="overwrite")
    with pytest.raises(OSError, match="(?i)overwrite"):
        cls.commit(p, ops.Append([frag.create(p, T)]), read_version=1)
    ds = cls.commit(p, ops.Append([frag.create(p, T)]), read_version=0)
    assert ds.version == 3 and OTHER[lib].dataset(p).count_rows() == 20


@pytest.mark.parametrize("lib", [lance, lancelot], ids=["pylance", "lancelot"])
def test_commit_timeout(tmp_path, lib) -> None:
    """pylance's ``commit_timeout``: the whole commit, retries included, within it (1µs: lancelot's
    TimeoutError before anything is committed; pylance's own says "Commit timed out after 1µs" when it
    loses that race); None: no limit; zero and negative refused; not a timedelta: TypeError."""
    import datetime as dt

    p = str(tmp_path / "d")
    lance.write_dataset(pa.table({"a": [1]}), p)
    frags = lance.fragment.write_fragments(pa.table({"a": [2]}), p)
    op = lance.LanceOperation.Append(frags)
    if lib is lancelot:  # (pylance's 1µs race with its own commit goes either way, and may land after)
        with pytest.raises(TimeoutError, match="timed out after 1µs"):
            lib.LanceDataset.commit(p, op, read_version=1, commit_timeout=dt.timedelta(microseconds=1))
        assert lance.dataset(p).version == 1
    with pytest.raises(OSError, match="non-zero"):
        lib.LanceDataset.commit(p, op, read_version=1, commit_timeout=dt.timedelta(0))
    with pytest.raises(ValueError, match="negative timedelta"):
        lib.LanceDataset.commit(p, op, read_version=1, commit_timeout=dt.timedelta(seconds=-1))
    with pytest.raises(TypeError, match="timedelta"):
        lib.LanceDataset.commit(p, op, read_version=1, commit_timeout=5)
    v = lance.dataset(p).version
    assert lib.LanceDataset.commit(p, op, read_version=v, commit_timeout=None).version == v + 1
    assert lib.LanceDataset.commit(p, op, read_version=v + 1, commit_timeout=dt.timedelta(seconds=60)).version == v + 2
    assert lance.dataset(p).count_rows() == v + 2
