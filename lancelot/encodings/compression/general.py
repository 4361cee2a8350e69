"""General-purpose buffer compression: zstd and lz4 (lance.encodings21.General, BufferCompression).

Byte layouts of one compressed buffer, as pylance writes them:

* LZ4: a u32 little-endian uncompressed size, then one raw LZ4 *block* (not the LZ4 frame format) -- pyarrow's
  ``lz4_raw`` codec;
* ZSTD: a u64 little-endian uncompressed size, then one zstd frame.  Older files may hold a bare zstd frame (it starts
  with the zstd magic and its header's reserved bit is clear); then its Frame_Content_Size gives the size.

Where General sits decides what it covers: in a mini-block chunk it wraps the chunk's FIRST buffer only (the dispatcher
then decodes ``values`` from it and the other buffers); in a block it wraps the whole buffer; in full-zip it wraps each
value separately (``values`` is then a Variable)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import zstandard

from lancelot.encodings.compression import zstd_frames
from lancelot.encodings.compression.block import VariableWidthBlock
from lancelot.encodings.compression.buffers import MAX_DECODED_BYTES, as_u8, require
from lancelot.encodings.compression.zstd_kernel import inflate_frames
from lancelot.errors import CorruptFileError, UnsupportedEncodingError
from lancelot.format.pb import encodings_v2_1_pb2 as pb

LZ4 = pb.COMPRESSION_ALGORITHM_LZ4
ZSTD = pb.COMPRESSION_ALGORITHM_ZSTD
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: the largest expansion we accept: lz4 cannot exceed ~255x, zstd RLE blocks reach ~32768x
_MAX_RATIO: dict[int, int] = {LZ4: 256, ZSTD: 65536}
_CODECS: dict[tuple[str, int | None], pa.Codec] = {}


def _codec(name: str, level: int | None = None) -> pa.Codec:
    """pyarrow's codec ``name`` (at ``level``), made once: a mini-block page compresses ~1000 chunks."""
    codec = _CODECS.get((name, level))
    if codec is None:
        codec = _CODECS[(name, level)] = pa.Codec(name) if level is None else pa.Codec(name, compression_level=level)
    return codec


_LOCAL = threading.local()


def _zstd() -> zstandard.ZstdDecompressor:
    """This thread's python-zstandard decompressor (half the per-call cost of pyarrow's codec, which matters for a take
    inflating a 16 KiB chunk per row; one per thread: they are not thread-safe)."""
    d = getattr(_LOCAL, "zstd", None)
    if d is None:
        d = _LOCAL.zstd = zstandard.ZstdDecompressor()
    return d


def _zstd_frame(body: bytes | memoryview, size: int) -> None:
    """Check that a zstd frame's header agrees with the ``size`` its prefix claims (checked already): python-zstandard
    sizes its output by the header's content size when there is one, so a damaged header would have it allocate whatever
    it says (fuzz: fullzip_general@2.1 seed 1108)."""
    declared = _zstd_frame_content_size(body)
    if declared not in (None, size):
        raise CorruptFileError(f"zstd frame declares {declared} decompressed bytes, its size prefix {size}")


def scheme_of(compression: pb.BufferCompression) -> int:
    """The scheme of a BufferCompression, checked."""
    scheme = compression.scheme
    if scheme not in (LZ4, ZSTD):
        raise UnsupportedEncodingError(f"general compression scheme {scheme} is not lz4 or zstd")
    return scheme


def _zstd_frame_content_size(buf: np.ndarray | bytes | memoryview) -> int | None:
    """Frame_Content_Size from a zstd frame header (RFC 8878 3.1.1.1), if present (python-zstandard reads it)."""
    head = buf[:18].tobytes() if isinstance(buf, np.ndarray) else buf  # (a header is at most 18 bytes)
    try:
        size = zstandard.frame_content_size(head)
    except zstandard.ZstdError as e:
        raise CorruptFileError(f"zstd frame header: {e}") from None
    return None if size < 0 else int(size)


def _is_bare_zstd(buf: np.ndarray) -> bool:
    if len(buf) < 8:
        return True
    return buf[:4].tobytes() == ZSTD_MAGIC and not (int(buf[4]) & 0x10)


