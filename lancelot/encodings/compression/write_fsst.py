"""FSST training and compression (the writer side of lance.encodings21.Fsst).

The symbol table is built like the FSST paper's: a few rounds over a ~16 KiB
sample, each compressing the sample with the current table, counting how often
each symbol (or escaped byte) and each pair of adjacent ones occurs, and
keeping the 255 candidates (symbols and pair concatenations up to 8 bytes)
with the largest gain (count x length, single bytes weighted x8).  Lookups use
FSST's structures: a 1024-slot hash table on the first three bytes for
symbols of 3+ bytes (one symbol per slot) and a 64 Ki table on the first two
bytes for the shorter ones.

Greedy longest-match parsing is sequential within a string, so training and
encoding are numba kernels (cached on disk, releasing the GIL: the writer
encodes pages on a background thread).  Until they are loaded, the same parse
runs across all strings at once in numpy (write_fsst_numpy.py: the same symbols
and codes), so a fresh process writes without compiling; after ``HOT_CALLS`` pages
the kernels are prepared in the background (jit.py ``NumpyUntilHot``).  Any
table in the reference's serialization decodes with pylance, whatever symbols we
choose.
"""

from __future__ import annotations

import itertools

import numpy as np

from lancelot.encodings.compression import pcg64, write_fsst_numpy
from lancelot.encodings.compression.block import VariableWidthBlock
from lancelot.encodings.compression.buffers import as_u8
from lancelot.encodings.compression.fsst import LEAST_INPUT_SIZE, SymbolTable, fsst_description
from lancelot.encodings.compression.variable import compress_variable, variable_encoding
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.jit import NumpyUntilHot, lazy_intrinsic, njit

SAMPLE_TARGET = 1 << 14
SAMPLE_PIECE = 512
ROUNDS = 5
HASH_SLOTS = 1024
CAND_SLOTS = 1 << 16  # > 512 symbols + every adjacent pair of a 16 KiB sample
ESCAPE = 255
load_u64 = lazy_intrinsic("lancelot.util.jit_intrinsics", "load_u64")


@njit(cache=True)
def _hash3(w: np.int64) -> np.int64:
    x = (w & 0xFFFFFF) * 2971215073
    h: np.int64 = (x ^ (x >> 15)) & (HASH_SLOTS - 1)  # (numpy's stubs type scalars as Any for Python 3.10)
    return h


@njit(cache=True, inline="always")
def _load(data: np.ndarray, pos: int, end: int) -> tuple[np.int64, int]:
    """Up to 8 bytes at pos (not past end), little endian, and how many."""
    if end - pos >= 8:
        w = (
            np.int64(data[pos])
            | (np.int64(data[pos + 1]) << 8)
            | (np.int64(data[pos + 2]) << 16)
            | (np.int64(data[pos + 3]) << 24)
            | (np.int64(data[pos + 4]) << 32)
            | (np.int64(data[pos + 5]) << 40)
            | (np.int64(data[pos + 6]) << 48)
            | (np.int64(data[pos + 7]) << 56)
        )
        return w, 8
    n = end - pos
    w = np.int64(0)
    for i in range(n):
        w |= np.int64(data[pos + i]) << (8 * i)
    return w, n


@njit(cache=True)
def _mask(length: int) -> np.int64:
    # (the annotated locals: numpy's stubs type scalars as Any for Python 3.10)
    if length >= 8:
        full: np.int64 = np.int64(-1)
        return full
    mask: np.int64 = (np.int64(1) << (8 * length)) - 1
    return mask


