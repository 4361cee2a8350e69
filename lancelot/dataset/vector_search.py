"""Exact nearest-neighbour search: ``to_table(nearest={"column", "q", "k", "metric", ...})``.

This is brute force over the live rows (no vector index is used, even where pylance built one): the vector column is
read a chunk at a time, distances are computed with numpy for the whole chunk, and only the best ``k`` candidates are
kept, so memory is bounded by a chunk plus ``k`` rows.  Distances are pylance's: ``l2`` (alias ``euclidean``) the
squared Euclidean distance, ``cosine`` one minus the cosine similarity, ``dot`` one minus the dot product; ties go to
the smaller row id, rows whose vector is null are never returned.  With ``prefilter`` the filter picks the rows
searched; without, the ``k`` nearest rows are filtered afterwards (so fewer than ``k`` may remain), as in pylance.  The
result is the projection, then ``_distance`` (float32), then the row-id columns asked with
``with_row_id``/``with_row_address``; ``offset``/``limit`` apply to it.  Several query vectors (a 2-D array, a list of
vectors) are pylance's batch search: each gets its ``k`` rows, in query order, behind a ``query_index`` column."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lancelot.dataset.take_read import rows_at
from lancelot.errors import LanceError, LanceValueError

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.scanner import LanceScanner

DISTANCE = "_distance"
#: the first column of a search for several query vectors: which one a row answers
QUERY_INDEX = "query_index"
METRICS = {"l2": "l2", "euclidean": "l2", "cosine": "cosine", "dot": "dot"}
#: vectors read and scored at once per fragment
CHUNK_ROWS = 1 << 16


class VectorTypeError(LanceError, TypeError):
    """The ``nearest`` column is not a vector column, or ``q`` is not a vector of numbers (pylance: TypeError)."""


class EmptyQueryError(LanceError, IndexError, KeyError):
    """``q`` has no first item (pylance indexes ``q[0]``: IndexError for an empty sequence, KeyError for a
    mapping)."""

    __str__ = BaseException.__str__  # (KeyError's would quote the message)


@dataclass
class Nearest:
    column: str
    #: the query vectors, one per row (one row unless ``batch``)
    q: np.ndarray
    k: int
    metric: str
    #: ``q`` was given as several vectors: each is searched, the result says which in a ``query_index`` column
    batch: bool = False


def parse_nearest(nearest: Any, schema: pa.Schema, where: str) -> Nearest:
    """Check a ``nearest`` dict against the schema (pylance's keys; index-tuning keys are accepted and have no effect on
    an exact search)."""
    if not isinstance(nearest, dict):
        raise LanceValueError(f"{where}: nearest must be a dict with 'column' and 'q', not {type(nearest).__name__}")
    if "column" not in nearest or "q" not in nearest:
        raise LanceValueError(f"{where}: nearest needs 'column' and 'q' (got {sorted(nearest)})")
    q, batch = query_vectors(nearest["q"], where)
    column = str(nearest["column"])
    if column not in schema.names:
        raise LanceValueError(f"{where}: nearest: no column named {column!r}")
    t = _storage(schema.field(column).type)
    if not (pa.types.is_fixed_size_list(t) and pa.types.is_floating(t.value_type)):
        raise VectorTypeError(f"{where}: query column {column} must be a vector of floats, not {t}")
    if q.shape[1] != t.list_size:
        raise LanceValueError(
            f"{where}: query vector size {q.shape[1]} does not match column {column}'s size {t.list_size}"
        )
    q = q.astype(np.float64 if t.value_type == pa.float64() else np.float32)
    k = nearest.get("k", 10)
    k = 10 if k is None else int(k)
    if k <= 0:
        raise LanceValueError(f"{where}: nearest-k must be > 0 but got {k}")
    metric = str(nearest.get("metric") or "l2").lower()
    if metric not in METRICS:
        raise LanceValueError(f"{where}: metric type {nearest.get('metric')!r} is not supported (l2, cosine, dot)")
    return Nearest(column, q, k, METRICS[metric], batch)


def query_vectors(q: Any, where: str) -> tuple[np.ndarray, bool]:
    """``q`` as pylance coerces a query: (one vector per row, several given).  A sequence whose first item is a list,
    tuple, numpy array or Arrow array is several vectors of one length; anything else one vector: a numpy array or
    list (as float32, as pylance rounds them), an Arrow array of floats or integers, a fixed-size-list scalar or an
    extension scalar stored as one (``arrow.fixed_shape_tensor``), or whatever ``pa.array`` makes such an array of."""
    if hasattr(q, "__getitem__"):
        try:
            first = q[0]
        except LookupError as e:
            raise EmptyQueryError(f"{where}: nearest: the query vector has no first item ({e})") from None
        if isinstance(first, list | tuple | np.ndarray | pa.Array):
            dim = len(first)
            rows = []
            for item in q:
                if len(item) != dim:
                    raise LanceValueError(
                        f"{where}: all query vectors must have the same length, but got {dim} and {len(item)}"
                    )
                rows.append(_one_vector(item, where))
            return np.stack(rows).reshape(len(rows), dim), True
    v = _one_vector(q, where)
    return v.reshape(1, len(v)), False


def _one_vector(q: Any, where: str) -> np.ndarray:
    """One query vector (``query_vectors``) as a 1-D float array."""
    if isinstance(q, pa.Scalar):
        if isinstance(q, pa.ExtensionScalar):
            q = q.value
        if isinstance(q.type, pa.FixedSizeListType) and q.is_valid:
            q = q.values
    elif isinstance(q, list | tuple | np.ndarray):
        try:
            return np.array(q).astype(np.float64).astype(np.float32).reshape(-1)
        except TypeError as e:
            raise VectorTypeError(f"{where}: nearest: the query vector is not numbers ({e})") from None
        except ValueError as e:
            raise LanceValueError(f"{where}: nearest: the query vector is not numbers ({e})") from None
    elif not isinstance(q, pa.Array):
        try:
            q = pa.array(q)
        except Exception:  # noqa: BLE001 - whatever pa.array refuses is not a vector
            raise VectorTypeError(
                f"{where}: query vectors should be an array of floats, got {type(q)} which cannot be coerced to a "
                "float array"
            ) from None
    if isinstance(q, pa.ChunkedArray):
        q = q.combine_chunks()
    kind = getattr(q, "type", None)
    if isinstance(q, pa.Array) and kind is not None and (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
        out: np.ndarray = q.to_numpy(zero_copy_only=False).astype(np.float64)
        return out
    raise VectorTypeError(f"{where}: query vector must be list-like or an array of floats, but received {kind}")


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
    n = scan.nearest
    assert n is not None
    ds = scan.state.ds
    best = [_Best(n.q.dtype) for _ in range(len(n.q))]
    for frag in scan.state.frags:
        for pos, col in _chunk(frag, scan, n.column):
            if not len(pos):
                continue
            vecs, valid = _vectors(col, n.q.dtype.type)
            pos = np.asarray(pos, np.int64)
            ids: np.ndarray | None = None
            for b, q in zip(best, n.q):
                dist = distances(vecs, q, n.metric).astype(n.q.dtype, copy=False)
                keep = valid & ~np.isnan(dist)
                ids = _row_ids(frag, pos) if ids is None else ids
                addr = (np.uint64(frag.fragment_id) << np.uint64(32)) | pos[keep].astype(np.uint64)
                b.add(dist[keep], ids[keep], addr, n.k)
    if scan.filter is not None and not scan.prefilter:
        for b in best:
            b.post_filter(scan)
    best_d = np.concatenate([b.d for b in best])
    best_addr = np.concatenate([b.addr for b in best])
    if not len(best_addr):
        return scan.projected_schema.empty_table()
    rows = rows_at(ds, best_addr, scan, ignore_deletions=True)
    which = np.repeat(np.arange(len(best), dtype=np.int32), [len(b.addr) for b in best])
    out = scored(scan, rows, best_d, which).slice(scan.offset)
    return out if scan.limit is None else out.slice(0, scan.limit)


def scored(scan: LanceScanner, rows: pa.Table, dist: np.ndarray, which: np.ndarray) -> pa.Table:
    """``rows`` (the projection) with the search's own columns: ``_distance`` (float32) after the projection, before
    the row-id columns (unless ``disable_scoring_autoprojection``), and first, for several query vectors, which one
    each row answers (``query_index``, int32)."""
    assert scan.nearest is not None
    if not scan.no_distance:
        at = len(scan.state.proj.names) - scan.state.proj.added
        rows = rows.add_column(at, pa.field(DISTANCE, pa.float32()), pa.array(dist.astype(np.float32), pa.float32()))
    if scan.nearest.batch:
        rows = rows.add_column(0, pa.field(QUERY_INDEX, pa.int32(), nullable=False), pa.array(which, pa.int32()))
    return rows


def _row_ids(frag: Fragment, pos: np.ndarray) -> np.ndarray:
    from lancelot.dataset.row_id_columns import ROW_ID, row_columns

    out: np.ndarray = row_columns(frag, pos, {ROW_ID}, 0)[ROW_ID].to_numpy()
    return out


class _Best:
    """The ``k`` nearest rows to one query vector so far: distances, row ids (ties go to the smaller), addresses."""

    def __init__(self, dtype: np.dtype[Any]) -> None:
        self.d = np.empty(0, dtype)
        self.ids = np.empty(0, np.uint64)
        self.addr = np.empty(0, np.uint64)

    def add(self, d: np.ndarray, ids: np.ndarray, addr: np.ndarray, k: int) -> None:
        self.d = np.concatenate([self.d, d])
        self.ids = np.concatenate([self.ids, ids])
        self.addr = np.concatenate([self.addr, addr])
        order = np.lexsort((self.ids, self.d))[:k]
        self.d, self.ids, self.addr = self.d[order], self.ids[order], self.addr[order]

    def post_filter(self, scan: LanceScanner) -> None:
        if len(self.addr):
            passed = _passes(scan, self.addr)
            self.d, self.ids, self.addr = self.d[passed], self.ids[passed], self.addr[passed]


def _passes(scan: LanceScanner, addr: np.ndarray) -> np.ndarray:
    """Which of the rows at ``addr`` match the scan's filter (post-filtering)."""
    from lancelot.dataset.scan import apply_filter, filter_columns

    assert scan.filter is not None
    cols: list[str] = filter_columns(scan.filter, list(scan.state.ds.schema.names))
    cols += sorted(scan.state.filter_rows)
    check = type(scan)(scan.state.ds, cols)  # (a scanner of the same dataset, for the filter's columns)
    t = rows_at(scan.state.ds, addr, check, ignore_deletions=True)
    t = t.append_column("__lancelot_index", pa.array(np.arange(len(addr), dtype=np.int64)))
    kept = apply_filter(t, scan.filter, f"dataset {scan.state.ds.uri!r}").column("__lancelot_index").to_numpy()
    mask = np.zeros(len(addr), bool)
    mask[kept] = True
    return mask
