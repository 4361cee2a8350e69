"""Keeping indices valid across a compaction (table format "Transaction types: Rewrite"; protos/transaction.proto
``Rewrite.rewritten_indices``; protos/table.proto ``IndexMetadata``).

A compaction moves rows: the row at old address ``(fragment << 32) | offset`` lands at a new address in a new fragment,
and deleted rows vanish.  pylance 14 keeps every index valid in one of three ways, and so does lancelot:

- remap: the index's files are rewritten under a new uuid with the new addresses (a ``RewrittenIndex`` in the
  transaction; the old uuid's metadata is replaced).  lancelot does this for the scalar indices stored as Lance files of
  (value, row address) pairs: BTREE (``page_data.lance`` + ``page_lookup.lance``), BITMAP and LABEL_LIST
  (``bitmap_page_lookup.lance`` of serialized row-id tree maps);
- no remap: with stable row ids an index holding row ids stays as it is (the BTREE of a stable dataset holds row
  addresses and is remapped, as pylance does);
- defer: the index keeps its files and uuid, and the fragment reuse index (``frag_reuse.py``) records the move, which
  readers apply when they load the index; lancelot does this for the index types it cannot rewrite (vector, full text,
  others), and for all of them with ``defer_index_remap=True``.

In every case the index's ``fragment_bitmap`` has a rewrite group's old fragments replaced by its new ones (pylance's
rule; the compaction plan never splits an index's fragments from the others')."""

from __future__ import annotations

import struct
import uuid as uuidlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from lancelot.dataset import frag_reuse
from lancelot.dataset.commit import RetryableCommitConflictError
from lancelot.errors import CorruptFileError
from lancelot.format.pb import table_pb2, transaction_pb2
from lancelot.reader import LanceFile

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.store import ObjectStore

BTREE = "/lance.table.BTreeIndexDetails"
BITMAP = "/lance.table.BitmapIndexDetails"
LABEL_LIST = "/lance.table.LabelListIndexDetails"
BTREE_PAGES, BTREE_LOOKUP, BITMAP_LOOKUP = "page_data.lance", "page_lookup.lance", "bitmap_page_lookup.lance"
DELETED = np.uint64(2**64 - 1)


def read_indices(section: bytes | None) -> list[table_pb2.IndexMetadata]:
    if not section:
        return []
    sec = table_pb2.IndexSection()
    sec.ParseFromString(section)
    return list(sec.indices)


def fragment_ids(idx: table_pb2.IndexMetadata) -> set[int] | None:
    """The fragments an index covers (None: its metadata does not say)."""
    if not idx.fragment_bitmap:
        return None
    return set(BitMap.deserialize(bytes(idx.fragment_bitmap)))


def uuid_str(idx: table_pb2.IndexMetadata) -> str:
    return str(uuidlib.UUID(bytes=bytes(idx.uuid.uuid)))


def _addresses(frags: Iterable[tuple[int, int]]) -> np.ndarray:
    """The row addresses of every row of fragments given as (id, physical rows), in order."""
    parts = [(np.uint64(i) << np.uint64(32)) + np.arange(n, dtype=np.uint64) for i, n in frags]
    return np.concatenate(parts) if parts else np.empty(0, np.uint64)


