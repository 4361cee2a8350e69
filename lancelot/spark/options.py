"""Options of the "lance" data source that concern datasets: storage settings, time travel, paths.

Spark hands a data source its options as one case-insensitive string map, and pickles the reader and writer (options
included) to every executor: storage settings given here therefore reach every task.  Two spellings, merged (the second
wins):

* ``.option("storage_options", json.dumps({...}))``: any JSON object (nested values such as s3fs's ``client_kwargs``
  included);
* ``.option("storage.<key>", value)``: one string setting per option.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any, overload

from lancelot.errors import LanceError

STORAGE_PREFIX = "storage."


def storage_options(options: Mapping[str, str]) -> dict[str, Any] | None:
    """The storage settings the options carry (None: none given)."""
    out: dict[str, Any] = {}
    raw = options.get("storage_options")
    if raw:
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else dict(raw)
        except ValueError as e:
            raise LanceError(f"option storage_options must be a JSON object: {e}") from None
        if not isinstance(parsed, dict):
            raise LanceError("option storage_options must be a JSON object")
        out.update(parsed)
    for k, v in options.items():
        if k.lower().startswith(STORAGE_PREFIX):
            out[k[len(STORAGE_PREFIX) :]] = v
    return out or None


@overload
def int_option(options: Mapping[str, str], name: str, default: int) -> int: ...
@overload
def int_option(options: Mapping[str, str], name: str, default: None) -> int | None: ...
def int_option(options: Mapping[str, str], name: str, default: int | None) -> int | None:
    """A positive integer option (``default`` when absent or empty)."""
    raw = options.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(str(raw).replace("_", ""))
    except ValueError:
        raise LanceError(f"option {name!r} must be an integer, not {raw!r}") from None
    if value <= 0:
        raise LanceError(f"option {name!r} must be positive, not {value}")
    return value


def is_url(path: str) -> bool:
    return "://" in path


def dataset_version(uri: str, storage: dict[str, Any] | None) -> int | None:
    """The latest version of the dataset at ``uri`` (None: no dataset there)."""
    from lancelot.dataset.commit import list_versions
    from lancelot.dataset.store import ObjectStore

    try:
        store = ObjectStore(uri, storage)
        return list_versions(store, store.uri).latest
    except FileNotFoundError:
        return None


def is_dataset(uri: str, storage: dict[str, Any] | None) -> bool:
    """Whether ``uri`` holds a Lance dataset (a ``_versions/`` directory with a manifest)."""
    import os

    if not is_url(uri) and not os.path.isdir(os.path.join(uri, "_versions")):
        return False
    return dataset_version(uri, storage) is not None


def parse_timestamp(raw: str) -> dt.datetime:
    """An ISO 8601 time (a naive one is UTC) or seconds since the epoch."""
    s = str(raw).strip()
    try:
        return dt.datetime.fromtimestamp(float(s), dt.timezone.utc)
    except ValueError:
        pass
    try:
        t = dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise LanceError(f"option timestamp must be an ISO 8601 time or epoch seconds, not {raw!r}") from None
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


def read_version_option(options: Mapping[str, str]) -> tuple[int | None, dt.datetime | None]:
    """The ``version`` (an integer) and ``timestamp`` read options; at most one may be given."""
    v, ts = options.get("version"), options.get("timestamp")
    if v not in (None, "") and ts not in (None, ""):
        raise LanceError("give either option version or option timestamp, not both")
    version = None
    if v not in (None, ""):
        try:
            version = int(str(v))
        except ValueError:
            raise LanceError(f"option version must be a dataset version number, not {v!r}") from None
        if version < 1:
            raise LanceError(f"option version must be 1 or more, not {version}")
    return version, (parse_timestamp(ts) if ts not in (None, "") else None)
