"""The Lance file format versions lancelot reads and writes, and what differs between them.

Seeds 000/002 ("File Layout", "Format Versions"): the footer carries a (major, minor)
pair; 2.0 files carry 0.3 (or 2.0) and use the 2.0 ``ArrayEncoding`` trees, one column
per field; 2.1 and 2.2 use the structural encodings (only leaves own columns); 2.2 adds
maps, fixed-size lists of structs, variable-width packed structs, constant pages with a
value, large mini-block chunks and more dictionary compression.

Everything that depends on the version is here: parsing the public names (``stable``,
``next``), the (major, minor) on disk and the feature switches the encoders ask
(``version.large_chunks``...), so no other module compares version strings.  The reader's and
writer's per-version factories are ``lancelot.encodings``' (above this module: versions.py imports
no encodings).

2.3 (pylance's unstable "next") is written only when asked for by name ("2.3" / "next"), with
pylance's warning that the version is unstable; its pages are ``PlanarLayout`` messages
(encodings/planar/, docs/format-2.3.md).

``FileVersion`` is a ``str`` enum: it compares and prints as "2.0" / "2.1" / "2.2" / "2.3".
"""

from __future__ import annotations

import enum
import warnings
from typing import overload

from lancelot.errors import UnsupportedVersionError


class _Since:
    """A feature switch: True for the versions from ``since`` on (class access: the switch itself)."""

    def __init__(self, since: str, doc: str) -> None:
        self.key = (int(since[0]), int(since[2:]))
        self.__doc__ = f"{since}: {doc}"

    @overload
    def __get__(self, version: None, owner: type) -> _Since: ...
    @overload
    def __get__(self, version: FileVersion, owner: type) -> bool: ...
    def __get__(self, version: FileVersion | None, owner: type) -> bool | _Since:
        return self if version is None else version.key >= self.key


class _Switches:
    """What the encoders ask a version (``version.large_chunks``...), each with the version it came in."""

    structural = _Since("2.1", "structural encodings (mini-block, full-zip...); only leaves own columns")
    large_chunks = _Since("2.2", "mini-block chunks over 32 KiB (chunk sizes in u32 words, not u16)")
    constant_values = _Since("2.2", "constant-layout pages holding a value (2.1 has only all-null constant pages)")
    #: 2.1 keeps only the layers, or the levels in the page's own buffers
    flat_null_levels = _Since("2.2", "an all-null (constant) page's levels as Flat u16 buffers in the layout")
    maps = _Since("2.2", "map fields")
    fixed_size_list_structs = _Since("2.2", "fixed-size lists of structs")
    variable_packed_structs = _Since("2.2", "packed structs with string/binary children (VariablePackedStruct)")
    #: General-compressed with lz4, or (64-bit values) bit-packed, as pylance writes them; 2.1's are plain
    compressed_dictionaries = _Since("2.2", "page dictionaries compressed (lz4 or bit-packing)")
    planar = _Since("2.3", "pages are PlanarLayout messages (a structure and a value plane), not PageLayout")
    dictionary_64bit = _Since("2.2", "64-bit values are dictionary candidates (2.1: only 128-bit ones, as pylance)")


class FileVersion(_Switches, str, enum.Enum):
    """One Lance file format version (ordered by (major, minor)).

    A ``str`` enum (``enum.StrEnum`` needs Python 3.11; lancelot supports 3.10): ``str()`` and
    f-strings give the public name.
    """

    V2_0 = "2.0"
    V2_1 = "2.1"
    V2_2 = "2.2"
    V2_3 = "2.3"

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @property
    def key(self) -> tuple[int, int]:
        """(major, minor) of the public name, for ordering (a table: the writer asks its switches per page)."""
        return _KEYS[self._value_]

    # ordered by (major, minor), only against other FileVersions (equality stays str's: == "2.1" holds)
    def __lt__(self, other: object) -> bool:
        return self.key < other.key if isinstance(other, FileVersion) else NotImplemented

    def __le__(self, other: object) -> bool:
        return self.key <= other.key if isinstance(other, FileVersion) else NotImplemented

    def __gt__(self, other: object) -> bool:
        return self.key > other.key if isinstance(other, FileVersion) else NotImplemented

    def __ge__(self, other: object) -> bool:
        return self.key >= other.key if isinstance(other, FileVersion) else NotImplemented

    @property
    def disk(self) -> tuple[int, int]:
        """The (major, minor) written in the footer (2.0 files are written as 0.3, as pylance does)."""
        return (0, 3) if self is FileVersion.V2_0 else self.key


