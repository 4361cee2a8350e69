"""FSST training and compression in numpy: the same symbols and codes as fsst_encode.py's kernels.

A greedy longest-match parse is sequential within a string but independent across strings, so
these run it as steps over every unfinished string at once (one symbol per string per step).
Training replays the kernel's candidate table exactly: candidates in the kernel's insertion
order, their slots in its linear-probing hash table (only the probing is a Python loop, over
distinct candidates), the stable sort of gains and the 3-byte-hash collision rule.  A fresh
process writes with these (no numba import, no compilation); fsst_encode.py switches to the
kernels once the path is hot (compression/jit.py ``NumpyUntilHot``).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

HASH_SLOTS = 1024
CAND_SLOTS = 1 << 16
ESCAPE = 255
ROUNDS = 5
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


def _words(padded: np.ndarray) -> np.ndarray:
    """An (len - 7, 8) view: row p is the 8 bytes at p (``padded`` has 8 bytes past the data)."""
    return as_strided(padded, shape=(len(padded) - 7, 8), strides=(padded.strides[0], padded.strides[0]))


def parse(padded: np.ndarray, offsets: np.ndarray, tables: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """Greedy parse of every string ``padded[offsets[i]:offsets[i + 1]]``.

    Returns, step by step concatenated, (string, step, matched entry ``length << 8 | code``, position):
    within a string the steps are in order.
    """
    h_val, h_info, short, byte = tables
    win = _words(padded)
    idx = np.flatnonzero(offsets[1:] > offsets[:-1])
    pos = offsets[:-1][idx].astype(np.int64)
    end = offsets[1:][idx].astype(np.int64)
    out_s, out_m, out_p = [], [], []
    while len(idx):
        w = np.ascontiguousarray(win[pos]).view("<i8").reshape(-1)
        r = np.minimum(end - pos, 8)
        w &= _MASKS[r]
        h = _hash3(w)
        info = h_info[h].astype(np.int64)
        ln = info >> 8
        hit = (ln > 0) & (ln <= r) & ((w & _MASKS[ln]) == h_val[h])
        sb = np.where(r >= 2, short[w & 0xFFFF], byte[w & 0xFF]).astype(np.int64)
        m = np.where(hit, info, np.where(sb != 0, sb, (1 << 8) | ESCAPE))
        out_s.append(idx)
        out_m.append(m)
        out_p.append(pos)
        pos = pos + (m >> 8)
        more = pos < end
        if not more.all():
            idx, pos, end = idx[more], pos[more], end[more]
    if not out_s:
        z = np.zeros(0, np.int64)
        return z, z, z
    return np.concatenate(out_s), np.concatenate(out_m), np.concatenate(out_p)


def encode(data: np.ndarray, offsets: np.ndarray, sym_val: np.ndarray,
           sym_len: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``fsst_encode._encode`` in numpy: (codes, offsets) of the strings ``data[offsets[i]:offsets[i + 1]]``
    (``data`` with 8 readable bytes past ``offsets[-1]``, ``offsets[0] == 0``)."""
    offsets = np.asarray(offsets, np.int64)
    ns = len(offsets) - 1
    s, m, p = parse(data, offsets, build_lookup(sym_val, sym_len))
    code = (m & 0xFF).astype(np.uint8)
    esc = code == ESCAPE
    nbytes = 1 + esc.astype(np.int64)
    per_string = np.bincount(s, weights=nbytes, minlength=ns).astype(np.int64) if len(s) else np.zeros(ns, np.int64)
    out_offs = np.zeros(ns + 1, np.int64)
    np.cumsum(per_string, out=out_offs[1:])
    # the steps are grouped by step, not by string: a stable sort by string puts each string's steps in order
    order = np.argsort(s, kind="stable")
    nb = nbytes[order]
    at = np.cumsum(nb) - nb  # strings are consecutive after the sort, so this is each code's place
    codes = np.empty(int(out_offs[-1]), np.uint8)
    codes[at] = code[order]
    e = esc[order]
    codes[at[e] + 1] = data[p[order][e]]
    return codes, out_offs


def _candidates(count1: np.ndarray, count2: np.ndarray, sym_val: np.ndarray,
                sym_len: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    both = np.stack([v, ln], axis=1)
    _, first, inverse = np.unique(both, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    gains = np.zeros(len(first), np.int64)
    np.add.at(gains, inverse, g)
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
    """``fsst_encode._train`` in numpy: the symbol table (values, lengths) of a sample."""
    offsets = np.asarray(offsets, np.int64)
    padded = np.zeros(len(sample) + 8, np.uint8)
    padded[:len(sample)] = sample
    sym_val = np.zeros(0, np.int64)
    sym_len = np.zeros(0, np.int64)
    for _ in range(ROUNDS):
        s, m, p = parse(padded, offsets, build_lookup(sym_val, sym_len))
        c = m & 0xFF
        c = np.where(c == ESCAPE, 256 + padded[p].astype(np.int64), c)
        count1 = np.bincount(c, minlength=512).astype(np.int64)
        order = np.argsort(s, kind="stable")
        s_o, c_o = s[order], c[order]
        follows = s_o[1:] == s_o[:-1]  # adjacent symbols of one string
        pairs = c_o[:-1][follows] * 512 + c_o[1:][follows]
        count2 = np.bincount(pairs, minlength=512 * 512).astype(np.int64).reshape(512, 512)
        v, ln, g = _candidates(count1, count2, sym_val, sym_len)
        dv, dl, gains, slots = _slots(v, ln, g)
        by_slot = np.argsort(slots)
        dv, dl, gains = dv[by_slot], dl[by_slot], gains[by_slot]
        order = np.argsort(-gains, kind="stable")
        dv, dl, gains = dv[order], dl[order], gains[order]
        stop = np.flatnonzero(gains <= 0)
        if len(stop):
            dv, dl, gains = dv[:stop[0]], dl[:stop[0]], gains[:stop[0]]
        keep = np.ones(len(dv), bool)
        long = np.flatnonzero(dl >= 3)
        if len(long):
            _, first = np.unique(_hash3(dv[long]), return_index=True)
            keep[long] = False
            keep[long[first]] = True  # the first candidate of each 3-byte hash slot
        chosen = np.flatnonzero(keep)[:255]
        sym_val, sym_len = dv[chosen].copy(), dl[chosen].copy()
    return sym_val, sym_len
