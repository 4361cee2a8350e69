"""DataFusion's short-circuit of ``AND`` / ``OR`` for a filter that fails on rows DataFusion never evaluates.

DataFusion evaluates the right side of ``a AND b`` per batch only where it matters: not at all when ``a`` is false
on every row (``OR``: true on every row), only on the rows ``a`` keeps when it keeps at most a fifth of them (none
null).  A guard such as ``x <> 0 AND y / x > 1`` may so succeed in pylance where pyarrow, which evaluates both sides
on every row, fails.  The translator remembers each ``AND`` / ``OR`` it builds (``remember``); a filter that fails
is evaluated again here, batch by batch, as DataFusion would (``mask``), and fails only if that fails too.
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: DataFusion's share of rows at or under which ``AND`` evaluates its right side on the rows its left keeps only
PRE_SELECTION = 0.2
#: rows DataFusion's scans filter at a time (pylance's batch size)
BATCH = 8192
#: the column of a fragment's id in rows of several fragments read together (dataset/fragment_groups.py)
FRAGMENT = "__lancelot_fragment"

_PARTS: dict[str, tuple[bool, pc.Expression, pc.Expression]] = {}
_LOCK = threading.Lock()
_LIMIT = 4096


def remember(expr: pc.Expression, is_and: bool, left: pc.Expression, right: pc.Expression) -> None:
    """Note that ``expr`` is ``left AND right`` (``is_and``) or ``left OR right``."""
    with _LOCK:
        if len(_PARTS) >= _LIMIT:
            _PARTS.clear()
        _PARTS[str(expr)] = (is_and, left, right)


def known(expr: pc.Expression) -> bool:
    """Whether ``expr`` is an ``AND`` / ``OR`` the translator built."""
    return str(expr) in _PARTS


def mask(table: pa.Table, expr: pc.Expression) -> pa.ChunkedArray:
    """``expr`` over ``table``'s rows as DataFusion evaluates it, batch by batch (pyarrow's errors raised).

    Args:
        table: The rows.
        expr: A boolean expression.

    Returns:
        Its values, one per row.
    """
    bounds = [0, table.num_rows]
    if FRAGMENT in table.column_names:  # a run of fragments read together: each its own batches
        ids = table.column(FRAGMENT).to_numpy()
        bounds = [0, *(np.flatnonzero(np.diff(ids)) + 1).tolist(), table.num_rows]
    parts = [
        _value(table.slice(at, min(BATCH, stop - at)), expr)
        for start, stop in zip(bounds, bounds[1:], strict=False)
        for at in range(start, stop, BATCH)
    ]
    return pa.chunked_array(parts or [pa.array([], pa.bool_())], pa.bool_())


def _plain(table: pa.Table, expr: pc.Expression) -> pa.Array:
    import pyarrow.dataset as pads

    return pads.dataset(table).to_table(columns={"v": expr}).column("v").combine_chunks()


def _value(table: pa.Table, expr: pc.Expression) -> pa.Array:
    parts = _PARTS.get(str(expr))
    if parts is None:
        return _plain(table, expr)
    is_and, left, right = parts
    lhs = _value(table, left)
    n = len(lhs)
    if n and not lhs.null_count:
        trues = int(pc.sum(lhs).as_py() or 0)
        if trues == (0 if is_and else n):
            return lhs
        if trues == (n if is_and else 0):
            return _value(table, right)
        if is_and and trues / n <= PRE_SELECTION:  # the right side on the kept rows only, false elsewhere
            kept = _value(table.filter(lhs), right)
            return pc.replace_with_mask(pa.array([False] * n, pa.bool_()), lhs, kept)
    rhs = _value(table, right)
    return pc.and_kleene(lhs, rhs) if is_and else pc.or_kleene(lhs, rhs)
