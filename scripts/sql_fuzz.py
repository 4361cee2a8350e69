"""Differential fuzzing of lancelot's SQL against pylance: random filters and projections (grammar in
tests/sql/fuzz_grammar.py) on one dataset pylance writes and both read.

    python scripts/sql_fuzz.py [--cases 2000] [--seed 0] [--depth 3] [--out /tmp/sql_fuzz.txt]

Prints a summary by kind of discrepancy; writes every discrepancy to --out.
"""

from __future__ import annotations

import argparse
import collections
import resource
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import lance  # noqa: E402

import lancelot  # noqa: E402
from lancelot.errors import LanceError  # noqa: E402
from tests.sql.fuzz_grammar import Gen, fuzz_table, same_values  # noqa: E402


def run(fn: Any) -> tuple[str, Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", fn()
    except Exception as e:  # noqa: BLE001 - every error is an outcome to compare
        return "err", e


def builtin_of(e: BaseException) -> type:
    for k in type(e).__mro__:
        if k.__module__ == "builtins":
            return k
    return Exception


def compare(ref: Any, ours: Any, kind: str, sql: str) -> tuple[str, str] | None:
    """None when lancelot matches pylance, else (category, detail)."""
    (rk, rv), (ok, ov) = ref, ours
    if rk == "err" and ok == "err":
        want = builtin_of(rv)
        if not isinstance(ov, LanceError) or not isinstance(ov, want):
            return f"error-class {want.__name__} vs {type(ov).__name__}", f"{rv!r:.200} | {ov!r:.200}"
        return None
    if rk == "err":
        return "pylance-raises", f"{type(rv).__name__}: {str(rv)[:300]} | ours: {ov!s:.300}"
    if ok == "err":
        return "lancelot-raises", f"{type(ov).__name__}: {str(ov)[:300]} | pylance: {rv!s:.300}"
    if kind == "filter":
        a, b = sorted(rv.column("n").to_pylist()), sorted(ov.column("n").to_pylist())
        return None if a == b else ("rows", f"pylance {a} ours {b}")
    rc, oc = rv.column("v"), ov.column("v")
    if not same_values(rc.to_pylist(), oc.to_pylist()):
        return "values", f"pylance {rc.type} {rc.to_pylist()} ours {oc.type} {oc.to_pylist()}"
    if rc.type != oc.type:
        return "type", f"pylance {rc.type} ours {oc.type}"
    return None


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--cases", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--out", default="/tmp/sql_fuzz.txt")
    p.add_argument("--trace", action="store_true", help="print each case to stderr before running it")
    p.add_argument("--max-gb", type=float, default=6.0, help="address-space limit (a runaway case fails)")
    args = p.parse_args()
    resource.setrlimit(resource.RLIMIT_AS, (int(args.max_gb * 2**30), resource.RLIM_INFINITY))
    table = fuzz_table()
    with tempfile.TemporaryDirectory() as d:
        ref = lance.write_dataset(table, d + "/ds")
        ours = lancelot.dataset(d + "/ds")
        g = Gen(args.seed)
        found: dict[str, list[str]] = collections.defaultdict(list)
        for k in range(args.cases):
            if k % 2 == 0:
                kind, sql = "filter", g.bool_(args.depth)
                if args.trace:
                    print(k, sql, file=sys.stderr, flush=True)
                r = run(lambda: ref.to_table(filter=sql, columns=["n"]))  # noqa: B023
                o = run(lambda: ours.to_table(filter=sql, columns=["n"]))  # noqa: B023
            else:
                kind, sql = "projection", g.any(args.depth)
                if args.trace:
                    print(k, sql, file=sys.stderr, flush=True)
                r = run(lambda: ref.to_table(columns={"n": "n", "v": sql}))  # noqa: B023
                o = run(lambda: ours.to_table(columns={"n": "n", "v": sql}))  # noqa: B023
            diff = compare(r, o, kind, sql)
            if diff is not None:
                found[diff[0]].append(f"{kind}: {sql}\n    {diff[1]}")
    with open(args.out, "w") as f:
        for cat, items in sorted(found.items(), key=lambda kv: -len(kv[1])):
            f.write(f"== {cat} ({len(items)})\n")
            f.writelines(i + "\n" for i in items)
    print(f"{args.cases} cases, {sum(map(len, found.values()))} differ")
    for cat, items in sorted(found.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(items):5d}  {cat}")


if __name__ == "__main__":
    main()
