"""``merge_insert`` from Spark without a Spark join (merge_insert.py).

Each task over a partition of the source DataFrame gets the target rows whose first key its rows have (keys, fragment
id, physical position): it reads them itself from every fragment's key columns (``scan_matches``: targets of at most
merge_insert.py's ``TASK_SCAN_LIMIT`` rows), or they come with the task, collected on the driver from a pruned key scan.
Each task joins its source rows with them in Arrow (SQL semantics: a null key matches nothing), writes the updated and
inserted rows as new data files (updated rows keep their stable row ids) and returns, per target fragment, the positions
its source rows matched and those it updated or deleted.  The driver checks that no target row was matched twice
(ambiguous), writes each changed fragment's deletion file and commits one Update, as the library's ``merge_insert``: no
shuffle of the source, no exchange of the target's keys.

Also here, shared with the Spark-join path: the plan pickled to the tasks, the update condition's evaluation and the
tasks' payloads."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.changes import NewRows, as_filter, cast_to, matching_positions
from lancelot.dataset.merge_insert import MergeInsertError, condition_mask, qualified_to_plain
from lancelot.spark.jobs import (
    FragmentChange,
    JobRef,
    data_files,
    deletions_of,
    fragment_of,
    injected_fault,
    open_dataset,
)

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset

#: the most matched target rows sent with the task to every source partition (more: a Spark join)
LOOKUP_LIMIT = 1_000_000
_ROW = "_lancelot_source_row"
_FRAG = "_lancelot_fragment"
_POS = "_lancelot_position"


@dataclass(frozen=True)
class MergePlan:
    """What a merge task needs to know (pickled to the executors)."""

    uri: str
    version: int
    storage_options: dict[str, Any] | None
    on: list[str]
    source_columns: list[str]
    matched: str | None  # what matched target rows get: "update", "delete", "fail" or nothing (None)
    update_condition: str | None  # SQL over source.<column> and target.<column>
    insert: bool
    by_source: bool
    by_source_filter: str | None
    collected: pa.Array | None = None  # the source's first keys the key scan kept (None: no pruning)


def condition_schema(schema: pa.Schema, source_columns: list[str]) -> pa.Schema:
    """The columns an update condition reads: ``__target_<c>`` and ``__source_<c>`` (the library's spelling of
    ``target.c`` and ``source.c``)."""
    fields = [pa.field(f"__target_{f.name}", f.type) for f in schema]
    return pa.schema(fields + [pa.field(f"__source_{c}", schema.field(c).type) for c in source_columns])


def updated_rows(
    plan: MergePlan, ds: LanceDataset, frag: Any, pos: np.ndarray, new: pa.Table
) -> tuple[np.ndarray, pa.Table]:
    """Target rows ``pos`` of ``frag`` matched by source rows ``new`` (in that order): those where the update condition
    holds, and their new rows (source columns, then the target's others)."""
    if plan.update_condition is not None:
        ok = _condition_holds(plan, ds.schema, frag, pos, new)
        pos, new = pos[ok], new.filter(pa.array(ok))
    rest = [c for c in ds.schema.names if c not in plan.source_columns]
    if rest and len(pos):
        old = frag.take_physical(rest, pos)
        for c in rest:
            new = new.append_column(old.schema.field(c), old.column(c))
    return pos, new


def _condition_holds(plan: MergePlan, schema: pa.Schema, frag: Any, pos: np.ndarray, new: pa.Table) -> np.ndarray:
    """Which matched rows (target ``pos``, source rows ``new``) the update condition keeps."""
    assert plan.update_condition is not None
    cond = as_filter(qualified_to_plain(plan.update_condition), condition_schema(schema, plan.source_columns))
    src = pa.table({c: cast_to(new.column(c), schema.field(c), c) for c in plan.source_columns})
    return condition_mask(cond, frag.take_physical(list(schema.names), pos), src)


def payload_batch(obj: object) -> pa.RecordBatch:
    """``obj`` pickled into a one-row batch (what a merge task sends back to the driver)."""
    return pa.record_batch(
        [pa.array([pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)], pa.binary())], names=["payload"]
    )


