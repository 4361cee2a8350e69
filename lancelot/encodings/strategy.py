"""The writer's encoding options of one field, from its Arrow field metadata (2.1/2.2).

pylance 14 reads these ``lance-encoding:*`` keys from a field's metadata
(the reference's ``constants.rs`` / ``compression_config.rs``); lancelot honours
the same keys with the same meaning:

* ``compression``: ``lz4`` / ``zstd`` wrap the page's values in General
  compression (mini-block chunks, or each full-zip value); ``fsst`` forces FSST
  on strings and binary, whatever the page size; ``none`` turns every value
  compression off (Flat / Variable only; dictionaries stay allowed, as in pylance);
* ``compression-level``: the zstd level (``BufferCompression.level``; stored
  with lz4 too, as pylance does);
* ``rle-threshold``: RLE is considered only when runs < threshold x values
  (default: whenever it is the smallest);
* ``bss``: ``on`` / ``off`` / ``auto`` byte-stream-split of 32/64-bit values,
  which only pays under General compression, so (as in pylance) it is used only
  together with ``compression`` lz4/zstd; ``auto`` keeps it when a sample
  compresses 5% smaller (pylance guesses from byte entropy instead);
* ``dict-divisor`` (default 2) and ``dict-size-ratio`` (default 0.8): a page is
  dictionary-encoded only when its cardinality is at most values / divisor and the
  dictionary form is under ratio x the plain size (pylance also caps the cardinality
  at 100,000; lancelot compares the sizes instead, the page size bounds the dictionary);
* ``dict-values-compression`` (``lz4``, ``zstd``, ``none``) and
  ``dict-values-compression-level``: the compression of the page dictionary
  (default: the smaller of plain and lz4 at 2.2, plain at 2.1);
* ``structural-encoding``: ``miniblock`` or ``fullzip`` forces the page layout
  (as in pylance, the top-level field's setting holds for all its leaves);
* ``packed`` (also the bare key ``packed``) on a struct: one packed-struct column;
* ``blob`` on a binary field: the blob layout (values out of line).

(What counts as packed or blob is ``lancelot.field_metadata``'s rule, shared with the readers.)

``WriteSettings`` is what the writer sets for every field (version, ``max_page_bytes``, ``profile``);
the field writers get it by keyword and resolve each leaf's ``EncodingOptions`` once, when they are
built.  The ``profile`` ("fast", "balanced" (default), "compact") is how hard the 2.1+ writer works
for small pages where the field's metadata does not decide
(lancelot/encodings/structural/write_profile.py).

A bad value raises UnsupportedEncodingError naming the field and the key.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa

from lancelot import field_metadata, versions
from lancelot.errors import UnsupportedEncodingError
from lancelot.field_metadata import PREFIX
from lancelot.versions import FileVersion

if TYPE_CHECKING:
    from lancelot.encodings.structural.write_profile import FilePrice

_Num = TypeVar("_Num", int, float)

COMPRESSIONS = ("lz4", "zstd", "fsst", "none")
BSS_MODES = ("auto", "on", "off")
STRUCTURAL = ("miniblock", "fullzip")
PROFILES = ("fast", "balanced", "compact")
DEFAULT_PROFILE = "balanced"


def check_profile(profile: str | None) -> str:
    """``profile`` or the default, checked (a ValueError names the choices)."""
    if profile is None:
        return DEFAULT_PROFILE
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, not {profile!r}")
    return profile


@dataclass(frozen=True)
class WriteSettings:
    """What a writer sets for every field of a file: its version, the largest page (bytes), the profile,
    how many columns the file has (0: unknown) and, under the compact profile, the file's price of a
    take's time (write_profile.FilePrice; without one, compact prices it by the column count)."""

    version: FileVersion
    max_page_bytes: int
    profile: str = DEFAULT_PROFILE
    columns: int = 0
    price: FilePrice | None = None  # the compact profile's, solved for the file (write_profile.FilePrice)

    def __post_init__(self) -> None:
        object.__setattr__(self, "version", versions.parse(self.version))
        object.__setattr__(self, "profile", check_profile(self.profile))
        if self.max_page_bytes <= 0:
            raise ValueError("max_page_bytes must be positive")


