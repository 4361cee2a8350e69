"""Interleaved timing of read operations: every repetition runs each implementation once, in a
rotating order, on the same random rows; the result is the median over repetitions.

Page cache (``cache``), for takes and ranges: ``warm`` (default) runs each timed call once
untimed just before, so every implementation finds its own pages cached; ``cold`` drops the
file from the OS page cache (posix_fadvise DONTNEED) before each timed call; ``as-is`` does
neither.  Without one of the first two the comparison is biased on a machine whose page cache
is small: two implementations reading the same file (pylance and lancelot on pylance's file)
warm each other's pages, while a file read by one implementation only stays cold.

Before timing, one warm-up call per implementation is checked against the source table, so a
fast wrong answer is reported as such (``verified: false``) rather than as a win.

This is the steady state: before a take or range is timed, an implementation that needs it
(``Adapter.steady_calls``: lancelot, whose numpy paths hand over to numba kernels once hot) makes
that many untimed calls of other rows, and before each timed call the harness waits for lancelot's
background kernel preparation, which would otherwise share the 2 cores with the timed calls of
whichever case runs then. What a fresh process pays is ``benchmarks.cold_start``'s subject.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from benchmarks.adapters import Adapter, Handle, Skip, same_data


@dataclass
class Case:
    """One measured read: ``kind`` is open / take / range / scan; ``columns=None`` means all."""

    key: str
    kind: str
    n: int = 0
    columns: list[str] | None = None


@dataclass
class ReadTarget:
    """An implementation reading one file (``name`` is the column header in the report)."""

    name: str
    adapter: Adapter
    path: Path
    handle: Handle | None = None
    skip: str | None = None
    extra: dict = field(default_factory=dict)


def build_cases(schema: pa.Schema, take_sizes, range_rows: int, per_column: bool) -> list[Case]:
    cases = [Case("open", "open")]
    for n in take_sizes:
        cases.append(Case(f"take{n}/all", "take", n))
    cases.append(Case(f"range{range_rows}/all", "range", range_rows))
    cases.append(Case("scan/all", "scan"))
    if per_column:
        for name in schema.names:
            for n in take_sizes:
                cases.append(Case(f"take{n}/col:{name}", "take", n, [name]))
    return cases


def balanced_order(names: list[str], rep: int) -> list[str]:
    """Repetition ``rep``'s order: the rotations of ``names``, then those of ``names`` reversed, so
    that (over 2 x len(names) repetitions) each of two or three implementations follows each other
    one equally often, and runs before it in half the repetitions. A plain rotation of three ran
    lancelot right after Parquet in two repetitions of three (Parquet's take, hundreds of times
    longer, leaves the CPU caches cold for the next call), and before pylance in two of three: the
    first of the two to read the rows of the Lance file pays for what the page cache has lost of
    them (this VM keeps 1-3 GB of it, shared)."""
    k = len(names)
    base = names if (rep // k) % 2 == 0 else names[::-1]
    return base[rep % k :] + base[: rep % k]


def _args(case: Case, num_rows: int, rng: np.random.Generator):
    if case.kind == "take":
        n = min(case.n, num_rows)
        return np.sort(rng.choice(num_rows, n, replace=False)).astype(np.int64)
    if case.kind == "range":
        return int(rng.integers(0, max(1, num_rows - case.n + 1)))
    return None


def _call(case: Case, t: ReadTarget, arg) -> Callable[[], object]:
    if case.kind == "open":
        return lambda: t.adapter.open(t.path).num_rows
    h = t.handle
    if case.kind == "take":
        return lambda: h.take(arg, case.columns)
    if case.kind == "range":
        return lambda: h.read_range(arg, case.n, case.columns)
    return lambda: h.scan(case.columns)


def _expected(case: Case, table: pa.Table, arg) -> pa.Table | None:
    cols = case.columns or table.column_names
    if case.kind == "take":
        return table.select(cols).take(pa.array(arg))
    if case.kind == "range":
        return table.select(cols).slice(arg, case.n)
    if case.kind == "scan":
        return table.select(cols)
    return None


def open_targets(targets: list[ReadTarget]) -> None:
    """Open every target's file once (not timed); a failure marks the target skipped."""
    for t in targets:
        if t.skip is not None:
            continue
        try:
            t.handle = t.adapter.open(t.path)
        except Skip as e:
            t.skip = str(e)
        except Exception as e:  # noqa: BLE001 - a bug in one implementation must not stop the run
            t.skip = f"failed to open: {type(e).__name__}: {e}"


