"""Transactions: what a commit did, stored in ``_transactions/{read_version}-{uuid}.txn``
(table format, "Transactions"), and the rules for when two commits conflict.

A writer that loses the race for version N reads the transactions of the versions that won
and checks its own operation against each (table format, "Conflict Resolution"), with the
reference's rules (rust/lance/src/io/commit/conflict_resolver.rs), so that lancelot and pylance
writers agree on every pair of operations.  Each check has one of four outcomes:

- compatible (``None``): the commit is rebuilt on top of the other one;
- rebase: deletes and updates that changed only the deletion files of fragments this delete or
  update also changes: the commit layer merges the deletion files, then commits (commit.py; rows
  both changed: retryable); a delete of
  fragments a compaction rewrites: the rows deleted meanwhile are marked deleted in the new
  fragments (compact.py; the reference calls this one retryable);
- retryable: the operation cannot be rebased, but running it again on the latest version
  would do what was meant (a compaction over a delete of a fragment it rewrites);
- incompatible: running it again would mean something else (an append over an overwrite).

A version committed in between without a transaction (or with an unknown operation) is
incompatible with everything, as pylance treats it.
"""

from __future__ import annotations

import uuid as _uuid
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lancelot.format.pb import table_pb2, transaction_pb2

if TYPE_CHECKING:
    from lancelot.dataset.manifest import ManifestFile

TRANSACTIONS_DIR = "_transactions"
#: the name of the fragment reuse index (its commits conflict with each other)
FRAG_REUSE_INDEX_NAME = "__lance_frag_reuse"

COMPATIBLE, REBASE, RETRYABLE, INCOMPATIBLE = "compatible", "rebase", "retryable", "incompatible"


def new_transaction(read_version: int) -> transaction_pb2.Transaction:
    return transaction_pb2.Transaction(read_version=read_version, uuid=str(_uuid.uuid4()))


def transaction_name(t: transaction_pb2.Transaction) -> str:
    return f"{t.read_version}-{t.uuid}.txn"


def transaction_uuid(name: str) -> str | None:
    """The uuid in a transaction file's name ``{read_version}-{uuid}.txn`` (None if not that form)."""
    if not name.endswith(".txn") or "-" not in name:
        return None
    return name[: -len(".txn")].split("-", 1)[1]


def operation(t: transaction_pb2.Transaction) -> str | None:
    kind: str | None = t.WhichOneof("operation")
    return kind


def touched_fragments(t: transaction_pb2.Transaction) -> set[int]:
    """Ids of existing fragments the transaction modified or removed."""
    op = operation(t)
    if op == "delete":
        return {int(f.id) for f in t.delete.updated_fragments} | {int(i) for i in t.delete.deleted_fragment_ids}
    if op == "update":
        return {int(f.id) for f in t.update.updated_fragments} | {int(i) for i in t.update.removed_fragment_ids}
    if op == "rewrite":
        return _rewritten(t)
    if op == "data_replacement":
        return {int(g.fragment_id) for g in t.data_replacement.replacements}
    if op == "merge":
        return {int(f.id) for f in t.merge.fragments}
    return set()


def gap_conflict(t: transaction_pb2.Transaction, read: ManifestFile, after: ManifestFile) -> Conflict | None:
    """How ``t`` stands against versions a cleanup removed, between its read version (``read``) and the version
    ``after`` them (None: compatible).  Their transactions are gone, so the two manifests tell: an append, which
    touches no existing fragment, passes (as pylance's, which checks only the transactions still there); so does a
    delete or update whose fragments are in ``after`` as they were read, and an index built while every fragment it
    read and every index are as they were.  Where only a delete's or update's fragments' deletions changed, it is
    rebased as over a concurrent delete (``rebase_deletions`` merges the rows, or finds the same ones: retryable);
    anything else is retryable: a delete or update then runs again on the latest version."""
    op, was, now = operation(t), read.manifest, after.manifest
    if op == "append":
        return None
    if op == "create_index":
        touched = {int(f.id) for f in was.fragments}
        if read.index_section != after.index_section:
            return Conflict(RETRYABLE, "the indices changed")
    elif op in ("delete", "update"):
        touched = touched_fragments(t)
    else:
        return Conflict(RETRYABLE, f"a {op} cannot be checked against them")
    if op == "update" and list(was.fields) != list(now.fields):
        return Conflict(RETRYABLE, "the schema changed")
    frags = {int(f.id): f for f in now.fragments}
    out = None
    for f in was.fragments:
        if int(f.id) in touched:
            g = frags.get(int(f.id))
            if g is None or list(g.files) != list(f.files):
                return Conflict(RETRYABLE, f"fragment {f.id}, which this {op} reads, was removed or rewritten")
            if g.deletion_file != f.deletion_file and op != "create_index":
                out = Conflict(REBASE, f"rows of fragment {f.id}, which this {op} changes, were deleted")
    return out


