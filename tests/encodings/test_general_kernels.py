"""Zstd chunks inflated by one kernel call per read, libzstd called from numba: the frames of scans
(zstd_kernel.py) and the mini-block chunks of takes, rebuilt (miniblock_general_kernel.py): the same
bytes as the per-chunk Python paths (chunked._general, miniblock_general._inflate_few), and
everything the kernels do not vouch for (lz4 chunks among it) left to them."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest

from lancelot.encodings.compression import chunked, zstd_kernel
from lancelot.encodings.compression.general import buffer_compression, compress_buffer, decompress_buffer
from lancelot.encodings.structural import miniblock_general, miniblock_general_kernel
from lancelot.errors import CorruptFileError
from tests.encodings.helpers import segments

ZSTD = buffer_compression("zstd", 9)
LZ4 = buffer_compression("lz4")


@pytest.fixture(scope="module", autouse=True)
def _kernels_loaded():
    assert zstd_kernel.zstd_library() is not None, "python-zstandard's cffi module (or a system libzstd) exports zstd"
    zstd_kernel._warm()
    miniblock_general_kernel._warm()
    assert zstd_kernel.HOT_ZSTD.ready() and miniblock_general_kernel.HOT_REBUILD.ready()


def _raw(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """Chunk contents: random bytes, runs, repeated words; 1-9000 bytes each."""
    out = []
    for k in range(n):
        size = int(rng.integers(1, 9000))
        if k % 3 == 0:
            out.append(rng.integers(0, 256, size, dtype=np.uint8))
        elif k % 3 == 1:
            out.append(np.full(size, k % 251, np.uint8))
        else:
            words = [rng.integers(97, 123, int(rng.integers(2, 20)), dtype=np.uint8) for _ in range(9)]
            out.append(np.concatenate([words[int(i)] for i in rng.integers(0, 9, size)])[:size])
    return out


@pytest.mark.parametrize("seed", range(3))
def test_frames_inflate_like_the_codec(seed: int) -> None:
    raw = _raw(np.random.default_rng(seed), 40)
    seg = segments([compress_buffer(ZSTD, r) for r in raw])
    fast = zstd_kernel.inflate_frames(seg.data, np.asarray(seg.starts), np.asarray(seg.sizes))
    assert fast is not None
    assert np.array_equal(fast[1], [len(r) for r in raw])
    assert np.array_equal(fast[0], np.concatenate(raw))
    one_by_one = np.concatenate([decompress_buffer(ZSTD, seg.chunk(k)) for k in range(len(seg))])
    assert np.array_equal(chunked._general(ZSTD, seg).data, one_by_one)


def test_what_the_frames_kernel_does_not_vouch_for_goes_chunk_by_chunk() -> None:
    rng = np.random.default_rng(7)
    raw = _raw(rng, 6)
    bufs = [compress_buffer(ZSTD, r) for r in raw]
    bare = np.frombuffer(bufs[2][8:].tobytes(), np.uint8)  # an older file's bare frame (no size prefix)
    with_bare = [*bufs[:2], bare, *bufs[3:]]
    seg = segments(with_bare)
    assert zstd_kernel.inflate_frames(seg.data, np.asarray(seg.starts), np.asarray(seg.sizes)) is None
    assert np.array_equal(chunked._general(ZSTD, seg).data, np.concatenate(raw))
    bad = bufs[4].copy()
    bad[-6:] ^= 0x5A  # a damaged frame
    seg = segments([*bufs[:4], bad, *bufs[5:]])
    assert zstd_kernel.inflate_frames(seg.data, np.asarray(seg.starts), np.asarray(seg.sizes)) is None
    with pytest.raises(CorruptFileError):
        chunked._general(ZSTD, seg)


def _rebuild(data, pos, size, kw):
    args = dict(has_def=kw["has_def"], word=kw["word"], nb=kw["nb"], scheme=kw["compression"].scheme)
    return miniblock_general_kernel.rebuild_chunks(data, pos, size, **args)


def _captured_chunks(tmp_path, monkeypatch, version: str) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, dict]]:
    """The arguments of every chunk rebuild of takes from a compact file: strings with and without
    nulls (with and without definition levels), decimals."""
    from lancelot import LanceFile, write_table

    rng = np.random.default_rng(11)
    n = 30_000
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
    text = [" ".join(words[rng.integers(0, 8, int(rng.integers(1, 12)))]) for _ in range(n)]
    table = pa.table(
        {
            "s": pa.array(text),
            "s_null": pa.array([t if i % 7 else None for i, t in enumerate(text)]),
            "d": pa.array([int(v) for v in rng.integers(0, 10**9, n)], pa.decimal128(15, 2)),
            "f": pa.array(rng.integers(0, 1000, n) / 8.0),
        }
    )
    path = str(tmp_path / f"c-{version}.lance")
    write_table(table, path, version=version, profile="compact")
    seen: list[tuple[np.ndarray, np.ndarray, np.ndarray, dict]] = []
    real = miniblock_general.inflate_chunks

    def spy(data, pos, size, **kw):
        seen.append((np.array(data), np.array(pos), np.array(size), kw))
        return real(data, pos, size, **kw)

    monkeypatch.setattr(miniblock_general, "inflate_chunks", spy)
    f = LanceFile(path)
    for _ in range(4):
        rows = np.sort(rng.choice(n, 12, replace=False))
        assert f.take(rows).equals(table.take(pa.array(rows)))
    monkeypatch.undo()
    return seen


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_rebuilt_chunks_equal_the_python_rebuild(tmp_path, monkeypatch, version: str) -> None:
    seen = _captured_chunks(tmp_path, monkeypatch, version)
    shapes = set()
    for data, pos, size, kw in seen:
        shapes.add((kw["has_def"], kw["compression"].scheme))
        fast = _rebuild(data, pos, size, kw)
        if kw["compression"].scheme == LZ4.scheme:
            assert fast is None  # (pyarrow's lz4 is the faster: the Python path)
            continue
        assert fast is not None
        slow = miniblock_general._inflate_few(data, pos, size, miniblock_general.Chunks(**kw))
        for a, b in zip(fast, slow):
            assert np.array_equal(a, b)
    assert {h for h, _ in shapes} == {0, 1} and ZSTD.scheme in {c for _, c in shapes}, shapes


def _chunk(rng: np.random.Generator, has_def: int, word: int, nb: int, compression) -> bytes:
    """A mini-block chunk as miniblock_chunks lays it out, its first value buffer under zstd: u16 level
    count, u16 definition-level bytes, each value buffer's size in ``word`` bytes; then the levels
    and each buffer, every part padded to 8 bytes."""
    pad = lambda b: b + bytes(-len(b) % 8)  # noqa: E731
    first = compress_buffer(compression, _raw(rng, 1)[0][: 60_000 if word == 4 else 3000]).tobytes()
    defs = rng.integers(0, 256, int(rng.integers(1, 40)), dtype=np.uint8).tobytes() if has_def else b""
    second = rng.integers(0, 256, int(rng.integers(0, 50)), dtype=np.uint8).tobytes() if nb > 1 else b""
    w = "H" if word == 2 else "I"
    fields = [77, *([len(defs)] * has_def), len(first), *([len(second)] * (nb > 1))]
    header = struct.pack("<H" + "H" * has_def + w * nb, *fields)
    return pad(header) + pad(defs) + pad(first) + pad(second)


@pytest.mark.parametrize("has_def", [0, 1])
@pytest.mark.parametrize("word", [2, 4])
@pytest.mark.parametrize("nb", [1, 2])
def test_every_chunk_shape_rebuilds_like_python(has_def: int, word: int, nb: int) -> None:
    compression = ZSTD
    rng = np.random.default_rng(100 * has_def + 10 * word + nb)
    chunks = [_chunk(rng, has_def, word, nb, compression) for _ in range(12)]
    size = np.array([len(c) for c in chunks], np.int64)
    data = np.frombuffer(b"".join(chunks), np.uint8)
    pos = np.cumsum(size) - size
    order = rng.permutation(len(chunks))  # a take's chunks need not be in file order
    args = dict(has_def=has_def, word=word, nb=nb)
    fast = miniblock_general_kernel.rebuild_chunks(data, pos[order], size[order], scheme=compression.scheme, **args)
    assert fast is not None
    slow = miniblock_general._inflate_few(
        data, pos[order], size[order], miniblock_general.Chunks(compression=compression, **args)
    )
    for a, b in zip(fast, slow):
        assert np.array_equal(a, b)


def test_a_damaged_chunk_is_reported_by_the_python_rebuild(tmp_path, monkeypatch) -> None:
    seen = [s for s in _captured_chunks(tmp_path, monkeypatch, "2.2") if s[3]["compression"].scheme == ZSTD.scheme]
    data, pos, size, kw = seen[0]
    short = size.copy()
    short[-1] = 3  # shorter than its header
    assert _rebuild(data, pos, short, kw) is None
    with pytest.raises(CorruptFileError, match="shorter than its header"):
        miniblock_general.inflate_chunks(data, pos, short, **kw)
    damaged = data.copy()
    damaged[int(pos[0]) + int(size[0]) - 40 : int(pos[0]) + int(size[0]) - 8] ^= 0xA5  # inside the first chunk's frame
    assert _rebuild(damaged, pos, size, kw) is None
    with pytest.raises(CorruptFileError):
        miniblock_general.inflate_chunks(damaged, pos, size, **kw)


def test_compact_files_read_like_pylance_on_the_kernels(tmp_path) -> None:
    """A compact file's takes and full read, with the kernels ready, equal pylance's."""
    from lance.file import LanceFileReader

    from lancelot import LanceFile, write_table

    rng = np.random.default_rng(3)
    n = 20_000
    ids = rng.integers(0, 10**6, n).tolist()
    table = pa.table(
        {
            "t": pa.array([f"customer {v:09d} lives at {v * 7 % 1000} main st" for v in ids]),
            "n": pa.array([None if v % 5 == 0 else f"x{v}" for v in rng.integers(0, 10**4, n)]),
        }
    )
    path = str(tmp_path / "t.lance")
    write_table(table, path, version="2.2", profile="compact")
    reference = LanceFileReader(path).read_all().to_table()
    assert reference.equals(table)
    f = LanceFile(path)
    assert f.read().equals(reference)
    rows = np.sort(rng.choice(n, 50, replace=False))
    assert f.take(rows).equals(LanceFileReader(path).take_rows(rows.tolist()).to_table())


def test_an_unknown_scheme_is_not_taken_for_zstd() -> None:
    """With the kernels ready, a scheme that is neither lz4 nor zstd still gets the codec's error."""
    from lancelot.errors import UnsupportedEncodingError
    from lancelot.format.pb import encodings_v2_1_pb2 as pb

    seg = segments([compress_buffer(ZSTD, r) for r in _raw(np.random.default_rng(2), 4)])
    with pytest.raises(UnsupportedEncodingError):
        chunked._general(pb.BufferCompression(scheme=7), seg)


