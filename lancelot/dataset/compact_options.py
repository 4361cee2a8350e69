"""Compaction options: pylance's ``CompactionOptions`` (the keyword arguments of ``optimize.compact_files``, the dict of
``Compaction.plan``) checked as pylance checks them, with the defaults the table config sets (keys
``lance.compaction.<option>``) and pylance's own.

Options that change the result: ``target_rows_per_fragment``, ``max_bytes_per_file`` (with ``batch_size``: a data file
closes once the bytes written reach it, checked after each batch read), ``materialize_deletions(_threshold)``,
``defer_index_remap``, ``compaction_mode``, ``max_source_fragments`` / ``_rows`` / ``_bytes``,
``excluded_fragment_ids``, ``data_storage_version``.  Performance-only ones are accepted and checked but change
nothing: ``num_threads`` (groups are rewritten one after another), ``io_buffer_size``, ``binary_copy_read_batch_bytes``
and ``max_rows_per_group`` (2.x files have no row groups)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lancelot.errors import LanceError, LanceValueError, OSErrorMessage, UnsupportedVersionError

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset

#: pylance's compaction modes; the binary-copy ones decide the grouping of whole fragments (compact_binary.py)
MODES = ("reencode", "try_binary_copy", "force_binary_copy")


class CompactionNotSupportedError(OSErrorMessage, LanceError, OSError):
    """A compaction option this dataset cannot take (pylance's "Not supported" / "Invalid user input" OSError)."""


def _uint(v: str) -> int | None:
    return int(v) if re.fullmatch(r"\+?[0-9]+", v) else None


def _bool(v: str) -> bool | None:
    return {"true": True, "false": False}.get(v.lower())


#: the options a table config key ``lance.compaction.<option>`` gives a default to: (parse, pylance's default)
CONFIG_DEFAULTS: dict[str, tuple[Callable[[str], Any], Any]] = {
    "target_rows_per_fragment": (_uint, 1024 * 1024),
    "max_rows_per_group": (_uint, 1024),
    "max_bytes_per_file": (_uint, None),
    "materialize_deletions": (_bool, True),
    "materialize_deletions_threshold": (lambda v: float(v) if re.fullmatch(r"[^\s_]+", v) else None, 0.1),
    "defer_index_remap": (_bool, False),
    "batch_size": (_uint, None),
    "compaction_mode": (lambda v: v if v in MODES else None, "reencode"),
    "binary_copy_read_batch_bytes": (_uint, 16 * 1024 * 1024),
    "max_source_fragments": (_uint, None),
    "max_source_rows": (_uint, None),
    "max_source_bytes": (_uint, None),
    "data_storage_version": (str, None),
}


@dataclass(frozen=True)
class Options:
    """Resolved compaction options (every one pylance 14 takes)."""

    target_rows_per_fragment: int = 1024 * 1024
    max_rows_per_group: int = 1024
    max_bytes_per_file: int | None = None
    materialize_deletions: bool = True
    materialize_deletions_threshold: float = 0.1
    num_threads: int | None = None
    batch_size: int | None = None
    io_buffer_size: int | None = None
    defer_index_remap: bool = False
    compaction_mode: str = "reencode"
    binary_copy_read_batch_bytes: int = 16 * 1024 * 1024
    max_source_fragments: int | None = None
    max_source_rows: int | None = None
    max_source_bytes: int | None = None
    excluded_fragment_ids: tuple[int, ...] = ()
    data_storage_version: str | None = None  # None: the dataset's

    def given(self) -> dict[str, Any]:
        """The options as a ``Compaction.plan`` dict (tasks carry it to workers)."""
        out = dataclasses.asdict(self)
        out["excluded_fragment_ids"] = list(self.excluded_fragment_ids)
        return out


_NAMES = {f.name for f in dataclasses.fields(Options)}
_INTS = {"target_rows_per_fragment", "max_rows_per_group", "max_bytes_per_file", "num_threads", "batch_size"} | {
    "io_buffer_size",
    "binary_copy_read_batch_bytes",
    "max_source_fragments",
    "max_source_rows",
    "max_source_bytes",
}


def _check_value(name: str, v: Any) -> Any:
    """A given option's value, typed as pylance converts it (TypeError, OverflowError for a negative count)."""
    if name in _INTS:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name}: {type(v).__name__!r} object cannot be interpreted as an integer")
        if v < 0:
            raise OverflowError(f"{name}: can't convert negative int to unsigned")
        return v
    if name in ("materialize_deletions", "defer_index_remap"):
        if not isinstance(v, bool):
            raise TypeError(f"{name}: {type(v).__name__!r} object cannot be converted to 'PyBool'")
        return v
    if name == "materialize_deletions_threshold":
        return float(v)
    if name == "excluded_fragment_ids":
        return tuple(sorted({_check_value("max_source_rows", i) for i in v}))
    if not isinstance(v, str):
        raise TypeError(f"{name}: {type(v).__name__!r} object cannot be converted to 'PyString'")
    return v


def resolve(ds: LanceDataset, options: Mapping[str, Any] | None) -> Options:
    """``options`` (None values: not given) over the table config's defaults and pylance's, checked: an unknown option
    or compaction mode, or a storage version that does not parse, is pylance's ValueError; a zero source limit or a
    storage version of the other format family its OSError; a config value that does not parse its ValueError."""
    given = {k: v for k, v in (options or {}).items() if v is not None}
    for k in given:
        if k not in _NAMES:
            raise LanceValueError(f"Invalid compaction option: {k}")
    values = {k: _check_value(k, v) for k, v in given.items()}
    for name, (parse, default) in CONFIG_DEFAULTS.items():
        text = ds.manifest.config.get(f"lance.compaction.{name}")
        if text is not None:
            try:
                value = parse(text)
            except ValueError:
                value = None
            if value is None:
                raise LanceValueError(f"dataset {ds.uri!r}: invalid value for lance.compaction.{name}: {text!r}")
            values.setdefault(name, value)
        elif default is not None:
            values.setdefault(name, default)
    if values["compaction_mode"] not in MODES:
        raise LanceValueError(
            f"Invalid compaction mode {values['compaction_mode']!r}. Valid values: " + ", ".join(map(repr, MODES))
        )
    for name in ("max_source_fragments", "max_source_rows", "max_source_bytes"):
        if values.get(name) == 0:
            raise CompactionNotSupportedError(f"{name} must be greater than 0 (use None for no limit)")
    if "data_storage_version" in values:
        values["data_storage_version"] = _data_version(ds, values["data_storage_version"])
    return Options(**values)


def _data_version(ds: LanceDataset, name: str) -> str:
    """The exact 2.x version a ``data_storage_version`` names (aliases resolved, as pylance's planner does)."""
    from lancelot.dataset.writing import storage_version

    text = name.strip().lower()
    if text in ("legacy", "0.1"):
        raise CompactionNotSupportedError(
            f"dataset {ds.uri!r}: cannot write data files in version 0.1 to a 2.x dataset: "
            "V1 and V2 storage versions cannot be mixed"
        )
    try:
        got = storage_version(text)
    except UnsupportedVersionError as e:
        raise LanceValueError(f"Unknown Lance storage version: {name} ({e})") from None
    assert got is not None
    return got
