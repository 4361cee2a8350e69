"""The indices a version lists in its manifest: ``describe_indices``, ``list_indices``, ``has_index``.

Read from the manifest's index section alone (table.proto ``IndexSection`` / ``IndexMetadata``): no index file is
opened. lancelot does not use indices to answer queries (its scans and filters read the data), so what is described here
is what pylance built; scans return the same rows either way."""

from __future__ import annotations

import datetime as _dt
import uuid as _uuid
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyroaring import BitMap

from lancelot.dataset.manifest import field_paths
from lancelot.errors import CorruptFileError, LanceError
from lancelot.format.pb import table_pb2
from lancelot.util import wire

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset

#: pylance's ``index_type`` of each scalar index's details message
_SCALAR_TYPES = {
    "BTreeIndexDetails": "BTree",
    "BitmapIndexDetails": "Bitmap",
    "LabelListIndexDetails": "LabelList",
    "InvertedIndexDetails": "Inverted",
    "NGramIndexDetails": "NGram",
    "ZoneMapIndexDetails": "ZoneMap",
    "BloomFilterIndexDetails": "BloomFilter",
    "JsonIndexDetails": "Json",
}
#: field numbers of pylance 14's ``lance.index.pb.VectorIndexDetails`` that name its parts
#: (established by building each vector index type with pylance 14.0.2 and reading its details)
_VECTOR_HNSW = 3
_VECTOR_COMPRESSION = {4: "PQ", 5: "SQ", 6: "RQ"}


@dataclass(frozen=True)
class IndexSegmentDescription:
    """One segment (delta) of an index: its own files, covering ``fragment_ids``."""

    uuid: str
    fragment_ids: BitMap
    index_version: int
    dataset_version_at_last_update: int
    size_bytes: int | None
    base_id: int | None
    created_at: _dt.datetime | None


@dataclass(frozen=True)
class IndexDescription:
    """An index by name, with its segments (pylance's ``lance.indices.IndexDescription``)."""

    name: str
    type_url: str
    index_type: str
    num_rows_indexed: int
    fields: list[int]
    field_names: list[str]
    segments: list[IndexSegmentDescription] = field(default_factory=list)

    @property
    def total_size_bytes(self) -> int:
        return sum(s.size_bytes or 0 for s in self.segments)


def index_type(meta: table_pb2.IndexMetadata) -> str:
    """pylance's name for an index's type, from its details message."""
    url = meta.index_details.type_url
    short = url.rsplit(".", 1)[-1]
    if short in _SCALAR_TYPES:
        return _SCALAR_TYPES[short]
    if short == "VectorIndexDetails":
        try:
            parts = set(wire.fields(meta.index_details.value, "vector index details", fixed=True))
        except LanceError:
            return "Vector"
        if not parts:
            return "Vector"  # the details of indices built before pylance 14 say nothing more
        comp = next((name for num, name in _VECTOR_COMPRESSION.items() if num in parts), "FLAT")
        return "IVF_HNSW_" + comp if _VECTOR_HNSW in parts else "IVF_" + comp
    return short.removesuffix("IndexDetails") or "Unknown"


def _segment(meta: table_pb2.IndexMetadata, where: str) -> IndexSegmentDescription:
    try:
        frags = BitMap.deserialize(meta.fragment_bitmap) if meta.fragment_bitmap else BitMap()
        uid = str(_uuid.UUID(bytes=meta.uuid.uuid))
    except (ValueError, TypeError) as e:
        raise CorruptFileError(f"{where}: index {meta.name!r}: {e}") from None
    created = (
        _dt.datetime.fromtimestamp(meta.created_at / 1000, _dt.timezone.utc) if meta.HasField("created_at") else None
    )
    return IndexSegmentDescription(
        uuid=uid,
        fragment_ids=frags,
        index_version=int(meta.index_version),
        dataset_version_at_last_update=int(meta.dataset_version),
        size_bytes=sum(int(f.size_bytes) for f in meta.files) if len(meta.files) else None,
        base_id=int(meta.base_id) if meta.HasField("base_id") else None,
        created_at=created,
    )


def index_metadata(ds: LanceDataset) -> list[table_pb2.IndexMetadata]:
    """Every IndexMetadata of the version, system indices (``__lance_*``) included."""
    section = ds.manifest_file.index_section
    if not section:
        return []
    sec = table_pb2.IndexSection()
    try:
        sec.ParseFromString(section)
    except Exception as e:  # protobuf's DecodeError
        raise CorruptFileError(f"dataset {ds.uri!r} version {ds.version}: index section: {e}") from None
    return list(sec.indices)


def describe_indices(ds: LanceDataset) -> list[IndexDescription]:
    """The user indices of a version, by name, as pylance's ``describe_indices``."""
    where = f"dataset {ds.uri!r} version {ds.version}"
    by_name: dict[str, list[table_pb2.IndexMetadata]] = {}
    for meta in index_metadata(ds):
        if not meta.name.startswith("__lance"):
            by_name.setdefault(meta.name, []).append(meta)
    paths = {int(f.id): path for path, f in field_paths(ds.manifest.fields).items()}
    live = {
        int(f.id): int(f.physical_rows) - (int(f.deletion_file.num_deleted_rows) if f.HasField("deletion_file") else 0)
        for f in ds.manifest.fragments
    }
    out = []
    for name in sorted(by_name):
        metas = by_name[name]
        segments = [_segment(m, where) for m in metas]
        covered = BitMap()
        for s in segments:
            covered |= s.fragment_ids
        fields = [int(x) for x in metas[0].fields]
        out.append(
            IndexDescription(
                name=name,
                type_url=metas[0].index_details.type_url,
                index_type=index_type(metas[0]),
                num_rows_indexed=sum(live.get(fid, 0) for fid in covered),
                fields=fields,
                field_names=[paths.get(fid, str(fid)) for fid in fields],
                segments=segments,
            )
        )
    return out


def list_indices(ds: LanceDataset) -> list[dict[str, Any]]:
    """pylance's deprecated ``list_indices``: one dict per segment."""
    warnings.warn(
        "The 'list_indices' method is deprecated. It may be removed in a future version. "
        "Use describe_indices() instead.",
        DeprecationWarning,
        stacklevel=3,
    )
    return [
        {
            "name": d.name,
            "type": d.index_type,
            "uuid": s.uuid,
            "fields": d.field_names,
            "version": s.dataset_version_at_last_update,
            "fragment_ids": s.fragment_ids,
            "base_id": s.base_id,
        }
        for d in describe_indices(ds)
        for s in d.segments
    ]
