"""Compaction: rewrite runs of small fragments (or fragments with many deleted rows) into new data files, committed as
one Rewrite transaction (table format, "Transaction types": Rewrite, ReserveFragments; pylance's
``optimize.compact_files``).

Planning follows pylance: walking the fragments in order, a fragment is a candidate when its share of deleted rows
exceeds ``materialize_deletions_threshold`` ("compact itself") or when it has fewer physical rows than
``target_rows_per_fragment`` ("compact with neighbours"); adjacent candidates form a bin; a bin of one neighbour-only
fragment is dropped; an excluded fragment (``excluded_fragment_ids``) bounds the bins; a bin is split into groups of at
least ``target_rows_per_fragment`` live rows (the remainder joins the last group); the ``max_source_*`` limits keep the
leading groups within them.  Each group is rewritten as pylance 14 cuts it (compact_rewrite.py); the options and their
defaults are compact_options.py's; ``lancelot.optimize`` runs the same steps one at a time (distributed compaction).

The commit is two versions, as pylance makes them: ReserveFragments (ids for the new fragments), then Rewrite (each
group's old fragments replaced by its new ones, fragments kept in id order as pylance keeps them).  Both are rebuilt
over concurrent appends, deletes and rewrites of other fragments (transaction.py); rows deleted meanwhile from fragments
being rewritten are carried into the new fragments; a rewrite or update of those fragments, or a cleanup of the version
read, makes the compaction plan again on the latest version."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from lancelot.dataset import index_remap
from lancelot.dataset.commit import RetryableCommitConflictError, commit_manifest, commit_transaction, list_versions
from lancelot.dataset.compact_options import CompactionNotSupportedError, Options, resolve
from lancelot.dataset.compact_rewrite import rewrite_group
from lancelot.dataset.deletion import deletion_path, new_deletion_file, read_deletions, serialize_deletions
from lancelot.dataset.fragment_metadata import DATA_DIR
from lancelot.dataset.manifest import FLAG_MIXED_FILE_VERSIONS, FLAG_STABLE_ROW_IDS, ManifestFile, writable_data_version
from lancelot.dataset.operation import finish_manifest, start_manifest
from lancelot.dataset.transaction import new_transaction
from lancelot.errors import CorruptFileError, LanceError, LanceFileNotFoundError
from lancelot.format.pb import table_pb2

if TYPE_CHECKING:
    from lancelot.dataset.commit import Builder
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.store import ObjectStore


@dataclass
class CompactionMetrics:
    """What ``compact_files`` did (the fields of pylance's CompactionMetrics)."""

    fragments_removed: int = 0
    fragments_added: int = 0
    files_removed: int = 0  # data files and deletion files of the removed fragments
    files_added: int = 0


def plan_compaction(
    ds: LanceDataset,
    target_rows_per_fragment: int,
    materialize_deletions: bool,
    threshold: float,
    index_fragments: list[set[int]] | None = None,
    excluded: tuple[int, ...] = (),
) -> list[list[Fragment]]:
    """Groups of adjacent fragments (lancelot Fragment objects) to rewrite, as pylance plans them: fragments covered by
    different sets of indices (``index_fragments``: each index's fragment ids) never share a group, so every index
    covers all or none of a group's fragments; an ``excluded`` fragment is left alone and bounds the bins."""
    if materialize_deletions and threshold >= 1.0:
        materialize_deletions = False
    bins: list[list[tuple[Fragment, bool, int]]] = []  # (fragment, compacts itself, live rows)
    cur: list[tuple[Fragment, bool, int]] | None = None
    cur_key: tuple[int, ...] = ()
    for f in ds.get_fragments():
        key = tuple(i for i, ids in enumerate(index_fragments or []) if f.fragment_id in ids)
        if cur and key != cur_key:
            bins.append(cur)
            cur = None
        cur_key = key
        if f.fragment_id in excluded:
            if cur:
                bins.append(cur)
            cur = None
            continue
        phys = f.physical_rows
        live = f.count_rows()
        deleted_share = (phys - live) / phys if phys else 0.0
        if materialize_deletions and deleted_share > threshold:
            cand: bool | None = True
        elif phys < target_rows_per_fragment:
            cand = False
        else:
            cand = None
        if cand is None:
            if cur:
                bins.append(cur)
            cur = None
            continue
        cur = (cur or []) + [(f, cand, live)]
    if cur:
        bins.append(cur)
    groups: list[list[Fragment]] = []
    for b in bins:
        if len(b) == 1 and not b[0][1]:
            continue  # a lone small fragment has no neighbour to merge with
        rows = [r for _, _, r in b]
        start = 0
        while start < len(b):
            n, acc = 0, 0
            while (acc < target_rows_per_fragment or not n) and start + n < len(b):  # (a zero target: one each)
                acc += rows[start + n]
                n += 1
            if sum(rows[start + n :]) >= target_rows_per_fragment:
                groups.append([f for f, _, _ in b[start : start + n]])
                start += n
            else:
                groups.append([f for f, _, _ in b[start:]])
                break
    return groups


def indexed_fragments(ds: LanceDataset) -> list[set[int]]:
    """Each index's fragment ids; an index whose metadata names none covers the fragments below the ``max_fragment_id``
    of the version it was built on (pylance's rule)."""
    out = []
    for idx in index_remap.read_indices(ds.manifest_file.index_section):
        ids = index_remap.fragment_ids(idx)
        if ids is None:
            try:
                at = ds.checkout_version(int(idx.dataset_version)).manifest
                ids = set(range(int(at.max_fragment_id) if at.HasField("max_fragment_id") else 0))
            except LanceError:  # that version was cleaned up: take every fragment as covered
                ids = {f.fragment_id for f in ds.get_fragments()}
        out.append(ids)
    return out


def _same_files(a: table_pb2.DataFragment, b: table_pb2.DataFragment) -> bool:
    """Whether a fragment still has the data files the compaction read (its deletions may have grown)."""
    return [d.SerializeToString() for d in a.files] == [d.SerializeToString() for d in b.files]


def _deleted(store: ObjectStore, f: table_pb2.DataFragment, where: str) -> np.ndarray:
    if not f.HasField("deletion_file"):
        return np.empty(0, np.int64)
    if f.deletion_file.HasField("base_id"):
        raise RetryableCommitConflictError(f"{where}: fragment {f.id}'s deletions live in another base path")
    return read_deletions(store, int(f.id), f.deletion_file, int(f.physical_rows), where).astype(np.int64)


def counted_entry(f: Fragment) -> table_pb2.DataFragment:
    """A copy of the fragment's manifest entry with its physical row count (counted if the manifest's cannot be
    trusted): ``carry_deletions`` maps row positions with it."""
    c = table_pb2.DataFragment()
    c.CopyFrom(f.data_fragment)
    c.physical_rows = f.physical_rows
    return c


def carry_deletions(
    store: ObjectStore,
    where: str,
    version: int,
    old: list[table_pb2.DataFragment],
    now: dict[int, table_pb2.DataFragment],
    new: list[table_pb2.DataFragment],
) -> list[table_pb2.DataFragment]:
    """``new`` (a group's rewritten fragments, holding the live rows of ``old`` as the compaction read them, in order)
    with the rows deleted since (``now``: the latest version's fragments by id) marked deleted in new deletion files: a
    concurrent delete of a compacted fragment rebased, not lost."""
    positions = []
    offset = 0
    for o in old:
        cur = now[int(o.id)]
        same = cur.deletion_file == o.deletion_file
        if same and (not o.HasField("deletion_file") or o.deletion_file.num_deleted_rows):
            offset += int(o.physical_rows) - int(o.deletion_file.num_deleted_rows)  # (no deletion file read)
            continue
        before = _deleted(store, o, where)
        live = np.setdiff1d(np.arange(int(o.physical_rows), dtype=np.int64), before)
        if not same:
            after = _deleted(store, cur, where)
            if not o.physical_rows or len(np.setdiff1d(before, after)):
                raise RetryableCommitConflictError(f"{where}: fragment {o.id}'s deletions changed unexpectedly")
            positions.append(offset + np.searchsorted(live, np.setdiff1d(after, before)))
        offset += len(live)
    if not positions:
        return new
    gone = np.concatenate(positions)
    out, start = [], 0
    for nf in new:
        n = int(nf.physical_rows)
        local = gone[(gone >= start) & (gone < start + n)] - start
        start += n
        c = table_pb2.DataFragment()
        c.CopyFrom(nf)
        if len(local) >= n:
            raise RetryableCommitConflictError(f"{where}: every row of new fragment {nf.id} was deleted meanwhile")
        if len(local):
            ftype, data = serialize_deletions(np.sort(local))
            d = new_deletion_file(ftype, version, len(local))
            store.put(deletion_path(int(nf.id), d), data)
            c.deletion_file.CopyFrom(d)
        out.append(c)
    return out


def check_files(ds: LanceDataset, groups: list[list[Fragment]], where: str) -> None:
    """Every file a group reads must be there (a file opened earlier by this process could still be read from its open
    handle after its removal: compaction must not trust that)."""
    for group in groups:
        for f in group:
            paths = [f"{DATA_DIR}/{d.path}" for d in f.data_fragment.files if not d.HasField("base_id")]
            if f.data_fragment.HasField("deletion_file") and not f.data_fragment.deletion_file.HasField("base_id"):
                paths.append(deletion_path(f.fragment_id, f.data_fragment.deletion_file))
            for p in paths:
                if not ds.store.exists(p):
                    raise LanceFileNotFoundError(
                        f"compaction of {where}: fragment {f.fragment_id}: {p} is missing", path=ds.store.url(p)
                    )


def build_reserve(n: int, uri: str) -> Builder:
    """ReserveFragments: ``max_fragment_id`` moves on by ``n`` (ids for fragments not yet committed)."""

    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        if base is None:
            raise LanceError(f"dataset {uri!r} does not exist")
        m = start_manifest(base, take=True)
        used = max([int(f.id) for f in m.fragments] + [int(m.max_fragment_id) if m.HasField("max_fragment_id") else -1])
        m.max_fragment_id = used + n
        finish_manifest(m, version, bool(m.reader_feature_flags & FLAG_STABLE_ROW_IDS))
        return m, base.index_section

    return build


def build_rewrite(
    groups: list[tuple[list[table_pb2.DataFragment], list[table_pb2.DataFragment]]],
    uri: str,
    store: ObjectStore,
    remap: index_remap.Remap | None = None,
) -> Builder:
    """Rewrite: each group's old fragments replaced by its new ones; the fragments end in id order, as pylance orders
    them after every commit (so a group's rows move behind a fragment it skipped: compaction may reorder rows).  An old
    fragment must still be in the latest version with the same data files (else a retryable conflict); rows deleted from
    it since are carried into the new fragments (``carry_deletions``: pylance gives up there)."""

    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        if base is None:
            raise LanceError(f"dataset {uri!r} does not exist")
        m = start_manifest(base)
        frags = [table_pb2.DataFragment() for _ in m.fragments]
        for c, f in zip(frags, m.fragments, strict=True):
            c.CopyFrom(f)
        now = {int(f.id): f for f in frags}
        where = f"dataset {uri!r}: compaction on top of version {base.manifest.version}"
        for old, new in groups:
            pos = {int(f.id): i for i, f in enumerate(frags)}
            for o in old:
                i = pos.get(int(o.id))
                if i is None or not _same_files(frags[i], o):
                    raise RetryableCommitConflictError(
                        f"dataset {uri!r}: compaction conflicts with a concurrent commit: fragment {o.id} "
                        f"was {'removed' if i is None else 'rewritten'} since version {base.manifest.version}"
                    )
            new = carry_deletions(store, where, version, old, now, new)
            first = pos[int(old[0].id)]
            gone = {int(o.id) for o in old}
            kept = [f for f in frags if int(f.id) not in gone]
            at = sum(1 for f in frags[:first] if int(f.id) not in gone)
            frags = kept[:at] + list(new) + kept[at:]
        frags.sort(key=lambda f: int(f.id))  # pylance keeps every manifest's fragments in id order
        del m.fragments[:]
        m.fragments.extend(frags)
        top = max(int(f.id) for g in groups for f in g[1]) if any(g[1] for g in groups) else -1
        if top > int(m.max_fragment_id):
            m.max_fragment_id = top
        if _other_version(m, [f for _, new in groups for f in new]):
            m.reader_feature_flags |= FLAG_MIXED_FILE_VERSIONS  # (kept from then on, as pylance keeps it)
        finish_manifest(m, version, bool(m.reader_feature_flags & FLAG_STABLE_ROW_IDS))
        if remap is None:
            return m, base.index_section
        return m, remap.section(store, base.index_section, where)

    return build


def _other_version(m: table_pb2.Manifest, new: list[table_pb2.DataFragment]) -> bool:
    """Whether a new fragment's data files are not in the dataset's data storage version (a compaction's
    ``data_storage_version``): pylance then sets the mixed-file-versions flag, without which it refuses the dataset."""
    default = m.data_format.version if m.HasField("data_format") else ""
    return bool(default) and any(
        f"{d.file_major_version}.{d.file_minor_version}" != default for f in new for d in f.files
    )


#: times a compaction is planned and written again when a concurrent commit changed fragments it rewrites
COMPACTION_ATTEMPTS = 3


def compact_files(ds: LanceDataset, **options: Any) -> CompactionMetrics:
    """Compact ``ds`` (a LanceDataset) as pylance's ``optimize.compact_files`` does; returns the metrics.

    ``options`` are pylance's ``CompactionOptions`` (compact_options.py: an option not given takes the default the
    table config sets for it, ``lance.compaction.<option>``, else pylance's).  Concurrent commits are handled as pylance
    handles them (appends, deletes and rewrites of other fragments: the compaction is rebuilt on top of them), and
    better: when a delete or rewrite committed meanwhile changed fragments this compaction rewrites (pylance's
    "retryable" conflict, which fails its compaction), or when a cleanup removed the version it read (and files with
    it), the compaction is planned again on the latest version and retried, up to ``COMPACTION_ATTEMPTS`` times.
    Indices stay valid as pylance keeps them (index_remap.py): BTREE, BITMAP and LABEL_LIST indices are rewritten with
    the new row addresses, the others are left to the fragment reuse index (all of them with
    ``defer_index_remap=True``); with stable row ids only the fragment bitmaps change."""
    opts = resolve(ds, options)
    for attempt in range(COMPACTION_ATTEMPTS):
        try:
            index_fragments = indexed_fragments(ds)
            groups = plan_groups(ds, opts, index_fragments)
            if not groups:
                return CompactionMetrics()
            written = [rewrite(ds, g, opts) for g in groups]
            return commit_compaction(ds, written, groups if index_fragments else None, opts.defer_index_remap)
        except RetryableCommitConflictError:
            if attempt == COMPACTION_ATTEMPTS - 1:
                raise
        except (LanceFileNotFoundError, CorruptFileError):
            # a file of the version being compacted is gone: planning again helps only if a cleanup
            # removed that version meanwhile (then its files may go too)
            if attempt == COMPACTION_ATTEMPTS - 1 or ds.version in list_versions(ds.store, ds.uri).names:
                raise
        ds = ds.checkout_version(ds.latest_version)
    raise AssertionError("unreachable")


def plan_groups(ds: LanceDataset, opts: Options, index_fragments: list[set[int]] | None = None) -> list[list[Fragment]]:
    """The groups a compaction of ``ds`` with ``opts`` rewrites: ``plan_compaction``'s, the leading ones within
    the ``max_source_*`` limits (pylance stops at the first group that would exceed one); ``index_fragments`` as
    ``indexed_fragments`` gives them (read when None)."""
    check_defer(ds, opts)
    groups = plan_compaction(
        ds,
        opts.target_rows_per_fragment,
        opts.materialize_deletions,
        opts.materialize_deletions_threshold,
        indexed_fragments(ds) if index_fragments is None else index_fragments,
        opts.excluded_fragment_ids,
    )
    limits = (opts.max_source_fragments, opts.max_source_rows, opts.max_source_bytes)
    if limits == (None, None, None):
        return groups
    used = [0, 0, 0]
    for i, g in enumerate(groups):
        cost = (len(g), sum(f.count_rows() for f in g), sum(_source_bytes(ds, f) for f in g))
        used = [u + c for u, c in zip(used, cost, strict=True)]
        if any(lim is not None and u > lim for u, lim in zip(used, limits, strict=True)):
            return groups[:i]
    return groups


def check_defer(ds: LanceDataset, opts: Options) -> None:
    """``defer_index_remap`` is refused on a dataset with stable row ids (pylance records no fragment reuse index for
    their moves either)."""
    if opts.defer_index_remap and ds.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS:
        raise CompactionNotSupportedError(
            f"dataset {ds.uri!r}: cannot compact with defer_index_remap: the dataset uses stable row ids "
            "(pylance does not record their moves in a fragment reuse index either)"
        )


def _source_bytes(ds: LanceDataset, f: Fragment) -> int:
    """The bytes of a fragment's data files (their recorded sizes; the file's own when none is recorded)."""
    out = 0
    for d in f.data_fragment.files:
        out += int(d.file_size_bytes) or (0 if d.HasField("base_id") else ds.store.size(f"{DATA_DIR}/{d.path}"))
    return out


def rewrite(
    ds: LanceDataset, group: list[Fragment], opts: Options
) -> tuple[list[table_pb2.DataFragment], list[table_pb2.DataFragment]]:
    """One group rewritten: (its fragments as read, the new fragments with ids unassigned), ``ds`` at the version the
    group was planned on."""
    where = f"dataset {ds.uri!r} version {ds.version}"
    check_files(ds, [group], where)
    dv = opts.data_storage_version or writable_data_version(ds.manifest, where)
    return [counted_entry(f) for f in group], rewrite_group(ds, group, opts.target_rows_per_fragment, dv, where, opts)


def commit_compaction(
    ds: LanceDataset,
    written: list[tuple[list[table_pb2.DataFragment], list[table_pb2.DataFragment]]],
    remap_groups: list[list[Fragment]] | None = None,
    defer: bool = False,
    run_commit: Callable[[Callable[[], int]], int] = lambda commit: commit(),
) -> CompactionMetrics:
    """Commit rewritten groups, (old fragments, new fragments with ids unassigned) each: ReserveFragments for the new
    ids, then one Rewrite, its indices remapped when ``remap_groups`` (the groups' Fragments) is given; ``run_commit``
    runs the Rewrite's commit (a Spark job's ``commit``)."""
    metrics = CompactionMetrics()
    for old_pbs, new_pbs in written:
        metrics.fragments_removed += len(old_pbs)
        metrics.files_removed += sum(len(f.files) + f.HasField("deletion_file") for f in old_pbs)
        metrics.fragments_added += len(new_pbs)
        metrics.files_added += sum(len(f.files) for f in new_pbs)
    n_new = sum(len(new) for _, new in written)
    at_version = ds.version
    if n_new:
        reserve = new_transaction(ds.version)
        reserve.reserve_fragments.num_fragments = n_new
        v, _, mf = commit_manifest(
            ds.store, ds.uri, reserve, build_reserve(n_new, ds.uri), read_version=ds.version, known=ds.read_as_latest()
        )
        at_version = v
        top = int((mf or ds.checkout_version(v).manifest_file).manifest.max_fragment_id)
        nid = top - n_new + 1
        for _, new_pbs in written:
            for f in new_pbs:
                f.id = nid
                nid += 1
    remap = None
    if remap_groups:
        remap = index_remap.remap_indices(
            ds.store,
            ds.manifest_file.index_section,
            [index_remap.Group(g, new_pbs) for g, (_, new_pbs) in zip(remap_groups, written, strict=True)],
            bool(ds.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS),
            defer,
            at_version,
        )
    txn = new_transaction(ds.version)
    for old_pbs, new_pbs in written:
        g = txn.rewrite.groups.add()
        g.old_fragments.extend(old_pbs)
        g.new_fragments.extend(new_pbs)
    if remap is not None:
        txn.rewrite.rewritten_indices.extend(remap.rewritten())
    build = build_rewrite(written, ds.uri, ds.store, remap)
    run_commit(lambda: commit_transaction(ds.store, ds.uri, txn, build, read_version=ds.version))
    return metrics


class Optimizer:
    """``ds.optimize``: pylance's spelling, ``ds.optimize.compact_files(...)``."""

    def __init__(self, ds: LanceDataset) -> None:
        """The maintenance operations of ``ds`` (use ``LanceDataset.optimize``).

        Args:
            ds: The dataset.
        """
        self._ds = ds

    def compact_files(
        self,
        *,
        target_rows_per_fragment: int | None = None,
        max_rows_per_group: int | None = None,
        max_bytes_per_file: int | None = None,
        materialize_deletions: bool | None = None,
        materialize_deletions_threshold: float | None = None,
        defer_index_remap: bool | None = None,
        num_threads: int | None = None,
        batch_size: int | None = None,
        compaction_mode: str | None = None,
        binary_copy_read_batch_bytes: int | None = None,
        max_source_fragments: int | None = None,
        max_source_rows: int | None = None,
        max_source_bytes: int | None = None,
        excluded_fragment_ids: list[int] | None = None,
        data_storage_version: str | None = None,
    ) -> CompactionMetrics:
        """Compact the dataset: ``LanceDataset.compact_files`` with pylance's signature (compact_options.py says
        which options change the result and which are performance-only).

        Args:
            target_rows_per_fragment: Rows per new fragment; smaller fragments are merged (default 1Mi).
            max_rows_per_group: Accepted (2.x files have no row groups).
            max_bytes_per_file: A new data file is started once this many bytes are written.
            materialize_deletions: Also rewrite fragments with many deleted rows (default True).
            materialize_deletions_threshold: The share of deleted rows that does (default 0.1).
            defer_index_remap: Leave every index to the fragment reuse index (default False).
            num_threads: Accepted (groups are rewritten one after another).
            batch_size: Rows per batch read from the old fragments.
            compaction_mode: ``"reencode"`` (default), ``"try_binary_copy"`` or ``"force_binary_copy"``.
            binary_copy_read_batch_bytes: Accepted (performance only).
            max_source_fragments: The most fragments one compaction rewrites (whole groups, in order).
            max_source_rows: The most live rows one compaction rewrites.
            max_source_bytes: The most data-file bytes one compaction rewrites.
            excluded_fragment_ids: Fragments left alone (and not merged across).
            data_storage_version: The new data files' version (default: the dataset's).

        Returns:
            A ``CompactionMetrics``.
        """
        given = dict(locals())
        del given["self"]
        return self._ds.compact_files(**{k: v for k, v in given.items() if v is not None})

    def optimize_indices(self, **kwargs: Any) -> None:
        """Add the fragments appended since each BTREE or BITMAP index was built to it, as pylance's
        ``optimize_indices`` does (one new version; none when every fragment is indexed).

        Args:
            **kwargs: pylance's ``num_indices_to_merge`` (the newest segments merged with the new fragments, default
                1; 0: a new segment of the new fragments alone), ``index_names`` (only these), ``retrain`` (a
                scalar index is rebuilt from the data either way); others ignored, as pylance ignores them.
        """
        from lancelot.dataset.index_optimize import optimize_indices

        optimize_indices(self._ds, **kwargs)

    def enable_auto_cleanup(self, auto_cleanup_config: Mapping[str, int], **kwargs: Any) -> None:
        """Turn on pylance's auto-cleanup (a new version), stored as the table config
        ``lance.auto_cleanup.interval`` / ``older_than`` (``"<s>s"``), as pylance writes it.

        Args:
            auto_cleanup_config: ``{"interval": n, "older_than_seconds": s}``: every ``n`` versions, a
                commit removes the versions older than ``s`` seconds.
            **kwargs: pylance's commit options; accepted.
        """
        from lancelot.dataset.write_options import AUTO_CLEANUP_INTERVAL, AUTO_CLEANUP_OLDER_THAN

        self._ds.update_config(
            {
                AUTO_CLEANUP_INTERVAL: str(auto_cleanup_config["interval"]),
                AUTO_CLEANUP_OLDER_THAN: f"{auto_cleanup_config['older_than_seconds']}s",
            }
        )

    def disable_auto_cleanup(self, **kwargs: Any) -> None:
        """Turn pylance's auto-cleanup off: its two config keys removed (a new version)."""
        from lancelot.dataset.write_options import AUTO_CLEANUP_INTERVAL, AUTO_CLEANUP_OLDER_THAN

        self._ds.delete_config_keys([AUTO_CLEANUP_INTERVAL, AUTO_CLEANUP_OLDER_THAN])
