"""The rows of a take, mapped once: indices among the live rows, or row addresses, are checked once (integers, not
negative, in range), sorted and made unique once, and mapped to ``Rows``: per touched fragment its physical positions,
ascending and unique (deleted rows mapped around, dropped, kept or refused, with one read of each fragment's deletion
file), and how to put them back in the order asked.

Used by ``take`` / ``_take_rows`` (dataset/take.py) and the blob APIs (dataset/blob.py)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pyarrow as pa
from numpy.typing import ArrayLike

from lancelot.errors import DatasetIndexError, IndexTypeError, LanceError, NegativeIndexError
from lancelot.reader import FEW_INDICES
from lancelot.util.pools import shared_pool

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment

_T = TypeVar("_T")
_R = TypeVar("_R")
#: fragments a take over a remote store touches at once (each one's deletion file, footer and
#: pages are round trips of its own: side by side, a take costs a few round trips, not a few per fragment)
REMOTE_TAKE_FRAGMENTS = 16
_LOW = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)


def side_by_side(ds: LanceDataset, items: Sequence[_T], fn: Callable[[_T], _R]) -> list[_R]:
    """``[fn(x) for x in items]``: on a remote store, ``REMOTE_TAKE_FRAGMENTS`` at a time."""
    if len(items) < 2 or ds.store.is_local:
        return [fn(x) for x in items]
    return list(shared_pool("take", REMOTE_TAKE_FRAGMENTS).map(fn, items))


@dataclass
class Rows:
    """The rows of a take, mapped once: per touched fragment (in dataset order for indices, in address order for
    addresses) its physical positions, ascending and unique; row ``i`` of the answer is row ``back[i]`` of those groups
    laid end to end (None: they are the answer's order)."""

    groups: list[tuple[Fragment, np.ndarray]]
    back: np.ndarray | None

    @property
    def count(self) -> int:
        """Rows in the answer."""
        return len(self.back) if self.back is not None else sum(len(p) for _, p in self.groups)

    def addresses(self) -> np.ndarray:
        """The row address of each row of the answer, in the answer's order (uint64)."""
        parts = [(np.uint64(f.fragment_id) << _32) | p.astype(np.uint64) for f, p in self.groups]
        addr = np.concatenate(parts) if parts else np.empty(0, np.uint64)
        return addr[self.back] if self.back is not None else addr


def as_integers(values: ArrayLike | pa.Array | pa.ChunkedArray, where: str, what: str) -> np.ndarray:
    """``values`` as a flat numpy integer array (its own dtype), refused as pylance refuses them: non-integers are a
    TypeError, negatives an OverflowError (pylance reads them as unsigned)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    a = np.asarray(values.to_numpy(zero_copy_only=False) if isinstance(values, pa.Array) else values)
    if not a.size and a.ndim < 2:
        return a.astype(np.int64)
    if a.ndim != 1:
        raise IndexTypeError(f"{where}: {what} values must be a flat sequence of integers, not {a.ndim}-d")
    if not np.issubdtype(a.dtype, np.integer):
        if a.dtype == object and all(isinstance(v, int | np.integer) for v in a.tolist()):
            a = np.asarray(a.tolist(), np.uint64)  # Python ints beyond int64 (beyond uint64: OverflowError)
        else:
            raise IndexTypeError(f"{where}: {what} values must be integers, not {a.dtype}")
    if a.dtype.kind == "i" and int(a.min()) < 0:
        raise NegativeIndexError(f"{where}: {what} {int(a.min())} is negative (can't convert negative int to unsigned)")
    return a


def checked(
    indices: ArrayLike | pa.Array | pa.ChunkedArray, where: str, what: str, total: int, error: type[LanceError]
) -> tuple[np.ndarray, np.ndarray | None]:
    """``sorted_unique`` of ``indices`` (int64), each refused unless an integer from 0 to ``total - 1``."""
    if type(indices) is np.ndarray and indices.ndim == 1 and indices.dtype.kind in "iu" and indices.size <= FEW_INDICES:
        listed = indices.tolist()  # a few integers: checked in Python (numpy's reductions cost more)
        if listed and (min(listed) < 0 or max(listed) >= total):
            lo, hi = min(listed), max(listed)
            if lo < 0:
                raise NegativeIndexError(f"{where}: {what} {lo} is negative (can't convert negative int to unsigned)")
            raise error(f"{where}: {what} {hi} is out of range for {total} rows")
        a = indices.astype(np.int64, copy=False)
        if all(x < y for x, y in zip(listed, listed[1:])):
            return a, None
        return sorted_unique(a)
    a = as_integers(indices, where, what)
    if a.size and int(a.max()) >= total:
        raise error(f"{where}: {what} {int(a.max())} is out of range for {total} rows")
    return sorted_unique(a.astype(np.int64, copy=False))


def sorted_unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(the values ascending and unique, ``back``: value ``i`` is ``uniq[back[i]]``; None when they already are
    ascending and unique)."""
    n = values.size
    if n <= FEW_INDICES:  # (checked on a Python list, as the reader checks a few indices)
        listed = values.tolist()
        if all(a < b for a, b in zip(listed, listed[1:])):
            return values, None
    elif bool(np.all(values[1:] > values[:-1])):
        return values, None
    uniq, back = np.unique(values, return_inverse=True)
    return uniq, back.reshape(-1)


def _runs(keys: np.ndarray) -> list[tuple[int, int]]:
    """``[a, b)`` runs of equal values of the ascending ``keys``."""
    if not keys.size:
        return []
    cuts = (np.flatnonzero(keys[1:] != keys[:-1]) + 1).tolist()
    return list(zip([0, *cuts], [*cuts, keys.size]))


def by_index(
    ds: LanceDataset,
    indices: ArrayLike | pa.Array | pa.ChunkedArray,
    what: str = "take index",
    error: type[LanceError] = DatasetIndexError,
) -> Rows:
    """``Rows`` of indices among the live rows of all fragments in order; past the end is ``error``."""
    frags = ds.fragments
    starts = list(accumulate((f.count_rows() for f in frags), initial=0))  # each fragment's first live row
    uniq, back = checked(indices, f"dataset {ds.uri!r} version {ds.version}", what, starts[-1], error)
    spans, a = [], 0  # (fragment, its run in uniq): one bisection each way per touched fragment, not per index
    while a < uniq.size:
        k = bisect_right(starts, uniq[a]) - 1
        spans.append((k, a, bisect_left(uniq, starts[k + 1], a)))
        a = spans[-1][2]
    side_by_side(ds, [frags[k] for k, _, _ in spans], lambda f: f.deleted_positions())  # remote: side by side
    # k-th live row -> physical: ascending stays ascending
    return Rows([(frags[k], frags[k].physical_of_live(uniq[a:b] - starts[k])) for k, a, b in spans], back)


def in_fragment(frag: Fragment, indices: ArrayLike | pa.Array | pa.ChunkedArray) -> Rows:
    """``Rows`` of indices among the live rows of one fragment (``Fragment.take``)."""
    uniq, back = checked(indices, frag.where, "take index", frag.count_rows(), DatasetIndexError)
    return Rows([(frag, frag.physical_of_live(uniq))] if uniq.size else [], back)


def by_address(
    ds: LanceDataset,
    addresses: np.ndarray,
    deleted: str | Callable[[int], LanceError],
    error: type[LanceError] = DatasetIndexError,
) -> Rows:
    """``Rows`` of row addresses (uint64); a row that is not in the dataset is ``error``.  Deleted rows: ``"drop"``
    (left out of the answer), ``"keep"`` (read as they are), or refused with the error ``deleted(address)`` makes (the
    blob APIs, as pylance refuses them)."""
    where = f"dataset {ds.uri!r} version {ds.version}"
    uniq, back = sorted_unique(addresses.astype(np.uint64, copy=False))
    fids = uniq >> _32
    runs = _runs(fids)
    by_id = {f.fragment_id: f for f in ds.fragments}
    groups: list[tuple[Fragment, np.ndarray]] = []
    for a, b in runs:
        f = by_id.get(int(fids[a]))
        pos = (uniq[a:b] & _LOW).astype(np.int64)
        if f is None or int(pos[-1]) >= f.physical_rows:
            bad = int(uniq[a] if f is None else uniq[a:b][pos >= f.physical_rows][0])
            raise error(
                f"{where}: row address {bad} (fragment {bad >> 32}, row {bad & 0xFFFFFFFF}) is not in the dataset"
            )
        groups.append((f, pos))
    if deleted == "keep":
        return Rows(groups, back)
    side_by_side(ds, [f for f, _ in groups], lambda f: f.deleted_positions())
    alive = np.ones(uniq.size, bool)
    for k, ((f, pos), (a, _)) in enumerate(zip(groups, runs)):
        gone = f.deleted_positions()
        if not len(gone):
            continue
        dead = np.isin(pos, gone)
        if not dead.any():
            continue
        if callable(deleted):
            raise deleted(int(uniq[a + int(np.flatnonzero(dead)[0])]))
        alive[a : a + len(pos)] = ~dead
        groups[k] = (f, pos[~dead])
    groups = [(f, p) for f, p in groups if len(p)]
    if back is not None and not alive.all():
        renumber = np.cumsum(alive) - 1
        back = renumber[back[alive[back]]]
    return Rows(groups, back)


def addresses_of(ds: LanceDataset, ids: np.ndarray, error: type[LanceError] | None = DatasetIndexError) -> np.ndarray:
    """Row addresses of stable row ids: an id no fragment holds is out of range (``error``), or left out (``None``:
    ``_take_rows``, as pylance's row id index, which answers nothing for an id it never gave out).

    An updated row keeps its id but moves: the old copy stays behind as a deleted row of its fragment. The live copy
    wins; a deleted one is found only when no live row holds the id."""
    all_ids, all_addr, all_dead = [], [], []
    for f in ds.fragments:
        r = f.row_ids()
        all_ids.append(r)
        all_addr.append((np.uint64(f.fragment_id) << _32) | np.arange(len(r), dtype=np.uint64))
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
    if not ok.all() and error is None:
        at = at[ok]
    elif not ok.all() and error is not None:
        raise error(f"dataset {ds.uri!r} version {ds.version}: row id {int(ids[~ok][0])} is not in the dataset")
    out: np.ndarray = addr[order][at]
    return out
