"""benchmarks/plots.py reads the results files the benchmarks write: the ratios it draws are the
results' medians over pylance's (no drawing here: matplotlib is slow to import)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import plots

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def test_file_ratios_are_medians_over_pylance():
    results = json.loads((RESULTS / "latest.json").read_text())
    ratios = plots.file_ratios(results)
    assert set(ratios) == set(results["datasets"])
    for name, per in ratios.items():
        assert per["pylance"] == [pytest.approx(1.0)] * len(plots.FILE_CASES)
        reads = results["datasets"][name]["reads"]["take10/all"]
        want = reads["lancelot 2.2"]["median"] / reads["pylance 2.2"]["median"]
        assert per["lancelot"][1] == pytest.approx(want)
        write = results["datasets"][name]["write"]
        assert per["parquet"][-1] == pytest.approx(write["parquet"]["median"] / write["pylance 2.2"]["median"])


def test_take_ratios_follow_take_compare_and_mark_missing_tables():
    results = json.loads((RESULTS / "take_compare.json").read_text())
    ratios = plots.take_ratios(results)
    i = [t for t, _ in plots.TAKE_TABLES].index("tpch-sf1-lineitem")
    assert ratios["lancelot"][i] == pytest.approx(results["tpch-sf1-lineitem 2.2"]["random ALL"]["x_pylance"])
    assert ratios["parquet"][i] > 1 > ratios["lancelot"][i]
    partial = plots.take_ratios({"tpch-sf1-region 2.2": results["tpch-sf1-region 2.2"]})
    assert partial["lancelot"][0] is not None and partial["lancelot"][1:] == [None] * (len(plots.TAKE_TABLES) - 1)


def test_footer_names_source_date_machine_and_a_portable_command():
    meta = {
        "date": "2026-11-24T13:59:25+00:00",
        "cpus": 2,
        "python": "3.11.7",
        "command": "python -m x --data-dir /d --out /tmp/o.json --reps 3",
    }
    text = plots._footer("benchmarks/results/latest.json", meta)
    assert "2026-11-24" in text and "2-core" in text and "3.11.7" in text
    assert text.endswith("python -m x --reps 3")
