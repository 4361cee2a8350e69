"""``io_stats_incremental``'s write counts against pylance's: the same operations on twin datasets, each library's
``write_iops`` equal to pylance's and its ``written_bytes`` the sizes of the files it wrote."""

from __future__ import annotations

import os
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelot

TABLE = pa.table({"a": pa.array(range(100), pa.int64()), "s": [f"v{i}" for i in range(100)]})

#: operations writing data files, deletion files, transaction files, manifests and the version hint
OPS = {
    "insert": lambda ds: ds.insert(TABLE),
    "delete": lambda ds: ds.delete("a < 10"),
    "update": lambda ds: ds.update({"a": "a + 1"}, where="a > 50"),
    "add_columns": lambda ds: ds.add_columns({"b": "a * 2"}),
    "merge_insert": lambda ds: (
        ds.merge_insert("a").when_matched_update_all().when_not_matched_insert_all().execute(TABLE)
    ),
    "drop_columns": lambda ds: ds.drop_columns(["b"]),
    "scan": lambda ds: ds.to_table(),
}


def _files(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def _run(lib: object, root: Path) -> list[tuple[str, int, int, int]]:
    """Per operation: its write_iops and written_bytes, and the sizes of the files it wrote or changed."""
    lib.write_dataset(TABLE, str(root))  # type: ignore[attr-defined]
    ds = lib.dataset(str(root))  # type: ignore[attr-defined]
    ds.io_stats_incremental()
    out = []
    before = _files(root)
    for name, op in OPS.items():
        op(ds)
        st = ds.io_stats_incremental()
        now = _files(root)
        written = sum(size for k, (size, _) in now.items() if before.get(k) != now[k])
        out.append((name, st.write_iops, st.written_bytes, written))
        before = now
    return out


def test_write_counts_match_pylance(tmp_path: Path) -> None:
    ours = _run(lancelot, tmp_path / "lancelot")
    theirs = _run(lance, tmp_path / "pylance")
    for (name, iops, nbytes, written), (_, p_iops, p_bytes, p_written) in zip(ours, theirs, strict=True):
        assert p_bytes == p_written, name  # (pylance's: the bytes of the files it wrote)
        assert (name, iops) == (name, p_iops)
        assert nbytes == written, name
    assert ours[-1][1:3] == (0, 0)  # a scan writes nothing


def test_snapshot_keeps_counting(tmp_path: Path) -> None:
    lancelot.write_dataset(TABLE, str(tmp_path / "d"))
    ds = lancelot.dataset(str(tmp_path / "d"))
    ds.insert(TABLE)
    first = ds.io_stats_snapshot()
    ds.delete("a = 3")
    second = ds.io_stats_snapshot()
    assert first.write_iops >= 4 and first.written_bytes > 0
    assert second.write_iops > first.write_iops and second.written_bytes > first.written_bytes
    assert ds.io_stats_incremental() == second
    assert ds.io_stats_incremental().write_iops == 0


@pytest.mark.parametrize("lib", ["lancelot", "pylance"])
def test_a_fresh_dataset_counts_no_writes(tmp_path: Path, lib: str) -> None:
    m = lancelot if lib == "lancelot" else lance
    m.write_dataset(TABLE, str(tmp_path / "d"))
    st = m.dataset(str(tmp_path / "d")).io_stats_snapshot()
    assert (st.write_iops, st.written_bytes) == (0, 0)
    assert os.path.isdir(tmp_path / "d" / "_versions")