@pytest.mark.parametrize("compression", [ZSTD, LZ4], ids=["zstd", "lz4"])
def test_a_damaged_buffer_in_a_built_chunk_is_left_to_python(compression) -> None:
    """(lz4 chunks are always left to Python: the same error either way.)"""
    rng = np.random.default_rng(21)
    chunks = [bytearray(_chunk(rng, 1, 2, 1, compression)) for _ in range(5)]
    head = struct.unpack_from("<HHH", chunks[2])
    at = 8 + (head[1] + 7) // 8 * 8  # the first value buffer: after the header and the levels
    body = at + (8 if compression is ZSTD else 4)
    chunks[2][body : at + head[2]] = bytes([0xF0]) * (at + head[2] - body)  # literal runs past the buffer
    size = np.array([len(c) for c in chunks], np.int64)
    data = np.frombuffer(b"".join(chunks), np.uint8)
    pos = np.cumsum(size) - size
    args = dict(has_def=1, word=2, nb=1)
    assert miniblock_general_kernel.rebuild_chunks(data, pos, size, scheme=compression.scheme, **args) is None
    with pytest.raises(CorruptFileError):
        miniblock_general.inflate_chunks(data, pos, size, compression=compression, **args)


def test_without_libzstd_reads_stay_on_python(tmp_path) -> None:
    """Where no libzstd is found the kernels are never prepared, and takes and scans still read right
    (a fresh process: the kernels' readiness is per process)."""
    import subprocess
    import sys

    script = f"""
import numpy as np, pyarrow as pa
from lancelot.encodings.compression import zstd_kernel
from lancelot.util import jit
from lancelot.encodings.structural import miniblock_general_kernel as mgk
zstd_kernel.zstd_library = lambda: None
from lancelot import LanceFile, write_table
t = pa.table({{"s": [f"row {{i}} of many words" for i in range(20000)]}})
write_table(t, {str(tmp_path / "z.lance")!r}, version="2.2", profile="compact")
f = LanceFile({str(tmp_path / "z.lance")!r})
rng = np.random.default_rng(0)
for _ in range(3 * jit.HOT_CALLS):
    rows = np.sort(rng.choice(20000, 10, replace=False))
    assert f.take(rows).equals(t.take(pa.array(rows)))
assert f.read().equals(t)
jit.wait_for_warm_ups()
assert not mgk.HOT_REBUILD.ready() and not zstd_kernel.HOT_ZSTD.ready()
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_threads_take_and_scan_side_by_side(tmp_path) -> None:
    """Each thread inflates with its own zstd context (one is not thread-safe): takes and full reads
    of a compact file from four threads at once read what a single thread reads."""
    from concurrent.futures import ThreadPoolExecutor

    from lancelot import LanceFile, write_table

    rng = np.random.default_rng(8)
    n = 40_000
    words = np.array(["north", "south", "east", "west", "up", "down", "left", "right", "over", "under"])
    table = pa.table(
        {
            "t": pa.array([" ".join(words[rng.integers(0, 10, int(k))]) for k in rng.integers(1, 15, n)]),
            "d": pa.array([int(v) for v in rng.integers(0, 10**9, n)], pa.decimal128(15, 2)),
        }
    )
    path = str(tmp_path / "threads.lance")
    write_table(table, path, version="2.2", profile="compact")
    f = LanceFile(path)
    takes = [np.sort(rng.choice(n, 25, replace=False)) for _ in range(120)]

    def work(k: int) -> bool:
        ok = all(f.take(rows).equals(table.take(pa.array(rows))) for rows in takes[k::4])
        return ok and f.read().equals(table)

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(4)))


def test_damaged_sizes_announcing_more_than_a_call_may_hold_go_chunk_by_chunk(monkeypatch) -> None:
    """Size prefixes that each pass the ratio bound but together announce more than MAX_CALL_BYTES:
    no kernel allocates their sum (the rebuild stops at the chunk that crosses it, before inflating
    any); the per-chunk path reports the mismatch."""
    from lancelot.encodings.compression.segments import readonly

    rng = np.random.default_rng(31)
    bufs = []
    for _ in range(3):  # (random bytes: ~3000 compressed bytes each, so 150 MiB passes the ratio bound)
        b = compress_buffer(ZSTD, rng.integers(0, 256, 3000, dtype=np.uint8)).copy()
        b[:8] = np.frombuffer((150 << 20).to_bytes(8, "little"), np.uint8)  # 150 MiB each
        bufs.append(b)
    seg = segments(bufs)
    allocated: list[int] = []
    monkeypatch.setattr(zstd_kernel, "empty", lambda n, dtype=np.uint8: allocated.append(n) or np.empty(n, dtype))
    assert zstd_kernel.inflate_frames(seg.data, np.asarray(seg.starts), np.asarray(seg.sizes)) is None
    assert allocated == []
    with pytest.raises(CorruptFileError):
        chunked._general(ZSTD, seg)
    chunks = []
    for b in bufs:  # the same buffers as mini-block chunks (no levels, one value buffer)
        header = struct.pack("<HI", 9, len(b))
        chunks.append(header + bytes(-len(header) % 8) + b.tobytes() + bytes(-len(b) % 8))
    size = np.array([len(c) for c in chunks], np.int64)
    data = np.frombuffer(b"".join(chunks), np.uint8)
    pos = np.cumsum(size) - size
    args = dict(has_def=0, word=4, nb=1)
    assert miniblock_general_kernel.rebuild_chunks(data, pos, size, scheme=ZSTD.scheme, **args) is None
    bad = miniblock_general_kernel._rebuild(readonly(data), pos, size, 0, 4, 1, zstd_kernel.dctx())[0]
    assert bad == 1  # the second chunk's 150 MiB crosses the bound (a frame that fails would be chunk 0)
    with pytest.raises(CorruptFileError):
        miniblock_general.inflate_chunks(data, pos, size, compression=ZSTD, **args)


def test_full_zip_values_under_zstd_inflate_in_one_call(tmp_path, monkeypatch) -> None:
    """Full-zip strings under per-value zstd (pylance's layout for large values with a compression
    asked): the frames of a read go through the kernel and read as pylance reads them; a damaged
    frame among them is still the per-value path's error."""
    from lance.file import LanceFileReader

    from lancelot import LanceFile, write_table
    from lancelot.encodings.compression import general
    from lancelot.encodings.compression.block import VariableWidthBlock

    rng = np.random.default_rng(12)
    words = np.array("alpha beta gamma delta epsilon zeta eta theta iota kappa".split())
    field = pa.field("s", pa.string(), metadata={"lance-encoding:compression": "zstd"})
    values = [" ".join(words[rng.integers(0, 10, int(k))]) for k in rng.integers(40, 80, 3000)]
    table = pa.table([pa.array(values)], schema=pa.schema([field]))
    path = str(tmp_path / "fz.lance")
    write_table(table, path, version="2.2")
    served = []
    real = general.inflate_frames
    monkeypatch.setattr(general, "inflate_frames", lambda *a: served.append(real(*a)) or served[-1])
    assert LanceFile(path).read().equals(LanceFileReader(path).read_all().to_table())
    assert served and all(s is not None for s in served)

    frames = [compress_buffer(ZSTD, np.frombuffer(v.encode(), np.uint8)) for v in values[:20]]
    frames[7] = frames[7].copy()
    frames[7][-5:] ^= 0x3C
    offs = np.concatenate([[0], np.cumsum([len(f) for f in frames])]).astype(np.uint64)
    block = VariableWidthBlock(offs, np.concatenate(frames), len(frames))
    with pytest.raises(CorruptFileError):
        general.decompress_values(ZSTD, block)
