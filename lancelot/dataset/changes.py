"""Changing a dataset's rows in place: ``delete`` and ``update`` (table format, "Transaction types": Delete, Update),
and what merge_insert and schema evolution share with them.

Each call commits exactly one new version, as pylance 14 does, even when nothing matches (a Delete or Update transaction
that changes no fragment), so both libraries number versions alike.  Rows are never changed inside a data file:
``update`` marks the old rows deleted (a new deletion file per touched fragment) and writes the new rows into new
fragments, which keep the stable row ids of the rows they replace.  Commits go through ``commit_transaction``; a
conflict with a concurrent commit re-runs the operation on the latest version, up to ``conflict_retries`` times
(pylance's default: 10)."""

from __future__ import annotations

import importlib
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset import blob_write  # blob columns rewritten as values (dataset/blob_write.py)
from lancelot.dataset.blob import holds_blob, is_blob_field
from lancelot.dataset.commit import CommitConflictError, commit_manifest
from lancelot.dataset.deletion import deletion_path, new_deletion_file, serialize_deletions
from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS, check_files_agree, writable_data_version
from lancelot.dataset.operation import build_delete
from lancelot.dataset.operation_changes import NewFragment, build_update
from lancelot.dataset.row_id_columns import check_update_predicate
from lancelot.dataset.rowids import encode_row_ids, row_ids, row_versions
from lancelot.dataset.transaction import new_transaction
from lancelot.errors import DatasetSchemaError, LanceError, OSErrorMessage
from lancelot.format.pb import table_pb2, transaction_pb2
from lancelot.sql.errors import EvaluationError, SqlError
from lancelot.sql.expression_tree import check_fields
from lancelot.util.arrays import combined
from lancelot.util.pools import shared_pool

if TYPE_CHECKING:
    from lancelot.dataset.commit import Builder, Versions
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.manifest import ManifestFile

    #: a version just committed: its number, and its versions and manifest to open it by (None: read it back)
    Committed = tuple[int, tuple[Versions, ManifestFile] | None]

DEFAULT_CONFLICT_RETRIES = 10
#: pylance's: no retry starts once this much time has passed
DEFAULT_RETRY_TIMEOUT = timedelta(seconds=30)
#: conflicts worth running the operation again for (commit.py may tell retryable ones apart)
_RETRYABLE: type[CommitConflictError] = getattr(
    importlib.import_module("lancelot.dataset.commit"), "RetryableCommitConflictError", CommitConflictError
)
_T = TypeVar("_T")


class ChangeInputError(LanceError, ValueError):
    """Bad input to update / merge_insert / schema evolution (pylance raises ValueError)."""


class DeleteInputError(LanceError, OSError):
    """A delete predicate that does not parse or names no column (pylance raises OSError)."""

    __str__ = BaseException.__str__


class DeleteResult(dict[str, int]):
    """What ``delete`` returns: pylance's ``{"num_deleted_rows": n}``.  Attribute access reaches the dataset (now at the
    new version), for code written against lancelot's earlier ``delete`` that returned the dataset itself."""

    def __init__(self, ds: LanceDataset, num_deleted_rows: int) -> None:
        super().__init__(num_deleted_rows=num_deleted_rows)
        self._ds = ds

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._ds, name)


# -- SQL (lancelot.sql) ------------------------------------------------------------------------


def as_filter(
    predicate: object, schema: pa.Schema, error: type[LanceError] = ChangeInputError, row_ids: bool = False
) -> pc.Expression:
    """A filter given as SQL text (DataFusion's dialect, as pylance) or a pyarrow Expression; ``row_ids``: the text
    may name ``_rowid`` and ``_rowaddr``, as a scan's may (pylance's delete and update predicates may; its
    merge_insert by-source filter may not)."""
    bad = f"a filter must be an SQL string or a pyarrow.compute.Expression, not {type(predicate)}"
    return _parsed(predicate, schema, "filter", bad, error, row_ids)


