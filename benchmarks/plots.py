"""The performance page's plots, drawn from the results the benchmarks write: `python -m benchmarks.plots`.

Each figure is a bar chart of medians relative to pylance (1 = pylance's time; below 1, faster), on a
log scale because Parquet's takes are hundreds of times slower; each bar carries its ratio, and each
figure's footer its source file, date, command and machine.

- ``docs/img/files.svg``: one Lance file (``benchmarks.run``, ``results/latest.json``): takes of 1, 10
  and 1,000 rows, a full scan and a write, lancelot, pylance and pyarrow.parquet, at file version 2.2.
- ``docs/img/takes.svg``: takes of 10 new random rows per table (``benchmarks.take_compare``,
  ``results/take_compare.json``), lancelot and Parquet relative to pylance, at 2.2.

The SVGs are reproducible (no date stamp, a fixed hash salt; text stays text), so regenerating them
from the same results changes no byte. Needs matplotlib (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
OUT = ROOT / "docs" / "img"

#: one colour per library, the same in every figure
COLOURS = {"lancelot": "#3f51b5", "pylance": "#9e9e9e", "parquet": "#ef6c00"}

#: latest.json's read cases (and the write) drawn, with their labels
FILE_CASES = [
    ("take1/all", "take\n1 row"),
    ("take10/all", "take\n10 rows"),
    ("take1000/all", "take\n1,000 rows"),
    ("scan/all", "full\nscan"),
    ("write", "write"),
]

#: take_compare.json's tables, in the order drawn, with their labels
TAKE_TABLES = [
    ("tpch-sf1-region", "TPC-H region (5)"),
    ("tpch-sf1-nation", "nation (25)"),
    ("tpch-sf1-supplier", "supplier (10k)"),
    ("tpch-sf1-customer", "customer (150k)"),
    ("tpch-sf1-part", "part (200k)"),
    ("tpch-sf1-partsupp", "partsupp (800k)"),
    ("tpch-sf1-orders", "orders (1.5M)"),
    ("tpch-sf1-lineitem", "lineitem (6M)"),
    ("constants-1000000", "constants (1M)"),
    ("synthetic-1000000", "synthetic (1M)"),
]


def file_ratios(results: dict[str, Any], version: str = "2.2") -> dict[str, dict[str, list[float | None]]]:
    """Per dataset, per library, the median of each ``FILE_CASES`` case over pylance's (None: not measured)."""
    out: dict[str, dict[str, list[float | None]]] = {}
    targets = {"lancelot": f"lancelot {version}", "pylance": f"pylance {version}", "parquet": "parquet"}
    for name, ds in results["datasets"].items():
        per: dict[str, list[float | None]] = {lib: [] for lib in targets}
        for case, _ in FILE_CASES:
            cells = ds.get("write", {}) if case == "write" else ds.get("reads", {}).get(case, {})
            base = (cells.get(targets["pylance"]) or {}).get("median")
            for lib, target in targets.items():
                v = (cells.get(target) or {}).get("median")
                per[lib].append(v / base if v is not None and base else None)
        out[name] = per
    return out


def take_ratios(results: dict[str, Any], version: str = "2.2") -> dict[str, list[float | None]]:
    """Per library, the median time of a random 10-row take over pylance's, per ``TAKE_TABLES`` table."""
    out: dict[str, list[float | None]] = {"lancelot": [], "pylance": [], "parquet": []}
    for table, _ in TAKE_TABLES:
        cell = results.get(f"{table} {version}", {}).get("random ALL", {})
        base = cell.get("pylance_ms")
        for lib in out:
            v = cell.get(f"{lib}_ms")
            out[lib].append(v / base if v is not None and base else None)
    return out


def _label(v: float | None) -> str:
    return "" if v is None else f"{v:.0f}" if v >= 10 else f"{v:.2g}"


def _command(command: str) -> str:
    """The command as a reader runs it: the machine's own paths (``--data-dir``, ``--out``) left out."""
    words, out, skip = command.split(), [], False
    for w in words:
        if skip:
            skip = False
        elif w in ("--data-dir", "--out"):
            skip = True
        elif not w.startswith(("--data-dir=", "--out=")):
            out.append(w)
    return " ".join(out)


