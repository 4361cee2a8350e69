"""Lance datasets (the table format): versioned manifests over fragments of Lance files.

``dataset(uri)`` opens one; ``write_dataset`` creates, appends or overwrites;
``write_fragments`` + ``commit`` split writing files from the one atomic commit.
"""

import sys
import types
from typing import TYPE_CHECKING

from lancelot.dataset.commit import CommitConflictError
from lancelot.dataset.dataset import LanceDataset, dataset
from lancelot.dataset.fragment import Fragment, FragmentMetadata
from lancelot.dataset.write import commit, write_dataset, write_fragments

__all__ = [
    "CommitConflictError",
    "Fragment",
    "FragmentMetadata",
    "LanceDataset",
    "commit",
    "dataset",
    "write_dataset",
    "write_fragments",
]


class _CallableModule(types.ModuleType):
    """``lancelot.dataset(uri, ...)`` opens a dataset while ``lancelot.dataset.write_fragments``
    and the other names stay reachable as module attributes."""

    def __call__(
        self, uri: str, *, version: int | None = None, storage_options: dict[str, object] | None = None
    ) -> LanceDataset:
        return dataset(uri, version=version, storage_options=storage_options)

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
