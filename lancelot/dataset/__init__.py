"""Lance datasets (the table format): versioned manifests over fragments of Lance files.

``dataset(uri)`` opens one; ``write_dataset`` creates, appends or overwrites; ``write_fragments`` + ``commit`` split
writing files from the one atomic commit.  ``lancelot.dataset`` is the function (as ``lance.dataset`` is pylance's),
``from lancelot.dataset import ...`` this package."""

from lancelot.dataset.commit import CommitConflictError, CommitIOError, RetryableCommitConflictError
from lancelot.dataset.dataset import LanceDataset, dataset
from lancelot.dataset.fragment import Fragment, FragmentMetadata
from lancelot.dataset.lance_operation import LanceOperation
from lancelot.dataset.refs import Tags
from lancelot.dataset.scanner import ColumnOrdering, LanceScanner, Scanner
from lancelot.dataset.stats import DataStatistics, FieldStatistics, LanceStats
from lancelot.dataset.transaction_api import LanceSchema, Transaction
from lancelot.dataset.write import commit, write_dataset, write_fragments

LanceFragment = Fragment  # pylance's name

__all__ = [
    "ColumnOrdering",
    "CommitConflictError",
    "CommitIOError",
    "RetryableCommitConflictError",
    "Fragment",
    "FragmentMetadata",
    "LanceDataset",
    "LanceFragment",
    "LanceOperation",
    "LanceScanner",
    "LanceSchema",
    "LanceStats",
    "DataStatistics",
    "FieldStatistics",
    "Scanner",
    "Tags",
    "Transaction",
    "commit",
    "dataset",
    "write_dataset",
    "write_fragments",
]
