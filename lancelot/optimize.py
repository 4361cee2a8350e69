"""Compaction in steps, as pylance's ``lance.optimize``: ``Compaction.plan`` makes a ``CompactionPlan`` on the
coordinator, each of its ``CompactionTask``s is sent (pickled, or as JSON) to a worker whose ``execute`` rewrites its
group of fragments into new data files and returns a ``RewriteResult``, and ``Compaction.commit`` makes the results one
Rewrite on the coordinator.  Planning, rewriting and committing are ``compact_files``'s own (dataset/compact.py), so
the versions committed are the ones it commits: ReserveFragments for the new fragments' ids, then the Rewrite.

The JSON has pylance's shape (fragments as ``FragmentMetadata.to_json``, pylance's option keys), so a plan or result
moves between the two libraries' processes."""

from __future__ import annotations

import dataclasses
import json as _json
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar

from lancelot.dataset.compact import (
    CompactionMetrics,
    check_defer,
    commit_compaction,
    indexed_fragments,
    plan_groups,
    rewrite,
)
from lancelot.dataset.compact_options import Options, resolve
from lancelot.dataset.fragment_metadata import FragmentMetadata
from lancelot.errors import LanceValueError
from lancelot.format.pb import table_pb2

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset

__all__ = ["Compaction", "CompactionMetrics", "CompactionOptions", "CompactionPlan", "CompactionTask", "RewriteResult"]


class CompactionOptions(TypedDict, total=False):
    """pylance's compaction options (compact_options.py says which change the result)."""

    target_rows_per_fragment: int | None
    max_rows_per_group: int | None
    max_bytes_per_file: int | None
    materialize_deletions: bool | None
    materialize_deletions_threshold: float | None
    num_threads: int | None
    batch_size: int | None
    io_buffer_size: int | None
    compaction_mode: Literal["reencode", "try_binary_copy", "force_binary_copy"] | None
    binary_copy_read_batch_bytes: int | None
    defer_index_remap: bool | None
    max_source_fragments: int | None
    max_source_rows: int | None
    max_source_bytes: int | None
    excluded_fragment_ids: list[int] | None
    data_storage_version: str | None


_MODE_JSON = {"reencode": "Reencode", "try_binary_copy": "TryBinaryCopy", "force_binary_copy": "ForceBinaryCopy"}


def _options_json(o: Options) -> dict[str, Any]:
    """The options as pylance serializes its ``CompactionOptions`` (its keys, its defaults for the ones lancelot has
    no use for)."""
    out = o.given()
    out["compaction_mode"] = None if o.compaction_mode == "reencode" else _MODE_JSON[o.compaction_mode]  # (as pylance)
    out.update(
        index_remap_mode="Direct",
        enable_binary_copy=False,
        enable_binary_copy_force=False,
        max_overlays_per_fragment=10,
        has_eager_remappable_index=None,
    )
    return out


def _options_of(d: dict[str, Any]) -> Options:
    """Options from their JSON (lancelot's or pylance's: its older binary-copy flags too)."""
    modes = {v: k for k, v in _MODE_JSON.items()}
    known = {k: v for k, v in d.items() if k in Options.__dataclass_fields__ and v is not None}
    legacy = (
        "ForceBinaryCopy"
        if d.get("enable_binary_copy_force")
        else "TryBinaryCopy"
        if d.get("enable_binary_copy")
        else None
    )
    known["compaction_mode"] = modes.get(d.get("compaction_mode") or legacy or "Reencode", "reencode")
    if "excluded_fragment_ids" in known:
        known["excluded_fragment_ids"] = tuple(known["excluded_fragment_ids"])
    return Options(**known)


def _frags(items: list[dict[str, Any]]) -> list[FragmentMetadata]:
    return [FragmentMetadata.from_json(f) for f in items]


def _metrics(old: list[FragmentMetadata], new: list[FragmentMetadata]) -> CompactionMetrics:
    """What committing one group does (the fields ``compact_files`` counts)."""
    old_pb = [f.to_pb() for f in old]
    return CompactionMetrics(
        fragments_removed=len(old),
        fragments_added=len(new),
        files_removed=sum(len(f.files) + f.HasField("deletion_file") for f in old_pb),
        files_added=sum(len(f.to_pb().files) for f in new),
    )


_J = TypeVar("_J", bound="_Json")


