"""Exact nearest-neighbour search: ``to_table(nearest={"column", "q", "k", "metric", ...})``.

This is brute force over the live rows (no vector index is used, even where pylance built one): the vector column is
read a chunk at a time, distances are computed with numpy for the whole chunk, and only the best ``k`` candidates are
kept, so memory is bounded by a chunk plus ``k`` rows.  Distances are pylance's: ``l2`` (alias ``euclidean``) the
squared Euclidean distance, ``cosine`` one minus the cosine similarity, ``dot`` one minus the dot product; ties go to
the smaller row id, rows whose vector is null are never returned.  With ``prefilter`` the filter picks the rows
searched; without, the ``k`` nearest rows are filtered afterwards (so fewer than ``k`` may remain), as in pylance.  The
result is the projection, then ``_distance`` (float32), then the row-id columns asked with
``with_row_id``/``with_row_address``; ``offset``/``limit`` apply to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lancelot.errors import LanceError, LanceValueError

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.scanner import LanceScanner

DISTANCE = "_distance"
METRICS = {"l2": "l2", "euclidean": "l2", "cosine": "cosine", "dot": "dot"}
#: vectors read and scored at once per fragment
CHUNK_ROWS = 1 << 16


class VectorTypeError(LanceError, TypeError):
    """The ``nearest`` column is not a vector column (pylance: TypeError)."""


@dataclass
class Nearest:
    column: str
    q: np.ndarray
    k: int
    metric: str


def parse_nearest(nearest: Any, schema: pa.Schema, where: str) -> Nearest:
    """Check a ``nearest`` dict against the schema (pylance's keys; index-tuning keys are accepted and have no effect on
    an exact search)."""
    if not isinstance(nearest, dict):
        raise LanceValueError(f"{where}: nearest must be a dict with 'column' and 'q', not {type(nearest).__name__}")
    if "column" not in nearest or "q" not in nearest:
        raise LanceValueError(f"{where}: nearest needs 'column' and 'q' (got {sorted(nearest)})")
    column = str(nearest["column"])
    if column not in schema.names:
        raise LanceValueError(f"{where}: nearest: no column named {column!r}")
    t = _storage(schema.field(column).type)
    if not (pa.types.is_fixed_size_list(t) and pa.types.is_floating(t.value_type)):
        raise VectorTypeError(f"{where}: query column {column} must be a vector of floats, not {t}")
    q = nearest["q"]
    q = np.asarray(q.to_numpy(zero_copy_only=False) if isinstance(q, pa.Array | pa.ChunkedArray) else q)
    q = q.astype(np.float64 if t.value_type == pa.float64() else np.float32).reshape(-1)
    if len(q) != t.list_size:
        raise LanceValueError(
            f"{where}: query vector size {len(q)} does not match column {column}'s size {t.list_size}"
        )
    k = nearest.get("k", 10)
    k = 10 if k is None else int(k)
    if k <= 0:
        raise LanceValueError(f"{where}: nearest-k must be > 0 but got {k}")
    metric = str(nearest.get("metric") or "l2").lower()
    if metric not in METRICS:
        raise LanceValueError(f"{where}: metric type {nearest.get('metric')!r} is not supported (l2, cosine, dot)")
    return Nearest(column, q, k, METRICS[metric])


def _storage(t: pa.DataType) -> pa.DataType:
    """A vector column's fixed-size-list type: an extension type's storage (``arrow.fixed_shape_tensor``: its values
    flat, in row-major order, as pylance searches them)."""
    return t.storage_type if isinstance(t, pa.BaseExtensionType) else t


def distances(vectors: np.ndarray, q: np.ndarray, metric: str) -> np.ndarray:
    """Distances of each row of ``vectors`` (n x d) to ``q`` (NaN where a norm is zero for cosine)."""
    if metric == "l2":
        diff = vectors - q
        out: np.ndarray = np.einsum("ij,ij->i", diff, diff)
        return out
    dots: np.ndarray = vectors @ q
    if metric == "dot":
        out = 1 - dots
        return out
    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1 - dots / norms
    return out


def _chunk(frag: Fragment, scan: LanceScanner, column: str) -> Any:
    """(positions, vector FixedSizeListArray) pieces of the rows searched in one fragment."""
    from lancelot.dataset.fragment_columns import POS

    if scan.prefilter and scan.filter is not None:
        t = frag.read([column], scan.filter, positions=True)
        yield t.column(POS).to_numpy(), t.column(column)
        return
    n = frag.count_rows()
    for a in range(0, n, CHUNK_ROWS):
        b = min(n, a + CHUNK_ROWS)
        t = frag.read_range(a, b - a, [column])
        yield frag.physical_of_live(np.arange(a, b, dtype=np.int64)), t.column(column)


def _vectors(col: pa.ChunkedArray | pa.Array, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """(values n x d, valid mask) of a fixed-size-list column (or an extension array stored as one)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    d = arr.type.list_size
    valid = np.ones(len(arr), bool) if arr.null_count == 0 else arr.is_valid().to_numpy(zero_copy_only=False)
    values = arr.flatten() if arr.null_count == 0 else arr.fill_null([0.0] * d).flatten()
    flat = values.to_numpy(zero_copy_only=False).astype(dtype, copy=False)
    return flat.reshape(len(arr), d), valid


