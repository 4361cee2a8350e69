"""Take latency against file size: 10 random rows from a 1M-row and a 10M-row file.

    python -m benchmarks.take_scaling [--small 1000000] [--large 10000000] [--versions 2.0,2.1,2.2]

Random access should cost the same whatever the file's size (issue goal: the 10M-row take within
1.2x of the 1M-row take).  Both files hold the synthetic table's scalar columns (id, small, value,
category, text; generated batch by batch, seeded), written by lancelot and by pylance at each
version.  Per (writer, version, size): the median of interleaved repetitions of ``take`` of 10
random rows with lancelot and with pylance on the same file; printed as a table with the ratio
large/small per reader, and written as JSON (benchmarks/results/take_scaling.json).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from benchmarks.datasets import BATCH_ROWS, synthetic_batch  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
COLUMNS = ["id", "small", "value", "category", "text"]


def _batches(rows: int, seed: int):
    for i, start in enumerate(range(0, rows, BATCH_ROWS)):
        b = synthetic_batch(start, min(BATCH_ROWS, rows - start), seed + i)
        yield b.select(COLUMNS)


def _write(path: Path, writer: str, version: str, rows: int, seed: int) -> None:
    if path.exists():
        return
    tmp = path.with_suffix(".tmp")
    first = next(_batches(1, seed))
    if writer == "pylance":
        from lance.file import LanceFileWriter

        w = LanceFileWriter(str(tmp), first.schema, version=version)
        for b in _batches(rows, seed):
            w.write_batch(pa.Table.from_batches([b]))
        w.close()
    else:
        import lancelot

        with lancelot.LanceWriter(str(tmp), first.schema, version=version) as w:
            for b in _batches(rows, seed):
                w.write(b)
    tmp.rename(path)


def _median_takes(path: Path, rows: int, reps: int, rng: np.random.Generator) -> dict[str, float]:
    from lance.file import LanceFileReader

    import lancelot

    ours, ref = lancelot.LanceFile(str(path)), LanceFileReader(str(path))
    times: dict[str, list[float]] = {"lancelot": [], "pylance": []}
    for i in range(reps + 1):
        idx = np.sort(rng.choice(rows, 10, replace=False))
        for name, fn in (
            ("lancelot", lambda idx=idx: ours.take(idx)),
            ("pylance", lambda idx=idx: ref.take_rows(idx).to_table()),
        ):
            t0 = time.perf_counter()
            fn()
            if i:  # the first round warms caches (metadata, chunk tables)
                times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="benchmarks.take_scaling", description=__doc__.split("\n\n")[0])
    p.add_argument("--small", type=int, default=1_000_000)
    p.add_argument("--large", type=int, default=10_000_000)
    p.add_argument("--versions", default="2.0,2.1,2.2")
    p.add_argument("--writers", default="lancelot,pylance")
    p.add_argument("--reps", type=int, default=41)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data" / "scaling")
    p.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "take_scaling.json")
    args = p.parse_args(argv)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    results = []
    print(f"{'file':<22} {'reader':<9} {args.small:>12,} {args.large:>12,}  large/small")
    for version in args.versions.split(","):
        for writer in args.writers.split(","):
            paths = {}
            for rows in (args.small, args.large):
                paths[rows] = args.data_dir / f"{writer}-{version}-{rows}.lance"
                _write(paths[rows], writer, version, rows, args.seed)
            med = {rows: _median_takes(paths[rows], rows, args.reps, rng) for rows in paths}
            for reader in ("lancelot", "pylance"):
                s, b = med[args.small][reader], med[args.large][reader]
                results.append(
                    {
                        "writer": writer,
                        "version": version,
                        "reader": reader,
                        "small_ms": s * 1e3,
                        "large_ms": b * 1e3,
                        "ratio": b / s,
                    }
                )
                print(f"{writer + ' ' + version:<22} {reader:<9} {s * 1e3:>10.2f}ms {b * 1e3:>10.2f}ms  {b / s:>6.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"small_rows": args.small, "large_rows": args.large, "reps": args.reps, "results": results}
    args.out.write_text(json.dumps(doc, indent=1))
    return doc


if __name__ == "__main__":
    main()
