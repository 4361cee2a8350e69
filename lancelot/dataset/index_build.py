"""Building and dropping scalar indices: ``create_scalar_index`` (BTREE, BITMAP) and ``drop_index``, each one
``CreateIndex`` transaction (protos/transaction.proto; table format "Indices"), written as pylance 14.0.2 writes them so
that pylance's queries use them.

- BTREE: ``page_data.lance`` holds every row's (value, row address), sorted by value (nulls first) then address;
  ``page_lookup.lance`` one row per page of ``batch_size`` (4096) rows: the page's first and last value, its null count
  and its number.
- BITMAP: ``bitmap_page_lookup.lance`` holds each distinct value (nulls first) and the serialized row-id tree map of its
  rows: row addresses, or stable row ids where the dataset has them (pylance's BTREE holds addresses either way).

Index files are Lance files of the dataset's data storage version, with no zone maps (pylance reads its global buffers
by number). The index covers the fragments it was built over (``fragment_bitmap``); rows appended later are scanned by
pylance until the index is rebuilt."""

from __future__ import annotations

import json
import time
import uuid as uuidlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from lancelot.dataset.changes import commit_change
from lancelot.dataset.index_remap import (
    BITMAP,
    BITMAP_LOOKUP,
    BTREE,
    BTREE_LOOKUP,
    BTREE_PAGES,
    read_indices,
    serialize_row_id_tree_map,
    write_index_file,
)
from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS, ManifestFile
from lancelot.dataset.operation import finish_manifest, start_manifest
from lancelot.dataset.transaction import new_transaction
from lancelot.errors import LanceError, LanceValueError
from lancelot.format.pb import table_pb2

if TYPE_CHECKING:
    from lancelot.dataset.changes import Committed
    from lancelot.dataset.dataset import LanceDataset

BATCH_SIZE = 4096


class IndexStateError(LanceError, RuntimeError):
    """An index that does not exist, or exists already (pylance: RuntimeError)."""


class NoSuchColumnError(LanceError, KeyError):
    """An index of a column the dataset does not have (pylance: KeyError)."""


#: index details' type URL of each kind lancelot builds
DETAILS = {"BTREE": BTREE, "BITMAP": BITMAP}


def create_scalar_index(
    ds: LanceDataset,
    column: str,
    index_type: str,
    name: str | None = None,
    *,
    replace: bool = True,
    fragment_ids: Iterable[int] | None = None,
    index_uuid: str | None = None,
) -> Committed:
    """Build a BTREE or BITMAP index of ``column`` over the dataset's fragments (or ``fragment_ids``) and commit it;
    returns the new version and its manifest (``commit_change``)."""
    kind = str(getattr(index_type, "value", index_type)).upper()
    if kind not in DETAILS:
        raise LanceValueError(
            f"dataset {ds.uri!r}: lancelot builds BTREE and BITMAP scalar indices, not {index_type!r}"
        )
    _field(ds, column)  # (a KeyError for an unknown column, before anything is read)
    name = name or f"{column}_idx"
    existing = [i for i in read_indices(ds.manifest_file.index_section) if i.name == name]
    if existing and not replace:
        raise IndexStateError(f"dataset {ds.uri!r}: an index named {name!r} already exists (use replace=True)")
    frags = ds.get_fragments()
    if fragment_ids is not None:
        wanted = {int(i) for i in fragment_ids}
        frags = [f for f in frags if f.fragment_id in wanted]
    meta = build_segment(ds, column, kind, name, frags, index_uuid)
    return commit_segments(ds, [meta], existing)