def search(scan: LanceScanner) -> pa.Table:
    """The scan's result for its ``nearest`` query (see the module docstring)."""
    from lancelot.dataset.row_id_columns import ROW_ID, row_columns

    n = scan.nearest
    assert n is not None
    ds = scan.state.ds
    best_d = np.empty(0, n.q.dtype)
    best_id = np.empty(0, np.uint64)
    best_addr = np.empty(0, np.uint64)
    for frag in scan.state.frags:
        for pos, col in _chunk(frag, scan, n.column):
            if not len(pos):
                continue
            vecs, valid = _vectors(col, n.q.dtype.type)
            dist = distances(vecs, n.q, n.metric).astype(n.q.dtype, copy=False)
            keep = valid & ~np.isnan(dist)
            pos = np.asarray(pos, np.int64)[keep]
            ids = row_columns(frag, pos, {ROW_ID}, 0)[ROW_ID].to_numpy()
            addr = (np.uint64(frag.fragment_id) << np.uint64(32)) | pos.astype(np.uint64)
            best_d = np.concatenate([best_d, dist[keep]])
            best_id = np.concatenate([best_id, ids])
            best_addr = np.concatenate([best_addr, addr])
            order = np.lexsort((best_id, best_d))[: n.k]
            best_d, best_id, best_addr = best_d[order], best_id[order], best_addr[order]
    if scan.filter is not None and not scan.prefilter and len(best_addr):
        passed = _passes(scan, best_addr)
        best_d, best_addr = best_d[passed], best_addr[passed]
    if not len(best_addr):
        return scan.projected_schema.empty_table()
    rows = ds._rows_at(best_addr, None, ignore_deletions=True, scan=scan)
    at = len(scan.state.proj.names) - scan.state.proj.added
    out = rows
    if not scan.no_distance:
        out = rows.add_column(at, pa.field(DISTANCE, pa.float32()), pa.array(best_d.astype(np.float32)))
    out = out.slice(scan.offset)
    return out if scan.limit is None else out.slice(0, scan.limit)


def _passes(scan: LanceScanner, addr: np.ndarray) -> np.ndarray:
    """Which of the rows at ``addr`` match the scan's filter (post-filtering)."""
    from lancelot.dataset.scan import apply_filter, filter_columns

    assert scan.filter is not None
    cols: list[str] = filter_columns(scan.filter, list(scan.state.ds.schema.names))
    cols += sorted(scan.state.filter_rows)
    check = type(scan)(scan.state.ds, cols)  # (a scanner of the same dataset, for the filter's columns)
    t = scan.state.ds._rows_at(addr, None, ignore_deletions=True, scan=check)
    t = t.append_column("__lancelot_index", pa.array(np.arange(len(addr), dtype=np.int64)))
    kept = apply_filter(t, scan.filter, f"dataset {scan.state.ds.uri!r}").column("__lancelot_index").to_numpy()
    mask = np.zeros(len(addr), bool)
    mask[kept] = True
    return mask
