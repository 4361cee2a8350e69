"""``lancelot inspect DATASET``: a dataset's versions, fragments, data files, deletions, schema."""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any

from lancelot.dataset.commit import list_versions, load_manifest, load_transaction
from lancelot.dataset.deletion import deletion_path
from lancelot.dataset.manifest import VERSIONS_DIR, data_version, flag_names, parse_manifest_name, rows_trusted
from lancelot.dataset.store import ObjectStore
from lancelot.dataset.transaction import operation
from lancelot.errors import LanceError

if TYPE_CHECKING:
    from google.protobuf.timestamp_pb2 import Timestamp

    from lancelot.format.pb import file_pb2, table_pb2

MAX_VERSIONS = 20
MAX_FRAGMENTS = 50


def is_dataset(uri: str, storage_options: dict[str, Any] | None = None) -> bool:
    """True if ``uri`` is a directory holding ``_versions/*.manifest``."""
    try:
        store = ObjectStore(uri, storage_options)
        return any(parse_manifest_name(n) for n in store.list(VERSIONS_DIR))
    except (LanceError, OSError, ValueError):
        return False


def _when(ts: Timestamp) -> str:
    t = _dt.datetime.fromtimestamp(ts.seconds + ts.nanos / 1e9, tz=_dt.timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


def describe_dataset(uri: str, *, version: int | None = None, storage_options: dict[str, Any] | None = None) -> str:
    """A readable description of one version of a dataset and the list of its versions."""
    from lancelot.dataset.dataset import LanceDataset

    ds = LanceDataset(uri, version=version, storage_options=storage_options)
    m = ds.manifest
    store = ds.store
    versions = list_versions(store, ds.uri)
    try:
        dv = data_version(m, f"dataset {ds.uri!r} version {ds.version}")
    except LanceError as e:
        dv = f"? ({e})"
    out = [
        f"dataset {ds.uri}",
        f"  version {ds.version} (of {min(versions.names)}..{versions.latest}, manifest names "
        f"{'inverted (v2)' if versions.scheme == 'v2' else 'plain (v1)'})",
        f"  data storage version {dv}, written by {_writer(m)} at {_when(m.timestamp)}",
        f"  reader flags: {', '.join(flag_names(m.reader_feature_flags)) or '-'}; "
        f"writer flags: {', '.join(flag_names(m.writer_feature_flags)) or '-'}",
    ]
    if m.config:
        out.append(f"  config: {dict(m.config)}")
    if m.table_metadata:
        out.append(f"  table metadata: {dict(m.table_metadata)}")
    if m.HasField("index_section"):
        out.append("  indices: present (index section carried by commits)")
    out.append("versions:")
    shown = sorted(versions.names)[-MAX_VERSIONS:]
    if len(versions.names) > len(shown):
        out.append(f"  ... {len(versions.names) - len(shown)} older versions")
    for v in shown:
        try:
            mf = load_manifest(store, ds.uri, versions, v)
            txn = load_transaction(store, mf)
            op = operation(txn) if txn else "?"
            rows = _manifest_rows(mf.manifest)
            out.append(
                f"  {v:>6}  {_when(mf.manifest.timestamp)}  {op or '?':<10} {len(mf.manifest.fragments):>5} "
                f"fragments {'?' if rows is None else rows:>12} rows  ({mf.manifest.writer_version.library or '?'})"
            )
        except LanceError as e:
            out.append(f"  {v:>6}  unreadable: {e}")
    out.append("schema:")
    for f in m.fields:
        indent = "  " * (1 + _depth(m, f))
        out.append(f"{indent}{f.name}: {f.logical_type}{'' if f.nullable else ' not null'}  (id {f.id})")
    try:
        live = ds.count_rows()
        phys = sum(f.physical_rows for f in ds.get_fragments())
        out.append(f"fragments: {len(m.fragments)}, {live} rows ({phys - live} deleted)")
    except LanceError as e:  # row counts the manifest does not record, in files lancelot cannot open
        out.append(f"fragments: {len(m.fragments)}, rows unknown ({e})")
    for frag in list(m.fragments)[:MAX_FRAGMENTS]:
        dels = int(frag.deletion_file.num_deleted_rows) if frag.HasField("deletion_file") else 0
        phys_s = frag.physical_rows if rows_trusted(m, frag) else "? (not recorded reliably)"
        line = f"  fragment {frag.id}: {phys_s} rows"
        if frag.HasField("deletion_file"):
            line += f", {dels or '?'} deleted ({deletion_path(int(frag.id), frag.deletion_file)})"
        if frag.WhichOneof("row_id_sequence"):
            line += ", stable row ids"
        out.append(line)
        for d in frag.files:
            out.append(
                f"    data/{d.path}  v{d.file_major_version}.{d.file_minor_version}  "
                f"{d.file_size_bytes} bytes  fields {list(d.fields)}"
            )
    if len(m.fragments) > MAX_FRAGMENTS:
        out.append(f"  ... {len(m.fragments) - MAX_FRAGMENTS} more fragments")
    return "\n".join(out)


def _writer(m: table_pb2.Manifest) -> str:
    if not m.HasField("writer_version"):
        return "an unrecorded writer (an early Lance)"
    return f"{m.writer_version.library} {m.writer_version.version}"


def _manifest_rows(m: table_pb2.Manifest) -> int | None:
    """Live rows as the manifest records them (None where it does not, or not reliably)."""
    rows = 0
    for f in m.fragments:
        d = f.deletion_file if f.HasField("deletion_file") else None
        if not rows_trusted(m, f) or (d is not None and not d.num_deleted_rows):
            return None
        rows += int(f.physical_rows) - (int(d.num_deleted_rows) if d is not None else 0)
    return rows


def _depth(m: table_pb2.Manifest, field: file_pb2.Field) -> int:
    parents = {f.id: f.parent_id for f in m.fields}
    d, p = 0, field.parent_id
    while p != -1 and d < 64:
        d, p = d + 1, parents.get(p, -1)
    return d
