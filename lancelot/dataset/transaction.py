"""Transactions: what a commit did, stored in ``_transactions/{read_version}-{uuid}.txn``
(table format, "Transactions"), and the rules for when two commits conflict.

A writer that loses the race for version N reads the transactions of the versions that
won, and retries on top of them only if none conflicts with its own operation: two
appends never conflict; anything against an overwrite (or a restore, or a schema
change) does; deletes and rewrites (compaction) conflict with operations that touched the same fragments.
"""

from __future__ import annotations

import uuid as _uuid

from lancelot.format.pb import transaction_pb2

TRANSACTIONS_DIR = "_transactions"
#: operations that replace the table or its schema: nothing that read an older version survives them
_REPLACING = {"overwrite", "restore", "merge", "project", "clone", "update_bases"}
#: operations that never conflict with anything that follows
_HARMLESS = {"reserve_fragments", "create_index", "update_config", "update_mem_wal_state"}


def new_transaction(read_version: int) -> transaction_pb2.Transaction:
    return transaction_pb2.Transaction(read_version=read_version, uuid=str(_uuid.uuid4()))


def transaction_name(t: transaction_pb2.Transaction) -> str:
    return f"{t.read_version}-{t.uuid}.txn"


def operation(t: transaction_pb2.Transaction) -> str | None:
    kind: str | None = t.WhichOneof("operation")
    return kind


def touched_fragments(t: transaction_pb2.Transaction) -> set[int]:
    """Ids of existing fragments the transaction modified or removed."""
    op = operation(t)
    if op == "delete":
        return {f.id for f in t.delete.updated_fragments} | set(t.delete.deleted_fragment_ids)
    if op == "update":
        return {f.id for f in t.update.updated_fragments} | set(t.update.removed_fragment_ids)
    if op == "rewrite":
        olds = list(t.rewrite.old_fragments) + [f for g in t.rewrite.groups for f in g.old_fragments]
        return {f.id for f in olds}
    if op == "data_replacement":
        return {g.fragment_id for g in t.data_replacement.replacements}
    return set()


def conflicts(mine: transaction_pb2.Transaction, other: transaction_pb2.Transaction | None) -> str | None:
    """Why ``mine`` cannot be rebased onto a version committed by ``other`` (None: it can)."""
    if other is None:
        return "a version committed in between has no transaction file"
    op, theirs = operation(mine), operation(other)
    if theirs is None:
        return "a version committed in between has an unknown operation"
    if op == "overwrite":
        return None  # an overwrite replaces everything: last writer wins
    if theirs in _REPLACING:
        return f"a concurrent {theirs} replaced the table"
    if op == "rewrite" and theirs == "create_index":
        return "a concurrent create_index may cover the rewritten fragments"
    if op == "append" or theirs in _HARMLESS or theirs == "append":
        return None
    if op in ("delete", "rewrite"):
        both = touched_fragments(mine) & touched_fragments(other)
        if both:
            return f"a concurrent {theirs} modified fragment(s) {sorted(both)}"
        return None
    return f"{op} cannot be rebased over a concurrent {theirs}"
