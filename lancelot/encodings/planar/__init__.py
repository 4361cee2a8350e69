"""2.3 planar pages (``lance.encodings23.PlanarLayout``; docs/format-2.3.md).

A 2.3 page describes its rows in two planes: a *structure* plane (dense rep/def layers,
or sparse positions) and a *value* plane (chunked, zipped, a constant scalar, or no
values).  The planes that carry the same information as a 2.1/2.2 page layout are
translated into that layout (layout.py), so the structural readers read them; strings
with 2.3-coded offsets (binary.py) and sparse pages (sparse.py, sparse_lists.py) have
their own page readers; any other shape is refused with UnsupportedEncodingError.
"""

from __future__ import annotations

from lancelot.encodings.planar.layout import PLANAR_TYPE_URL, read_page_layout, to_page_layout

__all__ = ["PLANAR_TYPE_URL", "read_page_layout", "to_page_layout"]
