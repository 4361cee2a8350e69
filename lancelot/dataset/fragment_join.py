"""A fragment joined with new data, written but not committed (pylance's ``LanceFragment.merge`` and
``LanceFragment.update_columns``): a left join of the fragment's physical rows on a key column with the data's rows.

``merge`` writes the data's other columns as a new data file of the fragment (commit with ``LanceOperation.Merge``);
``update_columns`` writes new values of existing columns as a new data file, the old files' ids of those fields
tombstoned (-2, table format: "Data files"), to commit with ``LanceOperation.Update(fields_modified=...)``.  A key
the data holds twice takes its last row, as pylance."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.changes import ChangeInputError
from lancelot.dataset.column_files import next_field_id, numbered_fields, write_column_files

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.fragment_metadata import FragmentMetadata
    from lancelot.dataset.transaction_api import LanceSchema

_KEY, _POS, _HIT = "__lancelot_key", "__lancelot_pos", "__lancelot_hit"
_TOMBSTONE = -2  # a field id no longer read from this file


def _right(frag: Fragment, data_obj: Any, schema: Any, right_on: str) -> tuple[pa.Table, list[str]]:
    """The data as one table, its key renamed, one row per key (the last); and the names of its other columns."""
    from lancelot.dataset.writing import as_batches

    if isinstance(data_obj, pa.RecordBatch):  # as pylance, through a Table: an empty batch is no batch
        data_obj = pa.Table.from_batches([data_obj])
    sch, batches = as_batches(data_obj, schema)
    right = pa.Table.from_batches(list(batches), schema=sch)
    if right_on not in right.column_names:
        raise ChangeInputError(f"fragment {frag.fragment_id}: column {right_on} does not exist in the right side data")
    if right.column(0).num_chunks == 0:  # no batch at all: pylance's join refuses it (one empty batch: no row matches)
        raise ChangeInputError(f"fragment {frag.fragment_id}: no data on the right side (no record batch)")
    right = right.rename_columns([_KEY if n == right_on else n for n in right.column_names])
    last = pa.table({_KEY: right.column(_KEY), _POS: np.arange(right.num_rows)}).group_by(_KEY)
    right = right.take(last.aggregate([(_POS, "max")]).column(f"{_POS}_max"))
    return right, [n for n in right.column_names if n not in (_KEY, _HIT)]


def _keys(frag: Fragment, left_on: str) -> pa.Array:
    """The join key of every physical row (``_rowid``: the row ids, as pylance's default key; ``_rowaddr``: the row
    addresses)."""
    from lancelot.dataset.row_id_columns import ROW_ADDR, ROW_ID, row_columns

    n = frag.physical_rows
    if left_on in (ROW_ID, ROW_ADDR):
        return row_columns(frag, np.arange(n, dtype=np.int64), {left_on}, 0)[left_on]
    if left_on not in frag.schema.names:
        raise ChangeInputError(f"fragment {frag.fragment_id}: column {left_on} does not exist in the left side")
    return frag.read_physical([left_on], 0, n).column(0).combine_chunks()


def _joined(frag: Fragment, right: pa.Table, left_on: str) -> pa.Table:
    """``right``'s rows in the fragment's physical row order (nulls where no key matches; ``_HIT`` says which)."""
    right = right.append_column(_HIT, pa.array(np.ones(right.num_rows, bool)))
    left = pa.table({_KEY: _keys(frag, left_on), _POS: np.arange(frag.physical_rows)})
    return left.join(right, _KEY, join_type="left outer", use_threads=False).sort_by(_POS)


def merge(
    frag: Fragment, data_obj: Any, left_on: str, right_on: str | None, schema: Any
) -> tuple[FragmentMetadata, LanceSchema]:
    """``LanceFragment.merge``: the data's other columns as a new data file of the fragment, and the new schema."""
    from lancelot.dataset.fragment_metadata import FragmentMetadata
    from lancelot.dataset.transaction_api import LanceSchema

    ds = frag.dataset
    right, names = _right(frag, data_obj, schema, right_on or left_on)
    for n in names:
        if n in ds.schema.names:
            raise ChangeInputError(f"fragment {frag.fragment_id}: column {n} exists in the fragment and the data")
    new_schema = pa.schema([right.schema.field(n) for n in names])
    fields = numbered_fields(new_schema, next_field_id(ds.manifest))
    [nf] = write_column_files(ds, new_schema, fields, lambda f: _joined(f, right, left_on).select(names), only=frag)
    return FragmentMetadata.from_pb(nf), LanceSchema(
        list(ds.manifest.fields) + fields, dict(ds.manifest.schema_metadata)
    )


def update_columns(
    frag: Fragment, data_obj: Any, left_on: str, right_on: str | None, schema: Any, with_offsets: bool
) -> tuple[Any, ...]:
    """``LanceFragment.update_columns``: the fragment with the new values of the data's columns (matched rows; others
    keep theirs) in a new data file, the ids of the fields modified, and with ``with_offsets`` the matched physical
    positions of live rows as a serialized (portable) roaring bitmap."""
    from lancelot.dataset.fragment_metadata import FragmentMetadata

    ds = frag.dataset
    right, names = _right(frag, data_obj, schema, right_on or left_on)
    for n in names:
        if n in ("_rowid", "_rowaddr"):
            raise ChangeInputError(
                f"fragment {frag.fragment_id}: column {n} is a reserved metadata column and cannot be updated"
            )
        if n not in ds.schema.names:
            raise ChangeInputError(
                f"fragment {frag.fragment_id}: column {n} in the data does not exist in the fragment"
            )
    if not names:
        raise ChangeInputError(f"fragment {frag.fragment_id}: the data has no column to update")
    out_schema = pa.schema([ds.schema.field(n) for n in names])
    tops = {f.name: int(f.id) for f in ds.manifest.fields if f.parent_id == -1}
    ids = {tops[n] for n in names}
    fields = [f for f in ds.manifest.fields if int(f.id) in ids or _under(ds.manifest.fields, f, ids)]
    hits: list[np.ndarray] = []

    def values(f: Fragment) -> pa.Table:
        j = _joined(f, right, left_on)
        hit = j.column(_HIT).is_valid()
        hits.append(np.setdiff1d(np.flatnonzero(hit.to_numpy(zero_copy_only=False)), f.deleted_positions()))
        old = f.read_physical(names, 0, f.physical_rows)
        cols = [pc.if_else(hit, j.column(n).cast(old.schema.field(n).type), old.column(n)) for n in names]
        return pa.Table.from_arrays(cols, schema=old.schema)

    [nf] = write_column_files(ds, out_schema, fields, values, only=frag)
    gone = {int(f.id) for f in fields}
    for d in nf.files[:-1]:
        d.fields[:] = [_TOMBSTONE if int(x) in gone else int(x) for x in d.fields]
    result: tuple[Any, ...] = (FragmentMetadata.from_pb(nf), sorted(ids))
    if with_offsets:
        from pyroaring import BitMap

        result += (BitMap(hits[0].tolist() if hits else []).serialize(),)
    return result


def _under(fields: Any, f: Any, tops: set[int]) -> bool:
    """Whether field ``f`` is a descendant of one of ``tops``."""
    parents = {int(g.id): int(g.parent_id) for g in fields}
    p = int(f.parent_id)
    while p >= 0:
        if p in tops:
            return True
        p = parents.get(p, -1)
    return False
