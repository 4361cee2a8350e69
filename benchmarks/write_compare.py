"""lancelot vs pylance write of a TPC-H lineitem slice: medians of wall and process CPU time, interleaved.

    .venv/bin/python -m benchmarks.write_compare 1500000 2.2     # rows, version; REPS=5 by default

Reads the cached table (benchmarks/data/tpch-sf1-lineitem.arrow), casts string views to strings,
warms both writers up once, then alternates them REPS times.  ROOT=<dir> imports lancelot from
another tree (e.g. an exported older commit) to compare before/after.
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.ipc as ipc

DATA = os.path.join(os.path.dirname(__file__), "data", "tpch-sf1-lineitem.arrow")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_500_000
    version = sys.argv[2] if len(sys.argv) > 2 else "2.2"
    reps = int(os.environ.get("REPS", "5"))
    if os.environ.get("ROOT"):
        sys.path.insert(0, os.environ["ROOT"])
    from lance.file import LanceFileWriter

    import lancelot

    with pa.memory_map(DATA) as src:
        t = ipc.open_file(src).read_all().slice(0, rows)
    t = pa.table(
        [c.cast(pa.string()) if pa.types.is_string_view(c.type) else c for c in t.columns], names=t.column_names
    ).combine_chunks()

    def write_lancelot(p: str) -> None:
        lancelot.write_table(t, p, version=version)

    def write_pylance(p: str) -> None:
        w = LanceFileWriter(p, t.schema, version=version)
        for b in t.to_batches():
            w.write_batch(b)
        w.close()

    writers = {"lancelot": write_lancelot, "pylance": write_pylance}
    with tempfile.TemporaryDirectory() as d:
        paths = {k: os.path.join(d, f"{k}.lance") for k in writers}
        for k, f in writers.items():
            f(paths[k])
        res: dict[str, list[tuple[float, float]]] = {k: [] for k in writers}
        for _ in range(reps):
            for k, f in writers.items():
                os.remove(paths[k])
                t0, c0 = time.perf_counter(), _cpu()
                f(paths[k])
                res[k].append((time.perf_counter() - t0, _cpu() - c0))
        sizes = {k: os.path.getsize(p) for k, p in paths.items()}
    wall = {k: statistics.median(x[0] for x in v) for k, v in res.items()}
    cpu = {k: statistics.median(x[1] for x in v) for k, v in res.items()}
    print(f"{lancelot.__file__} rows={rows} version={version} reps={reps}")
    print(
        f"wall {wall['lancelot']:.3f}s / {wall['pylance']:.3f}s = {wall['lancelot'] / wall['pylance']:.2f}x  "
        f"cpu {cpu['lancelot']:.3f}s / {cpu['pylance']:.3f}s = {cpu['lancelot'] / cpu['pylance']:.2f}x  "
        f"size {sizes['lancelot']} / {sizes['pylance']} = {sizes['lancelot'] / sizes['pylance']:.3f}"
    )


if __name__ == "__main__":
    main()
