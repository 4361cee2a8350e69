"""Random access reads only what it needs: a 10-row take from a 200k-row column fetches a small
fraction of the column's bytes, in a few requests (counted with lancelot.io.source.CountingSource).

Files come from pylance 14.0.2 (the reference) and from lancelot, at every format version; a
version lancelot cannot read or write yet is skipped with the reason it gave.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.io.source import CountingSource, LocalFileSource

ROWS = 200_000
TAKE = 10


def _table(kind: str) -> pa.Table:
    rng = np.random.default_rng(11)
    if kind == "int64":
        col = pa.array(rng.integers(-(2**62), 2**62, ROWS), pa.int64())  # random: no compression helps
    else:
        words = pa.array([f"value-{i:07d}-" + "x" * (i % 23) for i in range(1000)])
        col = words.take(pa.array(rng.integers(0, 1000, ROWS)))
    return pa.table({"c": col})


def _write(writer: str, version: str, table: pa.Table, path) -> None:
    if writer == "pylance":
        from lance.file import LanceFileWriter

        w = LanceFileWriter(str(path), table.schema, version=version)
        w.write_batch(table)
        w.close()
    else:
        lancelot.write_table(table, str(path), version=version)


def _column_bytes(table: pa.Table) -> int:
    return table.column("c").nbytes


@pytest.mark.parametrize("kind", ["int64", "string"])
@pytest.mark.parametrize("writer", ["pylance", "lancelot"])
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_small_take_reads_a_small_fraction(tmp_path, version, writer, kind):
    table = _table(kind)
    path = tmp_path / f"{writer}-{version}-{kind}.lance"
    _write(writer, version, table, path)
    src = CountingSource(LocalFileSource(path))
    f = lancelot.LanceFile(src)
    open_bytes = src.bytes_read
    src.requests = src.bytes_read = 0

    idx = np.sort(np.random.default_rng(5).choice(ROWS, TAKE, replace=False))
    got = f.take(idx)
    assert got.column("c").to_pylist() == table.column("c").take(pa.array(idx)).to_pylist()

    col = _column_bytes(table)
    # the take itself: a few small reads, not the column (random rows are in different pages/chunks)
    assert src.bytes_read < 0.05 * col, (src.bytes_read, col)
    assert 1 <= src.requests <= 4 * TAKE, src.requests
    # opening (footer, column metadata, schema) is bounded too
    assert open_bytes + src.bytes_read < 0.10 * col, (open_bytes, src.bytes_read, col)


def test_adjacent_rows_are_one_request(tmp_path):
    """Ten neighbouring rows of a plain int64 column lie in one byte run: one request, a few bytes."""
    table = _table("int64")
    path = tmp_path / "p.lance"
    _write("pylance", "2.0", table, path)
    src = CountingSource(LocalFileSource(path))
    f = lancelot.LanceFile(src)
    src.requests = src.bytes_read = 0
    idx = np.arange(123_456, 123_456 + TAKE)
    got = f.take(idx)
    assert got.column("c").to_pylist() == table.column("c").to_pylist()[123_456 : 123_456 + TAKE]
    assert src.requests == 1
    assert src.bytes_read <= 4096 + 8 * TAKE


def test_serial_takes_fetch_every_field_in_one_round(tmp_path):
    """A take of 65-255 rows fetches the ranges of every field's plan in one read_ranges call; a
    take of PARALLEL_MIN_TAKE rows or more runs each field's rounds side by side (a call each).
    Both equal pylance's take of the same rows."""
    from lance.file import LanceFileReader

    from lancelot import reader

    t = pa.table({"a": _table("int64")["c"], "s": _table("string")["c"]})
    path = tmp_path / "t.lance"
    _write("pylance", "2.1", t, path)
    f = lancelot.LanceFile(str(path))
    f.take([0])  # the search caches, once
    calls: list[int] = []
    real = f._src.read_ranges
    f._src.read_ranges = lambda ranges: calls.append(len(ranges)) or real(ranges)
    ref = LanceFileReader(str(path))
    rng = np.random.default_rng(4)
    seen = {}
    for k in (100, reader.PARALLEL_MIN_TAKE, 1000):
        rows = np.sort(rng.choice(ROWS, k, replace=False))
        calls.clear()
        assert f.take(rows).equals(ref.take_rows(rows.tolist()).to_table())
        seen[k] = len(calls)
    assert seen == {100: 1, reader.PARALLEL_MIN_TAKE: 2, 1000: 2}, seen
