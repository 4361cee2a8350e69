"""FSST training and compression in numpy: the same symbols and codes as write_fsst.py's kernels.

A greedy longest-match parse is sequential within a string but independent across strings, so
these run it as steps over every unfinished string at once (one symbol per string per step).
Training replays the kernel's candidate table exactly: candidates in the kernel's insertion
order, their slots in its linear-probing hash table (only the probing is a Python loop, over
distinct candidates), the stable sort of gains and the 3-byte-hash collision rule.  A fresh
process writes with these (no numba import, no compilation); write_fsst.py switches to the
kernels once the path is hot (util/jit.py ``NumpyUntilHot``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

HASH_SLOTS = 1024
CAND_SLOTS = 1 << 16
ESCAPE = 255
ROUNDS = 5
#: strings parsed together (their temporaries stay in cache and are reused by the allocator)
BLOCK = 16384
_MASKS = np.array([0] + [(1 << (8 * i)) - 1 for i in range(1, 8)] + [-1], dtype=np.int64)


def _hash3(w: np.ndarray) -> np.ndarray:
    x = (w & 0xFFFFFF) * 2971215073
    return (x ^ (x >> 15)) & (HASH_SLOTS - 1)


def build_lookup(sym_val: np.ndarray, sym_len: np.ndarray) -> tuple[np.ndarray, ...]:
    """The kernel's lookup tables (``length << 8 | code`` entries; a later symbol wins a shared slot)."""
    n = len(sym_len)
    codes = np.arange(n, dtype=np.int64)
    h_val = np.zeros(HASH_SLOTS, np.int64)
    h_info = np.zeros(HASH_SLOTS, np.uint16)
    short = np.zeros(65536, np.uint16)
    byte = np.zeros(256, np.uint16)
    one = sym_len == 1
    byte[sym_val[one] & 0xFF] = (1 << 8) | codes[one]  # fancy assignment: the last write wins, as in the loop
    two = sym_len == 2
    short[sym_val[two] & 0xFFFF] = (2 << 8) | codes[two]
    long = sym_len >= 3
    h = _hash3(sym_val[long])
    h_val[h] = sym_val[long]
    h_info[h] = (sym_len[long] << 8) | codes[long]
    empty = short == 0
    short[empty] = byte[np.arange(65536)[empty] & 0xFF]
    return h_val, h_info, short, byte


def _unaligned_words(padded: np.ndarray) -> np.ndarray:
    """A view of the little-endian int64 at every position of ``padded`` but its last 7 (unaligned loads:
    a gather reads the bytes in place, which stay in cache, instead of an 8x larger array of words)."""
    words: NDArray[np.int64] = np.ndarray((len(padded) - 7,), "<i8", buffer=np.ascontiguousarray(padded), strides=(1,))
    return words


class Matcher:
    """The kernel's lookup of the longest symbol at a position, as array operations over many positions."""

    def __init__(self, sym_val: np.ndarray, sym_len: np.ndarray) -> None:
        h_val, h_info, short, byte = build_lookup(sym_val, sym_len)
        slots = np.flatnonzero(h_info)
        # a symbol holding a 0 byte could match the bytes past a string's end, which read as 0 once masked:
        # only then are lengths checked against what is left and the last byte looked up in ``byte``
        self.sym_zero = _has_zero_byte(h_val[slots], h_info[slots].astype(np.int64) >> 8) or bool(
            (np.flatnonzero((short >> 8) == 2) >> 8 == 0).any()
        )
        # per hash slot: the symbol's ``length << 8 | code``, value and the mask of its length
        self.info = h_info.astype(np.int64)
        self.val = np.where(self.info > 0, h_val, -1)  # an empty slot (mask 0) never matches
        self.mask = _MASKS[self.info >> 8]
        escape = np.int64((1 << 8) | ESCAPE)
        self.fall = np.where(short == 0, escape, short.astype(np.int64))
        self.fall1 = np.where(byte == 0, escape, byte.astype(np.int64))

    def match(self, w: NDArray[np.int64], rem: NDArray[np.int64] | None) -> NDArray[np.int64]:
        """``length << 8 | code`` at words ``w`` (bytes past the string zeroed; ``rem``: bytes left, needed
        only with ``sym_zero``)."""
        x = w & 0xFFFFFF
        x *= 2971215073
        x ^= x >> 15
        x &= HASH_SLOTS - 1
        info = self.info[x]
        hit = (w & self.mask[x]) == self.val[x]
        fb = self.fall[w & 0xFFFF]
        if self.sym_zero:
            assert rem is not None  # callers pass the bytes left whenever sym_zero
            hit &= (info >> 8) <= rem
            fb = np.where(rem >= 2, fb, self.fall1[w & 0xFF])
        codes: NDArray[np.int64] = np.where(hit, info, fb)
        return codes


