"""pylance's two-phase write API: ``LanceFragment.create`` / ``write_fragments`` write data files,
``LanceDataset.commit(uri, LanceOperation.Append | Overwrite, read_version)`` makes them one version.

This is the protocol distributed writers (Ray, Daft, Spark jobs) use: workers write fragments and send their metadata to
a driver, which commits once. The operations map onto the transaction.proto ``Append`` and ``Overwrite`` messages that
``write.commit`` already builds. Fragments may come from lancelot (``FragmentMetadata``) or from pylance (its
``FragmentMetadata``, read through its ``to_json()`` dict), so a driver of either library can commit the other's files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lancelot.dataset.fragment_metadata import FragmentMetadata, as_data_file
from lancelot.format.pb import table_pb2

if TYPE_CHECKING:
    pass


def as_fragment_metadata(frag: Any) -> FragmentMetadata:
    """lancelot's FragmentMetadata of a lancelot or pylance fragment description (pylance's through its ``to_json()``
    dict: files, deletion file, inline row ids and row versions)."""
    if isinstance(frag, FragmentMetadata):
        return frag
    if isinstance(frag, table_pb2.DataFragment):
        return FragmentMetadata.from_pb(frag)
    to_json = getattr(frag, "to_json", None)
    d = to_json() if callable(to_json) else frag
    if isinstance(d, str):
        return FragmentMetadata.from_json(d)
    if not isinstance(d, dict):
        raise TypeError(f"expected a FragmentMetadata, got {type(frag).__name__}")
    if d.get("overlays"):
        raise ValueError(f"fragment {d.get('id')}: committing a fragment with overlays is not supported")
    pb = table_pb2.DataFragment(id=int(d.get("id") or 0), physical_rows=int(d["physical_rows"]))
    for f in d.get("files", []):
        pb.files.append(as_data_file(f))
    dfile = d.get("deletion_file")
    if dfile is not None:
        kind = str(dfile.get("file_type", "array")).lower()
        pb.deletion_file.file_type = (
            table_pb2.DeletionFile.BITMAP if kind == "bitmap" else table_pb2.DeletionFile.ARROW_ARRAY
        )
        pb.deletion_file.read_version = int(dfile.get("read_version") or 0)
        pb.deletion_file.id = int(dfile.get("id") or 0)
        pb.deletion_file.num_deleted_rows = int(dfile.get("num_deleted_rows") or 0)
        if dfile.get("base_id") is not None:
            pb.deletion_file.base_id = int(dfile["base_id"])
    for key, target in (
        ("row_id_meta", "inline_row_ids"),
        ("created_at_version_meta", "inline_created_at_versions"),
        ("last_updated_at_version_meta", "inline_last_updated_at_versions"),
    ):
        meta = d.get(key)
        if meta is None:
            continue
        inline = meta.get("Inline", meta.get("inline")) if isinstance(meta, dict) else None
        if inline is None:
            raise ValueError(f"fragment {d.get('id')}: committing a fragment with an external {key} is not supported")
        setattr(pb, target, bytes(inline))
    return FragmentMetadata.from_pb(pb)


class LanceOperation:
    """The operations ``LanceDataset.commit`` accepts (pylance's ``lance.LanceOperation`` names, fields and defaults;
    transaction.proto's messages). Fragments may be lancelot's or pylance's ``FragmentMetadata``; schemas a
    ``LanceSchema`` (field ids kept) or a ``pyarrow.Schema`` (ids by position, as pylance assigns them)."""

    class BaseOperation:
        """A change to commit as one new version."""

    @dataclass
    class Overwrite(BaseOperation):
        """Replace the dataset (or create it) with ``fragments`` of ``new_schema``."""

        new_schema: Any
        fragments: list[Any] = field(default_factory=list)
        initial_bases: list[Any] | None = None

    @dataclass
    class Append(BaseOperation):
        """Add fragments to the dataset at ``read_version`` (their ids are assigned at commit)."""

        fragments: list[Any] = field(default_factory=list)

    @dataclass
    class Delete(BaseOperation):
        """Fragments with new deletion files, and ids of fragments deleted entirely."""

        updated_fragments: list[Any]
        deleted_fragment_ids: list[int]
        predicate: str

    @dataclass
    class Update(BaseOperation):
        """Rows rewritten: old fragments removed or given deletion files, new fragments added (their first rows may
        carry stable row ids over in ``row_id_meta``; row versions are derived at commit)."""

        removed_fragment_ids: list[int] = field(default_factory=list)
        updated_fragments: list[Any] = field(default_factory=list)
        new_fragments: list[Any] = field(default_factory=list)
        fields_modified: list[int] = field(default_factory=list)
        fields_for_preserving_frag_bitmap: list[int] = field(default_factory=list)
        update_mode: str = ""
        updated_fragment_offsets: dict[int, bytes] | None = None

    @dataclass
    class Merge(BaseOperation):
        """New columns: every fragment of the dataset (with its new data files) and the new schema."""

        fragments: list[Any]
        schema: Any
        preserves_nullability: bool = False

    @dataclass
    class Project(BaseOperation):
        """A new schema over the same data (dropped or renamed columns)."""

        schema: Any
        preserves_nullability: bool = False

    @dataclass
    class Restore(BaseOperation):
        """Make ``version`` the latest again."""

        version: int

    @dataclass
    class DataReplacementGroup:
        """A new data file for fragment ``fragment_id``, replacing the file with the same fields."""

        fragment_id: int
        new_file: Any

    @dataclass
    class DataReplacement(BaseOperation):
        """Data files replaced in place (same fields, same rows)."""

        replacements: list[LanceOperation.DataReplacementGroup]

    @dataclass
    class RewriteGroup:
        """Old fragments and the new ones their rows were rewritten into (a compaction's group)."""

        old_fragments: list[Any]
        new_fragments: list[Any]

    @dataclass
    class RewrittenIndex:
        """An index rewritten for the new row addresses of a Rewrite."""

        old_id: str
        new_id: str
        new_details_type_url: str
        new_details_value: bytes
        new_index_version: int

    @dataclass
    class Rewrite(BaseOperation):
        """A compaction (read from the history; commit it with ``compact_files``)."""

        groups: list[LanceOperation.RewriteGroup]
        rewritten_indices: list[LanceOperation.RewrittenIndex]

    @dataclass
    class Clone(BaseOperation):
        """A new dataset cloning ``ref_path`` at ``ref_version`` (shallow: its files referenced through a base path,
        none copied)."""

        is_shallow: bool
        ref_name: str | None
        ref_version: int
        ref_path: str
        branch_name: str | None = None

    @dataclass
    class CreateIndex(BaseOperation):
        """Indices added and removed: pylance's ``Index`` values (or ``IndexMetadata`` messages) whose files are in
        ``_indices/``."""

        new_indices: list[Any]
        removed_indices: list[Any]

    @dataclass
    class UpdateMap:
        """Keys to set (None: remove), or the whole map replaced."""

        updates: dict[str, str | None]
        replace: bool = False

    @dataclass
    class UpdateConfig(BaseOperation):
        """Config, table metadata, schema metadata and field metadata changes."""

        config_updates: LanceOperation.UpdateMap | None = None
        table_metadata_updates: LanceOperation.UpdateMap | None = None
        schema_metadata_updates: LanceOperation.UpdateMap | None = None
        field_metadata_updates: dict[int, LanceOperation.UpdateMap] | None = None
