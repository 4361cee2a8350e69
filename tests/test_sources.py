"""Byte sources: local paths, file:// and memory:// URLs through the same range interface."""

from __future__ import annotations

import fsspec
import numpy as np
import pyarrow as pa

import lancelot
from lancelot.io.source import coalesce


def test_coalesce_merges_near_ranges():
    merged = coalesce([(100, 10), (0, 10), (15, 5), (5000, 1)], gap=10)
    assert [(o, n) for o, n, _ in merged] == [(0, 20), (100, 10), (5000, 1)]
    assert merged[0][2] == [1, 2]


def test_memory_and_file_urls(tmp_path):
    t = pa.table({"a": np.arange(5000), "s": [str(i) for i in range(5000)]})
    local = tmp_path / "t.lance"
    lancelot.write_table(t, local)
    assert lancelot.read_table(f"file://{local}").equals(t)
    with fsspec.open("memory://bucket/t.lance", "wb") as f:
        f.write(local.read_bytes())
    lf = lancelot.LanceFile("memory://bucket/t.lance")
    assert lf.read().equals(t)
    assert lf.take([4999, 3, 3]).equals(t.take([4999, 3, 3]))
