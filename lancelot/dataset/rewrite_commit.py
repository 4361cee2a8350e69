"""Committing a ``LanceOperation.Rewrite`` a caller planned (transaction.proto ``Rewrite``): each group's old fragments
replaced by its new ones, as ``compact_files`` commits its own.

New fragments with id 0 get theirs at commit, from ``max_fragment_id`` (pylance's rule; the stored transaction keeps
them as given). Indices follow pylance's rules: with stable row ids every index's fragment bitmap is recomputed (rows
keep their ids); without, each ``RewrittenIndex`` names an index whose files the caller rewrote under ``new_id``: its
bitmap is recomputed and its uuid replaced, and the other indices are left as they were. The bitmaps take the new
fragments' ids as the caller gave them, before ids are assigned, as pylance 14.0.2 does (a caller rewriting an index
gives the new fragments their ids, since the index's row addresses name them)."""

from __future__ import annotations

import uuid as _uuid
from typing import TYPE_CHECKING, Any

from pyroaring import BitMap

from lancelot.dataset.compact import build_rewrite
from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS, ManifestFile
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.transaction_api import InvalidOperationError, TransactionError, fragment_protos
from lancelot.format.pb import table_pb2, transaction_pb2

if TYPE_CHECKING:
    from lancelot.dataset.commit import Builder

Group = tuple[list[table_pb2.DataFragment], list[table_pb2.DataFragment]]


def fill_rewrite(op: Any, pb: transaction_pb2.Transaction) -> tuple[list[Group], list[Any]]:
    """``pb.rewrite`` filled from ``op``; the groups as messages and the rewritten indices."""
    groups: list[Group] = []
    for g in op.groups:
        old, new = fragment_protos(list(g.old_fragments)), fragment_protos(list(g.new_fragments))
        if not old:
            raise TransactionError("Rewrite: a group must rewrite at least one fragment")
        m = pb.rewrite.groups.add()
        m.old_fragments.extend(old)
        m.new_fragments.extend(new)
        groups.append((old, new))
    rewritten = list(op.rewritten_indices or [])
    for r in rewritten:
        i = pb.rewrite.rewritten_indices.add()
        i.old_id.uuid = _uuid.UUID(str(r.old_id)).bytes
        i.new_id.uuid = _uuid.UUID(str(r.new_id)).bytes
        i.new_index_details.type_url = str(r.new_details_type_url)
        i.new_index_details.value = bytes(r.new_details_value)
        i.new_index_version = int(r.new_index_version)
    return groups, rewritten


def _new_bitmap(old: BitMap, groups: list[Group], name: str) -> BitMap:
    """pylance's recalculation: a group covered by the index moves to its new fragments (a group only partly covered is
    refused)."""
    out = BitMap(old)
    for olds, news in groups:
        ids = [int(f.id) for f in olds]
        covered = [i in old for i in ids]
        if any(covered):
            if not all(covered):
                raise TransactionError(f"Rewrite: a group splits indexed and non-indexed fragments of index {name!r}")
            out -= BitMap(ids)
            out |= BitMap(int(f.id) for f in news)
    return out


def build_user_rewrite(groups: list[Group], rewritten: list[Any], uri: str, store: ObjectStore) -> Builder:
    """The builder of a caller's Rewrite (ids assigned on top of the base, then ``build_rewrite``)."""

    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        if base is None:
            raise TransactionError(f"dataset {uri!r} does not exist")
        m0 = base.manifest
        nid = (
            max([int(f.id) for f in m0.fragments] + [int(m0.max_fragment_id) if m0.HasField("max_fragment_id") else -1])
            + 1
        )
        with_ids: list[Group] = []
        for old, new in groups:
            copies = []
            for f in new:
                c = table_pb2.DataFragment()
                c.CopyFrom(f)
                if int(c.id) == 0:
                    c.id, nid = nid, nid + 1
                copies.append(c)
            with_ids.append((old, copies))
        stable = bool(m0.reader_feature_flags & FLAG_STABLE_ROW_IDS)
        if stable and any(f.WhichOneof("row_id_sequence") is None for _, new in with_ids for f in new):
            raise InvalidOperationError(
                f"dataset {uri!r}: Invalid user input: All fragments must have row ids (the dataset has stable row "
                "ids: a Rewrite's new fragments carry the ids of the rows they hold)"
            )
        m, section = build_rewrite(with_ids, uri, store)(base, version)
        if not section or (not stable and not rewritten):
            if rewritten:
                raise TransactionError(f"dataset {uri!r}: Rewrite names indices but the dataset has none")
            return m, section
        sec = table_pb2.IndexSection()
        sec.ParseFromString(section)
        by_uuid = {str(_uuid.UUID(bytes=bytes(i.uuid.uuid))): i for i in sec.indices}
        targets = (
            [(by_uuid.get(str(r.old_id)), r) for r in rewritten] if not stable else [(i, None) for i in sec.indices]
        )
        for idx, r in targets:
            if idx is None:
                assert r is not None
                raise TransactionError(f"dataset {uri!r}: Rewrite refers to index {r.old_id} which does not exist")
            if idx.fragment_bitmap:
                bm = _new_bitmap(BitMap.deserialize(bytes(idx.fragment_bitmap)), groups, idx.name)  # (ids as given)
                idx.fragment_bitmap = bm.serialize()
            elif r is not None:
                raise TransactionError(f"dataset {uri!r}: index {idx.name!r} stores no fragment bitmap to rewrite")
            if r is not None:
                idx.uuid.uuid = _uuid.UUID(str(r.new_id)).bytes
        out: bytes = sec.SerializeToString()
        return m, out

    return build