def _rewritten(t: transaction_pb2.Transaction) -> set[int]:
    olds = list(t.rewrite.old_fragments) + [f for g in t.rewrite.groups for f in g.old_fragments]
    return {int(f.id) for f in olds}


@dataclass(frozen=True)
class Conflict:
    """Why a commit cannot simply be rebuilt on top of another one; ``kind`` is REBASE, RETRYABLE or
    INCOMPATIBLE (module docstring)."""

    kind: str
    reason: str

    @property
    def retryable(self) -> bool:
        return self.kind == RETRYABLE


def _name(op: str | None) -> str:
    return "".join(w.capitalize() for w in (op or "unknown").split("_"))


def conflict(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction | None) -> Conflict | None:
    """How ``mine`` stands against ``other``, a transaction committed after ``mine``'s read version
    (None: compatible, ``mine`` is rebuilt on top of it)."""
    if other is None:
        return Conflict(INCOMPATIBLE, "a version committed in between has no transaction file")
    op, theirs = operation(mine), operation(other)
    if theirs is None:
        return Conflict(INCOMPATIBLE, "a version committed in between has an unknown operation")
    check = _CHECKS.get(op or "")
    if check is None:
        return Conflict(INCOMPATIBLE, f"cannot rebase an unknown operation ({op}) over a concurrent {theirs}")
    kind = check(mine, other, theirs)
    if kind is None or kind == COMPATIBLE:
        return None
    what = {
        REBASE: "changed the same fragments' deletions",
        RETRYABLE: "was committed first; retry on the latest version",
        INCOMPATIBLE: "is incompatible with it",
    }[kind]
    both = sorted(touched_fragments(mine) & touched_fragments(other))
    frags = f" (fragment(s) {both})" if both else ""
    return Conflict(kind, f"a concurrent {theirs}{frags}: {_name(op)} vs {_name(theirs)} {what}")


def conflicts(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction | None) -> str | None:
    """Why ``mine`` cannot be rebuilt as it is on top of ``other`` (None: it can); see ``conflict``."""
    c = conflict(mine, other)
    return None if c is None else c.reason


# -- the reference's rules, one function per operation of ``mine`` -----------------------------------


def _overlap(a: Iterable[Hashable], b: Iterable[Hashable]) -> bool:
    return not set(a).isdisjoint(b)


def _against_rows(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction, theirs: str) -> str | None:
    """Delete / Update (mine) against the other operations (the two share one rule set)."""
    touched = touched_fragments(mine)
    if theirs in ("create_index", "reserve_fragments", "clone", "project", "append", "update_config", "update_bases"):
        return None
    if theirs in ("rewrite", "data_replacement"):
        return RETRYABLE if _overlap(touched_fragments(other), touched) else None
    if theirs in ("delete", "update"):
        return _rows_rebase(mine, other) if _overlap(touched_fragments(other), touched) else None
    if theirs == "merge":
        return RETRYABLE
    if theirs == "update_mem_wal_state" and operation(mine) == "update":
        if not mine.update.HasField("mem_wal_to_merge"):
            return None
        ids = _mem_wal_ids(list(other.update_mem_wal_state.added) + list(other.update_mem_wal_state.updated))
        return INCOMPATIBLE if _mem_wal_key(mine.update.mem_wal_to_merge) in ids else None
    return INCOMPATIBLE  # overwrite, restore (and, for a delete, update_mem_wal_state)


def _rows_rebase(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction) -> str:
    """A Delete / Update against another of the same fragments: REBASE (the deletion files merged once every version
    is checked) while only deletion files changed; RETRYABLE at once (as pylance, before the versions after it) where
    the other removed a fragment ours changes, changed its data files, or ours only removes fragments whole."""
    body, theirs = _rows(mine), _rows(other)
    if not body[0]:
        return RETRYABLE
    files = {int(f.id): [d.SerializeToString() for d in f.files] for f in body[0]}
    if _overlap(theirs[1], files) or _overlap(theirs[1], body[1]):
        return RETRYABLE
    changed = (int(f.id) in files and [d.SerializeToString() for d in f.files] != files[int(f.id)] for f in theirs[0])
    return RETRYABLE if any(changed) else REBASE


