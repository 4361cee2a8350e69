"""Both-ways checks against pylance (the oracle): lancelot writes -> both read; pylance writes -> both read.

``crosscheck`` writes one table with each writer (batch by batch) and reads each file with each reader, returning what
differed as a ``Crosscheck`` so a test can assert all four are equal, or that exactly the documented pylance failures
happen.  ``pylance_read_isolated`` reads in a child process, for files on which pylance 14.0.2 aborts the process (a
Rust panic across the FFI boundary)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

import lancelot
from lancelot.util.types import rebuild
from tests.support.conformance import difference, normalize, write_pylance

#: the four directions, writer -> reader
DIRECTIONS = ("lancelot->lancelot", "lancelot->pylance", "pylance->lancelot", "pylance->pylance")


@dataclass
class Crosscheck:
    """Per direction: None when the read equals the source, else what went wrong."""

    problems: dict[str, str | None] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)

    def failed(self) -> dict[str, str]:
        return {k: v for k, v in self.problems.items() if v is not None}

    def assert_equal(self, pylance_own_failure: str | None = None) -> None:
        """All four reads equal the source; with ``pylance_own_failure`` (a substring of pylance's error), pylance must
        fail to read its own file with that error and everything else must be equal."""
        bad = self.failed()
        if pylance_own_failure is not None:
            own = bad.pop("pylance->pylance", None)
            assert own is not None, "pylance now reads its own file: drop the documented failure"
            assert pylance_own_failure in own, f"pylance fails differently: {own}"
        assert not bad, "\n".join(f"{k}: {v}" for k, v in bad.items())


def batch_sizes(n: int, parts: int) -> list[int]:
    """``parts`` batch sizes (some maybe 0) adding up to ``n``."""
    cuts = np.linspace(0, n, parts + 1).round().astype(int)
    return [int(b - a) for a, b in zip(cuts[:-1], cuts[1:])]


def write_lancelot(
    path: str | Path, table: pa.Table, version: str, batches: list[int] | None = None, max_page_bytes: int | None = None
) -> str:
    """Write ``table`` with lancelot, one ``write`` call per batch size."""
    with lancelot.LanceWriter(path, table.schema, version=version, max_page_bytes=max_page_bytes) as w:
        pos = 0
        for b in batches or [table.num_rows]:
            w.write(table.slice(pos, b))
            pos += b
    return str(path)


def read_pylance(path: str) -> pa.Table:
    from lance.file import LanceFileReader

    return LanceFileReader(str(path)).read_all().to_table()


@dataclass
class Reads:
    """Partial reads checked besides the full read: row ranges [a, b), takes, a scan in batches."""

    ranges: list[tuple[int, int]] = field(default_factory=list)
    takes: list[list[int]] = field(default_factory=list)
    batch_size: int | None = None

    @staticmethod
    def default(n: int) -> Reads:
        if not n:
            return Reads()
        rows = sorted({0, n // 3, n // 2, n - 1})
        return Reads([(n // 2, n - 1), (0, n)], [rows, rows[::-1]], max(1, n // 3))


def _decoded_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every dictionary type replaced by its value type."""
    return rebuild(t, lambda x: _decoded_type(x.value_type) if pa.types.is_dictionary(x) else x)


def _decoded(table: pa.Table) -> pa.Table:
    """Dictionary columns (nested too) decoded: readers may hand back another dictionary of the same values (pylance
    merges page dictionaries); the exact dictionaries are tests/file/test_write_dictionary.py's."""
    schema = pa.schema([f.with_type(_decoded_type(f.type)) for f in table.schema], metadata=table.schema.metadata)
    return table if schema.equals(table.schema) else table.cast(schema)


def _difference(got: pa.Table, exp: pa.Table) -> str | None:
    """``difference`` of a read and the (normalized) source, dictionaries compared by value.  A reader may hand back
    nulls in a non-nullable child under null parents (legal Arrow, which pyarrow refuses to cast): such reads are
    compared by type and by value."""
    try:
        return difference(normalize(_decoded(got)), _decoded(exp))
    except pa.ArrowInvalid:
        if [_decoded_type(f.type) for f in got.schema] != [_decoded_type(f.type) for f in exp.schema]:
            return f"types {got.schema} != {exp.schema}"
        a, b = got.to_pylist(), exp.to_pylist()
        if a != b:
            k = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y) if len(a) == len(b) else -1
            return f"{len(a)} rows vs {len(b)}; first difference at row {k}"
        return None


