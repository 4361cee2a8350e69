"""Metadata-only commits: UpdateConfig and Restore (protos/transaction.proto, table format "Transaction types").

``UpdateConfig`` changes one of four string maps of the manifest without touching data: the table config
(``config_updates``), the table metadata (``table_metadata_updates``), the schema metadata (``schema_metadata_updates``)
or a field's metadata (``field_metadata_updates``, by field id).  Each is an ``UpdateMap``: entries (a key, and a value
or none to remove the key) and ``replace`` (the map becomes exactly the entries).  pylance 14 writes only these newer
fields, one map per commit; the older ``upsert_values``/``delete_keys`` fields are read too.

``Restore`` commits an older version's content as the newest version."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from lancelot.dataset.manifest import FLAG_STABLE_ROW_IDS, ManifestFile, field_paths
from lancelot.dataset.operation import finish_manifest, start_manifest
from lancelot.errors import LanceError, LanceValueError
from lancelot.format.pb import table_pb2, transaction_pb2

if TYPE_CHECKING:
    from lancelot.dataset.changes import Committed
    from lancelot.dataset.commit import Builder
    from lancelot.dataset.dataset import LanceDataset


def string_map(values: Any, what: str) -> dict[str, str | None]:
    """``values`` checked to be a dict of str -> str | None (None: remove the key), as pylance asks."""
    if not isinstance(values, dict):
        raise LanceValueError(f"{what} must be a dict of str -> str | None, not {type(values).__name__}")
    for k, v in values.items():
        if not isinstance(k, str) or (v is not None and not isinstance(v, str)):
            raise LanceValueError(f"{what}: {k!r}: {v!r} is not str -> str | None")
    return values


def field_metadata_maps(
    ds: LanceDataset, field_updates: Mapping[str | int, Any], replace: bool
) -> dict[int, transaction_pb2.Transaction.UpdateMap]:
    """{field id: UpdateMap} of ``update_field_metadata``'s fields, named by path ("s.x") or id."""
    ids = {path: int(f.id) for path, f in field_paths(ds.manifest.fields).items()}
    maps = {}
    for key, values in field_updates.items():
        fid = key if isinstance(key, int) and key in ids.values() else ids.get(str(key))
        if fid is None:
            raise LanceValueError(f"dataset {ds.uri!r}: no field {key!r} (fields: {sorted(ids)})")
        maps[fid] = update_map(string_map(values, f"metadata of field {key!r}"), replace)
    return maps


def commit_update_config(ds: LanceDataset, **maps: Any) -> Committed:
    """Commit one UpdateConfig of ``maps`` (its field names: ``config_updates``...) on top of ``ds``'s version; returns
    the new version and the manifest it built (``commit_change``)."""
    from lancelot.dataset.changes import commit_change
    from lancelot.dataset.transaction import new_transaction

    txn = new_transaction(ds.version)
    op = txn.update_config
    for name, value in maps.items():
        if name == "field_metadata_updates":
            for fid, m in value.items():
                op.field_metadata_updates[fid].CopyFrom(m)
        else:
            getattr(op, name).CopyFrom(value)
    build = build_update_config(op, ds.uri)
    return commit_change(ds, txn, build)


def update_map(values: Mapping[str, str | None], replace: bool) -> transaction_pb2.Transaction.UpdateMap:
    """An UpdateMap message: ``None`` values remove their key."""
    m = transaction_pb2.Transaction.UpdateMap(replace=replace)
    for k, v in values.items():
        e = m.update_entries.add()
        e.key = str(k)
        if v is not None:
            e.value = str(v)
    return m


def apply_update(target: MutableMapping[str, str], update: transaction_pb2.Transaction.UpdateMap, raw: bool) -> None:
    """Apply an UpdateMap to a protobuf string (or bytes, ``raw``) map in place."""
    if update.replace:
        target.clear()
    for e in update.update_entries:
        if e.HasField("value"):
            target[e.key] = e.value.encode() if raw else e.value
        elif e.key in target:
            del target[e.key]


def build_update_config(op: transaction_pb2.Transaction.UpdateConfig, uri: str) -> Builder:
    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        if base is None:
            raise LanceError(f"dataset {uri!r} does not exist")
        m = start_manifest(base, take=True)
        stable = bool(m.reader_feature_flags & FLAG_STABLE_ROW_IDS)
        if op.HasField("config_updates"):
            apply_update(m.config, op.config_updates, raw=False)
        for k, v in op.upsert_values.items():
            m.config[k] = v
        for k in op.delete_keys:
            m.config.pop(k, None)
        if op.HasField("table_metadata_updates"):
            apply_update(m.table_metadata, op.table_metadata_updates, raw=False)
        if op.HasField("schema_metadata_updates"):
            apply_update(m.schema_metadata, op.schema_metadata_updates, raw=True)
        by_id = {int(f.id): f for f in m.fields}
        for fid, upd in op.field_metadata_updates.items():
            f = by_id.get(int(fid))
            if f is None:
                raise LanceError(f"dataset {uri!r} version {version}: no field with id {fid}")
            apply_update(f.metadata, upd, raw=True)
        finish_manifest(m, version, stable)
        return m, base.index_section

    return build


def build_restore(old: ManifestFile, uri: str) -> Builder:
    """The content of version ``old`` as a new version.  Fragment ids and stable row ids keep counting from the latest
    version (never reused), the old version's index section comes back with it."""

    def build(base: ManifestFile | None, version: int) -> tuple[table_pb2.Manifest, bytes | None]:
        if base is None:
            raise LanceError(f"dataset {uri!r} does not exist")
        m = start_manifest(old)
        stable = bool(m.reader_feature_flags & FLAG_STABLE_ROW_IDS)
        latest = base.manifest
        top = max([int(latest.max_fragment_id), int(m.max_fragment_id)] + [int(f.id) for f in latest.fragments])
        if latest.HasField("max_fragment_id") or m.HasField("max_fragment_id") or latest.fragments:
            m.max_fragment_id = top
        if latest.next_row_id > m.next_row_id:
            m.next_row_id = latest.next_row_id
        finish_manifest(m, version, stable)
        return m, old.index_section

    return build
