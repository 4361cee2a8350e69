"""Point reads over a column whose pages differ in technique (column_points.py, by runs of pages).

pylance chooses the compression of each page on its own: a string column may be FSST on
three pages and dictionary-encoded on the fourth (TPC-H ``o_clerk``).  ``ColumnPoints``
needs one technique for the whole column, so such a column used to fall back to the
page-by-page path (a plan, a decode and an Arrow array per page touched).  Here the pages
are cut into runs of consecutive pages of one shape, each run gets its ``ColumnPoints``,
and a take plans every run's rows, fetches all their chunks in one call and decodes run by
run, concatenating in row order (runs are consecutive, rows sorted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancelot.encodings.structural.column_points import ColumnPoints, PointPlan
from lancelot.encodings.structural.page import PageReader

#: more runs than this and the column keeps the page-by-page path
MAX_RUNS = 64


@dataclass
class GroupPlan:
    """Per run touched: (run index, its rows, its plan, how many of the fetched ranges are its)."""

    parts: list[tuple[int, np.ndarray, PointPlan, int]]


class ColumnPointGroups:
    """``ColumnPoints`` over runs of same-shape pages (see the module docstring)."""

    def __init__(self, runs: list[ColumnPoints], run_ends: np.ndarray, run_firsts: np.ndarray) -> None:
        self.runs = runs
        self.run_ends = run_ends  # first column row after each run
        self.run_firsts = run_firsts

    @classmethod
    def of(
        cls,
        pages: list[PageReader],
        page_firsts: np.ndarray,
        page_ends: np.ndarray,
        value_type: pa.DataType,
        column: int,
        page_ids: Sequence[int],
    ) -> ColumnPointGroups | None:
        """The grouped reader, or None unless every page has a point reader and there are 2+ runs."""
        if len(pages) < 2 or pa.types.is_dictionary(value_type):
            return None
        shapes = [ColumnPoints.shape(p) for p in pages]
        if None in shapes:
            return None
        cuts = [0] + [i for i in range(1, len(pages)) if shapes[i] != shapes[i - 1]] + [len(pages)]
        if len(cuts) == 2 or len(cuts) - 1 > MAX_RUNS:
            return None
        runs = []
        for a, b in zip(cuts[:-1], cuts[1:]):
            run = ColumnPoints.of(pages[a:b], page_firsts[a:b], value_type, column, page_ids[a:b])
            if run is None:
                return None
            runs.append(run)
        ends = np.array([int(page_ends[b - 1]) for b in cuts[1:]], dtype=np.int64)
        firsts = np.array([int(page_firsts[a]) for a in cuts[:-1]], dtype=np.int64)
        return cls(runs, ends, firsts)

    def _split(self, rows: np.ndarray) -> list[tuple[int, np.ndarray]]:
        run_of = self.run_ends.searchsorted(rows, side="right")
        first, last = int(run_of[0]), int(run_of[-1])
        if first == last:  # one run (a clustered take)
            return [(first, rows)]
        cuts = np.flatnonzero(run_of[1:] != run_of[:-1]) + 1
        bounds = [0, *cuts.tolist(), len(rows)]
        return [(int(run_of[a]), rows[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]

    def plan(self, rows: np.ndarray) -> tuple[GroupPlan, list[tuple[int, int]]]:
        parts, ranges = [], []
        for g, sub in self._split(rows):
            plan, rs = self.runs[g].plan(sub)
            parts.append((g, sub, plan, len(rs)))
            ranges.extend(rs)
        return GroupPlan(parts), ranges

    def decode(self, rows: np.ndarray, plan: GroupPlan, bufs: list[memoryview]) -> pa.Array:
        arrays, pos = [], 0
        for g, sub, sub_plan, n in plan.parts:
            arrays.append(self.runs[g].decode(sub, sub_plan, bufs[pos : pos + n]))
            pos += n
        if len(arrays) == 1:
            return arrays[0]
        t = arrays[0].type
        return pa.concat_arrays([a if a.type == t else a.cast(t) for a in arrays])
