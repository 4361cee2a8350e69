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

from tests.spark.sessions import spark_session  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


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


def test_a_session_that_never_registered_reads_and_writes_lance(tmp_path):
    """The shared session's JVM looked Python data sources up with the repository on its workers'
    path (tests/spark/sessions.py); a new session (its own data source registry, nothing
    registered at run time) reads and appends through format("lance") without register()."""
    import lance
    import pyarrow as pa

    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": pa.array(range(300), pa.int64())}), uri, max_rows_per_file=100)
    from pyspark.sql.datasource import DataSource

    class Probe(DataSource):
        @classmethod
        def name(cls) -> str:
            return "lancelot_probe_registered_at_run_time"

    spark = spark_session()
    spark.dataSource.register(Probe)
    fresh = spark.newSession()
    registry = fresh._jsparkSession.sessionState().dataSourceManager()
    assert not registry.dataSourceExists(Probe.name())  # run-time registrations do not carry over
    assert registry.dataSourceExists("lance")
    df = fresh.read.format("lance").load(uri)
    assert sorted(r["id"] for r in df.collect()) == list(range(300))
    fresh.range(300, 310).write.format("lance").mode("append").save(uri)
    assert lance.dataset(uri).to_table().sort_by("id")["id"].to_pylist() == list(range(310))