def build_segment(
    ds: LanceDataset,
    column: str,
    kind: str,
    name: str,
    frags: list[Any],
    index_uuid: str | None = None,
    dataset_version: int | None = None,
) -> table_pb2.IndexMetadata:
    """Write the files of one segment of a ``kind`` ("BTREE" or "BITMAP") index of ``column`` over ``frags``, and
    return its metadata (not committed)."""
    field = _field(ds, column)
    stable = bool(ds.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS)
    rows = ds.scanner(columns=[column], with_row_address=True, with_row_id=stable, fragments=frags).to_table()
    values = rows.column(0).combine_chunks()
    if not (
        pa.types.is_primitive(values.type)
        or pa.types.is_string(values.type)
        or pa.types.is_binary(values.type)
        or pa.types.is_large_string(values.type)
        or pa.types.is_large_binary(values.type)
    ):
        raise LanceValueError(
            f"dataset {ds.uri!r}: a {kind} index of column {column!r} ({values.type}) is not supported"
        )
    u = uuidlib.UUID(index_uuid) if index_uuid else uuidlib.uuid4()
    where = f"_indices/{u}"
    version = ds.data_storage_version
    addrs = rows.column("_rowaddr").to_numpy().astype(np.uint64)
    if kind == "BTREE":
        files = _btree(ds, where, values, addrs, version)
    else:
        ids = rows.column("_rowid").to_numpy().astype(np.uint64) if stable else addrs
        files = _bitmap(ds, where, values, ids, version)
    meta = table_pb2.IndexMetadata(
        name=name,
        fields=[int(field.id)],
        dataset_version=ds.version if dataset_version is None else dataset_version,
        fragment_bitmap=BitMap(sorted(f.fragment_id for f in frags)).serialize(),
        index_version=1 if kind == "BTREE" and stable else 0,  # (pylance's: a BTREE of addresses, stable ids)
        created_at=int(time.time() * 1000),
    )
    meta.uuid.uuid = u.bytes
    meta.index_details.type_url = DETAILS[kind]
    for path, size in files:
        meta.files.add(path=path, size_bytes=size)
    return meta


def drop_index(ds: LanceDataset, name: str) -> Committed:
    """Remove the index (every segment) named ``name`` from the dataset, as one new version."""
    existing = [i for i in read_indices(ds.manifest_file.index_section) if i.name == name]
    if not existing:
        raise IndexStateError(f"dataset {ds.uri!r}: index not found: name={name}")  # (pylance's words)
    return commit_segments(ds, [], existing)


def _field(ds: LanceDataset, column: str) -> Any:
    from lancelot.dataset.manifest import field_paths

    f = field_paths(ds.manifest.fields).get(column)
    if f is None:
        raise NoSuchColumnError(f"dataset {ds.uri!r}: no column named {column!r} (columns: {ds.schema.names})")
    return f


def _sizes(ds: LanceDataset, where: str, names: list[str]) -> list[tuple[str, int]]:
    return [(n, len(ds.store.read(f"{where}/{n}"))) for n in names]


def _order(values: pa.Array, ids: np.ndarray) -> pa.Array:
    """Positions sorting rows by value as pylance's index does (nulls first, NaN after every number), then by id."""
    rank = pc.if_else(values.is_null(), pa.scalar(0, pa.int8()), pa.scalar(1, pa.int8()))
    if pa.types.is_floating(values.type):  # Arrow sorts NaN with the nulls; Rust's total order last
        rank = pc.if_else(pc.is_nan(values).fill_null(False), pa.scalar(2, pa.int8()), rank)
    t = pa.table({"r": rank, "v": values, "i": pa.array(ids, pa.uint64())})
    return pc.sort_indices(t, sort_keys=[("r", "ascending"), ("v", "ascending"), ("i", "ascending")])


