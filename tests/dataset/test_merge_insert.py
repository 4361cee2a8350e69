"""``LanceDataset.merge_insert`` against pylance 14.0.2: one Update transaction per execute,
pylance's stats, rows as pylance leaves them (updated rows keep their stable row ids), sources
of every kind, ambiguous matches and bad input refused with nothing written."""

from __future__ import annotations

import os

import lance
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from tests.dataset.helpers import (
    VERSIONS,
    assert_same_row_versions,
    assert_twins,
    files_of,
    spawn_worker,
    table,
    twins,
    wait_ready,
)


def _src(ids, tag: str = "u") -> pa.Table:
    t = table(len(ids))
    a = pa.array(ids, pa.int64())
    return (
        t.set_column(0, "id", a)
        .set_column(1, "s", pa.array([f"{tag}{i}" for i in ids]))
        .set_column(2, "x", pc.multiply(pc.cast(a, pa.float64()), -1.0))
    )


def _steps(lib):
    """(builder -> builder, source) pairs; the same for both libraries."""
    return [
        (lambda b: b.when_matched_update_all().when_not_matched_insert_all(), _src([3, 4, 20, 33, 50, 51])),
        (lambda b: b.when_not_matched_insert_all(), _src([0, 52, 53], "i")),
        (lambda b: b.when_not_matched_insert_all(), _src([0, 1], "n")),  # nothing new: still a version
        (lambda b: b.when_matched_update_all().when_not_matched_insert_all(), _src([5, 60]).select(["id", "s", "st"])),
        (lambda b: b.when_matched_delete(), _src([7, 8, 61])),
        (
            lambda b: b.when_matched_update_all().when_not_matched_by_source_delete("id > 35 AND id < 50"),
            _src([9]),
        ),
        (lambda b: b.when_matched_update_all("source.x < target.x"), _src([10, 11, 12])),
        (lambda b: b.when_not_matched_by_source_delete(), _src(list(range(0, 30)))),
    ]


def _run(theirs: str, ours: str, n: int | None = None) -> None:
    lt, lo = lance.dataset(theirs), lancelot.dataset(ours)
    for (conf_t, src_t), (conf_o, src_o) in list(zip(_steps("lance"), _steps("lancelot")))[:n]:
        expected = conf_t(lt.merge_insert("id")).execute(src_t)
        got = conf_o(lo.merge_insert("id")).execute(src_o)
        assert got == expected
        assert lo.version == lt.version


@pytest.mark.parametrize("version", VERSIONS)
def test_merge_insert_twins(tmp_path, version):
    theirs, ours = twins(tmp_path, table(), version)
    _run(theirs, ours)
    assert_twins(theirs, ours)


def test_merge_insert_keeps_stable_row_ids(tmp_path):
    theirs, ours = twins(tmp_path, table(), stable=True)
    _run(theirs, ours)
    assert_twins(theirs, ours, row_ids=True)
    assert_same_row_versions(theirs, ours)


def test_merge_insert_alternating_with_pylance(tmp_path):
    theirs, ours = twins(tmp_path, table(), "2.1", stable=True)
    lt = lance.dataset(theirs)
    for i, ((conf, src), (conf_o, src_o)) in enumerate(zip(_steps("lance"), _steps("lancelot"))):
        conf(lt.merge_insert("id")).execute(src)
        ds = lance.dataset(ours) if i % 2 else lancelot.dataset(ours)
        conf_o(ds.merge_insert("id")).execute(src_o)
    assert_twins(theirs, ours, row_ids=True)


def test_merge_insert_transaction_is_pylance_s(twin_paths):
    _, ours = twin_paths
    ds = lancelot.dataset(ours)
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(_src([3, 4, 100]))
    from lancelot.dataset.commit import list_versions, load_manifest, load_transaction

    d = lancelot.dataset(ours)
    t = load_transaction(d.store, load_manifest(d.store, d.uri, list_versions(d.store, d.uri), 2))
    assert t.WhichOneof("operation") == "update" and t.read_version == 1
    assert [f.id for f in t.update.updated_fragments] == [0]
    assert [f.physical_rows for f in t.update.new_fragments] == [3]
    top = [f.id for f in d.manifest.fields if f.parent_id == -1]
    assert list(t.update.fields_for_preserving_frag_bitmap) == top


