"""Step 2 of every take (dataset/take.py): the chosen rows read, one ``Fragment.take_physical`` per touched fragment,
and projected as a scan projects them. It sits below both the scanner and the take (it receives a scanner, never makes
one), so the vector search, which the scanner imports, can read its rows at addresses without an import cycle."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lancelot.dataset.fragment_columns import POS
from lancelot.dataset.row_selection import Rows, by_address, side_by_side
from lancelot.dataset.take_concat import concat_parts
from lancelot.util.arrays import take_table

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.scan_projection import Projection
    from lancelot.dataset.scanner import LanceScanner


def read(ds: LanceDataset, rows: Rows, proj: Projection, scanner: Callable[[], LanceScanner]) -> pa.Table:
    """The rows, projected as ``proj``, in the answer's order: one read per fragment. Plain columns need no scanner
    (each fragment's table is the answer's part); other projections ask ``scanner`` for one (made on demand)."""
    scan: LanceScanner | None = None
    if proj.plain and not proj.rows:
        names = list(proj.names)
        parts = side_by_side(ds, rows.groups, lambda g: g[0].take_physical(names, g[1]))
    else:
        scan = scanner()
        state = scan.state
        cols = state.read_cols()
        bases = state.offset_bases() if "_rowoffset" in proj.rows else None

        def one(g: tuple[Fragment, np.ndarray]) -> pa.Table:
            t = g[0].take_physical(cols, g[1]).append_column(POS, pa.array(g[1]))
            return state.finish(g[0], t, bases)

        parts = side_by_side(ds, rows.groups, one)
    if not parts:
        return (scan or scanner()).projected_schema.empty_table()
    if not parts[0].num_columns:  # (concat_tables and take lose the row count of column-less tables)
        return pa.table({"_": pa.nulls(rows.count)}, metadata=parts[0].schema.metadata).drop_columns(["_"])
    t = parts[0] if len(parts) == 1 else concat_parts(parts)  # (one chunk per column, as pylance's take)
    return take_table(t, pa.array(rows.back)) if rows.back is not None else t


def rows_at(ds: LanceDataset, addr: np.ndarray, scan: LanceScanner, *, ignore_deletions: bool) -> pa.Table:
    """Rows at row addresses, in order, projected as ``scan`` projects; deleted ones dropped unless
    ``ignore_deletions``."""
    return read(ds, by_address(ds, addr, "keep" if ignore_deletions else "drop"), scan.state.proj, lambda: scan)
