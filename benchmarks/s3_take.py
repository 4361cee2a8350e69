"""Takes over S3 with a per-request latency: lancelot (s3fs) against pylance (object_store), same files.

    .venv/bin/python -m benchmarks.s3_take --data-dir /work/data/read                # orders 2.0-2.2, 20 ms
    .venv/bin/python -m benchmarks.s3_take --datasets tpch-lineitem --latency-ms 50 --reps 9

A read-only S3 endpoint on localhost (``LatencyS3``: HEAD and ranged GET, path-style, in its own
process) answers every request ``--latency-ms`` after it arrives, in a thread of its own, so each
request pays one round trip of that length and requests sent side by side share it; it counts the
requests.  (moto, which the tests use, copies the whole object on every GET, ~0.8 ms per MB: on
these files that would swamp the latency measured.)  The files are those of
benchmarks/take_compare.py (written by pylance, cached under ``--data-dir``/take_compare).  Per dataset
and version, interleaved in rotating order with new random rows every call:

* ``open+take``: open the file (a new reader) and take 10 rows, all columns: what a short script or
  a Spark task pays;
* ``take``: 10 rows from a reader opened before timing.

Prints medians, the ratio of medians (lancelot / pylance) and the median requests per call.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import socket
import statistics
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path

import numpy as np

from benchmarks import datasets
from benchmarks.take_compare import _files

BENCH_DIR = Path(__file__).resolve().parent
KEY, SECRET, REGION, BUCKET = "testing", "testing", "us-east-1", "bench"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Handler(BaseHTTPRequestHandler):
    """HEAD and ranged GET of ``/<bucket>/<key>`` (path-style S3) from ``server.root``/<key>."""

    protocol_version = "HTTP/1.1"
    server: LatencyS3

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _file(self) -> Path | None:
        _, bucket, key = (urllib.parse.urlsplit(self.path).path.split("/", 2) + ["", ""])[:3]
        path = self.server.root / urllib.parse.unquote(key)
        return path if bucket == BUCKET and key and path.is_file() else None

    def _headers(self, status: int, length: int, extra: dict[str, str]) -> None:
        self.send_response(status)
        for k, v in {**extra, "Content-Length": str(length), "ETag": '"bench"'}.items():
            self.send_header(k, v)
        self.send_header("Last-Modified", "Mon, 23 Nov 2026 00:00:00 GMT")
        self.end_headers()

    def _arrive(self) -> Path | None:
        """Count the request, wait out the latency; the file asked for, or None (404 sent)."""
        self.server.count()
        path = self._file()
        time.sleep(self.server.latency)
        if path is None:
            self._headers(404, 0, {})
        return path

    def do_HEAD(self) -> None:
        path = self._arrive()
        if path is not None:
            self._headers(200, path.stat().st_size, {})

    def do_GET(self) -> None:
        path = self._arrive()
        if path is None:
            return
        size = path.stat().st_size
        a, b = 0, size - 1
        rng = self.headers.get("Range")
        if rng:
            first, last = rng.removeprefix("bytes=").split("-")
            a, b = (size - int(last), size - 1) if not first else (int(first), min(int(last or size - 1), size - 1))
        with path.open("rb") as f:
            f.seek(a)
            data = f.read(b - a + 1)
        self._headers(206 if rng else 200, len(data), {"Content-Range": f"bytes {a}-{b}/{size}"} if rng else {})
        self.wfile.write(data)


class LatencyS3(ThreadingHTTPServer):
    """A read-only S3 endpoint (HEAD and ranged GET of bucket ``bench``) serving the files of ``root``;
    every request waits ``latency`` seconds in its own thread before it is answered."""

    daemon_threads = True

    def __init__(self, port: int, root: Path, latency: float, requests: Synchronized[int]) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.root, self.latency, self.requests = root, latency, requests

    def count(self) -> None:
        with self.requests.get_lock():
            self.requests.value += 1


def _serve(port: int, root: str, latency: float, requests: Synchronized[int]) -> None:
    LatencyS3(port, Path(root), latency, requests).serve_forever()


class Endpoint:
    """``LatencyS3`` in a child process (so its threads do not share the clients' interpreter lock)."""

    def __init__(self, root: Path, latency: float) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.port = _free_port()
        self._requests: Synchronized[int] = ctx.Value("q", 0)  # type: ignore[assignment]
        self._proc = ctx.Process(target=_serve, args=(self.port, str(root), latency, self._requests), daemon=True)
        self._proc.start()
        for _ in range(200):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("the S3 endpoint did not start")

    @property
    def requests(self) -> int:
        return int(self._requests.value)

    def stop(self) -> None:
        self._proc.terminate()


def _options(port: int) -> dict:
    """object_store's names for the endpoint: pylance takes them, and lancelot too."""
    return {
        "aws_endpoint": f"http://127.0.0.1:{port}",
        "allow_http": "true",
        "aws_region": REGION,
        "aws_access_key_id": KEY,
        "aws_secret_access_key": SECRET,
    }


def _openers(uri: str, opts: dict) -> dict:
    from lance.file import LanceFileReader

    from lancelot.reader import LanceFile

    return {
        "lancelot": (lambda: LanceFile(uri, storage_options=opts), lambda f, rows: f.take(rows)),
        "pylance": (
            lambda: LanceFileReader(uri, storage_options=opts),
            lambda f, rows: f.take_rows(rows.tolist()).to_table(),
        ),
    }


def measure(uri: str, n: int, endpoint: Endpoint, opts: dict, reps: int, seed: int) -> dict:
    """Medians (ms), ratios and requests per call of ``open+take`` and ``take`` for both libraries."""
    openers = _openers(uri, opts)
    handles = {impl: open_() for impl, (open_, _) in openers.items()}
    rng = np.random.default_rng(seed)
    out: dict = {}
    for case in ("open+take", "take"):
        times: dict[str, list[float]] = {i: [] for i in openers}
        requests: dict[str, list[int]] = {i: [] for i in openers}
        names = list(openers)
        for rep in range(reps + 1):  # the first repetition is untimed (connections, lancelot's paths)
            rows = np.sort(rng.choice(n, 10, replace=False))
            for impl in names[rep % 2 :] + names[: rep % 2]:
                open_, take = openers[impl]
                before, t = endpoint.requests, time.perf_counter()
                f = open_() if case == "open+take" else handles[impl]
                got = take(f, rows)
                elapsed = time.perf_counter() - t
                if rep:
                    times[impl].append(elapsed)
                    requests[impl].append(endpoint.requests - before)
                assert got.num_rows == 10
        med = {i: statistics.median(t) for i, t in times.items()}
        out[case] = {
            **{f"{i}_ms": med[i] * 1e3 for i in med},
            **{f"{i}_requests": statistics.median(r) for i, r in requests.items()},
            "x_pylance": med["lancelot"] / med["pylance"],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", default="tpch-orders")
    p.add_argument("--versions", default="2.0,2.1,2.2")
    p.add_argument("--latency-ms", type=float, default=20.0)
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data")
    p.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "s3_take.json")
    a = p.parse_args(argv)

    work = a.data_dir / "take_compare"
    work.mkdir(parents=True, exist_ok=True)
    endpoint = Endpoint(work, a.latency_ms / 1e3)
    try:
        opts = _options(endpoint.port)
        res: dict = {"meta": {"latency_ms": a.latency_ms, "reps": a.reps}}
        for name in [d for d in a.datasets.split(",") if d]:
            ds = datasets.tpch_table(a.data_dir, 1.0, name.removeprefix("tpch-"))
            for version in a.versions.split(","):
                lance_path, _ = _files(ds, version, work)
                label = f"{ds.name} {version}"
                uri = f"s3://{BUCKET}/{lance_path.name}"
                res[label] = got = measure(uri, ds.num_rows, endpoint, opts, a.reps, seed=len(res))
                for case, r in got.items():
                    print(
                        f"{label:<24} {case:<10} lancelot {r['lancelot_ms']:8.1f} ms ({r['lancelot_requests']:g} req)"
                        f"  pylance {r['pylance_ms']:8.1f} ms ({r['pylance_requests']:g} req)"
                        f"  x pylance {r['x_pylance']:.2f}",
                        flush=True,
                    )
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(res, indent=1))
    finally:
        endpoint.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
