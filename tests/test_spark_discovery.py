"""``spark.read.format("lance")`` without ``register(spark)``: pyspark's own lookup of Python data
sources (the ``pyspark_*`` module naming convention, pyspark/sql/worker/lookup_data_sources.py)
finds the top-level ``pyspark_lancelot`` module's ``DefaultSource``, and the package ships it."""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import pytest
import tomllib

pytest.importorskip("pyspark")

from conftest_spark import spark_session  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def test_pysparks_lookup_finds_the_lance_source(monkeypatch):
    """What Spark's lookup worker sends the JVM: the name "lance" and the pickled default source."""
    from pyspark.serializers import UTF8Deserializer, read_int
    from pyspark.sql.worker import lookup_data_sources
    from pyspark.worker_util import pickleSer

    from lancelot.spark import LanceDataSource

    monkeypatch.syspath_prepend(str(ROOT))
    out = io.BytesIO()
    lookup_data_sources._main(io.BytesIO(), out)
    out.seek(0)
    found = {}
    for _ in range(read_int(out)):
        name = UTF8Deserializer().loads(out)
        found[name] = pickleSer._read_with_length(out)
    assert found.get("lance") is LanceDataSource  # the default settings: no filter pushdown
    assert pickle.loads(pickle.dumps(found["lance"])) is LanceDataSource


def test_the_package_ships_the_module():
    from setuptools import find_packages

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    assert "pyspark_lancelot" in find_packages(str(ROOT), include=cfg["include"])


def test_the_jvm_registered_it_statically():
    """The shared session's JVM looked Python data sources up with the repository on its workers'
    path (tests/conftest_spark.py), so "lance" is among its static sources, registered or not."""
    spark = spark_session()
    builders = spark._jvm.org.apache.spark.sql.execution.datasources.DataSourceManager.dataSourceBuilders()
    assert builders.isDefined() and builders.get().contains("lance")
