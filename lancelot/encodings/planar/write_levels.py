"""Repetition and definition levels of 2.3 mini-block chunks: RLE where pylance 14 writes it
(docs/format-2.3.md, "Written by lancelot").

2.2 bit-packs a chunk's levels (out of line, one width per page).  2.3 stores them plain (u16,
``Flat 16``) when that is smallest (pages of a few rows: bit-packing pads to 1024 levels), or
run-length codes them when the page's runs take fewer bytes than its packed levels: ``Rle{values: Flat 16,
run_lengths: Flat 8}`` (or Flat 16 when a run passes 255), each chunk's levels one block (a
u64 byte count of the run values, the u16 run values, then the run lengths).  Mostly-null
columns (runs of nulls) and the repetition levels of one-entry lists are the usual cases.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lancelot.format.pb import encodings_v2_1_pb2 as pb

LevelPacker = Callable[[np.ndarray], np.ndarray]


def _runs(levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(levels) == 0:
        return levels[:0], np.zeros(0, np.int64)
    starts = np.flatnonzero(np.concatenate([[True], levels[1:] != levels[:-1]]))
    return levels[starts], np.diff(np.append(starts, len(levels)))


def _flat(chunk: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(chunk, dtype="<u2").view(np.uint8)


def rle_levels(levels: np.ndarray, width: int) -> tuple[pb.CompressiveEncoding, LevelPacker] | None:
    """The coding of a page's levels that is smaller than bit-packing them at ``width`` bits (padded to
    whole 1024-level blocks): plain u16 (small pages) or RLE, with its chunk packer; None for
    bit-packing."""
    values, lengths = _runs(np.asarray(levels))
    len_bits = 8 if len(lengths) == 0 or int(lengths.max()) <= 0xFF else 16
    packed = -(-len(levels) // 1024) * 128 * width
    rle = len(values) * (2 + len_bits // 8)
    flat = 2 * len(levels)
    if flat < min(packed, rle):
        return pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=16)), _flat
    if rle >= packed:
        return None
    enc = pb.CompressiveEncoding(
        rle=pb.Rle(
            values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=16)),
            run_lengths=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=len_bits)),
        )
    )

    def pack(chunk: np.ndarray) -> np.ndarray:
        vals, lens = _runs(np.asarray(chunk))
        if len_bits == 8 and len(lens) and int(lens.max()) > 0xFF:  # (a chunk's run past the page's longest)
            raise ValueError("an RLE level run longer than its run-length width")
        head = np.array([2 * len(vals)], "<u8").view(np.uint8)
        return np.concatenate(
            [head, vals.astype("<u2").view(np.uint8), lens.astype(f"<u{len_bits // 8}").view(np.uint8)]
        )

    return enc, pack
