"""The error of SQL filters and expressions (importable without loading the SQL parser)."""

from __future__ import annotations

from lancelot.errors import LanceError

#: how pylance's messages for a SQL filter or expression it cannot use begin
PREFIX = "Invalid user input: "


class SqlError(LanceError, ValueError):
    """A SQL filter or expression lancelot cannot use: bad syntax, an unknown column, a type that
    does not fit.  Also a ``ValueError``, the class pylance raises for the same inputs; its message
    begins as pylance's do (``PREFIX``)."""

    def __init__(
        self, message: str, *, path: str | None = None, column: int | str | None = None, page: int | None = None
    ) -> None:
        prefixed = message if message.startswith(PREFIX) else PREFIX + message
        super().__init__(prefixed, path=path, column=column, page=page)


class CountFilterError(SqlError, OSError):
    """A filter ``count_rows`` cannot use: pylance's dataset and fragment ``count_rows`` raise OSError
    where its scans raise ValueError; this is both."""

    __str__ = BaseException.__str__  # the message, not "[Errno None] ..."
