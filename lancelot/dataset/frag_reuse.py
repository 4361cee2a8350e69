"""The fragment reuse index (``__lance_frag_reuse``, table format "System Indices: Fragment Reuse Index";
protos/table.proto ``FragmentReuseIndexDetails``): a compaction that does not rewrite an index's files leaves the index
on the old row addresses and records, per rewrite group, the old and new fragments and the old addresses of the rows it
moved; readers (pylance) map the index's row addresses through it at query time.

The details message is not among lancelot's generated protos, so it is written here on the wire format directly:
``FragmentReuseIndexDetails{inline=1: InlineContent{versions=1: [Version]}, external=2: ExternalFile{path=1, offset=2,
size=3}}``, ``Version{dataset_version=1, groups=3}``, ``Group{changed_row_addrs=1, old_fragments=2, new_fragments=3}``,
``FragmentDigest{id=1, physical_rows=2, num_deleted_rows=3}``.  Each compaction appends a Version; repeated fields
concatenate, so the earlier versions are carried over as their bytes."""

from __future__ import annotations

import struct
import time
import uuid as uuidlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from pyroaring import BitMap

from lancelot.errors import CorruptFileError
from lancelot.format.pb import table_pb2
from lancelot.util import wire
from lancelot.util.wire import bytes_field, int_field

if TYPE_CHECKING:
    from lancelot.dataset.store import ObjectStore

FRAG_REUSE_INDEX_NAME = "__lance_frag_reuse"
DETAILS_TYPE_URL = "/lance.table.FragmentReuseIndexDetails"
#: details larger than this go to an external file in the index's directory (as pylance does)
INLINE_LIMIT = 200 * 1024
DETAILS_FILE_NAME = "details.binpb"


def _fields(data: bytes, where: str) -> wire.Fields:
    return wire.fields(data, f"{where}: fragment reuse details")


def serialize_treemap(addrs: np.ndarray) -> bytes:
    """A 64-bit roaring treemap (the Rust ``roaring`` crate's RoaringTreemap serialization: u64 count, then per high 32
    bits a u32 key and a portable 32-bit roaring bitmap) of sorted row addresses."""
    addrs = np.asarray(addrs, dtype=np.uint64)
    hi = (addrs >> np.uint64(32)).astype(np.uint32)
    keys = np.unique(hi)
    out = [struct.pack("<Q", len(keys))]
    for k in keys:
        lo = (addrs[hi == k] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        out.append(struct.pack("<I", int(k)) + BitMap(lo).serialize())
    return b"".join(out)


def fragment_digest(frag_id: int, physical_rows: int, deleted: int) -> bytes:
    return int_field(1, frag_id) + int_field(2, physical_rows) + int_field(3, deleted)


def group(changed_row_addrs: np.ndarray, old: Sequence[bytes], new: Sequence[bytes]) -> bytes:
    """A Group message: the old addresses of the moved rows (in the order they were written), old and new fragment
    digests."""
    out = bytes_field(1, serialize_treemap(changed_row_addrs))
    out += b"".join(bytes_field(2, d) for d in old)
    out += b"".join(bytes_field(3, d) for d in new)
    return out


def version(dataset_version: int, groups: Sequence[bytes]) -> bytes:
    return int_field(1, dataset_version) + b"".join(bytes_field(3, g) for g in groups)


def inline_content(store: ObjectStore, idx: table_pb2.IndexMetadata, where: str) -> bytes:
    """The InlineContent bytes of an existing fragment reuse index (read from its external file if the details point to
    one)."""
    details = _fields(bytes(idx.index_details.value), where)
    inline = wire.message(details, 1)
    if inline is not None:
        return inline
    external = wire.message(details, 2)
    if external is not None:
        ext = _fields(external, where)
        path = wire.message(ext, 1)
        if path is None:
            raise CorruptFileError(f"{where}: fragment reuse details name no external file")
        u = str(uuidlib.UUID(bytes=bytes(idx.uuid.uuid)))
        offset, size = wire.varint(ext, 2), wire.varint(ext, 3)
        return store.read_range(f"_indices/{u}/{path.decode()}", offset, size)
    return b""


def new_index(
    store: ObjectStore,
    previous: table_pb2.IndexMetadata | None,
    new_version: bytes,
    dataset_version: int,
    new_fragments: Iterable[int],
    where: str,
) -> table_pb2.IndexMetadata:
    """The fragment reuse index after a compaction: the previous one's versions plus ``new_version``, under a new uuid,
    covering the compaction's new fragments (what pylance writes)."""
    content = (inline_content(store, previous, where) if previous is not None else b"") + bytes_field(1, new_version)
    u = uuidlib.uuid4()
    if len(content) > INLINE_LIMIT:
        store.put(f"_indices/{u}/{DETAILS_FILE_NAME}", content)
        ext = bytes_field(1, DETAILS_FILE_NAME.encode()) + int_field(3, len(content))
        details = bytes_field(2, ext)
    else:
        details = bytes_field(1, content)
    idx = table_pb2.IndexMetadata()
    idx.uuid.uuid = u.bytes
    idx.name = FRAG_REUSE_INDEX_NAME
    idx.dataset_version = dataset_version
    idx.fragment_bitmap = BitMap(sorted(new_fragments)).serialize()
    idx.index_details.type_url = DETAILS_TYPE_URL
    idx.index_details.value = details
    idx.index_version = previous.index_version if previous is not None else 0
    idx.created_at = int(time.time() * 1000)
    return idx


Digest = tuple[int, int, int]  # (fragment id, physical rows, deleted rows)


def _digest(data: bytes, where: str) -> Digest:
    f = _fields(data, where)
    return wire.varint(f, 1), wire.varint(f, 2), wire.varint(f, 3)


def parse_versions(content: bytes, where: str) -> list[tuple[int, list[tuple[np.ndarray, list[Digest], list[Digest]]]]]:
    """The versions of an InlineContent, oldest first: (dataset_version, its groups as (changed row addresses, old
    fragment digests, new fragment digests))."""
    from pyroaring import BitMap64

    out = []
    for v in _fields(content, where).get(1, []):
        if not isinstance(v, bytes):
            continue
        version_fields = _fields(v, where)
        groups = []
        for g in version_fields.get(3, []):
            if not isinstance(g, bytes):
                continue
            gf = _fields(g, where)
            addrs_raw = wire.message(gf, 1)
            addrs = (
                np.empty(0, np.uint64)
                if addrs_raw is None
                else np.asarray(BitMap64.deserialize(addrs_raw).to_array(), dtype=np.uint64)
            )
            old = [_digest(d, where) for d in gf.get(2, []) if isinstance(d, bytes)]
            new = [_digest(d, where) for d in gf.get(3, []) if isinstance(d, bytes)]
            groups.append((addrs, old, new))
        out.append((wire.varint(version_fields, 1), groups))
    out.sort(key=lambda x: x[0])
    return out