def as_expression(sql: object, schema: pa.Schema) -> pc.Expression:
    """A value given as an SQL expression over the row (or a pyarrow Expression)."""
    bad = f"an SQL expression must be a string, not {type(sql).__name__}"
    return _parsed(sql, schema, "expression", bad, ChangeInputError)


def _parsed(
    value: object, schema: pa.Schema, kind: str, bad: str, error: type[LanceError], row_ids: bool = False
) -> pc.Expression:
    """``value`` itself if an Expression, else its SQL text parsed as a ``kind`` (TypeError ``bad`` for anything else;
    ``error`` naming the text for SQL that does not parse); ``row_ids``: as a scan's filter, which may name the row-id
    columns."""
    if isinstance(value, pc.Expression):
        if kind == "filter":  # pylance binds it to the dataset's schema (no _rowid there): pyarrow's ArrowInvalid
            check_fields(value, schema)
        return value
    if not isinstance(value, str):
        raise TypeError(bad)
    from lancelot.dataset.scan import as_filter as scan_filter
    from lancelot.sql import parse_expression, parse_filter

    parse = scan_filter if row_ids else parse_filter if kind == "filter" else parse_expression
    try:
        out = parse(value, schema)
        assert out is not None  # (text parses to an Expression)
        return out
    except LanceError as e:
        raise error(f"{kind} {value!r}: {e}") from None


def evaluate(table: pa.Table, exprs: Mapping[str, pc.Expression]) -> pa.Table:
    """``{name: expr}`` evaluated over the rows of ``table``, in order (Acero's project node)."""
    import pyarrow.acero as ac

    decl = ac.Declaration.from_sequence(
        [
            ac.Declaration("table_source", ac.TableSourceNodeOptions(table)),
            ac.Declaration("project", ac.ProjectNodeOptions(list(exprs.values()), list(exprs))),
        ]
    )
    try:
        out: pa.Table = decl.to_table(use_threads=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowKeyError) as e:
        kind = EvaluationError if isinstance(e, pa.ArrowInvalid) else ChangeInputError  # (a row's values: OSError)
        raise kind(f"cannot evaluate {', '.join(map(str, exprs.values()))}: {e}") from None
    return out