@pytest.mark.parametrize("kind", ["reader", "batches", "pandas", "dataset"])
def test_merge_insert_sources(twin_paths, tmp_path, kind):
    theirs, ours = twin_paths
    src = _src([1, 2, 70, 71])
    data = {
        "reader": pa.RecordBatchReader.from_batches(src.schema, src.to_batches(max_chunksize=1)),
        "batches": src.to_batches(max_chunksize=3),
        "pandas": None,
        "dataset": lancelot.write_dataset(src, str(tmp_path / "src")),
    }[kind]
    if kind == "pandas":
        src = src.drop_columns(["st"])
        data = src.to_pandas()
        assert isinstance(data, pd.DataFrame)
    expected = lance.dataset(theirs).merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    expected = expected.execute(src)
    got = lancelot.dataset(ours).merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    assert got.execute(data) == expected == {"num_inserted_rows": 2, "num_updated_rows": 2, "num_deleted_rows": 0}
    assert_twins(theirs, ours)


# -- ported from the reference's python/python/tests/test_dataset.py (facts, not code) ------------


def _thousand(tmp_path):
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("c", pa.int64())], metadata={"foo": "bar"})
    n = 1000
    t = pa.table({"a": range(n), "b": [1] * n, "c": [x % 2 for x in range(n)]}, schema=schema)
    new = pa.table({"a": range(300, 300 + n), "b": [2] * n, "c": [0] * n}, schema=schema)
    return t, new


@pytest.mark.parametrize(
    "configure, stats, rows, new_rows",
    [
        (lambda b: b.when_not_matched_insert_all(), (300, 0, 0), 1300, 300),
        (lambda b: b.when_matched_update_all(), (0, 700, 0), 1000, 700),
        (lambda b: b.when_not_matched_insert_all().when_matched_update_all(), (300, 700, 0), 1300, 1000),
        (
            lambda b: b.when_not_matched_insert_all().when_matched_update_all("target.c == source.c"),
            (300, 350, 0),
            1300,
            650,
        ),
        (lambda b: b.when_not_matched_by_source_delete(), (0, 0, 300), 700, 0),
        (
            lambda b: b.when_not_matched_by_source_delete("a < 100").when_not_matched_insert_all(),
            (300, 0, 100),
            1200,
            300,
        ),
    ],
)
def test_merge_insert_ported(tmp_path, configure, stats, rows, new_rows):
    """test_merge_insert: each configuration's stats and rows (on a fresh copy)."""
    t, new = _thousand(tmp_path)
    lance.write_dataset(t, tmp_path / "d", max_rows_per_file=100)
    ds = lancelot.dataset(tmp_path / "d")
    r = configure(ds.merge_insert("a").conflict_retries(0)).execute(new)
    assert (r["num_inserted_rows"], r["num_updated_rows"], r["num_deleted_rows"]) == stats
    got = lance.dataset(tmp_path / "d")
    got.validate()
    assert got.count_rows() == rows
    assert got.to_table().filter(pc.field("b") == 2).num_rows == new_rows


def test_merge_insert_without_action_ported(tmp_path):
    t, new = _thousand(tmp_path)
    lance.write_dataset(t, tmp_path / "d")
    with pytest.raises(ValueError):
        lancelot.dataset(tmp_path / "d").merge_insert("a").execute(new)


def test_merge_insert_subcols_ported(tmp_path):
    """test_merge_insert_subcols: a source with some columns updates those, keeps the others;
    inserted rows get nulls (pylance 14 rewrites the matched rows into a new fragment)."""
    lance.write_dataset(
        pa.table({"a": range(10), "b": range(10), "c": range(10, 20)}), tmp_path / "d", max_rows_per_file=5
    )
    ds = lancelot.dataset(tmp_path / "d")
    ds.merge_insert("a").when_matched_update_all().execute(pa.table({"a": range(3, 5), "b": range(20, 22)}))
    expected = pa.table({"a": range(10), "b": [0, 1, 2, 20, 21, 5, 6, 7, 8, 9], "c": range(10, 20)})
    assert ds.to_table().sort_by("a") == expected
    ds.merge_insert("a").when_not_matched_insert_all().when_matched_update_all().execute(
        pa.table({"a": range(9, 12), "b": range(30, 33)})
    )
    expected = pa.table(
        {"a": range(12), "b": [0, 1, 2, 20, 21, 5, 6, 7, 8, 30, 31, 32], "c": list(range(10, 20)) + [None] * 2}
    )
    assert lance.dataset(tmp_path / "d").to_table().sort_by("a") == expected


