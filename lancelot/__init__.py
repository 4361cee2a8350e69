"""lancelot: a pure-Python reader and writer for the Lance columnar file format."""

from lancelot.dataset import LanceDataset, write_dataset  # lancelot.dataset(uri) opens a dataset
from lancelot.errors import (
    CorruptFileError,
    LanceError,
    LanceFileNotFoundError,
    NotALanceFileError,
    OutOfRangeError,
    SchemaMismatchError,
    TruncatedFileError,
    UnsupportedEncodingError,
    UnsupportedTypeError,
    UnsupportedVersionError,
)
from lancelot.reader import LanceFile, read_table

__all__ = [
    "CorruptFileError",
    "LanceError",
    "LanceFile",
    "LanceFileNotFoundError",
    "NotALanceFileError",
    "OutOfRangeError",
    "SchemaMismatchError",
    "TruncatedFileError",
    "UnsupportedEncodingError",
    "UnsupportedTypeError",
    "UnsupportedVersionError",
    "read_table",
    "LanceDataset",
    "dataset",
    "write_dataset",
]

try:  # the writer is optional while it is being built
    from lancelot.writer import LanceWriter, write_table  # noqa: F401

    __all__ += ["LanceWriter", "write_table"]
except ImportError:  # pragma: no cover
    pass

__version__ = "0.1.0"
