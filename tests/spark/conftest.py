"""Fixtures of the Spark tests (sessions themselves: tests/spark/sessions.py)."""

from __future__ import annotations

import pytest


@pytest.fixture
def spark():
    """The shared local[2] session, "lance" registered (restarted if another mode's test stopped it).
    tests/spark/test_datasets.py overrides it with one session per mode."""
    pytest.importorskip("pyspark")
    from tests.spark.sessions import spark_session

    return spark_session()