class _Json:
    """Equality, pickling (through ``json``) and ``from_json`` for the plan, task and result classes."""

    def json(self) -> str:
        """The object as JSON text (pylance's shape; not promised stable across versions, as pylance says).

        Returns:
            The JSON text.
        """
        return _json.dumps(self._dict())

    @classmethod
    def from_json(cls: type[_J], json: str) -> _J:
        """Read what ``json`` gives (lancelot's or pylance's).

        Args:
            json: The JSON text.

        Returns:
            The object.
        """
        return cls._of(_json.loads(json))

    def _dict(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def _of(cls: type[_J], d: dict[str, Any]) -> _J:
        """The object ``_dict`` gave ``d`` (or pylance's equivalent)."""
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and self._dict() == other._dict()

    def __hash__(self) -> int:
        return hash(self.json())

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self).from_json, (self.json(),))


class CompactionTask(_Json):
    """One group of adjacent fragments to rewrite, planned on ``read_version``: picklable, for a worker to ``execute``.

    Args:
        read_version: The version the plan read.
        fragments: The fragments to rewrite, as the plan read them.
        options: The resolved compaction options.
    """

    def __init__(self, read_version: int, fragments: list[FragmentMetadata], options: Options) -> None:
        self.read_version = read_version
        self.fragments = fragments
        self._options = options

    def _dict(self) -> dict[str, Any]:
        return {
            "task": {"fragments": [f.to_json() for f in self.fragments]},
            "read_version": self.read_version,
            "options": _options_json(self._options),
        }

    @classmethod
    def _of(cls, d: dict[str, Any]) -> CompactionTask:
        return cls(int(d["read_version"]), _frags(d["task"]["fragments"]), _options_of(d["options"]))

    def execute(self, dataset: LanceDataset) -> RewriteResult:
        """Rewrite the task's fragments into new data files (nothing is committed: pass the result to
        ``Compaction.commit``).

        Args:
            dataset: The dataset (any version: the task reads its ``read_version``).

        Returns:
            A ``RewriteResult``.

        Raises:
            LanceValueError: The read version's fragments are not the task's.
        """
        ds = dataset if dataset.version == self.read_version else dataset.checkout_version(self.read_version)
        by_id = {f.fragment_id: f for f in ds.get_fragments()}
        group = [by_id.get(m.id) for m in self.fragments]
        for m, f in zip(self.fragments, group, strict=True):
            if f is None or [d.path for d in f.data_fragment.files] != [d.path for d in m.to_pb().files]:
                raise LanceValueError(
                    f"dataset {ds.uri!r} version {ds.version}: fragment {m.id} is not the one the compaction task read"
                )
        old, new = rewrite(ds, [f for f in group if f is not None], self._options)
        olds = [FragmentMetadata.from_pb(f) for f in old]
        news = [FragmentMetadata.from_pb(f) for f in new]
        return RewriteResult(self.read_version, news, olds, _metrics(olds, news))

    def __repr__(self) -> str:
        return f"CompactionTask(read_version={self.read_version}, fragments={self.fragments!r})"


class CompactionPlan(_Json):
    """The groups a compaction rewrites (``Compaction.plan``), one ``CompactionTask`` each.

    Args:
        read_version: The version planned on.
        tasks: The tasks.
        options: The resolved compaction options.
    """

    def __init__(self, read_version: int, tasks: list[CompactionTask], options: Options) -> None:
        self.read_version = read_version
        self.tasks = tasks
        self._options = options

    def num_tasks(self) -> int:
        """How many tasks the plan has.

        Returns:
            The number of tasks.
        """
        return len(self.tasks)

    def _dict(self) -> dict[str, Any]:
        return {
            "tasks": [{"fragments": [f.to_json() for f in t.fragments]} for t in self.tasks],
            "read_version": self.read_version,
            "options": _options_json(self._options),
        }

    @classmethod
    def _of(cls, d: dict[str, Any]) -> CompactionPlan:
        opts, rv = _options_of(d["options"]), int(d["read_version"])
        return cls(rv, [CompactionTask(rv, _frags(t["fragments"]), opts) for t in d["tasks"]], opts)

    def __repr__(self) -> str:
        return f"CompactionPlan(read_version={self.read_version}, tasks=<{len(self.tasks)} compaction tasks>)"


