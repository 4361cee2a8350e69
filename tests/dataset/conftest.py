"""Fixtures the dataset tests share (their shared functions are in tests/dataset/helpers.py; the S3
endpoint's fixtures come from tests/s3.py through tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

from tests.dataset.helpers import table, twins


@pytest.fixture
def twin_paths(tmp_path: Path) -> tuple[str, str]:
    """(pylance's path, lancelot's path): ``table()`` written by pylance into each (2.2 files of 15 rows), for the
    tests of an operation that changes data: pylance runs it on the first, lancelot on the second."""
    return twins(tmp_path, table())


@pytest.fixture(scope="module")
def two_fragments(tmp_path_factory: pytest.TempPathFactory) -> str:
    """8 rows (``id``, ``s``) in two fragments of 4 written by pylance, row id=1 deleted: read-only (a test that
    changes it works on ``copies``)."""
    p = str(tmp_path_factory.mktemp("two_fragments") / "d")
    lance.write_dataset(pa.table({"id": range(8), "s": [f"s{i}" for i in range(8)]}), p, max_rows_per_file=4)
    lance.dataset(p).delete("id = 1")
    return p
