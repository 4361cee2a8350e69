"""Tables of medians and ratios (plain text or Markdown) from the harness's result dict.

Column names: ``pylance 2.x`` reads the file pylance wrote; ``lancelot 2.x`` reads the file lancelot
wrote; ``lancelot 2.x (pl)`` is lancelot reading pylance's file (the same bytes as ``pylance 2.x``:
the pure reader comparison); ``parquet`` is pyarrow.parquet.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

#: a value cell: a number, or a short note ("skip", "ERR")
Cell = float | str | None


@dataclass
class Row:
    key: str
    label: str
    unit: str  # "ms", "MB", "x", or "" for none
    values: dict[str, Cell]


def writer_of(target: str) -> str | None:
    """The write/size entry that belongs to a read target (None for lancelot reading pylance's file)."""
    return None if target.endswith("(pl)") else target


def _cell(res: dict | None, key: str = "median", scale: float = 1.0) -> Cell:
    if res is None:
        return None
    if "skip" in res:
        return "skip"
    if "error" in res:
        return "ERR"
    v = res.get(key)
    if v is None:
        return None
    v = v * scale
    return f"{_num(v)}!" if res.get("verified") is False else v


def metric_rows(ds: dict, targets: list[str], per_column_sizes: list[int] | None = None) -> list[Row]:
    """The rows of one dataset's table: read timings, write time, size and peak RSS."""
    reads, write, files, rss = ds.get("reads", {}), ds.get("write", {}), ds.get("files", {}), ds.get("rss", {})
    rows: list[Row] = []

    def read_row(case: str, label: str) -> None:
        if case in reads:
            rows.append(Row(case, label, "ms", {t: _cell(reads[case].get(t), scale=1e3) for t in targets}))

    read_row("open", "open file")
    for case in reads:
        if case.startswith("take") and case.endswith("/all"):
            read_row(case, f"take {case[4:-4]} rows")
    for case in reads:
        if case.startswith("range"):
            read_row(case, f"read_range {case[5:-4]} rows")
    read_row("scan/all", "full scan")

    def by_writer(src: dict, key: str, scale: float) -> dict[str, Cell]:
        return {t: (_cell(src.get(writer_of(t)), key, scale) if writer_of(t) else None) for t in targets}

    if write:
        rows.append(Row("write", "write", "ms", by_writer(write, "median", 1e3)))
    if files:
        rows.append(Row("size", "file size", "MB", by_writer(files, "size_bytes", 1e-6)))
    if write:
        rows.append(Row("rss:write", "peak RSS +, write", "MB", by_writer(write, "delta_rss", 1e-6)))
    for group, res in rss.items():
        rows.append(
            Row(
                f"rss:{group}", f"peak RSS +, {group}", "MB", {t: _cell(res.get(t), "delta_rss", 1e-6) for t in targets}
            )
        )
    for n in per_column_sizes or []:
        for case in reads:
            if case.startswith(f"take{n}/col:"):
                read_row(case, f"take {n}, column {case.split(':', 1)[1]}")
    return rows


def ratio_columns(targets: list[str]) -> list[tuple[str, str, str]]:
    """(header, numerator, denominator) for lancelot/pylance per version and lancelot/parquet."""
    cols = []
    versions = [t.split()[1] for t in targets if t.startswith("pylance ")]
    for v in versions:
        if f"lancelot {v}" in targets:
            cols.append((f"lancelot/pylance {v}", f"lancelot {v}", f"pylance {v}"))
        if f"lancelot {v} (pl)" in targets:
            cols.append((f"lancelot(pl)/pylance {v}", f"lancelot {v} (pl)", f"pylance {v}"))
    if "parquet" in targets:
        for v in versions:
            if f"lancelot {v}" in targets:
                cols.append((f"lancelot {v}/parquet", f"lancelot {v}", "parquet"))
    return cols


def ratio_rows(rows: list[Row], targets: list[str]) -> list[Row]:
    out = []
    for r in rows:
        vals: dict[str, Cell] = {}
        for header, num, den in ratio_columns(targets):
            a, b = r.values.get(num), r.values.get(den)
            vals[header] = a / b if isinstance(a, float) and isinstance(b, float) and b > 0 else None
        out.append(Row(r.key, r.label, "x", vals))
    return out


def _num(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 999.5:
        return f"{v:,.0f}"
    if abs(v) >= 99.95:
        return f"{v:.0f}"
    if abs(v) >= 9.995:
        return f"{v:.1f}"
    if abs(v) >= 0.01:
        return f"{v:.2f}"
    return f"{v:.3g}"


def _fmt(v: Cell) -> str:
    if v is None:
        return "-"
    return v if isinstance(v, str) else _num(v)


def format_table(rows: list[Row], columns: list[str], markdown: bool = False) -> str:
    header = ["metric"] + columns
    body = [[f"{r.label} ({r.unit})" if r.unit else r.label] + [_fmt(r.values.get(c)) for c in columns] for r in rows]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * len(columns)) + "|"]
        lines += ["| " + " | ".join(b) + " |" for b in body]
        return "\n".join(lines)
    widths = [max(len(x[i]) for x in [header] + body) for i in range(len(header))]
    fmt = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(b) for b in body])


