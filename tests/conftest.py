"""Fixtures shared by every test package: the local S3 endpoint (``s3_server``, ``s3_dataset``,
tests/s3.py).  Each package's own fixtures live in its conftest.py, its helpers in helpers.py."""

pytest_plugins = ["tests.s3"]
