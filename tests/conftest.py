"""Fixtures shared by every test package: the local S3 endpoint (``s3_server``, ``s3_dataset``,
tests/s3.py).  A package's own fixtures live in its conftest.py, its shared functions in its
helpers.py, and those of several packages in tests/helpers.py."""

import pytest

pytest_plugins = ["tests.s3"]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`make test` runs two pytest-xdist workers with ``--dist loadgroup``: each test file is one group, so
    its module-scoped fixtures (benchmark runs, datasets written once) are built on one worker only; the
    Spark package is a single group (tests/spark/conftest.py), sharing one worker's sessions."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
