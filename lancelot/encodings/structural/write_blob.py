"""Writing blob pages (lance.encodings21.BlobLayout; encoding.md, "Blob Page Layout").

For large_binary fields with the ``lance-encoding:blob`` metadata key (pylance
accepts no other type).  The values'
bytes go out of line: the page's data buffer is written to the file first, as
one buffer, so value k sits at that buffer's position + its offset.  The page
itself is the ``inner_layout``: a mini-block page (one all-valid item per
level entry, no levels) of descriptions, a packed struct of u64 ``position``
(absolute file offset) and u64 ``size``.  The blob layout's own ``layers``
give the meaning of the definition levels smuggled into the descriptions:

* a valid value: its position and size (position 0, size 0 when empty);
* a null: size 0 and position ``def << 16 | rep`` (never 0: def >= 1).

Blobs inside lists are not written (lancelot does not read them either).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from lancelot.encodings.arrays import arrow_offsets
from lancelot.encodings.structural.write_miniblock import encode_miniblock
from lancelot.encodings.structural.write_repdef import PageLevels
from lancelot.encodings.structural.write_values import storage
from lancelot.errors import UnsupportedTypeError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

DESCRIPTION = pa.struct([("position", pa.uint64()), ("size", pa.uint64())])


def check_blob_type(t: pa.DataType, name: str, max_rep: int) -> None:
    """Blob fields are large_binary (as pylance requires), outside lists."""
    if not pa.types.is_large_binary(t):
        raise UnsupportedTypeError(f"blob field {name!r} must be large_binary, not {t} (pylance reads no other)")
    if max_rep:
        raise UnsupportedTypeError(f"blob field {name!r} inside a list is not writable")


def encode_blob(values: pa.Array, levels: PageLevels, large_chunks: bool,
                write_buffer: Callable[[np.ndarray], tuple[int, int]]) -> tuple[pb.PageLayout, list[np.ndarray]]:
    """The blob page of ``values`` (one per level entry); ``write_buffer`` puts the blob bytes in the file."""
    arr = storage(values)
    n = len(arr)
    offs = arrow_offsets(arr).astype(np.int64)
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else np.ones(n, bool)
    size = np.where(valid, offs[1:] - offs[:-1], 0).astype(np.uint64)
    position = np.zeros(n, np.uint64)
    if int(size.sum()):
        data = np.frombuffer(arr.buffers()[2], np.uint8)[int(offs[0]):int(offs[-1])]
        base, _ = write_buffer(data)
        position = np.where(size > 0, base + (offs[:-1] - offs[0]), 0).astype(np.uint64)
    if levels.defs is not None:
        null = levels.defs > 0
        position[null] = levels.defs[null].astype(np.uint64) << np.uint64(16)
    desc = pa.StructArray.from_arrays([pa.array(position), pa.array(size)], fields=list(DESCRIPTION))
    inner_levels = PageLevels(None, None, [pb.REPDEF_ALL_VALID_ITEM], 0, 0, 0)
    inner, buffers = encode_miniblock(desc, inner_levels, large_chunks)
    layout = pb.BlobLayout(inner_layout=inner, layers=levels.layers)
    return pb.PageLayout(blob_layout=layout), buffers
