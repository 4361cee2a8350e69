"""Bitpacking in the FastLanes 1024-value transposed layout.

(lance.encodings21.InlineBitpacking and lance.encodings21.OutOfLineBitpacking.)

Values of T bits (T = 8, 16, 32 or 64) are packed 1024 at a time into W bits each.  The 1024 values are seen as T rows
of LANES = 1024 / T lanes: lane ``l`` of row ``r`` is the value at index ``FL_ORDER[r // 8] * 16 + (r % 8) * 128 + l``,
with FL_ORDER = (0, 4, 2, 6, 1, 5, 3, 7).  Each lane is a little-endian bit stream of W words of T bits (word ``k`` of
lane ``l`` is packed word ``k * LANES + l``) holding its T rows, W bits each, LSB first.

* Inline: each chunk of 1024 values is one T-bit word holding W, then the ``1024 * W / T`` packed words; the last chunk
  is padded with zeros to 1024 values.  A mini-block chunk holds exactly one such chunk.
* Out of line: W is ``values.flat.bits_per_value`` in the description; the buffer holds ``1024 * W / T`` words per whole
  chunk; a partial last chunk is either packed (padded) or, when that would waste space, its values stored raw (T bits
  each): the buffer length tells which.

Decoding runs one numba loop over every chunk of one width at once (bitpacking_kernel.py); inline encoding is one numba
pass over a page, out-of-line encoding shifts and ors whole rows of lanes with numpy."""

from __future__ import annotations

import numpy as np

from lancelot.encodings.compression.bitpacking_kernel import CHUNK as CHUNK  # (re-exported: readers import it here)
from lancelot.encodings.compression.bitpacking_kernel import pack_inline, unpack_words
from lancelot.encodings.compression.block import FixedWidthBlock
from lancelot.encodings.compression.buffers import as_u8, check_size, require, uint_dtype
from lancelot.errors import UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

