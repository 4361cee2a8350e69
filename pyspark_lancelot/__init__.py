"""Makes ``spark.read.format("lance")`` work without ``lancelot.spark.register(spark)``.

pyspark 4.x looks for Python data sources by a naming convention: when a Spark JVM first needs
its data source registry, a Python worker imports every top-level module whose name starts with
``pyspark_`` (``pkgutil.iter_modules`` over its ``sys.path``) and registers the ``DefaultSource``
class of each (pyspark/sql/worker/lookup_data_sources.py).  This module is that entry: its
``DefaultSource`` is lancelot's "lance" source with the default settings (filter pushdown off,
docs/SPARK.md).  ``lancelot.spark.register(spark, ...)`` still works and takes precedence (Spark
logs a warning that it replaces the statically registered source).
"""

from lancelot.spark.source import LanceDataSource as DefaultSource

__all__ = ["DefaultSource"]
