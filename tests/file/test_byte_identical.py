"""Byte-identical output: sha256 of files written from fixed inputs.

A few representative tables (integers, floats, low-cardinality and FSST-worthy
strings, lists, structs, nulls, a vector column, a constant column) are built
from a seeded generator and written at 2.0, 2.1 and 2.2 with the default writer
settings (plus one small-page case per version, so paging is covered).  The
sha256 of every file is compared with the value stored below, so any change in
the written bytes fails here.  pylance must read each file back equal, so the
stored hashes are hashes of valid files.

If a change in the written bytes is intended, run this module with
``LANCELOT_PRINT_HASHES=1 pytest -s tests/file/test_byte_identical.py`` to print the new
table, update ``EXPECTED`` and say why the bytes changed in the commit message.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pyarrow as pa
import pytest

from lancelot.writer import write_table

lance_file = pytest.importorskip("lance.file")

ROWS = 3000


def _strings(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    return pa.array(values.tolist(), pa.string(), mask=None if valid is None else ~valid)


def _primitive(rng: np.random.Generator, version: str) -> pa.Table:
    valid = rng.random(ROWS) > 0.2
    return pa.table(
        {
            "id": pa.array(np.arange(ROWS, dtype=np.int32)),
            "small": pa.array(rng.integers(0, 50, ROWS, dtype=np.int64)),
            "wide": pa.array(rng.integers(-(2**62), 2**62, ROWS, dtype=np.int64)),
            "price": pa.array(np.round(rng.random(ROWS) * 1000, 2)),
            "ratio": pa.array(rng.standard_normal(ROWS).astype(np.float32), mask=~valid),
            "flag": pa.array(rng.random(ROWS) > 0.5),
            "day": pa.array(rng.integers(8000, 9000, ROWS, dtype=np.int32), pa.int32()).cast(pa.date32()),
            "constant": pa.array(np.full(ROWS, 7, dtype=np.int64)),
            "nothing": pa.nulls(ROWS, pa.int32()),
        }
    )


def _strings_table(rng: np.random.Generator, version: str) -> pa.Table:
    words = np.array(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"])
    status = np.array(["OPEN", "CLOSED", "PENDING"])
    n = rng.integers(3, 12, ROWS)
    picks = rng.integers(0, len(words), (ROWS, 12))
    text = np.array([" ".join(words[picks[i, : n[i]]]) for i in range(ROWS)])
    urls = np.array([f"https://example.com/catalog/item/{i:06d}?ref=search&page={i % 17}" for i in range(ROWS)])
    long_text = np.array([" ".join(words[picks[i]]) * 30 for i in range(ROWS // 10)])
    valid = rng.random(ROWS) > 0.1
    return pa.table(
        {
            "status": _strings(status[rng.integers(0, 3, ROWS)]),
            "comment": _strings(text, valid),
            "url": _strings(urls),
            "blob": pa.array(
                [bytes(rng.integers(0, 256, int(k), dtype=np.uint8)) for k in rng.integers(0, 40, ROWS)], pa.binary()
            ),
            "long": pa.chunked_array([_strings(np.tile(long_text, 10))]),
            "same": _strings(np.full(ROWS, "constant value")),
        }
    )


def _nested(rng: np.random.Generator, version: str) -> pa.Table:
    lengths = rng.integers(0, 5, ROWS)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    items = pa.array(rng.integers(0, 1000, int(offsets[-1]), dtype=np.int64))
    list_valid = rng.random(ROWS) > 0.15
    lists = pa.ListArray.from_arrays(pa.array(offsets), items, mask=pa.array(~list_valid))
    struct_valid = rng.random(ROWS) > 0.1
    xs = pa.array(rng.integers(0, 100, ROWS, dtype=np.int32))
    ys = _strings(np.array([f"name-{k}" for k in rng.integers(0, 200, ROWS)]), rng.random(ROWS) > 0.2)
    # 2.0 cannot hold null structs (UnsupportedTypeError): only their children are null there
    struct_mask = None if version == "2.0" else pa.array(~struct_valid)
    structs = pa.StructArray.from_arrays([xs, ys], names=["x", "y"], mask=struct_mask)
    inner_lengths = rng.integers(0, 3, ROWS)
    inner_offsets = np.concatenate([[0], np.cumsum(inner_lengths)]).astype(np.int32)
    k = int(inner_offsets[-1])
    inner = pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 9, k, dtype=np.int16)), pa.array(rng.random(k))], names=["a", "b"]
    )
    list_struct = pa.ListArray.from_arrays(pa.array(inner_offsets), inner)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(ROWS * 8).astype(np.float32)), 8)
    return pa.table({"tags": lists, "person": structs, "parts": list_struct, "embedding": vec})


TABLES = {"primitive": _primitive, "strings": _strings_table, "nested": _nested}
VERSIONS = ["2.0", "2.1", "2.2"]
#: (table, max_page_bytes): the default settings, and one small-page case
CASES = [(name, None) for name in TABLES] + [("primitive", 4096)]

#: (table, version, max_page_bytes) -> sha256 of the written file
EXPECTED: dict[tuple[str, str, int | None], str] = {
    ("primitive", "2.0", None): "ac8dc9cfc20e60591806d4be8383d9b96bfe3b7d243d9aff2bffa73ceae33e72",
    ("primitive", "2.1", None): "a6421b6607a7042bed5ddc917a766a620a1efebd6f96f4ba9f11ec5fad143777",
    ("primitive", "2.2", None): "5c6e785639214e749f8cc094638ae2f3e5ef640c10da8ab98bf5542e073e03a3",
    ("strings", "2.0", None): "77cc25172750dec74c011d0a496f5428a7b3333af6fae5911111d9c3e8826f28",
    ("strings", "2.1", None): "1f1a0ca59a90f27f2094571d573e31f80b8f337c00e513c7106b851846ec8d12",
    ("strings", "2.2", None): "d5f3625987035cfc6767005d8ba09ca9e9b3360dd3943576add9da8c88a2bc41",
    ("nested", "2.0", None): "1be02d2545704f24d37716215696de3419b4d54227cd4fb23b575868ed133d66",
    ("nested", "2.1", None): "0241894ca5a8744a7059d4a10d88350738130daca3c42f8dca10505ebeea610a",
    ("nested", "2.2", None): "cd8a4af16e703f56805fc86c4989bbe128b410fc73f3d2bec6accdd67ffd2b78",
    ("primitive", "2.0", 4096): "a439bbe89b7f674fa0c3cf0dadfa9baed9f90cd5ecb168af0f781b6f7ba44ca1",
    ("primitive", "2.1", 4096): "ca7d679e9701f4f2cc39473e5d3526b672b4a739b821b78abd08da6e6bb91309",
    ("primitive", "2.2", 4096): "9ba51555a9f370c4ef7f25c7fd81e4278e7df11f532a90d1263f0d9ef718e162",
}


def _table(name: str, version: str) -> pa.Table:
    return TABLES[name](np.random.default_rng(20241123), version)


def _write(tmp_path, name: str, version: str, max_page_bytes: int | None, tag: str) -> tuple[str, str]:
    path = str(tmp_path / f"{name}-{version}-{max_page_bytes}-{tag}.lance")
    write_table(_table(name, version), path, version=version, max_page_bytes=max_page_bytes)
    with open(path, "rb") as f:
        return path, hashlib.sha256(f.read()).hexdigest()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name,max_page_bytes", CASES)
def test_file_hash(tmp_path, name, version, max_page_bytes):
    path, digest = _write(tmp_path, name, version, max_page_bytes, "a")
    _, again = _write(tmp_path, name, version, max_page_bytes, "b")
    assert digest == again, "the writer is not deterministic: two writes of the same table differ"
    got = lance_file.LanceFileReader(path).read_all().to_table()
    assert got.equals(_table(name, version)), "pylance does not read the file back equal"
    key = (name, version, max_page_bytes)
    if os.environ.get("LANCELOT_PRINT_HASHES"):
        print(f"    {key!r}: {digest!r},".replace("'", '"'))
    assert EXPECTED.get(key) == digest, (
        f"the bytes written for {key} changed (sha256 {digest}). If the change is intended, update "
        "EXPECTED in tests/file/test_byte_identical.py and say why the written bytes changed in the commit message."
    )
