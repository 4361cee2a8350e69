"""Fixtures shared by every test package: the local S3 endpoint (``s3_server``, ``s3_dataset``,
tests/s3.py).  A package's own fixtures live in its conftest.py, its shared functions in its
helpers.py, and those of several packages in tests/helpers.py."""

pytest_plugins = ["tests.s3"]
