"""The "lance" data source's commit protocol (lancelot/spark/commit.py), without a Spark session.

A reader listing the output directory at any moment of a commit sees the files of before or of
after the commit, never a mixture; a crash or failure at any step leaves a state the readers and
the next commit handle.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import types as T  # noqa: E402

from lancelot.spark import commit as C  # noqa: E402
from lancelot.spark.files import list_data_files, resolve_files  # noqa: E402
from lancelot.spark.writer import STAGING, LanceArrowWriter  # noqa: E402

SCHEMA = T.StructType([T.StructField("x", T.LongType())])


def _batches(n: int, start: int = 0) -> list[pa.RecordBatch]:
    return [pa.RecordBatch.from_pydict({"x": pa.array(np.arange(start, start + n), pa.int64())})]


def _visible(d: str) -> set[str]:
    return {os.path.basename(p) for p in list_data_files(d)}


def _job(d: str, overwrite: bool, parts: list[int]):
    """A writer whose tasks have run (one file per entry of ``parts``, that many rows), not committed."""
    w = LanceArrowWriter({"path": d}, SCHEMA, overwrite=overwrite)
    return w, [w.write(iter(_batches(n, 1000 * i))) if n else w.write(iter([])) for i, n in enumerate(parts)]


def _spy_on_every_step(monkeypatch, d: str, seen: list[frozenset[str]]) -> None:
    """After each rename / remove / rmtree anywhere, record what a reader of ``d`` sees."""
    for mod, name in ((os, "replace"), (os, "rename"), (os, "remove"), (shutil, "rmtree")):
        original = getattr(mod, name)

        def wrapped(*args, _original=original, **kwargs):
            out = _original(*args, **kwargs)
            seen.append(frozenset(_visible(d)))
            return out

        monkeypatch.setattr(mod, name, wrapped)


@pytest.mark.parametrize(("overwrite", "parts"), [(False, [5, 7]), (True, [5, 7, 0]), (True, [0, 0])])
def test_readers_see_before_or_after_at_every_step(tmp_path, monkeypatch, overwrite, parts):
    d = str(tmp_path / "out")
    w0, m0 = _job(d, False, [3])
    w0.commit(m0)
    before = frozenset(_visible(d))
    w, messages = _job(d, overwrite, parts)
    seen: list[frozenset[str]] = []
    _spy_on_every_step(monkeypatch, d, seen)
    w.commit(messages)
    monkeypatch.undo()
    after = frozenset(_visible(d))
    new = after - before
    assert len(new) == (sum(1 for n in parts if n) or 1)  # a job without rows leaves one empty file
    assert (after & before) == (frozenset() if overwrite else before)
    assert len(seen) >= 3 and set(seen) <= {before, after}, [sorted(s) for s in seen]
    assert seen[0] == before and seen[-1] == after
    assert not os.path.exists(os.path.join(d, STAGING))
    assert sorted(os.listdir(d)) == sorted(after)  # nothing but the data files is left behind


def test_a_listing_that_races_a_commit_is_retried(tmp_path):
    d = str(tmp_path / "out")
    w0, m0 = _job(d, False, [3])
    w0.commit(m0)
    (old,) = _visible(d)
    w, messages = _job(d, True, [4, 4])
    calls = []

    def racing_listing(directory):
        """The first listing is taken while the commit runs: it holds one new file and the old one."""
        calls.append(1)
        names = sorted(n for n in os.listdir(directory) if n.endswith(".lance"))
        if len(calls) == 1:
            w.commit(messages)
            return [old, sorted(n for n in os.listdir(directory) if n.endswith(".lance"))[0]]
        return names

    got = C.visible_names(d, racing_listing)
    assert len(calls) == 2 and old not in got and len(got) == 2


def test_records_decide_what_a_listing_shows():
    listing = ["a.lance", "part-00000-J1.lance", "part-00001-J2.lance"]
    staged = C.JobRecord("J1", committed=False)
    assert C.apply_records(listing, [staged], lambda n: True) == ["a.lance", "part-00001-J2.lance"]
    done = C.JobRecord("J2", True, ("part-00001-J2.lance", "part-00002-J2.lance"), ("a.lance",))
    # the committed job's files are shown even if the listing missed one; what it replaces is hidden
    assert C.apply_records(listing, [staged, done], lambda n: True) == ["part-00001-J2.lance", "part-00002-J2.lance"]
    assert C.apply_records(listing, [done], lambda n: n != "part-00002-J2.lance") == [
        "part-00000-J1.lance", "part-00001-J2.lance"]


def test_a_commit_failing_before_its_commit_point_changes_nothing(tmp_path, monkeypatch):
    d = str(tmp_path / "out")
    w0, m0 = _job(d, False, [3])
    w0.commit(m0)
    before = _visible(d)
    w, messages = _job(d, True, [4, 4])
    real_rename = os.rename

    def no_commit_point(src, dst):
        if dst.endswith(C.COMMITTED):
            raise OSError("disk on fire")
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", no_commit_point)
    with pytest.raises(OSError, match="disk on fire"):
        w.commit(messages)
    monkeypatch.undo()
    # the new files were renamed into the directory, yet readers do not see them
    assert len([n for n in os.listdir(d) if n.endswith(".lance")]) == 3
    assert _visible(d) == before
    assert [os.path.basename(p) for p in resolve_files([os.path.join(d, "*.lance")])] == sorted(before)
    w.abort(messages)  # what Spark does next
    assert sorted(os.listdir(d)) == sorted(before)


def test_a_commit_failing_after_its_commit_point_is_finished_later(tmp_path, monkeypatch):
    d = str(tmp_path / "out")
    w0, m0 = _job(d, False, [3])
    w0.commit(m0)
    (old,) = _visible(d)
    w, messages = _job(d, True, [4])
    real_remove = os.remove

    def stuck(path):
        if os.path.basename(path) == old:
            raise PermissionError("busy")
        return real_remove(path)

    monkeypatch.setattr(os, "remove", stuck)
    w.commit(messages)  # committed: the old file could not go, its record stays
    monkeypatch.undo()
    (new,) = _visible(d)
    assert new != old and os.path.exists(os.path.join(d, old))
    w.abort(messages)  # an abort after the commit point undoes nothing
    assert _visible(d) == {new}
    w2, m2 = _job(d, False, [2])
    w2.commit(m2)  # the next commit into the directory finishes the first one
    assert not os.path.exists(os.path.join(d, old)) and len(_visible(d)) == 2
    assert not os.path.exists(os.path.join(d, STAGING))


def test_save_modes_look_at_the_path_like_spark(tmp_path):
    from lancelot.errors import LanceError

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LanceError, match="already exists"):
        LanceArrowWriter({"path": str(empty), "save_mode": "errorifexists"}, SCHEMA, overwrite=False)
    w = LanceArrowWriter({"path": str(empty), "save_mode": "ignore"}, SCHEMA, overwrite=False)
    w.commit([w.write(iter(_batches(3)))])
    assert os.listdir(empty) == []
