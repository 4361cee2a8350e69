"""Fixtures shared by the file tests."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from tests.helpers import CHUNKY_ROWS, pylance_write


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def chunky(request, tmp_path_factory) -> str:
    """A file written by pylance with two pages per column (``CHUNKY_ROWS`` rows each) of many mini-block chunks
    each: integers, nullable floats, a page dictionary of short strings, FSST text, decimals and dates."""
    rng = np.random.default_rng(11)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]

    def batch(b: int) -> pa.Table:
        i = np.arange(b * CHUNKY_ROWS, (b + 1) * CHUNKY_ROWS)
        return pa.table(
            {
                "id": pa.array(i * 7919 % 1000003, pa.int64()),
                "f": pa.array([None if k % 7 == 0 else k / 8 for k in i.tolist()], pa.float64()),
                "flag": pa.array([words[k] for k in rng.integers(0, len(words), CHUNKY_ROWS).tolist()]),
                "text": pa.array([f"the {words[k % 6]} of row {k} and {words[(k * 5) % 6]} again" for k in i.tolist()]),
                "price": pa.array([Decimal(int(k) * 37 % 100000) / 100 for k in i.tolist()], pa.decimal128(15, 2)),
                "day": pa.array((i % 3000).astype(np.int32), pa.int32()).cast(pa.date32()),
            }
        )

    path = tmp_path_factory.mktemp("chunky") / f"chunky-{request.param}.lance"
    return pylance_write(path, [batch(0), batch(1)], request.param, data_cache_bytes=1)
