"""The first read of a freshly opened file: open, read it whole once, close; lancelot against pylance.

A dataset scan opens each data file once and reads it once, so it pays whatever a file's first
read costs beyond the next ones (column metadata, page tables, per-column set-up). Benchmarks that
time reads through a file opened once hide that cost; this one times exactly what a scan does per
fragment, on files written by pylance: TPC-H part, orders and lineitem and a vectors table
(``id`` int64 + 128-d float32 vectors), at Lance 2.0, 2.1 and 2.2.

Every repetition opens and reads each file once per implementation, interleaved
(``measure.balanced_order``), in one process in its steady state (lancelot's kernels loaded:
untimed open-and-read calls of every file first). The table prints medians of wall time and of
the process's CPU time (all threads) and their ratios lancelot / pylance, and the calling thread's
wait in the run queue (runnable, no CPU free: on a loaded machine, most of lancelot's wall time
beyond its CPU time). What the very first
calls of a fresh process cost is ``benchmarks.cold_start``'s subject.

    .venv/bin/python -m benchmarks.first_read                       # all tables, 2.0/2.1/2.2
    .venv/bin/python -m benchmarks.first_read --tables part,vectors --reps 9
    .venv/bin/python -m benchmarks.first_read --take 1 --sf 0.1     # open + take 1 new random row, close

``--take N`` times what a dataset take pays per fragment instead: open a fresh reader, take N random
rows over all columns (new rows every call), close; ``--range N`` a fresh reader's ``read_range`` of N
rows from a random start (what ``benchmarks.run``'s default method times as its range read).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from benchmarks.measure import balanced_order
from lancelot.util.jit import HOT_CALLS

BENCH_DIR = Path(__file__).resolve().parent
TABLES = ("part", "orders", "lineitem", "vectors")
VERSIONS = ("2.0", "2.1", "2.2")
IMPLS = ("lancelot", "pylance")
VECTOR_ROWS = 100_000


def _vectors(rows: int, dim: int = 128, seed: int = 42) -> pa.Table:
    rng = np.random.default_rng(seed)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(rows * dim, dtype=np.float32)), dim)
    return pa.table({"id": pa.array(np.arange(rows, dtype=np.int64)), "vector": vec})


def _source(data_dir: Path, table: str, sf: float) -> pa.Table:
    if table == "vectors":
        return _vectors(VECTOR_ROWS)
    from benchmarks import datasets

    return datasets.tpch_table(data_dir, sf, table).load()


def prepare(
    data_dir: Path, tables: list[str], versions: list[str], sf: float, rows: int | None = None
) -> dict[tuple[str, str], Path]:
    """The pylance-written file of every (table, version) (its first ``rows`` rows), written if missing."""
    import lance.file

    work = data_dir / "first_read"
    work.mkdir(parents=True, exist_ok=True)
    out: dict[tuple[str, str], Path] = {}
    for table in tables:
        src = None
        for v in versions:
            tag = f"sf{sf:g}-" if table != "vectors" else f"{VECTOR_ROWS}-"
            tag += f"{rows}-" if rows else ""
            path = work / f"{table}-{tag}{v}.lance"
            if not path.exists():
                src = src if src is not None else _source(data_dir, table, sf)
                src = src.slice(0, rows) if rows else src
                with lance.file.LanceFileWriter(str(path), version=v) as w:
                    w.write_batch(src)
            out[(table, v)] = path
    return out


_OPENED: dict[str, object] = {}
_RNG = np.random.default_rng(7)
_TAKE = 0  # rows a call takes (0: read the whole file)
_RANGE = 0  # rows a call reads from a random start (0: read the whole file)


_NUM_ROWS: dict[str, int] = {}


def _rows(path: str) -> np.ndarray:
    """``_TAKE`` new random rows of the file, from a row count read once and never timed again: pylance's
    ``metadata()`` alone costs about what its take does, so asking it in the timed call would flatter lancelot."""
    n = _NUM_ROWS.get(path)
    if n is None:
        import lancelot

        with lancelot.LanceFile(path) as f:
            n = _NUM_ROWS[path] = f.num_rows
    return np.sort(_RNG.choice(n, _TAKE, replace=False))


def _open_take(impl: str, path: str) -> int:
    """Open a fresh reader, take ``_TAKE`` new random rows over all columns, close."""
    rows = _rows(path)
    if impl == "pylance":
        import lance.file

        return lance.file.LanceFileReader(path).take_rows(rows.tolist()).to_table().num_rows
    import lancelot

    if impl == "lancelot-reread":  # through a file opened (and taken from) before
        f = _OPENED.get(path) or _OPENED.setdefault(path, lancelot.LanceFile(path))
        return f.take(rows).num_rows  # type: ignore[attr-defined]
    with lancelot.LanceFile(path) as f:
        return f.take(rows).num_rows


def _open_range(impl: str, path: str) -> int:
    """Open a fresh reader, read ``_RANGE`` rows from a new random start over all columns, close."""
    n = _NUM_ROWS.get(path)
    if n is None:
        import lancelot

        with lancelot.LanceFile(path) as f:
            n = _NUM_ROWS[path] = f.num_rows
    start = int(_RNG.integers(0, max(n - _RANGE, 0) + 1))
    if impl == "pylance":
        import lance.file

        return lance.file.LanceFileReader(path).read_range(start, min(_RANGE, n - start)).to_table().num_rows
    import lancelot

    if impl == "lancelot-reread":  # through a file opened (and read from) before
        f = _OPENED.get(path) or _OPENED.setdefault(path, lancelot.LanceFile(path))
        return f.read_range(start, start + _RANGE).num_rows  # type: ignore[attr-defined]
    with lancelot.LanceFile(path) as f:
        return f.read_range(start, start + _RANGE).num_rows


def _open_read(impl: str, path: str) -> int:
    if _TAKE:
        return _open_take(impl, path)
    if _RANGE:
        return _open_range(impl, path)
    if impl == "lancelot-reread":  # through a file opened and read before: what a first read adds shows
        import lancelot

        f = _OPENED.get(path)
        if f is None:
            f = _OPENED[path] = lancelot.LanceFile(path)
            f.read()
        return f.read().num_rows  # type: ignore[attr-defined]
    if impl == "pylance":
        import lance.file

        return lance.file.LanceFileReader(path).read_all().to_table().num_rows
    import lancelot

    return lancelot.LanceFile(path).read().num_rows


def _run_delay() -> float:
    """Seconds the calling thread has spent runnable but waiting for a CPU (Linux schedstat; 0 elsewhere).
    Lancelot's reads never block (no voluntary context switch): under load their wall time beyond the CPU
    time is this wait, which a thread pool's short bursts largely escape."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _wait_for_warm_ups() -> None:
    jit = sys.modules.get("lancelot.util.jit")
    if jit is not None:
        jit.wait_for_warm_ups()


