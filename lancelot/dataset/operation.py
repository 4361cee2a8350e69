"""Operations: how a commit turns the latest manifest into the next one (table format,
"Transaction types": Append, Overwrite, Delete).

Each ``build_*`` returns a builder for commit.py: called with the latest manifest (None for
a new dataset) and the version being created, it returns the new manifest and the index
section to store.  Everything the operation does not change is carried over: config,
table metadata, schema metadata, the index section, stable row ids.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from google.protobuf.unknown_fields import UnknownFieldSet

from lancelot._version import __version__
from lancelot.dataset.manifest import (
    FLAG_DELETION_FILES,
    FLAG_STABLE_ROW_IDS,
    ManifestFile,
    apply_feature_flags,
    fix_data_format,
    forget_untrusted_rows,
)
from lancelot.errors import LanceError
from lancelot.format.pb import file_pb2, rowids_pb2, table_pb2

if TYPE_CHECKING:
    from lancelot.dataset.commit import Builder


def start_manifest(base: ManifestFile | None, *, take: bool = False) -> table_pb2.Manifest:
    """The next manifest, begun as a copy of ``base``'s.  With ``take``, a base the commit parsed
    for itself (``base.owned``, commit.py) lends its message instead of a copy, once: the builder
    must not read ``base.manifest`` afterwards.  Fields this proto does not know are dropped (a
    newer writer's may describe fragments or positions this commit changes, as pylance's field 23
    places its inline transaction); lancelot writes none, so its own manifests are not walked for
    them, unless one has such a field at the top (pylance's restore keeps lancelot's writer)."""
    if base is None:
        m = table_pb2.Manifest()
    elif take and base.owned:
        m, base.owned = base.manifest, False
    else:
        m = table_pb2.Manifest()
        m.CopyFrom(base.manifest)
    if base is not None and (m.writer_version.library != "lancelot" or len(UnknownFieldSet(m))):
        m.DiscardUnknownFields()
    for name in ("version_aux_data", "tag", "transaction_file", "index_section", "transaction_section"):
        m.ClearField(name)
    return m


def finish_manifest(m: table_pb2.Manifest, version: int, stable: bool, *, deletions: bool | None = None) -> None:
    """Stamp ``m`` as ``version`` of this writer, now, with the feature flags its content needs (``stable``: stable row
    ids; ``deletions``: whether any fragment has a deletion file, None to look)."""
    m.version = version
    us = time.time_ns() // 1000  # (Timestamp.GetCurrentTime's microseconds, without its datetime)
    m.timestamp.seconds, m.timestamp.nanos = us // 1_000_000, us % 1_000_000 * 1000
    m.writer_version.library = "lancelot"
    m.writer_version.version = __version__
    apply_feature_flags(m, stable, deletions=deletions)


def _appended_deletions(base: table_pb2.Manifest, frags: list[table_pb2.DataFragment]) -> bool | None:
    """Whether the manifest an append makes has deletion files, from the base's flag when pylance or
    lancelot wrote it (both set it from the fragments, at every commit) and the appended fragments,
    so an append does not walk every fragment for it; None (walk) for other writers."""
    if base.writer_version.library not in ("lance", "lancelot"):
        return None
    return bool(base.reader_feature_flags & FLAG_DELETION_FILES) or any(f.HasField("deletion_file") for f in frags)


def next_fragment_id(m: table_pb2.Manifest) -> int:
    """One past ``max_fragment_id`` (ids are never reused, even of removed fragments); never an id
    still in use, should a manifest's ``max_fragment_id`` lag behind its fragments.

    A ``max_fragment_id`` at least the last fragment's id (where appends put theirs) is trusted
    as pylance trusts it, so a commit does not walk every fragment; only a lagging one (or none)
    has every id looked at."""
    frags = m.fragments
    if m.HasField("max_fragment_id") and (not frags or int(frags[len(frags) - 1].id) <= m.max_fragment_id):
        return int(m.max_fragment_id) + 1
    used = max((int(f.id) for f in frags), default=-1)
    if m.HasField("max_fragment_id"):
        return max(int(m.max_fragment_id), used) + 1
    return used + 1


def _range(start: int, end: int) -> rowids_pb2.U64Segment:
    return rowids_pb2.U64Segment(range=rowids_pb2.U64Segment.Range(start=start, end=end))


def _add_fragments(m: table_pb2.Manifest, frags: list[table_pb2.DataFragment], version: int, stable: bool) -> None:
    """Append ``frags`` with fresh ids (and, with stable row ids, fresh row ids and versions)."""
    nid = next_fragment_id(m)
    for f in frags:
        nf = m.fragments.add()
        nf.CopyFrom(f)
        nf.id = nid
        nid += 1
        if stable:
            n = int(nf.physical_rows)
            start = int(m.next_row_id)
            nf.inline_row_ids = rowids_pb2.RowIdSequence(segments=[_range(start, start + n)]).SerializeToString()
            runs = rowids_pb2.RowDatasetVersionSequence(
                runs=[rowids_pb2.RowDatasetVersionRun(span=_range(0, n), version=version)]
            ).SerializeToString()
            nf.inline_created_at_versions = runs
            nf.inline_last_updated_at_versions = runs
            m.next_row_id = start + n
    if frags:
        m.max_fragment_id = nid - 1


def build_append(frags: list[table_pb2.DataFragment], uri: str) -> Builder:
    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        if base is None:
            raise LanceError(f"dataset {uri!r} does not exist: create it first (mode='create')")
        deletions = _appended_deletions(base.manifest, frags)
        m = start_manifest(base, take=True)
        forget_untrusted_rows(m)
        stable = bool(m.reader_feature_flags & FLAG_STABLE_ROW_IDS)
        _add_fragments(m, frags, version, stable)
        fix_data_format(m, f"dataset {uri!r} version {version}")
        finish_manifest(m, version, stable, deletions=deletions)
        return m, base.index_section

    return build


def build_overwrite(
    frags: list[table_pb2.DataFragment],
    fields: list[file_pb2.Field],
    schema_metadata: dict[str, bytes],
    data_version: str,
    *,
    stable_row_ids: bool = False,
) -> Builder:
    """A new version holding only ``frags`` (also the first version of a new dataset)."""

    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        m = start_manifest(base)
        stable = stable_row_ids or bool(m.reader_feature_flags & FLAG_STABLE_ROW_IDS)
        del m.fragments[:]
        del m.fields[:]
        m.fields.extend(fields)
        m.schema_metadata.clear()
        for k, v in schema_metadata.items():
            m.schema_metadata[k] = v
        m.data_format.file_format = "lance"
        m.data_format.version = data_version
        _add_fragments(m, frags, version, stable)
        finish_manifest(m, version, stable)
        return m, None  # indices of the old data do not describe the new

    return build


def replace_fragments(m: table_pb2.Manifest, updated: list[table_pb2.DataFragment], removed: list[int]) -> bool:
    """Delete and Update alike: fragments listed as updated replace theirs, removed ids go, in
    place (the others are not copied); returns whether the dataset has stable row ids."""
    by_id = {int(f.id): f for f in updated}
    gone = set(removed)
    if by_id or gone:
        frags = m.fragments
        for i in reversed(range(len(frags))):
            fid = int(frags[i].id)
            if fid in gone:
                del frags[i]
            elif fid in by_id:
                frags[i].CopyFrom(by_id[fid])
    forget_untrusted_rows(m)
    return bool(m.reader_feature_flags & FLAG_STABLE_ROW_IDS)


def any_deletions(updated: list[table_pb2.DataFragment], removed: list[int]) -> bool | None:
    """True when a fragment a delete or update leaves has a deletion file (the manifest then has
    some, without a walk over every fragment); None: walk."""
    gone = set(removed)
    return True if any(f.HasField("deletion_file") and int(f.id) not in gone for f in updated) else None


def build_delete(updated: list[table_pb2.DataFragment], removed: list[int], uri: str) -> Builder:
    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        if base is None:
            raise LanceError(f"dataset {uri!r} does not exist")
        m = start_manifest(base, take=True)
        stable = replace_fragments(m, updated, removed)
        fix_data_format(m, f"dataset {uri!r} version {version}")
        finish_manifest(m, version, stable, deletions=any_deletions(updated, removed))
        return m, base.index_section

    return build
