"""Operations that change data in place: how Update, Merge and Project turn the latest manifest
into the next one (table format, "Transaction types"; protos/transaction.proto).

- Update (``update``, ``merge_insert``): fragments listed as updated replace theirs (a new
  deletion file), removed ids go, new fragments are appended with fresh ids.  With stable row
  ids, a new fragment's first rows keep the ids of the rows they replace (their created-at
  versions too); the rest get fresh ids from ``next_row_id``; all are last updated at the new
  version, as pylance 14 writes them.
- Merge (``add_columns``, ``merge``, a cast in ``alter_columns``): the new schema, and fragments
  that carry an extra data file for the new columns.
- Project (``drop_columns``, renames): the new schema only; data files keep listing the ids
  of dropped fields (readers ignore ids the schema no longer has), as pylance leaves them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from lancelot.dataset.commit import CommitConflictError
from lancelot.dataset.manifest import (
    FLAG_MIXED_FILE_VERSIONS,
    FLAG_STABLE_ROW_IDS,
    ManifestFile,
    fix_data_format,
    forget_untrusted_rows,
)
from lancelot.dataset.operation import (
    any_deletions,
    finish_manifest,
    next_fragment_id,
    replace_fragments,
    start_manifest,
)
from lancelot.dataset.rowids import encode_row_ids, encode_versions
from lancelot.errors import LanceError
from lancelot.format.pb import file_pb2, table_pb2

if TYPE_CHECKING:
    from lancelot.dataset.commit import Builder


@dataclass
class NewFragment:
    """A fragment an Update adds: its message (id unassigned), and for stable row ids the ids and
    created-at versions of the rows it carries over (its first rows; the others are new rows)."""

    frag: table_pb2.DataFragment
    kept_ids: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    kept_created: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))


def _base_or_fail(base: ManifestFile | None, uri: str) -> ManifestFile:
    if base is None:
        raise LanceError(f"dataset {uri!r} does not exist")
    return base


def build_update(
    updated: list[table_pb2.DataFragment], removed: list[int], new: list[NewFragment], uri: str
) -> Builder:
    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        base = _base_or_fail(base, uri)
        m = start_manifest(base, take=True)
        stable = replace_fragments(m, updated, removed)
        nid = next_fragment_id(m)
        for nf in new:
            f = m.fragments.add()
            f.CopyFrom(nf.frag)
            f.id = nid
            nid += 1
            if stable:
                n = int(f.physical_rows)
                k = len(nf.kept_ids)
                start = int(m.next_row_id)
                ids = np.concatenate([nf.kept_ids.astype(np.uint64), np.arange(start, start + n - k, dtype=np.uint64)])
                created = np.concatenate([nf.kept_created.astype(np.uint64), np.full(n - k, version, dtype=np.uint64)])
                f.inline_row_ids = encode_row_ids(ids)
                f.inline_created_at_versions = encode_versions(created)
                f.inline_last_updated_at_versions = encode_versions(np.full(n, version, dtype=np.uint64))
                m.next_row_id = start + n - k
        if new:
            m.max_fragment_id = nid - 1
        fix_data_format(m, f"dataset {uri!r} version {version}")
        own = m.data_format.version
        if any(f"{d.file_major_version}.{d.file_minor_version}" != own for nf in new for d in nf.frag.files):
            m.reader_feature_flags |= FLAG_MIXED_FILE_VERSIONS  # (data_storage_version: kept by finish_manifest)
        finish_manifest(m, version, stable, deletions=any_deletions(updated, removed))
        return m, base.index_section

    return build


def _check_same_fragments(base: ManifestFile, read_ids: set[int], uri: str, what: str) -> None:
    now = {int(f.id) for f in base.manifest.fragments}
    if now != read_ids:
        raise CommitConflictError(
            f"dataset {uri!r}: {what} cannot be rebased: fragments changed concurrently "
            f"(added {sorted(now - read_ids)[:10]}, removed {sorted(read_ids - now)[:10]})"
        )


def _set_schema(m: table_pb2.Manifest, fields: list[file_pb2.Field], metadata: dict[str, bytes] | None) -> None:
    """The new schema; data files left holding no field of it leave their fragments (as pylance
    prunes them: its validate() refuses a data file sharing no field with the schema)."""
    ids = {int(f.id) for f in fields}
    gone = any(int(f.id) not in ids for f in m.fields)
    del m.fields[:]
    m.fields.extend(fields)
    live: dict[tuple[int, ...], bool] = {}  # a data file's field ids -> whether it holds a field of the schema
    for frag in m.fragments if gone else ():  # (no field removed: every file keeps the fields it had)
        files = frag.files
        if len(files) == 1:  # (a fragment's only file stays, whatever it holds)
            continue
        keys = [tuple(d.fields) for d in files]
        for key in keys:
            if key not in live:
                live[key] = any(int(x) in ids for x in key)
        if all(live[key] for key in keys):
            continue
        keep = [d for d, key in zip(files, keys, strict=True) if live[key]]
        if keep:
            del frag.files[:]
            frag.files.extend(keep)
    if metadata is not None:
        m.schema_metadata.clear()
        for k, v in metadata.items():
            m.schema_metadata[k] = v


def _indices_of_schema(section: bytes | None, fields: list[file_pb2.Field]) -> bytes | None:
    """The index section without the indices on fields the new schema no longer has (a dropped
    column, or one cast to a new field id), as pylance drops them."""
    if not section:
        return section
    idx = table_pb2.IndexSection()
    idx.ParseFromString(section)
    ids = {int(f.id) for f in fields}
    keep = [i for i in idx.indices if all(int(x) in ids for x in i.fields)]
    if len(keep) == len(idx.indices):
        return section
    del idx.indices[:]
    idx.indices.extend(keep)
    out: bytes = idx.SerializeToString()
    return out


def build_merge(
    frags: list[table_pb2.DataFragment],
    fields: list[file_pb2.Field],
    metadata: dict[str, bytes] | None,
    read_ids: set[int],
    uri: str,
) -> Builder:
    """The schema becomes ``fields``; each fragment of ``frags`` (by id) replaces the same one."""

    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        base = _base_or_fail(base, uri)
        _check_same_fragments(base, read_ids, uri, "a merge (new columns)")
        old = {int(f.id): list(f.files) for f in base.manifest.fragments}
        rewritten = {int(f.id) for f in frags if old.get(int(f.id)) != list(f.files)}
        m = start_manifest(base, take=True)
        stable = replace_fragments(m, frags, [])
        for f in m.fragments if stable else []:  # pylance 14: a fragment given new data files is updated now
            if int(f.id) in rewritten:
                f.inline_last_updated_at_versions = encode_versions(np.full(int(f.physical_rows), version, np.uint64))
        _set_schema(m, fields, metadata)
        fix_data_format(m, f"dataset {uri!r} version {version}")
        finish_manifest(m, version, stable)
        return m, _indices_of_schema(base.index_section, fields)

    return build


def build_project(fields: list[file_pb2.Field], metadata: dict[str, bytes] | None, uri: str) -> Builder:
    """The schema becomes ``fields`` (a subset or renaming of the old one); data stays as it is."""

    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        base = _base_or_fail(base, uri)
        m = start_manifest(base, take=True)
        _set_schema(m, fields, metadata)
        forget_untrusted_rows(m)
        stable = bool(m.reader_feature_flags & FLAG_STABLE_ROW_IDS)
        finish_manifest(m, version, stable)
        return m, _indices_of_schema(base.index_section, fields)

    return build
