"""Commit safety: concurrent writers in separate processes lose no commit,
and a writer killed (SIGKILL) anywhere in a commit leaves a dataset both lancelot and
pylance open at a committed version.

Every append adds ``ROWS`` rows tagged (writer ``w``, sequence ``k``); a history is
consistent when versions run 1..N, each version holds exactly one more (w, k) group than
the one before it, each writer's groups appear in its own order, and both libraries read
every version the same.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time

import lance
import pyarrow as pa
import pytest

import lancelot
from tests.dataset.helpers import spawn_worker

ROWS = 50

WORKER = r"""
import json, os, signal, sys, tempfile, time
a = json.loads(sys.argv[1])
import pyarrow as pa
def table(w, k, n):
    return pa.table({"w": pa.array([w] * n, pa.int32()), "k": pa.array([k] * n, pa.int32()),
                     "r": pa.array(range(n), pa.int32())})
if a["lib"] == "pylance":
    import lance
    write = lambda t, uri=a["uri"], mode="append": lance.write_dataset(t, uri, mode=mode, storage_options=a["opts"])
else:
    import lancelot
    from lancelot.dataset import store_files as store
    write = lambda t, uri=a["uri"], mode="append": lancelot.write_dataset(t, uri, mode=mode,
                                                                         storage_options=a["opts"])
# warm up (imports, compiled encoders) on a scratch dataset, so the racing part is appends only (a writer
# killed at a counted point races nothing: it needs none)
if not a.get("kill_at"):
    write(table(0, 0, a["rows"]), uri=tempfile.mkdtemp() + "/warm", mode="create")
points = []
if a["lib"] != "pylance":
    def hook(point):
        points.append(point)
        if a.get("kill_at") == len(points):
            os.kill(os.getpid(), signal.SIGKILL)
        if a.get("slow"):
            time.sleep(a["slow"])
    store.fault_hook = hook
print("ready", flush=True)
deadline = time.time() + 60
while a.get("go") and not os.path.exists(a["go"]) and time.time() < deadline:
    time.sleep(0.002)
for k in range(a["n"]):
    write(table(a["w"], k, a["rows"]))
