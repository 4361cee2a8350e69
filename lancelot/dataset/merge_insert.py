"""``merge_insert``: upserts, insert-if-not-exists and replace-a-range in one Update transaction (pylance's
``MergeInsertBuilder``; table format, "Transaction types": Update).

Source rows are matched to the dataset's live rows by the ``on`` columns (SQL join semantics: a null key matches
nothing).  Matched target rows that are updated or deleted get deleted in their fragments; updated rows (source values,
the target's values for columns the source lacks) and inserted rows are written to new fragments, updated rows first, so
they keep their stable row ids.  A source that is not already an in-memory Table is spooled to a temporary Arrow IPC
file and memory-mapped: only its keys are hashed, rows are taken from the map."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset import blob_write  # blob v2 columns given as bytes (dataset/blob_write.py)
from lancelot.dataset.changes import (
    DEFAULT_CONFLICT_RETRIES,
    DEFAULT_RETRY_TIMEOUT,
    ChangeInputError,
    Deletions,
    NewRows,
    as_filter,
    commit_change,
    file_version,
    retrying,
    update_transaction,
)
from lancelot.dataset.merge_join import POS as _POS
from lancelot.dataset.merge_join import KeyJoin
from lancelot.dataset.row_id_columns import ROW_ADDR, ROW_ID, row_columns
from lancelot.errors import LanceError, LanceValueError

_NONE = np.empty(0, np.int64)

if TYPE_CHECKING:
    from lancelot.dataset.changes import Committed
    from lancelot.dataset.commit import Builder
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.transaction_api import Transaction
    from lancelot.format.pb import transaction_pb2


class MergeInsertError(LanceError, OSError):
    """A merge_insert that cannot run on this source (pylance raises OSError): ambiguous matches, a source schema the
    dataset does not have, a match under ``when_matched_fail``."""

    __str__ = BaseException.__str__


def primary_key(ds: LanceDataset) -> list[str]:
    """The schema's unenforced primary key: the paths of the fields flagged ``unenforced_primary_key``, in schema
    order (file.proto Field; pylance sets it from the Arrow field metadata ``lance-schema:unenforced-primary-key``)."""
    fields = ds.manifest_file.manifest.fields
    names = {f.id: (f.name, f.parent_id) for f in fields}

    def path(fid: int) -> str:
        name, parent = names[fid]
        return name if parent not in names else f"{path(parent)}.{name}"

    return [path(f.id) for f in fields if f.unenforced_primary_key]


class MergeInsertBuilder:
    """A merge-insert being configured (pylance's ``MergeInsertBuilder``), from
    [`LanceDataset.merge_insert`][lancelot.dataset.dataset.LanceDataset.merge_insert].

    Each ``when_*`` and option method returns the builder; ``execute(data)`` runs the merge as one new version. Source
    rows are matched to the dataset's rows on the key columns; a key that matches several source rows is an error, as in
    pylance.

    Examples:
        Insert-if-not-exists:

        >>> new = pa.table({"id": [9, 10], "name": ["x9", "n10"]})
        >>> r = ds.merge_insert("id").when_not_matched_insert_all().execute(new)
        >>> r["num_inserted_rows"], r["num_updated_rows"], ds.count_rows()
        (1, 0, 11)
    """

    def __init__(self, ds: LanceDataset, on: str | Iterable[str] | None = None) -> None:
        """Start a merge-insert (use ``LanceDataset.merge_insert``).

        Args:
            ds: The dataset to change.
            on: The key column(s); None (or none) for the schema's unenforced primary key.

        Raises:
            ValueError: No key and no primary key, or a key that is not a column of the dataset.
        """
        self._ds = ds
        self._on = [on] if isinstance(on, str) else list(on or ())
        if not self._on:
            self._on = primary_key(ds)
        if not self._on:
            raise ChangeInputError(
                f"merge insert into dataset {ds.uri!r} requires join keys: specify `on` columns explicitly or "
                "configure a primary key in the dataset schema"
            )
        for k in self._on:
            if k not in ds.schema.names:
                raise ChangeInputError(
                    f"merge insert key column {k!r} does not exist in the schema of dataset {ds.uri!r} "
                    f"(columns: {ds.schema.names})"
                )
        self._matched: str | None = None  # "update", "delete", "fail"
        self._condition: str | None = None
        self._insert = False
        self._by_source = False
        self._by_source_expr: str | pc.Expression | None = None
        self._retries = DEFAULT_CONFLICT_RETRIES
        self._timeout: Any = DEFAULT_RETRY_TIMEOUT
        self._version: str | None = None  # the new data files' (None: the dataset's)

    def when_matched_update_all(self, condition: str | None = None) -> MergeInsertBuilder:
        """Matched rows take the source's values.

        Args:
            condition: Only where this SQL holds, over ``source.col`` and ``target.col`` (``"source.ts > target.ts"``);
                None for every matched row.

        Returns:
            The builder.
        """
        self._matched, self._condition = "update", _sql_text(condition, "condition")
        return self

    def when_matched_delete(self) -> MergeInsertBuilder:
        """Matched rows are deleted."""
        self._matched, self._condition = "delete", None
        return self

    def when_matched_fail(self) -> MergeInsertBuilder:
        """A match fails the whole merge (nothing is committed): an insert that must not overwrite."""
        self._matched, self._condition = "fail", None
        return self

    def when_not_matched_insert_all(self) -> MergeInsertBuilder:
        """Source rows that match no dataset row are inserted."""
        self._insert = True
        return self

    def when_not_matched_by_source_delete(self, expr: str | None = None) -> MergeInsertBuilder:
        """Dataset rows that no source row matches are deleted (replacing a range: pass ``expr``).

        Args:
            expr: Only the unmatched rows matching this SQL text; None for all.

        Returns:
            The builder.

        Raises:
            TypeError: ``expr`` is not text (a pyarrow Expression, as pylance's).
        """
        expr = _sql_text(expr, "expr")
        if expr is not None:
            as_filter(expr, self._ds.schema)  # (checked now, as pylance does: a ValueError from the builder)
        self._by_source, self._by_source_expr = True, expr
        return self

    def conflict_retries(self, max_retries: int) -> MergeInsertBuilder:
        """How often to retry when a concurrent commit conflicts.

        Args:
            max_retries: Retries after the first try (default 10, as pylance).

        Returns:
            The builder.
        """
        self._retries = int(max_retries)
        return self

    def retry_timeout(self, timeout: Any) -> MergeInsertBuilder:
        """Stop retrying once this much time has passed (the first try always runs).

        Args:
            timeout: A ``datetime.timedelta``.

        Returns:
            The builder.
        """
        self._timeout = timeout
        return self

    def use_index(self, use_index: bool) -> MergeInsertBuilder:
        """Accepted for pylance's API; no effect (lancelot uses no index: the join reads the key columns).

        Args:
            use_index: Ignored.

        Returns:
            The builder.
        """
        return self  # lancelot builds no indices: the join always scans the keys

    def write_mode(self, mode: str) -> MergeInsertBuilder:
        """How merged rows are written (pylance's ``write_mode``): ``"auto"`` or ``"rewrite_rows"`` (matched rows
        deleted, whole rows written to new fragments: what lancelot does); ``"rewrite_columns"`` is refused.

        Args:
            mode: ``"auto"``, ``"rewrite_rows"`` or ``"rewrite_columns"``.

        Returns:
            The builder.
        """
        if mode not in ("auto", "rewrite_rows", "rewrite_columns"):
            raise LanceValueError(
                f"Invalid write_mode: {mode}. Expected one of 'auto', 'rewrite_rows', 'rewrite_columns'"
            )
        if mode == "rewrite_columns":
            raise LanceValueError(
                f"dataset {self._ds.uri!r}: lancelot writes merged rows whole (write_mode 'rewrite_rows')"
            )
        return self

    def data_storage_version(self, version: str) -> MergeInsertBuilder:
        """The file version of the data files this merge writes (pylance's; default the dataset's), beside the
        dataset's other files.

        Args:
            version: ``"2.1"``, ``"stable"``...

        Returns:
            The builder.
        """
        self._version = file_version(self._ds, version)
        return self

    def execute(self, data_obj: Any, *, schema: pa.Schema | None = None) -> dict[str, int]:
        """Run the merge as one new version; the dataset object then shows it.

        Args:
            data_obj: The source rows: anything ``write_dataset`` accepts; its columns are the key columns and a subset
                of the dataset's.
            schema: The source's schema, when ``data_obj`` is an iterable of batches.

        Returns:
            pylance's counts: ``num_inserted_rows``, ``num_updated_rows``, ``num_deleted_rows``.

        Raises:
            ValueError: No ``when_*`` was called, or the source has columns the dataset has not.
            OSError: ``when_matched_fail`` and a row matched, or a key matched several source rows (a
                ``MergeInsertError``).
        """
        if self._matched is None and not self._insert and not self._by_source:
            raise ChangeInputError("the merge insert job is not configured to change the data in any way")
        with _Source(data_obj, schema) as src:
            committed, stats = retrying(
                self._ds, self._retries, lambda cur: self._attempt(cur, src.table), self._timeout
            )
        self._ds.move_to(*committed)
        return stats

    def execute_uncommitted(
        self, data_obj: Any, *, schema: pa.Schema | None = None
    ) -> tuple[Transaction, dict[str, int]]:
        """Write the merge's files without committing (pylance's two-phase merge_insert): commit the returned
        transaction with ``LanceDataset.commit(uri, transaction)``.

        Args:
            data_obj: The source rows, as for ``execute``.
            schema: The source's schema, when ``data_obj`` is an iterable of batches.

        Returns:
            ``(Transaction, stats)``: an Update transaction read at the dataset's version, and the
            counts ``execute`` would return.
        """
        from lancelot.dataset.transaction_api import transaction_from_pb

        if self._matched is None and not self._insert and not self._by_source:
            raise ChangeInputError("the merge insert job is not configured to change the data in any way")
        with _Source(data_obj, schema) as src:
            txn, _, stats = self._stage(self._ds, src.table)
        return transaction_from_pb(txn), stats

    def explain_plan(self, schema: pa.Schema | None = None, verbose: bool = False) -> str:
        """The merge's plan for a source of ``schema`` (None: the dataset's), as text; nothing is written.

        The first line is pylance's (``MergeInsert: on=[...], when_matched=..., ...``); the lines under
        it describe lancelot's own steps (pylance prints a DataFusion plan there).

        Args:
            schema: The source's schema.
            verbose: Also list the source's columns and the dataset's version and fragments.

        Returns:
            The plan, one step a line.

        Raises:
            ValueError: No ``when_*`` was called.
            OSError: The source's schema cannot be merged (a ``MergeInsertError``).
        """
        if self._matched is None and not self._insert and not self._by_source:
            raise ChangeInputError("the merge insert job is not configured to change the data in any way")
        src = (schema or self._ds.schema).empty_table()
        self._check_source(self._ds, src)
        return "\n".join(self._plan_lines(src.schema, verbose)) + "\n"

    def analyze_plan(self, data_obj: Any, *, schema: pa.Schema | None = None) -> str:
        """Run the merge on ``data_obj`` without committing it (as pylance: its files are written, no
        version is made) and return the plan with its metrics (``bytes_written``, ``num_files_written``
        and the row counts).

        Args:
            data_obj: The source rows, as for ``execute``.
            schema: The source's schema, when ``data_obj`` is an iterable of batches.

        Returns:
            The plan, then a ``metrics=[...]`` line of what the run wrote and changed.
        """
        if self._matched is None and not self._insert and not self._by_source:
            raise ChangeInputError("the merge insert job is not configured to change the data in any way")
        with _Source(data_obj, schema) as src:
            txn, _, stats = self._stage(self._ds, src.table)
            lines = self._plan_lines(src.table.schema, False)
        old = {d.path for f in self._ds.manifest.fragments for d in f.files}
        written = [
            d for f in (*txn.update.new_fragments, *txn.update.updated_fragments) for d in f.files if d.path not in old
        ]
        metrics = {
            "bytes_written": sum(d.file_size_bytes for d in written),
            "num_deleted_rows": stats.get("num_deleted_rows", 0),
            "num_files_written": len(written),
            "num_inserted_rows": stats.get("num_inserted_rows", 0),
            "num_updated_rows": stats.get("num_updated_rows", 0),
        }
        lines[0] += ", metrics=[" + ", ".join(f"{k}={v}" for k, v in metrics.items()) + "]"
        return "\n".join(lines) + "\n"

    def execute_batches(self, new_data: Any) -> dict[str, int]:
        """``execute`` for data held in memory (pylance's: a table, a record batch or a record batch reader).

        Args:
            new_data: A ``pyarrow.Table``, ``RecordBatch``, ``RecordBatchReader`` or any Arrow stream.

        Returns:
            ``execute``'s counts.

        Raises:
            TypeError: ``new_data`` is none of those (a list of batches is not taken, as pylance's).
        """
        return self.execute(_in_memory(new_data))

    def execute_uncommitted_batches(self, new_data: Any) -> tuple[Transaction, dict[str, int]]:
        """``execute_uncommitted`` for data held in memory, as ``execute_batches`` takes it.

        Args:
            new_data: A ``pyarrow.Table``, ``RecordBatch``, ``RecordBatchReader`` or any Arrow stream.

        Returns:
            ``execute_uncommitted``'s ``(Transaction, stats)``.
        """
        return self.execute_uncommitted(_in_memory(new_data))

    def analyze_plan_batches(self, new_data: Any) -> str:
        """``analyze_plan`` for data held in memory, as ``execute_batches`` takes it.

        Args:
            new_data: A ``pyarrow.Table``, ``RecordBatch``, ``RecordBatchReader`` or any Arrow stream.

        Returns:
            ``analyze_plan``'s text.
        """
        return self.analyze_plan(_in_memory(new_data))

    def _plan_lines(self, source: pa.Schema, verbose: bool) -> list[str]:
        """pylance's MergeInsert line, then lancelot's steps in its own words."""
        matched = {None: "DoNothing", "delete": "Delete", "fail": "Fail"}.get(
            self._matched, "UpdateIf(MergeCondition)" if self._condition else "UpdateAll"
        )
        by_source = "Keep" if not self._by_source else "DeleteIf" if self._by_source_expr is not None else "Delete"
        on = ", ".join(self._on)
        lines = [
            f"MergeInsert: on=[{on}], when_matched={matched}, "
            f"when_not_matched={'InsertAll' if self._insert else 'DoNothing'}, when_not_matched_by_source={by_source}",
            f"  KeyJoin: source rows matched to the dataset's on [{on}] (lancelot's own steps, no DataFusion plan)",
            f"    DatasetKeys: uri={self._ds.uri}, columns=[{on}], version={self._ds.version}, "
            f"num_fragments={len(self._ds.manifest.fragments)}",
            f"    Source: columns=[{', '.join(source.names)}]",
        ]
        if verbose:
            lines += [f"      {f.name}: {f.type}{'' if f.nullable else ' not null'}" for f in source]
        return lines

    # -- the merge -----------------------------------------------------------------------------
    def _check_source(self, cur: LanceDataset, src: pa.Table) -> None:
        """The source's columns against those of the dataset object (of ``cur``, the latest version, on a retry), and
        their types against ``cur``, the version the merge runs on: a retry after a cast or a drop refuses the source,
        as pylance; without a retry a column dropped since is left out."""
        unexpected = [n for n in src.schema.names if n not in (self._ds if cur is self._ds else cur).schema.names]
        if unexpected:
            raise MergeInsertError(
                f"dataset {self._ds.uri!r}: merge_insert source has columns the dataset does not: {unexpected}"
            )
        target = cur.schema
        for f in (f for f in src.schema if f.name in target.names):
            if f.type != target.field(f.name).type and not blob_write.accepts(f, target.field(f.name)):
                raise MergeInsertError(
                    f"dataset {self._ds.uri!r}: merge_insert source column {f.name!r} is {f.type}, "
                    f"the dataset's is {target.field(f.name).type}"
                )
        missing = [k for k in self._on if k not in src.schema.names]
        if missing:
            raise MergeInsertError(f"merge_insert source lacks the key column(s) {missing}")
        absent = [f.name for f in target if not f.nullable and f.name not in src.schema.names]
        if self._insert and absent and src.num_rows:  # (no rows, none inserted: pylance accepts an empty source)
            raise MergeInsertError(
                f"dataset {self._ds.uri!r}: cannot insert rows with a partial-schema source: target column(s) {absent} "
                "are non-nullable and not provided by the source"
            )

    def _attempt(self, cur: LanceDataset, src: pa.Table) -> tuple[Committed, dict[str, int]]:
        txn, build, stats = self._stage(cur, src)
        return commit_change(cur, txn, build), stats

    def _stage(self, cur: LanceDataset, src: pa.Table) -> tuple[transaction_pb2.Transaction, Builder, dict[str, int]]:
        """The merge on ``cur`` planned and its files written: its Update transaction and builder."""
        self._check_source(cur, src)
        on = self._on
        cond = self._match_condition(cur, src) if self._matched == "update" and self._condition else None
        by_source = (
            as_filter(self._by_source_expr, cur.schema)
            if self._by_source and self._by_source_expr is not None
            else None
        )
        dels = Deletions(cur)
        rows = NewRows(cur, self._version)
        matched_src: list[np.ndarray] = []
        updated_parts: list[tuple[Any, np.ndarray, np.ndarray]] = []  # (fragment, positions, source rows)
        n_deleted_matched = n_deleted_by_source = 0

        frags = cur.get_fragments()
        join = KeyJoin(src, on, by_source)  # (the live rows the by-source condition holds for: the same scan)
        for f, (live, pos, srow) in zip(frags, join.matches(frags)):
            if not len(live):
                continue
            joined = pos
            order = np.argsort(pos, kind="stable")
            pos, srow = pos[order], srow[order]
            if self._matched == "delete":
                self._check_unambiguous(f, pos)
            if self._matched == "fail" and len(pos):
                raise MergeInsertError(
                    f"dataset {cur.uri!r}: merge insert failed: found a matching row with key values "
                    f"{ {k: f.take_physical([k], joined[:1]).column(0)[0].as_py() for k in on} }"
                )
            matched_src.append(srow)
            gone = np.empty(0, np.int64)
            if self._matched == "update" and len(pos):
                if cond is not None:
                    ok = self._condition_holds(cond, f, pos, src, srow)
                    pos, srow = pos[ok], srow[ok]
                self._check_unambiguous(f, pos)  # (the pairs the condition keeps: pylance checks those only)
                updated_parts.append((f, pos, srow))
                gone = pos
            elif self._matched == "delete":
                gone = pos
                n_deleted_matched += len(pos)
            if self._by_source:
                keep = np.zeros(f.physical_rows, dtype=bool)
                keep[live if by_source is None else join.kept_rows.get(f.fragment_id, _NONE)] = True
                keep[joined] = False
                unmatched = np.flatnonzero(keep)
                n_deleted_by_source += len(unmatched)
                gone = np.concatenate((gone, unmatched))  # (disjoint: ``mark`` sorts them)
            dels.mark(f, gone)
        inserted = np.empty(0, np.int64)
        if self._insert:
            unseen = np.ones(src.num_rows, dtype=bool)
            for m in matched_src:
                unseen[m] = False
            inserted = np.flatnonzero(unseen).astype(np.int64)
        n_updated = sum(len(p) for _, p, _ in updated_parts)

        def batches() -> Iterator[pa.Table]:
            rest = [c for c in cur.schema.names if c not in src.column_names]
            some: list[np.ndarray] = []  # (the source holds every column: one take for many fragments' rows)
            n = 0
            for f, pos, srow in updated_parts:
                if not len(pos):
                    continue
                if not rest:
                    rows.keep_ids(f, pos)
                    some.append(srow)
                    n += len(srow)
                    if n >= 65536:
                        yield src.take(pa.array(np.concatenate(some)))
                        some, n = [], 0
                    continue
                new = src.take(pa.array(srow))
                old = blob_write.with_values(f, f.take_physical(rest, pos))  # blobs: values
                for c in rest:
                    new = new.append_column(old.schema.field(c), old.column(c))
                rows.keep_ids(f, pos)
                yield new
            if some:
                yield src.take(pa.array(np.concatenate(some)))
            for a in range(0, len(inserted), 65536):
                yield src.take(pa.array(inserted[a : a + 65536]))

        new_frags = rows.write(batches())
        top = [int(x.id) for x in cur.manifest.fields if x.parent_id == -1]
        txn, build = update_transaction(cur, dels, rows, new_frags, top)
        stats = {
            "num_inserted_rows": int(len(inserted)),
            "num_updated_rows": int(n_updated),
            "num_deleted_rows": int(n_deleted_matched + n_deleted_by_source),
        }
        return txn, build, stats

    def _check_unambiguous(self, f: Any, pos: np.ndarray) -> None:
        """Refuse a target row (``pos``: the sorted positions of matched pairs) several source rows change."""
        if len(pos) < 2 or not bool((pos[1:] == pos[:-1]).any()):
            return
        vals, counts = np.unique(pos, return_counts=True)
        p = vals[counts > 1][:1]
        key = ", ".join(f"{k} = {f.take_physical([k], p).column(0)[0].as_py()!r}" for k in self._on)
        raise MergeInsertError(
            f"dataset {self._ds.uri!r}: ambiguous merge inserts are prohibited: multiple source rows match "
            f"the same target row on ({key}); each target row may be matched by at most one source row"
        )

    # -- when_matched_update_all(condition) -------------------------------------------------------
    def _match_condition(self, cur: LanceDataset, src: pa.Table) -> pc.Expression:
        """The condition over ``source.x`` / ``target.x`` (and the target's ``_rowid`` / ``_rowaddr``), as a filter
        over columns named ``__source_x`` / ``__target_x`` of a joined table; a name only one side has may go
        unqualified (SQL name resolution, as pylance's DataFusion)."""
        assert self._condition is not None
        text = qualified_to_plain(self._condition)
        target = list(cur.schema) + [pa.field(n, pa.uint64()) for n in (ROW_ID, ROW_ADDR)]
        fields = [pa.field(f"__target_{f.name}", f.type) for f in target]
        fields += [pa.field(f"__source_{f.name}", f.type) for f in src.schema]
        fields += _unqualified(target, list(src.schema))
        try:
            return as_filter(text, pa.schema(fields), MergeInsertError)
        except MergeInsertError as e:
            raise MergeInsertError(f"failed to parse the update condition {self._condition!r}: {e.message}") from None

    def _condition_holds(
        self, cond: pc.Expression, f: Any, pos: np.ndarray, src: pa.Table, srow: np.ndarray
    ) -> np.ndarray:
        assert self._condition is not None
        old = f.take_physical(list(self._ds.schema.names), pos)
        # the matched rows' row ids / addresses, only when the condition may name them
        for name, col in row_columns(f, pos, {n for n in (ROW_ID, ROW_ADDR) if n in self._condition}, 0).items():
            old = old.append_column(name, col)
        try:
            return condition_mask(cond, old, src.take(pa.array(srow)))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise MergeInsertError(f"cannot evaluate the update condition {self._condition!r}: {e}") from None


class MergeSourceTypeError(LanceError, TypeError):
    """The data of a ``*_batches`` call is not Arrow data in memory (pylance raises TypeError)."""


def _in_memory(data: Any) -> pa.Table:
    """``data`` (a table, record batch, reader or Arrow stream) as a table, as pylance's ``*_batches`` take it."""
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        return data
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data).read_all()
    kind = f"{type(data).__module__}.{type(data).__qualname__}"
    raise MergeSourceTypeError(f"Expected instance of pyarrow.lib.RecordBatchReader, got {kind}")


def _unqualified(target: list[pa.Field], source: list[pa.Field]) -> list[pa.Field]:
    """The fields only one side of the join has: names a condition may use unqualified."""
    t, s = {f.name for f in target}, {f.name for f in source}
    return [f for f in target if f.name not in s] + [f for f in source if f.name not in t]


def condition_mask(cond: pc.Expression, old: pa.Table, new: pa.Table) -> np.ndarray:
    """Which matched pairs (target row ``old[i]``, source row ``new[i]``) an update condition keeps (``cond`` reads
    ``__target_x`` and ``__source_x``: ``qualified_to_plain``; and ``x`` where only one side has ``x``)."""
    t = pa.table(
        {f"__target_{n}": old.column(n) for n in old.column_names}
        | {f"__source_{n}": new.column(n) for n in new.column_names}
        | {
            f.name: (old if f.name in old.column_names else new).column(f.name)
            for f in _unqualified(old.schema, new.schema)
        }
    ).append_column(_POS, pa.array(np.arange(old.num_rows, dtype=np.int64)))
    ok = np.zeros(old.num_rows, dtype=bool)
    ok[t.filter(cond).column(_POS).to_numpy()] = True
    return ok


_QUALIFIED = re.compile(r"(?<![\w`\"'.])(source|target)\.(`[^`]+`|\"[^\"]+\"|[A-Za-z_]\w*)", re.IGNORECASE)


def _sql_text(value: str | None, argument: str) -> str | None:
    """``value``, SQL text or None: pylance's builder takes nothing else (TypeError)."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"argument '{argument}': '{type(value).__name__}' object is not an instance of 'str'")
    return value


def qualified_to_plain(sql: str) -> str:
    """``source.x`` / ``target.x`` in an SQL condition as plain column names ``__source_x`` / ``__target_x`` (outside
    string literals)."""
    out, i = [], 0
    for m in re.finditer(r"'(?:[^']|'')*'", sql):
        out.append(_QUALIFIED.sub(_plain, sql[i : m.start()]))
        out.append(m.group(0))
        i = m.end()
    out.append(_QUALIFIED.sub(_plain, sql[i:]))
    return "".join(out)


def _plain(m: re.Match[str]) -> str:
    side, name = m.group(1).lower(), m.group(2)
    if name[0] == '"':  # pylance's DataFusion reads ``target."x"`` as a string index into ``target``, and refuses it
        raise MergeInsertError(
            f"Failed to parse UpdateIf condition: Only dot notation or index access is supported for field access "
            f"({m.group(0)}: quote the name with backticks)"
        )
    if name[0] == "`":
        name = name[1:-1]
    return f"`__{side}_{name}`"


class _Source:
    """The source as a Table: in memory as given, else spooled to a temporary IPC file and memory-mapped (removed on
    exit)."""

    def __init__(self, data: Any, schema: pa.Schema | None) -> None:
        self._data, self._schema = data, schema
        self._path: str | None = None
        self.table: pa.Table

    def __enter__(self) -> _Source:
        from lancelot.dataset.writing import as_batches

        data = self._data
        if type(data).__module__.split(".")[0] == "pandas":
            data = pa.Table.from_pandas(data, schema=self._schema, preserve_index=False)
        if isinstance(data, pa.Table | pa.RecordBatch):
            self.table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
            _check_declared_nulls(self.table, LanceValueError)  # (pylance: ValueError in memory, OSError streamed)
            return self
        if hasattr(data, "to_batches") and isinstance(getattr(data, "schema", None), pa.Schema):
            data = pa.RecordBatchReader.from_batches(data.schema, data.to_batches())  # a dataset
        schema, batches = as_batches(data, self._schema)
        fd, self._path = tempfile.mkstemp(prefix="lancelot-merge-", suffix=".arrow")
        os.close(fd)
        with pa.OSFile(self._path, "wb") as sink, pa.ipc.new_file(sink, schema) as w:
            for b in batches:
                w.write_batch(b)
        self.table = pa.ipc.open_file(pa.memory_map(self._path)).read_all()
        _check_declared_nulls(self.table, MergeInsertError)
        return self

    def __exit__(self, *exc: object) -> None:
        self.table = pa.table({})
        if self._path is not None:
            try:
                os.unlink(self._path)
            except OSError:
                pass


def _check_declared_nulls(table: pa.Table, error: type[LanceError]) -> None:
    """Refuse a source whose own schema declares a top-level column non-nullable that holds nulls, as pylance's
    Arrow import does before merging (whatever the dataset's schema says)."""
    for f, col in zip(table.schema, table.columns):
        if not f.nullable and col.null_count:
            raise error(f"Column '{f.name}' is declared as non-nullable but contains null values")
