"""FSST: Fast Static Symbol Table string compression (lance.encodings21.Fsst).

``Fsst.symbol_table`` is the reference's own serialization (rust/compression/ fsst), 2312 bytes, zero padded:

* one u64 (little endian): bits 32..63 the magic ``0x46535354`` ("FSST"), bit 24 ``encoder_switch`` (0: the strings were
  stored uncompressed, input under 32 KiB), bits 16..23 suffix_lim, bits 8..15 terminator, bits 0..7 the number of
  symbols n (at most 255);
* n u64 symbols (the symbol's bytes, first byte lowest);
* n u8 symbol lengths (1..8).

A compressed string is a sequence of codes: code c < 255 stands for symbol c; 255 is an escape and the next byte is a
literal.  ``Fsst.values`` (a Variable) describes how the compressed strings are stored: a mini-block chunk, or the
full-zip values.  Decoding walks the codes of the whole data buffer once in a numba kernel (fsst_kernel.py), after
checking the offsets."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lancelot.encodings.compression import fsst_kernel
from lancelot.encodings.compression.block import VariableWidthBlock
from lancelot.encodings.compression.buffers import as_u8, check_size, require
from lancelot.encodings.compression.fsst_numpy import decode_numpy_blocks
from lancelot.encodings.compression.segments import readonly
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.util.arrays import empty
from lancelot.util.jit import WARM_WORK, NumpyUntilHot

MAGIC = 0x46535354
ESCAPE = 255
TABLE_SIZE = 8 + 256 * 8 + 256
MAX_SYMBOL = 8
#: below this many input bytes pylance keeps the strings uncompressed (switch off)
LEAST_INPUT_SIZE = 32 * 1024
#: fsst_kernel's status codes (its kernels are lazy: numba is imported when they first run)
_OK, _ESCAPE_AT_END, _BAD_CODE = 0, 1, 2


@dataclass
class SymbolTable:
    """Decoded symbol table: symbol bytes (n, 8) and lengths (n,)."""

    symbols: np.ndarray  # uint8 (n, 8)
    lengths: np.ndarray  # uint8 (n,)
    switch_on: bool
    suffix_lim: int = 0
    terminator: int = 0
    #: decoded bytes per code of the last large decode with this table (0: none yet): sizes the next
    #: one's output without a sampling pass (a hint only: a short output is grown)
    bytes_per_code: float = 0.0
    #: the table stacked alone (``stack_tables``), kept with it: a parsed table serves every file using it
    stacked: StackedTables | None = field(default=None, compare=False, repr=False)

    @property
    def n_symbols(self) -> int:
        return len(self.lengths)


def parse_symbol_table(raw: bytes) -> SymbolTable:
    """Parse and validate the serialized table."""
    buf = np.frombuffer(bytes(raw), np.uint8)
    require(len(buf) >= 8, f"FSST symbol table of {len(buf)} bytes has no header")
    info = int.from_bytes(buf[:8].tobytes(), "little")
    require(info >> 32 == MAGIC, "FSST symbol table has a bad magic number")
    n = info & 0xFF
    require(len(buf) >= 8 + 9 * n, f"FSST symbol table of {len(buf)} bytes is short for {n} symbols")
    symbols = buf[8 : 8 + 8 * n].reshape(n, 8)
    lengths = buf[8 + 8 * n : 8 + 9 * n]
    switch_on = bool((info >> 24) & 1)
    if switch_on:
        require(bool(np.all((lengths >= 1) & (lengths <= MAX_SYMBOL))), "FSST symbol lengths outside 1..8")
    return SymbolTable(symbols, lengths, switch_on, (info >> 16) & 0xFF, (info >> 8) & 0xFF)


def serialize_symbol_table(table: SymbolTable) -> bytes:
    """The 2312-byte serialization pylance stores in Fsst.symbol_table."""
    n = table.n_symbols
    out = np.zeros(TABLE_SIZE, np.uint8)
    info = (MAGIC << 32) | (int(table.switch_on) << 24) | ((table.suffix_lim & 0xFF) << 16)
    info |= ((table.terminator & 0xFF) << 8) | n
    out[:8] = np.frombuffer(info.to_bytes(8, "little"), np.uint8)
    out[8 : 8 + 8 * n] = table.symbols.reshape(-1)
    out[8 + 8 * n : 8 + 9 * n] = table.lengths
    return out.tobytes()


def fsst_decode(table: SymbolTable, block: VariableWidthBlock) -> VariableWidthBlock:
    """Decompress every string of ``block`` (offsets into FSST-compressed bytes)."""
    if not table.switch_on:
        return block
    offs = np.asarray(block.offsets, dtype=np.int64)
    require(len(offs) == block.num_values + 1, "FSST: offsets do not match the value count")
    start, end = (int(offs[0]), int(offs[-1])) if len(offs) else (0, 0)
    data = as_u8(block.data)
    require(0 <= start <= end <= len(data), "FSST: offsets lie outside the data")
    require(bool(np.all(offs[1:] >= offs[:-1])), "FSST: offsets decrease")
    return _decode_spans(table, data, offs[:-1], offs[1:])


def fsst_decode_spans(
    table: SymbolTable, data: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> VariableWidthBlock:
    """Decompress the strings ``data[starts[s]:starts[s] + lengths[s]]`` (codes scattered in a buffer, as full-zip rows
    hold them) without first gathering them into one buffer."""
    lengths = np.asarray(lengths, dtype=np.int64)
    require(len(starts) == len(lengths), "FSST: starts and lengths differ in count")
    starts = np.where(lengths > 0, np.asarray(starts, dtype=np.int64), 0)  # an empty string may point anywhere
    data = as_u8(data)
    ends = starts + lengths
    require(
        not len(starts) or (int(starts.min()) >= 0 and int(lengths.min()) >= 0 and int(ends.max()) <= len(data)),
        "FSST: strings lie outside the data",
    )
    if not table.switch_on:
        from lancelot.encodings.compression.segments import gather

        offs = np.zeros(len(starts) + 1, dtype=np.uint64)
        np.cumsum(lengths, out=offs[1:])
        return VariableWidthBlock(offs, gather(data, starts, lengths), len(starts))
    return _decode_spans(table, data, starts, ends)


def fsst_decode_where(table: SymbolTable, data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> VariableWidthBlock:
    """Decompress the strings ``data[starts[s]:ends[s]]`` (checked by the caller: inside ``data``, in order, not
    overlapping), e.g. the strings of many mini-block chunks where they were fetched."""
    return _decode_spans(table, data, starts, ends)


def fsst_kernels_ready() -> bool:
    """Whether one-table decodes run the kernels (loaded in this process) rather than numpy."""
    return mode["decode"] == "kernel" or (mode["decode"] == "auto" and HOT_ONE.ready())


def _decode_spans(table: SymbolTable, data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> VariableWidthBlock:
    codes, lengths = readonly(data), readonly(np.ascontiguousarray(table.lengths))
    starts, ends = np.ascontiguousarray(starts), np.ascontiguousarray(ends)
    n_codes = int(ends.sum() - starts.sum()) if len(starts) else 0
    if _small(HOT_ONE):
        symbols = np.asarray(table.symbols)[None]
        status, out, out_offs = decode_numpy_blocks(
            codes,
            starts,
            ends,
            symbols,
            np.asarray(table.lengths)[None],
            np.array([table.n_symbols]),
            np.zeros(len(starts), np.int64),
        )
        _check_status(status, f"the {table.n_symbols} symbols of the table")
        if mode["decode"] == "auto":
            sym = readonly(np.ascontiguousarray(table.symbols))
            HOT_ONE.numpy_call(lambda: _decode_kernel(codes, starts[:1], ends[:1], sym, lengths, table), work=len(out))
        return VariableWidthBlock(out_offs, out, len(starts))
    sym = readonly(np.ascontiguousarray(table.symbols))
    out, out_offs, size = _decode_kernel(codes, starts, ends, sym, lengths, table, n_codes)
    return VariableWidthBlock(out_offs, out[:size], len(starts), ordered=True)


#: strings whose decoded size is measured exactly to size the output of a large decode (in SAMPLE_BLOCKS runs;
#: at most an eighth of the strings); up to EXACT_STRINGS strings are all measured
SAMPLE_STRINGS = 4096
EXACT_STRINGS = 512
SAMPLE_BLOCKS = 16


def _estimate(
    codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, lengths: np.ndarray, n_symbols: int, total_codes: int
) -> int:
    """The decoded size: exact for up to EXACT_STRINGS strings, else extrapolated (+2%) from SAMPLE_BLOCKS runs of
    consecutive strings spread over the input (runs rather than a stride: cache-friendly)."""
    n = len(starts)
    if n <= EXACT_STRINGS:
        size = fsst_kernel.decoded_size(codes, starts, ends, lengths, n_symbols)
        _check_status(-1 - size if size < 0 else _OK, f"the {n_symbols} symbols of the table")
        return size
    run = max(min(SAMPLE_STRINGS, n // 8) // SAMPLE_BLOCKS, 1)
    firsts = np.arange(SAMPLE_BLOCKS, dtype=np.int64) * (n - run) // (SAMPLE_BLOCKS - 1)
    at = (firsts[:, None] + np.arange(run)).reshape(-1)
    s_starts, s_ends = starts[at], ends[at]
    size = fsst_kernel.decoded_size(codes, s_starts, s_ends, lengths, n_symbols)
    _check_status(-1 - size if size < 0 else _OK, f"the {n_symbols} symbols of the table")
    sampled = int((s_ends - s_starts).sum())
    return min(int(total_codes * (size / max(sampled, 1)) * 1.02) + 256, total_codes * MAX_SYMBOL)


def _decode_kernel(
    codes: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    sym: np.ndarray,
    lengths: np.ndarray,
    table: SymbolTable,
    total_codes: int | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """(output, offsets, size): one pass of ``fsst_kernel.decode_from`` into an output sized from an exact count over a
    sample of the strings (every string when there are few), grown if it fills up: the full first pass over all codes
    that an exact size needs would cost almost as much as the decode. A table that already decoded many strings sizes
    the output from its bytes per code instead (a scan reads the same pages again and again: no sampling pass then).
    ``total_codes``: the codes of the strings, when the caller counted them."""
    n = len(starts)
    n_symbols = table.n_symbols
    if total_codes is None:
        total_codes = int(ends.sum() - starts.sum()) if n else 0
    learned = table.bytes_per_code
    if learned and n > EXACT_STRINGS:
        cap = min(int(total_codes * learned * 1.02) + 256, total_codes * MAX_SYMBOL)
    else:
        cap = _estimate(codes, starts, ends, lengths, n_symbols, total_codes)
    out = _output(cap)
    out_offs = empty(n + 1, np.int64)
    out_offs[0] = 0
    first, pos = 0, 0
    while True:
        status, first, pos = fsst_kernel.decode_from(
            codes, starts, ends, sym, lengths, n_symbols, out, out_offs, first, pos
        )
        if status != fsst_kernel.NO_ROOM:
            break
        left = int((ends[first:] - starts[first:]).sum())  # codes still to decode (string ``first`` on)
        ratio = pos / max(total_codes - left, 1)  # bytes per code so far
        grown = pos + int(left * max(ratio, 1.0) * 1.25) + 4096
        bigger = _output(min(max(grown, 2 * pos), pos + left * MAX_SYMBOL))
        bigger[:pos] = out[:pos]
        out = bigger
    _check_status(status, f"the {n_symbols} symbols of the table")
    if n > EXACT_STRINGS and total_codes:
        table.bytes_per_code = pos / total_codes
    if len(out) > 2 * pos + (1 << 20):  # a poor estimate: give the memory back
        out = out[: pos + MAX_SYMBOL].copy()
    return out, out_offs, pos


#: "auto" (numpy for a few codes until the kernel is loaded), "numpy" or "kernel" (tests)
mode = {"decode": "auto"}


HOT_ONE = NumpyUntilHot(fsst_kernel.decoded_size, fsst_kernel.decode_from, warm_work=WARM_WORK)
HOT_TABLES = NumpyUntilHot(fsst_kernel.decoded_size_tables, fsst_kernel.decode_tables, warm_work=WARM_WORK)


def _small(hot: NumpyUntilHot) -> bool:
    """Whether codes are decoded in numpy (fsst_numpy.py) rather than by the kernels: while the kernels are not loaded
    in this process (a fresh process's first takes and scans; a large input does not wait for their preparation,
    which on an empty numba cache compiles for seconds)."""
    m = mode["decode"]
    if m != "auto":
        return m == "numpy"
    return not hot.ready()


def _check_status(status: int, table: str) -> None:
    require(status != _ESCAPE_AT_END, "FSST: a string ends inside an escape")
    require(status != _BAD_CODE, f"FSST: code beyond {table}")


def _output(size: int) -> np.ndarray:
    """The output buffer of ``size`` decoded bytes (computed exactly by a first pass over the codes, so never more than
    the strings need), plus the 8 bytes the kernel may write past the last symbol."""
    check_size(size, "FSST output")
    return empty(size + MAX_SYMBOL, np.uint8)


@dataclass
class StackedTables:
    """Several symbol tables side by side, for strings of several pages decoded at once."""

    symbols: np.ndarray  # uint8 (t, 256, 8)
    lengths: np.ndarray  # uint8 (t, 256)
    n_symbols: np.ndarray  # int64 (t,)


def stack_tables(tables: list[SymbolTable]) -> StackedTables:
    """Stack tables that all compress (switch on)."""
    if len(tables) == 1 and tables[0].stacked is not None:
        return tables[0].stacked
    if not all(t.switch_on for t in tables):
        raise ValueError("only tables that compress can be stacked")
    symbols = np.zeros((len(tables), 256, MAX_SYMBOL), dtype=np.uint8)
    lengths = np.zeros((len(tables), 256), dtype=np.uint8)
    for i, t in enumerate(tables):
        symbols[i, : t.n_symbols] = t.symbols
        lengths[i, : t.n_symbols] = t.lengths
    n_symbols = np.array([t.n_symbols for t in tables], dtype=np.int64)
    out = StackedTables(readonly(symbols), readonly(lengths), n_symbols)
    if len(tables) == 1:
        tables[0].stacked = out
    return out


def fsst_decode_tables(
    tables: StackedTables, table_of: np.ndarray, block: VariableWidthBlock, checked: bool = False
) -> VariableWidthBlock:
    """Decompress string ``s`` of ``block`` with table ``table_of[s]`` (strings of several pages at once).

    ``checked``: the caller built the block (int64 offsets from 0, increasing, inside the data)."""
    offs = np.asarray(block.offsets, dtype=np.int64)
    require(
        len(offs) == block.num_values + 1 and len(table_of) == block.num_values,
        "FSST: offsets do not match the value count",
    )
    start, end = int(offs[0]), int(offs[-1])
    data = as_u8(block.data)
    if not checked:
        require(0 <= start <= end <= len(data), "FSST: offsets lie outside the data")
        require(bool(np.all(offs[1:] >= offs[:-1])), "FSST: offsets decrease")
    codes, table_of = readonly(data), np.asarray(table_of, dtype=np.int64)
    if _small(HOT_TABLES):
        status, out, out_offs = decode_numpy_blocks(
            codes, offs[:-1], offs[1:], tables.symbols, tables.lengths, tables.n_symbols, table_of
        )
        _check_status(status, "the symbols of its table")
        if mode["decode"] == "auto":
            HOT_TABLES.numpy_call(
                lambda: (
                    fsst_kernel.decoded_size_tables(codes, offs, table_of, tables.lengths, tables.n_symbols),
                    fsst_kernel.decode_tables(
                        codes,
                        offs,
                        table_of,
                        tables.symbols,
                        tables.lengths,
                        tables.n_symbols,
                        np.empty(len(out) + MAX_SYMBOL, np.uint8),
                        np.empty_like(out_offs),
                    ),
                ),
                work=len(out),
            )
        return VariableWidthBlock(out_offs, out, block.num_values)
    size = fsst_kernel.decoded_size_tables(codes, offs, table_of, tables.lengths, tables.n_symbols)
    _check_status(-1 - size if size < 0 else _OK, "the symbols of its table")
    out_offs = np.empty(len(offs), dtype=np.int64)
    out = _output(size)
    status = fsst_kernel.decode_tables(
        codes, offs, table_of, tables.symbols, tables.lengths, tables.n_symbols, out, out_offs
    )
    _check_status(status, "the symbols of its table")
    return VariableWidthBlock(out_offs, out[:size], block.num_values)


def fsst_description(table: SymbolTable, values: pb.CompressiveEncoding) -> pb.CompressiveEncoding:
    """Fsst(symbol table, values) as pylance writes it."""
    return pb.CompressiveEncoding(fsst=pb.Fsst(symbol_table=serialize_symbol_table(table), values=values))
