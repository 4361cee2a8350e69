"""Rows by position: ``take`` (indices among the live rows), ``_take_rows`` (row ids: row
addresses, or stable row ids where the dataset has them), ``sample``.

Every path ends in ``rows_at``: the rows at row addresses (``fragment_id << 32 | position``),
read per fragment with the reader's take (only the pages holding them), projected as a scan
would project them (nested paths, SQL expressions, row-id columns), in the order asked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
from numpy.typing import ArrayLike

from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS
from lancelot.errors import DatasetIndexError, LanceValueError

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.scanner import LanceScanner

_T = TypeVar("_T")
_R = TypeVar("_R")
#: fragments a take over a remote store touches at once (each one's deletion file, footer and
#: pages are round trips of its own: side by side, a take costs a few round trips, not a few per fragment)
REMOTE_TAKE_FRAGMENTS = 16
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def side_by_side(ds: LanceDataset, items: Sequence[_T], fn: Callable[[_T], _R]) -> list[_R]:
    """``[fn(x) for x in items]``: on a remote store, ``REMOTE_TAKE_FRAGMENTS`` at a time."""
    if len(items) < 2 or ds.store.is_local:
        return [fn(x) for x in items]
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=REMOTE_TAKE_FRAGMENTS, thread_name_prefix="lancelot-take")
    return list(_POOL.map(fn, items))


def take(
    ds: LanceDataset,
    indices: ArrayLike | pa.Array | pa.ChunkedArray,
    columns: Sequence[str] | dict[str, str] | None = None,
) -> pa.Table:
    """Rows by index over the live rows of all fragments in order (any order, duplicates)."""
    from lancelot.dataset.scanner import projection

    idx = np.asarray(indices.to_numpy() if isinstance(indices, pa.Array | pa.ChunkedArray) else indices)
    idx = idx.astype(np.int64, copy=False).reshape(-1)
    counts = np.array([f.count_rows() for f in ds._fragments], dtype=np.int64)
    total = int(counts.sum())
    if idx.size and (idx.min() < 0 or idx.max() >= total):
        bad = int(idx[(idx < 0) | (idx >= total)][0])
        raise DatasetIndexError(
            f"dataset {ds.uri!r} version {ds.version}: take index {bad} is out of range for {total} rows"
        )
    proj = projection(ds.schema, columns, None, None, f"dataset {ds.uri!r}")
    if not proj.plain or proj.rows:
        starts = np.concatenate([[0], np.cumsum(counts)])
        which = np.searchsorted(starts, idx, side="right") - 1
        pos = np.empty(len(idx), np.int64)
        touched = np.unique(which).tolist()
        live = side_by_side(ds, touched, lambda fi: ds._fragments[fi].physical_of_live(idx[which == fi] - starts[fi]))
        for fi, p in zip(touched, live):
            pos[which == fi] = p
        fids = np.array([f.fragment_id for f in ds._fragments], np.int64)[which]
        return rows_at(ds, (fids << 32 | pos).astype(np.uint64), columns, ignore_deletions=True)
    if not idx.size:
        return ds._empty(columns)
    starts = np.concatenate([[0], np.cumsum(counts)])
    which = np.searchsorted(starts, idx, side="right") - 1
    order = np.argsort(which, kind="stable")
    parts = side_by_side(
        ds,
        np.unique(which).tolist(),
        lambda fi: ds._fragments[fi].take(idx[order[which[order] == fi]] - starts[fi], columns),
    )
    t = pa.concat_tables(parts)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return t.take(pa.array(inverse))


def take_rows(
    ds: LanceDataset,
    row_ids: Sequence[int] | pa.Array | np.ndarray,
    columns: Sequence[str] | dict[str, str] | None = None,
    *,
    ignore_deletions: bool = False,
    **kargs: Any,
) -> pa.Table:
    """Rows by row id (the row address, or the stable row id of datasets that have them), in the
    order asked; deleted rows are left out unless ``ignore_deletions``."""
    ids = np.asarray(row_ids.to_numpy() if isinstance(row_ids, pa.Array | pa.ChunkedArray) else row_ids)
    ids = ids.astype(np.uint64, copy=False).reshape(-1)
    if ds.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS:
        ids = addresses_of(ds, ids)
    return rows_at(ds, ids, columns, ignore_deletions=ignore_deletions)


def addresses_of(ds: LanceDataset, ids: np.ndarray) -> np.ndarray:
    """Row addresses of stable row ids (an id no fragment holds is out of range).

    An updated row keeps its id but moves: the old copy stays behind as a deleted row of its
    fragment. The live copy wins; a deleted one is found only when no live row holds the id.
    """
    all_ids, all_addr, all_dead = [], [], []
    for f in ds._fragments:
        r = f.row_ids()
        all_ids.append(r)
        all_addr.append((np.uint64(f.fragment_id) << np.uint64(32)) | np.arange(len(r), dtype=np.uint64))
        dead = np.zeros(len(r), bool)
        gone = f.deleted_positions().astype(np.int64)
        dead[gone[gone < len(r)]] = True
        all_dead.append(dead)
    known = np.concatenate(all_ids) if all_ids else np.empty(0, np.uint64)
    addr = np.concatenate(all_addr) if all_addr else np.empty(0, np.uint64)
    dead = np.concatenate(all_dead) if all_dead else np.empty(0, bool)
    order = np.lexsort((dead, known))  # by id, live copies first
    at = np.searchsorted(known[order], ids)
    ok = at < len(known)
    ok[ok] = known[order][at[ok]] == ids[ok]
    if not ok.all():
        raise DatasetIndexError(
            f"dataset {ds.uri!r} version {ds.version}: row id {int(ids[~ok][0])} is not in the dataset"
        )
    out: np.ndarray = addr[order][at]
    return out


def rows_at(
    ds: LanceDataset,
    addr: np.ndarray,
    columns: Sequence[str] | dict[str, str] | None,
    *,
    ignore_deletions: bool,
    scan: LanceScanner | None = None,
) -> pa.Table:
    """Rows at row addresses, in order; deleted ones dropped unless ``ignore_deletions``; projected
    as ``columns`` (or as the projection of ``scan``)."""
    from lancelot.dataset.fragment_columns import _POS
    from lancelot.dataset.scanner import LanceScanner

    scan = scan or LanceScanner(ds, columns)
    addr = addr.astype(np.uint64)
    fids = (addr >> np.uint64(32)).astype(np.int64)
    pos = (addr & np.uint64(0xFFFFFFFF)).astype(np.int64)
    parts: list[tuple[np.ndarray, pa.Table]] = []
    by_id = {f.fragment_id: f for f in ds._fragments}
    todo: list[tuple[Fragment, np.ndarray, np.ndarray]] = []
    for fid in np.unique(fids):
        sel = np.flatnonzero(fids == fid)
        f = by_id.get(int(fid))
        p = pos[sel]
        if f is None or (len(p) and int(p.max()) >= f.physical_rows):
            bad = int(addr[sel][0]) if f is None else int(addr[sel][p >= f.physical_rows][0])
            raise DatasetIndexError(
                f"dataset {ds.uri!r} version {ds.version}: row address {bad} (fragment {bad >> 32}, "
                f"row {bad & 0xFFFFFFFF}) is not in the dataset"
            )
        todo.append((f, sel, p))
    if not ignore_deletions:
        side_by_side(ds, [f for f, _, _ in todo], lambda f: f.deleted_positions())
        for k, (f, sel, p) in enumerate(todo):
            if len(f.deleted_positions()):
                live = ~np.isin(p, f.deleted_positions().astype(np.int64))
                todo[k] = (f, sel[live], p[live])
    todo = [x for x in todo if len(x[1])]
    cols = scan._read_cols()
    read = side_by_side(ds, todo, lambda x: x[0]._take_physical(cols, x[2]))
    for (f, sel, p), t in zip(todo, read):
        t = t.append_column(_POS, pa.array(p))
        parts.append((sel, scan._finish(f, t, scan._offset_bases() if "_rowoffset" in scan._proj.rows else None)))
    if not parts:
        return scan.projected_schema.empty_table()
    order = np.concatenate([sel for sel, _ in parts])
    t = pa.concat_tables([t for _, t in parts]) if parts[0][1].num_columns else parts[0][1]
    back = np.argsort(order, kind="stable")  # row i of the answer is row back[i] of t
    return t.take(pa.array(back)) if t.num_columns else t


def sample(
    ds: LanceDataset,
    num_rows: int,
    columns: Sequence[str] | dict[str, str] | None = None,
    randomize_order: bool = True,
    **kwargs: Any,
) -> pa.Table:
    """``num_rows`` live rows drawn at random without replacement (ascending unless ``randomize_order``)."""
    n = ds.count_rows()
    if num_rows < 0 or num_rows > n:
        raise LanceValueError(f"dataset {ds.uri!r}: sample of {num_rows} rows from a population of {n}")
    idx = np.random.default_rng().choice(n, size=num_rows, replace=False)
    if not randomize_order:
        idx = np.sort(idx)
    return take(ds, idx, columns)