FL_ORDER = (0, 4, 2, 6, 1, 5, 3, 7)
_GATHER: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _permutations(t: int) -> tuple[np.ndarray, np.ndarray]:
    """(gather, scatter) for T-bit values.

    ``by_lane`` is an (n, LANES, T) array of values in lane-major order; ``out = by_lane.reshape(n, 1024)[:, gather]``
    gives the values in order and ``by_lane = values[:, scatter]`` goes back."""
    if t not in _GATHER:
        lanes = CHUNK // t
        row, lane = np.meshgrid(np.arange(t), np.arange(lanes), indexing="ij")
        index = np.asarray(FL_ORDER)[row // 8] * 16 + (row % 8) * 128 + lane  # [row, lane] -> value index
        scatter = index.T.reshape(-1)  # lane-major position -> value index
        gather = np.empty(CHUNK, dtype=np.intp)
        gather[scatter] = np.arange(CHUNK)
        _GATHER[t] = (gather, scatter)
    return _GATHER[t]


def unpack_chunks(packed: np.ndarray, width: int, t: int) -> np.ndarray:
    """Unpack ``n`` chunks (uint8, n * 128 * width bytes) into an (n, 1024) array of T-bit values.

    Row r of a lane starts at bit r * width of the lane's stream: its low bits are in word (r * width) // t shifted
    right, the rest (if it spills) in the next word shifted left; bits at or above ``width`` are masked away."""
    if width == 0:
        raise ValueError("use zeros for width 0")
    dt = uint_dtype(t, "bitpacked value")
    lanes = CHUNK // t
    nbytes = CHUNK * width // 8
    n = len(packed) // nbytes
    words = np.ascontiguousarray(packed[: n * nbytes]).view(dt).reshape(n, width, lanes)
    return unpack_words(words, width)  # the loop above, in numba (bitpacking_kernel.py)


def pack_chunks(values: np.ndarray, width: int, t: int) -> np.ndarray:
    """Pack an (n, 1024) array of T-bit values, each below ``2**width``, into ``width`` bits each (uint8 bytes).

    The mirror of ``unpack_chunks``: row r of every lane is shifted to bit ``r * width`` of the lane's stream, or-ed
    into its word and, when it spills, into the next one."""
    dt = uint_dtype(t, "bitpacked value")
    lanes = CHUNK // t
    n = values.shape[0]
    if width == 0:
        return np.zeros(0, np.uint8)
    values = np.ascontiguousarray(values, dtype=dt)
    words = np.zeros((n, width, lanes), dt)
    for r in range(t):
        first = FL_ORDER[r // 8] * 16 + (r % 8) * 128  # row r of lane l is value first + l
        row = values[:, first : first + lanes]
        k, sh = divmod(r * width, t)
        words[:, k, :] |= row << dt.type(sh)
        if sh + width > t:
            words[:, k + 1, :] |= row >> dt.type(t - sh)
    return words.reshape(-1).view(np.uint8)


#: numpy >= 2.0 counts set bits in one pass; numpy 1.26 (the declared floor) takes the per-bit loop
_HAS_BITWISE_COUNT = hasattr(np, "bitwise_count")


def bit_widths(values: np.ndarray, t: int) -> np.ndarray:
    """Bits needed by the largest (unsigned) value of each row of ``values``."""
    m = values.max(axis=-1) if values.size else np.zeros(values.shape[:-1], values.dtype)
    m = np.asarray(m)
    if m.dtype.kind == "i":  # a negative maximum needs every bit, as its unsigned view says
        m = m.view(m.dtype.str.replace("i", "u"))
    w = np.zeros(m.shape, dtype=np.int64)
    if m.dtype.itemsize * 8 != t or not _HAS_BITWISE_COUNT:  # wider than t bits (t at most); numpy 1.x
        for b in range(t):
            w += (m >> b) != 0
        return w
    # every bit below the highest set one set too (log2(t) shifts), then counted: the bit length
    x = m.copy()
    s = 1
    while s < t:
        x |= x >> x.dtype.type(s)
        s *= 2
    w[...] = np.bitwise_count(x)
    return w


def _as_uint(block: FixedWidthBlock, t: int) -> np.ndarray:
    require(block.bits_per_value == t, f"bitpacking {block.bits_per_value}-bit values as {t}-bit")
    return block.as_dtype(uint_dtype(t))


def _chunked(vals: np.ndarray) -> np.ndarray:
    n_chunks = -(-len(vals) // CHUNK)
    padded = np.zeros(n_chunks * CHUNK, dtype=vals.dtype)
    padded[: len(vals)] = vals
    return padded.reshape(n_chunks, CHUNK)


# ----------------------------------------------------------------------------- inline


def inline_bits(desc: pb.InlineBitpacking) -> int:
    t = int(desc.uncompressed_bits_per_value)
    if t not in (8, 16, 32, 64):
        raise UnsupportedEncodingError(f"inline bitpacking of {t}-bit values")
    if desc.HasField("values"):
        raise UnsupportedEncodingError("inline bitpacking with per-buffer compression")
    return t


def decompress_inline_bitpacking(
    desc: pb.InlineBitpacking, buffers: list[np.ndarray], num_values: int
) -> FixedWidthBlock:
    """Decode chunks of [bit width word][packed words] until ``num_values`` values."""
    t = inline_bits(desc)
    require(len(buffers) >= 1, "inline bitpacking expects one buffer, got none")
    buf = as_u8(buffers[0])
    dt = uint_dtype(t)
    wb = t // 8
    n_chunks = -(-num_values // CHUNK)
    check_size(n_chunks * CHUNK * wb, "bitpacked values")
    require(n_chunks * wb <= len(buf), f"inline bitpacking: {len(buf)} bytes cannot hold {n_chunks} chunks")
    widths, starts = _chunk_headers(buf, n_chunks, t)
    if n_chunks == 1:  # the mini-block case: one chunk per call
        w = int(widths[0])
        if w == 0:
            return FixedWidthBlock(np.zeros(num_values * wb, np.uint8), t, num_values)
        vals = unpack_chunks(buf[starts[0] : starts[0] + CHUNK * w // 8], w, t)
        return FixedWidthBlock(vals.reshape(-1)[:num_values].view(np.uint8), t, num_values)
    out = np.zeros((n_chunks, CHUNK), dtype=dt)
    for w in np.unique(widths):
        rows = np.nonzero(widths == w)[0]
        if w == 0:
            continue
        nb = CHUNK * int(w) // 8
        packed = buf[(starts[rows][:, None] + np.arange(nb)).reshape(-1)]
        out[rows] = unpack_chunks(packed, int(w), t)
    return FixedWidthBlock(out.reshape(-1)[:num_values].view(np.uint8), t, num_values)


def _chunk_headers(buf: np.ndarray, n_chunks: int, t: int) -> tuple[np.ndarray, np.ndarray]:
    """Bit width and packed-data start of each of ``n_chunks`` inline chunks in ``buf``."""
    wb = t // 8
    widths, starts = np.empty(n_chunks, np.int64), np.empty(n_chunks, np.int64)
    pos = 0
    for c in range(n_chunks):  # one iteration per 1024 values: header walk only
        require(pos + wb <= len(buf), "inline bitpacking: chunk header past the end of the buffer")
        w = int.from_bytes(buf[pos : pos + wb].tobytes(), "little")
        require(w <= t, f"inline bitpacking: bit width {w} for {t}-bit values")
        widths[c], starts[c] = w, pos + wb
        pos += wb + CHUNK * w // 8
        require(pos <= len(buf), "inline bitpacking: packed chunk past the end of the buffer")
    return widths, starts


def pack_inline_chunks(block: FixedWidthBlock) -> tuple[np.ndarray, np.ndarray]:
    """Inline-pack every 1024 values of a block at once: (bytes, start of each chunk and the end).

    The widths come from one reduction over the chunks; one numba pass (bitpacking_kernel.pack_inline) writes every
    chunk's width word and packed words."""
    t = block.bits_per_value
    raw = _as_uint(block, t)
    widths = _chunk_widths(raw, t)
    hb = t // 8
    sizes = hb + widths * (CHUNK // 8)
    starts = np.zeros(len(widths) + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    return pack_inline(raw, widths, starts[:-1] // hb, int(starts[-1]) // hb), starts


def compress_inline_bitpacking(block: FixedWidthBlock) -> tuple[pb.CompressiveEncoding, list[np.ndarray]]:
    """Pack each 1024 values with its own width (the last chunk zero padded)."""
    t = block.bits_per_value
    out, _ = pack_inline_chunks(block)
    enc = pb.CompressiveEncoding(inline_bitpacking=pb.InlineBitpacking(uncompressed_bits_per_value=t))
    return enc, [out]


def _chunk_widths(raw: np.ndarray, t: int) -> np.ndarray:
    """Bit width of each 1024 values of ``raw`` (unsigned; the last chunk may be shorter)."""
    n_chunks = -(-len(raw) // CHUNK)
    whole = len(raw) // CHUNK
    maxes = np.zeros(n_chunks, raw.dtype)
    if whole:
        maxes[:whole] = raw[: whole * CHUNK].reshape(whole, CHUNK).max(axis=1)
    if n_chunks > whole:
        maxes[whole] = raw[whole * CHUNK :].max()
    return bit_widths(maxes[:, None], t)


def inline_bitpacking_size(block: FixedWidthBlock) -> int:
    """Bytes compress_inline_bitpacking would produce (for the writer's choice)."""
    t = block.bits_per_value
    widths = _chunk_widths(_as_uint(block, t), t)
    return int(len(widths) * t // 8 + (widths * CHUNK // 8).sum())


# ----------------------------------------------------------------------------- out of line


def out_of_line_bits(desc: pb.OutOfLineBitpacking) -> tuple[int, int]:
    t = int(desc.uncompressed_bits_per_value)
    if t not in (8, 16, 32, 64):
        raise UnsupportedEncodingError(f"out-of-line bitpacking of {t}-bit values")
    if desc.values.WhichOneof("compression") != "flat":
        raise UnsupportedEncodingError("out-of-line bitpacking whose values are not flat")
    w = int(desc.values.flat.bits_per_value)
    require(w <= t, f"out-of-line bitpacking: bit width {w} for {t}-bit values")
    return t, w


def decompress_out_of_line_bitpacking(
    desc: pb.OutOfLineBitpacking, buffer: np.ndarray, num_values: int
) -> FixedWidthBlock:
    """Decode a whole buffer packed with one width (tail packed or raw)."""
    t, w = out_of_line_bits(desc)
    buf = as_u8(buffer)
    dt = uint_dtype(t)
    wb = t // 8
    whole, tail = divmod(num_values, CHUNK)
    chunk_bytes = CHUNK * w // 8
    check_size((whole + 1) * CHUNK * wb, "bitpacked values")
    full_len = whole * chunk_bytes
    raw_tail = tail > 0 and len(buf) == full_len + tail * wb
    n_packed = whole + (1 if tail and not raw_tail else 0)
    require(
        len(buf) >= n_packed * chunk_bytes + (tail * wb if raw_tail else 0),
        f"out-of-line bitpacking: {len(buf)} bytes is short for {num_values} values of {w} bits",
    )
    if w and n_packed and not raw_tail:  # the unpacked chunks are the values (a large dictionary: no copy)
        out = unpack_chunks(buf[: n_packed * chunk_bytes], w, t).reshape(-1)
        return FixedWidthBlock(out[:num_values].view(np.uint8), t, num_values)
    out = np.zeros(n_packed * CHUNK + (tail if raw_tail else 0), dtype=dt)
    if w and n_packed:
        out[: n_packed * CHUNK] = unpack_chunks(buf[: n_packed * chunk_bytes], w, t).reshape(-1)
    if raw_tail:
        out[n_packed * CHUNK :] = np.frombuffer(buf[full_len : full_len + tail * wb].tobytes(), dtype=dt)
    return FixedWidthBlock(out[:num_values].view(np.uint8), t, num_values)


def compress_out_of_line_bitpacking(
    block: FixedWidthBlock, width: int | None = None
) -> tuple[pb.CompressiveEncoding, list[np.ndarray]]:
    """Pack every value with one width (the page's largest); the tail packed or raw, whichever is smaller."""
    t = block.bits_per_value
    vals = _as_uint(block, t)
    if width is None:
        width = int(bit_widths(vals[None, :], t)[0]) if len(vals) else 0
    whole, tail = divmod(len(vals), CHUNK)
    parts = [pack_chunks(vals[: whole * CHUNK].reshape(whole, CHUNK), width, t)]
    if tail:
        if width * (CHUNK - tail) < (t - width) * tail:
            parts.append(pack_chunks(_chunked(vals[whole * CHUNK :]), width, t))
        else:
            parts.append(vals[whole * CHUNK :].view(np.uint8))
    enc = pb.CompressiveEncoding(
        out_of_line_bitpacking=pb.OutOfLineBitpacking(
            uncompressed_bits_per_value=t, values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=width))
        )
    )
    return enc, [np.concatenate(parts)]


_LANE_OF: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def lane_positions(t: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, lane) of each of the 1024 values of a FastLanes chunk of T-bit values (for
    ``bitpacking_kernel.unpack_one``)."""
    if t not in _LANE_OF:
        gather, _ = _permutations(t)  # value index -> lane-major position (lane * t + row)
        _LANE_OF[t] = ((gather % t).astype(np.int64), (gather // t).astype(np.int64))
    return _LANE_OF[t]