@dataclass(frozen=True)
class EncodingOptions:
    """What a field's metadata asks of its pages (defaults: lancelot's own choice)."""

    version: FileVersion = versions.DEFAULT
    compression: str | None = None
    compression_level: int | None = None
    rle_threshold: float | None = None
    bss: str = "auto"
    dict_divisor: int = 2
    dict_size_ratio: float = 0.8
    dict_values_compression: str | None = None
    dict_values_compression_level: int | None = None
    structural_encoding: str | None = None
    packed: bool = False
    blob: bool = False
    profile: str = DEFAULT_PROFILE
    columns: int = 0  # the file's columns (WriteSettings.columns)
    price: FilePrice | None = None  # WriteSettings.price

    def __post_init__(self) -> None:
        object.__setattr__(self, "version", versions.parse(self.version))  # "2.1" -> FileVersion.V2_1

    @property
    def general(self) -> str | None:
        """The General compression scheme asked for the values ("lz4", "zstd"), if any."""
        return self.compression if self.compression in ("lz4", "zstd") else None

    @property
    def plain_only(self) -> bool:
        return self.compression == "none"


def _meta(field: pa.Field) -> dict[str, str]:
    out = {}
    for k, v in (field.metadata or {}).items():
        key = k.decode() if isinstance(k, bytes) else str(k)
        out[key] = (v.decode() if isinstance(v, bytes) else str(v)).strip()
    return out


def _bad(field: pa.Field, key: str, value: str, want: str) -> UnsupportedEncodingError:
    return UnsupportedEncodingError(
        f"field {field.name!r}: {PREFIX}{key}={value!r} (expected {want})", column=field.name
    )


def _choice(field: pa.Field, meta: dict[str, str], key: str, allowed: tuple[str, ...]) -> str | None:
    value = meta.get(PREFIX + key)
    if value is None:
        return None
    if value.lower() not in allowed:
        raise _bad(field, key, value, " / ".join(allowed))
    return value.lower()


def _number(field: pa.Field, meta: dict[str, str], key: str, kind: type[_Num], lo: float, hi: float) -> _Num | None:
    value = meta.get(PREFIX + key)
    if value is None:
        return None
    try:
        x = kind(value)
    except ValueError:
        raise _bad(field, key, value, f"a {kind.__name__}") from None
    if not lo <= x <= hi:
        raise _bad(field, key, value, f"a number in [{lo}, {hi}]")
    return x


def options_for(
    field: pa.Field,
    version: str | FileVersion,
    *,
    structural_encoding: str | None = None,
    profile: str = DEFAULT_PROFILE,
    columns: int = 0,
    price: FilePrice | None = None,
) -> EncodingOptions:
    """The EncodingOptions of one (leaf or struct) field for a file of ``version``.

    ``structural_encoding``, when given, overrides the field's own (pylance takes the layout from
    the top-level field for all its leaves); ``profile`` and ``columns`` are the writer's.
    """
    version = versions.parse(version)
    meta = _meta(field)
    if not any(k.startswith(PREFIX) or k == field_metadata.LEGACY_PACKED_KEY for k in meta):
        return EncodingOptions(
            version=version, structural_encoding=structural_encoding, profile=profile, columns=columns, price=price
        )
    ratio = _number(field, meta, "dict-size-ratio", float, 1e-9, 1.0)
    divisor = _number(field, meta, "dict-divisor", int, 1, 1 << 62)
    opts = EncodingOptions(
        version=version,
        compression=_choice(field, meta, "compression", COMPRESSIONS),
        compression_level=_number(field, meta, "compression-level", int, -(1 << 17), 22),
        rle_threshold=_number(field, meta, "rle-threshold", float, 0.0, 1.0),
        bss=_choice(field, meta, "bss", BSS_MODES) or "auto",
        dict_divisor=divisor if divisor is not None else 2,
        dict_size_ratio=ratio if ratio is not None else 0.8,
        dict_values_compression=_choice(field, meta, "dict-values-compression", ("lz4", "zstd", "none")),
        dict_values_compression_level=_number(field, meta, "dict-values-compression-level", int, -(1 << 17), 22),
        structural_encoding=_choice(field, meta, "structural-encoding", STRUCTURAL),  # checked even if overridden
        packed=field_metadata.is_packed_struct(field, version),
        blob=field_metadata.asks_blob(field),
        profile=profile,
        columns=columns,
        price=price,
    )
    return replace(opts, structural_encoding=structural_encoding) if structural_encoding else opts
