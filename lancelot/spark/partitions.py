"""Spark input partitions of a Lance read: row ranges ``(where, start, stop)`` a task reads, and ``pack_slices``, which
cuts row ranges into partitions of about one budget each (shared by the loose-file reader, lancelot/spark/reader.py, and
the dataset scan, lancelot/spark/dataset_scan.py); ``pack_whole`` groups whole units (fragments) the same way, for the
tasks of the change operations (lancelot/spark/jobs.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql.datasource import InputPartition


class SlicesPartition(InputPartition):
    """Row ranges of a scan: ``slices`` = ((where, start, stop), ...), what a task reads."""

    def __init__(self, slices: Sequence[tuple[Any, int, int]]) -> None:
        super().__init__(tuple(slices))

    @property
    def slices(self) -> tuple[tuple[Any, int, int], ...]:
        slices: tuple[tuple[Any, int, int], ...] = self.value
        return slices

    @property
    def num_rows(self) -> int:
        return sum(stop - start for _, start, stop in self.slices)


class LancePartition(SlicesPartition):
    """Row ranges of one or more files: ``slices`` = ((path, start, stop), ...)."""


def pack_slices(
    units: Sequence[tuple[Any, int, int, int]],
    ranges: Mapping[Any, Sequence[tuple[int, int]]] | None,
    rows_per_partition: int | None,
    bytes_per_partition: int,
    min_partitions: int,
    min_partition_bytes: int,
) -> list[list[tuple[Any, int, int]]]:
    """Cut the row ranges of ``units`` = ((where, physical rows, bytes, live rows), ...) into partitions of about one
    budget each (``ranges[where]``, or all of a unit when ``ranges`` is None; units without live rows are skipped):
    ``rows_per_partition`` rows if given, else bytes estimated from each unit's bytes per row, ``bytes_per_partition``
    lowered (not below ``min_partition_bytes``) so that all the units make at least ``min_partitions`` partitions, as
    Spark's file sources do with the default parallelism.  The budget comes from the whole units, so pruned ranges only
    ever drop partitions. A big unit becomes several partitions; consecutive small pieces share one."""
    parts: list[list[tuple[Any, int, int]]] = []
    current: list[tuple[Any, int, int]] = []
    weight = 0.0
    units = [u for u in units if u[3]]
    if rows_per_partition:
        budget = float(rows_per_partition)
    else:
        total = sum(size for _, _, size, _ in units)
        budget = float(min(bytes_per_partition, max(min_partition_bytes, -(-total // max(1, min_partitions)))))
    for where, rows, size, live in units:
        per_row = 1.0 if rows_per_partition else max(size / max(1, rows), 1e-9)
        # rows per piece, rounded up: a budget of half the data cuts it in two pieces, not two and a sliver
        piece = int(budget) if rows_per_partition else -(-int(budget) * max(1, rows) // max(1, size))
        piece = max(1, piece)
        for start, stop in ranges[where] if ranges is not None else [(0, live)]:
            for a in range(start, stop, piece):
                b = min(stop, a + piece)
                w = (b - a) * per_row
                if current and weight + w > budget * (1 + 1e-9):
                    parts.append(current)
                    current, weight = [], 0.0
                current.append((where, a, b))
                weight += w
    if current:
        parts.append(current)
    return parts


def pack_whole(
    units: Sequence[tuple[Any, int]], bytes_per_partition: int, min_partitions: int, min_partition_bytes: int
) -> list[list[Any]]:
    """Group ``units`` = ((what, bytes), ...) in order into partitions of about one budget each, as ``pack_slices``
    packs (bytes mode), but never cutting a unit: consecutive small units share a partition, a unit over the budget is
    one alone (every unit is kept, whatever its size)."""
    packed = pack_slices(
        [(what, 1, max(1, size), 1) for what, size in units],
        None,
        None,
        bytes_per_partition,
        min_partitions,
        min_partition_bytes,
    )  # one row per unit: its one piece is all of it
    return [[what for what, _, _ in part] for part in packed]
