"""``ds.stats.index_stats(name)``: pylance's statistics of one index (every segment of the name) for the BTREE and
BITMAP indices lancelot builds: each segment's value range and page count (BTREE) or bitmap count (BITMAP), and how
many fragments and live rows the index covers or misses."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.index_remap import (
    BITMAP,
    BITMAP_LOOKUP,
    BTREE,
    BTREE_LOOKUP,
    fragment_ids,
    read_indices,
    uuid_str,
)
from lancelot.dataset.indices import index_type
from lancelot.errors import LanceError, LanceValueError
from lancelot.reader import LanceFile

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.format.pb import table_pb2


class IndexNotFoundError(LanceError, KeyError):
    """No index of that name (pylance: KeyError)."""

    __str__ = BaseException.__str__


def index_stats(ds: LanceDataset, name: str) -> dict[str, Any]:
    """pylance's ``stats.index_stats(name)`` dict for a BTREE or BITMAP index."""
    segments = [m for m in read_indices(ds.manifest_file.index_section) if m.name == name]
    if not segments:
        raise IndexNotFoundError(f'Index "{name}" not found')
    url = segments[0].index_details.type_url
    if url not in (BTREE, BITMAP):
        raise LanceValueError(f"dataset {ds.uri!r}: index_stats of a {index_type(segments[0])} index is not provided")
    live = {f.fragment_id: f.count_rows() for f in ds.get_fragments()}
    per_segment = [_btree(ds, m) if url == BTREE else _bitmap(ds, m) for m in segments]
    covered = [set(fragment_ids(m) or ()) & set(live) for m in segments]
    indexed = set().union(*covered)
    return {
        "index_type": index_type(segments[0]),
        "name": name,
        "num_indices": len(segments),
        "num_segments": len(segments),
        "indices": per_segment,
        "segments": per_segment,
        "num_indexed_fragments": len(indexed),
        "num_indexed_rows": sum(live[i] for i in indexed),
        "num_unindexed_fragments": len(set(live) - indexed),
        "num_unindexed_rows": sum(n for i, n in live.items() if i not in indexed),
        "num_indexed_rows_per_delta": [sum(live[i] for i in c) for c in covered],
        "updated_at_timestamp_ms": max(int(m.created_at) for m in segments),
    }


def _file(ds: LanceDataset, meta: table_pb2.IndexMetadata, name: str) -> pa.Table:
    return LanceFile(ds.store.open_input(f"_indices/{uuid_str(meta)}/{name}")).read()


def _btree(ds: LanceDataset, meta: table_pb2.IndexMetadata) -> dict[str, Any]:
    """A BTREE segment's smallest and largest value (as pylance prints them; ``N/A`` when all are null) and pages."""
    lookup = _file(ds, meta, BTREE_LOOKUP)
    low, high = pc.min(lookup.column("min")), pc.max(lookup.column("max"))
    return {"min": _text(low), "max": _text(high), "num_pages": lookup.num_rows}


def _bitmap(ds: LanceDataset, meta: table_pb2.IndexMetadata) -> dict[str, Any]:
    return {"num_bitmaps": _file(ds, meta, BITMAP_LOOKUP).num_rows}


def _text(value: pa.Scalar) -> str:
    """A value as Rust's Display prints it: ``true``/``false``, floats without a needless ``.0``."""
    v = value.as_py()
    if v is None:
        return "N/A"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return str(int(v))
    return str(v)
