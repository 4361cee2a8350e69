"""The error of SQL filters and expressions (importable without loading the SQL parser)."""

from __future__ import annotations

import pyarrow as pa

from lancelot.errors import LanceError, OSErrorMessage

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


class EvaluationError(OSErrorMessage, LanceError, ValueError, OSError):
    """A SQL filter or expression that fails on the rows' values (an integer divided by zero, an overflow, a text that
    is no number cast to one), not in its planning.  pylance raises OSError for it from ``update``, ``add_columns``,
    ``delete``, ``count_rows`` and ``merge_insert``, and ValueError (pyarrow's ArrowInvalid) from scans and
    ``ds.sql``: this is both."""


class ExpressionFieldError(LanceError, pa.ArrowInvalid):  # type: ignore[misc]  # (pyarrow has no stubs)
    """A pyarrow Expression naming a field the dataset's schema lacks: pylance binds an Expression to that schema,
    which has no row-id or row-version columns, and raises pyarrow's ``ArrowInvalid`` (a ``ValueError``)."""


class RowOffsetFilterError(OSErrorMessage, LanceError, OSError):
    """An update's SQL predicate naming ``_rowoffset``, a column pylance's update predicates do not have: it raises
    OSError there."""

    def __init__(self, message: str) -> None:
        super().__init__(message if message.startswith(PREFIX) else PREFIX + message)
