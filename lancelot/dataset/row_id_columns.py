"""The row-id columns a scan or a take may ask for (pylance's ``with_row_id``, ``with_row_address``, ``_rowoffset``,
and the row-version columns ``_row_created_at_version`` and ``_row_last_updated_at_version``): their names, and their
values for rows of a fragment (table format, "Row ids" and "Row addresses": an address is the fragment id in the high 32
bits, the row's position below; a row's versions are its fragment's version sequences, version 1 where it has none, as
pylance reads them). Below the scanner and its helpers (vector_search.py, blob_scan.py), which all read them."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment

ROW_ID, ROW_ADDR, ROW_OFFSET = "_rowid", "_rowaddr", "_rowoffset"
ROW_CREATED_AT, ROW_UPDATED_AT = "_row_created_at_version", "_row_last_updated_at_version"
ROW_COLUMNS = (ROW_ID, ROW_ADDR, ROW_OFFSET, ROW_UPDATED_AT, ROW_CREATED_AT)
_VERSIONS = {ROW_CREATED_AT: "created_at", ROW_UPDATED_AT: "last_updated_at"}
# each fragment object's decoded version sequences (a scan asks once per batch)
_DECODED: weakref.WeakKeyDictionary[Fragment, dict[str, np.ndarray]] = weakref.WeakKeyDictionary()


def row_columns(
    frag: Fragment, pos: np.ndarray, want: set[str], offset_base: int, deleted_null: bool = False
) -> dict[str, pa.Array]:
    """The row-id columns of the rows at physical positions ``pos`` of ``frag``; ``deleted_null``: deleted rows (a scan
    with ``include_deleted_rows``) have null ``_rowid`` and ``_rowaddr``."""
    out = _row_columns(frag, pos, want, offset_base)
    if deleted_null and len(frag.deleted_positions()):
        gone = pa.array(np.isin(pos, frag.deleted_positions().astype(np.int64)))
        for name in (ROW_ID, ROW_ADDR):
            if name in out:
                out[name] = pc.if_else(gone, pa.nulls(len(pos), pa.uint64()), out[name])
    return out


def _row_columns(frag: Fragment, pos: np.ndarray, want: set[str], offset_base: int) -> dict[str, pa.Array]:
    out: dict[str, pa.Array] = {}
    addr = (np.uint64(frag.fragment_id) << np.uint64(32)) | pos.astype(np.uint64)
    if ROW_ADDR in want:
        out[ROW_ADDR] = pa.array(addr, pa.uint64())
    if ROW_ID in want:
        if frag.data_fragment.WhichOneof("row_id_sequence") is not None:
            out[ROW_ID] = pa.array(frag.row_ids()[pos], pa.uint64())
        else:
            out[ROW_ID] = pa.array(addr, pa.uint64())
    if ROW_OFFSET in want:
        deleted = frag.deleted_positions().astype(np.int64)
        live = pos - np.searchsorted(deleted, pos, side="left")
        out[ROW_OFFSET] = pa.array((live + offset_base).astype(np.uint64), pa.uint64())
    for name, which in _VERSIONS.items():
        if name in want:
            out[name] = pa.array(_row_versions(frag, which)[pos], pa.uint64())
    return out


def _row_versions(frag: Fragment, which: str) -> np.ndarray:
    """The ``which`` ("created_at" or "last_updated_at") version of each physical row of ``frag``, decoded once."""
    from lancelot.dataset.rowids import row_versions

    cache = _DECODED.setdefault(frag, {})
    if which not in cache:
        cache[which] = row_versions(frag.data_fragment, which, None, frag.where)
    return cache[which]


def check_update_predicate(where: object, schema: pa.Schema) -> None:
    """Refuse an update's SQL predicate naming the columns pylance's update predicates lack, which its scans and deletes
    have: ``_rowoffset`` (OSError there) and the row-version columns (ValueError, no such field). Anything else is
    left to the parse that follows.

    Args:
        where: The predicate as given (SQL text is checked).
        schema: The dataset's schema.

    Raises:
        RowOffsetFilterError: It names ``_rowoffset`` (an OSError, as pylance).
        SqlError: It names a row-version column (a ValueError, as pylance).
    """
    if not isinstance(where, str) or not any(c in where for c in (ROW_OFFSET, *_VERSIONS)):
        return
    from lancelot.sql import parse_filter
    from lancelot.sql.errors import RowOffsetFilterError, SqlError

    named = [pa.field(c, pa.uint64()) for c in ROW_COLUMNS if c not in schema.names]
    try:
        expr = parse_filter(where, pa.schema([*schema, *named]))
    except SqlError:
        return
    from lancelot.sql.expression_tree import expression_tree, fields

    extra = {f.name for f in named} - {ROW_ID, ROW_ADDR}
    used = [p[0] for p in fields(expression_tree(expr)) if p and p[0] in extra]
    if ROW_OFFSET in used:
        raise RowOffsetFilterError(f"update predicate {where!r}: Column {ROW_OFFSET} does not exist")
    if used:
        raise SqlError(f"update predicate {where!r}: No field named {used[0]} (update predicates may name only "
                       f"{ROW_ID} and {ROW_ADDR} besides the dataset's columns)")  # fmt: skip
