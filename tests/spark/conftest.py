"""Fixtures of the Spark tests (sessions themselves: tests/spark/sessions.py), and their order.

One JVM holds one classic SparkContext, so switching between ``local[2]`` and
``local-cluster[2,1,1024]`` stops one session and starts the other (executor JVMs included).  The
package's tests run grouped by the session they use: every ``local[2]`` test first (and those without
a session), then the local-cluster ones, then the Spark Connect ones: two classic sessions started in
all, instead of one per switch between the modules.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: the order of the session modes (the ``mode`` parameter of a test)
MODE_ORDER = {"local": 0, "local-cluster": 1, "connect": 2}
#: tests that start a local-cluster session themselves, without a ``mode`` parameter
CLUSTER_TESTS = {
    "test_two_attempts_of_a_task_both_write_and_the_version_holds_each_row_once",
    "test_a_retried_task_or_a_killed_worker_commits_once",
    "test_a_job_whose_tasks_all_fail_commits_nothing",
    "test_the_stream_sink_on_executor_jvms_lands_exactly_once",
}


def _mode_rank(item: pytest.Item) -> int:
    callspec = getattr(item, "callspec", None)
    mode = callspec.params.get("mode") if callspec is not None else None
    if isinstance(mode, str):
        return MODE_ORDER.get(mode, 0)
    return MODE_ORDER["local-cluster"] if getattr(item, "originalname", "") in CLUSTER_TESTS else 0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """This package's tests, stably sorted by session mode, in the places they held (tests/conftest.py
    sends them to one pytest-xdist worker as a unit, sharing its Spark sessions)."""
    here = Path(__file__).parent
    slots = [i for i, item in enumerate(items) if here in item.path.parents]
    for i, item in zip(slots, sorted((items[i] for i in slots), key=_mode_rank)):
        items[i] = item


@pytest.fixture
def spark():
    """The shared local[2] session, "lance" registered (restarted if another mode's test stopped it).
    tests/spark/test_datasets.py overrides it with one session per mode."""
    pytest.importorskip("pyspark")
    from tests.spark.sessions import spark_session

    return spark_session()