@dataclass
class LookupResult:
    """What one source partition's task did: positions per target fragment (all matched, and those to delete), the new
    fragments it wrote (ids unassigned) and the counts."""

    matched: dict[int, np.ndarray] = field(default_factory=dict)
    gone: dict[int, np.ndarray] = field(default_factory=dict)
    new: list[tuple[bytes, np.ndarray, np.ndarray]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def as_matches(t: pa.Table, schema: pa.Schema, on: list[str]) -> pa.Table:
    """The collected key scan with its key columns in the dataset's types (Arrow's join needs equal types)."""
    cols = [cast_to(t.column(k), schema.field(k), f"merge_insert key {k!r}") for k in on]
    return pa.table(cols + [t.column(_FRAG), t.column(_POS)], names=[*on, _FRAG, _POS])


def _is_in(values: pa.ChunkedArray | pa.Array, only: pa.Array) -> np.ndarray:
    """Which ``values`` are in ``only`` (a null is in nothing): numpy's sorted search for integer keys (pyarrow's
    ``is_in`` hashes a large value set slowly), pyarrow's otherwise."""
    if pa.types.is_integer(values.type) and pa.types.is_integer(only.type):
        filled = pc.fill_null(values, 0).to_numpy()
        hit = np.isin(filled, pc.fill_null(only, 0).to_numpy())
        if values.null_count:
            hit &= pc.is_valid(values).to_numpy(zero_copy_only=False)
        return np.asarray(hit, dtype=bool)
    return np.asarray(pc.is_in(values, value_set=only).to_numpy(zero_copy_only=False), dtype=bool)


def _distinct(values: pa.ChunkedArray) -> pa.Array:
    """The distinct non-null ``values`` (numpy's sort for integers, faster than pyarrow's hash)."""
    if pa.types.is_integer(values.type):
        kept = values.drop_null() if values.null_count else values
        return pa.array(np.unique(kept.to_numpy()), values.type)
    return pc.unique(values).drop_null()


def fragment_keys(frag: Any, on: list[str], only: pa.Array | None) -> pa.Table | None:
    """The key columns of a fragment's live rows (those whose first key is in ``only``, if given) with each row's
    fragment id and physical position (its row address); None if there are none."""
    live = matching_positions(frag, None)
    if not len(live):
        return None
    t = frag.read_physical(on, 0, frag.physical_rows)
    if only is not None:
        live = live[_is_in(t.column(on[0]), only)[live]]
        if not len(live):
            return None
    if len(live) != frag.physical_rows:
        t = t.take(pa.array(live))
    t = t.append_column(_FRAG, pa.array(np.full(len(live), frag.fragment_id, np.int64)))
    return t.append_column(_POS, pa.array(live.astype(np.int64)))


def scan_matches(ds: LanceDataset, on: list[str], src: pa.Table) -> pa.Table:
    """In a task: the target rows whose first key is one of ``src``'s (every fragment's key column read, pruned by the
    task's own keys), as ``as_matches`` gives them."""
    only = _distinct(src.column(on[0]))
    schema = pa.schema([ds.schema.field(k) for k in on] + [pa.field(_FRAG, pa.int64()), pa.field(_POS, pa.int64())])
    parts = [t for f in ds.get_fragments() if (t := fragment_keys(f, on, only)) is not None]
    return pa.Table.from_batches([b for t in parts for b in t.select(schema.names).to_batches()], schema)


def lookup_task(
    plan: MergePlan, job: JobRef, matches: pa.Table | None, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """A task over one partition of the source: see the module docstring (``matches`` None: the task finds its source
    rows' matches itself, ``scan_matches``).  Yields one pickled ``LookupResult``, or ``("fail", key)`` / ``("changed",
    key)`` having written nothing."""
    parts = [b for b in batches if b.num_rows]
    out = LookupResult(counts={"num_inserted_rows": 0, "num_updated_rows": 0, "num_deleted_rows": 0})
    if not parts:
        yield payload_batch(out)
        return
    ds = open_dataset(plan.uri, plan.version, plan.storage_options)
    src = pa.Table.from_batches(parts).select(plan.source_columns)
    src = pa.table(
        [cast_to(src.column(c), ds.schema.field(c), f"merge_insert source column {c!r}") for c in src.column_names],
        names=src.column_names,
    )
    if matches is None:
        matches = scan_matches(ds, plan.on, src)
    left = src.select(plan.on).append_column(_ROW, pa.array(np.arange(src.num_rows, dtype=np.int64)))
    j = left.join(matches, keys=plan.on, join_type="left outer")
    rows = j.column(_ROW).to_numpy()
    frag_col = pc.fill_null(j.column(_FRAG), -1).to_numpy()
    pos_col = pc.fill_null(j.column(_POS), -1).to_numpy()
    hit = frag_col >= 0
    if plan.matched == "fail" and hit.any():
        first = int(rows[np.flatnonzero(hit)[0]])
        yield payload_batch(("fail", {k: src.column(k)[first].as_py() for k in plan.on}))
        return
    new_parts: list[pa.Table] = []
    inserted = np.empty(0, np.int64)
    if plan.insert:
        inserted = np.sort(rows[~hit])
        if plan.collected is not None:
            first_keys = src.column(plan.on[0]).take(pa.array(inserted))
            new_key = pc.and_(pc.is_valid(first_keys), pc.invert(pc.is_in(first_keys, value_set=plan.collected)))
            stray = first_keys.filter(new_key)  # a null key matches nothing: inserted whatever was collected
            if len(stray):  # its target row (if any) was not scanned: inserting it could duplicate it
                yield payload_batch(("changed", {plan.on[0]: stray[0].as_py()}))
                return
    new_rows = NewRows(ds)
    for fid in np.unique(frag_col[hit]):
        sel = np.flatnonzero(hit & (frag_col == fid))
        order = np.argsort(pos_col[sel], kind="stable")
        pos, idx = pos_col[sel][order].astype(np.int64), rows[sel][order]
        out.matched[int(fid)] = pos
        if plan.matched == "delete":
            out.gone[int(fid)] = np.unique(pos)
            out.counts["num_deleted_rows"] += len(out.gone[int(fid)])
        elif plan.matched == "update":
            frag = fragment_of(ds, int(fid))
            pos, new = updated_rows(plan, ds, frag, pos, src.take(pa.array(idx)))
            if not len(pos):
                continue
            new_rows.keep_ids(frag, pos)
            new_parts.append(new)
            out.gone[int(fid)] = pos
            out.counts["num_updated_rows"] += len(pos)
    if len(inserted):
        new_parts.append(src.take(pa.array(inserted)))
        out.counts["num_inserted_rows"] += len(inserted)
    written = new_rows.write(iter(new_parts))
    out.new = [(nf.frag.SerializeToString(), nf.kept_ids, nf.kept_created) for nf in written]
    out.files = data_files([nf.frag for nf in written])
    job.record(out.files)
    injected_fault(job)
    yield payload_batch(out)


def ambiguous_key(frag: Any, positions: np.ndarray, on: list[str]) -> str | None:
    """``k = v, ...`` of the first target row of ``frag`` whose physical position is twice in ``positions`` (None:
    no row is): what the library's (and pylance's) ambiguous merge error names."""
    vals, counts = np.unique(positions, return_counts=True)
    if not len(vals) or counts.max() < 2:
        return None
    p = vals[counts > 1][:1]
    return ", ".join(f"{k} = {frag.take_physical([k], p).column(0)[0].as_py()!r}" for k in on)


def ambiguous_error(uri: str, key: str) -> MergeInsertError:
    """The library's error for a target row matched by two source rows (an OSError, as pylance's)."""
    return MergeInsertError(
        f"dataset {uri!r}: ambiguous merge inserts are prohibited: multiple source rows match the same target row on "
        f"({key}); each target row may be matched by at most one source row"
    )


def deletions(
    cur: LanceDataset, job: JobRef, results: list[LookupResult], on: list[str], checked: bool
) -> list[FragmentChange]:
    """On the driver: one deletion file per target fragment the tasks matched (``checked``: a target row matched by two
    source rows is an error, as the library's ``merge_insert``)."""
    matched: dict[int, list[np.ndarray]] = {}
    gone: dict[int, list[np.ndarray]] = {}
    for r in results:
        for fid, pos in r.matched.items():
            matched.setdefault(fid, []).append(pos)
        for fid, pos in r.gone.items():
            gone.setdefault(fid, []).append(pos)
    if checked:
        for fid, arrays in sorted(matched.items()):
            key = ambiguous_key(fragment_of(cur, fid), np.concatenate(arrays), on)
            if key is not None:
                raise ambiguous_error(cur.uri, key)
    changes = []
    for fid, arrays in sorted(gone.items()):
        change = deletions_of(cur, fragment_of(cur, fid), np.unique(np.concatenate(arrays)))
        job.record(change.files)
        changes.append(change)
    return changes


def summary(r: LookupResult) -> FragmentChange:
    """A task's new fragments as the commit takes them."""
    return FragmentChange(new=r.new, files=r.files)