def test_merge_insert_conditional_upsert_ported(tmp_path):
    vec = pa.list_(pa.float32())
    t = pa.table({"id": [1, 2, 3, 4, 5], "txNumber": [1, 1, 2, 2, 3], "vector": pa.array([[1.0, 1.0]] * 5, vec)})
    lance.write_dataset(t, tmp_path / "d")
    ds = lancelot.dataset(tmp_path / "d")
    new = pa.table({"id": [1, 2, 3, 4, 5], "txNumber": [1, 2, 1, 2, 5], "vector": pa.array([[2.0, 2.0]] * 5, vec)})
    r = ds.merge_insert("id").when_matched_update_all("target.txNumber < source.txNumber").execute(new)
    assert r == {"num_inserted_rows": 0, "num_updated_rows": 2, "num_deleted_rows": 0}
    expected = pa.table(
        {
            "id": [1, 2, 3, 4, 5],
            "txNumber": [1, 2, 2, 2, 5],
            "vector": pa.array([[1.0, 1.0], [2.0, 2.0], [1.0, 1.0], [1.0, 1.0], [2.0, 2.0]], vec),
        }
    )
    assert ds.to_table().sort_by("id") == expected
    none = new.set_column(1, "txNumber", pa.array([0] * 5, pa.int64()))
    r = ds.merge_insert("id").when_matched_update_all("target.txNumber < source.txNumber").execute(none)
    assert r == {"num_inserted_rows": 0, "num_updated_rows": 0, "num_deleted_rows": 0}


def test_merge_insert_source_is_dataset_ported(tmp_path):
    n = 1000
    lance.write_dataset(pa.table({"a": range(n), "b": [1] * n}), tmp_path / "d", max_rows_per_file=100)
    new = lance.write_dataset(pa.table({"a": range(300, 300 + n), "b": [2] * n}), tmp_path / "d2", max_rows_per_file=80)
    ds = lancelot.dataset(tmp_path / "d")
    r = ds.merge_insert("a").when_not_matched_insert_all().execute(new.to_batches(), schema=new.schema)
    assert r == {"num_inserted_rows": 300, "num_updated_rows": 0, "num_deleted_rows": 0}
    assert ds.count_rows() == 1300 and ds.count_rows(pc.field("b") == 2) == 300


def test_merge_insert_multiple_keys_ported(tmp_path):
    n = 1000
    lance.write_dataset(
        pa.table({"a": range(n), "b": [1] * n, "c": [i % 2 for i in range(n)]}), tmp_path / "d", max_rows_per_file=100
    )
    ds = lancelot.dataset(tmp_path / "d")
    new = pa.table({"a": range(300, 300 + n), "b": [2] * n, "c": [0] * n})
    r = ds.merge_insert(["a", "c"]).when_matched_update_all().execute(new)
    assert r == {"num_inserted_rows": 0, "num_updated_rows": 350, "num_deleted_rows": 0}
    assert lance.dataset(tmp_path / "d").to_table().filter(pc.field("b") == 2).num_rows == 350


def test_merge_insert_vector_column_ported(tmp_path):
    vec = pa.list_(pa.float32(), 3)
    lance.write_dataset(pa.table({"vec": pa.array([[1, 2, 3], [4, 5, 6]], vec), "key": [1, 2]}), tmp_path / "d")
    ds = lancelot.dataset(tmp_path / "d")
    new = pa.table({"vec": pa.array([[7, 8, 9], [10, 11, 12]], vec), "key": [2, 3]})
    r = ds.merge_insert(["key"]).when_not_matched_insert_all().when_matched_update_all().execute(new)
    assert r == {"num_inserted_rows": 1, "num_updated_rows": 1, "num_deleted_rows": 0}
    expected = pa.table({"vec": pa.array([[1, 2, 3], [7, 8, 9], [10, 11, 12]], vec), "key": [1, 2, 3]})
    assert lance.dataset(tmp_path / "d").to_table().sort_by("key") == expected