def measure(
    files: dict[tuple[str, str], Path], reps: int, warm: int, impls: tuple[str, ...] = IMPLS, log=print
) -> dict[str, dict]:
    """{"table version": {impl: {"wall": [...], "cpu": [...]}}}, interleaved."""
    for path in files.values():  # steady state: kernels compiled or loaded, imports done
        for impl in impls:
            t0 = time.process_time()
            done = 0
            # lancelot: ``warm`` calls, and of a cheap file as many as get a path's kernels prepared (a path runs
            # numpy for its first HOT_CALLS calls: a few warm calls of one small file would time numpy); the
            # budget is CPU time, so a loaded machine does not cut the warm-up short
            while impl == "lancelot" and (done < warm or (done < HOT_CALLS + 8 and time.process_time() - t0 < 2.0)):
                _open_read(impl, str(path))
                done += 1
            if impl != "lancelot":
                _open_read(impl, str(path))
    _wait_for_warm_ups()
    samples: dict[str, dict] = {f"{t} {v}": {i: {"wall": [], "cpu": [], "wait": []} for i in impls} for t, v in files}
    for rep in range(reps):
        for (t, v), path in files.items():
            for impl in balanced_order(list(impls), rep):
                _wait_for_warm_ups()
                q0, w0, c0 = _run_delay(), time.perf_counter(), time.process_time()
                _open_read(impl, str(path))
                w1, c1, q1 = time.perf_counter(), time.process_time(), _run_delay()
                samples[f"{t} {v}"][impl]["wall"].append(w1 - w0)
                samples[f"{t} {v}"][impl]["cpu"].append(c1 - c0)
                samples[f"{t} {v}"][impl]["wait"].append(q1 - q0)
        log(f"rep {rep + 1}/{reps} done")
    return samples