def _find(sorted_values: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``values`` is in ``sorted_values``, and whether it is there."""
    pos = np.searchsorted(sorted_values, values)
    if not len(sorted_values):
        return pos, np.zeros(len(values), bool)
    return pos, (pos < len(sorted_values)) & (sorted_values[np.minimum(pos, len(sorted_values) - 1)] == values)


@dataclass
class RowAddrMap:
    """Old row address -> new row address (``DELETED`` for a deleted row) for every row of the rewritten fragments; an
    address of another fragment is left as it is."""

    old: np.ndarray
    new: np.ndarray
    physical_rows: dict[int, int] = field(default_factory=dict)

    def apply(self, addrs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(which of ``addrs`` survive, their new addresses)."""
        addrs = np.asarray(addrs, dtype=np.uint64)
        pos, hit = _find(self.old, addrs)
        out = addrs.copy()
        out[hit] = self.new[pos[hit]]
        keep = out != DELETED
        return keep, out[keep]


@dataclass
class AddrChain:
    """Maps applied one after the other: the fragment reuse index's versions (the moves of earlier compactions that
    deferred their remap, which pylance applies to every index it loads), then this compaction's."""

    maps: list[RowAddrMap]

    @property
    def physical_rows(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for m in self.maps:
            out.update(m.physical_rows)
        return out

    def apply(self, addrs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        keep = np.ones(len(addrs), dtype=bool)
        cur = np.asarray(addrs, dtype=np.uint64)
        for m in self.maps:
            k, cur = m.apply(cur)
            keep[np.flatnonzero(keep)[~k]] = False
        return keep, cur


def reuse_maps(store: ObjectStore, section: bytes | None, where: str) -> list[RowAddrMap]:
    """The row address maps of the fragment reuse index's versions, oldest first (each group's changed addresses, in
    order, take the new fragments' addresses in order; the other rows of its old fragments were deleted)."""
    out = []
    for idx in read_indices(section):
        if idx.name != frag_reuse.FRAG_REUSE_INDEX_NAME:
            continue
        for _, groups in frag_reuse.parse_versions(frag_reuse.inline_content(store, idx, where), where):
            olds, news, phys = [], [], {}
            for changed, old, new in groups:
                tgt_new = _addresses((i, n) for i, n, _ in new)
                all_old = _addresses((i, n) for i, n, _ in old)
                n = min(len(changed), len(tgt_new))
                tgt = np.full(len(all_old), DELETED, dtype=np.uint64)
                pos, ok = _find(all_old, changed[:n])
                tgt[pos[ok]] = tgt_new[:n][ok]
                olds.append(all_old)
                news.append(tgt)
                phys.update({i: n_rows for i, n_rows, _ in old})
            if olds:
                o, t = np.concatenate(olds), np.concatenate(news)
                order = np.argsort(o, kind="stable")
                out.append(RowAddrMap(o[order], t[order], phys))
    return out


@dataclass
class Group:
    """One rewrite group as the remap needs it: the old fragments (as read) and the new ones."""

    old: list[Fragment]
    new: list[table_pb2.DataFragment]
    live_addrs: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))


def build_map(groups: Sequence[Group]) -> RowAddrMap:
    olds, news, phys = [], [], {}
    for g in groups:
        live_all, n_live = [], 0
        for f in g.old:
            p = f.physical_rows
            phys[f.fragment_id] = p
            addrs = _addresses([(f.fragment_id, p)])
            live = f.live_positions().astype(np.int64)
            tgt = np.full(p, DELETED, dtype=np.uint64)
            tgt[live] = 0  # filled below
            olds.append(addrs)
            news.append(tgt)
            live_all.append(addrs[live])
            n_live += len(live)
        new_addrs = _addresses((int(n.id), int(n.physical_rows)) for n in g.new)
        if len(new_addrs) != n_live:
            raise CorruptFileError(f"compaction wrote {len(new_addrs)} rows for {n_live} live rows")
        g.live_addrs = np.concatenate(live_all) if live_all else np.empty(0, np.uint64)
        # the group's live rows, in order, take the new addresses in order
        at = 0
        for tgt in news[len(news) - len(g.old) :]:
            m = tgt != DELETED
            k = int(m.sum())
            tgt[m] = new_addrs[at : at + k]
            at += k
    if not olds:
        return RowAddrMap(np.empty(0, np.uint64), np.empty(0, np.uint64), phys)
    old, new = np.concatenate(olds), np.concatenate(news)
    order = np.argsort(old, kind="stable")
    return RowAddrMap(old[order], new[order], phys)


# --- rewriting index files -------------------------------------------------------------------------


def _read(store: ObjectStore, path: str) -> LanceFile:
    return LanceFile(store.open_input(path))


def write_index_file(store: ObjectStore, path: str, table: pa.Table, version: str, extra: Sequence[bytes] = ()) -> None:
    """An index file as pylance writes them: global buffer 0 the schema, then ``extra`` global buffers (a label list's
    null rows) and no zone maps (pylance reads its own buffers by number)."""
    w = store.open_output(path, table.schema, version=version)
    w.skip_zone_maps()  # lancelot's zone-map global buffer would take the number of an index buffer
    for buf in extra:
        w.add_global_buffer(buf)
    try:
        w.write(table)
    except BaseException:
        w.abort()
        raise
    w.close()


def _remap_btree(store: ObjectStore, old_dir: str, new_dir: str, rmap: AddrChain) -> None:
    """BTREE: page_data's (values, ids) rows with the new ids, deleted rows dropped.  When no row is dropped the pages
    keep their sizes and page_lookup is copied, as pylance does; otherwise pages are cut again at the index's
    ``batch_size`` and page_lookup's statistics recomputed as pylance makes them (min and max: the page's first and last
    value, nulls sorting first; the null count): a reader finds page ``i`` at rows ``i * batch_size``."""
    data_f, look_f = _read(store, f"{old_dir}/{BTREE_PAGES}"), _read(store, f"{old_dir}/{BTREE_LOOKUP}")
    try:
        data, look, version = data_f.read(), look_f.read(), str(data_f.version)
    finally:
        data_f.close()
        look_f.close()
    keep, ids = rmap.apply(data.column("ids").to_numpy())
    values = data.column("values").filter(pa.array(keep)) if not keep.all() else data.column("values")
    new_data = pa.table({"values": values, "ids": pa.array(ids, pa.uint64())}, schema=data.schema)
    write_index_file(store, f"{new_dir}/{BTREE_PAGES}", new_data, version)
    if keep.all():
        store.put(f"{new_dir}/{BTREE_LOOKUP}", store.read(f"{old_dir}/{BTREE_LOOKUP}"))
        return
    meta = look.schema.metadata or {}
    batch = int(meta.get(b"batch_size", b"4096"))
    mins, maxs, nulls = [], [], []
    for start in range(0, new_data.num_rows, batch):  # pylance's page statistics: first and last value
        page = values.slice(start, batch)
        mins.append(page[0])
        maxs.append(page[len(page) - 1])
        nulls.append(page.null_count)
    typ = look.schema.field("min").type
    new_look = pa.table(
        {
            "min": pa.array([m.as_py() for m in mins], typ),
            "max": pa.array([m.as_py() for m in maxs], typ),
            "null_count": pa.array(nulls, pa.uint32()),
            "page_idx": pa.array(range(len(mins)), pa.uint32()),
        },
        schema=look.schema,
    )
    write_index_file(store, f"{new_dir}/{BTREE_LOOKUP}", new_look, str(look_f.version))


def parse_row_id_tree_map(data: bytes, where: str) -> dict[int, BitMap | None]:
    """lance's RowIdTreeMap serialization: u32 count, then per fragment a u32 id, a u32 size and a portable roaring
    bitmap of offsets (size 0: the whole fragment)."""
    out: dict[int, BitMap | None] = {}
    if len(data) < 4:
        raise CorruptFileError(f"{where}: truncated row id map")
    (n,), pos = struct.unpack_from("<I", data, 0), 4
    for _ in range(n):
        if pos + 8 > len(data):
            raise CorruptFileError(f"{where}: truncated row id map")
        frag, size = struct.unpack_from("<II", data, pos)
        pos += 8
        if size == 0:
            out[frag] = None
        else:
            out[frag] = BitMap.deserialize(data[pos : pos + size])
            pos += size
    return out


def serialize_row_id_tree_map(m: dict[int, BitMap | None]) -> bytes:
    out = [struct.pack("<I", len(m))]
    for frag in sorted(m):
        bm = m[frag]
        if bm is None:
            out.append(struct.pack("<II", frag, 0))
        else:
            b = bm.serialize()
            out.append(struct.pack("<II", frag, len(b)) + b)
    return b"".join(out)


def _remap_tree_map(data: bytes, rmap: AddrChain, where: str) -> bytes:
    m = parse_row_id_tree_map(data, where)
    moved: list[np.ndarray] = []
    out: dict[int, BitMap | None] = {}
    phys = rmap.physical_rows
    for frag, bm in m.items():
        if frag not in phys:
            out[frag] = bm
            continue
        offs = np.arange(phys[frag], dtype=np.uint64) if bm is None else np.asarray(bm.to_array(), dtype=np.uint64)
        moved.append((np.uint64(frag) << np.uint64(32)) + offs)
    if moved:
        _, new = rmap.apply(np.concatenate(moved))
        hi = (new >> np.uint64(32)).astype(np.uint32)
        lo = (new & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        for frag in np.unique(hi):
            bm_new = BitMap(lo[hi == frag])
            prev = out.get(int(frag))
            out[int(frag)] = bm_new if prev is None and int(frag) not in out else (prev | bm_new if prev else None)
    return serialize_row_id_tree_map({k: v for k, v in out.items() if v is None or len(v)})


def _remap_bitmap(store: ObjectStore, old_dir: str, new_dir: str, rmap: AddrChain) -> None:
    """BITMAP and LABEL_LIST: each key's row id map with the new addresses."""
    f = _read(store, f"{old_dir}/{BITMAP_LOOKUP}")
    where = f"{old_dir}/{BITMAP_LOOKUP}"
    try:
        t, version = f.read(), str(f.version)
        extra = [f.read_global_buffer(i) for i in range(1, f.num_global_buffers)]
    finally:
        f.close()
    # a label list keeps the rows whose list is null in the global buffer its metadata names
    nulls = (t.schema.metadata or {}).get(b"lance:label_list_nulls")
    if nulls is not None:
        i = int(nulls) - 1
        if not 0 <= i < len(extra):
            raise CorruptFileError(f"{where}: label list nulls in global buffer {nulls}, which it lacks")
        extra[i] = _remap_tree_map(extra[i], rmap, where)
    col = t.column("bitmaps").to_pylist()
    new = [None if b is None else _remap_tree_map(b, rmap, where) for b in col]
    i = t.schema.get_field_index("bitmaps")
    t = t.set_column(i, t.schema.field(i), pa.array(new, t.schema.field(i).type))
    write_index_file(store, f"{new_dir}/{BITMAP_LOOKUP}", t, version, extra)


def remappable(store: ObjectStore, idx: table_pb2.IndexMetadata, stable: bool) -> Callable[..., None] | None:
    """The file rewrite for an index lancelot remaps (None: it is deferred or left as it is)."""
    kind = idx.index_details.type_url
    d = f"_indices/{uuid_str(idx)}"
    if kind == BTREE and (not stable or idx.index_version >= 1):
        if store.exists(f"{d}/{BTREE_PAGES}") and store.exists(f"{d}/{BTREE_LOOKUP}"):
            return _remap_btree
    if kind in (BITMAP, LABEL_LIST) and not stable and store.exists(f"{d}/{BITMAP_LOOKUP}"):
        return _remap_bitmap
    return None


def set_files(idx: table_pb2.IndexMetadata, files: Sequence[tuple[str, int, float]]) -> None:
    """The index's file list (IndexMetadata.files): pylance 14 reads an index's files with the sizes listed there, so a
    rewritten index must list its own."""
    del idx.files[:]
    for path, size, _ in files:
        idx.files.add(path=path.rsplit("/", 1)[-1], size_bytes=size)


# --- the index section of the Rewrite ----------------------------------------------------------------


def update_bitmap(idx: table_pb2.IndexMetadata, groups: Sequence[tuple[set[int], set[int]]]) -> None:
    """A rewrite group's old fragments replaced by its new ones in the index's fragment bitmap (a group only partly
    covered loses the covered fragments: the index no longer covers them)."""
    ids = fragment_ids(idx)
    if ids is None:
        return
    for old, new in groups:
        hit = ids & old
        if not hit:
            continue
        ids -= old
        if hit == old:
            ids |= new
    idx.fragment_bitmap = BitMap(sorted(ids)).serialize()


@dataclass
class Remap:
    """What a compaction does to the indices it read: the new metadata of the remapped ones (by old uuid), and the
    fragment reuse groups to record (None: no index is deferred)."""

    replaced: dict[bytes, table_pb2.IndexMetadata]
    reuse_groups: list[bytes] | None
    new_fragments: set[int]
    groups: list[tuple[set[int], set[int]]]
    dataset_version: int

    def rewritten(self) -> list[transaction_pb2.Transaction.Rewrite.RewrittenIndex]:
        out = []
        for old_uuid, idx in self.replaced.items():
            r = transaction_pb2.Transaction.Rewrite.RewrittenIndex()
            r.old_id.uuid = old_uuid
            r.new_id.CopyFrom(idx.uuid)
            r.new_index_details.CopyFrom(idx.index_details)
            r.new_index_version = idx.index_version
            out.append(r)
        return out

    def section(self, store: ObjectStore, base_section: bytes | None, where: str) -> bytes | None:
        """The index section of the Rewrite's manifest, made from the latest version's section."""
        indices = read_indices(base_section)
        gone = set(self.replaced) - {bytes(i.uuid.uuid) for i in indices}
        if gone:  # a concurrent commit replaced an index this compaction remapped: plan again
            names = sorted(self.replaced[u].name for u in gone)
            raise RetryableCommitConflictError(f"{where}: index {', '.join(names)} was replaced by a concurrent commit")
        if not indices:
            return base_section
        out = []
        previous_reuse = None
        for idx in indices:
            if idx.name == frag_reuse.FRAG_REUSE_INDEX_NAME and self.reuse_groups is not None:
                previous_reuse = idx
                continue
            new = table_pb2.IndexMetadata()
            new.CopyFrom(idx)
            if idx.name == frag_reuse.FRAG_REUSE_INDEX_NAME:  # kept as it is (pylance does too)
                out.append(new)
                continue
            src = self.replaced.get(bytes(idx.uuid.uuid))
            if src is not None:  # the remapped index (its uuid and files), on the latest fragment bitmap
                new.CopyFrom(src)
                new.fragment_bitmap = idx.fragment_bitmap
            update_bitmap(new, self.groups)
            out.append(new)
        if self.reuse_groups is not None:
            ver = frag_reuse.version(self.dataset_version, self.reuse_groups)
            out.append(
                frag_reuse.new_index(store, previous_reuse, ver, self.dataset_version, self.new_fragments, where)
            )
        sec = table_pb2.IndexSection()
        sec.indices.extend(out)
        return bytes(sec.SerializeToString())


def remap_indices(
    store: ObjectStore, section: bytes | None, groups: Sequence[Group], stable: bool, defer: bool, dataset_version: int
) -> Remap:
    """Rewrite the files of the indices lancelot remaps (under new uuids) and prepare the rest: returns the ``Remap``
    the Rewrite commit applies to the latest index section."""
    rmap: AddrChain | None = None
    bitmap_groups = [({f.fragment_id for f in g.old}, {int(n.id) for n in g.new}) for g in groups]
    rewritten_frags: set[int] = set().union(*(o for o, _ in bitmap_groups))
    replaced: dict[bytes, table_pb2.IndexMetadata] = {}
    deferred = False
    for idx in read_indices(section):
        if idx.name == frag_reuse.FRAG_REUSE_INDEX_NAME:
            continue
        covered = fragment_ids(idx)
        if covered is not None and not (covered & rewritten_frags):
            continue
        fn = None if defer else remappable(store, idx, stable)
        if fn is not None:
            if rmap is None:
                rmap = AddrChain([*reuse_maps(store, section, "fragment reuse index"), build_map(groups)])
            new_uuid = uuidlib.uuid4()
            fn(store, f"_indices/{uuid_str(idx)}", f"_indices/{new_uuid}", rmap)
            new = table_pb2.IndexMetadata()
            new.CopyFrom(idx)
            new.uuid.uuid = new_uuid.bytes
            set_files(new, store.list_files(f"_indices/{new_uuid}"))
            replaced[bytes(idx.uuid.uuid)] = new
        elif not stable or defer:
            deferred = True
    reuse: list[bytes] | None = None
    if deferred:
        if not stable and rmap is None:
            build_map(groups)  # fills each group's live addresses
        reuse = []
        for g in groups:
            addrs = np.empty(0, np.uint64) if stable else g.live_addrs
            if len(addrs) > 1 and not (np.diff(addrs.astype(np.int64)) > 0).all():
                raise CorruptFileError("compaction: a rewrite group's fragments are not in id order")
            olds = [
                frag_reuse.fragment_digest(f.fragment_id, f.physical_rows, f.physical_rows - f.count_rows())
                for f in g.old
            ]
            news = [frag_reuse.fragment_digest(int(n.id), int(n.physical_rows), 0) for n in g.new]
            reuse.append(frag_reuse.group(addrs, olds, news))
    return Remap(replaced, reuse, {int(n.id) for g in groups for n in g.new}, bitmap_groups, dataset_version)
