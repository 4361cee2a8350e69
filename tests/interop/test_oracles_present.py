"""The oracles the interop and Spark tests need are installed: those tests skip only when
pylance, lancedb or pyspark is missing, so this test turns a missing oracle into a failure instead of a
silently smaller suite (the test command installs them all: pyproject.toml extras dev and spark)."""

from __future__ import annotations

import importlib.metadata

from packaging.version import Version


def test_pylance_oracle_is_installed_at_the_pinned_version():
    import lance.file  # noqa: F401  (the interop tests' writer and reader)

    assert importlib.metadata.version("pylance") == "14.0.2"


def test_lancedb_oracle_is_installed_at_the_pinned_version():
    import lancedb  # noqa: F401  (tests/interop/test_lancedb.py)

    assert importlib.metadata.version("lancedb") == "0.40.0"


def test_pyspark_is_installed_and_supported():
    import pyspark.sql.datasource  # noqa: F401  (the Python Data Source API the "lance" source uses)

    assert Version(importlib.metadata.version("pyspark")) >= Version("4.1")
