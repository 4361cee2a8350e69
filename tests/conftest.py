"""Fixtures shared by every test package: the local S3 endpoint (``s3_server``, ``s3_dataset``,
tests/s3.py).  A package's own fixtures live in its conftest.py, its shared functions in its
helpers.py, and those of several packages in tests/helpers.py."""

import pytest

pytest_plugins = ["tests.s3"]

#: modules outside tests/spark whose tests use the shared Spark session (tests/spark/sessions.py)
SPARK_MODULES = {"tests/cli/test_smoke_min.py"}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`make test` runs two pytest-xdist workers; each gets whole test files, so a file's module-scoped
    fixtures (benchmark runs, datasets written once) are built once, and the Spark package goes to one
    worker as a unit, sharing its sessions in the order tests/spark/conftest.py sorts them; with it the
    other module that starts the shared local session (``SPARK_MODULES``), so one worker alone runs a JVM.
    (xdist's own ``--dist loadgroup`` marks do not take with pytest 9.2 and xdist 3.8: the tests of one
    group ran on both workers.)"""
    from xdist.scheduler import LoadScopeScheduling

    class FilesAndSpark(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "tests/spark" if path.startswith("tests/spark/") or path in SPARK_MODULES else path

    return FilesAndSpark(config, log)
