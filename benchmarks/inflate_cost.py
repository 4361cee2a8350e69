"""What a take pays to inflate General-compressed mini-block chunks, per column.

    python -m benchmarks.inflate_cost --table supplier [--profile compact] [--version 2.2] [--data-dir DIR]

Writes the TPC-H SF1 table with the profile, takes 10 random rows of one column at a time (the
chunks each take touches are captured), then times inflating those chunks three ways, best of 7:
the Python rebuild (``miniblock_general.inflate_chunks`` without its kernel: ``_inflate_few`` up to
FEW_CHUNKS chunks, else its array version; one codec call per chunk), the kernel
(``miniblock_general_kernel.rebuild_chunks``, one call per take and column; zstd chunks only: lz4
chunks are rebuilt in Python), and the codec alone (libzstd's ``ZSTD_decompressDCtx`` through
ctypes, less the cost of a no-op ctypes call).  Microseconds per chunk: what a 10-row take pays per
row and column.  ``model``: what the compact profile's model says the codec takes for the same frames
(zstd_frames.inflate_us), to see whether it still fits.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import struct
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import datasets
from lancelot import LanceFile, write_table
from lancelot.encodings.compression.general import ZSTD
from lancelot.encodings.compression.zstd_frames import inflate_us
from lancelot.encodings.compression.zstd_kernel import zstd_library
from lancelot.encodings.structural import miniblock_general, miniblock_general_kernel
from lancelot.encodings.structural.miniblock_chunks import ALIGN

DATA_DIR = Path(__file__).parent / "data"
Call = tuple[np.ndarray, np.ndarray, np.ndarray, dict]


def _capture(f: LanceFile, column: str, takes: int, rows: int) -> list[Call]:
    seen: list[Call] = []
    real = miniblock_general.inflate_chunks

    def spy(data, pos, size, **kw):  # type: ignore[no-untyped-def]
        seen.append((np.array(data), np.array(pos), np.array(size), kw))
        return real(data, pos, size, **kw)

    miniblock_general.inflate_chunks = spy  # type: ignore[assignment]
    try:
        rng = np.random.default_rng(0)
        for _ in range(takes):
            f.take(np.sort(rng.choice(f.num_rows, min(rows, f.num_rows), replace=False)), columns=[column])
    finally:
        miniblock_general.inflate_chunks = real  # type: ignore[assignment]
    return seen


def _python(call: Call) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Python rebuild of one take's chunks, as inflate_chunks does without its kernel."""
    saved = miniblock_general.rebuild_chunks
    miniblock_general.rebuild_chunks = lambda *a, **k: None  # type: ignore[assignment]
    try:
        return miniblock_general.inflate_chunks(*call[:3], **call[3])
    finally:
        miniblock_general.rebuild_chunks = saved  # type: ignore[assignment]


def _best(fn, reps: int = 7) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _frames(calls: list[Call]) -> list[tuple[bytes, int]]:
    """(zstd frame, inflated size) of every captured chunk's first value buffer."""
    out = []
    for data, pos, _size, kw in calls:
        has_def, word, nb = kw["has_def"], kw["word"], kw["nb"]
        header = struct.Struct("<H" + "H" * has_def + ("H" if word == 2 else "I") * nb)
        front = (header.size + ALIGN - 1) // ALIGN * ALIGN
        for p in pos.tolist():
            fields = header.unpack_from(data, p)
            at = front + ((fields[1] + ALIGN - 1) // ALIGN * ALIGN if has_def else 0)
            buf = data[p + at : p + at + fields[1 + has_def]].tobytes()
            out.append((buf[8:], int.from_bytes(buf[:8], "little")))
    return out


def _codec_us(frames: list[tuple[bytes, int]]) -> float | None:
    lib = zstd_library()
    if lib is None or not frames:
        return None
    lib.ZSTD_decompressDCtx.restype = ctypes.c_size_t
    lib.ZSTD_decompressDCtx.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
    ctx = lib.ZSTD_createDCtx()
    out = ctypes.create_string_buffer(max(n for _, n in frames))
    srcs = [(ctypes.create_string_buffer(b, len(b)), len(b), n) for b, n in frames]
    t = _best(lambda: [lib.ZSTD_decompressDCtx(ctx, out, n, s, k) for s, k, n in srcs])
    noop = _best(lambda: [lib.ZSTD_versionNumber() for _ in srcs])
    lib.ZSTD_freeDCtx(ctx)
    return (t - noop) / len(frames) * 1e6


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default="supplier")
    ap.add_argument("--profile", default="compact")
    ap.add_argument("--version", default="2.2")
    ap.add_argument("--takes", type=int, default=30)
    ap.add_argument("--rows", type=int, default=10, help="rows a take asks for (more than 32 chunks: the array path)")
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR, help="where tpch-sf1-<table>.arrow is (or goes)")
    args = ap.parse_args(argv)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    table = datasets.tpch_table(args.data_dir, 1, args.table).load()
    miniblock_general_kernel._warm()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.lance")
        write_table(table, path, version=args.version, profile=args.profile)
        f = LanceFile(path)
        what = f"{args.profile} at {args.version}: us per chunk a take of {args.rows} rows inflates"
        print(f"TPC-H {args.table} SF1, {what}")
        heads = ("chunks", "KiB", "packed", "python", "kernel", "zstd", "model")
        widths = (6, 5, 7, 7, 7, 6, 6)
        print(f"  {'column':<16} " + " ".join(f"{h:>{w}}" for h, w in zip(heads, widths)))
        for name in table.column_names:
            calls = _capture(f, name, args.takes, args.rows)
            if not calls:
                continue
            n = sum(len(c[1]) for c in calls)
            raw = sum(int(r[2].sum()) for r in (_python(c) for c in calls))
            py = _best(lambda calls=calls: [_python(c) for c in calls])

            def kernel(calls: list[Call] = calls) -> None:
                for d, p, s, kw in calls:
                    args_ = {"has_def": kw["has_def"], "word": kw["word"], "nb": kw["nb"]}
                    assert miniblock_general_kernel.rebuild_chunks(d, p, s, scheme=kw["compression"].scheme, **args_)

            zstd = all(c[3]["compression"].scheme == ZSTD for c in calls)
            k = _best(kernel) if zstd else float("nan")
            frames = _frames(calls) if zstd else []
            codec = _codec_us(frames)
            packed = sum(len(b) for b, _ in frames) / len(frames) if frames else float("nan")
            model = sum(inflate_us(b, size) for b, size in frames) / len(frames) if frames else float("nan")
            print(
                f"  {name:<16} {n:>6} {raw / n / 1024:>5.1f} {packed:>7.0f} {py / n * 1e6:>7.2f} {k / n * 1e6:>7.2f} "
                + (f"{codec:>6.2f}" if codec is not None else f"{'-':>6}")
                + f" {model:>6.2f}"
            )


if __name__ == "__main__":
    main()
