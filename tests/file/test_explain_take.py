"""Which decode path served a take (encodings/served.py, ``LanceFile.explain_take``), on files
pylance writes, and the compression registry's ``point`` claims checked against the path the
reader really takes."""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.encodings.compression.registry import TECHNIQUES
from lancelot.encodings.served import recording
from lancelot.inspect import _decode
from tests.helpers import pylance_write_column

lance_file = pytest.importorskip("lance.file", reason="pylance (the test oracle) is not installed")

N = 20_000
ROWS = [3, 400, 19_999]


def value_chain(f: lancelot.LanceFile) -> list[str]:
    """The value techniques of the first page's mini-block layout, outermost first."""
    layout, _ = _decode(f, f.metadata.columns[0].pages[0].encoding)
    assert layout.WhichOneof("layout") == "mini_block_layout"
    enc, out = layout.mini_block_layout.value_compression, []
    while enc.WhichOneof("compression") is not None:
        kind = enc.WhichOneof("compression")
        out.append(kind)
        inner = getattr(enc, kind)
        if not any(fd.name == "values" for fd, _ in inner.ListFields()):
            break
        enc = inner.values
    return out


RNG = np.random.default_rng(7)
CASES = {
    "flat": (pa.array(RNG.integers(0, 1 << 62, N)), None),
    "bitpacked": (pa.array(RNG.integers(0, 100, N)), None),
    "runs": (pa.array(np.repeat(np.arange(20), N // 20)), None),
    "dictionary": (pa.array([f"lance row {i % 97} of some text" for i in range(N)]), None),
    "text": (pa.array([f"lance row {i} of some text {i * 7919 % 10007}" for i in range(N)]), None),
    "zstd-ints": (pa.array(RNG.integers(0, 100, N)), {"lance-encoding:compression": "zstd"}),
    "lz4-text": (pa.array([f"row {i}" for i in range(N)]), {"lance-encoding:compression": "lz4"}),
}


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_point_kernel_serves_exactly_the_techniques_the_registry_claims(tmp_path, case, version):
    arr, meta = CASES[case]
    f = lancelot.LanceFile(pylance_write_column(tmp_path / f"{case}-{version}.lance", arr, version, meta))
    chain = value_chain(f)
    claimed = all(TECHNIQUES[k].point for k in chain)
    paths = f.explain_take(ROWS)["c"]
    assert paths == (["points/ColumnPoints"] if claimed else ["pages/MiniBlockPage"]), chain
    assert f.take(ROWS)["c"].to_pylist() == arr.take(ROWS).to_pylist()


def test_paths_by_version_and_layout(tmp_path):
    t = pa.table({"i": pa.array(np.arange(N)), "const": pa.array(np.full(N, 7, np.int32)), "l": [[1, 2]] * N})
    seen = {}
    for version in ("2.0", "2.1", "2.2"):
        path = str(tmp_path / f"t{version}.lance")
        with lance_file.LanceFileWriter(path, t.schema, version=version) as w:
            w.write_batch(t)
        seen[version] = lancelot.LanceFile(path).explain_take(ROWS)
    assert seen["2.0"] == {"i": ["plan/FlatPlan"], "const": ["plan/FlatPlan"], "l": ["decoder/ListNode"]}
    assert seen["2.1"]["i"] == ["points/ColumnPoints"] and seen["2.1"]["l"] == ["pages/MiniBlockPage"]
    assert seen["2.2"]["const"] == ["points/ColumnConstant"]  # 2.2 constant pages: the value repeated, no kernel


def test_range_reads_are_recorded_and_logged(tmp_path, caplog):
    path = str(tmp_path / "r.lance")
    lancelot.write_table(pa.table({"x": np.arange(N)}), path, version="2.0")
    f = lancelot.LanceFile(path)
    with caplog.at_level(logging.DEBUG, logger="lancelot.read"), recording() as rec:
        f.read_range(10, 200)
    assert rec.paths("x", "range") == ["decoder/LeafNode"]
    with recording() as few:  # a short range is a take of its rows, fetched with the other fields' in one round
        f.read_range(10, 20)
    assert few.paths("x", "range") == ["plan/FlatPlan"]
    assert "range of field 'x' served by decoder/LeafNode" in caplog.text
    with recording() as rec2:
        pass
    assert rec2.reads == []
