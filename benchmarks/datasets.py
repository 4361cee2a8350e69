"""Benchmark datasets: a seeded synthetic table, constant columns, TPC-H tables, cached as Arrow IPC files.

Every dataset is built once under the data directory (``benchmarks/data/`` by default, gitignored)
and reused by later runs.  The cache is an uncompressed Arrow IPC file so that a measurement
subprocess can load the exact same table quickly before it writes it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lancelot.testing import tpch

#: rows per generated batch; batch ``i`` is generated from ``seed + i`` so any prefix is reproducible
BATCH_ROWS = 65_536
VECTOR_DIM = 128
CATEGORIES = ["alpha", "beta", "gamma", "delta"]
_VOCAB = (
    "lance columnar file page chunk buffer random access scan vector search arrow table row value "
    "fast small large quick brown fox jumps over lazy dog data engine query index fragment version "
    "north south east west red green blue yellow apple river stone cloud light dark"
).split()

SYNTHETIC_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("small", pa.int32(), nullable=False),
        pa.field("value", pa.float64(), nullable=False),
        pa.field("category", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("vector", pa.list_(pa.field("item", pa.float32()), VECTOR_DIM), nullable=False),
    ]
)


@dataclass(frozen=True)
class Dataset:
    """A cached benchmark table: ``arrow_path`` holds it as an Arrow IPC file."""

    name: str
    arrow_path: Path
    num_rows: int
    schema: pa.Schema

    def load(self) -> pa.Table:
        """Read the whole table into (anonymous) memory, not memory-mapped."""
        return load_arrow(self.arrow_path)


def load_arrow(path: str | os.PathLike) -> pa.Table:
    with pa.OSFile(os.fspath(path), "rb") as f:
        return pa.ipc.open_file(f).read_all()


def synthetic_batch(start_row: int, num_rows: int, seed: int) -> pa.RecordBatch:
    """One batch of the synthetic table; row ``start_row`` gets id ``start_row``."""
    rng = np.random.default_rng(seed)
    ids = np.arange(start_row, start_row + num_rows, dtype=np.int64)
    small = rng.integers(0, 1000, num_rows, dtype=np.int32)
    value = rng.standard_normal(num_rows)
    category = pa.array(CATEGORIES).take(pa.array(rng.integers(0, len(CATEGORIES), num_rows)))
    # short free text: 2..8 words from a small vocabulary, joined with spaces (vectorized)
    nwords = rng.integers(2, 9, num_rows)
    offsets = np.zeros(num_rows + 1, dtype=np.int32)
    np.cumsum(nwords, out=offsets[1:])
    words = pa.array(_VOCAB).take(pa.array(rng.integers(0, len(_VOCAB), int(offsets[-1]))))
    text = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), words), " ")
    vec = rng.standard_normal(num_rows * VECTOR_DIM, dtype=np.float32)
    vector = pa.FixedSizeListArray.from_arrays(pa.array(vec), VECTOR_DIM)
    return pa.RecordBatch.from_arrays(
        [pa.array(ids), pa.array(small), pa.array(value), category, text, vector], schema=SYNTHETIC_SCHEMA
    )


def synthetic_batches(num_rows: int, seed: int, batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The synthetic table, batch by batch (batch ``i`` is seeded with ``seed + i``)."""
    for i, start in enumerate(range(0, num_rows, batch_rows)):
        yield synthetic_batch(start, min(batch_rows, num_rows - start), seed + i)


