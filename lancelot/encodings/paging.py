"""When a column writer ends a page (both 2.0 and 2.1+ writers).

Two sizes, as in pylance 14.0.2 (``lance-file`` writer: 8 MiB of data cached per column, pages of at
most 32 MiB):

* a column *gathers* its batches until ``gather_bytes(max_page_bytes)`` (8 MiB, or less when the
  page limit is smaller) and then writes what it holds as one page;
* a gathering larger than ``max_page_bytes`` (32 MiB by default) is cut into pages: at 2.1+ pages of
  about ``max_page_bytes`` while batches stream in (the remainder waits for the next batches) and
  ``ceil(size / max_page_bytes)`` equal pages at the end; at 2.0 whole gathered batches make one page
  unless they hold many times the limit (then ``round(size / max_page_bytes)`` equal pages).

So a stream of small batches gives pages of about 8 MiB, one batch of 64 MB two pages (pylance:
two at 2.0, one at 2.1+, where it ignores ``max_page_bytes``), and an explicit ``max_page_bytes`` of
at most 8 MiB pages of about that size.  Blob columns count the 16-byte descriptions a page holds,
not the blob bytes (written out of line as the batches arrive), as pylance does.
"""

from __future__ import annotations

import math

#: pylance's default page limit (``MAX_PAGE_BYTES`` of its file writer)
DEFAULT_MAX_PAGE_BYTES = 32 * 1024 * 1024
#: pylance's default data cached per column before a page is written
GATHER_BYTES = 8 * 1024 * 1024
#: bytes a blob description (u64 position, u64 size) takes in a page
BLOB_DESCRIPTION_BYTES = 16


def gather_bytes(max_page_bytes: int) -> int:
    """Bytes a column holds before writing them as pages."""
    return min(GATHER_BYTES, max_page_bytes)


def page_count(size: int, max_page_bytes: int, rows: int) -> int:
    """Pages a gathering of ``size`` bytes and ``rows`` rows is cut into."""
    return max(1, min(rows, math.ceil(size / max_page_bytes)))
