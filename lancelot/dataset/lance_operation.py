"""pylance's two-phase write API: ``LanceFragment.create`` / ``write_fragments`` write data files,
``LanceDataset.commit(uri, LanceOperation.Append | Overwrite, read_version)`` makes them one version.

This is the protocol distributed writers (Ray, Daft, Spark jobs) use: workers write fragments and
send their metadata to a driver, which commits once. The operations map onto the transaction.proto
``Append`` and ``Overwrite`` messages that ``write.commit`` already builds. Fragments may come from
lancelot (``FragmentMetadata``) or from pylance (its ``FragmentMetadata``, read through its
``to_json()`` dict), so a driver of either library can commit the other's files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lancelot.dataset.fragment import FragmentMetadata
from lancelot.format.pb import table_pb2

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset


def as_fragment_metadata(frag: Any) -> FragmentMetadata:
    """lancelot's FragmentMetadata of a lancelot or pylance fragment description."""
    if isinstance(frag, FragmentMetadata):
        return frag
    if isinstance(frag, table_pb2.DataFragment):
        return FragmentMetadata.from_pb(frag)
    to_json = getattr(frag, "to_json", None)
    d = to_json() if callable(to_json) else frag
    if not isinstance(d, dict):
        raise TypeError(f"expected a FragmentMetadata, got {type(frag).__name__}")
    for key in ("deletion_file", "row_id_meta", "created_at_version_meta", "last_updated_at_version_meta"):
        if d.get(key) is not None:
            raise ValueError(f"fragment {d.get('id')}: committing a fragment with {key} is not supported")
    if d.get("overlays"):
        raise ValueError(f"fragment {d.get('id')}: committing a fragment with overlays is not supported")
    pb = table_pb2.DataFragment(id=int(d.get("id") or 0), physical_rows=int(d["physical_rows"]))
    for f in d.get("files", []):
        df = pb.files.add(
            path=str(f["path"]),
            fields=[int(x) for x in f["fields"]],
            column_indices=[int(x) for x in f.get("column_indices", [])],
            file_major_version=int(f.get("file_major_version") or 0),
            file_minor_version=int(f.get("file_minor_version") or 0),
            file_size_bytes=int(f.get("file_size_bytes") or 0),
        )
        if f.get("base_id") is not None:
            df.base_id = int(f["base_id"])
    return FragmentMetadata.from_pb(pb)


class LanceOperation:
    """The operations ``LanceDataset.commit`` accepts (pylance's ``lance.LanceOperation`` names)."""

    class BaseOperation:
        """A change to commit as one new version."""

    @dataclass
    class Append(BaseOperation):
        """Add fragments to the dataset at ``read_version`` (their ids are assigned at commit)."""

        fragments: list[Any] = field(default_factory=list)

    @dataclass
    class Overwrite(BaseOperation):
        """Replace the dataset (or create it) with ``fragments`` of ``new_schema``."""

        new_schema: pa.Schema
        fragments: list[Any] = field(default_factory=list)


def commit_operation(
    base_uri: str | os.PathLike[str] | LanceDataset,
    operation: LanceOperation.BaseOperation,
    read_version: int | None = None,
    *,
    storage_options: dict[str, Any] | None = None,
    enable_stable_row_ids: bool | None = None,
) -> LanceDataset:
    """Commit ``operation`` as one new version (``LanceDataset.commit``)."""
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.write import commit

    if isinstance(base_uri, LanceDataset):
        storage_options = storage_options or base_uri.storage_options
        base_uri = base_uri.uri
    if isinstance(operation, LanceOperation.Append):
        if read_version is None:
            raise ValueError("read_version is required for all operations except Overwrite and Restore")
        frags = [as_fragment_metadata(f) for f in operation.fragments]
        return commit(base_uri, "append", fragments=frags, read_version=read_version, storage_options=storage_options)
    if isinstance(operation, LanceOperation.Overwrite):
        frags = [as_fragment_metadata(f) for f in operation.fragments]
        schema = operation.new_schema
        if not isinstance(schema, pa.Schema):
            raise TypeError(f"Overwrite.new_schema must be a pyarrow.Schema, got {type(schema).__name__}")
        return commit(
            base_uri,
            "overwrite",
            fragments=frags,
            schema=schema,
            read_version=read_version,
            storage_options=storage_options,
            enable_stable_row_ids=bool(enable_stable_row_ids),
        )
    raise NotImplementedError(
        f"LanceDataset.commit of {type(operation).__name__} is not supported by lancelot (Append and Overwrite are)"
    )