def _btree(ds: LanceDataset, where: str, values: pa.Array, addrs: np.ndarray, version: str) -> list[tuple[str, int]]:
    t = pa.table({"values": values, "ids": pa.array(addrs, pa.uint64())}).take(_order(values, addrs))
    schema = pa.schema([pa.field("values", values.type), pa.field("ids", pa.uint64(), nullable=False)])
    data = pa.Table.from_arrays([t.column(0), t.column(1)], schema=schema)
    write_index_file(ds.store, f"{where}/{BTREE_PAGES}", data, version)
    vals = data.column(0)
    starts = list(range(0, max(data.num_rows, 1), BATCH_SIZE))
    firsts = [vals[s] for s in starts] if data.num_rows else [pa.scalar(None, values.type)]
    lasts = [vals[min(s + BATCH_SIZE, data.num_rows) - 1] for s in starts] if data.num_rows else firsts
    nulls = [vals.slice(s, BATCH_SIZE).null_count for s in starts]
    lookup_schema = pa.schema(
        [
            pa.field("min", values.type),
            pa.field("max", values.type),
            pa.field("null_count", pa.uint32(), nullable=False),
            pa.field("page_idx", pa.uint32(), nullable=False),
        ],
        metadata={"batch_size": str(BATCH_SIZE), "range_partitioned": "false"},
    )
    lookup = pa.Table.from_arrays(
        [
            pa.array([x.as_py() for x in firsts], values.type),
            pa.array([x.as_py() for x in lasts], values.type),
            pa.array(nulls, pa.uint32()),
            pa.array(range(len(starts)), pa.uint32()),
        ],
        schema=lookup_schema,
    )
    write_index_file(ds.store, f"{where}/{BTREE_LOOKUP}", lookup, version)
    return _sizes(ds, where, [BTREE_PAGES, BTREE_LOOKUP])


def _bitmap(ds: LanceDataset, where: str, values: pa.Array, ids: np.ndarray, version: str) -> list[tuple[str, int]]:
    t = pa.table({"k": values, "i": pa.array(ids, pa.uint64())}).take(_order(values, ids))
    keys, rid = t.column(0).combine_chunks(), t.column(1).to_numpy()
    n = len(keys)
    if n:
        same = pc.and_kleene(pc.equal(keys.slice(1), keys.slice(0, n - 1)), pa.scalar(True)).fill_null(False)
        both_null = pc.and_(keys.slice(1).is_null(), keys.slice(0, n - 1).is_null())
        new_run = np.concatenate([[True], ~pc.or_(same, both_null).to_numpy(zero_copy_only=False)])
        cuts = np.flatnonzero(new_run)
    else:
        cuts = np.empty(0, np.int64)
    ends = np.append(cuts[1:], n) if n else cuts
    out_keys, maps = [], []
    for a, b in zip(cuts, ends, strict=True):
        ids_here = rid[a:b]
        frag = (ids_here >> np.uint64(32)).astype(np.int64)
        m: dict[int, BitMap | None] = {}
        for fid in np.unique(frag):
            m[int(fid)] = BitMap((ids_here[frag == fid] & np.uint64(0xFFFFFFFF)).astype(np.uint32).tolist())
        out_keys.append(keys[int(a)].as_py())
        maps.append(serialize_row_id_tree_map(m))
    schema = pa.schema(
        [pa.field("keys", values.type), pa.field("bitmaps", pa.binary())],
        metadata={"lance:index_stats": json.dumps({"num_bitmaps": len(out_keys)}, separators=(",", ":"))},
    )
    table = pa.Table.from_arrays([pa.array(out_keys, values.type), pa.array(maps, pa.binary())], schema=schema)
    write_index_file(ds.store, f"{where}/{BITMAP_LOOKUP}", table, version)
    return _sizes(ds, where, [BITMAP_LOOKUP])


def commit_segments(
    ds: LanceDataset, new: list[table_pb2.IndexMetadata], removed: list[table_pb2.IndexMetadata]
) -> Committed:
    """Commit index segments ``new`` in place of ``removed`` as one CreateIndex transaction."""
    txn = new_transaction(ds.version)
    txn.create_index.new_indices.extend(new)
    txn.create_index.removed_indices.extend(removed)
    gone = {bytes(i.uuid.uuid) for i in removed}

    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        if base is None:
            raise LanceValueError(f"dataset {ds.uri!r} does not exist")
        m = start_manifest(base, take=True)
        finish_manifest(m, version, bool(m.reader_feature_flags & FLAG_STABLE_ROW_IDS))
        kept = [i for i in read_indices(base.index_section) if bytes(i.uuid.uuid) not in gone]
        section = table_pb2.IndexSection(indices=[*kept, *new])
        return m, section.SerializeToString()

    return commit_change(ds, txn, build)
