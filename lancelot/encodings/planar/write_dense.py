"""Writing 2.3 dense planar pages: a 2.2 page layout restated as a ``PlanarLayout``
(docs/format-2.3.md).

A dense structure plane is 2.1's rep/def layers (innermost first); its value plane is
the 2.2 page's values, unchanged on disk:

* a mini-block page (u32 chunk words, ``has_large_chunk``) is the chunked plane;
* a full-zip page is the zipped plane;
* a constant page of all-valid layers with an inline value is the constant plane.

The field numbers are planar/layout.py's (the reader's); fields are written in number
order and proto3 zeros are left out, as pylance 14 writes them.
"""

from __future__ import annotations

from collections.abc import Sequence

from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util import wire

# PlanarLayout, its planes and their fields (planar/layout.py)
STRUCTURE, VALUES = 1, 2
DENSE, SPARSE = 1, 2
CHUNKED, ZIPPED, CONSTANT, NO_VALUES = 1, 2, 3, 4


def planar_layout(structure: bytes, values: bytes) -> bytes:
    """A serialized PlanarLayout of a structure plane and a value plane."""
    return wire.encode((STRUCTURE, structure), (VALUES, values))


def dense_structure(layers: Sequence[int]) -> bytes:
    """The dense structure plane of 2.1 layers (innermost first)."""
    return wire.encode((DENSE, wire.encode((1, wire.packed([int(x) for x in layers])))))


def chunked_values(mb: pb.MiniBlockLayout, *, with_count: bool = True) -> bytes:
    """The chunked value plane of a 2.2 mini-block layout (``with_count``: False under a sparse
    structure, which gives the count and the levels: both left out, as pylance requires)."""
    if not mb.has_large_chunk:
        raise UnsupportedEncodingError("a 2.3 chunked plane needs u32 chunk words (has_large_chunk)")
    levels = wire.encode(
        (1, mb.rep_compression.SerializeToString() if mb.HasField("rep_compression") else None),
        (2, mb.def_compression.SerializeToString() if mb.HasField("def_compression") else None),
        (3, wire.nonzero(mb.repetition_index_depth)),
    )
    dictionary = mb.HasField("dictionary")
    chunked = wire.encode(
        (1, mb.value_compression.SerializeToString()),
        (2, levels if with_count else None),
        (3, mb.dictionary.SerializeToString() if dictionary else None),
        (4, wire.nonzero(mb.num_dictionary_items) if dictionary else None),
        (5, wire.nonzero(mb.num_buffers)),
        (6, wire.nonzero(mb.num_items) if with_count else None),
    )
    return wire.encode((CHUNKED, chunked))


def zipped_values(fz: pb.FullZipLayout, *, with_levels: bool = True) -> bytes:
    """The zipped value plane of a 2.2 full-zip layout (``with_levels``: False under a sparse structure,
    which leaves the levels message out)."""
    levels = wire.encode((1, wire.nonzero(fz.bits_rep)), (2, wire.nonzero(fz.bits_def))) if with_levels else None
    addressing = fz.WhichOneof("details")
    zipped = wire.encode(
        (1, fz.value_compression.SerializeToString()),
        (2, levels),
        (3, fz.bits_per_value if addressing == "bits_per_value" else None),
        (4, fz.bits_per_offset if addressing == "bits_per_offset" else None),
        (5, wire.nonzero(fz.num_items)),
        (6, wire.nonzero(fz.num_visible_items)),
    )
    return wire.encode((ZIPPED, zipped))


def constant_values(scalar: bytes) -> bytes:
    """The constant value plane: one fixed-width value's little-endian bytes."""
    if not 1 <= len(scalar) <= 32:
        raise UnsupportedEncodingError(f"a planar constant holds 1..=32 bytes, not {len(scalar)}")
    return wire.encode((CONSTANT, wire.encode((1, scalar))))


def no_values() -> bytes:
    return wire.encode((NO_VALUES, b""))


def dense_page(layout: pb.PageLayout) -> bytes:
    """The PlanarLayout of a dense 2.2 page (UnsupportedEncodingError for a layout 2.3 states
    otherwise: all-null pages, constants under nulls or lists, blobs)."""
    kind = layout.WhichOneof("layout")
    if kind == "mini_block_layout":
        mb = layout.mini_block_layout
        return planar_layout(dense_structure(list(mb.layers)), chunked_values(mb))
    if kind == "full_zip_layout":
        fz = layout.full_zip_layout
        return planar_layout(dense_structure(list(fz.layers)), zipped_values(fz))
    if kind == "constant_layout":
        c = layout.constant_layout
        if c.HasField("inline_value") and all(x == pb.REPDEF_ALL_VALID_ITEM for x in c.layers):
            return planar_layout(dense_structure(list(c.layers)), constant_values(c.inline_value))
    raise UnsupportedEncodingError(f"a 2.2 {kind} page of this shape is not a dense 2.3 page")