@njit(cache=True)
def _build_lookup(
    sym_val: np.ndarray, sym_len: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Lookup tables for n symbols, entries ``length << 8 | code`` (0: none).

    A 1024-slot hash table on the first three bytes (3+ byte symbols, with their
    values), a 64 Ki table on the first two bytes (2-byte symbols, else the 1-byte
    symbol of the first byte) and a 256 table for the last byte of a string.
    """
    h_val = np.zeros(HASH_SLOTS, np.int64)
    h_info = np.zeros(HASH_SLOTS, np.uint16)
    short = np.zeros(65536, np.uint16)
    byte = np.zeros(256, np.uint16)
    for c in range(n):
        if sym_len[c] == 1:
            byte[sym_val[c] & 0xFF] = (1 << 8) | c
    for c in range(n):
        if sym_len[c] == 2:
            short[sym_val[c] & 0xFFFF] = (2 << 8) | c
        elif sym_len[c] >= 3:
            h = _hash3(sym_val[c])
            h_val[h], h_info[h] = sym_val[c], (sym_len[c] << 8) | c
    for i in range(65536):
        if short[i] == 0:
            short[i] = byte[i & 0xFF]
    return h_val, h_info, short, byte


@njit(cache=True, inline="always")
def _match(
    data: np.ndarray,
    pos: int,
    end: int,
    h_val: np.ndarray,
    h_info: np.ndarray,
    short: np.ndarray,
    byte: np.ndarray,
    masks: np.ndarray,
) -> int:
    """``length << 8 | code`` of the symbol to use at pos; code 255 means escape one byte.

    One int, one exit: numba compiles tuple returns and early exits of this kernel several times slower.
    """
    w, r = _load(data, pos, end)
    found = 0
    if r >= 3:
        h = _hash3(w)
        info = np.int64(h_info[h])
        ln = info >> 8
        if ln > 0 and ln <= r and (w & masks[ln]) == h_val[h]:
            found = info
    if found == 0:
        e = np.int64(short[w & 0xFFFF]) if r >= 2 else np.int64(byte[w & 0xFF])
        found = e if e != 0 else (1 << 8) | ESCAPE
    return found


@njit(cache=True)
def _masks() -> np.ndarray:
    m = np.zeros(9, np.int64)
    for i in range(9):
        m[i] = _mask(i)
    return m


@njit(cache=True)
def _cand_add(keys_val: np.ndarray, keys_len: np.ndarray, gains: np.ndarray, val: int, ln: int, gain: int) -> None:
    h = ((val * -7046029254386353131) ^ ln) & (CAND_SLOTS - 1)
    while True:
        if keys_len[h] == 0:
            keys_val[h], keys_len[h], gains[h] = val, ln, gain
            return
        if keys_len[h] == ln and keys_val[h] == val:
            gains[h] += gain
            return
        h = (h + 1) & (CAND_SLOTS - 1)


@njit(cache=True, nogil=True)
def _train(sample: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sym_val = np.zeros(255, np.int64)
    sym_len = np.zeros(255, np.int64)
    n = 0
    for _ in range(ROUNDS):
        h_val, h_info, short, byte = _build_lookup(sym_val, sym_len, n)
        masks = _masks()
        count1 = np.zeros(512, np.int64)
        count2 = np.zeros((512, 512), np.int64)
        for s in range(len(offsets) - 1):
            pos, end, prev = offsets[s], offsets[s + 1], -1
            while pos < end:
                m = _match(sample, pos, end, h_val, h_info, short, byte, masks)
                c, ln = m & 0xFF, m >> 8
                if c == ESCAPE:
                    c = 256 + np.int64(sample[pos])
                count1[c] += 1
                if prev >= 0:
                    count2[prev, c] += 1
                prev = c
                pos += ln
        keys_val = np.zeros(CAND_SLOTS, np.int64)
        keys_len = np.zeros(CAND_SLOTS, np.int64)
        gains = np.zeros(CAND_SLOTS, np.int64)
        for c1 in range(512):
            if count1[c1] == 0:
                continue
            v1 = sym_val[c1] if c1 < 256 else np.int64(c1 - 256)
            l1 = sym_len[c1] if c1 < 256 else 1
            _cand_add(keys_val, keys_len, gains, v1, l1, count1[c1] * l1 * (8 if l1 == 1 else 1))
            if l1 >= 8:
                continue
            for c2 in range(512):
                if count2[c1, c2] == 0:
                    continue
                v2 = sym_val[c2] if c2 < 256 else np.int64(c2 - 256)
                l2 = sym_len[c2] if c2 < 256 else 1
                l3 = min(l1 + l2, 8)
                v3 = (v1 | (v2 << (8 * l1))) & _mask(l3)
                _cand_add(keys_val, keys_len, gains, v3, l3, count2[c1, c2] * l3)
        filled = np.flatnonzero(keys_len)  # sort only the candidates met, not every slot
        order = filled[np.argsort(-gains[filled], kind="mergesort")]
        taken = np.zeros(HASH_SLOTS, np.bool_)
        n = 0
        for i in order:
            if gains[i] <= 0 or n == 255:
                break
            ln = keys_len[i]
            if ln >= 3:
                h = _hash3(keys_val[i])
                if taken[h]:
                    continue
                taken[h] = True
            sym_val[n], sym_len[n] = keys_val[i], ln
            n += 1
    return sym_val[:n].copy(), sym_len[:n].copy()


#: strings are encoded in this many interleaved groups: each greedy parse is one long chain of dependent
#: table lookups, and advancing several independent chains per step lets the CPU overlap them (~1.6x)
GROUPS = 4


@njit(cache=True, nogil=True)
def _encode(
    data: np.ndarray, offsets: np.ndarray, sym_val: np.ndarray, sym_len: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Codes and offsets of strings ``data[offsets[i]:offsets[i + 1]]``; ``data`` must hold 8 readable bytes
    past ``offsets[-1]`` (whole words are loaded, then masked to the bytes left in the string)."""
    h_val, h_info, short, byte = _build_lookup(sym_val, sym_len, len(sym_len))
    masks = _masks()
    base = offsets[0]
    ns = len(offsets) - 1
    out = np.empty(2 * (offsets[-1] - base) + 8 * GROUPS, np.uint8)  # group g writes from 2 * its first byte
    out_offs = np.zeros(ns + 1, np.int64)
    first = np.zeros(GROUPS + 1, np.int64)  # group g encodes strings first[g] .. first[g + 1] - 1
    for g in range(GROUPS + 1):
        first[g] = ns * g // GROUPS
    cur = first[:GROUPS].copy()  # the string each group is in
    pos = np.zeros(GROUPS, np.int64)
    end = np.zeros(GROUPS, np.int64)
    o = np.zeros(GROUPS, np.int64)
    o0 = np.zeros(GROUPS, np.int64)
    for g in range(GROUPS):
        pos[g] = end[g] = offsets[first[g]]
        o[g] = o0[g] = 2 * (offsets[first[g]] - base) + 8 * g
        cur[g] -= 1  # "before the first string": the loop below moves to it
    active = GROUPS
    while active > 0:
        active = 0
        for g in range(GROUPS):
            p, e = pos[g], end[g]
            while p >= e and cur[g] < first[g + 1]:  # string done (or empty): record it, go to the next
                if cur[g] >= first[g]:
                    out_offs[cur[g] + 1] = o[g] - o0[g]
                cur[g] += 1
                if cur[g] < first[g + 1]:
                    p, e = offsets[cur[g]], offsets[cur[g] + 1]
            if cur[g] >= first[g + 1]:
                continue
            active += 1
            # the longest symbol at p (written out: numba compiles a helper call several times slower)
            w = np.int64(load_u64(data, p))  # one unaligned load (eight byte loads cost ~30% more)
            r = min(e - p, 8)
            w &= masks[r]
            h = _hash3(w)
            info = np.int64(h_info[h])
            ln = info >> 8
            hit = (ln > 0) & (ln <= r) & ((w & masks[ln]) == h_val[h])
            short_or_byte = np.int64(short[w & 0xFFFF]) if r >= 2 else np.int64(byte[w & 0xFF])
            m = info if hit else (short_or_byte if short_or_byte != 0 else (1 << 8) | ESCAPE)
            c = m & 0xFF
            out[o[g]] = c
            out[o[g] + 1] = data[p]  # the escaped byte (overwritten by the next code otherwise)
            o[g] += 1 + (c == ESCAPE)
            pos[g], end[g] = p + (m >> 8), e
    size = 0
    for g in range(GROUPS):
        size += o[g] - o0[g]
    codes = np.empty(size, np.uint8)
    at = 0
    for g in range(GROUPS):
        n = o[g] - o0[g]
        codes[at : at + n] = out[o0[g] : o[g]]
        for k in range(first[g] + 1, first[g + 1] + 1):
            out_offs[k] += at
        at += n
    return codes, out_offs


#: fresh processes train and encode in numpy until this many pages (then the kernels, prepared meanwhile)
#: or this many input bytes: the numpy encode costs ~4x the kernel per byte (~0.17 s more per 16 MiB), so a
#: bulk writer (a 1M-row TPC-H append is ~25 MB of l_comment) switches within its first file, while a
#: first write of a few hundred thousand rows (TPC-H orders 200k: ~10 MB of o_comment) never starts a
#: compilation (several seconds of a background thread, holding the GIL much of the time)
WARM_BYTES = 16 << 20
HOT_TRAIN = NumpyUntilHot(_train)
HOT_ENCODE = NumpyUntilHot(_encode, _train, warm_work=WARM_BYTES)


def _sample(data: np.ndarray, offsets: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """About SAMPLE_TARGET bytes of pieces (<= 512 bytes) of random strings."""
    total = int(offsets[-1] - offsets[0])
    if total <= SAMPLE_TARGET:
        return data[int(offsets[0]) : int(offsets[-1])], (offsets - offsets[0]).astype(np.int64)
    n = len(offsets) - 1
    picks = _picks(offsets, n, max(1, 4 * SAMPLE_TARGET // max(1, total // n)), seed)
    starts = offsets[picks]
    lens = np.minimum(offsets[picks + 1] - starts, SAMPLE_PIECE)
    keep = np.cumsum(lens) <= SAMPLE_TARGET
    starts, lens = starts[keep], lens[keep]
    s_offs = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=s_offs[1:])
    src = np.arange(int(s_offs[-1]), dtype=np.int64) + np.repeat(starts - s_offs[:-1], lens)
    return data[src], s_offs


def _picks(offsets: np.ndarray, n: int, size: int, seed: int) -> np.ndarray:
    """The first draws of ``default_rng(seed).integers(0, n, size)``: at least those whose pieces fill
    SAMPLE_TARGET (``_sample`` keeps only them).  Seed 0 draws through pcg64.py (the same numbers,
    without importing numpy.random: 30-50 ms in a fresh process)."""
    if seed != 0 or n > pcg64.MAX_N:
        return np.random.default_rng(seed).integers(0, n, size=size)
    draws = pcg64.integers(n)
    parts, filled, total = [], 0, 0
    while filled < size and total <= SAMPLE_TARGET:
        part = np.fromiter(itertools.islice(draws, min(256, size - filled)), np.int64)
        parts.append(part)
        filled += len(part)
        total += int(np.minimum(offsets[part + 1] - offsets[part], SAMPLE_PIECE).sum())
    return np.concatenate(parts)


def _arrays(block: VariableWidthBlock) -> tuple[np.ndarray, np.ndarray]:
    return as_u8(block.data), np.asarray(block.offsets, dtype=np.int64)


def train_fsst(block: VariableWidthBlock, force: bool = False) -> SymbolTable:
    """A symbol table for the strings of ``block`` (switched off below 32 KiB, as pylance does, unless
    ``force``: then trained on any non-empty input)."""
    data, offs = _arrays(block)
    if len(offs) < 2 or offs[-1] - offs[0] < (1 if force else LEAST_INPUT_SIZE):
        return SymbolTable(np.zeros((0, 8), np.uint8), np.zeros(0, np.uint8), False)
    sample, s_offs = _sample(data, offs)
    sample = np.ascontiguousarray(sample)
    if HOT_TRAIN.ready():
        sym_val, sym_len = _train(sample, s_offs)
    else:
        HOT_TRAIN.numpy_call(lambda: _train(sample.copy(), s_offs.copy()))
        sym_val, sym_len = write_fsst_numpy.train(sample, s_offs)
    symbols = sym_val.astype("<i8").view(np.uint8).reshape(-1, 8)
    return SymbolTable(symbols, sym_len.astype(np.uint8), True)


def _frozen(a: np.ndarray) -> np.ndarray:
    """A read-only view: the kernel gets one signature whether the bytes are Arrow's (read-only) or a copy."""
    view: np.ndarray = a.view()
    view.flags.writeable = False
    return view


def fsst_encode(table: SymbolTable, block: VariableWidthBlock) -> VariableWidthBlock:
    """The strings of ``block`` compressed with ``table`` (unchanged when its switch is off)."""
    if not table.switch_on:
        return block
    data, offs = _arrays(block)
    a, b = int(offs[0]), int(offs[-1])
    sym_val = np.ascontiguousarray(table.symbols).reshape(-1).view("<i8").astype(np.int64)
    lengths = table.lengths.astype(np.int64)
    if HOT_ENCODE.ready() and len(data) >= b + 8 and data.flags.c_contiguous:
        # 8 bytes of the buffer follow the strings (a piece of a page, not its last): read in place
        out, out_offs = _encode(_frozen(data), _frozen(offs), sym_val, lengths)
        return VariableWidthBlock(np.asarray(out_offs, np.int64).view(np.uint64), out, block.num_values)
    padded = np.zeros(b - a + 8, np.uint8)  # _encode loads whole words
    padded[: b - a] = data[a:b]
    rel = offs - a
    if HOT_ENCODE.ready():
        out, out_offs = _encode(_frozen(padded), _frozen(rel), sym_val, lengths)
    else:

        def warm() -> None:
            _encode(_frozen(padded[:8].copy()), _frozen(np.zeros(1, np.int64)), sym_val.copy(), lengths.copy())
            _train(padded[:0].copy(), np.zeros(1, np.int64))

        HOT_ENCODE.numpy_call(warm, b - a)
        out, out_offs = write_fsst_numpy.encode(padded, rel, sym_val, lengths)
    return VariableWidthBlock(np.asarray(out_offs, np.int64).view(np.uint64), out, block.num_values)


def compress_fsst(
    block: VariableWidthBlock, table: SymbolTable | None = None, bits: int = 32
) -> tuple[pb.CompressiveEncoding, list[np.ndarray]]:
    """One mini-block chunk: FSST-compressed strings in the Variable chunk layout."""
    table = table if table is not None else train_fsst(block)
    _, bufs = compress_variable(fsst_encode(table, block), bits)
    return fsst_description(table, variable_encoding(bits)), bufs


def compress_fsst_per_value(
    block: VariableWidthBlock, table: SymbolTable | None = None, bits: int = 32
) -> tuple[pb.CompressiveEncoding, VariableWidthBlock]:
    """Full-zip: the compressed strings, to be zipped by the structural layer."""
    table = table if table is not None else train_fsst(block)
    return fsst_description(table, variable_encoding(bits)), fsst_encode(table, block)
