"""Smoke test of the benchmark harness (benchmarks/run.py --quick): it runs end to end on a tiny
synthetic table and its JSON has the expected shape and sane numbers (no timing thresholds)."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest

from benchmarks import adapters, datasets, measure, probe, run  # the repo root's (tests/cli/conftest.py)

ROWS = 2_000


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench")
    out = d / "latest.json"
    argv = ["--quick", "--rows", str(ROWS), "--data-dir", str(d / "data"), "--out", str(out), "--markdown"]
    argv += ["--rss-groups", "scan"]  # fewer subprocesses; take/range probes are tested below
    argv += ["--stream-bytes", "1MiB"]  # the memory checks' streaming write (--quick: 4 MiB)
    with pytest.MonkeyPatch.context() as mp:
        # no untimed calls to bring lancelot's kernels to their steady state before each timed take: nothing here
        # is timed (thousands of calls of the run's CPU; the warm-up call that verifies each result stays)
        mp.setattr(adapters.LancelotAdapter, "steady_calls", 0)
        assert run.main(argv) == 0
    return json.loads(out.read_text()), d


def _medians(ds: dict, target: str) -> dict[str, float]:
    return {case: per[target]["median"] for case, per in ds["reads"].items() if "median" in per.get(target, {})}


def test_json_shape(quick_run):
    res, _ = quick_run
    assert {"meta", "datasets", "lancelot", "memory_checks"} <= set(res)
    assert res["meta"]["take_sizes"] == [1, 10, 100, 1000]
    assert list(res["datasets"]) == [f"synthetic-{ROWS}"]
    ds = res["datasets"][f"synthetic-{ROWS}"]
    assert ds["num_rows"] == ROWS
    assert ds["columns"] == datasets.SYNTHETIC_SCHEMA.names
    for v in adapters.LANCE_VERSIONS:
        assert f"pylance {v}" in ds["targets"] and f"lancelot {v}" in ds["targets"]
    expected_cases = {"open", "scan/all", f"range{ROWS}/all"} | {f"take{n}/all" for n in (1, 10, 100, 1000)}
    expected_cases |= {f"take{n}/col:{c}" for n in (1, 10, 100, 1000) for c in ds["columns"]}
    assert set(ds["reads"]) == expected_cases
    assert set(ds["rss"]) == {"scan"}
    assert "take100/all" in ds["ratios"]


@pytest.mark.parametrize("target", ["pylance 2.0", "pylance 2.1", "pylance 2.2", "parquet"])
def test_reference_numbers_are_sane(quick_run, target):
    ds = quick_run[0]["datasets"][f"synthetic-{ROWS}"]
    med = _medians(ds, target)
    assert set(med) == set(ds["reads"])  # every case measured
    assert all(0 < m < 60 for m in med.values())
    assert all(ds["reads"][c][target]["verified"] for c in med)
    assert all(len(ds["reads"][c][target]["samples"]) == 2 for c in med)
    size = ds["files"][target]["size_bytes"]
    assert 0.1 * ds["arrow_bytes"] < size < 10 * ds["arrow_bytes"]
    w = ds["write"][target]
    assert w["median"] > 0 and w["peak_rss"] >= w["delta_rss"] >= 0
    r = ds["rss"]["scan"][target]
    assert r["rows"] == ROWS
    assert r["peak_rss"] >= r["base_rss"] > 10 * 2**20  # an interpreter with pyarrow loaded


def test_lancelot_results_are_verified_or_explained(quick_run):
    res, _ = quick_run
    ds = res["datasets"][f"synthetic-{ROWS}"]
    for case, per in ds["reads"].items():
        for target, r in per.items():
            if target.startswith("lancelot"):
                # each lancelot entry is a verified timing, a skip with a reason, or a reported error
                assert ("median" in r and r["verified"] in (True, False)) or r.get("skip") or r.get("error"), (case, r)
    for v in adapters.LANCE_VERSIONS:
        w = ds["write"][f"lancelot {v}"]
        if v in res["lancelot"]["write_skips"]:
            assert "skip" in w
        else:
            assert w.get("median", 0) > 0 or "error" in w


def test_ratios_match_medians(quick_run):
    ds = quick_run[0]["datasets"][f"synthetic-{ROWS}"]
    pl, pq_ = _medians(ds, "pylance 2.0"), _medians(ds, "parquet")
    lc = _medians(ds, "lancelot 2.0")
    for case in set(lc) & set(pl):
        if ds["reads"][case]["lancelot 2.0"]["verified"]:
            assert math.isclose(ds["ratios"][case]["lancelot/pylance 2.0"], lc[case] / pl[case])
            assert math.isclose(ds["ratios"][case]["lancelot 2.0/parquet"], lc[case] / pq_[case])


def test_memory_checks(quick_run):
    mc = quick_run[0]["memory_checks"]
    w = mc["streaming_write"]["pylance"]
    assert w["rows"] > 0 and w["arrow_bytes"] >= mc["stream_bytes"] and w["file_bytes"] > 0
    it = mc["iter_batches"]["pylance"]
    assert it["rows"] == w["rows"]
    lw = mc["streaming_write"]["lancelot"]
    if "rows" in lw:
        assert lw["rows"] == w["rows"] and lw["peak_rss"] >= lw["base_rss"]
        assert mc["iter_batches"]["lancelot"].get("rows", lw["rows"]) == lw["rows"]
    else:
        assert lw.get("skip") or lw.get("error")


@pytest.mark.parametrize("lib", ["pylance", "parquet"])
def test_probe_take_and_range(quick_run, lib):
    ds = quick_run[0]["datasets"][f"synthetic-{ROWS}"]
    path = ds["targets"]["parquet" if lib == "parquet" else "pylance 2.1"]["file"]
    base = {"lib": lib, "version": "2.1", "path": path}
    r = probe.run_probe({**base, "op": "take", "indices": [0, 7, 1999]})
    assert r["rows"] == 3 and r["peak_rss"] >= r["base_rss"] > 0 and r["hwm_reset"] in (True, False)
    r = probe.run_probe({**base, "op": "range", "start": 100, "num_rows": 500})
    assert r["rows"] == 500
    assert "error" in probe.run_probe({**base, "op": "nonsense"})


def test_markdown_output(quick_run, capsys):
    res, _ = quick_run
    text = run.render(res, markdown=True, verbose=False)
    assert "| metric | pylance 2.0 |" in text and "|---|---:|" in text
    assert "take 1000 rows (ms)" in text and "Memory checks" in text


def test_parquet_take_reads_the_right_rows(tmp_path):
    t = pa.Table.from_batches(list(datasets.synthetic_batches(1_000, seed=3, batch_rows=300)))
    p = tmp_path / "t.parquet"
    adapters.ParquetAdapter(row_group_rows=128).write(t, p)
    h = adapters.ParquetAdapter().open(p)
    idx = np.array([0, 5, 127, 128, 129, 640, 999])
    assert adapters.same_data(h.take(idx, None), t.take(pa.array(idx)))
    assert adapters.same_data(h.take(idx, ["text"]), t.select(["text"]).take(pa.array(idx)))
    shuffled = np.array([640, 3, 999, 3, 128])  # any order, duplicates
    assert adapters.same_data(h.take(shuffled, None), t.take(pa.array(shuffled)))
    assert h.take(np.array([], dtype=np.int64), ["id"]).num_rows == 0
    assert adapters.same_data(h.read_range(120, 300, None), t.slice(120, 300))
    assert adapters.same_data(h.scan(), t)


def test_synthetic_is_seeded_and_batch_independent():
    a = pa.Table.from_batches(list(datasets.synthetic_batches(1_000, seed=7, batch_rows=256)))
    b = pa.Table.from_batches(list(datasets.synthetic_batches(1_000, seed=7, batch_rows=256)))
    assert a.equals(b) and a.num_rows == 1_000
    assert a.column("id").to_pylist() == list(range(1_000))
    assert set(a.column("category").to_pylist()) == set(datasets.CATEGORIES)
    assert a.schema.field("vector").type.list_size == datasets.VECTOR_DIM


def test_parse_size():
    assert run.parse_size("4GiB") == 4 * 2**30
    assert run.parse_size("8MiB") == 8 * 2**20
    assert run.parse_size("100MB") == 100 * 10**6
    assert run.parse_size("12345") == 12345


def test_case_budget_caps_repetitions(tmp_path):
    t = pa.Table.from_batches(list(datasets.synthetic_batches(500, seed=1, batch_rows=500)))
    targets = []
    for ad in (adapters.PylanceAdapter("2.1"), adapters.ParquetAdapter(row_group_rows=100)):
        p = tmp_path / f"t{ad.suffix}"
        ad.write(t, p)
        targets.append(measure.ReadTarget(ad.name, ad, p))
    measure.open_targets(targets)
    cases = measure.build_cases(t.schema, [10], 50, per_column=False)
    full = measure.time_cases(cases, targets, t, reps=3, seed=0, log=lambda m: None)
    capped = measure.time_cases(cases, targets, t, reps=3, seed=0, log=lambda m: None, budget_s=1e-12)
    for case in full:
        for name in ("pylance 2.1", "parquet"):
            assert len(full[case][name]["samples"]) == 3 and full[case][name]["verified"]
            assert len(capped[case][name]["samples"]) == 1


@pytest.mark.parametrize("cache", ["warm", "cold", "as-is"])
def test_cache_modes(tmp_path, monkeypatch, cache):
    """warm: an untimed call before each timed take/range; cold: the file dropped first; as-is: neither."""
    t = pa.Table.from_batches(list(datasets.synthetic_batches(300, seed=2, batch_rows=300)))
    ad = adapters.ParquetAdapter(row_group_rows=100)
    p = tmp_path / f"t{ad.suffix}"
    ad.write(t, p)
    target = measure.ReadTarget(ad.name, ad, p)
    measure.open_targets([target])
    calls, drops = [], []
    take = target.handle.take
    monkeypatch.setattr(target.handle, "take", lambda idx, cols: calls.append(1) or take(idx, cols))
    real_drop = measure._drop_cache
    monkeypatch.setattr(measure, "_drop_cache", lambda path: drops.append(path) or real_drop(path))
    cases = [measure.Case("take5/all", "take", 5)]
    res = measure.time_cases(cases, [target], t, reps=3, seed=0, log=lambda m: None, cache=cache)
    assert res["take5/all"]["parquet"]["verified"] and len(res["take5/all"]["parquet"]["samples"]) == 3
    assert len(calls) == 1 + 3 * (2 if cache == "warm" else 1)  # the checked warm-up call, then the reps
    assert drops == ([p] * 3 if cache == "cold" else [])


@pytest.mark.parametrize("k", [2, 3])
def test_take_compare_order_is_balanced(k):
    """Over 2k repetitions (calls in sequence, across repetitions, cyclically) every implementation
    runs once per repetition, follows each other one equally often and runs before it in half the
    repetitions (a plain rotation of three puts one after the same neighbour, and before another,
    in two repetitions of three)."""
    from collections import Counter

    from benchmarks.measure import balanced_order as _order

    names = [f"impl{i}" for i in range(k)]
    seq = []
    for rep in range(2 * k):
        order = _order(names, rep)
        assert sorted(order) == names
        seq += order
    pairs = Counter(zip(seq, seq[1:] + seq[:1]))
    after = {(a, b): n for (a, b), n in pairs.items() if a != b}
    assert len(after) == k * (k - 1) and len(set(after.values())) == 1, after
    for a in names:  # the first to read the rows (and pay for the page cache's misses) in half the repetitions
        for b in names:
            if a != b:
                assert sum(_order(names, r).index(a) < _order(names, r).index(b) for r in range(2 * k)) == k
