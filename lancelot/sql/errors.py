"""The error of SQL filters and expressions (importable without loading the SQL parser)."""

from __future__ import annotations

from lancelot.errors import LanceError


class SqlError(LanceError, ValueError):
    """A SQL filter or expression lancelot cannot use: bad syntax, an unknown column, a type that
    does not fit.  Also a ``ValueError``, the class pylance raises for the same inputs."""