def _rows(t: transaction_pb2.Transaction) -> tuple[list[table_pb2.DataFragment], set[int]]:
    """(updated fragments, removed fragment ids) of a Delete or Update."""
    if operation(t) == "delete":
        return list(t.delete.updated_fragments), {int(i) for i in t.delete.deleted_fragment_ids}
    return list(t.update.updated_fragments), {int(i) for i in t.update.removed_fragment_ids}


def _index_fragments(t: transaction_pb2.Transaction) -> set[int] | None:
    """Fragments the new indices of a CreateIndex cover (None: one of them says nothing)."""
    from pyroaring import BitMap

    out: set[int] = set()
    for idx in t.create_index.new_indices:
        if not idx.fragment_bitmap:
            return None
        out |= set(BitMap.deserialize(bytes(idx.fragment_bitmap)))
    return out


def _create_index(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction, theirs: str) -> str | None:
    if theirs == "create_index":
        fri = FRAG_REUSE_INDEX_NAME
        both = any(i.name == fri for i in mine.create_index.new_indices) and any(
            i.name == fri for i in other.create_index.new_indices
        )
        return RETRYABLE if both else None
    if theirs == "rewrite":
        covered = _index_fragments(mine)
        return RETRYABLE if covered is None or _overlap(_rewritten(other), covered) else None
    if theirs == "data_replacement":
        fields = {int(f) for i in mine.create_index.new_indices for f in i.fields}
        replaced = {int(f) for g in other.data_replacement.replacements for f in g.new_file.fields}
        return RETRYABLE if _overlap(fields, replaced) else None
    if theirs in ("overwrite", "restore", "update_mem_wal_state"):
        return INCOMPATIBLE
    return None


def _rewrite(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction, theirs: str) -> str | None:
    touched = _rewritten(mine)
    if theirs == "delete":  # the reference: retryable; lancelot carries the deletions (compact.py)
        return REBASE if _overlap(touched_fragments(other), touched) else None
    if theirs in ("update", "rewrite", "data_replacement"):
        return RETRYABLE if _overlap(touched_fragments(other), touched) else None
    if theirs == "merge":
        return RETRYABLE
    if theirs == "create_index":  # only replacing the fragment reuse index (its trim) leaves our rewrite valid
        new = other.create_index.new_indices
        if any(i.name == FRAG_REUSE_INDEX_NAME for i in new):
            return None if len(new) == 1 and len(other.create_index.removed_indices) == 1 else INCOMPATIBLE
        covered = _index_fragments(other)
        return RETRYABLE if covered is None or _overlap(touched, covered) else None
    if theirs in ("overwrite", "restore"):
        return INCOMPATIBLE
    return None


def _config_keys(t: transaction_pb2.Transaction) -> tuple[set[str], set[str]]:
    """(upserted, deleted) config keys of an Overwrite or UpdateConfig."""
    op = operation(t)
    if op == "overwrite":
        return set(t.overwrite.config_upsert_values), set()
    if op == "update_config":
        u = t.update_config
        ups = {e.key for e in u.config_updates.update_entries if e.HasField("value")} | set(u.upsert_values)
        dels = {e.key for e in u.config_updates.update_entries if not e.HasField("value")} | set(u.delete_keys)
        return ups, dels
    return set(), set()


def _upsert_key_conflict(a: transaction_pb2.Transaction, b: transaction_pb2.Transaction) -> bool:
    (au, ad), (bu, bd) = _config_keys(a), _config_keys(b)
    return _overlap(au, bu | bd) or _overlap(bu, au | ad)


def _metadata_changes(t: transaction_pb2.Transaction) -> tuple[bool, set[int]]:
    """(changes schema metadata, ids of fields whose metadata it changes) of an UpdateConfig."""
    u = t.update_config
    return (
        u.HasField("schema_metadata_updates") or len(u.schema_metadata) > 0,
        {int(k) for k in u.field_metadata_updates} | {int(k) for k in u.field_metadata},
    )


def _update_config(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction, theirs: str) -> str | None:
    schema_md, field_md = _metadata_changes(mine)
    if theirs == "overwrite":
        return INCOMPATIBLE if schema_md or field_md or _upsert_key_conflict(mine, other) else None
    if theirs == "update_config":
        o_schema, o_fields = _metadata_changes(other)
        same = (schema_md and o_schema) or _overlap(field_md, o_fields)
        return INCOMPATIBLE if _upsert_key_conflict(mine, other) or same else None
    return None