def summarize(samples: dict[str, dict]) -> tuple[dict[str, dict], str]:
    head = (
        f"{'file':14} {'lancelot ms':>11} {'pylance ms':>10} {'x wall':>7} {'cpu ms':>7} {'pl cpu':>7} {'x cpu':>6}"
        f" {'wait ms':>7} {'pl wait':>7}"
    )
    reread = any("lancelot-reread" in by for by in samples.values())
    lines = [head + ("  reread: x wall  x cpu" if reread else "")]
    summary: dict[str, dict] = {}
    for key, by in samples.items():
        med = {i: statistics.median(s["wall"]) for i, s in by.items()}
        cpu = {i: statistics.median(s["cpu"]) for i, s in by.items()}
        wait = {i: statistics.median(s.get("wait") or [0.0]) for i, s in by.items()}
        summary[key] = {
            "wall_median_s": med,
            "cpu_median_s": cpu,
            "run_queue_wait_median_s": wait,
            "wall_ratio": med["lancelot"] / med["pylance"],
            "cpu_ratio": cpu["lancelot"] / cpu["pylance"],
        }
        line = (
            f"{key:14} {med['lancelot'] * 1e3:11.1f} {med['pylance'] * 1e3:10.1f} "
            f"{summary[key]['wall_ratio']:7.2f} {cpu['lancelot'] * 1e3:7.1f} {cpu['pylance'] * 1e3:7.1f} "
            f"{summary[key]['cpu_ratio']:6.2f} {wait['lancelot'] * 1e3:7.1f} {wait['pylance'] * 1e3:7.1f}"
        )
        if "lancelot-reread" in by:
            summary[key]["reread_wall_ratio"] = med["lancelot-reread"] / med["pylance"]
            summary[key]["reread_cpu_ratio"] = cpu["lancelot-reread"] / cpu["pylance"]
            line += f"  {summary[key]['reread_wall_ratio']:14.2f} {summary[key]['reread_cpu_ratio']:6.2f}"
        lines.append(line)
    return summary, "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="benchmarks.first_read", description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", default=",".join(TABLES), help=f"comma list of {', '.join(TABLES)}")
    p.add_argument("--versions", default=",".join(VERSIONS))
    p.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    p.add_argument("--rows", type=int, default=None, help="only the first ROWS rows of each table (small fragments)")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--warm", type=int, default=8, help="untimed lancelot open-and-reads per file first")
    p.add_argument(
        "--reread",
        action="store_true",
        help="also time lancelot reading through a file it read before (what the first read adds)",
    )
    p.add_argument("--take", type=int, default=0, help="time open + take N new random rows + close instead")
    p.add_argument(
        "--range", type=int, default=0, help="time open + read_range of N rows from a random start + close instead"
    )
    p.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data")
    p.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "first_read.json")
    a = p.parse_args(argv)
    global _TAKE, _RANGE
    _TAKE, _RANGE = a.take, a.range
    tables = [t for t in a.tables.split(",") if t]
    versions = [v for v in a.versions.split(",") if v]
    files = prepare(a.data_dir, tables, versions, a.sf, a.rows)
    impls = (*IMPLS, "lancelot-reread") if a.reread else IMPLS
    samples = measure(files, a.reps, a.warm, impls, log=lambda m: print(m, file=sys.stderr))
    summary, text = summarize(samples)
    print(text)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "reps": a.reps,
        "loadavg": os.getloadavg(),
        "command": " ".join(["python", "-m", "benchmarks.first_read", *(argv if argv is not None else sys.argv[1:])]),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    a.out.write_text(json.dumps({"meta": meta, "summary": summary, "samples": samples}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
