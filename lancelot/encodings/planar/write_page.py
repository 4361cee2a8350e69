"""Writing one 2.3 page: which structure and value planes, as pylance 14 chooses them
(docs/format-2.3.md).

* no valid item (all null, or only null or empty lists): a sparse structure and no values;
* every valid item the same fixed-width value: a dense structure and the constant plane
  when every layer is all-valid items, a sparse structure and the constant plane when a
  layer has nulls or empty lists (all-valid lists: the chunked plane below);
* wide values (a full-zip page) without lists whose valid rows are fewer than half: a sparse
  structure and the zipped plane of the valid rows' values alone;
* otherwise the 2.2 page the structural writer makes (mini-block or full-zip) as a dense
  structure with the chunked or zipped plane.

The page's encoding is a ``google.protobuf.Any`` of type ``/lance.encodings23.PlanarLayout``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import any_pb2

from lancelot.encodings.planar.layout import PLANAR_TYPE_URL
from lancelot.encodings.planar.write_dense import (
    chunked_values,
    constant_values,
    dense_page,
    dense_structure,
    no_values,
    planar_layout,
    zipped_values,
)
from lancelot.encodings.planar.write_sparse import sparse_structure
from lancelot.encodings.strategy import EncodingOptions
from lancelot.encodings.structural.write_constant import constant_value
from lancelot.encodings.structural.write_fullzip import encode_full_zip
from lancelot.encodings.structural.write_miniblock import encode_miniblock
from lancelot.encodings.structural.write_repdef import PageLevels
from lancelot.encodings.structural.write_values import max_value_bytes
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.format.pb import file2_pb2

#: values this wide are full-zip widths (write_field.FULL_ZIP_MIN_BYTES)
FULL_ZIP_MIN_BYTES = 256

DensePage = Callable[[], tuple[pb.PageLayout, list[np.ndarray]]]


def planar_encoding(raw: bytes) -> file2_pb2.Encoding:
    """A serialized PlanarLayout as a page's direct Encoding (an Any, as pylance packs it)."""
    a = any_pb2.Any(type_url=PLANAR_TYPE_URL, value=raw)
    return file2_pb2.Encoding(direct=file2_pb2.DirectEncoding(encoding=a.SerializeToString()))


def _all_valid_items(layers: Sequence[int]) -> bool:
    return all(x == pb.REPDEF_ALL_VALID_ITEM for x in layers)


def _has_null_or_empty(layers: Sequence[int]) -> bool:
    return any(x not in (pb.REPDEF_ALL_VALID_ITEM, pb.REPDEF_ALL_VALID_LIST) for x in layers)


def encode_planar_page(
    values: pa.Array,
    levels: PageLevels,
    num_rows: int,
    dense: DensePage,
    *,
    constants: bool = True,
    fsl_dims: Sequence[int] = (),
    opts: EncodingOptions | None = None,
) -> tuple[file2_pb2.Encoding, list[np.ndarray]]:
    """The encoding and buffers of one 2.3 page of ``values`` (the page's visible items) with
    ``levels``; ``dense()`` makes the 2.2 mini-block or full-zip page of the same rows
    (``constants``: False where the page's values may not be one constant, e.g. dictionaries;
    ``fsl_dims``: write_sparse.sparse_structure's; ``opts``: the leaf's, to zip the valid values alone)."""
    layers = list(levels.layers)
    if values.null_count == len(values):
        s = sparse_structure(layers, levels.rep, levels.defs, num_rows, fsl_dims)
        return planar_encoding(planar_layout(s.plane, no_values())), s.buffers
    constant = constant_value(values) if constants else None
    if constant is not None and constant[0] is not None:
        scalar = constant[0]
        if levels.rep is None and levels.defs is None and _all_valid_items(layers):
            return planar_encoding(planar_layout(dense_structure(layers), constant_values(scalar))), []
        if _has_null_or_empty(layers):
            s = sparse_structure(layers, levels.rep, levels.defs, num_rows, fsl_dims)
            return planar_encoding(planar_layout(s.plane, constant_values(scalar))), s.buffers
    layout, buffers = dense()
    if layout.WhichOneof("layout") == "full_zip_layout" and opts is not None:
        sparse = _sparse_zipped(values, levels, num_rows, fsl_dims, opts)
        if sparse is not None:
            return sparse
    if layout.WhichOneof("layout") == "mini_block_layout" and layout.mini_block_layout.HasField("dictionary"):
        sparse = _sparse_chunked(values, levels, num_rows, fsl_dims, opts)
        if sparse is not None:
            return sparse
    return planar_encoding(dense_page(layout)), buffers


