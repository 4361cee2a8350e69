"""A fragment's manifest entry as pylance's ``FragmentMetadata.to_json()`` dict, and back.

Distributed writers (Ray, Spark, Daft) send fragment descriptions from workers to a driver as this JSON; using pylance's
field names lets either library's driver commit the other's workers' fragments. The row-id and row-version sequences
travel as their serialized protobuf bytes, as pylance sends them (``{"Inline": [bytes]}`` / ``{"inline": [bytes]}``)."""

from __future__ import annotations

from typing import Any

from lancelot.errors import LanceValueError
from lancelot.format.pb import table_pb2

_TYPES = {"array": table_pb2.DeletionFile.ARROW_ARRAY, "bitmap": table_pb2.DeletionFile.BITMAP}
_NAMES = {v: k for k, v in _TYPES.items()}
_FILE_KEYS = ("fields", "column_indices", "file_major_version", "file_minor_version", "file_size_bytes")


def _base(m: Any) -> int | None:
    return int(m.base_id) if m.HasField("base_id") else None


def to_dict(f: table_pb2.DataFragment) -> dict[str, Any]:
    """pylance's ``to_json()`` dict of a fragment."""
    files = [
        {
            "fields": list(d.fields),
            "column_indices": list(d.column_indices),
            "file_major_version": d.file_major_version,
            "file_minor_version": d.file_minor_version,
            "file_size_bytes": d.file_size_bytes or None,  # 0: not recorded (pylance: None)
            "base_id": _base(d),
            "path": d.path,
        }
        for d in f.files
    ]
    deletion = None
    if f.HasField("deletion_file"):
        d = f.deletion_file
        deletion = {
            "read_version": d.read_version,
            "id": d.id,
            "file_type": _NAMES.get(d.file_type, "array"),
            "num_deleted_rows": d.num_deleted_rows,
            "base_id": _base(d),
        }
    return {
        "id": f.id,
        "files": files,
        "overlays": [],
        "physical_rows": f.physical_rows,
        "deletion_file": deletion,
        "row_id_meta": _sequence(f, "row_id_sequence", "inline_row_ids", "Inline"),
        "created_at_version_meta": _sequence(f, "created_at_version_sequence", "inline_created_at_versions", "inline"),
        "last_updated_at_version_meta": _sequence(
            f, "last_updated_at_version_sequence", "inline_last_updated_at_versions", "inline"
        ),
    }


def _sequence(f: table_pb2.DataFragment, oneof: str, inline: str, key: str) -> dict[str, Any] | None:
    which = f.WhichOneof(oneof)
    if which is None:
        return None
    if which != inline:
        raise LanceValueError(f"fragment {f.id}: {oneof} in an external file has no JSON form in lancelot")
    return {key: list(getattr(f, inline))}


def from_dict(d: dict[str, Any]) -> table_pb2.DataFragment:
    """The fragment a ``to_json()`` dict (pylance's or lancelot's) describes."""
    if d.get("overlays"):
        raise LanceValueError(f"fragment {d.get('id')}: fragments with overlays are not supported by lancelot")
    f = table_pb2.DataFragment(id=int(d.get("id") or 0), physical_rows=int(d["physical_rows"]))
    for x in d.get("files", []):
        df = f.files.add(path=str(x["path"]), **{k: x[k] for k in _FILE_KEYS if x.get(k) is not None})
        if x.get("base_id") is not None:
            df.base_id = int(x["base_id"])
    dele = d.get("deletion_file")
    if dele is not None:
        f.deletion_file.CopyFrom(
            table_pb2.DeletionFile(
                file_type=_TYPES[str(dele.get("file_type", "array")).lower()],
                read_version=int(dele.get("read_version") or 0),
                id=int(dele["id"]),
                num_deleted_rows=int(dele.get("num_deleted_rows") or 0),
            )
        )
        if dele.get("base_id") is not None:
            f.deletion_file.base_id = int(dele["base_id"])
    for key, field, tag in (
        ("row_id_meta", "inline_row_ids", "Inline"),
        ("created_at_version_meta", "inline_created_at_versions", "inline"),
        ("last_updated_at_version_meta", "inline_last_updated_at_versions", "inline"),
    ):
        meta = d.get(key)
        if meta is None:
            continue
        if tag not in meta:
            raise LanceValueError(f"fragment {d.get('id')}: {key} {sorted(meta)} is not supported by lancelot")
        setattr(f, field, bytes(meta[tag]))
    return f