def test_merge_insert_when_matched_fail_ported(tmp_path):
    lance.write_dataset(pa.table({"id": [1, 2, 3, 4, 5], "val": [10, 20, 30, 40, 50]}), tmp_path / "d")
    ds = lancelot.dataset(tmp_path / "d")
    r = (
        ds.merge_insert("id")
        .when_matched_fail()
        .when_not_matched_insert_all()
        .execute(pa.table({"id": [6, 7, 8], "val": [60, 70, 80]}))
    )
    assert r == {"num_inserted_rows": 3, "num_updated_rows": 0, "num_deleted_rows": 0}
    with pytest.raises(OSError, match="id"):
        ds.merge_insert("id").when_matched_fail().when_not_matched_insert_all().execute(
            pa.table({"id": [1, 2, 9], "val": [100, 200, 900]})
        )
    assert lancelot.dataset(tmp_path / "d").version == 2


def test_merge_insert_permissive_nullability_ported(tmp_path):
    target = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("value", pa.int64(), nullable=False)])
    lance.write_dataset(pa.table({"id": [1, 2, 3], "value": [10, 20, 30]}, schema=target), tmp_path / "d")
    ds = lancelot.dataset(tmp_path / "d")
    r = (
        ds.merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(pa.table({"id": [2, 4, 5], "value": [200, 400, 500]}))
    )
    assert (r["num_updated_rows"], r["num_inserted_rows"]) == (1, 2)
    got = lance.dataset(tmp_path / "d").to_table().sort_by("id")
    assert got.equals(pa.table({"id": [1, 2, 3, 4, 5], "value": [10, 200, 30, 400, 500]}, schema=target))


def test_insert_appends_and_moves_the_dataset(twin_paths):
    theirs, ours = twin_paths
    lt, lo = lance.dataset(theirs), lancelot.dataset(ours)
    assert lo.insert(table(5, 100)) is None and lt.insert(table(5, 100)) is None
    assert lo.version == lt.version == 2
    lo.insert(table(3, 200), mode="overwrite")
    lt.insert(table(3, 200), mode="overwrite")
    assert_twins(theirs, ours)


# -- bad input --------------------------------------------------------------------------------------


def _nothing_written(ours: str, before: set[str]) -> None:
    assert lancelot.dataset(ours).version == 1
    assert {f for f in files_of(ours) - before if not f.startswith(("_transactions/", "_deletions/"))} == set()
    lance.dataset(ours).validate()


def test_merge_insert_duplicate_source_keys(twin_paths):
    _, ours = twin_paths
    before = files_of(ours)
    with pytest.raises(OSError, match="(?i)ambiguous merge insert.*id = 4"):
        lancelot.dataset(ours).merge_insert("id").when_matched_update_all().execute(_src([4, 4]))
    with pytest.raises(OSError, match="(?i)ambiguous merge insert"):  # pylance's class and words
        lance.dataset(ours).merge_insert("id").when_matched_update_all().execute(_src([4, 4]))
    _nothing_written(ours, before)
    # duplicates that match nothing are inserted, as pylance does
    r = lancelot.dataset(ours).merge_insert("id").when_not_matched_insert_all().execute(_src([90, 90]))
    assert r["num_inserted_rows"] == 2


def test_merge_insert_unknown_key_column(twin_paths):
    _, ours = twin_paths
    with pytest.raises(ValueError, match="zz"):
        lancelot.dataset(ours).merge_insert("zz")
    with pytest.raises(ValueError):
        lance.dataset(ours).merge_insert("zz").when_matched_update_all().execute(_src([1]))


@pytest.mark.parametrize(
    "src",
    [
        _src([1]).append_column("extra", pa.array([1])),  # a column the dataset lacks
        _src([1]).set_column(0, "id", pa.array([1], pa.int32())),  # another type
        _src([1]).drop_columns(["id"]),  # no key column
    ],
)
def test_merge_insert_mismatched_schema(twin_paths, src):
    _, ours = twin_paths
    before = files_of(ours)
    with pytest.raises(OSError):
        lancelot.dataset(ours).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    with pytest.raises(OSError):
        lance.dataset(ours).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    _nothing_written(ours, before)


