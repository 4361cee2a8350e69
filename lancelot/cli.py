"""The ``lancelot`` command: inspect | convert | bench."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="lancelot", description="Lance files in pure Python")
    sub = p.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("inspect", help="print a file's version, schema, pages and encodings")
    i.add_argument("file")
    i.add_argument("--pages", type=int, default=5, help="pages shown per column")
    c = sub.add_parser("convert", help="convert a Parquet or Lance file to Lance")
    c.add_argument("src")
    c.add_argument("dst")
    c.add_argument("--version", default=None)
    c.add_argument("--max-page-bytes", type=int, default=None)
    sub.add_parser("bench", help="run the benchmark suite (see benchmarks/README.md)", add_help=False)
    args, rest = p.parse_known_args(argv)
    from lancelot.errors import LanceError

    try:
        if args.cmd == "inspect":
            from lancelot.dataset.describe import describe_dataset, is_dataset
            from lancelot.inspect import inspect_file

            ds = is_dataset(args.file)
            print(describe_dataset(args.file) if ds else inspect_file(args.file, max_pages=args.pages))
        elif args.cmd == "convert":
            _convert(args)
        elif args.cmd == "bench":
            from pathlib import Path

            root = Path(__file__).resolve().parent.parent
            if (root / "benchmarks" / "run.py").exists() and str(root) not in sys.path:
                sys.path.insert(0, str(root))  # a source checkout: benchmarks/ sits beside the package
            try:
                from benchmarks.run import main as bench_main
            except ImportError:
                print("lancelot bench runs from a source checkout (benchmarks/ is not installed)", file=sys.stderr)
                return 2
            return bench_main(rest) or 0
    except LanceError as e:
        print(f"lancelot: {e}", file=sys.stderr)
        return 1
    return 0


def _convert(args) -> None:
    import pyarrow.parquet as pq

    from lancelot.reader import LanceFile
    from lancelot.writer import write_table

    if args.src.endswith(".parquet"):
        pf = pq.ParquetFile(args.src)
        write_table(pf.iter_batches(), args.dst, version=args.version, max_page_bytes=args.max_page_bytes,
                    schema=pf.schema_arrow)
    else:
        f = LanceFile(args.src)
        write_table(f.iter_batches(), args.dst, version=args.version, max_page_bytes=args.max_page_bytes,
                    schema=f.schema)


if __name__ == "__main__":
    sys.exit(main())
