"""How many values pylance 14 puts in a 2.3 mini-block chunk (docs/format-2.3.md, "Written by lancelot").

* strings and binaries (delta-coded offsets): the most values, a power of two, whose bytes and
  offsets fit ``STRING_CHUNK_BYTES``;
* fixed-width values stored whole (Flat, FixedSizeList, PackedStruct): the fewest values, a
  power of two, that fill ``FLAT_CHUNK_BYTES`` (e.g. 512 of 12 bytes, 256 of 16);
* bit-packed values keep their 1024-value blocks.
"""

from __future__ import annotations

#: 2.3 string chunks: bytes and offsets of a chunk's values stay under this many bytes
STRING_CHUNK_BYTES = 4 * 1024
#: 2.3 chunks of whole fixed-width values hold the fewest values (a power of two) filling this many bytes
FLAT_CHUNK_BYTES = 4 * 1024
#: CompressiveEncoding cases that store fixed-width values whole
FLAT_KINDS = ("flat", "fixed_size_list", "packed_struct")


def flat_chunk_items(bytes_per_value: float, max_items: int) -> int:
    """Values per chunk of fixed-width values of ``bytes_per_value`` bytes (at most ``max_items``)."""
    n = 1
    while n < max_items and n * bytes_per_value < FLAT_CHUNK_BYTES:
        n *= 2
    return n