def skip_notes(ds: dict) -> list[str]:
    """One line per distinct skip/error reason, naming the targets and metrics it hit."""
    seen: dict[str, set[str]] = {}

    def note(where: str, res: dict) -> None:
        for k in ("skip", "error"):
            if k in res and res[k]:
                seen.setdefault(f"{k}: {res[k]}", set()).add(where)

    for case, per in ds.get("reads", {}).items():
        for t, res in per.items():
            note(f"{t} {case}", res)
    for section in ("write", "files"):
        for t, res in ds.get(section, {}).items():
            note(f"{t} {section}", res)
    for group, per in ds.get("rss", {}).items():
        for t, res in per.items():
            note(f"{t} rss:{group}", res)
    lines = []
    for reason, where in seen.items():
        w = sorted(where)
        more = f" (+{len(w) - 4} more)" if len(w) > 4 else ""
        lines.append(f"- {reason} [{', '.join(w[:4])}{more}]")
    return lines


def render_dataset(ds: dict, targets: list[str], markdown: bool, per_column_sizes: list[int]) -> str:
    rows = metric_rows(ds, targets, per_column_sizes)
    ratios = ratio_rows(rows, targets)
    title = f"{ds['name']}: {ds['num_rows']:,} rows, {ds['arrow_bytes'] / 1e6:,.0f} MB in Arrow"
    parts = [f"### {title}" if markdown else f"== {title}", "", "Medians:", "", format_table(rows, targets, markdown)]
    rcols = [h for h, _, _ in ratio_columns(targets)]
    if rcols:
        parts += ["", "Ratios (< 1 means lancelot is faster / smaller):", "", format_table(ratios, rcols, markdown)]
    notes = skip_notes(ds)
    if notes:
        parts += ["", "Skipped or failed:", ""] + notes
    return "\n".join(parts)


def render_memcheck(mc: dict, markdown: bool) -> str:
    rows = []
    for section in ("streaming_write", "iter_batches"):
        for name, r in mc.get(section, {}).items():
            label = "streaming write" if section == "streaming_write" else "iter_batches"
            rows.append(
                Row(
                    f"{section}:{name}",
                    f"{label}, {name} {mc['version']}",
                    "",
                    {
                        "seconds": r.get("seconds") if "seconds" in r else _cell(r),
                        "rows": float(r["rows"]) if "rows" in r else None,
                        "file MB": r["file_bytes"] / 1e6 if "file_bytes" in r else None,
                        "peak RSS MB": r["peak_rss"] / 1e6 if "peak_rss" in r else None,
                        "RSS + MB": r["delta_rss"] / 1e6 if "delta_rss" in r else None,
                    },
                )
            )
    title = f"Memory checks ({mc['stream_bytes'] / 2**20:,.0f} MiB of Arrow data streamed)"
    cols = ["seconds", "rows", "file MB", "peak RSS MB", "RSS + MB"]
    table = format_table(rows, cols, markdown)
    return "\n".join([f"### {title}" if markdown else f"== {title}", "", table])


def save_json(results: dict, path: Path) -> None:
    """Write ``results`` as JSON atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(results, indent=1, default=str))
    os.replace(tmp, path)
