"""Memory checks: a streaming write of a table larger than memory should need, and a batch-by-batch
read (iter_batches) of a large file should hold, only a few pages' worth of memory.

Each check runs in its own subprocess (benchmarks.probe) and reports peak RSS; pylance runs the
same check for comparison.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.probe import run_probe


def _mib(n: float | None) -> str:
    return "-" if n is None else f"{n / 2**20:.0f} MiB"


def streaming_checks(
    data_dir: Path,
    stream_bytes: int,
    version: str,
    seed: int,
    batch_size: int = 65536,
    batch_rows: int = 65536,
    keep_files: bool = False,
    log=print,
) -> dict:
    """Stream ``stream_bytes`` of synthetic batches (``batch_rows`` each) into one file per library,
    then read each file back with iter_batches(``batch_size``).

    Returns {"stream_bytes", "version", "streaming_write": {lib: result}, "iter_batches": {name: result}}.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    files = {lib: data_dir / f"stream-{stream_bytes}-{lib}-{version}.lance" for lib in ("pylance", "lancelot")}
    out: dict = {"stream_bytes": stream_bytes, "version": version, "streaming_write": {}, "iter_batches": {}}
    for lib, path in files.items():
        log(f"streaming write {_mib(stream_bytes)} with {lib} {version} -> {path.name}")
        spec = {"op": "stream_write", "lib": lib, "version": version, "path": str(path)}
        spec.update(stream_bytes=stream_bytes, seed=seed, batch_rows=batch_rows)
        r = run_probe(spec)
        out["streaming_write"][lib] = r
        log(f"  {lib}: {_summary(r)}")
    readers = [("pylance", "pylance"), ("lancelot", "lancelot"), ("lancelot (pl)", "pylance")]
    for name, writer in readers:
        path = files[writer]
        lib = name.split()[0]
        if not path.exists():
            out["iter_batches"][name] = {"skip": f"no file written by {writer}"}
            continue
        log(f"iter_batches({batch_size}) with {name} over {path.name}")
        spec = {"op": "iter_batches", "lib": lib, "version": version, "path": str(path), "batch_size": batch_size}
        r = run_probe(spec)
        out["iter_batches"][name] = r
        log(f"  {name}: {_summary(r)}")
    if not keep_files:
        for path in files.values():
            path.unlink(missing_ok=True)
    return out


def _summary(r: dict) -> str:
    if "skip" in r:
        return f"skipped ({r['skip']})"
    if "error" in r:
        return f"ERROR {r['error']}"
    extra = f", arrow {_mib(r['arrow_bytes'])}" if "arrow_bytes" in r else ""
    return (
        f"{r['rows']} rows in {r['seconds']:.1f} s{extra}, peak RSS {_mib(r['peak_rss'])}"
        f" (+{_mib(r['delta_rss'])} over the {_mib(r['base_rss'])} before)"
    )
