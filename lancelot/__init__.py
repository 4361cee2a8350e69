"""lancelot: a pure-Python reader and writer for the Lance columnar file format."""

from typing import TYPE_CHECKING, Any

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
    "FragmentMetadata",
    "LanceDataset",
    "LanceFragment",
    "LanceScanner",
    "dataset",
    "write_dataset",
    "write_fragments",
    "write_table",
]

__version__ = "0.1.0"

if TYPE_CHECKING:  # what __getattr__ returns, for type checkers: mypy cannot call a module, so
    # ``lancelot.dataset`` is declared as the subpackage's callable module class (lancelot/dataset/__init__.py)
    from lancelot.dataset import (
        FragmentMetadata,
        LanceDataset,
        LanceFragment,
        LanceScanner,
        _CallableModule,
        write_dataset,
        write_fragments,
    )

    dataset: _CallableModule


#: imported on first use (``lancelot.dataset(uri)`` opens a dataset): a script that only reads or writes
#: files does not pay for the table format's modules (manifests, commits, their protobufs: ~30 ms)
_LAZY = {
    "LanceDataset": "LanceDataset",
    "LanceFragment": "LanceFragment",
    "LanceScanner": "LanceScanner",
    "FragmentMetadata": "FragmentMetadata",
    "write_dataset": "write_dataset",
    "write_fragments": "write_fragments",
    "dataset": None,
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module = importlib.import_module("lancelot.dataset")
        attr = _LAZY[name]
        return module if attr is None else getattr(module, attr)
    raise AttributeError(f"module 'lancelot' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API (the dataset names are imported on first use, yet listed)."""
    return sorted(set(__all__) | {"__version__", "errors"} | {n for n in globals() if n.startswith("__")})
