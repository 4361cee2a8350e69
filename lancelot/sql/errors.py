"""The error of SQL filters and expressions (importable without loading the SQL parser)."""

from __future__ import annotations

from lancelot.errors import LanceError


class SqlError(LanceError, ValueError):
    """A SQL filter or expression lancelot cannot use: bad syntax, an unknown column, a type that
    does not fit.  Also a ``ValueError``, the class pylance raises for the same inputs."""


class CountFilterError(SqlError, OSError):
    """A filter ``count_rows`` cannot use: pylance's dataset and fragment ``count_rows`` raise OSError
    where its scans raise ValueError; this is both."""

    __str__ = BaseException.__str__  # the message, not "[Errno None] ..."
