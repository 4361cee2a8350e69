"""Rows by position: ``take`` (indices among the live rows), ``_take_rows`` (row ids: row addresses, or stable row ids
where the dataset has them), ``sample``.

Every take walks the same three steps:

1. ``by_index`` / ``by_address`` (dataset/row_selection.py): the rows checked, sorted and made unique once, mapped to
   per-fragment physical positions with the deletions applied once;
2. ``read``: one ``Fragment.take_physical`` per touched fragment (the reader's take of those positions: already sorted
   and unique, so it neither sorts nor reorders), projected as a scan would project them (nested paths, SQL expressions,
   row-id columns);
3. one ``Table.take`` back to the order asked, duplicates included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from numpy.typing import ArrayLike

from lancelot.dataset import take_read
from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS
from lancelot.dataset.row_id_columns import ROW_COLUMNS
from lancelot.dataset.row_selection import Rows, addresses_of, as_integers, by_address, by_index, side_by_side
from lancelot.dataset.scan_projection import projection
from lancelot.errors import LanceValueError

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.scanner import LanceScanner

__all__ = ["read", "sample", "side_by_side", "take", "take_rows"]


def _where(ds: LanceDataset) -> str:
    return f"dataset {ds.uri!r} version {ds.version}"


def read(
    ds: LanceDataset, rows: Rows, columns: Sequence[str] | dict[str, str] | None, scan: LanceScanner | None = None
) -> pa.Table:
    """The rows, projected as ``columns`` (or as ``scan`` projects), in the answer's order (dataset/take_read.py)."""
    from lancelot.dataset.scanner import LanceScanner

    if scan is not None:
        return take_read.read(ds, rows, scan.state.proj, lambda: scan)
    if isinstance(columns, list | tuple):
        projection(ds.schema, columns, None, None, _where(ds), unique=False)  # (checks the names)
        outs = _merged_paths(columns)
        if [n for n, _ in outs] != list(columns):
            t = read(ds, rows, list(dict.fromkeys(n for n, _ in outs)))
            fields = [t.schema.field(n).with_type(_pruned_type(t.schema.field(n).type, k)) for n, k in outs]
            arrays = [_pruned(t.column(n), k) for n, k in outs]
            return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=t.schema.metadata))
    proj = projection(ds.schema, columns, None, None, _where(ds), unique=False)

    def scanner() -> LanceScanner:  # (its projection: the take's, where a row-id column may come twice)
        scan = LanceScanner(ds, list(dict.fromkeys(columns)) if isinstance(columns, list | tuple) else columns)
        scan.state = replace(scan.state, proj=proj)
        return scan

    return take_read.read(ds, rows, proj, scanner)


#: which children of a struct a take keeps: all (None), or some by name, each with what it keeps of itself
Kept = dict[str, "Kept | None"]


def _merged_paths(columns: Sequence[str]) -> list[tuple[str, Kept | None]]:
    """pylance's take projection of a list of names (its schema projection): the dataset columns in the order first
    named, each once, with the struct children its dotted paths name (``["st.q", "id", "st.p"]`` gives ``st`` with
    ``p`` and ``q``, then ``id``; a whole column named wins over paths into it); a row-id column wherever named, as
    often as named."""
    tops: Kept = {}
    order: list[str] = []
    for c in columns:
        if c in ROW_COLUMNS:
            order.append(c)
            continue
        parts = c.split(".") if c not in tops and "." in c else [c]
        if parts[0] not in order:
            order.append(parts[0])
        node = tops
        for p in parts[:-1]:
            if p in node and node[p] is None:
                break
            node = node.setdefault(p, {})  # type: ignore[assignment]
        else:
            node[parts[-1]] = None
    return [(n, tops.get(n)) for n in order]


def _pruned(col: pa.ChunkedArray, kept: Kept | None) -> pa.ChunkedArray:
    """A struct column with only the children ``kept`` (in its own order), its nulls as they were."""
    if kept is None:
        return col
    t = col.type
    idx = [i for i in range(t.num_fields) if t.field(i).name in kept]
    chunks = []
    for c in col.chunks:
        kids = [_pruned(pa.chunked_array([c.field(i)]), kept[t.field(i).name]).combine_chunks() for i in idx]
        fields = [t.field(i).with_type(k.type) for i, k in zip(idx, kids)]
        chunks.append(pa.StructArray.from_arrays(kids, fields=fields, mask=c.is_null() if c.null_count else None))
    return pa.chunked_array(chunks, _pruned_type(t, kept))


def _pruned_type(t: pa.DataType, kept: Kept | None) -> pa.DataType:
    if kept is None:
        return t
    return pa.struct([f.with_type(_pruned_type(f.type, kept[f.name])) for f in t if f.name in kept])


def take(
    ds: LanceDataset,
    indices: ArrayLike | pa.Array | pa.ChunkedArray,
    columns: Sequence[str] | dict[str, str] | None = None,
) -> pa.Table:
    """Rows by index over the live rows of all fragments in order (any order, duplicates)."""
    return read(ds, by_index(ds, indices), columns)


def take_rows(
    ds: LanceDataset,
    row_ids: Sequence[int] | pa.Array | np.ndarray,
    columns: Sequence[str] | dict[str, str] | None = None,
    *,
    ignore_deletions: bool = False,
    **kargs: Any,
) -> pa.Table:
    """Rows by row id (the row address, or the stable row id of datasets that have them), in the order asked; deleted
    rows are left out unless ``ignore_deletions``; so is a stable row id no row holds (as pylance's), where a row
    address past its fragment's rows is an error."""
    ids = as_integers(row_ids, _where(ds), "row id").astype(np.uint64, copy=False)
    if ds.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS:
        ids = addresses_of(ds, ids, error=None)
    return read(ds, by_address(ds, ids, "keep" if ignore_deletions else "drop"), columns)


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