def decompress_buffer(
    compression: pb.BufferCompression, buffer: np.ndarray | bytes | bytearray | memoryview
) -> np.ndarray:
    """Undo general compression of one buffer (with its size prefix)."""
    scheme = scheme_of(compression)
    buf = as_u8(buffer)
    if scheme == LZ4:
        require(len(buf) >= 4, "lz4 buffer is shorter than its size prefix")
        size = int.from_bytes(buf[:4].tobytes(), "little")
        body, name = buf[4:], "lz4_raw"
    else:
        if len(buf) == 0:
            return np.zeros(0, np.uint8)
        if _is_bare_zstd(buf):
            frame_size = _zstd_frame_content_size(buf)
            if frame_size is None:
                raise UnsupportedEncodingError("zstd frame without a content size and without a size prefix")
            size, body = frame_size, buf
        else:
            size, body = int.from_bytes(buf[:8].tobytes(), "little"), buf[8:]
        name = "zstd"
    require(
        size <= min(MAX_DECODED_BYTES, len(body) * _MAX_RATIO[scheme] + 4096),
        f"{name} buffer of {len(body)} bytes claims {size} decompressed bytes",
    )
    if size == 0:  # an empty value: no body, or a body that itself decodes to nothing
        empty = (
            len(body) == 0
            or (name == "zstd" and _zstd_frame_content_size(body) == 0)
            or (name == "lz4_raw" and body.tobytes() == b"\x00")
        )
        require(empty, f"{name} buffer of {len(body)} bytes claims 0 decompressed bytes")
        return np.zeros(0, np.uint8)
    try:
        if name == "zstd":
            _zstd_frame(body.data, size)
            out = _zstd().decompress(body.data, max_output_size=size)
            got = len(out)
        else:
            out = _codec(name).decompress(body, decompressed_size=size)
            got = out.size
    except (pa.ArrowException, OSError, ValueError, zstandard.ZstdError) as e:
        raise CorruptFileError(f"{name} decompression failed: {e}") from None
    require(got == size, f"{name} decompressed {got} bytes, expected {size}")
    return np.frombuffer(out, dtype=np.uint8)


def inflater(compression: pb.BufferCompression) -> Callable[[bytes | memoryview], bytes]:
    """``decompress_buffer`` as a function of bytes to bytes, with the same checks and errors and less work per call (a
    take inflates one mini-block chunk per row asked): the codec is bound once (per thread and scheme); a bare zstd
    frame or an empty buffer takes the careful path."""
    scheme = scheme_of(compression)
    made: dict[int, Callable[[bytes | memoryview], bytes]] | None = getattr(_LOCAL, "inflaters", None)
    if made is None:
        made = _LOCAL.inflaters = {}
    fn = made.get(scheme)
    if fn is None:
        fn = made[scheme] = _inflater(compression, scheme)
    return fn


def _inflater(compression: pb.BufferCompression, scheme: int) -> Callable[[bytes | memoryview], bytes]:
    if scheme == ZSTD:
        zstd = _zstd().decompress

        def dec(body: bytes | memoryview, size: int) -> bytes:
            _zstd_frame(body, size)
            out: bytes = zstd(body, max_output_size=size)
            return out

        width, name, magic = 8, "zstd", ZSTD_MAGIC  # (a bare frame: the careful path decides)
    else:
        lz4 = _codec("lz4_raw").decompress

        def dec(body: bytes | memoryview, size: int) -> bytes:
            out: bytes = lz4(body, decompressed_size=size, asbytes=True)
            return out

        width, name, magic = 4, "lz4_raw", None
    ratio = _MAX_RATIO[scheme]

    def inflate(buf: bytes | memoryview) -> bytes:
        n = len(buf)
        size = int.from_bytes(buf[:width], "little")
        bad = not 0 < size <= min(MAX_DECODED_BYTES, (n - width) * ratio + 4096)
        if n <= width or bad or (magic is not None and buf[:4] == magic):
            return decompress_buffer(compression, buf).tobytes()
        try:
            out = dec(buf[width:], size)
        except (pa.ArrowException, OSError, ValueError, zstandard.ZstdError) as e:
            raise CorruptFileError(f"{name} decompression failed: {e}") from None
        if len(out) != size:
            raise CorruptFileError(f"{name} decompressed {len(out)} bytes, expected {size}")
        return out

    return inflate


class _RawLiterals:
    """A codec for zstd frames whose literals stay uncompressed (zstd_frames.py: they inflate sooner)."""

    def __init__(self, level: int) -> None:
        self.level = level

    def compress(self, raw: np.ndarray, asbytes: bool = True) -> bytes:
        return zstd_frames.compress(raw.tobytes(), self.level, raw_literals=True)


