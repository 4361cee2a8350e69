"""``Snapshot``: one version of a dataset as read, and what is built from it on first use.

A ``LanceDataset`` shows one snapshot.  pylance's operations that commit (``delete``, ``update``, ``restore``...) move
the object they are called on to the version they create: lancelot's replace its snapshot
(``LanceDataset.move_to``), so nothing built for the old version (fragments, schema, file column maps) outlives it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lancelot.dataset.manifest import check_reader_flags
from lancelot.dataset.memo import IdentityMemo
from lancelot.errors import CorruptFileError

if TYPE_CHECKING:
    import pyarrow as pa

    from lancelot.dataset.commit import Versions
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.manifest import ManifestFile
    from lancelot.dataset.store import ObjectStore
    from lancelot.format.pb import table_pb2


@dataclass(eq=False, slots=True)
class Snapshot:
    """One version's manifest, the listing of versions it was found in, and what is built from them on first use."""

    #: the listing of ``_versions/`` (re-read when a version asked for is not in it)
    versions: Versions
    manifest_file: ManifestFile
    manifest: table_pb2.Manifest
    version: int
    #: the top-level field's name of each field id
    top_of_id: dict[int, str]
    #: built on first use (opening a dataset and counting its rows builds none of these); bases: stores by base path id
    fragments: list[Fragment] | None = None
    schema: pa.Schema | None = None
    live_rows: int | None = None
    bases: dict[int, ObjectStore] = field(default_factory=dict)
    #: each fragment id's position in the manifest (``get_fragment``: one lookup, not a search per call)
    fragment_positions: dict[int, int] | None = None
    #: what is worked out once for all the data files of one shape (fragment_columns.py, group_files.py)
    file_shapes: IdentityMemo = field(default_factory=lambda: IdentityMemo(512))

    @classmethod
    def read(cls, versions: Versions, mf: ManifestFile, uri: str) -> Snapshot:
        """The snapshot of a manifest just read (found in ``versions``), its reader flags and field tree checked."""
        m = mf.manifest
        where = f"dataset {uri!r} version {int(m.version)}"
        check_reader_flags(m, where)
        return cls(versions, mf, m, int(m.version), top_fields(m, f"{where}: schema"))


def top_fields(m: table_pb2.Manifest, where: str) -> dict[int, str]:
    """The top-level field's name of each field id of the schema, its field tree checked."""
    parent = {int(f.id): int(f.parent_id) for f in m.fields}
    name = {int(f.id): f.name for f in m.fields}
    if len(parent) != len(m.fields):
        raise CorruptFileError(f"{where}: field ids repeat")
    for fid, p in parent.items():
        if p != -1 and p not in parent:
            raise CorruptFileError(f"{where}: field {fid} names parent {p}, which is not in the schema")
    out = {}
    for fid in parent:
        top, hops = fid, 0
        while parent.get(top, -1) != -1 and hops < 256:
            top, hops = parent[top], hops + 1
        if parent.get(top, -1) == -1:
            out[fid] = name[top]
    return out
