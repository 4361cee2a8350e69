"""lancelot: a pure-Python reader and writer for the Lance columnar file format and dataset format.

``lancelot.dataset`` is the function that opens a dataset (as ``lance.dataset`` is pylance's): the
``from lancelot.dataset import dataset`` below binds it over the attribute the import of the package
``lancelot.dataset`` sets; ``from lancelot.dataset import ...`` still imports from the package.
"""

from lancelot._version import __version__ as __version__
from lancelot.dataset import (
    FragmentMetadata,
    LanceDataset,
    LanceFragment,
    LanceOperation,
    LanceScanner,
    Transaction,
    dataset,
    write_dataset,
    write_fragments,
)
from lancelot.dataset.blob_file import BlobFile
from lancelot.dataset.blob_types import Blob, BlobColumn, blob_array, blob_field
from lancelot.dataset.cleanup import CleanupCandidateFile, CleanupExplanation, CleanupStats
from lancelot.dataset.fragment_metadata import DataFile, DeletionFile, RowDatasetVersionMeta, RowIdMeta
from lancelot.dataset.index_types import Index, IndexFile
from lancelot.dataset.merge_insert import MergeInsertBuilder
from lancelot.dataset.session import Session
from lancelot.dataset.stats import DataStatistics, FieldStatistics
from lancelot.dataset.transaction_api import json_to_schema, schema_to_json
from lancelot.dataset.udf import BatchUDF, batch_udf
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
from lancelot.io.counters import bytes_read_counter, iops_counter
from lancelot.reader import LanceFile, read_table
from lancelot.writer import LanceWriter, write_table

__all__ = [
    "Blob",
    "BlobColumn",
    "BlobFile",
    "blob_array",
    "blob_field",
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
    "BatchUDF",
    "batch_udf",
    "CleanupCandidateFile",
    "CleanupExplanation",
    "CleanupStats",
    "DataFile",
    "DataStatistics",
    "FieldStatistics",
    "MergeInsertBuilder",
    "DeletionFile",
    "RowDatasetVersionMeta",
    "RowIdMeta",
    "FragmentMetadata",
    "LanceDataset",
    "LanceFragment",
    "Index",
    "IndexFile",
    "LanceOperation",
    "LanceScanner",
    "Session",
    "Transaction",
    "dataset",
    "write_dataset",
    "write_fragments",
    "write_table",
    "json_to_schema",
    "schema_to_json",
    "iops_counter",
    "bytes_read_counter",
]