def parse(
    padded: np.ndarray, starts: np.ndarray, ends: np.ndarray, matcher: Matcher, pairs: bool = False
) -> tuple[np.ndarray, ...]:
    """Greedy parse of the non-empty strings ``padded[starts[i]:ends[i]]`` (8 readable bytes past the last).

    Returns, step by step concatenated, (string, matched entry ``length << 8 | code``, position, output byte
    of the code within its string); with ``pairs`` the last is the previous symbol (-1 at a string's start,
    an escaped byte b as 256 + b).
    """
    words = _unaligned_words(padded[: int(ends[-1]) + 8] if len(ends) else padded[:8])
    idx = np.arange(len(starts))
    pos, end = starts.astype(np.int64), ends.astype(np.int64)
    o = np.full(len(idx), -1, np.int64) if pairs else np.zeros(len(idx), np.int64)
    parts = []
    while len(idx):
        rem = end - pos
        w = words[pos] & _MASKS[np.minimum(rem, 8)]  # the bytes past the string read as 0
        m = matcher.match(w, rem if matcher.sym_zero else None)
        parts.append((idx, m, pos, o))
        if pairs:
            c = m & 0xFF
            o = np.where(c == ESCAPE, 256 + (w & 0xFF), c)  # the previous symbol of the next step
        else:
            o = o + 1 + ((m & 0xFF) == ESCAPE)
        pos = pos + (m >> 8)
        more = pos < end
        if not more.all():
            idx, pos, end, o = idx[more], pos[more], end[more], o[more]
    if not parts:
        z = np.zeros(0, np.int64)
        return z, z, z, z
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))


def _has_zero_byte(vals: np.ndarray, lens: np.ndarray) -> bool:
    """Does any symbol (values, lengths) hold a 0 byte among its ``length`` bytes?"""
    b = vals.astype("<i8").view(np.uint8).reshape(-1, 8)
    return bool(((b == 0) & (np.arange(8) < lens[:, None])).any())


