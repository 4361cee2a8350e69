"""Lance datasets (the table format): versioned manifests over fragments of Lance files.

``dataset(uri)`` opens one; ``write_dataset`` creates, appends or overwrites;
``write_fragments`` + ``commit`` split writing files from the one atomic commit.
"""

import inspect
import sys
import types
from typing import TYPE_CHECKING, Any

from lancelot.dataset.commit import CommitConflictError, CommitIOError, RetryableCommitConflictError
from lancelot.dataset.dataset import LanceDataset, dataset
from lancelot.dataset.fragment import Fragment, FragmentMetadata
from lancelot.dataset.refs import Tags
from lancelot.dataset.scanner import ColumnOrdering, LanceScanner, Scanner
from lancelot.dataset.stats import DataStatistics, FieldStatistics, LanceStats
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
    "LanceScanner",
    "LanceStats",
    "DataStatistics",
    "FieldStatistics",
    "Scanner",
    "Tags",
    "commit",
    "dataset",
    "write_dataset",
    "write_fragments",
]


class _CallableModule(types.ModuleType):
    """``lancelot.dataset(uri, ...)`` opens a dataset while ``lancelot.dataset.write_fragments``
    and the other names stay reachable as module attributes."""

    def __call__(self, *args: Any, **kwargs: Any) -> LanceDataset:
        return dataset(*args, **kwargs)

    __call__.__signature__ = inspect.signature(dataset).replace(  # type: ignore[attr-defined]
        parameters=[inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
        + list(inspect.signature(dataset).parameters.values())
    )
    __call__.__doc__ = dataset.__doc__

    if TYPE_CHECKING:  # the module's names, for type checkers (at run time they are its globals)
        CommitConflictError = CommitConflictError
        Fragment = Fragment
        FragmentMetadata = FragmentMetadata
        LanceDataset = LanceDataset
        commit = staticmethod(commit)
        dataset = staticmethod(dataset)
        write_dataset = staticmethod(write_dataset)
        write_fragments = staticmethod(write_fragments)


sys.modules[__name__].__class__ = _CallableModule