#: zstd inputs under this many bytes go through python-zstandard's compressor (see ``_SmallZstd``)
SMALL_ZSTD_BYTES = 64 * 1024


class _SmallZstd:
    """zstd at a level through a per-thread python-zstandard compressor for inputs under SMALL_ZSTD_BYTES: pyarrow's
    codec sets up a compression context on every call (~40 us, more than compressing a small page's chunk); larger
    inputs still go through pyarrow's.  Both write the same frames."""

    def __init__(self, level: int) -> None:
        self.level = level
        self.big = _codec("zstd", level)

    def compress(self, raw: np.ndarray, asbytes: bool = True) -> bytes:
        if raw.nbytes >= SMALL_ZSTD_BYTES:
            out: bytes = self.big.compress(raw, asbytes=True)
            return out
        made = getattr(_LOCAL, "zstd_c", None)
        if made is None:
            made = _LOCAL.zstd_c = {}
        c = made.get(self.level)
        if c is None:
            c = made[self.level] = zstandard.ZstdCompressor(level=self.level)
        return c.compress(memoryview(np.ascontiguousarray(raw)))  # type: ignore[arg-type]  # (numpy stubs: Buffer only on 3.12+)


_COMPRESSORS: dict[tuple[int, int | None, bool], tuple[Any, int, bool]] = {}


def _compressor(compression: pb.BufferCompression, raw_literals: bool = False) -> tuple[Any, int, bool]:
    """(codec, width of the size prefix, whether an empty input compresses to nothing: lz4's raw block) for a
    BufferCompression (``raw_literals``: zstd frames with uncompressed literals); made once per kind."""
    level = compression.level if compression.HasField("level") else None
    key = (compression.scheme, level, raw_literals)
    made = _COMPRESSORS.get(key)
    if made is not None:
        return made
    if scheme_of(compression) == LZ4:
        made = _codec("lz4_raw"), 4, True
    elif raw_literals:
        made = _RawLiterals(3 if level is None else level), 8, False
    elif level is not None and level > 0:
        made = _SmallZstd(level), 8, False
    else:
        made = _codec("zstd", level), 8, False
    _COMPRESSORS[key] = made
    return made


def compress_buffer(
    compression: pb.BufferCompression, data: np.ndarray | bytes | bytearray | memoryview, raw_literals: bool = False
) -> np.ndarray:
    """General-compress one buffer, with the size prefix pylance expects (``raw_literals``: a zstd frame whose literals
    stay uncompressed, zstd_frames.py)."""
    codec, width, empty_is_empty = _compressor(compression, raw_literals)
    raw = as_u8(data)
    out = bytearray(len(raw).to_bytes(width, "little"))
    if not (empty_is_empty and not len(raw)):
        out += codec.compress(raw, asbytes=True)
    return np.frombuffer(out, np.uint8)