def cast_to(arr: pa.ChunkedArray | pa.Array, f: pa.Field, where: str) -> pa.ChunkedArray | pa.Array:
    if arr.type == f.type:
        return arr
    try:
        return pc.cast(arr, f.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise ChangeInputError(f"{where}: cannot cast {arr.type} to column {f.name!r} of type {f.type}: {e}") from None


class ValueOverflowError(OSErrorMessage, LanceError, OSError):
    """A SET value that does not fit its column's type (pylance: an Arrow error, an OSError)."""


def cast_set_value(arr: pa.ChunkedArray | pa.Array, f: pa.Field, where: str) -> pa.ChunkedArray | pa.Array:
    """An ``update`` SET value cast to its column's type as DataFusion casts it: into a decimal, digits below the
    column's scale rounded half away from zero and each value checked against its precision (pyarrow's cast
    refuses any rescale that drops digits, and an integer type whose widest value would not fit); else ``cast_to``.
    """
    t = f.type
    exact = pa.types.is_decimal(arr.type) or pa.types.is_integer(arr.type)
    if arr.type == t or not pa.types.is_decimal(t) or not exact:
        return cast_to(arr, f, where)
    if pa.types.is_decimal(arr.type) and arr.type.scale > t.scale:
        arr = pc.round(arr, ndigits=t.scale, round_mode="half_towards_infinity")  # (away from zero)
    wide = pa.decimal256(76, t.scale) if pa.types.is_decimal256(arr.type) else pa.decimal128(38, t.scale)
    try:
        return pc.cast(pc.cast(arr, wide), t)
    except pa.ArrowInvalid as e:
        raise ValueOverflowError(f"{where}: a value does not fit column {f.name!r} of type {t}: {e}") from None


def matching_positions(frag: Fragment, predicate: pc.Expression | None) -> np.ndarray:
    """Physical positions (int64, ascending) of the fragment's live rows matching ``predicate`` (all live rows for
    None)."""
    from lancelot.dataset.scan import apply_filter, filter_columns

    deleted = frag.deleted_positions().astype(np.int64)
    n = frag.physical_rows
    if predicate is None:
        if not len(deleted):
            return np.arange(n, dtype=np.int64)
        live = np.ones(n, dtype=bool)
        live[deleted] = False
        return np.flatnonzero(live).astype(np.int64)
    cols = filter_columns(predicate, frag.dataset.schema.names)
    t = frag.read_physical(cols, 0, n).append_column("__lancelot_pos", pa.array(np.arange(n, dtype=np.int64)))
    if len(deleted):
        mask = np.ones(n, dtype=bool)
        mask[deleted] = False
        t = t.filter(pa.array(mask))
    try:
        t = apply_filter(t, predicate, frag.where)
    except LanceError as e:
        raise ChangeInputError(e.message) from None
    pos: np.ndarray = t.column("__lancelot_pos").to_numpy()
    return pos


def matched_positions(ds: LanceDataset, predicate: pc.Expression) -> list[tuple[Fragment, np.ndarray]]:
    """The fragments holding live rows that match ``predicate``, in fragment order, with those rows' physical positions
    (int64, ascending): one filtered scan of the columns the predicate reads and the row addresses, which reads small
    fragments in groups as every scan does."""
    from lancelot.dataset.scan import filter_columns

    cols = filter_columns(predicate, ds.schema.names) or ds.schema.names[:1]
    addr = matching_rows(ds, predicate, cols).column("_rowaddr").to_numpy()
    by_id = dict(by_fragment(np.sort(addr.astype(np.uint64, copy=False))))
    return [(f, by_id[f.fragment_id]) for f in ds.get_fragments() if f.fragment_id in by_id]


def matching_rows(
    ds: LanceDataset, predicate: pc.Expression | None, columns: list[str], fragments: list[Fragment] | None = None
) -> pa.Table:
    """``columns`` of the live rows of ``fragments`` (None: all) matching ``predicate`` (None: every row), and their
    ``_rowaddr``: one scan, which reads small fragments in groups."""
    try:
        return ds.scanner(columns, predicate, fragments=fragments, with_row_address=True).to_table()
    except SqlError as e:  # the predicate's own fault; a file's (missing, legacy, damaged) propagates as it is
        raise ChangeInputError(e.message) from None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowKeyError) as e:
        raise ChangeInputError(f"filter {predicate}: {e}") from None