_KEYS: dict[str, tuple[int, int]] = {v._value_: (int(v._value_[0]), int(v._value_[2:])) for v in FileVersion}
for _v in FileVersion:  # each member answers its switches from its own dict (no call per question)
    vars(_v).update({k: s.__get__(_v, FileVersion) for k, s in vars(_Switches).items() if isinstance(s, _Since)})

#: the newest version the whole interop suite passes (what pylance 14 calls "stable")
DEFAULT = FileVersion.V2_2
#: public names -> version; "stable" and "next" mean what pylance 14 means by them
ALIASES: dict[str, FileVersion] = {
    **{v.value: v for v in FileVersion},
    "stable": FileVersion.V2_2,
    "next": FileVersion.V2_3,
}
#: names pylance 14 accepts for versions lancelot does not support: "legacy" is the v1 format
#: (0.1 / 0.2 on disk, neither read nor written)
NOT_SUPPORTED: dict[str, str] = {
    "legacy": "'legacy' is the v1 Lance format (0.1), which lancelot does not support",
    "0.1": "the v1 Lance format (0.1) is not supported",
}
#: the versions lancelot writes (all: ``resolve_writable`` refuses none)
WRITABLE: frozenset[FileVersion] = frozenset(FileVersion)
#: unstable versions: written only when named, with this warning (pylance 14 logs the same words)
UNSTABLE: dict[FileVersion, str] = {
    FileVersion.V2_3: (
        "You have requested an unstable format version.  Files written with this format version may not be "
        "readable in the future!  This is a development feature and should only be used for experimentation "
        "and never for production data."
    )
}
#: (major, minor) in a footer -> version; 2.0 files carry 0.3 or 2.0
ON_DISK: dict[tuple[int, int], FileVersion] = {
    (0, 3): FileVersion.V2_0,
    (2, 0): FileVersion.V2_0,
    (2, 1): FileVersion.V2_1,
    (2, 2): FileVersion.V2_2,
    (2, 3): FileVersion.V2_3,  # PlanarLayout pages (encodings/planar/)
}


def parse(version: str | FileVersion | None) -> FileVersion:
    """The version a public name means (None: the default); UnsupportedVersionError for any other name."""
    if isinstance(version, FileVersion):
        return version
    name = str(version if version is not None else DEFAULT.value)
    if name in NOT_SUPPORTED:
        raise UnsupportedVersionError(NOT_SUPPORTED[name])
    v = ALIASES.get(name)
    if v is None:
        raise UnsupportedVersionError(f"unknown file version {version!r} (use one of {sorted(ALIASES)})")
    return v


def resolve_writable(version: str | FileVersion | None) -> FileVersion:
    """``parse`` (lancelot writes every version it reads), warning (``UnstableVersionWarning``) that an
    unstable one was asked for, as pylance does."""
    v = parse(version)
    if v in UNSTABLE:
        warnings.warn(UNSTABLE[v], UnstableVersionWarning, stacklevel=1)  # once per process by default, as pylance
    return v


class UnstableVersionWarning(UserWarning):
    """A file version pylance calls unstable (2.3, "next") was asked for."""


def from_disk(major: int, minor: int, path: str | None = None) -> FileVersion:
    """The version of a footer's (major, minor); UnsupportedVersionError for legacy (v1) and unknown ones."""
    v = ON_DISK.get((major, minor))
    if v is not None:
        return v
    if (major, minor) in ((0, 1), (0, 2)):
        raise UnsupportedVersionError(f"legacy Lance format {major}.{minor} (v1) is not supported", path=path)
    raise UnsupportedVersionError(f"unknown file version {major}.{minor}", path=path)