class RewriteResult(_Json):
    """A task's rewritten group, not committed yet: its fragments as read and the new ones (ids unassigned).

    Args:
        read_version: The version the task read.
        new_fragments: The new fragments.
        original_fragments: The fragments they replace.
        metrics: What committing them does.
    """

    def __init__(
        self,
        read_version: int,
        new_fragments: list[FragmentMetadata],
        original_fragments: list[FragmentMetadata],
        metrics: CompactionMetrics,
    ) -> None:
        self.read_version = read_version
        self.new_fragments = new_fragments
        self.original_fragments = original_fragments
        self.metrics = metrics

    def _dict(self) -> dict[str, Any]:
        m = self.metrics
        return {
            "metrics": {
                "fragments_removed": m.fragments_removed,
                "fragments_added": m.fragments_added,
                "files_removed": m.files_removed,
                "files_added": m.files_added,
            },
            "new_fragments": [f.to_json() for f in self.new_fragments],
            "read_version": self.read_version,
            "original_fragments": [f.to_json() for f in self.original_fragments],
            "row_addrs": None,
        }

    @classmethod
    def _of(cls, d: dict[str, Any]) -> RewriteResult:
        old, new = _frags(d["original_fragments"]), _frags(d["new_fragments"])
        return cls(int(d["read_version"]), new, old, CompactionMetrics(**d["metrics"]))

    def __repr__(self) -> str:
        return (
            f"RewriteResult(read_version={self.read_version}, new_fragments={self.new_fragments!r}, "
            f"old_fragments={self.original_fragments!r})"
        )


class Compaction:
    """Compaction as pylance's ``lance.optimize.Compaction``: at once (``execute``) or in steps (``plan``, each task's
    ``execute``, ``commit``)."""

    @staticmethod
    def execute(dataset: LanceDataset, options: CompactionOptions) -> CompactionMetrics:
        """Compact ``dataset`` at once (``dataset.optimize.compact_files(**options)``); the object moves to the version
        committed.

        Args:
            dataset: The dataset.
            options: The compaction options.

        Returns:
            A ``CompactionMetrics``.
        """
        return dataset.compact_files(**options)

    @staticmethod
    def plan(dataset: LanceDataset, options: CompactionOptions) -> CompactionPlan:
        """Plan a compaction of ``dataset``'s version as ``compact_files`` plans it.

        Args:
            dataset: The dataset.
            options: The compaction options (checked now, the table config's defaults taken).

        Returns:
            A ``CompactionPlan``.
        """
        opts = resolve(dataset, dict(options))
        if opts.data_storage_version is None:  # fixed now, as pylance's planner fixes it for its workers
            from lancelot.dataset.manifest import writable_data_version

            dv = writable_data_version(dataset.manifest, f"dataset {dataset.uri!r} version {dataset.version}")
            opts = dataclasses.replace(opts, data_storage_version=dv)
        rv = dataset.version
        tasks = [CompactionTask(rv, [f.metadata for f in g], opts) for g in plan_groups(dataset, opts)]
        return CompactionPlan(rv, tasks, opts)

    @staticmethod
    def commit(
        dataset: LanceDataset, rewrites: list[RewriteResult], options: CompactionOptions | None = None
    ) -> CompactionMetrics:
        """Commit tasks' results as ``compact_files`` commits them (ReserveFragments, then one Rewrite, indices
        remapped); any subset of a plan's tasks, in any order; the object moves to the version committed.

        Args:
            dataset: The dataset.
            rewrites: The results of ``CompactionTask.execute``.
            options: Options for the commit (``defer_index_remap``); pylance's defaults when None.

        Returns:
            A ``CompactionMetrics`` (the sum of the results').
        """
        if not rewrites:
            return CompactionMetrics()
        opts = resolve(dataset, dict(options)) if options is not None else Options()
        read = dataset.checkout_version(min(r.read_version for r in rewrites))
        check_defer(read, opts)
        written: list[tuple[list[table_pb2.DataFragment], list[table_pb2.DataFragment]]] = [
            ([f.to_pb() for f in r.original_fragments], [f.to_pb() for f in r.new_fragments]) for r in rewrites
        ]
        remap = None
        if indexed_fragments(read):
            at = {v: dataset.checkout_version(v) for v in {r.read_version for r in rewrites}}
            by_id = {v: {f.fragment_id: f for f in ds.get_fragments()} for v, ds in at.items()}
            remap = [[by_id[r.read_version][f.id] for f in r.original_fragments] for r in rewrites]
        metrics = commit_compaction(read, written, remap, opts.defer_index_remap)
        dataset.move_to(dataset.latest_version)
        return metrics
