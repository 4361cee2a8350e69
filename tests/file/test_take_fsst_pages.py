"""Point takes over a string column whose pages differ in FSST (structural/column_points.py).

pylance chooses FSST page by page: a page of short strings (at most 4 bytes) or of little data
keeps them plain.  ``ColumnPoints`` reads all pages of such a column in one kernel call, so each
page's strings must be decoded with its own table, or none: taking a row of an FSST page after a
plain first page returned the compressed bytes.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.encodings.structural import miniblock_points
from tests.helpers import pylance_write

lance_file = pytest.importorskip("lance.file", reason="pylance (the test oracle) is not installed")

N = 20_000
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]


def _plain_strings(rng: np.random.Generator) -> pa.Array:
    """Distinct 4-byte strings: too short for FSST, too many for a dictionary."""
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", np.uint8)
    raw = alphabet[rng.integers(0, len(alphabet), 4 * N)].tobytes()
    return pa.array([raw[4 * i : 4 * i + 4].decode() for i in range(N)])


def _fsst_strings(rng: np.random.Generator) -> pa.Array:
    return pa.array([" ".join(rng.choice(WORDS, 6)) + str(i) for i in range(N)])


def _page_fsst(f: lancelot.LanceFile) -> list[bool]:
    """Whether each page of the column compresses its strings with FSST."""
    from lancelot.inspect import _decode

    out = []
    for page in f.metadata.columns[0].pages:
        layout, _ = _decode(f, page.encoding)
        out.append(layout.mini_block_layout.value_compression.WhichOneof("compression") == "fsst")
    return out


@pytest.mark.parametrize("mode", ["numpy", "kernel"])
@pytest.mark.parametrize("plain_first", [True, False])
@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_point_take_decodes_each_page_with_its_own_table(tmp_path, monkeypatch, mode, plain_first, version):
    rng = np.random.default_rng(3)
    plain, fsst = _plain_strings(rng), _fsst_strings(rng)
    batches = [plain, fsst] if plain_first else [fsst, plain]
    f = lancelot.LanceFile(
        pylance_write(
            tmp_path / f"mixed-{version}.lance",
            [pa.table({"s": b}) for b in batches],
            version,
            data_cache_bytes=64 * 1024,
        )
    )
    assert _page_fsst(f) == ([False, True] if plain_first else [True, False])  # the shape under test
    monkeypatch.setitem(miniblock_points.mode, "points", mode)
    rows = [5, N - 1, N, N + 1, N + 15_000, 2 * N - 1]
    assert f.explain_take(rows)["s"] == ["points/ColumnPoints"]
    expected = pa.concat_arrays(batches).take(rows).to_pylist()
    assert f.take(rows)["s"].to_pylist() == expected
    # rows of the second page only (the kernel's first page is then the other kind)
    assert f.take([N + 2, N + 3])["s"].to_pylist() == pa.concat_arrays(batches).take([N + 2, N + 3]).to_pylist()
