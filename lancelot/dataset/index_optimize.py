"""``ds.optimize.optimize_indices()``: fragments appended since an index was built are added to it, as pylance 14 adds
them to its scalar indices: one CreateIndex transaction replacing, per index, its newest ``num_indices_to_merge``
segments (default 1) by one segment over their fragments and the unindexed ones (0: a new segment over the unindexed
fragments alone).  lancelot rebuilds BTREE and BITMAP segments from the data; indices of other types (vector,
full-text), which it cannot build, are left as they are."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyroaring import BitMap

from lancelot.dataset.index_build import DETAILS, build_segment, commit_segments
from lancelot.dataset.index_remap import read_indices
from lancelot.errors import LanceError, LanceValueError

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.format.pb import table_pb2

_KINDS = {url: kind for kind, url in DETAILS.items()}


class NegativeMergeError(LanceError, OverflowError):
    """A negative ``num_indices_to_merge`` (pylance: OverflowError, as it reads it as unsigned)."""


def optimize_indices(ds: LanceDataset, **kwargs: Any) -> None:
    """Add unindexed fragments to the dataset's BTREE and BITMAP indices (``index_names``: only those; unknown
    names and keywords are ignored, as pylance's are), as one new version; none when there is nothing to add."""
    merge = kwargs.get("num_indices_to_merge")
    merge = 1 if merge is None else int(merge)
    if merge < 0:
        raise NegativeMergeError(f"dataset {ds.uri!r}: num_indices_to_merge {merge}: can't convert negative int")
    names = kwargs.get("index_names")
    if isinstance(names, str):
        raise LanceValueError(f"dataset {ds.uri!r}: index_names: TypeError: Can't extract `str` to `Vec` (a list)")
    frags = {f.fragment_id: f for f in ds.get_fragments()}
    by_name: dict[str, list[table_pb2.IndexMetadata]] = {}
    for meta in read_indices(ds.manifest_file.index_section):
        by_name.setdefault(meta.name, []).append(meta)
    new, removed = [], []
    for name, segments in by_name.items():
        kind = _KINDS.get(segments[0].index_details.type_url)
        if kind is None or (names is not None and name not in names):
            continue
        indexed = BitMap()
        for s in segments:
            indexed |= BitMap.deserialize(s.fragment_bitmap)
        unindexed = sorted(set(frags) - set(indexed))
        if not unindexed:
            continue
        merged = segments[len(segments) - merge :] if merge else []
        covered = BitMap()
        for s in merged:
            covered |= BitMap.deserialize(s.fragment_bitmap)
        ids = sorted({*(i for i in covered if i in frags), *unindexed})
        version = min((int(s.dataset_version) for s in merged), default=None)
        new.append(
            build_segment(ds, _path(ds, int(segments[0].fields[0])), kind, name, [frags[i] for i in ids], None, version)
        )
        removed.extend(merged)
    if new:
        ds.move_to(*commit_segments(ds, new, removed))


def _path(ds: LanceDataset, field_id: int) -> str:
    """The dotted path of a field of the dataset's schema."""
    by_id = {int(f.id): f for f in ds.manifest.fields}
    parts = []
    while field_id != -1:
        f = by_id[field_id]
        parts.append(f.name)
        field_id = int(f.parent_id)
    return ".".join(reversed(parts))
