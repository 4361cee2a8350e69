"""``LanceDataset``'s maintenance: ``validate`` (dataset/validate.py), compaction (dataset/compact.py) and cleanup of
old versions (dataset/cleanup.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lancelot.dataset import cleanup
from lancelot.dataset.signatures import arguments, inherit_arguments, takes

if TYPE_CHECKING:
    from lancelot.dataset.cleanup import CleanupExplanation, CleanupStats
    from lancelot.dataset.compact import CompactionMetrics, Optimizer
    from lancelot.dataset.dataset import LanceDataset


#: pylance's cleanup options (cleanup.py's ``cleanup_old_versions``), in its order; the dry run takes them too
_CLEANUP = "older_than retain_versions delete_unverified error_if_tagged_old_versions delete_rate_limit versions"
_EXPLAIN = _CLEANUP + " include_files max_files"


class MaintenanceMixin:
    """LanceDataset's maintenance (mixed into ``LanceDataset``; see dataset/dataset.py)."""

    def validate(self: LanceDataset) -> None:
        """Check this version's manifest against its files (pylance's ``validate``).

        Raises:
            CorruptFileError: naming the fragment and file of the first inconsistency.
        """
        from lancelot.dataset.validate import validate

        validate(self)

    def compact_files(self: LanceDataset, **options: Any) -> CompactionMetrics:
        """Rewrite small fragments into larger ones and drop deleted rows, as one new version; this object then shows
        it. pylance has this as ``ds.optimize.compact_files``, also here.

        Args:
            **options: pylance's ``CompactionOptions``: ``target_rows_per_fragment`` (default 1Mi),
                ``max_rows_per_group``, ``materialize_deletions``, ``materialize_deletions_threshold``,
                ``num_threads``... Datasets with indices are not compacted yet (refused).

        Returns:
            A ``CompactionMetrics`` (``fragments_removed``, ``fragments_added``, ``files_removed``,
            ``files_added``), as pylance.
        """
        from lancelot.dataset.compact import compact_files

        before = self.latest_version
        metrics = compact_files(self, **options)
        latest = self.latest_version
        if latest != before:  # like pylance: this object moves on to the compacted version
            self.move_to(latest)
        return metrics

    @property
    def optimize(self: LanceDataset) -> Optimizer:
        """Maintenance operations (``optimize.compact_files``), as pylance's ``dataset.optimize``."""
        from lancelot.dataset.compact import Optimizer

        return Optimizer(self)

    @takes([cleanup.cleanup_old_versions], _CLEANUP + " delete_concurrency", positional=2)
    def cleanup_old_versions(self: LanceDataset, *args: Any, **kwargs: Any) -> CleanupStats:
        """Remove old versions' manifests and the data, deletion and index files only they use.

        The current version and tagged versions are kept. A version goes when it meets every condition given.

        Args:
            older_than: Versions older than this (default: two weeks, when no condition is given, as pylance).
            retain_versions: Keep the newest this many versions (positive).
            delete_unverified: Also remove unreferenced files younger than seven days (which may belong to a write still
                in progress).
            error_if_tagged_old_versions: Raise when a tagged version meets the conditions (else keep it quietly).
            delete_rate_limit: At most this many deletions a second (positive).
            versions: Only these versions (the current one is never removed).
            delete_concurrency: At most this many deletions at once (positive); lancelot deletes one at a time.

        Returns:
            A ``CleanupStats`` (``bytes_removed``, ``old_versions``...), as pylance.

        Raises:
            OSError: Tagged versions meet the conditions, or an option is out of range (also a ValueError).
        """
        return cleanup.cleanup_old_versions(
            self, **arguments(MaintenanceMixin.cleanup_old_versions, (self, *args), kwargs)
        )

    @takes([cleanup.cleanup_old_versions, cleanup.explain_cleanup_old_versions], _EXPLAIN, positional=2)
    def explain_cleanup_old_versions(self: LanceDataset, *args: Any, **kwargs: Any) -> CleanupExplanation:
        """What ``cleanup_old_versions`` with these arguments would remove, removing nothing.

        Args:
            include_files: List the candidate files (at most ``max_files``; the stats count them all).
            max_files: How many candidate files to list (positive).

        Returns:
            A ``CleanupExplanation``: ``stats`` (a ``CleanupStats``), ``candidate_files`` (``path``, ``kind``,
            ``unverified``, ``size_bytes``), ``candidate_files_truncated``, ``warnings``..., as pylance.
        """
        args_ = arguments(MaintenanceMixin.explain_cleanup_old_versions, (self, *args), kwargs)
        return cleanup.explain_cleanup_old_versions(self, **args_)


inherit_arguments(MaintenanceMixin.explain_cleanup_old_versions, MaintenanceMixin.cleanup_old_versions)