def _sparse_chunked(
    values: pa.Array, levels: PageLevels, num_rows: int, fsl_dims: Sequence[int], opts: EncodingOptions | None
) -> tuple[file2_pb2.Encoding, list[np.ndarray]] | None:
    """A dictionary page (an Arrow dictionary field's, or of wide values: full-zip widths) without lists
    whose valid rows are fewer than half: pylance writes it sparse, the chunked plane holding a
    dictionary index per row (null rows' filled; its buffers first)."""
    wide = pa.types.is_dictionary(values.type) or max_value_bytes(values) >= FULL_ZIP_MIN_BYTES
    if wide and levels.rep is None and levels.defs is not None and not any(fsl_dims) and len(values) == num_rows:
        valid = np.asarray(levels.defs) == 0
        if 2 * int(valid.sum()) < num_rows and values.null_count < len(values):
            s = sparse_structure(list(levels.layers), None, levels.defs, num_rows)
            filled = _filled(values)
            all_valid = PageLevels(None, None, [pb.REPDEF_ALL_VALID_ITEM], 0, 0, 0)
            force = pa.types.is_dictionary(values.type)
            layout, buffers = encode_miniblock(filled, all_valid, True, force, opts or EncodingOptions())
            mb = layout.mini_block_layout
            if layout.WhichOneof("layout") == "mini_block_layout" and mb.HasField("dictionary"):
                plane = chunked_values(mb, with_count=False)
                return planar_encoding(planar_layout(s.plane, plane)), [*buffers, *s.buffers]
    return None


def _filled(values: pa.Array) -> pa.Array:
    """``values`` with each null replaced by the first valid value (a slot's value the structure hides)."""
    if pa.types.is_dictionary(values.type):
        indices = pc.fill_null(values.indices, values.indices[int(np.argmax(values.is_valid()))])
        return pa.DictionaryArray.from_arrays(indices, values.dictionary)
    first = values[int(np.argmax(np.asarray(values.is_valid())))]
    return pc.fill_null(values, first)


def _sparse_zipped(
    values: pa.Array, levels: PageLevels, num_rows: int, fsl_dims: Sequence[int], opts: EncodingOptions
) -> tuple[file2_pb2.Encoding, list[np.ndarray]] | None:
    """A page of wide values (full-zip) without lists whose valid rows are fewer than half: pylance writes
    it sparse, the zipped plane holding the valid rows' values alone (its buffers first)."""
    if levels.rep is not None or levels.defs is None or any(fsl_dims) or len(values) != num_rows:
        return None
    valid = np.asarray(levels.defs) == 0
    n_valid = int(valid.sum())
    if 2 * n_valid >= num_rows:
        return None
    s = sparse_structure(list(levels.layers), None, levels.defs, num_rows)
    kept = values.filter(pa.array(valid))
    all_valid = PageLevels(None, None, [pb.REPDEF_ALL_VALID_ITEM], 0, 0, 0)
    layout, buffers = encode_full_zip(kept, all_valid, opts)
    plane = zipped_values(layout.full_zip_layout, with_levels=False)
    return planar_encoding(planar_layout(s.plane, plane)), [*buffers, *s.buffers]