print(json.dumps(points))
"""


def _batch(w: int, k: int, n: int = ROWS) -> pa.Table:
    return pa.table(
        {"w": pa.array([w] * n, pa.int32()), "k": pa.array([k] * n, pa.int32()), "r": pa.array(range(n), pa.int32())}
    )


def _spawn(uri, lib, w, n, opts, **extra) -> subprocess.Popen:
    """A writer, warmed up (or failed: then its error is reported)."""
    return spawn_worker(WORKER, {"uri": uri, "lib": lib, "w": w, "n": n, "rows": ROWS, "opts": opts, **extra})


def _groups(t: pa.Table) -> set[tuple[int, int]]:
    g = t.group_by(["w", "k"]).aggregate([("r", "count")])
    counts = g.column("r_count").to_pylist()
    assert all(c == ROWS for c in counts), "a commit's rows are split or duplicated"
    return set(zip(g.column("w").to_pylist(), g.column("k").to_pylist()))


def _history(uri: str, lo: dict | None, po: dict | None) -> list[set[tuple[int, int]]]:
    """The (w, k) groups of every version, checked consistent in both libraries.

    Every commit in these tests is an append of one small fragment, and data files never change,
    so each fragment of the latest version is read once (both libraries) and each version is
    checked through its fragment ids and row count: version v keeps version v-1's fragments in
    order and adds exactly one."""
    me = lancelot.dataset(uri, storage_options=lo)
    pl = lance.dataset(uri, storage_options=po)
    assert me.version == pl.version
    n = me.version
    assert [v["version"] for v in me.versions()] == list(range(1, n + 1))
    assert [v["version"] for v in pl.versions()] == list(range(1, n + 1))
    pl.validate()
    group = {}
    for f in me.get_fragments():
        g = _groups(f.read())
        assert len(g) == 1, f"fragment {f.fragment_id} holds rows of several commits"
        group[f.fragment_id] = g.pop()
    assert {f.fragment_id: _groups(f.to_table()) for f in pl.get_fragments()} == {i: {g} for i, g in group.items()}
    history: list[set[tuple[int, int]]] = []
    prev: list[int] = []
    for v in range(1, n + 1):
        ours, theirs = (
            lancelot.dataset(uri, version=v, storage_options=lo),
            lance.dataset(uri, version=v, storage_options=po),
        )
        ids = [f.fragment_id for f in ours.get_fragments()]
        assert ids == [f.fragment_id for f in theirs.get_fragments()], f"version {v}: the libraries disagree"
        assert ids[:-1] == prev and len(ids) == v, f"version {v} is not one more append: {prev} -> {ids}"
        assert ours.count_rows() == theirs.count_rows() == ROWS * v
        history.append({group[i] for i in ids})
        prev = ids
    added = [group[i] for i in prev]
    for w in {w for w, _ in added}:  # each writer's appends landed in its own order, none lost in between
        ks = [k for ww, k in added if ww == w]
        assert ks == list(range(len(ks))), f"writer {w}: sequence {ks}"
    return history


def _where(kind: str, tmp_path, request) -> tuple[str, dict | None, dict | None]:
    if kind == "local":
        return str(tmp_path / "ds"), None, None
    s3 = request.getfixturevalue("s3_dataset")
    return s3.uri, s3.pylance_options(), s3.pylance_options()


def _run_all(procs, timeout=240):
    outs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        assert p.returncode == 0, err[-3000:]
        outs.append(out)
    return outs


@pytest.mark.parametrize(
    "kind,libs",
    [
        ("local", ["lancelot"] * 4),
        ("local", ["lancelot", "pylance", "lancelot", "pylance"]),
        ("s3", ["lancelot", "pylance", "lancelot", "lancelot"]),
    ],
)
def test_concurrent_appends_lose_no_commit(kind, libs, tmp_path, request):
    uri, lo, po = _where(kind, tmp_path, request)
    lancelot.write_dataset(_batch(-1, 0), uri, storage_options=lo)
    per_writer = 4
    go = str(tmp_path / "go")
    # lancelot writers pause 5 ms at each step of a write, so their commits overlap for sure
    procs = [
        _spawn(uri, lib, w, per_writer, lo if lib == "lancelot" else po, go=go, slow=0.005)
        for w, lib in enumerate(libs)
    ]
    open(go, "w").close()  # all writers start committing together
    outs = _run_all(procs)
    history = _history(uri, lo, po)
    assert len(history) == 1 + len(libs) * per_writer
    assert history[-1] == {(-1, 0)} | {(w, k) for w in range(len(libs)) for k in range(per_writer)}
    # the races were real: some lancelot manifest creates lost to another writer and were retried
    points = [p for out, lib in zip(outs, libs) if lib == "lancelot" for p in json.loads(out.strip().splitlines()[-1])]
    lost = points.count("create:before") - points.count("create:after")
    assert points.count("create:after") == libs.count("lancelot") * per_writer
    if set(libs) == {"lancelot"}:
        assert lost > 0


def _kill_points(uri, lo) -> list[str]:
    """The fault points one lancelot append passes through (a dry run that commits)."""
    out = _run_all([_spawn(uri, "lancelot", 90, 1, lo)])[0]
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_writer_killed_at_every_point_of_a_commit(kind, tmp_path, request):
    """SIGKILL a lancelot writer at each step of its commit in turn (data file, transaction,
    manifest temp, manifest create, version hint): the dataset opens in both libraries at the
    version before or the version after, and both can go on committing."""
    uri, lo, po = _where(kind, tmp_path, request)
    lancelot.write_dataset(_batch(-1, 0), uri, storage_options=lo)
    points = _kill_points(uri, lo)  # version 2
    assert {"create:before", "create:after"} <= set(points), points
    assert len(points) >= 4
    expected = {(-1, 0), (90, 0)}
    for i, point in enumerate(points, start=1):
        before = lancelot.dataset(uri, storage_options=lo).version
        p = _spawn(uri, "lancelot", 100 + i, 1, lo, kill_at=i)
        p.communicate(timeout=120)
        assert p.returncode == -signal.SIGKILL, f"the writer was not killed at {point}"
        after = lancelot.dataset(uri, storage_options=lo).version
        assert after in (before, before + 1), point
        if after == before + 1:
            expected.add((100 + i, 0))
        assert point != "create:after" or after == before + 1  # the manifest exists: committed
        assert not point.startswith("output") or after == before  # only data written: invisible
        pl = lance.dataset(uri, storage_options=po)
        assert pl.version == after
        assert _groups(pl.to_table()) == _groups(lancelot.dataset(uri, storage_options=lo).to_table()) == expected
        # both libraries commit on top of what the killed writer left
        lance.write_dataset(_batch(200 + i, 0), uri, mode="append", storage_options=po)
        lancelot.write_dataset(_batch(300 + i, 0), uri, mode="append", storage_options=lo)
        expected |= {(200 + i, 0), (300 + i, 0)}
    history = _history(uri, lo, po)
    assert history[-1] == expected


def test_writers_killed_at_random_times(tmp_path):
    """Writers appending in a loop are killed at random (seeded) moments, lancelot slowed a little
    at each commit step so the kills land inside commits; the history stays consistent."""
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(_batch(-1, 0), uri)
    rng = random.Random(16)
    plan = [("lancelot", 0.004)] * 4 + [("pylance", 0.0)] * 2
    for i, (lib, slow) in enumerate(plan):
        go = str(tmp_path / f"go{i}")
        p = _spawn(uri, lib, i, 1000, None, go=go, slow=slow)
        open(go, "w").close()
        time.sleep(rng.uniform(0.05, 0.4))
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=60)
        assert p.returncode == -signal.SIGKILL, "the writer finished before it was killed"
        me, pl = lancelot.dataset(uri), lance.dataset(uri)
        assert me.version == pl.version and me.count_rows() == pl.count_rows()
    # some kills landed inside commits: data files (or transactions) no version points to
    used = {d.path for f in lance.dataset(uri).get_fragments() for d in f.data_files()}
    assert set(os.listdir(os.path.join(uri, "data"))) - used
    lance.write_dataset(_batch(500, 0), uri, mode="append")
    lancelot.write_dataset(_batch(600, 0), uri, mode="append")
    history = _history(uri, None, None)
    assert {(500, 0), (600, 0)} <= history[-1]
    assert len(history) >= 3


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_threads_appending_in_one_process_lose_no_commit(kind, tmp_path):
    """The same commit protocol between threads (memory:// has only its in-process lock)."""
    import threading

    uri = str(tmp_path / "ds") if kind == "local" else f"memory://lancelot-threads-{time.time_ns()}/ds"
    lancelot.write_dataset(_batch(-1, 0), uri)
    errors: list = []
    barrier = threading.Barrier(4)

    def writer(w):
        try:
            barrier.wait()
            for k in range(5):
                lancelot.write_dataset(_batch(w, k), uri, mode="append")
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    me = lancelot.dataset(uri)
    assert me.version == 21 and [v["version"] for v in me.versions()] == list(range(1, 22))
    seen = [_groups(lancelot.dataset(uri, version=v).to_table()) for v in range(1, 22)]
    assert all(a < b and len(b - a) == 1 for a, b in zip(seen, seen[1:]))
    assert seen[-1] == {(-1, 0)} | {(w, k) for w in range(4) for k in range(5)}
    if kind == "local":
        assert _groups(lance.dataset(uri).to_table()) == seen[-1]
