"""The lancelot error hierarchy: every failure a user can meet is a LanceError."""

from __future__ import annotations

from typing import Any, TypeVar

_E = TypeVar("_E", bound="LanceError")


class LanceError(Exception):
    """Base class of every error lancelot raises on purpose.

    ``path``, ``column`` and ``page`` say where the problem is, when known."""

    def __init__(
        self, message: str, *, path: str | None = None, column: int | str | None = None, page: int | None = None
    ) -> None:
        self.message = message
        self.path = path
        self.column = column
        self.page = page
        where = []
        if path is not None:
            where.append(f"file {path!r}")
        if column is not None:
            where.append(f"column {column}")
        if page is not None:
            where.append(f"page {page}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)

    def at(self: _E, *, path: str | None = None, column: int | str | None = None, page: int | None = None) -> _E:
        """Return a copy of this error with missing location fields filled in."""
        return type(self)(
            self.message,
            path=self.path if self.path is not None else path,
            column=self.column if self.column is not None else column,
            page=self.page if self.page is not None else page,
        )


class NotALanceFileError(LanceError):
    """The bytes are not a Lance file (too short, or no "LANC" magic)."""


class UnsupportedVersionError(LanceError):
    """The file's format version is one lancelot does not read or write."""


class UnsupportedEncodingError(LanceError):
    """An encoding, layout or type that lancelot does not (yet) handle."""


class CorruptFileError(LanceError):
    """The file claims something impossible: an offset past the end, a bad size..."""


class SchemaMismatchError(LanceError, ValueError):
    """Data written does not match the writer's schema: a ValueError, as pylance's ``LanceFileWriter.write_batch``
    raises for a batch of other columns or types (its dataset writes raise OSError: ``DatasetSchemaError``)."""


class UnsupportedTypeError(LanceError):
    """An Arrow type the requested file version cannot hold."""


class _PathError(LanceError):
    """A LanceError that is also an OSError: its ``filename`` is the path."""

    def __init__(
        self, message: str, *, path: str | None = None, column: int | str | None = None, page: int | None = None
    ) -> None:
        LanceError.__init__(self, message, path=path, column=column, page=page)
        self.filename = path


class LanceFileNotFoundError(_PathError, FileNotFoundError):
    """No file (or no directory to write into) at the path: catchable as ``FileNotFoundError`` too."""

    __str__ = BaseException.__str__  # the LanceError message, not OSError's "[Errno None] ..."


class TruncatedFileError(CorruptFileError):
    """The file is shorter than its own layout says (``expected`` and ``actual`` sizes in bytes)."""

    def __init__(self, message: str, *, expected: int | None = None, actual: int | None = None, **where: Any) -> None:
        super().__init__(message, **where)
        self.expected, self.actual = expected, actual

    def at(self, **where: Any) -> TruncatedFileError:
        e = super().at(**where)
        e.expected, e.actual = self.expected, self.actual
        return e


class OutOfRangeError(LanceError, IndexError):
    """A row index or row range outside the file (or a negative / inverted range)."""


# -- dataset errors: also the builtin classes pylance raises, so users' ``except`` clauses work -----


class OSErrorMessage:
    """Mixin for LanceErrors that are also OSErrors: show the LanceError message, not "[Errno None] ..."."""

    __str__ = BaseException.__str__


class LanceValueError(LanceError, ValueError):
    """A bad argument (an unknown column, a negative limit, a bad option): pylance's ValueError."""


class DatasetNotFoundError(OSErrorMessage, _PathError, FileNotFoundError, ValueError):
    """No dataset at the URI (no manifest in ``_versions/``).  pylance raises ValueError here; a FileNotFoundError is
    what Python code expects of a missing path: this is both."""


class VersionNotFoundError(OSErrorMessage, LanceError, ValueError, OSError):
    """A version (or an ``asof`` time) the dataset does not have (pylance: ValueError when opening, OSError from
    ``checkout_version``)."""

    def __init__(self, message: str, **where: object) -> None:
        LanceError.__init__(self, message, **where)  # type: ignore[arg-type]


class RefNotFoundError(VersionNotFoundError):
    """A tag that does not exist (pylance: ValueError, or OSError from ``checkout_version``)."""


class RefConflictError(LanceError, ValueError):
    """A tag that already exists (``tags.create``)."""


class DatasetIndexError(OSErrorMessage, OutOfRangeError, OSError):
    """A take index or row id outside the dataset (pylance: OSError; Python's IndexError too)."""

    def __init__(self, message: str, **where: object) -> None:
        LanceError.__init__(self, message, **where)  # type: ignore[arg-type]


class DatasetSchemaError(OSErrorMessage, SchemaMismatchError, ValueError, OSError):
    """Data whose schema does not fit the dataset's (pylance: OSError "Append with different schema")."""

    def __init__(self, message: str, **where: object) -> None:
        LanceError.__init__(self, message, **where)  # type: ignore[arg-type]


class InvalidRefError(OSErrorMessage, LanceValueError, OSError):
    """A tag name that is not a valid ref (pylance: OSError "Ref is invalid")."""

    def __init__(self, message: str, **where: object) -> None:
        LanceError.__init__(self, message, **where)  # type: ignore[arg-type]


class MixedFileVersionsError(OSErrorMessage, UnsupportedVersionError, OSError):
    """A dataset whose data files are of two format versions (Lance 0.16 could write one): pylance's OSError
    ("The dataset contains a mixture of file versions"), raised before such a dataset is changed."""


class CommitConflictError(OSErrorMessage, LanceError, OSError):
    """A concurrent commit makes this one impossible (e.g. an append against an overwrite), or the dataset already
    exists for a create: pylance's ``lance.commit.CommitConflictError``, an OSError.

    ``retryable`` says, as pylance's attribute does, whether running the operation again on the latest version could
    succeed (``RetryableCommitConflictError``) or not."""

    retryable: bool = False

    def __init__(self, message: str = "", retryable: bool | None = None, **where: object) -> None:
        LanceError.__init__(self, message, **where)  # type: ignore[arg-type]
        if retryable is not None:
            self.retryable = bool(retryable)

    def at(
        self, *, path: str | None = None, column: int | str | None = None, page: int | None = None
    ) -> CommitConflictError:
        e = super().at(path=path, column=column, page=page)
        e.retryable = self.retryable
        return e


class RetryableCommitConflictError(CommitConflictError):
    """A concurrent commit prevents this one, but the operation can be run again on the latest version and mean the same
    (pylance's "Retryable commit conflict", ``retryable=True``)."""

    retryable = True


class NegativeIndexError(DatasetIndexError, OverflowError):
    """A negative take index or row id (pylance: OverflowError, as it reads them as unsigned)."""


class IndexTypeError(LanceError, TypeError):
    """Take indices or row ids that are not integers (pylance: TypeError)."""
