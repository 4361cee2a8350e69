"""Manifests: the file ``_versions/<name>.manifest`` that defines one version of a dataset.

Layout (table format, "Manifest"): optional sections first (an inline Transaction, an
IndexSection), each a u32 little-endian length and a protobuf message; then the
Manifest message the same way; then a 16-byte footer: the manifest's position (i64),
two i16 version numbers (0, 2 as pylance 14 writes them) and the magic ``LANC``.

Two naming schemes: ``{version}.manifest`` (V1) and ``{u64::MAX - version:020}.manifest``
(V2, pylance 14's default: the newest sorts first).  A dataset keeps the scheme it has.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from lancelot.dataset.memo import IdentityMemo
from lancelot.errors import CorruptFileError, LanceError, MixedFileVersionsError, UnsupportedVersionError
from lancelot.extension_types import dataset_schema
from lancelot.format.pb import file_pb2, table_pb2, transaction_pb2
from lancelot.schema import from_descriptor

if TYPE_CHECKING:
    from lancelot.dataset.store import ObjectStore

MAGIC = b"LANC"
FOOTER = 16
MANIFEST_MAJOR, MANIFEST_MINOR = 0, 2
U64_MAX = (1 << 64) - 1
VERSIONS_DIR = "_versions"
HINT_FILE = "latest_version_hint.json"

# -- feature flags (table format, "Feature flags") ---------------------------------------
FLAG_DELETION_FILES = 1
FLAG_STABLE_ROW_IDS = 2
FLAG_USE_V2_FORMAT_DEPRECATED = 4
FLAG_TABLE_CONFIG = 8
FLAG_BASE_PATHS = 16
FLAG_DISABLE_TRANSACTION_FILE = 32
#: pylance 14: some data file's version differs from ``data_format`` (update's ``data_storage_version``); once set,
#: kept by later commits
FLAG_MIXED_FILE_VERSIONS = 256
FLAG_NAMES = {
    1: "deletion_files",
    2: "stable_row_ids",
    4: "use_v2_format",
    8: "table_config",
    16: "base_paths",
    32: "disable_transaction_file",
    256: "mixed_file_versions",
}
#: reader flags lancelot honours
READABLE_FLAGS = (
    FLAG_DELETION_FILES
    | FLAG_STABLE_ROW_IDS
    | FLAG_USE_V2_FORMAT_DEPRECATED
    | FLAG_TABLE_CONFIG
    | FLAG_BASE_PATHS
    | FLAG_MIXED_FILE_VERSIONS
)
#: writer flags lancelot maintains when it commits on top of a version
WRITABLE_FLAGS = READABLE_FLAGS | FLAG_DISABLE_TRANSACTION_FILE


class ManifestError(CorruptFileError):
    """A manifest that cannot be read (truncated, bad footer, bad protobuf)."""


def flag_names(bits: int) -> list[str]:
    out, b = [], 1
    while b <= bits:
        if bits & b:
            out.append(FLAG_NAMES.get(b, f"unknown flag {b}"))
        b <<= 1
    return out


def check_reader_flags(m: table_pb2.Manifest, where: str) -> None:
    """Refuse a version whose reader feature flags lancelot does not understand."""
    bad = m.reader_feature_flags & ~READABLE_FLAGS
    if bad:
        raise UnsupportedVersionError(
            f"{where}: reader feature flag(s) {', '.join(flag_names(bad))} (bits {bad}) are not supported by lancelot"
        )


def check_writer_flags(m: table_pb2.Manifest, where: str) -> None:
    bad = m.writer_feature_flags & ~WRITABLE_FLAGS
    if bad:
        raise UnsupportedVersionError(
            f"{where}: writer feature flag(s) {', '.join(flag_names(bad))} (bits {bad}): lancelot cannot write to it"
        )


def apply_feature_flags(m: table_pb2.Manifest, stable_row_ids: bool, *, deletions: bool | None = None) -> None:
    """Recompute the flags from the manifest's content, as the table format defines them
    (``deletions``: whether some fragment has a deletion file, when the caller knows it); ``mixed_file_versions``
    stays as the manifest had it."""
    r = w = m.reader_feature_flags & FLAG_MIXED_FILE_VERSIONS
    if deletions if deletions is not None else any(f.HasField("deletion_file") for f in m.fragments):
        r |= FLAG_DELETION_FILES
        w |= FLAG_DELETION_FILES
    if stable_row_ids:
        r |= FLAG_STABLE_ROW_IDS
        w |= FLAG_STABLE_ROW_IDS
    if m.config:
        w |= FLAG_TABLE_CONFIG
    if m.base_paths:
        r |= FLAG_BASE_PATHS
        w |= FLAG_BASE_PATHS
    m.reader_feature_flags, m.writer_feature_flags = r, w


# -- data storage version (table format, "Data storage version") -------------------------------

LEGACY_DATA_VERSION = "0.1"
#: DataFile (major, minor) -> the data storage version pylance reports for it
_FILE_VERSIONS = {
    (0, 0): "0.1",
    (0, 1): "0.1",
    (0, 2): "0.1",
    (0, 3): "2.0",
    (2, 0): "2.0",
    (2, 1): "2.1",
    (2, 2): "2.2",
    (2, 3): "2.3",
}


def files_data_version(m: table_pb2.Manifest, where: str) -> str | None:
    """The data storage version of the manifest's data files (None without any); files of two
    versions in one dataset are refused, as pylance refuses them."""
    seen: str | None = None
    for frag in m.fragments:
        for d in frag.files:
            v = _FILE_VERSIONS.get((int(d.file_major_version), int(d.file_minor_version)))
            if v is None:
                raise UnsupportedVersionError(
                    f"{where}: fragment {frag.id} data file {d.path} has unknown file version "
                    f"{d.file_major_version}.{d.file_minor_version}"
                )
            if seen is not None and v != seen:
                raise MixedFileVersionsError(
                    "The dataset contains a mixture of file versions. You will need to rollback to an earlier "
                    f"version: {where}: data files of versions {seen} and {v} (fragment {frag.id}, {d.path})"
                )
            seen = v
    return seen


def data_version(m: table_pb2.Manifest, where: str) -> str:
    """The dataset's data storage version as pylance reports it: ``data_format`` when the manifest
    has it; else (manifests before Lance 0.16) the version of its data files, or without files
    the writer flag ``use_v2_format`` (the current default version) or the legacy format."""
    if m.HasField("data_format") and m.data_format.version:
        return m.data_format.version
    found = files_data_version(m, where)
    if found is not None:
        return found
    if m.writer_feature_flags & FLAG_USE_V2_FORMAT_DEPRECATED:
        from lancelot.writer import resolve_version

        return str(resolve_version(None))
    return LEGACY_DATA_VERSION


def writable_data_version(m: table_pb2.Manifest, where: str) -> str | None:
    """The file version new data files of this dataset get (None: lancelot's default).

    A legacy version is what Lance 0.15-0.16 wrote for datasets whose files are 2.0 (pylance
    corrects it from the files, so does this); legacy data files themselves cannot be written
    by lancelot, and appending 2.x files beside them would make a dataset pylance refuses."""
    v = data_version(m, where)
    if v != LEGACY_DATA_VERSION:
        return v
    found = files_data_version(m, where)
    if found == LEGACY_DATA_VERSION:
        raise UnsupportedVersionError(
            f"{where}: the dataset's data files are legacy Lance files (format 0.1, before Lance 2.0); "
            f"lancelot reads and writes 2.x files only, and a dataset may not mix the two"
        )
    return found


def check_files_agree(m: table_pb2.Manifest, where: str) -> None:
    """Before a change: a manifest declaring the legacy version (or none) whose data files mix two
    versions is refused, as pylance's commit refuses it (MixedFileVersionsError), before any file is read."""
    if not (m.HasField("data_format") and m.data_format.version not in ("", LEGACY_DATA_VERSION)):
        files_data_version(m, where)


def fix_data_format(m: table_pb2.Manifest, where: str) -> None:
    """Record the data storage version of a manifest being committed: a legacy (or absent) one is
    replaced by the version of its data files, as pylance's commit does (its files must agree)."""
    declared = m.data_format.version if m.HasField("data_format") else ""
    if declared not in ("", LEGACY_DATA_VERSION):
        return  # (a declared version stands: no walk over every data file per commit)
    files = files_data_version(m, where)
    if files is not None and files != LEGACY_DATA_VERSION and declared in ("", LEGACY_DATA_VERSION):
        m.data_format.file_format = "lance"
        m.data_format.version = files


def rows_trusted(m: table_pb2.Manifest, frag: table_pb2.DataFragment) -> bool:
    """Whether a fragment's ``physical_rows`` can be used as it is: 0 means "not recorded" (Lance
    before 0.8), and manifests without a writer version (before 0.8.x) may hold wrong counts
    (Lance 0.8.0 stored live rows there), so the reference counts the data file instead."""
    return frag.physical_rows > 0 and m.HasField("writer_version")


def forget_untrusted_rows(m: table_pb2.Manifest) -> None:
    """Before a commit stamps lancelot's writer version on a manifest that had none: its row
    counts become "not recorded" (0), so no reader starts trusting counts it must not trust."""
    if not m.HasField("writer_version"):
        for f in m.fragments:
            f.physical_rows = 0


# -- names ------------------------------------------------------------------------------


def manifest_name(version: int, scheme: str) -> str:
    if version >= 1 << 63:  # a detached version (top bit set): ``d{version}``, in either scheme
        return f"d{version}.manifest"
    if scheme == "v2":
        return f"{U64_MAX - version:020d}.manifest"
    return f"{version}.manifest"


def parse_manifest_name(name: str) -> tuple[int, str] | None:
    """(version, scheme) of a manifest file name, None for other files."""
    if not name.endswith(".manifest"):
        return None
    stem = name[: -len(".manifest")]
    if not stem.isdigit():
        return None
    if len(stem) == 20:
        return U64_MAX - int(stem), "v2"
    return int(stem), "v1"


def migrate_names_v2(store: ObjectStore) -> None:
    """Rename every V1-named manifest of ``_versions/`` to its V2 name (pylance's ``migrate_manifest_paths_v2``): each
    written under the new name before the old one is removed, so no version is ever without a manifest.  Idempotent;
    not to be run while others write (as pylance's)."""
    for name in store.list_names(VERSIONS_DIR):
        parsed = parse_manifest_name(name)
        if parsed is not None and parsed[1] == "v1":
            store.put(f"{VERSIONS_DIR}/{manifest_name(parsed[0], 'v2')}", store.read(f"{VERSIONS_DIR}/{name}"))
            store.delete(f"{VERSIONS_DIR}/{name}")


# -- the container ---------------------------------------------------------------------------


@dataclass
class ManifestFile:
    """A parsed manifest file: the message, the raw index section (carried over on commit)
    and the inline transaction, if any.  ``owned``: parsed for one commit only, whose builder
    may take the message over instead of copying it (set by whoever read it for the commit,
    taken by operation.py's ``start_manifest``)."""

    manifest: table_pb2.Manifest
    index_section: bytes | None
    transaction: transaction_pb2.Transaction | None
    owned: bool = False


def _message_at(data: bytes | memoryview, pos: int, end: int, what: str) -> bytes | memoryview:
    if not 0 <= pos <= end - 4:
        raise ManifestError(f"{what} position {pos} outside the manifest's {end} bytes")
    (n,) = struct.unpack_from("<I", data, pos)
    if pos + 4 + n > end:
        raise ManifestError(f"{what} of {n} bytes at {pos} runs past the end ({end})")
    return data[pos + 4 : pos + 4 + n]


def parse_manifest(data: bytes, path: str) -> ManifestFile:
    """Parse a manifest file's bytes; any inconsistency is a ManifestError naming ``path``."""
    try:
        if len(data) < FOOTER + 4:
            raise ManifestError(f"only {len(data)} bytes: too short for a manifest")
        if data[-4:] != MAGIC:
            raise ManifestError("no LANC magic at the end (truncated or not a manifest)")
        pos, major, minor = struct.unpack_from("<qhh", data, len(data) - FOOTER)
        end = len(data) - FOOTER
        raw = _message_at(memoryview(data), pos, end, "manifest")  # (no copy of a manifest of many fragments)
        if pos + 4 + len(raw) != end:
            raise ManifestError(f"manifest message ends at {pos + 4 + len(raw)}, the footer starts at {end}")
        m = table_pb2.Manifest()
        try:
            m.ParseFromString(raw)
        except Exception as e:  # noqa: BLE001 - protobuf raises DecodeError and others
            raise ManifestError(f"manifest protobuf does not parse: {e}") from None
        index = None
        if m.HasField("index_section"):
            index = bytes(_message_at(data, m.index_section, pos, "index section"))
        txn = None
        if m.HasField("transaction_section"):
            txn = transaction_pb2.Transaction()
            try:
                txn.ParseFromString(_message_at(data, m.transaction_section, pos, "transaction section"))
            except ManifestError:
                raise
            except Exception as e:  # noqa: BLE001
                raise ManifestError(f"inline transaction does not parse: {e}") from None
        return ManifestFile(m, index, txn)
    except LanceError as e:
        raise e.at(path=path) from None


def serialize_manifest(
    m: table_pb2.Manifest, index_section: bytes | None = None, transaction: transaction_pb2.Transaction | None = None
) -> bytes:
    """The bytes of a manifest file (sets ``m.index_section`` / ``m.transaction_section``)."""
    parts: list[bytes] = []
    pos = 0

    def add(raw: bytes) -> int:
        nonlocal pos
        at = pos
        parts.append(struct.pack("<I", len(raw)))
        parts.append(raw)
        pos += 4 + len(raw)
        return at

    m.ClearField("index_section")
    m.ClearField("transaction_section")
    if transaction is not None:
        m.transaction_section = add(transaction.SerializeToString())
    if index_section is not None:
        m.index_section = add(index_section)
    at = add(m.SerializeToString())
    parts.append(struct.pack("<qhh", at, MANIFEST_MAJOR, MANIFEST_MINOR) + MAGIC)
    return b"".join(parts)


def field_paths(fields: Iterable[file_pb2.Field]) -> dict[str, file_pb2.Field]:
    """{dotted path ("s.x"): field} of a manifest's (pre-order) fields; a parent cycle in a damaged
    manifest stops after 256 hops instead of looping."""
    fields = list(fields)
    by_id = {int(f.id): f for f in fields}
    out = {}
    for f in fields:
        parts, p, hops = [f.name], int(f.parent_id), 0
        while p != -1 and p in by_id and hops < 256:
            parts.append(by_id[p].name)
            p, hops = int(by_id[p].parent_id), hops + 1
        out[".".join(reversed(parts))] = f
    return out


#: manifest_schema's results by the bytes of the schema they describe (a pa.Schema is immutable)
_SCHEMAS = IdentityMemo(64)


def manifest_schema(m: table_pb2.Manifest) -> pa.Schema:
    """The dataset schema a manifest's fields and schema metadata describe (JSON columns as arrow.json);
    built once per schema, as every commit and open of a dataset asks for it."""
    fd = file_pb2.FileDescriptor()
    fd.schema.fields.extend(m.fields)
    for k, v in m.schema_metadata.items():
        fd.schema.metadata[k] = v
    return _SCHEMAS.recall(fd.SerializeToString(deterministic=True), None, lambda: dataset_schema(from_descriptor(fd)))
