"""A seeded fuzz campaign of damaged Lance files against the reader (beyond
tests/encodings/test_corrupt_compression.py).

The contract (tests/encodings/test_corrupt_compression.py): a read of damaged bytes returns or raises a LanceError
naming the file (and, for damage to a page, the column and page); never another exception, a crash, a
hang or a huge allocation.  Files are pylance-written ``{id, c}`` tables (two pages per column) of the
kinds below at 2.0, 2.1 and 2.2.  A trial damages one file, seeded, in one of these ways:

* ``bytes`` / ``bits`` / ``words``: random bytes, bit flips, or little-endian u16/u32/u64 words set to
  edge values (0, 1, sizes, 2**k - 1...) inside one page buffer of column c;
* ``page_meta``: a page's buffer offsets / sizes / row count set to an edge value;
* ``layout``: one scalar anywhere in a page's encoding tree (widths, counts, FSST tables, ...) set to
  an edge value, or a sub-message cleared;
* ``column_meta``: the same in a column's encoding or column buffers;
* ``tail``: random bytes in the column metadata, offset tables, footer or schema buffer;

then runs three reads on a fresh ``LanceFile`` each: a full read, takes of <= 16 rows (sorted, or
unsorted with duplicates), of 17..64 and of 65+ rows, read_range short and long, iter_batches.

Every batch of trials runs in a child process under ``RLIMIT_AS`` (base + 1 GiB: a huge allocation is a
MemoryError), a per-trial SIGALRM watchdog, and a parent watchdog on the child's progress (a hang in a
numba kernel never returns to Python), so a segfault or a hang is recorded with its seed and the
campaign goes on.  Children run in ``kernel`` mode (every NumpyUntilHot path, FSST and mini-block
points forced onto the numba kernels) or ``numpy`` mode (forced onto the numpy formulations).

    python scripts/fuzz_corrupt.py --minutes 45 --out /tmp/fuzz          # the campaign (run under nice)
    python scripts/fuzz_corrupt.py --out /tmp/fuzz --replay KIND VERSION MODE SEED   # one trial, verbose
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import select
import signal
import struct
import subprocess
import sys
import time
import traceback
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support, when run as a script

import numpy as np

VERSIONS = ["2.0", "2.1", "2.2"]
MODES = ["kernel", "numpy"]
BATCH = 60
TRIAL_SECONDS = 20
CHILD_SILENCE_SECONDS = 120
WARM_SECONDS = 900
MEMORY_HEADROOM = 1 << 30
FOOTER = struct.Struct("<QQQIIHH4s")


def kinds() -> dict[str, tuple[Any, ...]]:
    """kind -> (maker, field metadata, rows[, nulls ("some"), pages (2)])."""
    from tests.support import conformance as C

    return {
        "bitpacking": (C.ints_small, None, 1200),
        "ints_wide": (C.ints_wide, None, 1200),
        "ints_sorted": (C.ints_sorted, None, 1200),
        "rle_2.1/dictionary_2.2": (C.ints_runs, None, 1200),
        "constant": (C.ints_constant, None, 1200),
        "bools": (C.bools, None, 1200),
        "decimals": (C.decimals, None, 600),
        "fsst": (C.strings_text, None, 1200),
        "large_strings": (C.large_strings_text, None, 600),
        "unique_short": (C.strings_unique_short, None, 1200),
        "dictionary": (C.strings_low_cardinality, None, 1200),
        "zstd_bss": (C.floats_rounded, {"lance-encoding:compression": "zstd", "lance-encoding:bss": "on"}, 6000),
        "lz4_strings": (C.strings_text, {"lance-encoding:compression": "lz4"}, 1200),
        "zstd_strings": (C.strings_unique_short, {"lance-encoding:compression": "zstd"}, 1200),
        "fullzip_fsst": (C.strings_big, None, 400),
        "fullzip_general": (C.binary_huge, None, 40),
        "fixed_300": (C.binary_fixed_300, None, 300),
        "fullzip_vectors": (C.vectors, None, 300),
        "packed_struct": (C.packed_fixed, {"lance-encoding:packed": "true"}, 1200),
        "packed_variable": (C.packed_variable, {"lance-encoding:packed": "true"}, 600),
        "list_struct": (C.nested(C.LIST_STRUCT), None, 1200),
        "three_deep": (C.nested(C.THREE_DEEP), None, 600),
        "list_list": (C.nested(C.LIST_LIST), None, 600),
        "map": (C.nested(C.MAP), None, 600),
        "fsl_struct": (C.nested(C.FSL_STRUCT), None, 600),
        "empty_lists": (C.empty_lists, None, 600),
        "long_lists": (C.long_lists, None, 80),
        "list_of_big_strings": (C.list_of_big_strings, None, 100),
        "blob": (C.blobs, {"lance-encoding:blob": "true"}, 300),
        # no nulls, all nulls, many pages of many chunks
        "fsst_no_nulls": (C.strings_text, None, 1200, "none"),
        "ints_all_null": (C.ints_small, None, 1200, "all"),
        "strings_all_null": (C.strings_text, None, 600, "all"),
        "list_struct_no_nulls": (C.nested(C.LIST_STRUCT), None, 1200, "none"),
        "bitpacking_8_pages": (C.ints_medium, None, 24000, "some", 8),
        "dictionary_6_pages": (C.strings_low_cardinality, None, 12000, "some", 6),
        "fsst_6_pages": (C.strings_text, None, 9000, "none", 6),
        "zstd_6_pages": (C.floats_smooth, {"lance-encoding:compression": "zstd"}, 30000, "some", 6),
        "list_list_6_pages": (C.nested(C.LIST_LIST), None, 6000, "some", 6),
    }


# ----------------------------------------------------------------------------- files


def build_files(out: Path) -> list[tuple[str, str]]:
    """Write every (kind, version) file pylance can write into ``out/files``; return those that exist."""
    import pyarrow as pa

    from tests.support import conformance as C

    files = out / "files"
    files.mkdir(parents=True, exist_ok=True)
    made = []
    for kind, (make, meta, rows, *more) in kinds().items():
        nulls, pages = (more + ["some", 2][len(more) :])[:2]
        for version in VERSIONS:
            path = files / f"{kind.replace('/', '_')}@{version}.lance"
            bad = path.with_suffix(".failed")
            if not path.exists() and not bad.exists():
                rng = np.random.default_rng(zlib.crc32(f"{kind}/{version}".encode()))
                arr = make(rng, rows, nulls)
                schema = pa.schema([pa.field("id", pa.int64()), pa.field("c", arr.type, metadata=meta)])
                table = pa.Table.from_arrays([pa.array(np.arange(rows), pa.int64()), arr], schema=schema)
                try:
                    batches = [rows // 2, rows - rows // 2] if pages == 2 else C.split_rows(rows, pages)
                    C.write_pylance(path, table, version, batches)
                    import lancelot

                    lancelot.LanceFile(str(path)).read()  # lancelot reads the undamaged file
                except Exception as e:
                    path.unlink(missing_ok=True)
                    bad.write_text(f"{type(e).__name__}: {e}\n")
            if path.exists():
                made.append((kind, version))
    return made


def file_path(out: Path, kind: str, version: str) -> Path:
    return out / "files" / f"{kind.replace('/', '_')}@{version}.lance"


# ----------------------------------------------------------------------------- damage

_INTS = [0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 127, 128, 255, 256, 1023, 1024, 4095, 4096, 65535, 65536]
_INTS += [(1 << 31) - 1, 1 << 31, (1 << 32) - 1, 1 << 32, 1 << 40, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]


def edge_int(rng: np.random.Generator, old: int, lo: int, hi: int) -> int:
    """An edge value near ``old`` or from _INTS (negated too, for signed fields), clamped to [lo, hi]."""
    r = int(rng.integers(0, 8))
    if r == 0:
        v = old + int(rng.integers(1, 4))
    elif r == 1:
        v = old - int(rng.integers(1, 4))
    elif r == 2:
        v = old * 2 if old else 1
    elif r == 3:
        v = old // 2
    elif r == 4:
        v = int(rng.integers(0, 1 << 62)) % (2 * abs(old) + 16)
    else:
        v = _INTS[int(rng.integers(0, len(_INTS)))]
        if lo < 0 and rng.integers(0, 3) == 0:
            v = -v
    if v == old:
        v = old + 1
    return max(lo, min(hi, v))


def _range_of(fd: Any) -> tuple[int, int]:
    t = fd.type
    if t in (fd.TYPE_UINT32, fd.TYPE_FIXED32):
        return 0, (1 << 32) - 1
    if t in (fd.TYPE_UINT64, fd.TYPE_FIXED64):
        return 0, (1 << 64) - 1
    if t in (fd.TYPE_INT32, fd.TYPE_SINT32, fd.TYPE_SFIXED32, fd.TYPE_ENUM):
        return -(1 << 31), (1 << 31) - 1
    return -(1 << 63), (1 << 63) - 1


def _slots(msg: Any, out: list, skip: tuple[str, ...] = ()) -> None:
    """Every set scalar of ``msg`` (recursively) as (message, field, index or None), and every set
    sub-message as (message, field, "clear")."""
    for fd, val in msg.ListFields():
        if fd.name in skip:
            continue
        if fd.type == fd.TYPE_MESSAGE:
            if fd.is_repeated:
                for sub in val:
                    _slots(sub, out)
            else:
                out.append((msg, fd, "clear"))
                _slots(val, out)
        elif fd.is_repeated:
            out.extend((msg, fd, i) for i in range(len(val)))
        else:
            out.append((msg, fd, None))


def mutate_message(msg: Any, rng: np.random.Generator, skip: tuple[str, ...] = ()) -> str | None:
    """Set one scalar of ``msg`` to an edge value (or clear one sub-message); describe it (None: nothing set)."""
    slots: list = []
    _slots(msg, slots, skip)
    if not slots:
        return None
    owner, fd, idx = slots[int(rng.integers(0, len(slots)))]
    if idx == "clear":
        if rng.integers(0, 4):  # prefer scalars
            scalars = [s for s in slots if s[2] != "clear"]
            if scalars:
                owner, fd, idx = scalars[int(rng.integers(0, len(scalars)))]
        if idx == "clear":
            owner.ClearField(fd.name)
            return f"clear {fd.full_name}"
    old = getattr(owner, fd.name) if idx is None else getattr(owner, fd.name)[idx]
    if fd.type == fd.TYPE_BOOL:
        new: Any = not old
    elif fd.type in (fd.TYPE_BYTES, fd.TYPE_STRING):
        b = bytes(old, "utf-8") if isinstance(old, str) else bytes(old)
        r = int(rng.integers(0, 4))
        if r == 0 or not b:
            b = b[: int(rng.integers(0, len(b) + 1))] if b else bytes(rng.integers(0, 256, 8, dtype=np.uint8))
        elif r == 1:
            b = b + bytes(rng.integers(0, 256, int(rng.integers(1, 16)), dtype=np.uint8))
        else:
            ba = bytearray(b)
            for _ in range(int(rng.integers(1, 4))):
                ba[int(rng.integers(0, len(ba)))] = int(rng.integers(0, 256))
            b = bytes(ba)
        new = b.decode("utf-8", "replace") if fd.type == fd.TYPE_STRING else b
    elif fd.type in (fd.TYPE_FLOAT, fd.TYPE_DOUBLE):
        new = float([0.0, -1.0, 1e30, float("nan")][int(rng.integers(0, 4))])
    else:
        lo, hi = _range_of(fd)
        new = edge_int(rng, int(old), lo, hi)
    if idx is None:
        setattr(owner, fd.name, new)
    else:
        getattr(owner, fd.name)[idx] = new
    return f"{fd.full_name}{'' if idx is None else f'[{idx}]'}: {old!r:.40} -> {new!r:.40}"


def _mutate_encoding(enc: Any, rng: np.random.Generator) -> str | None:
    """Mutate the message inside a direct file2 Encoding (a serialized protobuf Any)."""
    from google.protobuf import any_pb2, symbol_database

    from lancelot.format.pb import encodings_v2_0_pb2, encodings_v2_1_pb2  # noqa: F401  (register the types)

    if enc.WhichOneof("location") != "direct":
        return None
    a = any_pb2.Any()
    a.ParseFromString(enc.direct.encoding)
    cls = symbol_database.Default().GetSymbol(a.type_url.split("/")[-1])
    msg = cls()
    msg.ParseFromString(a.value)
    what = mutate_message(msg, rng)
    a.value = msg.SerializeToString()
    enc.direct.encoding = a.SerializeToString()
    return what


def rebuild(data: bytes, columns: list) -> bytes:
    """``data`` with its column metadata replaced by ``columns`` (re-serialized, new CMO table)."""
    cm_start, _, gbo_pos, n_gb, n_cols, major, minor, magic = FOOTER.unpack(data[-40:])
    gbo = data[gbo_pos : gbo_pos + 16 * n_gb]
    out = bytearray(data[:cm_start])
    offs = []
    for cm in columns:
        raw = cm.SerializeToString()
        offs.append((len(out), len(raw)))
        out += raw
    cmo = len(out)
    for p, s in offs:
        out += struct.pack("<QQ", p, s)
    gbo_new = len(out)
    out += gbo
    out += FOOTER.pack(cm_start, cmo, gbo_new, n_gb, n_cols, major, minor, magic)
    return bytes(out)


DAMAGES = ["bytes", "bits", "words", "page_meta", "layout", "column_meta", "tail"]
DAMAGE_WEIGHTS = np.array([0.22, 0.12, 0.16, 0.12, 0.22, 0.06, 0.10])


def damage(data: bytes, version: str, rng: np.random.Generator) -> tuple[bytes, str, str]:
    """(damaged bytes, damage kind, description)."""
    from lancelot.format.container import read_metadata
    from lancelot.io.source import MemorySource
    from tests.support import conformance as C

    md = read_metadata(MemorySource(data, "f.lance"))
    cols = md.columns
    how = DAMAGES[int(rng.choice(len(DAMAGES), p=DAMAGE_WEIGHTS / DAMAGE_WEIGHTS.sum()))]
    regions = C.page_buffer_regions(cols)
    if how in ("bytes", "bits", "words") and regions:
        c, p, o, s = regions[int(rng.integers(0, len(regions)))]
        b = bytearray(data)
        parts = []
        for _ in range(int(rng.integers(1, 5))):
            if how == "bytes":
                at = o + int(rng.integers(0, s))
                width = min(int(rng.integers(1, 5)), o + s - at)
                b[at : at + width] = bytes(rng.integers(0, 256, width, dtype=np.uint8))
                parts.append(f"{at}+{width}")
            elif how == "bits":
                at = o + int(rng.integers(0, s))
                b[at] ^= 1 << int(rng.integers(0, 8))
                parts.append(f"{at}")
            else:
                w = [2, 4, 8][int(rng.integers(0, 3))]
                if s < w:
                    continue
                at = o + int(rng.integers(0, s - w + 1)) // w * w
                old = int.from_bytes(b[at : at + w], "little")
                new = edge_int(rng, old, 0, (1 << (8 * w)) - 1)
                b[at : at + w] = new.to_bytes(w, "little")
                parts.append(f"u{8 * w}@{at}:{old}->{new}")
        return bytes(b), how, f"col {c} page {p} buffer [{o}, +{s}): {' '.join(parts)}"
    if how in ("page_meta", "layout"):
        pages = [(c, p) for c in range(1, len(cols)) for p in range(len(cols[c].pages))]
        c, p = pages[int(rng.integers(0, len(pages)))]
        pm = cols[c].pages[p]
        what = mutate_message(pm, rng, skip=("encoding",)) if how == "page_meta" else _mutate_encoding(pm.encoding, rng)
        if what is not None:
            return rebuild(data, cols), how, f"col {c} page {p}: {what}"
    if how == "column_meta":
        c = int(rng.integers(1, len(cols)))
        cm = cols[c]
        if cm.HasField("encoding") and (not cm.buffer_offsets or rng.integers(0, 2)):
            what = _mutate_encoding(cm.encoding, rng)
        else:
            what = mutate_message(cm, rng, skip=("pages", "encoding"))
        if what is not None:
            return rebuild(data, cols), how, f"col {c}: {what}"
    # the tail: column metadata, offset tables, footer, or the schema (global buffer 0)
    cm_start = FOOTER.unpack(data[-40:])[0]
    gb0 = md.global_buffers[0]
    lo, hi = (gb0[0], gb0[0] + gb0[1]) if rng.integers(0, 4) == 0 else (cm_start, len(data))
    b = bytearray(data)
    parts = []
    for _ in range(int(rng.integers(1, 4))):
        at = lo + int(rng.integers(0, hi - lo))
        b[at] = int(rng.integers(0, 256)) if rng.integers(0, 2) else b[at] ^ (1 << int(rng.integers(0, 8)))
        parts.append(str(at - len(data)))
    return bytes(b), "tail", f"tail bytes at end{' '.join(parts)} (gb0={gb0}, cm_start={cm_start})"


# ----------------------------------------------------------------------------- reads


OPS = ["read", "take_few", "take_few_unsorted", "take_mid", "take_many", "range_few", "range_long", "batches"]


def run_op(op: str, data: bytes, rng: np.random.Generator, n: int, source: str, scratch: Path) -> str:
    import lancelot
    from lancelot.io.source import MemorySource

    if source == "file":
        p = scratch / "f.lance"
        p.write_bytes(data)
        lf = lancelot.LanceFile(str(p))
    elif source == "remote":  # an fsspec source: round trips staged, ranges coalesced
        import fsspec

        url = f"memory://fuzz{os.getpid()}/f.lance"
        with fsspec.open(url, "wb") as f:
            f.write(data)
        lf = lancelot.LanceFile(url)
    else:
        lf = lancelot.LanceFile(MemorySource(data, "f.lance"))
    try:
        if op == "read":
            lf.read(columns=["c"])
        elif op.startswith("take"):
            k = {"take_few": (1, 17), "take_few_unsorted": (2, 17), "take_mid": (17, 65)}.get(op, (65, n + 1))
            m = int(rng.integers(k[0], min(k[1], n + 1))) if n >= k[0] else n
            if op == "take_few_unsorted":
                rows = rng.integers(0, n, m)
            else:
                rows = np.sort(rng.choice(n, m, replace=False))
            lf.take(rows.astype(np.int64), columns=["c"])
        elif op == "range_few":
            a = int(rng.integers(0, n))
            lf.read_range(a, a + int(rng.integers(1, 17)), columns=["c"])
        elif op == "range_long":
            a = int(rng.integers(0, n // 2))
            lf.read_range(a, a + int(rng.integers(17, n)), columns=["c"])
        else:
            for _ in lf.iter_batches(int(rng.integers(1, n + 1)), columns=["c"]):
                pass
    finally:
        lf.close()
    return f"{op}/{source}"


def last_lancelot_frame(tb: Any) -> str:
    frames = [f for f in traceback.extract_tb(tb) if "lancelot" in f.filename]
    if not frames:
        return "?"
    f = frames[-1]
    return f"{Path(f.filename).name}:{f.lineno}:{f.name}"


def trial(kind: str, version: str, seed: int, data: bytes, n: int, scratch: Path, verbose: bool = False) -> list[dict]:
    """One damaged input, three reads; a record per read whose outcome breaks the contract."""
    from lancelot.errors import LanceError

    rng = np.random.default_rng([seed, zlib.crc32(f"{kind}/{version}".encode())])
    broken, how, desc = damage(data, version, rng)
    if rng.integers(0, 5) == 0:  # a second damage on top
        try:
            broken, how2, desc2 = damage(broken, version, rng)
            how = how if how == how2 else "mixed"
            desc = f"{desc}; then {desc2}"
        except Exception:
            pass  # the first damage left no metadata to damage further
    page_damage = how in ("bytes", "bits", "words", "page_meta", "layout")
    found = []
    ops = [OPS[int(i)] for i in rng.choice(len(OPS), 3, replace=False)]
    if verbose:
        print(f"damage {how}: {desc}; reads {ops}", file=sys.stderr, flush=True)
    for op in ops:
        source = ["file", "remote", "memory", "memory", "memory", "memory"][int(rng.integers(0, 6))]
        op_rng = np.random.default_rng([seed, zlib.crc32(op.encode())])
        rec = {"kind": kind, "version": version, "seed": seed, "damage": how, "desc": desc, "op": f"{op}/{source}"}
        signal.alarm(TRIAL_SECONDS)
        tb = ""
        try:
            run_op(op, broken, op_rng, n, source, scratch)
            outcome = None
        except LanceError as e:
            tb = traceback.format_exc()
            outcome = None
            if "f.lance" not in str(e):
                outcome = "no_path"
            elif page_damage and e.column is None:
                outcome = "no_column"
            elif how in ("bytes", "bits", "words") and e.page is None:
                outcome = "no_page"
            if outcome:
                rec.update(exc=type(e).__name__, msg=str(e)[:300], where=last_lancelot_frame(e.__traceback__))
                if e.__cause__ is not None:
                    rec["cause"] = f"{type(e.__cause__).__name__} at {last_lancelot_frame(e.__cause__.__traceback__)}"
        except TimeoutError as e:
            tb = traceback.format_exc()
            outcome = "hang"
            rec.update(exc="TimeoutError", msg=str(e), where=last_lancelot_frame(e.__traceback__))
        except MemoryError as e:
            tb = traceback.format_exc()
            outcome = "alloc"
            rec.update(exc="MemoryError", msg=str(e)[:300], where=last_lancelot_frame(e.__traceback__))
        except Exception as e:
            tb = traceback.format_exc()
            outcome = "other_exception"
            rec.update(exc=type(e).__name__, msg=str(e)[:300], where=last_lancelot_frame(e.__traceback__))
        finally:
            signal.alarm(0)
        if verbose:
            print(f"{rec['op']}: {outcome or 'ok'} {rec.get('msg', '')}\n{tb if outcome else ''}", file=sys.stderr)
        if outcome:
            rec["outcome"] = outcome
            found.append(rec)
    return found


# ----------------------------------------------------------------------------- child


def set_mode(mode: str) -> None:
    """Force every numpy-until-hot path onto its kernels (``kernel``) or its numpy formulation (``numpy``)."""
    from lancelot.encodings.compression import fsst
    from lancelot.encodings.structural import miniblock_points
    from lancelot.util import jit

    on = mode == "kernel"
    jit.NumpyUntilHot.ready = lambda self: on  # type: ignore[method-assign]
    jit.NumpyUntilHot.numpy_call = lambda self, warm, work=0: None  # type: ignore[method-assign]
    fsst.mode["decode"] = mode
    miniblock_points.mode["points"] = mode


def _on_alarm(signum: int, frame: Any) -> None:
    raise TimeoutError(f"read still running after {TRIAL_SECONDS} s")


def _vm_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def child(out: Path, kind: str, version: str, mode: str, seed0: int, count: int) -> None:
    import lancelot

    set_mode(mode)
    signal.signal(signal.SIGALRM, _on_alarm)
    path = file_path(out, kind, version)
    data = path.read_bytes()
    n = lancelot.LanceFile(str(path)).num_rows
    scratch = out / "scratch" / str(os.getpid())
    scratch.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for op in OPS:  # load (or compile) the kernels of this file's paths before the limit
        for _ in range(2):
            run_op(op, data, rng, n, "memory", scratch)
    limit = _vm_bytes() + MEMORY_HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"ready": True}), flush=True)
    for seed in range(seed0, seed0 + count):
        print(json.dumps({"start": seed}), flush=True)
        found = trial(kind, version, seed, data, n, scratch)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if rss - base_rss > (256 << 10):  # KiB: a trial took the peak 256 MiB above the warmed process
            found.append({"kind": kind, "version": version, "seed": seed, "outcome": "big_rss", "kib": rss - base_rss})
            base_rss = rss
        print(json.dumps({"done": seed, "found": found}), flush=True)


# ----------------------------------------------------------------------------- parent


def run_batch(out: Path, kind: str, version: str, mode: str, seed0: int, count: int, log: Any) -> tuple[int, int]:
    """Run seeds [seed0, seed0 + count) in children (a new one after a crash or hang); (trials, failures)."""
    done = fails = 0
    seed = seed0
    while seed < seed0 + count:
        cmd = [sys.executable, __file__, "--out", str(out), "--child", kind, version, mode, str(seed)]
        cmd.append(str(seed0 + count - seed))
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        current, ready = None, False
        last = time.monotonic()
        assert p.stdout is not None
        while True:
            r, _, _ = select.select([p.stdout], [], [], 5)
            if r:
                line = p.stdout.readline()
                if not line:
                    break
                last = time.monotonic()
                msg = json.loads(line)
                if "ready" in msg:
                    ready = True
                elif "start" in msg:
                    current = msg["start"]
                else:
                    done += 1
                    for rec in msg["found"]:
                        rec["mode"] = mode
                        log.write(json.dumps(rec) + "\n")
                        fails += 1
                    log.flush()
                    seed = msg["done"] + 1
                    current = None
            elif time.monotonic() - last > (CHILD_SILENCE_SECONDS if ready else WARM_SECONDS):
                p.kill()
                p.wait()
                break
        rc = p.wait()
        err = p.stderr.read() if p.stderr else ""
        if current is not None:  # died or hung inside a trial
            outcome = "hang_killed" if rc == -signal.SIGKILL else f"crash_rc{rc}"
            rec = {"kind": kind, "version": version, "seed": current, "mode": mode, "outcome": outcome}
            rec["stderr"] = err[-1500:]
            log.write(json.dumps(rec) + "\n")
            log.flush()
            done += 1
            fails += 1
            seed = current + 1
        elif rc != 0 or not ready:
            log.write(json.dumps({"kind": kind, "version": version, "mode": mode, "outcome": "child_failed",
                                  "rc": rc, "stderr": err[-3000:]}) + "\n")  # fmt: skip
            log.flush()
            break
    return done, fails


def campaign(out: Path, minutes: float, batch: int) -> None:
    made = build_files(out)
    print(f"{len(made)} files: {sorted(set(k for k, _ in made))}", flush=True)
    deadline = time.monotonic() + 60 * minutes
    counts: Counter[tuple[str, str, str]] = Counter()
    state_path = out / "state.json"
    next_seed: dict[str, int] = json.loads(state_path.read_text()) if state_path.exists() else {}
    order = [(k, v, m) for k, v in made for m in MODES]
    random.Random(0).shuffle(order)
    total = fails = 0
    with open(out / "failures.jsonl", "a") as log:
        while time.monotonic() < deadline:
            for kind, version, mode in order:
                if time.monotonic() >= deadline:
                    break
                key = f"{kind}@{version}"
                seed0 = next_seed.get(key, 0)
                d, f = run_batch(out, kind, version, mode, seed0, batch, log)
                next_seed[key] = seed0 + batch
                state_path.write_text(json.dumps(next_seed))
                counts[(kind, version, mode)] += d
                total += d
                fails += f
                print(f"{time.strftime('%H:%M:%S')} {key} {mode} seeds {seed0}+{batch}: {d} trials, {f} failures "
                      f"(total {total} trials, {fails} failures)", flush=True)  # fmt: skip
    (out / "counts.json").write_text(json.dumps({"/".join(k): v for k, v in sorted(counts.items())}, indent=1))
    print(f"{total} trials ({3 * total} reads), {fails} failures", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/fuzz"))
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--child", nargs=5, metavar=("KIND", "VERSION", "MODE", "SEED0", "COUNT"))
    ap.add_argument("--replay", nargs=4, metavar=("KIND", "VERSION", "MODE", "SEED"))
    a = ap.parse_args()
    if a.child:
        kind, version, mode, seed0, count = a.child
        child(a.out, kind, version, mode, int(seed0), int(count))
    elif a.replay:
        import lancelot

        kind, version, mode, seed = a.replay
        set_mode(mode)
        path = file_path(a.out, kind, version)
        scratch = a.out / "scratch" / "replay"
        scratch.mkdir(parents=True, exist_ok=True)
        n = lancelot.LanceFile(str(path)).num_rows
        found = trial(kind, version, int(seed), path.read_bytes(), n, scratch, True)
        print(json.dumps(found, indent=1))
    else:
        campaign(a.out, a.minutes, a.batch)


if __name__ == "__main__":
    main()
