"""The vectorized 2.0 take plans (lancelot/encodings/v2_0/take_plans.py).

For the column shapes pylance 14.0.2 writes at 2.0 (flat values with no/some/all nulls,
fixed-size lists of them (vectors), low-cardinality strings as 1-based dictionaries, binary
with null-adjusted offsets), the plan must be chosen (asserted, so a silent fallback to the
generic decoder is caught) and give exactly what pylance's own take gives, over several
pages; a corrupt offset must raise a CorruptFileError naming the column and page.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

import lancelot
from lancelot.encodings.v2_0.take_plans import BinaryPlan, DictionaryPlan, FlatPlan
from lancelot.errors import CorruptFileError

ROWS = 30_000


def _table() -> pa.Table:
    rng = np.random.default_rng(5)
    some = rng.random(ROWS) < 0.2
    half = np.arange(ROWS) >= ROWS // 2  # first half all valid, second half nulls: pages of each kind
    words = np.array(["alpha", "beta", "gamma", "delta"])
    text = [f"row {i} " + "x" * int(rng.integers(0, 40)) for i in range(ROWS)]
    return pa.table(
        {
            "i64": pa.array(rng.integers(-(2**40), 2**40, ROWS), pa.int64()),
            "f32_some": pa.array(rng.random(ROWS).astype(np.float32), mask=some),
            "i16_half": pa.array(rng.integers(-100, 100, ROWS).astype(np.int16), mask=half),
            "dec": pa.array([None if s else i for i, s in zip(range(ROWS), some)], pa.decimal128(12, 2)),
            "ts": pa.array(rng.integers(0, 2**40, ROWS), pa.timestamp("us", "UTC")),
            "cat": pa.array(words[rng.integers(0, 4, ROWS)], mask=some),
            "text": pa.array(text, mask=some),
            "ltext": pa.array(text, pa.large_string()),
            "nulls_text": pa.array([None] * ROWS, pa.string()),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(ROWS * 8).astype(np.float32)), 8),
            "vec_some": pa.FixedSizeListArray.from_arrays(
                pa.array(rng.integers(0, 9, ROWS * 3), pa.int16()), 3, mask=pa.array(some)
            ),
        }
    )


EXPECTED = {
    "i64": FlatPlan,
    "f32_some": FlatPlan,
    "i16_half": FlatPlan,
    "dec": FlatPlan,
    "ts": FlatPlan,
    "cat": DictionaryPlan,
    "text": BinaryPlan,
    "ltext": BinaryPlan,
    "vec": FlatPlan,
    "vec_some": FlatPlan,
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    table = _table()
    d = tmp_path_factory.mktemp("plans")
    py, ll = d / "py.lance", d / "ll.lance"
    w = LanceFileWriter(str(py), table.schema, version="2.0", max_page_bytes=64 * 1024)
    w.write_batch(table)
    w.close()
    lancelot.write_table(table, ll, version="2.0", max_page_bytes=64 * 1024)
    return table, py, ll


@pytest.mark.parametrize("writer", ["pylance", "lancelot"])
def test_plans_chosen_and_equal_to_pylance(files, writer):
    table, py, ll = files
    path = py if writer == "pylance" else ll
    f = lancelot.LanceFile(path)
    ref = LanceFileReader(str(path))
    rng = np.random.default_rng(1)
    for rows in (
        rng.choice(ROWS, 50, replace=False),
        np.arange(ROWS // 2 - 5, ROWS // 2 + 5),
        np.array([0, ROWS - 1, 0, 17, 17]),
    ):
        got = f.take(rows)
        want = ref.take_rows(np.sort(np.unique(rows))).to_table()
        order = np.searchsorted(np.sort(np.unique(rows)), rows)
        assert got.equals(want.take(pa.array(order)).cast(got.schema)), rows
        assert got.equals(table.take(pa.array(rows)))
    for name, cls in EXPECTED.items():
        plan = f._reader(f.schema.field(name))._plan
        if writer == "pylance" or cls is not DictionaryPlan:
            assert isinstance(plan, cls), (name, plan)
    assert len(f._reader(f.schema.field("i64")).root.col.info.meta.pages) > 3  # several pages really


def test_corrupt_offset_names_column_and_page(files, tmp_path):
    _, py, _ = files
    f = lancelot.LanceFile(py)
    col = f._reader(f.schema.field("text")).root.col
    page = col.info.meta.pages[1]
    enc = col.encoding(1).binary
    idx_buf = enc.indices.nullable.no_nulls.values.flat.buffer.buffer_index
    pos = page.buffer_offsets[idx_buf]
    data = bytearray(py.read_bytes())
    data[pos : pos + 8] = (2**40).to_bytes(8, "little")  # the end of the page's first value, far past its bytes
    bad = tmp_path / "bad.lance"
    bad.write_bytes(bytes(data))
    g = lancelot.LanceFile(bad)
    with pytest.raises(CorruptFileError) as e:
        g.take([int(col.starts[1]) + 1], columns=["text"])
    assert e.value.column == col.info.index and e.value.page == 1