CACHE_MODES = ("warm", "cold", "as-is")


def _wait_for_warm_ups() -> None:
    """Wait for lancelot's background kernel preparation, if lancelot is loaded."""
    jit = sys.modules.get("lancelot.util.jit")
    if jit is not None:
        jit.wait_for_warm_ups()


def _drop_cache(path: Path) -> None:
    """Ask the OS to drop ``path``'s pages from its cache (a no-op where unsupported)."""
    if not hasattr(os, "posix_fadvise"):
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def time_cases(
    cases: list[Case],
    targets: list[ReadTarget],
    table: pa.Table,
    reps: int,
    seed: int,
    log=print,
    budget_s: float | None = None,
    cache: str = "warm",
) -> dict[str, dict[str, dict]]:
    """Run every case on every target ``reps`` times, interleaved; returns {case: {target: result}}.

    ``budget_s`` caps one target's time per case: a target whose warm-up call took ``w`` seconds
    gets ``max(1, budget_s // w)`` timed repetitions (at most ``reps``).
    """
    live = [t for t in targets if t.skip is None and t.handle is not None]
    out: dict[str, dict[str, dict]] = {}
    for ci, case in enumerate(cases):
        rng = np.random.default_rng([seed, ci])
        args = [_args(case, table.num_rows, rng) for _ in range(reps + 1)]
        res: dict[str, dict] = {t.name: {"skip": t.skip} for t in targets if t not in live}
        running = []
        want = _expected(case, table, args[0])
        allowed: dict[str, int] = {}
        for t in live:  # warm-up and correctness check
            try:
                t0 = time.perf_counter()
                got = _call(case, t, args[0])()
                warm = time.perf_counter() - t0
            except Skip as e:
                res[t.name] = {"skip": str(e)}
                continue
            except Exception as e:  # noqa: BLE001
                res[t.name] = {"error": f"{type(e).__name__}: {e}"}
                log(f"  ! {t.name} {case.key}: {type(e).__name__}: {e}")
                continue
            ok = want is None or (isinstance(got, pa.Table) and same_data(got, want))
            if not ok:
                log(f"  ! {t.name} {case.key}: result differs from the source table")
            res[t.name] = {"samples": [], "verified": ok}
            if case.kind in ("take", "range"):
                steady = np.random.default_rng([seed, ci, 1])
                for _ in range(t.adapter.steady_calls):
                    _call(case, t, _args(case, table.num_rows, steady))()
            allowed[t.name] = reps if not budget_s or warm <= 0 else max(1, min(reps, int(budget_s // warm)))
            running.append(t)
        for r in range(1, reps + 1):
            k = r % max(1, len(running))
            for t in running[k:] + running[:k]:
                if len(res[t.name]["samples"]) >= allowed[t.name]:
                    continue
                fn = _call(case, t, args[r])
                if case.kind in ("take", "range"):
                    if cache == "warm":
                        try:
                            fn()
                        except Exception:  # noqa: BLE001 - reported by the timed call below
                            pass
                    elif cache == "cold":
                        _drop_cache(t.path)
                _wait_for_warm_ups()
                t0 = time.perf_counter()
                try:
                    fn()
                except Exception as e:  # noqa: BLE001
                    res[t.name] = {"error": f"{type(e).__name__}: {e}"}
                    running = [x for x in running if x is not t]
                    continue
                res[t.name]["samples"].append(time.perf_counter() - t0)
        for t in running:
            s = res[t.name]["samples"]
            if s:
                res[t.name]["median"] = statistics.median(s)
        out[case.key] = res
        meds = ", ".join(f"{n}={v['median'] * 1e3:.2f}ms" for n, v in res.items() if "median" in v)
        log(f"  {case.key}: {meds}")
    return out