def test_merge_insert_bad_condition(twin_paths):
    _, ours = twin_paths
    before = files_of(ours)
    with pytest.raises(OSError):
        lancelot.dataset(ours).merge_insert("id").when_matched_update_all("source.x >").execute(_src([1]))
    _nothing_written(ours, before)


def test_merge_insert_streams_a_large_reader(tmp_path):
    """A reader's batches are spooled, not held: 20k rows in batches of 1000 (half new)."""
    n = 20_000
    lance.write_dataset(pa.table({"id": np.arange(n), "v": np.zeros(n)}), tmp_path / "d", max_rows_per_file=8000)
    ids = np.arange(n // 2, n // 2 + n)

    def batches():
        for a in range(0, n, 1000):
            yield pa.record_batch({"id": ids[a : a + 1000], "v": np.ones(len(ids[a : a + 1000]))})

    r = lancelot.dataset(tmp_path / "d").merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    r = r.execute(pa.RecordBatchReader.from_batches(pa.schema([("id", pa.int64()), ("v", pa.float64())]), batches()))
    assert r == {"num_inserted_rows": n // 2, "num_updated_rows": n // 2, "num_deleted_rows": 0}
    got = lance.dataset(tmp_path / "d")
    got.validate()
    assert got.count_rows() == n + n // 2 and got.count_rows("v = 1") == n


# -- concurrency: processes of both libraries on one dataset -------------------------------------

_WORKER = r"""
import json, sys, time
a = json.loads(sys.argv[1])
import pyarrow as pa
if a["lib"] == "pylance":
    import lance as lib
else:
    import lancelot as lib
    import pyarrow.compute as pc
w, uri = a["w"], a["uri"]
base = w * 1000
def rows(keys, v):
    return pa.table({"key": pa.array(keys, pa.int64()), "v": pa.array([v] * len(keys), pa.int64())})
def ds():
    return lib.dataset(uri)
print("ready", flush=True)
import os
deadline = time.time() + 120
while not os.path.exists(a["go"]) and time.time() < deadline:
    time.sleep(0.001)
if a["lib"] == "pylance":
    lib.write_dataset(rows([base + i for i in range(20)], 0), uri, mode="append")
else:
    lib.write_dataset(rows([base + i for i in range(20)], 0), uri, mode="append")
src = rows([base + i for i in range(5)] + [base + 100 + i for i in range(5)], 1)
ds().merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(src)
ds().update({"v": "v + 10"}, where=f"key >= {base} AND key < {base + 10}")
ds().delete(f"key >= {base + 15} AND key < {base + 20}")
print("done", flush=True)
"""


def test_mixed_processes_append_merge_insert_update_delete(tmp_path):
    """Four processes, two of each library, each appending, upserting, updating and deleting its
    own keys at once: every commit lands (retries rebase or re-run), none is lost or doubled."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"key": pa.array([-1], pa.int64()), "v": pa.array([0], pa.int64())}), uri)
    go = tmp_path / "go"
    procs = []
    for w, lib in enumerate(["lancelot", "pylance", "lancelot", "pylance"], start=1):
        procs.append(spawn_worker(_WORKER, {"lib": lib, "w": w, "uri": uri, "go": str(go)}, ready=False))
    for p in procs:  # all imported: then they start together
        wait_ready(p)
    go.touch()
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0 and "done" in out, err[-3000:]
    expected = {-1: 0}
    for w in range(1, 5):
        b = w * 1000
        expected |= {b + i: 11 for i in range(5)} | {b + i: 10 for i in range(5, 10)}
        expected |= {b + i: 0 for i in range(10, 15)} | {b + 100 + i: 1 for i in range(5)}
    pl = lance.dataset(uri)
    pl.validate()
    assert pl.version == 1 + 4 * 4  # every operation one version
    for t in (pl.to_table(), lancelot.dataset(uri).to_table()):
        assert dict(zip(t.column("key").to_pylist(), t.column("v").to_pylist())) == expected
        assert t.num_rows == len(expected)
    for v in range(1, pl.version + 1):  # every committed version readable by both, alike
        a, b = lance.dataset(uri, version=v).to_table(), lancelot.dataset(uri, version=v).to_table()
        assert a.sort_by("key") == b.sort_by("key")


def test_changes_on_s3(s3_dataset):  # noqa: F811
    """Each operation on an S3 dataset (the local moto server), lancelot and pylance taking turns
    with a twin on local disk that gets every step from pylance."""
    import tempfile

    uri, po = s3_dataset.uri, s3_dataset.pylance_options()
    local = tempfile.mkdtemp() + "/twin"
    for p in (uri, local):
        lance.write_dataset(table(), p, max_rows_per_file=15, storage_options=po if p == uri else None)
    steps = [
        lambda ds, lib: ds.delete("id = 3" if lib == "lance" else pc.field("id") == 3),
        lambda ds, lib: ds.update({"x": "x + 1"} if lib == "lance" else {"x": pc.field("x") + 1}, where="id < 20"),
        lambda ds, lib: (
            ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(_src([5, 99]))
        ),
        lambda ds, lib: ds.add_columns({"y": "id * 2"} if lib == "lance" else {"y": pc.field("id") * 2}),
        lambda ds, lib: ds.drop_columns(["s"]),
    ]
    for i, step in enumerate(steps):
        step(lance.dataset(local), "lance")
        if i % 2:
            step(lance.dataset(uri, storage_options=po), "lance")
        else:
            step(lancelot.dataset(uri, storage_options=po), "lancelot")
    pl = lance.dataset(uri, storage_options=po)
    pl.validate()
    assert pl.version == lance.dataset(local).version == 1 + len(steps)
    want = lance.dataset(local).to_table().sort_by("id")
    assert pl.to_table().sort_by("id") == want
    assert lancelot.dataset(uri, storage_options=po).to_table().sort_by("id") == want


_KILLED = r"""
import json, os, signal, sys
a = json.loads(sys.argv[1])
import pyarrow as pa
import lancelot
from lancelot.dataset import store_files as store
points = []
def hook(point):
    points.append(point)
    if a["kill_at"] == len(points):
        os.kill(os.getpid(), signal.SIGKILL)
store.fault_hook = hook
src = pa.table({"key": pa.array([1, 2, 500], pa.int64()), "v": pa.array([7, 7, 7], pa.int64())})
lancelot.dataset(a["uri"]).merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(src)
print(json.dumps(points), flush=True)
"""


def test_merge_insert_writer_killed_at_every_step(tmp_path):
    """A lancelot merge_insert killed (SIGKILL) at each of its storage steps in turn leaves a
    committed version, before or after, that both libraries open; both commit on top of it."""
    import json
    import signal
    import subprocess
    import sys

    def run(uri: str, kill_at: int) -> subprocess.CompletedProcess:
        args = json.dumps({"uri": uri, "kill_at": kill_at})
        return subprocess.run([sys.executable, "-c", _KILLED, args], capture_output=True, text=True, timeout=120)

    def fresh() -> str:
        uri = str(tmp_path / f"ds{len(list(tmp_path.iterdir()))}")
        base = pa.table({"key": pa.array(range(10), pa.int64()), "v": pa.array([0] * 10, pa.int64())})
        lance.write_dataset(base, uri, max_rows_per_file=5)
        return uri

    done = run(fresh(), 0)
    assert done.returncode == 0, done.stderr[-2000:]
    points = json.loads(done.stdout.strip().splitlines()[-1])
    assert points
    # one kill per kind of step: a deletion file's put, the new data file, the manifest's create
    # (before and after), the version hint after the commit
    picks = sorted(
        {points.index(k) + 1 for k in ("put:before", "output:before-close", "create:before", "create:after")}
    )
    picks.append(len(points) - 1)
    for i in picks:
        point = points[i - 1]
        uri = fresh()
        p = run(uri, i)
        assert p.returncode == -signal.SIGKILL, f"not killed at {point}: {p.stderr[-2000:]}"
        pl = lance.dataset(uri)
        pl.validate()
        assert pl.version in (1, 2) and lancelot.dataset(uri).version == pl.version, point
        got = dict(zip(*pl.to_table().to_pydict().values()))
        want = {k: 0 for k in range(10)} if pl.version == 1 else {k: 7 if k in (1, 2) else 0 for k in range(10)}
        if pl.version == 2:
            want[500] = 7
        assert got == want, point
        assert lancelot.dataset(uri).to_table().sort_by("key") == pl.to_table().sort_by("key")
        lancelot.dataset(uri).update({"v": pc.field("v") + 1}, where=pc.field("key") == 9)
        lance.dataset(uri).delete("key = 8")
        lance.dataset(uri).validate()


def test_merge_insert_reads_no_manifest_back(tmp_path, monkeypatch):
    """execute moves the dataset to the manifest its commit built (no read back, no ``_versions/`` listing); pylance
    reads the result the same."""
    from tests.dataset.helpers import CommitReads

    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"id": pa.array(range(6), pa.int64()), "v": pa.array(range(6), pa.int64())}), uri)
    ds = lancelot.dataset(uri)
    src = pa.table({"id": pa.array([4, 5, 6], pa.int64()), "v": pa.array([-4, -5, -6], pa.int64())})
    with CommitReads(uri, monkeypatch):
        ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    theirs = lance.dataset(uri)
    assert ds.version == theirs.version == 2
    assert ds.to_table().sort_by("id") == theirs.to_table().sort_by("id")


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_changes_write_another_file_version(tmp_path, version) -> None:
    """update's and merge_insert's ``data_storage_version``: the new files of that version beside the 2.1 ones, the
    manifest flagged ``mixed_file_versions`` (256) as pylance flags it; either library reads the result."""
    from lancelot.reader import LanceFile

    got = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        lance.write_dataset(pa.table({"id": [1, 2, 3], "s": ["a", "b", "c"]}), p, data_storage_version="2.1")
        b = lib.dataset(p).merge_insert("id").data_storage_version(version).when_matched_update_all()
        b.when_not_matched_insert_all().execute(pa.table({"id": [2, 4], "s": ["x", "y"]}))
        lib.dataset(p).update({"s": "s || '!'"}, "id = 1", data_storage_version=version)
        ds = lancelot.dataset(p)
        files = [LanceFile(os.path.join(p, "data", f.data_files()[0].path)).version for f in ds.get_fragments()]
        flags = (ds.manifest.reader_feature_flags, ds.manifest.writer_feature_flags)
        got.append((files, flags, ds.data_storage_version, ds.to_table(), lance.dataset(p).to_table()))
    assert got[0] == got[1]
    assert got[0][:3] == (["2.1", version, version], (257, 257), "2.1")
    assert got[0][3]["s"].to_pylist() == ["c", "x", "y", "a!"]


def test_merge_insert_write_mode_and_storage_version(tmp_path) -> None:
    p = str(tmp_path / "m")
    lance.write_dataset(pa.table({"id": [1, 2], "v": [1, 2]}), p, data_storage_version="2.1")
    b = lancelot.dataset(p).merge_insert("id").write_mode("rewrite_rows").data_storage_version("2.1")
    r = b.when_matched_update_all().when_not_matched_insert_all().execute(pa.table({"id": [2, 3], "v": [20, 30]}))
    assert (r["num_updated_rows"], r["num_inserted_rows"]) == (1, 1)
    assert lance.dataset(p).to_table().sort_by("id")["v"].to_pylist() == [1, 20, 30]
    for lib in (lance, lancelot):
        with pytest.raises(ValueError):
            lib.dataset(p).merge_insert("id").write_mode("bogus")


# -- merge_insert's key from the schema's primary key -------------------------------------


_PK = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False, metadata={"lance-schema:unenforced-primary-key": "true"}),
        ("v", pa.string()),
    ]
)


@pytest.mark.parametrize("writer", [lance, lancelot])
def test_merge_insert_on_primary_key(tmp_path, writer) -> None:
    """Without ``on``, the key is the schema's unenforced primary key (the Field flag, set from the Arrow metadata),
    whichever library wrote the dataset; without one, ValueError in both."""
    got = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        writer.write_dataset(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=_PK), p)
        ds = lib.dataset(p)
        r = ds.merge_insert().when_matched_update_all().when_not_matched_insert_all()
        got.append((r.execute(pa.table({"id": [1, 5], "v": ["x", "y"]}, schema=_PK)), ds.to_table().to_pydict()))
        assert lance.dataset(p).schema == _PK
        plain = lib.write_dataset(pa.table({"id": [1]}), str(tmp_path / f"plain_{lib.__name__}"))
        with pytest.raises(ValueError, match="primary key"):
            plain.merge_insert()
        with pytest.raises(ValueError):
            plain.merge_insert([])
    assert got[0] == got[1]
    assert got[0][1]["v"] == ["b", "c", "x", "y"]