def synthetic_batches_until(num_bytes: int, seed: int, batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Synthetic batches until at least ``num_bytes`` of Arrow data were produced (streaming check)."""
    produced, i, start = 0, 0, 0
    while produced < num_bytes:
        b = synthetic_batch(start, batch_rows, seed + i)
        produced += b.nbytes
        start += batch_rows
        i += 1
        yield b


def _write_ipc(path: Path, schema: pa.Schema, batches) -> int:
    tmp = path.with_suffix(".arrow.tmp")
    rows = 0
    with pa.OSFile(str(tmp), "wb") as f, pa.ipc.new_file(f, schema) as w:
        for b in batches:
            w.write_batch(b)
            rows += b.num_rows
    os.replace(tmp, path)
    return rows


def _dataset_from_cache(name: str, path: Path) -> Dataset:
    with pa.memory_map(str(path)) as f:
        r = pa.ipc.open_file(f)
        rows = sum(r.get_batch(i).num_rows for i in range(r.num_record_batches))
        return Dataset(name, path, rows, r.schema)


def synthetic(data_dir: Path, num_rows: int, seed: int = 42, log=print) -> Dataset:
    """The seeded synthetic table (built if missing)."""
    name = f"synthetic-{num_rows}"
    path = data_dir / f"{name}-seed{seed}.arrow"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        log(f"building {name} -> {path}")
        _write_ipc(path, SYNTHETIC_SCHEMA, synthetic_batches(num_rows, seed))
    return _dataset_from_cache(name, path)


def tpch_table(data_dir: Path, sf: float, table: str = "lineitem", log=print) -> Dataset:
    """TPC-H ``table`` (lineitem, orders, ...) at scale factor ``sf`` from tpchgen-cli (built if missing)."""
    sf_tag = f"{sf:g}"
    name = f"tpch-sf{sf_tag}-{table}"
    path = data_dir / f"{name}.arrow"
    if not path.exists():
        gen_dir = data_dir / f"tpch-sf{sf_tag}"
        pq_path = gen_dir / f"{table}.parquet"
        if not pq_path.exists():
            gen_dir.mkdir(parents=True, exist_ok=True)
            log(f"generating TPC-H {table} SF{sf_tag} with tpchgen-cli -> {gen_dir}")
            tpch.generate(gen_dir, sf, [table], quiet=False)
        log(f"converting {pq_path} -> {path}")
        pf = pq.ParquetFile(pq_path)
        schema = tpch.plain_schema(pf.schema_arrow)
        batches = (b.cast(schema) for b in pf.iter_batches(BATCH_ROWS))
        _write_ipc(path, schema, batches)
    return _dataset_from_cache(name, path)


def tpch_lineitem(data_dir: Path, sf: float, log=print) -> Dataset:
    """TPC-H lineitem at scale factor ``sf`` (see ``tpch_table``)."""
    return tpch_table(data_dir, sf, "lineitem", log)


CONSTANTS_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("const_int", pa.int32(), nullable=False),
        pa.field("const_str", pa.string(), nullable=False),
        pa.field("flag", pa.bool_(), nullable=False),
        pa.field("nearly_int", pa.int64(), nullable=True),
        pa.field("nearly_str", pa.string(), nullable=True),
        pa.field("mostly_null", pa.float64(), nullable=True),
    ]
)


def constants_batch(start_row: int, num_rows: int, seed: int) -> pa.RecordBatch:
    """Columns real tables are full of: a constant (2.2 constant page), a partition-key string, a rare
    flag, a default value with rare exceptions (long runs), a default label with rare others, mostly null."""
    rng = np.random.default_rng(seed)
    rare = rng.random(num_rows) < 0.001
    nearly = np.where(rare, rng.integers(1, 1_000_000, num_rows), 0)
    labels = np.where(rng.random(num_rows) < 0.002, "returned", "none")
    null = rng.random(num_rows) >= 0.01
    return pa.RecordBatch.from_arrays(
        [
            pa.array(np.arange(start_row, start_row + num_rows, dtype=np.int64)),
            pa.array(np.zeros(num_rows, dtype=np.int32)),
            pa.array(["region=emea"] * num_rows, pa.string()),
            pa.array(rare),
            pa.array(nearly, pa.int64(), mask=rng.random(num_rows) < 0.0005),
            pa.array(labels.tolist(), pa.string()),
            pa.array(rng.normal(size=num_rows), pa.float64(), mask=null),
        ],
        schema=CONSTANTS_SCHEMA,
    )


def constants(data_dir: Path, num_rows: int, seed: int = 42, log=print) -> Dataset:
    """The constant and nearly-constant columns table (built if missing)."""
    name = f"constants-{num_rows}"
    path = data_dir / f"{name}-seed{seed}.arrow"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        log(f"building {name} -> {path}")
        batches = (
            constants_batch(s, min(BATCH_ROWS, num_rows - s), seed + i)
            for i, s in enumerate(range(0, num_rows, BATCH_ROWS))
        )
        _write_ipc(path, CONSTANTS_SCHEMA, batches)
    return _dataset_from_cache(name, path)