def compress_buffers(
    compression: pb.BufferCompression, data: np.ndarray, bounds: np.ndarray, raw_literals: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``compress_buffer`` of every ``data[bounds[k]:bounds[k + 1]]``: (the results one after another, their byte
    bounds).  One join of the codec's outputs and their size prefixes (a page of ~1000 mini-block chunks: no numpy
    arrays per chunk)."""
    codec, width, empty_is_empty = _compressor(compression, raw_literals)
    raw = as_u8(data)
    parts: list[bytes] = []
    sizes = np.empty(max(len(bounds) - 1, 0), np.int64)
    for k, (a, b) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        body = b"" if empty_is_empty and b == a else codec.compress(raw[a:b], asbytes=True)
        parts += ((b - a).to_bytes(width, "little"), body)
        sizes[k] = width + len(body)
    out = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=out[1:])
    return np.frombuffer(b"".join(parts), np.uint8), out


def buffer_compression(scheme: str, level: int | None = None) -> pb.BufferCompression:
    """A BufferCompression for "lz4" or "zstd" (pylance writes zstd with level 0, lz4 without)."""
    schemes = {"lz4": LZ4, "zstd": ZSTD}
    if scheme not in schemes:
        raise UnsupportedEncodingError(f"general compression scheme {scheme!r}")
    bc = pb.BufferCompression(scheme=schemes[scheme])
    if level is not None:
        bc.level = level
    return bc


def general_encoding(compression: pb.BufferCompression, inner: pb.CompressiveEncoding) -> pb.CompressiveEncoding:
    """General(compression) wrapping ``inner``."""
    return pb.CompressiveEncoding(general=pb.General(compression=compression, values=inner))


def decompress_values(compression: pb.BufferCompression, block: VariableWidthBlock) -> VariableWidthBlock:
    """Full-zip: undo general compression of each value separately."""
    data = as_u8(block.data)
    offs = np.asarray(block.offsets, dtype=np.int64)
    require(len(offs) == block.num_values + 1, "general per-value: offsets do not match the value count")
    require(
        block.num_values == 0
        or (int(offs[0]) >= 0 and int(offs[-1]) <= len(data) and bool(np.all(offs[1:] >= offs[:-1]))),
        "general per-value: offsets are out of order or past the data",
    )
    fast = _decompress_zstd_values(compression, data, offs)
    if fast is not None:
        return fast
    parts = [decompress_buffer(compression, data[offs[i] : offs[i + 1]]) for i in range(block.num_values)]
    new_offs = np.zeros(block.num_values + 1, dtype=np.uint64)
    new_offs[1:] = np.cumsum([len(p) for p in parts])
    out = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
    return VariableWidthBlock(new_offs, out, block.num_values)


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    """python-zstandard's decompressor (about 15x less overhead per call than pyarrow's codec)."""
    return _zstd()


def _decompress_zstd_values(
    compression: pb.BufferCompression, data: np.ndarray, offs: np.ndarray
) -> VariableWidthBlock | None:
    """Full-zip zstd values (u64 size prefix + frame each), their headers parsed and checked with numpy and the frames
    inflated in one zstd_kernel call (before it is prepared, and for what it does not vouch for, each by
    python-zstandard); None when this path does not apply (lz4, bare frames of older files, empty values with a body:
    the general path handles them)."""
    if compression.scheme != ZSTD or len(offs) < 2:
        return None
    dec = _zstd_decompressor()
    starts, lens = offs[:-1], np.diff(offs)
    if np.any(lens < 8):
        return None
    head = data[starts[:, None] + np.arange(8)]  # (n, 8) size prefixes
    if np.any((head[:, :4] == np.frombuffer(ZSTD_MAGIC, np.uint8)).all(axis=1)):
        return None  # possibly bare frames: the careful per-value path decides
    sizes = np.ascontiguousarray(head).view("<u8").reshape(-1).astype(np.int64)
    body = lens - 8
    require(
        bool(np.all((sizes >= 0) & (sizes <= body * _MAX_RATIO[ZSTD] + 4096))),
        "zstd value claims an implausible decompressed size",
    )
    if np.any((sizes == 0) & (body > 0)):
        return None
    new_offs = np.zeros(len(sizes) + 1, dtype=np.uint64)
    np.cumsum(sizes, out=new_offs[1:])
    total = int(new_offs[-1])
    require(total <= MAX_DECODED_BYTES, f"zstd values: implausible decoded size of {total} bytes")
    if bool((sizes > 0).all()):  # every frame in one kernel call, once it is prepared (zstd_kernel)
        fast = inflate_frames(data, starts, lens, sizes)
        if fast is not None:
            return VariableWidthBlock(new_offs, fast[0], len(sizes))
    mv = data.data  # a memoryview of the array
    out = []
    try:
        for s, e, n in zip((starts + 8).tolist(), offs[1:].tolist(), sizes.tolist()):
            if n:
                _zstd_frame(mv[s:e], n)
                out.append(dec.decompress(mv[s:e], max_output_size=n))
    except CorruptFileError:
        raise
    except Exception as e:  # zstandard.ZstdError: a bad frame
        raise CorruptFileError(f"zstd decompression failed: {e}") from None
    got = np.fromiter(map(len, out), dtype=np.int64, count=len(out))
    require(np.array_equal(got, sizes[sizes > 0]), "a zstd value decompressed to another size than its prefix says")
    joined = b"".join(out)
    return VariableWidthBlock(new_offs, np.frombuffer(joined, np.uint8), len(sizes))


def compress_values(compression: pb.BufferCompression, block: VariableWidthBlock) -> VariableWidthBlock:
    """Full-zip: general-compress each value separately."""
    data = as_u8(block.data)
    offs = np.asarray(block.offsets, dtype=np.int64)
    parts = [compress_buffer(compression, data[offs[i] : offs[i + 1]]) for i in range(block.num_values)]
    new_offs = np.zeros(block.num_values + 1, dtype=np.uint64)
    new_offs[1:] = np.cumsum([len(p) for p in parts])
    out = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
    return VariableWidthBlock(new_offs, out, block.num_values)
