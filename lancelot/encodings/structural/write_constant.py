"""Writing all-null pages (lance.encodings21.ConstantLayout without a value; encoding.md, "All Null Page Layout").

A page whose visible items are all null (or that has no visible item: only
null or empty lists) keeps nothing but its levels:

* a single ``NULLABLE_ITEM`` layer and no repetition: no buffer at all;
* otherwise two buffers, the repetition levels then the definition levels
  (either may be empty), as u16 values.  2.1 stores them raw (its
  AllNullLayout has only ``layers``); 2.2 describes them with
  ``rep_compression``/``def_compression`` (Flat 16) and their counts, as
  pylance 2.2 writes.
"""

from __future__ import annotations

import numpy as np

from lancelot.encodings.structural.write_repdef import PageLevels
from lancelot.format.pb import encodings_v2_1_pb2 as pb


def encode_all_null(levels: PageLevels, version: str) -> tuple[pb.PageLayout, list[np.ndarray]]:
    """The all-null page of these levels."""
    layout = pb.ConstantLayout(layers=levels.layers)
    if levels.rep is None and list(levels.layers) == [pb.REPDEF_NULLABLE_ITEM]:
        return pb.PageLayout(constant_layout=layout), []
    rep = levels.rep.astype("<u2") if levels.rep is not None else np.zeros(0, "<u2")
    defs = levels.defs.astype("<u2") if levels.defs is not None else np.zeros(0, "<u2")
    if version != "2.1":
        flat16 = pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=16))
        if len(rep):
            layout.rep_compression.CopyFrom(flat16)
            layout.num_rep_values = len(rep)
        if len(defs):
            layout.def_compression.CopyFrom(flat16)
            layout.num_def_values = len(defs)
    return pb.PageLayout(constant_layout=layout), [rep.view(np.uint8), defs.view(np.uint8)]