def _lancelot_partial(path: str, exp: pa.Table, reads: Reads) -> str | None:
    with lancelot.LanceFile(path) as f:
        for a, b in reads.ranges:
            d = _difference(f.read_range(a, b), exp.slice(a, b - a))
            if d is not None:
                return f"read_range({a}, {b}): {d}"
        for rows in reads.takes:
            idx = np.array(rows, np.int64)
            d = _difference(f.take(idx), exp.take(pa.array(idx)))
            if d is not None:
                return f"take({rows}): {d}"
        if reads.batch_size and exp.num_rows:
            got = pa.Table.from_batches(list(f.iter_batches(batch_size=reads.batch_size)))
            d = _difference(got, exp)
            if d is not None:
                return f"iter_batches({reads.batch_size}): {d}"
    return None


def _pylance_partial(path: str, exp: pa.Table, reads: Reads) -> str | None:
    from lance.file import LanceFileReader

    r = LanceFileReader(str(path))
    for a, b in reads.ranges:
        if b > a:
            d = _difference(r.read_range(a, b - a).to_table(), exp.slice(a, b - a))
            if d is not None:
                return f"read_range({a}, {b - a}): {d}"
    for rows in reads.takes:
        if rows == sorted(set(rows)):  # pylance takes sorted, unique rows
            d = _difference(r.take_rows(rows).to_table(), exp.take(pa.array(rows, pa.int64())))
            if d is not None:
                return f"take_rows({rows}): {d}"
    return None


def _compare(
    read: Callable[[str], pa.Table],
    partial: Callable[[str, pa.Table, Reads], str | None],
    path: str,
    exp: pa.Table,
    reads: Reads | None,
) -> str | None:
    try:
        diff = _difference(read(path), exp)
        if diff is None and reads is not None:
            diff = partial(path, exp, reads)
    except Exception as e:  # noqa: BLE001 - any failure is the finding
        return f"{type(e).__name__}: {e}"
    return diff


def crosscheck(
    tmp: str | Path,
    table: pa.Table,
    version: str,
    batches: list[int] | None = None,
    max_page_bytes: int | None = None,
    pylance_page_bytes: int | None = 64 * 1024,
    reads: Reads | None = None,
    pylance_cache_bytes: int | None = 1,
) -> Crosscheck:
    """Write ``table`` with both writers at ``version`` and read each file with both readers.

    pylance writes with ``data_cache_bytes=pylance_cache_bytes`` (1: a page per batch) and
    ``max_page_bytes=pylance_page_bytes``.  Besides the full read, each reader reads ``reads`` (default:
    a few ranges and takes; pylance takes only sorted unique rows).  A writer that fails is recorded
    against both of its directions."""
    tmp = Path(tmp)
    exp = normalize(table)
    reads = reads if reads is not None else Reads.default(table.num_rows)
    out = Crosscheck()
    for writer in ("lancelot", "pylance"):
        path = str(tmp / f"{writer}_{version}.lance")
        out.paths[writer] = path
        try:
            if writer == "lancelot":
                write_lancelot(path, table, version, batches, max_page_bytes)
            else:
                write_pylance(
                    path,
                    table,
                    version,
                    batches,
                    data_cache_bytes=pylance_cache_bytes,
                    max_page_bytes=pylance_page_bytes,
                )
        except Exception as e:  # noqa: BLE001
            for reader in ("lancelot", "pylance"):
                out.problems[f"{writer}->{reader}"] = f"write failed: {type(e).__name__}: {e}"
            continue
        out.problems[f"{writer}->lancelot"] = _compare(lancelot.read_table, _lancelot_partial, path, exp, reads)
        out.problems[f"{writer}->pylance"] = _compare(read_pylance, _pylance_partial, path, exp, reads)
    return out


_CHILD = """
import json, sys
from lance.file import LanceFileReader
t = LanceFileReader(sys.argv[1]).read_all().to_table()
print(json.dumps(t.to_pylist(), default=repr))
"""


def pylance_read_isolated(path: str, timeout: float = 120) -> tuple[int, str]:
    """Read ``path`` with pylance in a child process: (return code, rows as JSON or the error's last line).

    A negative return code is a signal (pylance 14.0.2 aborts on some files: SIGABRT is -6)."""
    r = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, timeout=timeout)
    if r.returncode == 0:
        return 0, r.stdout.strip()
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    panic = next((ln for ln in lines if "panicked at" in ln), None)
    return r.returncode, (panic or (lines[-1] if lines else ""))


def rows_json(table: pa.Table) -> str:
    """A table's rows as ``pylance_read_isolated`` prints them."""
    return json.dumps(table.to_pylist(), default=repr)
