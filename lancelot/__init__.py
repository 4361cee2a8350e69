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
from lancelot.writer import LanceWriter, write_table

__all__ = [
    "CorruptFileError",
    "LanceError",
    "LanceFile",
    "LanceWriter",
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
    "write_table",
]

__version__ = "0.1.0"