def _footer(source: str, meta: dict[str, Any]) -> str:
    machine = f"{meta.get('cpus', 2)}-core shared VM" if "cpus" in meta else "shared 2-core VM"
    versions = meta.get("versions", {})
    libs = ", ".join(f"{k} {v}" for k, v in versions.items() if k in ("pylance", "pyarrow"))
    return (
        f"{source}, {str(meta.get('date', ''))[:10]}; {machine}"
        + (f", Python {meta['python']}" if "python" in meta else "")
        + (f", {libs}" if libs else "")
        + f"\n{_command(str(meta.get('command', '')))}"
    )


def _bars(ax: Any, labels: list[str], series: dict[str, list[float | None]]) -> None:
    """Grouped bars on a log axis, each labelled with its ratio (1 = pylance)."""
    import numpy as np

    n = len(series)
    width = 0.8 / n
    x = np.arange(len(labels))
    for i, (lib, values) in enumerate(series.items()):
        heights = [np.nan if v is None else v for v in values]
        bars = ax.bar(x + (i - (n - 1) / 2) * width, heights, width, label=lib, color=COLOURS[lib])
        ax.bar_label(bars, labels=[_label(v) for v in values], fontsize=7, padding=1)
    ax.set_yscale("log")
    ax.set_ylim(0.1, 2000)
    ax.axhline(1.0, color="black", linewidth=0.6)
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("time relative to pylance (log)", fontsize=8)
    ax.tick_params(axis="y", labelsize=7)
    ax.spines[["top", "right"]].set_visible(False)


def _save(fig: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight")


def plot_files(results: dict[str, Any], path: Path) -> None:
    import matplotlib.pyplot as plt

    ratios = file_ratios(results)
    titles = {"synthetic-1000000": "synthetic, 1M rows", "tpch-sf1-lineitem": "TPC-H lineitem SF1 (6M rows)"}
    fig, axes = plt.subplots(1, len(ratios), figsize=(5.2 * len(ratios), 3.6), sharey=True)
    fig.suptitle("One Lance 2.2 file: time relative to pylance", fontsize=10, y=1.04)
    for ax, (name, series) in zip(list(getattr(axes, "flat", [axes])), ratios.items()):
        _bars(ax, [label for _, label in FILE_CASES], series)
        ax.set_title(titles.get(name, name), fontsize=9)
    for ax in list(getattr(axes, "flat", [axes]))[1:]:
        ax.set_ylabel("")
    fig.legend(
        *axes.flat[0].get_legend_handles_labels(),
        fontsize=8,
        frameon=False,
        loc="upper center",
        ncol=3,
        bbox_to_anchor=(0.5, 0.99),
    )
    fig.subplots_adjust(top=0.84)
    fig.text(0, -0.04, _footer("benchmarks/results/latest.json", results.get("meta", {})), fontsize=6, va="top")
    _save(fig, path)
    plt.close(fig)


def plot_takes(results: dict[str, Any], path: Path) -> None:
    import matplotlib.pyplot as plt

    ratios = take_ratios(results)
    fig, ax = plt.subplots(figsize=(10.4, 3.6))
    _bars(ax, [label for _, label in TAKE_TABLES], ratios)
    ax.set_title("Take of 10 new random rows, all columns, Lance 2.2 files written by pylance", fontsize=9)
    ax.legend(fontsize=8, frameon=False, loc="upper right", ncol=3)
    for t in ax.get_xticklabels():
        t.set_rotation(20)
        t.set_horizontalalignment("right")
    fig.text(0, -0.12, _footer("benchmarks/results/take_compare.json", results.get("meta", {})), fontsize=6, va="top")
    _save(fig, path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> list[Path]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--results", type=Path, default=RESULTS, help="where the results JSON files are")
    ap.add_argument("--out", type=Path, default=OUT, help="where the SVGs go (docs/img)")
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "lancelot"  # stable element ids: same results, same bytes
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: small files, searchable
    written = []
    for name, source, plot in (
        ("files.svg", "latest.json", plot_files),
        ("takes.svg", "take_compare.json", plot_takes),
    ):
        src = args.results / source
        if not src.exists():
            print(f"skipped {name}: no {src}")
            continue
        plot(json.loads(src.read_text()), args.out / name)
        written.append(args.out / name)
        print(f"wrote {args.out / name}")
    return written


if __name__ == "__main__":
    main()
