"""Which files a path names: a file, a directory of ``.lance`` files, or a glob.

Like Spark's file sources, names starting with ``_`` or ``.`` are hidden (temporary files live under such names), and a
directory is not searched recursively.  Local paths and ``file://`` URLs only (datasets, read through
lancelot/spark/dataset_scan.py, may live on any store)."""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Mapping

from lancelot.errors import LanceError

SUFFIX = ".lance"
GLOB_CHARS = set("*?[")


def local_path(path: str) -> str:
    """A local path for ``path`` (``file://`` URLs accepted); other URLs are refused."""
    if path.startswith("file://"):
        return path[len("file://") :]
    if "://" in path:
        raise LanceError(f"only local paths are supported by the Spark data source, not {path!r}")
    return path


def is_data_file(name: str) -> bool:
    """A visible Lance data file name (not hidden, ends in .lance)."""
    base = os.path.basename(name)
    return base.endswith(SUFFIX) and not base.startswith(("_", "."))


def list_data_files(directory: str) -> list[str]:
    """The visible ``.lance`` files directly in ``directory``, sorted by name ([] if it does not exist)."""
    try:
        names = [e.name for e in os.scandir(directory) if is_data_file(e.name) and e.is_file()]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [os.path.join(directory, n) for n in sorted(names)]


def resolve_files(paths: list[str]) -> list[str]:
    """Expand files, directories and globs into the data files they name, in a stable order."""
    out: list[str] = []
    visible: dict[str, set[str]] = {}
    for raw in paths:
        p = local_path(raw)
        if GLOB_CHARS & set(p):
            matches = sorted(glob.glob(p))
            if not matches:
                raise LanceError(f"no file matches {raw!r}")
            for m in matches:
                if os.path.isdir(m):
                    out += list_data_files(m)
                elif is_data_file(m):
                    parent = os.path.dirname(m) or "."
                    if parent not in visible:
                        visible[parent] = {os.path.basename(p) for p in list_data_files(parent)}
                    if os.path.basename(m) in visible[parent]:
                        out.append(m)
        elif os.path.isdir(p):
            found = list_data_files(p)
            if not found:
                raise LanceError(f"no {SUFFIX} files in directory {raw!r}")
            out += found
        elif os.path.isfile(p):
            out.append(p)
        else:
            raise LanceError(f"no such file or directory: {raw!r}")
    if not out:
        raise LanceError(f"no {SUFFIX} files found in {paths!r}")
    return list(dict.fromkeys(out))  # without repeats, in first-seen order


def paths_option(options: Mapping[str, str]) -> list[str]:
    """The paths given to ``load(...)``: the ``path`` option, or ``paths`` (a JSON list, several paths)."""
    paths: list[str] = []
    if options.get("paths"):
        raw = options["paths"]
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = [p for p in raw.split(",") if p]
        paths += [str(p) for p in (parsed if isinstance(parsed, list) else [parsed])]
    if options.get("path"):
        paths.append(options["path"])
    if not paths:
        raise LanceError('the "lance" data source needs a path: spark.read.format("lance").load(path)')
    return paths
