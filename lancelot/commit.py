"""pylance's ``lance.commit`` names: ``CommitConflictError`` (an OSError with ``retryable``) and the
``CommitLock`` type a ``commit_lock`` argument takes (dataset/commit_options.py)."""

from __future__ import annotations

from lancelot.dataset.commit_options import CommitLock
from lancelot.errors import CommitConflictError, RetryableCommitConflictError

__all__ = ["CommitConflictError", "CommitLock", "RetryableCommitConflictError"]
