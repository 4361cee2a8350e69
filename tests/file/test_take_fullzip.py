"""Takes from fixed-width full-zip columns (structural/column_points.ColumnFullZipPoints) of
pylance-written 2.1/2.2 files: a few rows (planned in Python ints; rows that are just their
values' bytes become Arrow arrays without decoding) and more, scattered, clustered and adjacent,
across pages; pylance is the oracle."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

import lancelot

ROWS = 6_000


def _table() -> pa.Table:
    rng = np.random.default_rng(5)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(ROWS * 128, dtype=np.float32)), 128)
    wide = pa.FixedSizeListArray.from_arrays(pa.array(rng.integers(0, 1 << 60, ROWS * 32)), 32)
    nulls = rng.random(ROWS) < 0.2
    with_nulls = pa.FixedSizeListArray.from_arrays(
        pa.array(rng.random(ROWS * 64, dtype=np.float32)), 64, mask=pa.array(nulls)
    )
    return pa.table({"vec": vec, "wide": wide, "vn": with_nulls})


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_full_zip_takes_equal_pylance(tmp_path, version):
    table = _table()
    path = str(tmp_path / f"fz-{version}.lance")
    with LanceFileWriter(path, version=version, max_page_bytes=256 * 1024, data_cache_bytes=256 * 1024) as w:
        for b in table.to_batches(max_chunksize=1000):
            w.write_batch(b)
    f = lancelot.LanceFile(path)
    ref = LanceFileReader(path)
    rng = np.random.default_rng(2)
    sets = [np.sort(rng.choice(ROWS, k, replace=False)) for k in (1, 10, 64, 300)]
    sets += [start + np.sort(rng.choice(1000, 10, replace=False)) for start in (0, 2500, ROWS - 1000)]
    sets += [np.arange(990, 1010), np.array([0, ROWS - 1])]
    paths = f.explain_take(sets[1])
    assert paths["vec"] == paths["wide"] == ["points/ColumnFullZipPoints"], paths
    plain = {c: f._reader(f.schema.field(c))._points.plain for c in ("vec", "wide", "vn")}
    assert plain["vec"] == table.schema.field("vec").type and plain["wide"] is not None, plain
    assert plain["vn"] is None  # rows with a control word: decoded
    assert len(f._reader(f.schema.field("vec")).columns[0].col.meta.pages) > 3
    for rows in sets:
        got = f.take(rows)
        assert got.equals(ref.take_rows(rows.tolist()).to_table().cast(got.schema)), rows
        assert got.equals(table.take(pa.array(rows))), rows
