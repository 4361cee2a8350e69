"""Where blob bytes sit in the data file: lancelot lays out the out-of-line values of blob v1 (2.0, 2.1)
and the inline values of blob v2 (2.2) as pylance does, each non-empty value on a 64-byte boundary, so
the descriptions scanned from both libraries' datasets are equal, position for position, over several
batches and several blob columns with nulls and empty values; pylance reads lancelot's bytes back."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from tests.dataset.helpers import blob_bytes

BLOB = {"lance-encoding:blob": "true"}
SCHEMA = pa.schema(
    [
        pa.field("a", pa.large_binary(), metadata=BLOB),
        pa.field("i", pa.int64()),
        pa.field("b", pa.large_binary(), metadata=BLOB),
    ]
)


def _batch(n: int, seed: int) -> pa.RecordBatch:
    """Blobs of random sizes (0..300 bytes, some of them multiples of 64), nulls and empty values."""
    rng = np.random.default_rng(seed)

    def col() -> pa.Array:
        out: list[bytes | None] = []
        for _ in range(n):
            c = int(rng.integers(0, 7))
            size = 64 * int(rng.integers(1, 4)) if c == 6 else int(rng.integers(1, 300))
            out.append(None if c == 0 else b"" if c == 1 else rng.integers(0, 256, size, dtype=np.uint8).tobytes())
        return pa.array(out, pa.large_binary())

    return pa.record_batch([col(), pa.array(range(n), pa.int64()), col()], schema=SCHEMA)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2", "2.3"])
def test_blob_positions_match_pylance(tmp_path, version):
    batches = [_batch(40, seed) for seed in range(4)]
    paths = {}
    for name, mod in [("pylance", lance), ("lancelot", lancelot)]:
        paths[name] = str(tmp_path / name)
        mod.write_dataset(pa.RecordBatchReader.from_batches(SCHEMA, batches), paths[name], data_storage_version=version)
    theirs, ours = lance.dataset(paths["pylance"]), lance.dataset(paths["lancelot"])
    for col in ["a", "b"]:
        desc = ours.to_table(columns=[col]).column(col)
        assert desc == theirs.to_table(columns=[col]).column(col)
        pos = np.array([d["position"] for d in desc.to_pylist() if d and d["size"]])
        assert len(pos) and not np.any(pos % 64)
        rows = list(range(160))
        assert blob_bytes(ours.take_blobs(col, indices=rows)) == blob_bytes(theirs.take_blobs(col, indices=rows))
        assert lancelot.dataset(paths["lancelot"]).to_table(columns=[col]).column(col) == desc
