"""Twin datasets for the tests of operations that change data (delete, update, merge_insert,
schema evolution): the same data written by pylance into two directories; pylance performs an
operation on one, lancelot on the other, and the two must agree version by version."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.progress import FragmentWriteProgress

import lancelot
from lancelot.dataset.store import ObjectStore

VERSIONS = ["2.0", "2.1", "2.2"]

#: The two libraries a ported test runs with, by the value of its ``lib`` parameter
#: (``@pytest.mark.parametrize("lib", LIBS)`` then ``mod = LIBS[lib]``).
LIBS: dict[str, Any] = {"pylance": lance, "lancelot": lancelot}


class Api(NamedTuple):
    """One library's module and the dataset classes tests call directly (unpack a prefix or a slice)."""

    mod: Any
    LanceDataset: Any
    LanceOperation: Any
    Transaction: Any
    LanceFragment: Any


#: ``API[lib]``: the module and classes of the library ``lib`` names (keys as in ``LIBS``).
API = {name: Api(m, m.LanceDataset, m.LanceOperation, m.Transaction, m.LanceFragment) for name, m in LIBS.items()}


def gap(reason: str) -> list[Any]:
    """``lib`` values with the lancelot variant an expected (strict) failure: a gap, not a pass."""
    return ["pylance", pytest.param("lancelot", marks=pytest.mark.xfail(strict=True, reason=reason))]


class Progress(FragmentWriteProgress):
    """The reference's helper.ProgressForTest: counts the hooks' calls."""

    def __init__(self) -> None:
        super().__init__()
        self.begin_called = 0
        self.complete_called = 0

    def begin(self, fragment: Any, **kwargs: Any) -> None:
        self.begin_called += 1

    def complete(self, fragment: Any, **kwargs: Any) -> None:
        self.complete_called += 1


def both(path: str | Path) -> pa.Table:
    """The latest version as pylance reads it, asserted equal to lancelot's reading."""
    theirs = lance.dataset(str(path)).to_table()
    assert lancelot.dataset(str(path)).to_table() == theirs
    return theirs


#: lancelot.sql (SQL filters and expressions) is on its way from another branch: tests that
#: hand lancelot SQL text run once it is there; the others give lancelot pyarrow Expressions
HAVE_SQL = importlib.util.find_spec("lancelot.sql") is not None
needs_sql = pytest.mark.skipif(not HAVE_SQL, reason="lancelot.sql is not on this branch yet")


def table(n: int = 40, start: int = 0) -> pa.Table:
    a = np.arange(start, start + n, dtype=np.int64)
    return pa.table(
        {
            "id": a,
            "s": pa.array([None if i % 7 == 3 else f"s{i}" for i in a], pa.string()),
            "x": pa.array((a * 1.5).astype(np.float64)),
            "st": pa.StructArray.from_arrays([pa.array(a.astype(np.int32)), pa.array(a % 3 == 0)], ["p", "q"]),
        }
    )


def twins(
    tmp_path: Path, data: pa.Table, version: str = "2.2", *, stable: bool = False, rows_per_file: int = 15
) -> tuple[str, str]:
    """(pylance's path, lancelot's path), both holding ``data`` written by pylance (version 1)."""
    paths = []
    for who in ("theirs", "ours"):
        p = str(tmp_path / who)
        lance.write_dataset(
            data, p, data_storage_version=version, max_rows_per_file=rows_per_file, enable_stable_row_ids=stable
        )
        paths.append(p)
    return paths[0], paths[1]


def rows(t: pa.Table, key: str = "id") -> list[dict[str, object]]:
    out: list[dict[str, object]] = t.sort_by(key).to_pylist()
    return out


def assert_twins(theirs: str, ours: str, *, key: str = "id", row_ids: bool = False) -> None:
    """Every version of the two datasets: same number, same schema and rows, validate() passes,
    and lancelot reads each as pylance does."""
    lt, lo = lance.dataset(theirs), lance.dataset(ours)
    assert lo.version == lt.version
    for v in range(1, lt.version + 1):
        a, b = lance.dataset(theirs, version=v), lance.dataset(ours, version=v)
        b.validate()
        assert b.schema == a.schema, f"version {v}"
        ta, tb = a.to_table(with_row_id=row_ids), b.to_table(with_row_id=row_ids)
        assert rows(tb, key) == rows(ta, key), f"version {v}"
        for p, ref in ((theirs, ta), (ours, tb)):
            mine = lancelot.dataset(p, version=v).to_table()
            assert rows(mine, key) == rows(ref.drop_columns(["_rowid"]) if row_ids else ref, key), f"{p} v{v}"


def assert_same_row_versions(theirs: str, ours: str, key: str = "id") -> None:
    """pylance reads the same ``_row_created_at_version`` and ``_row_last_updated_at_version`` of each
    row of the two datasets' latest versions (columns it derives from the row-version sequences each
    library wrote)."""
    cols = [key, "_row_created_at_version", "_row_last_updated_at_version"]
    mine, ref = (lance.dataset(p).to_table(columns=cols) for p in (ours, theirs))
    assert rows(mine, key) == rows(ref, key)


