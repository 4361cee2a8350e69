"""Zone statistics computed on a pool (the writer's page threads) equal those computed in line."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from lancelot.zonemaps import ZoneMapBuilder, parse_zone_maps


def _batches(n: int = 150_000, size: int = 7_000):
    rng = np.random.default_rng(11)
    t = pa.table(
        {
            "i": pa.array(rng.integers(-5000, 5000, n), mask=rng.random(n) < 0.05),
            "f": rng.random(n),
            "s": pa.array([f"k{v:05d}" for v in rng.integers(0, 99999, n)]),
            "b": pa.array(rng.random(n) < 0.5),  # no numpy fast path: the group-by fallback
            "d": pa.array(rng.integers(0, 10**6, n)).cast(pa.decimal128(22, 2)),
            "st": pa.StructArray.from_arrays([pa.array(np.arange(n))], names=["x"]),
            "l": pa.array([[1]] * n, pa.list_(pa.int64())),  # no statistics
        }
    )
    return t.schema, t.to_batches(max_chunksize=size)


def test_pool_matches_inline():
    schema, batches = _batches()
    inline = ZoneMapBuilder(schema)
    with ThreadPoolExecutor(2) as pool:
        pooled = ZoneMapBuilder(schema, run=pool.submit)
        for b in batches:
            inline.update(b)
            pooled.update(b)
        got = pooled.finish()
    want = inline.finish()
    assert got == want
    zm = parse_zone_maps(want)
    assert zm.num_rows == 150_000 and zm.column("s") is not None and zm.column(["st", "x"]) is not None


def test_failing_column_is_dropped_on_the_pool_too():
    """A column whose statistics fail is left out (not an error), whether computed in line or on the pool."""
    schema = pa.schema([("a", pa.int64()), ("x", pa.int64())])
    t = pa.table({"a": np.arange(100_000), "x": np.arange(100_000)}, schema=schema)

    class Broken(ZoneMapBuilder):
        def _column_stats(self, column, path, nzones):
            if path == ("x",):
                return None
            return super()._column_stats(column, path, nzones)

    outs = []
    with ThreadPoolExecutor(2) as pool:
        for run in (None, pool.submit):
            b = Broken(schema, run=run)
            for batch in t.to_batches(max_chunksize=30_000):
                b.update(batch)
            outs.append(b.finish())
    assert outs[0] == outs[1]
    zm = parse_zone_maps(outs[0])
    assert zm.column("a") is not None and zm.column("x") is None
