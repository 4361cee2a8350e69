"""Helpers the Spark tests share: twin datasets pylance writes, and the files an operation leaves."""

from __future__ import annotations

import os

import lance
import pyarrow as pa

from lancelot.spark.writer import ENDED

#: where a dataset's data and deletion files live, and the records of unfinished Spark operations
FILE_DIRS = ("data", "_deletions", "_lancelot_spark")


def dataset_files(uri: str, dirs: tuple[str, ...] = FILE_DIRS) -> set[str]:
    """The files under ``dirs`` of the dataset: not the hidden temporaries a killed task may leave, nor
    the end markers of finished operations (to check that a failed or retried operation left nothing)."""
    out = set()
    for d in dirs:
        for root, _, names in os.walk(os.path.join(uri, d)):
            out |= {os.path.join(root, n) for n in names if not n.startswith(".") and not n.endswith(".ended")}
    return out


def pylance_twins(tmp_path, names: tuple[str, str] = ("spark", "library")) -> tuple[str, str]:
    """Two equal datasets written by pylance, named ``names``: three fragments of 200 rows."""
    t = pa.table({"id": pa.array(range(600), pa.int64()), "x": pa.array([i * 0.5 for i in range(600)])})
    uris = []
    for name in names:
        uri = str(tmp_path / name)
        lance.write_dataset(t, uri, max_rows_per_file=200)
        uris.append(uri)
    return uris[0], uris[1]


def only_markers(d: str) -> bool:
    """The writer's attempt records under ``d`` are gone; only the ended-job markers stay."""
    return all(n.endswith(ENDED) for n in os.listdir(d)) if os.path.isdir(d) else True