def encode(
    data: np.ndarray, offsets: np.ndarray, sym_val: np.ndarray, sym_len: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``write_fsst._encode`` in numpy: (codes, offsets) of the strings ``data[offsets[i]:offsets[i + 1]]``
    (``data`` with 8 readable bytes past ``offsets[-1]``, ``offsets[0] == 0``).

    Each step loads 8 bytes at every unfinished string's position (unaligned, masked to the string),
    looks its symbol up and writes the code straight into that string's slot of a scratch buffer
    (twice its input bytes: a code and an escaped byte at most per byte), as the kernel does; the
    slots' used prefixes are gathered once at the end.  Blocks of ``BLOCK`` strings at a time keep
    each step's arrays in cache.
    """
    offsets = np.asarray(offsets, np.int64)
    ns = len(offsets) - 1
    matcher = Matcher(sym_val, sym_len)
    slot = 2 * (offsets[:-1] - offsets[0])  # where each string's codes start in the scratch buffer
    scratch = np.empty(2 * int(offsets[-1] - offsets[0]) + 8, np.uint8)
    cursor = slot.copy()  # where each string's codes end, once parsed (empty strings: at their start)
    for b0 in range(0, ns, BLOCK):
        b1 = min(b0 + BLOCK, ns)
        base = int(offsets[b0])
        block = offsets[b0 : b1 + 1] - base
        live = np.flatnonzero(block[1:] > block[:-1])
        if not len(live):
            continue
        pos, end = block[:-1][live], block[1:][live]
        words = _unaligned_words(data[base : int(end[-1]) + base + 8])
        idx = live + b0
        o = slot[idx]
        while True:
            rem = end - pos
            w = words[pos] & _MASKS[np.minimum(rem, 8)]  # the bytes past the string read as 0
            m = matcher.match(w, rem if matcher.sym_zero else None)
            code = m & 0xFF
            scratch[o] = code
            esc = code == ESCAPE
            if esc.any():
                scratch[o[esc] + 1] = w[esc] & 0xFF  # the escaped byte (w holds the bytes from pos)
            o = o + 1 + esc
            pos = pos + (m >> 8)
            more = pos < end
            if not more.all():
                cursor[idx] = o  # the strings still going overwrite theirs later
                keep = np.flatnonzero(more)
                if not len(keep):
                    break
                idx, pos, end, o = idx[keep], pos[keep], end[keep], o[keep]
    sizes = cursor - slot
    out_offs = np.zeros(ns + 1, np.int64)
    np.cumsum(sizes, out=out_offs[1:])
    total = int(out_offs[-1])
    src = np.arange(total, dtype=np.int64) + np.repeat(slot - out_offs[:-1], sizes)
    return scratch[src], out_offs


def _candidates(
    count1: np.ndarray, count2: np.ndarray, sym_val: np.ndarray, sym_len: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, lengths, gains) of the kernel's candidates in its insertion order (c1, then its pairs by c2)."""
    vals = np.concatenate([np.zeros(256, np.int64), np.arange(256, dtype=np.int64)])
    lens = np.ones(512, np.int64)
    n = len(sym_len)
    vals[:n], lens[:n] = sym_val, sym_len
    c1s = np.flatnonzero(count1)
    single_gain = count1[c1s] * lens[c1s] * np.where(lens[c1s] == 1, 8, 1)
    p1, p2 = np.nonzero(count2)  # row-major: by c1, then c2
    keep = lens[p1] < 8
    p1, p2 = p1[keep], p2[keep]
    l1, l2 = lens[p1], lens[p2]
    l3 = np.minimum(l1 + l2, 8)
    v3 = (vals[p1] | (vals[p2] << (8 * l1))) & _MASKS[l3]
    pair_gain = count2[p1, p2] * l3
    # merge: a c1's single comes before its pairs
    key1 = np.concatenate([c1s * 2, p1 * 2 + 1])
    order = np.argsort(key1, kind="stable")
    v = np.concatenate([vals[c1s], v3])[order]
    ln = np.concatenate([lens[c1s], l3])[order]
    g = np.concatenate([single_gain, pair_gain])[order]
    return v, ln, g


def _slots(v: np.ndarray, ln: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct candidates with summed gains, and the slot the kernel's linear probing gives each."""
    order = np.lexsort((ln, v))  # equal (value, length) pairs together, each group in input order
    sv, sl = v[order], ln[order]
    heads = np.flatnonzero(np.concatenate([[True], (sv[1:] != sv[:-1]) | (sl[1:] != sl[:-1])]))
    first = order[heads]  # each distinct candidate's first position
    gains = np.add.reduceat(g[order], heads) if len(heads) else np.zeros(0, np.int64)
    ins = np.argsort(first, kind="stable")  # distinct keys in first-insertion order
    first = first[ins]
    gains = gains[ins]
    dv, dl = v[first], ln[first]
    home = ((dv * np.int64(-7046029254386353131)) ^ dl) & (CAND_SLOTS - 1)
    taken: set[int] = set()
    mask = CAND_SLOTS - 1
    hl = home.tolist()
    for i, h in enumerate(hl):  # the kernel's probing, one distinct candidate at a time
        while h in taken:
            h = (h + 1) & mask
        taken.add(h)
        hl[i] = h
    return dv, dl, gains, np.array(hl, np.int64)


def train(sample: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``write_fsst._train`` in numpy: the symbol table (values, lengths) of a sample."""
    offsets = np.asarray(offsets, np.int64)
    padded = np.zeros(len(sample) + 8, np.uint8)
    padded[: len(sample)] = sample
    sym_val = np.zeros(0, np.int64)
    sym_len = np.zeros(0, np.int64)
    for _ in range(ROUNDS):
        live = np.flatnonzero(offsets[1:] > offsets[:-1])
        s, m, p, prev = parse(padded, offsets[:-1][live], offsets[1:][live], Matcher(sym_val, sym_len), pairs=True)
        c = m & 0xFF
        c = np.where(c == ESCAPE, 256 + padded[p].astype(np.int64), c)
        count1 = np.bincount(c, minlength=512).astype(np.int64)
        follows = prev >= 0  # adjacent symbols of one string
        pairs = prev[follows] * 512 + c[follows]
        count2 = np.bincount(pairs, minlength=512 * 512).astype(np.int64).reshape(512, 512)
        v, ln, g = _candidates(count1, count2, sym_val, sym_len)
        dv, dl, gains, slots = _slots(v, ln, g)
        by_slot = np.argsort(slots)
        dv, dl, gains = dv[by_slot], dl[by_slot], gains[by_slot]
        order = np.argsort(-gains, kind="stable")
        dv, dl, gains = dv[order], dl[order], gains[order]
        stop = np.flatnonzero(gains <= 0)
        if len(stop):
            dv, dl, gains = dv[: stop[0]], dl[: stop[0]], gains[: stop[0]]
        keep = np.ones(len(dv), bool)
        long = np.flatnonzero(dl >= 3)
        if len(long):
            _, first = np.unique(_hash3(dv[long]), return_index=True)
            keep[long] = False
            keep[long[first]] = True  # the first candidate of each 3-byte hash slot
        chosen = np.flatnonzero(keep)[:255]
        sym_val, sym_len = dv[chosen].copy(), dl[chosen].copy()
    return sym_val, sym_len
