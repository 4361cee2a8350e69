"""A fragment's manifest entry as a value (table format, "Fragments"): ``FragmentMetadata``, the
picklable ``DataFragment`` that travels between processes, and what a manifest's entries alone tell
(``manifest_live_rows``).  Below ``Fragment`` (fragment.py) and the operations, which all take or
return these.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format

from lancelot.format.pb import table_pb2

DATA_DIR = "data"


@dataclass(frozen=True)
class FragmentMetadata:
    """One fragment's manifest entry (a serialized ``DataFragment`` message): what
    ``write_fragments`` returns and ``commit`` takes. Picklable and JSON-able, so Spark tasks
    or other processes can hand fragments to the one that commits (pylance's ``FragmentMetadata``).

    Args:
        message: The serialized ``DataFragment`` (``from_pb`` and ``from_json`` make one).
    """

    message: bytes

    @classmethod
    def from_pb(cls, frag: table_pb2.DataFragment) -> FragmentMetadata:
        """Wrap a ``DataFragment`` message.

        Args:
            frag: The message.

        Returns:
            Its ``FragmentMetadata``.
        """
        return cls(frag.SerializeToString())

    def to_pb(self) -> table_pb2.DataFragment:
        """The ``DataFragment`` message.

        Returns:
            A new message (changing it changes nothing here).
        """
        f = table_pb2.DataFragment()
        f.ParseFromString(self.message)
        return f

    def to_json(self) -> dict[str, Any]:
        """The fragment as pylance's ``FragmentMetadata.to_json()`` dict (JSON-serializable), so
        either library's driver can commit the other's fragments.

        Returns:
            A dict of plain values.
        """
        from lancelot.dataset.fragment_json import to_dict

        return to_dict(self.to_pb())

    @classmethod
    def from_json(cls, s: str | dict[str, Any]) -> FragmentMetadata:
        """Read what ``to_json`` gives, or pylance's, as a dict or as JSON text.

        Args:
            s: The dict, or its JSON text.

        Returns:
            The ``FragmentMetadata``.
        """
        from lancelot.dataset.fragment_json import from_dict

        d = json.loads(s) if isinstance(s, str | bytes) else s
        if isinstance(d, dict) and "physical_rows" not in d and "physicalRows" in d:  # protobuf JSON (older)
            return cls.from_pb(json_format.ParseDict(d, table_pb2.DataFragment()))
        return cls.from_pb(from_dict(d))

    @property
    def id(self) -> int:
        """The fragment id (0 until ``commit`` assigns one to a new fragment)."""
        return int(self.to_pb().id)

    @property
    def physical_rows(self) -> int:
        """Rows in the fragment's data files, deleted ones included."""
        return int(self.to_pb().physical_rows)

    @property
    def files(self) -> list[table_pb2.DataFile]:
        """The data files: ``DataFile`` messages (path, field ids, column indices, file version)."""
        return list(self.to_pb().files)

    @property
    def deletion_file(self) -> table_pb2.DeletionFile | None:
        """The ``DeletionFile`` message, or None without deletions."""
        f = self.to_pb()
        return f.deletion_file if f.HasField("deletion_file") else None

    @property
    def row_id_meta(self) -> bytes | None:
        """The fragment's stable row ids (an inline RowIdSequence), None without them."""
        f = self.to_pb()
        return bytes(f.inline_row_ids) if f.WhichOneof("row_id_sequence") == "inline_row_ids" else None

    @property
    def num_deleted_rows(self) -> int:
        """Deleted rows, as the deletion file's entry counts them (0 without deletions)."""
        f = self.to_pb()
        return int(f.deletion_file.num_deleted_rows) if f.HasField("deletion_file") else 0

    def __repr__(self) -> str:
        f = self.to_pb()
        return (
            f"FragmentMetadata(id={f.id}, physical_rows={f.physical_rows}, files={[d.path for d in f.files]}, "
            f"deleted={self.num_deleted_rows})"
        )


def manifest_live_rows(m: table_pb2.Manifest) -> int | None:
    """Live rows of a version from its manifest alone (physical rows less each deletion file's
    count), or None when some fragment's entry does not give them (then the files are read)."""
    if not m.HasField("writer_version"):  # (rows_trusted: such manifests' counts are not trusted)
        return None if len(m.fragments) else 0
    total = 0
    for f in m.fragments:
        n = f.physical_rows
        if n <= 0:
            return None
        if f.HasField("deletion_file"):
            gone = f.deletion_file.num_deleted_rows
            if not gone:
                return None
            n -= gone
        total += n
    return total