def _overwrite(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction, theirs: str) -> str | None:
    if theirs in ("overwrite", "update_config") and _upsert_key_conflict(mine, other):
        return INCOMPATIBLE
    if theirs == "overwrite":  # pylance 14.0.2: "preempted by concurrent transaction Overwrite" (the
        return RETRYABLE  # reference's table, newer, rebases it): an overwrite never silently replaces another
    return INCOMPATIBLE if theirs == "update_mem_wal_state" else None


def _append(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction, theirs: str) -> str | None:
    return INCOMPATIBLE if theirs in ("overwrite", "restore", "update_mem_wal_state") else None


def _data_replacement(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction, theirs: str) -> str | None:
    groups = mine.data_replacement.replacements
    if theirs == "create_index":
        fields = {int(f) for i in other.create_index.new_indices for f in i.fields}
        return RETRYABLE if _overlap((int(f) for g in groups for f in g.new_file.fields), fields) else None
    if theirs == "rewrite":
        return RETRYABLE if _overlap((int(g.fragment_id) for g in groups), _rewritten(other)) else None
    if theirs == "data_replacement":
        for g in groups:
            for o in other.data_replacement.replacements:
                if g.fragment_id == o.fragment_id and _overlap(g.new_file.fields, o.new_file.fields):
                    return RETRYABLE
        return None
    if theirs in ("overwrite", "restore", "update_mem_wal_state"):
        return INCOMPATIBLE
    return None


def _merge(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction, theirs: str) -> str | None:
    if theirs in ("create_index", "reserve_fragments", "clone", "update_config", "update_bases"):
        return None
    if theirs in ("overwrite", "restore", "project", "update_mem_wal_state"):
        return INCOMPATIBLE
    return RETRYABLE  # append, delete, update, rewrite, merge, data_replacement: the new columns miss rows


def _restore(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction, theirs: str) -> str | None:
    return INCOMPATIBLE if theirs == "update_mem_wal_state" else None


def _reserve(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction, theirs: str) -> str | None:
    return INCOMPATIBLE if theirs in ("overwrite", "restore") else None


def _project(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction, theirs: str) -> str | None:
    if theirs in ("merge", "project"):
        return RETRYABLE  # the schema must be computed again
    if theirs in ("append", "update"):  # pylance 14.0.2 (the reference's newer table: compatible)
        return RETRYABLE
    return INCOMPATIBLE if theirs in ("overwrite", "restore", "update_mem_wal_state") else None


def _mem_wal_key(w: object) -> tuple[str, int]:
    wid = getattr(w, "id")  # noqa: B009 - a MemWal message
    return (str(wid.region), int(wid.generation))


def _mem_wal_ids(ws: Iterable[object]) -> set[tuple[str, int]]:
    return {_mem_wal_key(w) for w in ws}


def _update_mem_wal_state(
    mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction, theirs: str
) -> str | None:
    if theirs == "update_mem_wal_state":
        a, b = mine.update_mem_wal_state, other.update_mem_wal_state
        mine_ids = _mem_wal_ids(list(a.added) + list(a.updated))
        theirs_ids = _mem_wal_ids(list(b.added) + list(b.updated))
        return INCOMPATIBLE if _overlap(mine_ids, theirs_ids) else None
    if theirs == "update":
        return None if other.update.HasField("mem_wal_to_merge") else INCOMPATIBLE
    if theirs in ("update_config", "rewrite", "create_index", "reserve_fragments", "update_bases"):
        return None
    return INCOMPATIBLE


def _update_bases(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction, theirs: str) -> str | None:
    if theirs != "update_bases":
        return None
    for n in mine.update_bases.new_bases:
        for c in other.update_bases.new_bases:
            same_id = n.id != 0 and n.id == c.id
            same_name = n.HasField("name") and c.HasField("name") and n.name == c.name
            if same_id or same_name or n.path == c.path:
                return INCOMPATIBLE
    return None


def _clone(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction, theirs: str) -> str | None:
    return None


_CHECKS = {
    "append": _append,
    "delete": _against_rows,
    "update": _against_rows,
    "overwrite": _overwrite,
    "create_index": _create_index,
    "rewrite": _rewrite,
    "merge": _merge,
    "restore": _restore,
    "reserve_fragments": _reserve,
    "project": _project,
    "update_config": _update_config,
    "data_replacement": _data_replacement,
    "update_mem_wal_state": _update_mem_wal_state,
    "clone": _clone,
    "update_bases": _update_bases,
}
