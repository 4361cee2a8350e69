"""TPC-H tables from ``tpchgen-cli`` (the ``dev``/``bench`` extras): the one helper the conformance tests, the
benchmarks and the demo share.

``tpchgen-cli parquet`` writes one ``TABLE.parquet`` per table into a directory; its strings come back as
``string_view`` and its fields carry Parquet field ids, so ``plain_schema`` gives the schema Lance files hold (plain
strings, no field ids)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa

#: the eight TPC-H tables
TABLES = ("lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region")


def tpchgen_cli() -> str | None:
    """The tpchgen-cli executable: beside this interpreter (the venv) or on PATH; None when missing."""
    beside = Path(sys.executable).parent / "tpchgen-cli"
    if beside.exists():
        return str(beside)
    return shutil.which("tpchgen-cli")


def generate(out_dir: str | Path, scale: float, tables: Iterable[str], *, quiet: bool = True) -> dict[str, Path]:
    """Write TPC-H ``tables`` at scale factor ``scale`` as Parquet into ``out_dir``; their paths by name.

    FileNotFoundError when tpchgen-cli is not installed (``pip install tpchgen-cli``)."""
    exe = tpchgen_cli()
    if exe is None:
        raise FileNotFoundError("tpchgen-cli not found (pip install tpchgen-cli)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = list(tables)
    unknown = sorted(set(names) - set(TABLES))
    if unknown:
        raise ValueError(f"unknown TPC-H tables {unknown} (known: {', '.join(TABLES)})")
    subprocess.run(
        [exe, "parquet", "-s", f"{scale:g}", "-T", ",".join(names), "-o", str(out), "--overwrite"],
        check=True,
        capture_output=quiet,
    )
    return {name: out / f"{name}.parquet" for name in names}


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """string_view / binary_view -> string / binary (Lance files hold those); Parquet field ids dropped."""
    views = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}
    return pa.schema([pa.field(f.name, views.get(f.type, f.type), f.nullable) for f in schema])