def by_fragment(addr: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(fragment id, physical positions (int64)) per run of one fragment's row addresses (uint64) in ``addr``."""
    if not len(addr):
        return
    ids = (addr >> np.uint64(32)).astype(np.int64)
    pos = (addr & np.uint64(0xFFFFFFFF)).astype(np.int64)
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    yield from zip(ids[starts].tolist(), np.split(pos, starts[1:]), strict=True)


#: rows (physical) an update reads per scan: the fragments' rows it rewrites are held in memory at most this many
SCAN_ROWS = 1 << 20


def row_groups(frags: list[Fragment], rows: int) -> Iterator[list[Fragment]]:
    """``frags`` in order, cut into runs of at most ``rows`` physical rows (a bigger fragment alone)."""
    group: list[Fragment] = []
    n = 0
    for f in frags:
        k = f.physical_rows
        if group and n + k > rows:
            yield group
            group, n = [], 0
        group.append(f)
        n += k
    if group:
        yield group


#: fragments an operation reads side by side (its reads and Arrow's kernels release the interpreter lock)
FRAGMENT_WORKERS = 4
_R = TypeVar("_R")
_S = TypeVar("_S")


def fragment_map(fn: Callable[[_S], _R], items: Iterable[_S], workers: int | None = None) -> Generator[_R, None, None]:
    """``fn`` over ``items`` (fragments) on a shared pool of ``FRAGMENT_WORKERS`` threads, the results in order, at most
    ``2 * workers`` of them computed ahead (memory stays bounded).  ``fn`` must not change anything, nor call
    ``fragment_map``: what an operation does with the results (deletion files, new rows) stays on the caller's thread,
    in fragment order, so errors and files are those of a sequential run.  A single item (or ``workers`` 1) runs on the
    caller's thread."""
    items = list(items)
    workers = min(workers or FRAGMENT_WORKERS, FRAGMENT_WORKERS)
    if len(items) < 2 or workers < 2:
        yield from map(fn, items)
        return
    pool = shared_pool("fragments", FRAGMENT_WORKERS)
    ahead: deque[Future[_R]] = deque()
    try:
        it = iter(items)
        for x in it:
            ahead.append(pool.submit(fn, x))
            if len(ahead) >= 2 * workers:
                break
        while ahead:
            r = ahead.popleft().result()
            for x in it:
                ahead.append(pool.submit(fn, x))
                break
            yield r
    finally:
        for fut in ahead:  # an error or an early stop: the rest is not wanted
            fut.cancel()
        wait(ahead)


# -- deletions of an operation ---------------------------------------------------------------


@dataclass
class Deletions:
    """Rows an operation removes, per fragment: the Update/Delete transaction's updated fragments (new deletion files
    written at once) and removed fragment ids."""

    ds: LanceDataset
    updated: list[table_pb2.DataFragment] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    count: int = 0

    def mark(self, frag: Fragment, positions: np.ndarray) -> None:
        if not len(positions):
            return
        old = frag.deleted_positions().astype(np.int64)
        positions = np.asarray(positions, dtype=np.int64)
        if not len(old) and (len(positions) < 2 or bool((positions[1:] > positions[:-1]).all())):
            allpos = positions  # the usual case: no deletions yet, positions ascending (no sort needed)
        else:  # (live rows: none deleted already, unless a caller marks a row twice)
            allpos = np.sort(np.concatenate((old, positions)))
            if len(allpos) > 1 and not bool((allpos[1:] > allpos[:-1]).all()):
                allpos = np.unique(allpos)
        self.count += len(allpos) - len(old)
        if len(allpos) == len(old):
            return
        if len(allpos) >= frag.physical_rows:
            self.removed.append(frag.fragment_id)
            return
        ftype, data = serialize_deletions(allpos)
        d = new_deletion_file(ftype, self.ds.version, len(allpos))
        self.ds.store.put_new(deletion_path(frag.fragment_id, d), data)  # (a new name: no temporary file)
        nf = table_pb2.DataFragment()
        nf.CopyFrom(frag.data_fragment)
        nf.deletion_file.CopyFrom(d)
        self.updated.append(nf)


# -- new rows of an operation ----------------------------------------------------------------


#: rows of small tables ``NewRows`` joins before writing them (one write and one conversion, not one per fragment)
COALESCE_ROWS = 1 << 16


class NewRows:
    """Rows an operation writes into new fragments, streamed batch by batch into data files of the dataset's schema and
    version.  Rows that replace existing ones come first and bring their stable row ids and created-at versions
    (``NewFragment.kept_*``).  ``version``: the data files' version when not the dataset's (pylance writes any 2.x
    version beside the dataset's own; see ``file_version``)."""

    def __init__(self, ds: LanceDataset, version: str | None = None) -> None:
        self.ds = ds
        self.version = version
        self.stable = bool(ds.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS)
        self._ids: list[np.ndarray] = []
        self._created: list[np.ndarray] = []

    def keep_ids(self, frag: Fragment, positions: np.ndarray) -> None:
        """Record the row ids of ``positions`` of ``frag`` for the rows just yielded."""
        if not self.stable or not len(positions):
            return
        self._ids.append(row_ids(frag.data_fragment, frag.where)[positions])
        self._created.append(row_versions(frag.data_fragment, "created_at", None, frag.where)[positions])

    def conform(self, t: pa.Table) -> pa.Table:
        """``t`` with the dataset's columns, order and types (missing columns null)."""
        schema = self.ds.schema
        cols = []
        for f in schema:
            if f.name in t.column_names:
                col = blob_write.logical_values(t.column(f.name), f)  # blob v2 given as bytes
                cols.append(cast_to(col, f, f"dataset {self.ds.uri!r}"))
            else:
                cols.append(pa.nulls(t.num_rows, f.type))
        return pa.Table.from_arrays(cols, schema=schema)

    def write(self, batches: Iterator[pa.Table]) -> list[NewFragment]:
        from lancelot.dataset.writing import DEFAULT_MAX_ROWS_PER_FILE, write_fragments

        ds = self.ds
        schema = ds.schema

        def gen() -> Iterator[pa.RecordBatch]:
            held: list[pa.Table] = []  # small tables of one schema (a fragment's rows each) written together
            n = 0
            for t in batches:
                if not t.num_rows:
                    continue
                if held and (n >= COALESCE_ROWS or not t.schema.equals(held[0].schema)):
                    yield from combined(self.conform(pa.concat_tables(held))).to_batches()
                    held, n = [], 0
                held.append(t)
                n += t.num_rows
            if held:
                yield from combined(self.conform(pa.concat_tables(held))).to_batches()

        frags = write_fragments(
            gen(),
            ds.uri,
            schema=schema,
            data_storage_version=self.version
            or writable_data_version(ds.manifest, f"dataset {ds.uri!r} version {ds.version}"),
            max_rows_per_file=DEFAULT_MAX_ROWS_PER_FILE,
            _store=ds.store,
            _base=ds.manifest_file,
        )
        ids = np.concatenate(self._ids) if self._ids else np.empty(0, np.uint64)
        created = np.concatenate(self._created) if self._created else np.empty(0, np.uint64)
        out, at = [], 0
        for fm in frags:
            pb = fm.to_pb()
            n = int(pb.physical_rows)
            k = max(0, min(n, len(ids) - at))
            out.append(NewFragment(pb, ids[at : at + k], created[at : at + k]))
            at += k
        return out


def file_version(ds: LanceDataset, name: str | None) -> str | None:
    """The data file version a ``data_storage_version`` of update / merge_insert names (None: the dataset's own):
    ValueError for an unknown name or the legacy format, which a 2.x dataset may not mix in (as pylance)."""
    from lancelot.dataset.writing import storage_version
    from lancelot.errors import UnsupportedVersionError

    try:
        return storage_version(name)
    except UnsupportedVersionError as e:
        raise ChangeInputError(f"dataset {ds.uri!r}: {e}") from None


def update_transaction(
    cur: LanceDataset, dels: Deletions, rows: NewRows, new_frags: list[NewFragment], field_ids: list[int]
) -> tuple[transaction_pb2.Transaction, Builder]:
    """The Update transaction (protos/transaction.proto) of rows deleted and rewritten, and its builder; ``field_ids``:
    the top-level fields whose values changed."""
    txn = new_transaction(cur.version)
    u = txn.update
    u.removed_fragment_ids.extend(dels.removed)
    u.updated_fragments.extend(dels.updated)
    for nf in new_frags:
        t = u.new_fragments.add()
        t.CopyFrom(nf.frag)
        if rows.stable and len(nf.kept_ids):
            t.inline_row_ids = encode_row_ids(nf.kept_ids)
    u.fields_for_preserving_frag_bitmap.extend(field_ids)
    return txn, build_update(dels.updated, dels.removed, new_frags, cur.uri)


def retrying(ds: LanceDataset, retries: int, attempt: Callable[[LanceDataset], _T], timeout: object = None) -> _T:
    """``attempt(dataset)``; on a commit conflict, again on the latest version, at most ``retries`` times and
    (``timeout``: a timedelta or seconds) not once the time is up (one try always)."""
    seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout
    deadline = None if seconds is None else time.monotonic() + float(seconds)  # type: ignore[arg-type]
    current = ds
    for i in range(max(0, int(retries)) + 1):
        check_files_agree(current.manifest, f"dataset {current.uri!r} version {current.version}")
        try:
            return attempt(current)
        except _RETRYABLE:
            if i >= retries or (deadline is not None and time.monotonic() >= deadline):
                raise
            current = current.checkout_version(current.latest_version)
    raise AssertionError("unreachable")


def commit_change(cur: LanceDataset, txn: transaction_pb2.Transaction, build: Builder) -> Committed:
    """Commit ``txn`` on top of ``cur``'s version: built on what ``cur`` read while a fresh read of the version
    hint says it is still the latest (no listing of ``_versions/``), else as ``commit_manifest`` lists and checks.
    The new version, and its versions and manifest to open it by (None: read it back)."""
    v, versions, mf = commit_manifest(
        cur.store,
        cur.uri,
        txn,
        build,
        read_version=cur.version,
        known=cur.read_as_latest(),
        rebase=True,
        read_manifest=cur.manifest_file,
    )
    return v, ((versions, mf) if mf is not None else None)


# -- delete ------------------------------------------------------------------------------------


def delete(
    ds: LanceDataset, predicate: object, conflict_retries: int = DEFAULT_CONFLICT_RETRIES, retry_timeout: object = None
) -> DeleteResult:
    """Mark the rows matching ``predicate`` deleted; one new version (also when none match)."""
    if predicate is None:
        raise DeleteInputError("delete needs a predicate (an SQL string or a pyarrow Expression)")
    text = predicate if isinstance(predicate, str) else str(predicate)
    expr = as_filter(predicate, ds.schema, DeleteInputError, row_ids=True)

    def attempt(cur: LanceDataset) -> tuple[Committed, int]:
        dels = Deletions(cur)
        try:
            for f, pos in matched_positions(cur, expr):
                dels.mark(f, pos)
        except ChangeInputError as e:
            raise DeleteInputError(e.message) from None
        txn = new_transaction(cur.version)
        txn.delete.updated_fragments.extend(dels.updated)
        txn.delete.deleted_fragment_ids.extend(dels.removed)
        txn.delete.predicate = text
        return commit_change(cur, txn, build_delete(dels.updated, dels.removed, cur.uri)), dels.count

    (version, committed), count = retrying(ds, conflict_retries, attempt, retry_timeout)
    ds.move_to(version, committed)
    return DeleteResult(ds, count)


# -- update ------------------------------------------------------------------------------------


def update(
    ds: LanceDataset,
    updates: Mapping[str, str],
    where: object = None,
    conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
    retry_timeout: object = None,
    data_storage_version: str | None = None,
) -> dict[str, int]:
    """Set ``updates`` (column -> SQL expression over the row) where ``where`` holds; the old rows are deleted and the
    new ones written to new fragments (pylance's Update, rewrite-rows mode), of file version ``data_storage_version``
    (None: the dataset's)."""
    files_version = file_version(ds, data_storage_version)
    if not updates:
        raise ChangeInputError("update: no updates provided")
    schema = ds.schema
    for name in updates:
        if name not in schema.names:
            raise ChangeInputError(f"update: column {name!r} does not exist in the dataset (columns: {schema.names})")
    exprs = {name: as_expression(sql, schema) for name, sql in updates.items()}
    check_update_predicate(where, schema)
    cond = as_filter(where, schema, row_ids=True) if where is not None else None
    top_ids = {f.name: int(f.id) for f in ds.manifest.fields if f.parent_id == -1}

    def attempt(cur: LanceDataset) -> tuple[Committed, int]:
        nonlocal exprs, cond, schema
        if cur.schema != schema:  # a retry on a version whose schema changed since (a cast, a drop): planned there
            schema = cur.schema
            try:
                if any(name not in schema.names for name in updates):
                    raise ChangeInputError(f"columns {sorted(set(updates) - set(schema.names))} do not exist")
                exprs = {name: as_expression(sql, schema) for name, sql in updates.items()}
                cond = as_filter(where, schema, row_ids=True) if where is not None else None
            except ChangeInputError as e:  # (pylance: OSError, "Schema error")
                raise DatasetSchemaError(
                    f"update of dataset {cur.uri!r}: schema of version {cur.version}: {e.message}"
                ) from None
        dels = Deletions(cur)
        rows = NewRows(cur, files_version)

        def changed(f: Fragment, pos: np.ndarray) -> tuple[np.ndarray, pa.Table | None]:
            """(positions, their new rows) of one fragment: what may run beside the other fragments."""
            if not len(pos):
                return pos, None
            t = f.take_physical(list(cur.schema.names), pos)
            t = blob_write.with_values(f, t)  # blobs: their values, not their descriptions
            return pos, with_changes(t)

        def scanned() -> Iterator[pa.Table]:
            """The matching rows, changed, read by one scan per group of fragments (``SCAN_ROWS`` rows)."""
            frags = cur.get_fragments()
            by_id = {f.fragment_id: f for f in frags}
            names = list(cur.schema.names)
            for group in row_groups(frags, SCAN_ROWS):
                t = matching_rows(cur, cond, names, group)
                if not t.num_rows:
                    continue
                addr = t.column("_rowaddr").to_numpy().astype(np.uint64, copy=False)
                t = t.drop_columns(["_rowaddr"])
                if len(addr) > 1 and not bool((addr[1:] > addr[:-1]).all()):
                    order = np.argsort(addr, kind="stable")
                    addr, t = addr[order], t.take(pa.array(order))
                t = with_changes(t)  # (bad values refused before any deletion file is written)
                for fid, pos in by_fragment(addr):
                    rows.keep_ids(by_id[fid], pos)
                    dels.mark(by_id[fid], pos)
                yield t

        def with_changes(t: pa.Table) -> pa.Table:
            new = evaluate(t, exprs)
            for name in exprs:
                i = t.column_names.index(name)
                f = cur.schema.field(name)
                t = t.set_column(i, f, cast_set_value(new.column(name), f, name))
            return t

        def batches() -> Iterator[pa.Table]:
            if not any(holds_blob(f, is_blob_field) for f in cur.schema):
                yield from scanned()
                return
            if cond is None:
                matched = [(f, matching_positions(f, None)) for f in cur.get_fragments()]
            else:
                matched = matched_positions(cur, cond)
            for (f, _), (pos, t) in zip(matched, fragment_map(lambda m: changed(*m), matched)):
                if t is None:
                    continue
                rows.keep_ids(f, pos)
                dels.mark(f, pos)
                yield t

        new_frags = rows.write(batches())
        txn, build = update_transaction(cur, dels, rows, new_frags, [top_ids[n] for n in exprs])
        return commit_change(cur, txn, build), sum(int(nf.frag.physical_rows) for nf in new_frags)

    (version, committed), count = retrying(ds, conflict_retries, attempt, retry_timeout)
    ds.move_to(version, committed)
    return {"num_rows_updated": count}


def insert(ds: LanceDataset, data: object, *, mode: str = "append", **kwargs: Any) -> None:
    """``write_dataset(data, ds, mode=mode)``; ``ds`` then shows the new version (pylance's ``insert``)."""
    from lancelot.dataset.write_modes import write_version
    from lancelot.dataset.write_options import WriteOptions

    kwargs.setdefault("storage_options", ds.storage_options)
    schema = kwargs.pop("schema", None)  # (write_dataset's schema=, as pylance's insert passes it on)
    new = write_version(
        data, ds, mode=mode, schema=schema, options=WriteOptions.of(kwargs, strict=True)
    )  # (the dataset and its commit lock)
    ds.move_to(new.version)
