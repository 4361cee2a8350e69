"""``LanceFragment.delete``: the first half of a distributed delete (table format "Deletion files"; pylance's
``LanceFragment.delete`` with ``LanceOperation.Delete``).

The rows of one fragment matching a predicate are added to its deletion file (a new file, never an edit of the old one),
and the fragment's new metadata is returned, to be committed with the other workers' by one ``LanceOperation.Delete``;
nothing is visible to readers until then."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow.compute as pc

from lancelot.dataset.changes import Deletions

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.fragment_metadata import FragmentMetadata


def delete(frag: Fragment, predicate: str | pc.Expression) -> FragmentMetadata | None:
    """The fragment with the live rows matching ``predicate`` deleted: its metadata with a new deletion file, unchanged
    when nothing matches, or None when no row is left."""
    from lancelot.dataset.fragment_metadata import FragmentMetadata

    ds = frag.dataset
    hits = ds.scanner(columns=[], filter=predicate, fragments=[frag], with_row_address=True).to_table()
    positions = (hits.column("_rowaddr").to_numpy() & np.uint64(0xFFFFFFFF)).astype(np.int64)
    marks = Deletions(ds)
    marks.mark(frag, positions)
    if marks.removed:
        return None
    return FragmentMetadata.from_pb(marks.updated[0] if marks.updated else frag.metadata.to_pb())
