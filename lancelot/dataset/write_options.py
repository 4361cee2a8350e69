"""The options of one ``write_dataset`` call, gathered once (``WriteOptions``) and handed down to
the writing machinery (writing.py), plus what two of them mean in the table format:

- ``auto_cleanup_options`` (pylance's ``AutoCleanupConfig``): two table config keys, set when the
  write creates the dataset (Overwrite transaction, ``config_upsert_values``);
- ``progress`` (pylance's ``FragmentWriteProgress``): ``begin`` when a data file is opened,
  ``complete`` when one is closed because it is full (rows or bytes), as pylance 14 calls them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lancelot.errors import LanceValueError

DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024
#: pylance's default: 90 GiB (object stores cap a file at 100 GB)
DEFAULT_MAX_BYTES_PER_FILE = 90 * 1024 * 1024 * 1024
AUTO_CLEANUP_INTERVAL = "lance.auto_cleanup.interval"
AUTO_CLEANUP_OLDER_THAN = "lance.auto_cleanup.older_than"
#: what pylance stores for a key the ``AutoCleanupConfig`` leaves out (every 20 versions, 14 days)
_CLEANUP_DEFAULTS = {"interval": 20, "older_than_seconds": 14 * 86400}


@dataclass(frozen=True)
class WriteOptions:
    """``write_dataset``'s keyword options (pylance's names and defaults; write.py documents them)."""

    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE
    max_rows_per_group: int = 1024
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE
    data_storage_version: str | None = None
    storage_options: dict[str, Any] | None = None
    enable_stable_row_ids: bool = False
    profile: str | None = None
    max_page_bytes: int | None = None
    allow_external_blob_outside_bases: bool = False
    commit_lock: Any = None
    progress: Any = None
    enable_v2_manifest_paths: bool = True
    auto_cleanup_options: Mapping[str, int] | None = None
    commit_message: str | None = None
    transaction_properties: dict[str, str] | None = None
    data_cache_bytes: int | None = None
    use_legacy_format: bool | None = None
    namespace_client: Any = None
    table_id: list[str] | None = None
    session: Any = None

    @classmethod
    def of(cls, args: Mapping[str, Any], *, strict: bool = False) -> WriteOptions:
        """The options among a call's arguments (``write_dataset``'s ``locals()``); ``strict``: any
        other name is a TypeError, as for a function (``insert``'s keywords)."""
        names = _NAMES if cls is WriteOptions else {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in args.items() if k in names or strict})

    def replace(self, **changes: Any) -> WriteOptions:
        """These options with ``changes`` (themselves when nothing changes)."""
        if all(k in _NAMES and getattr(self, k) is v for k, v in changes.items()):
            return self
        return dataclasses.replace(self, **changes)


_NAMES = frozenset(f.name for f in dataclasses.fields(WriteOptions))


def humantime(seconds: int) -> str:
    """A duration as Rust's ``humantime`` prints it (what pylance stores: ``"1day 1h 1m 1s"``)."""
    if seconds <= 0:
        return "0s"
    out = []
    rest = seconds
    for unit, size in (("year", 31_557_600), ("month", 2_630_016), ("day", 86_400)):
        n, rest = divmod(rest, size)
        if n:
            out.append(f"{n}{unit}{'s' if n > 1 else ''}")
    for unit, size in (("h", 3600), ("m", 60), ("s", 1)):
        n, rest = divmod(rest, size)
        if n:
            out.append(f"{n}{unit}")
    return " ".join(out)


def auto_cleanup_config(options: Mapping[str, int] | None) -> dict[str, str]:
    """The table config of ``auto_cleanup_options`` (``{"interval": n, "older_than_seconds": s}``):
    a key left out (or negative, which pylance cannot take) is pylance's default."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise LanceValueError(f"auto_cleanup_options must be a dict (AutoCleanupConfig), got {type(options).__name__}")
    got = {k: options.get(k) for k in _CLEANUP_DEFAULTS}
    val = {k: int(v) if v is not None and int(v) >= 0 else _CLEANUP_DEFAULTS[k] for k, v in got.items()}
    return {AUTO_CLEANUP_INTERVAL: str(val["interval"]), AUTO_CLEANUP_OLDER_THAN: humantime(val["older_than_seconds"])}


def progress_begin(progress: Any) -> None:
    """Tell ``progress`` a data file is opened (a fragment with no id, rows or files yet)."""
    if progress is not None:
        from lancelot.dataset.fragment_metadata import FragmentMetadata
        from lancelot.format.pb import table_pb2

        progress.begin(FragmentMetadata.from_pb(table_pb2.DataFragment()))


def progress_complete(progress: Any, fragment: Any) -> None:
    """Tell ``progress`` a full data file is closed (``fragment``: its FragmentMetadata)."""
    if progress is not None:
        progress.complete(fragment)