def copies(src: str, tmp_path: Path) -> tuple[str, str]:
    """Two copies of the dataset at ``src``: (pylance's, lancelot's), for an operation each library runs on its own."""
    a, b = str(tmp_path / "theirs"), str(tmp_path / "ours")
    shutil.copytree(src, a)
    shutil.copytree(src, b)
    return a, b


def files_of(path: str) -> set[str]:
    """Every file under the dataset (to check that a refused operation wrote nothing)."""
    out = set()
    for d, _, fs in os.walk(path):
        for f in fs:
            out.add(os.path.relpath(os.path.join(d, f), path))
    return out


def referenced_files(path: str) -> set[str]:
    """Data and deletion files the latest version references."""
    ds = lancelot.dataset(path)
    out = set()
    for f in ds.manifest.fragments:
        out |= {f"data/{d.path}" for d in f.files}
    return out


def index_section(path: str) -> list[tuple[str, list[int], list[int]]]:
    """(name, field ids, fragment ids) of each index of the latest version."""
    from pyroaring import BitMap

    from lancelot.format.pb import table_pb2

    raw = lancelot.dataset(path).manifest_file.index_section
    if not raw:
        return []
    sec = table_pb2.IndexSection()
    sec.ParseFromString(raw)
    return [(i.name, list(i.fields), list(BitMap.deserialize(i.fragment_bitmap))) for i in sec.indices]


def indexed_twins(tmp_path: Path) -> tuple[str, str]:
    """Twins with pylance's BTREE indices on ``id`` and ``x``."""
    theirs, ours = twins(tmp_path, table(30), rows_per_file=10)
    for p in (theirs, ours):
        ds = lance.dataset(p)
        ds.create_scalar_index("id", "BTREE")
        ds.create_scalar_index("x", "BTREE")
    return theirs, ours


def blob_bytes(files) -> list[bytes | None]:
    """The bytes of each ``BlobFile`` (None for a null), e.g. of ``take_blobs``."""
    return [None if f is None else f.readall() for f in files]


def blob_storage(col: pa.ChunkedArray) -> pa.Array:
    """A scanned blob column as one array of its storage (descriptions, extension types unwrapped)."""
    chunks = [c.storage if isinstance(c, pa.ExtensionArray) else c for c in col.chunks]
    return pa.chunked_array(chunks, chunks[0].type).combine_chunks()


class CommitReads:
    """While entered: the paths read (``ObjectStore.read``) and listed (``list_names``); on exit, asserts that a commit
    read no manifest it wrote back (it opens the manifest it built) and listed no ``_versions/``."""

    def __init__(self, uri, monkeypatch):
        self.versions, self.monkeypatch, self.seen = os.path.join(uri, "_versions"), monkeypatch, []

    def __enter__(self):
        self.before = set(os.listdir(self.versions))
        read, listed = ObjectStore.read, ObjectStore.list_names
        self.monkeypatch.setattr(ObjectStore, "read", lambda st, p: self.seen.append(p) or read(st, p))
        self.monkeypatch.setattr(
            ObjectStore, "list_names", lambda st, p: self.seen.append(f"list {p}") or listed(st, p)
        )

    def __exit__(self, *exc):
        self.monkeypatch.undo()
        new = set(os.listdir(self.versions)) - self.before
        assert new and not [p for p in self.seen if p.rsplit("/", 1)[-1] in new or p == "list _versions"], self.seen


def int_table(n: int, start: int = 0) -> pa.Table:
    """One int64 column ``a``: ``start``, ``start + 1``, ... (``n`` rows)."""
    return pa.table({"a": np.arange(start, start + n, dtype=np.int64)})


def assert_same_search(a: pa.Table, b: pa.Table) -> None:
    """Two vector searches' results agree: the same rows and columns, distances within 1e-5."""
    assert a.schema.equals(b.schema)
    assert a.drop_columns(["_distance"]).equals(b.drop_columns(["_distance"]))
    assert np.allclose(a["_distance"].to_numpy(), b["_distance"].to_numpy(), rtol=1e-5, atol=1e-5)


def counts(m: Any) -> tuple[int, int, int, int]:
    """A compaction's metrics (lancelot's or pylance's ``CompactionMetrics``) as a comparable tuple."""
    return (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added)


def spawn_worker(script: str, args: dict[str, Any], *, ready: bool = True) -> subprocess.Popen:
    """A process running ``python -c script`` with ``args`` as its JSON argument (text pipes for its output); with
    ``ready``, returned once it printed "ready" (see ``wait_ready``): the multi-process commit tests' writers."""
    p = subprocess.Popen(
        [sys.executable, "-c", script, json.dumps(args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    if ready:
        wait_ready(p)
    return p


def wait_ready(p: subprocess.Popen, who: str = "worker") -> None:
    """Wait for the worker's "ready" line (it has imported its library), or fail with its error if it died.  Read
    from the pipe itself, byte by byte, as ``communicate()`` will later: a buffered readline could swallow the line
    after it, printed by a fast worker meanwhile."""
    assert p.stdout is not None
    line = b""
    while not line.endswith(b"\n") and (c := os.read(p.stdout.fileno(), 1)):
        line += c
    if line.strip() != b"ready":
        _, err = p.communicate(timeout=60)
        raise AssertionError(f"{who} failed to start: {err[-3000:]}")
