"""pylance's ``Index`` and ``IndexFile`` values (``lance.dataset.Index``): one index segment as a transaction's
``CreateIndex`` holds it, given to ``LanceOperation.CreateIndex`` and returned by ``read_transaction``."""

from __future__ import annotations

import dataclasses
import uuid as uuidlib
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from pyroaring import BitMap

if TYPE_CHECKING:
    from lancelot.format.pb import table_pb2


@dataclass
class IndexFile:
    """One file of an index segment and its size."""

    path: str
    size_bytes: int


@dataclass
class Index:
    """One index segment: pylance's ``Index`` fields (``fragment_ids`` a set of fragment ids; any iterable of them is
    accepted when building one)."""

    uuid: str
    name: str
    fields: list[int]
    dataset_version: int
    fragment_ids: BitMap
    index_version: int
    created_at: datetime | None = None
    base_id: int | None = None
    files: list[IndexFile] | None = None
    index_details: tuple[str, bytes] | None = None
    covering_fields: list[int] = dataclasses.field(default_factory=list)


def index_from_pb(m: table_pb2.IndexMetadata) -> Index:
    """The ``Index`` of an ``IndexMetadata`` message, as pylance's ``read_transaction`` gives it."""
    return Index(
        uuid=str(uuidlib.UUID(bytes=bytes(m.uuid.uuid))),
        name=m.name,
        fields=[int(f) for f in m.fields],
        dataset_version=int(m.dataset_version),
        fragment_ids=BitMap.deserialize(m.fragment_bitmap) if m.fragment_bitmap else BitMap(),
        index_version=int(m.index_version),
        created_at=datetime.fromtimestamp(m.created_at / 1000, timezone.utc) if m.HasField("created_at") else None,
        base_id=int(m.base_id) if m.HasField("base_id") else None,
        files=[IndexFile(f.path, int(f.size_bytes)) for f in m.files],
        index_details=(m.index_details.type_url, bytes(m.index_details.value)) if m.HasField("index_details") else None,
    )
