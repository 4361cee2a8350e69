"""The ``lancelot`` command: inspect | convert | bench.

Arguments are parsed strictly (an unknown option is an error, with the nearest known one suggested); every failure is
one ``lancelot: error: ...`` line on stderr and a non-zero exit status (``--debug`` shows the traceback instead).  Exit
status: 0 done, 1 failed, 2 bad usage, 130 interrupted."""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TextIO

from lancelot import versions
from lancelot.convert import FORMATS
from lancelot.encodings.strategy import PROFILES

VERSIONS = tuple(versions.ALIASES)  # 2.0, 2.1, 2.2, stable


class _Parser(argparse.ArgumentParser):
    """argparse with "did you mean" suggestions for misspelled options and commands."""

    def error(self, message: str) -> NoReturn:  # noqa: D401 - argparse's hook
        hint = _suggestion(self, message)
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}{hint}\n")


def _known_options(parser: argparse.ArgumentParser) -> list[str]:
    opts = [o for a in parser._actions for o in a.option_strings]
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sub in a.choices.values():
                opts += _known_options(sub)
    return sorted(set(opts))


def _suggestion(parser: argparse.ArgumentParser, message: str) -> str:
    words: list[str] = []
    if message.startswith("unrecognized arguments:"):
        words = [w.split("=", 1)[0] for w in message.split(":", 1)[1].split() if w.startswith("-")]
        choices = _known_options(parser)
    elif "invalid choice:" in message and "'" in message:
        words = [message.split("'")[1]] if "'" in message else []
        choices = [
            "inspect",
            "convert",
            "bench",
            "auto",
            *FORMATS,
            *VERSIONS,
            "always",
            "never",
            "create",
            "append",
            "overwrite",
        ]
    else:
        return ""
    hints = []
    for w in words:
        near = difflib.get_close_matches(w, choices, n=1, cutoff=0.6)
        if near:
            hints.append(f"{w} -> {near[0]}")
    return f" (did you mean: {', '.join(hints)}?)" if hints else ""


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be a positive number of bytes")
    return v


def _pages(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < -1:
        raise argparse.ArgumentTypeError(f"{text}: give a count >= 0, or -1 for every page")
    return v


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Defaults in every option's help; an option whose default is None says its own."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        return action.help if action.default is None else super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    from lancelot._version import __version__

    common = _Parser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback on errors (default: off)",
    )
    shared: dict[str, Any] = {"allow_abbrev": False, "formatter_class": _Help, "parents": [common]}
    p = _Parser(prog="lancelot", description="Lance files in pure Python", **shared)
    p.add_argument(
        "--version", action="version", version=f"lancelot {__version__}", help="print lancelot's version and exit"
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="{inspect,convert,bench}", parser_class=_Parser)
    i = sub.add_parser(
        "inspect",
        help="show what a Lance file (or dataset) holds",
        **shared,
        description="A table of the file's columns (path, type, pages, rows, bytes, encoding, "
        "compression ratio); --verbose adds every page's encoding tree.",
    )
    i.add_argument("file", help="a Lance file (local path or fsspec URL) or a dataset directory")
    i.add_argument("-v", "--verbose", action="store_true", help="also print the schema and full encoding trees")
    i.add_argument(
        "--pages", type=_pages, default=5, metavar="N", help="pages shown per column with --verbose (-1: all, 0: none)"
    )
    c = sub.add_parser(
        "convert",
        help="convert a Parquet, CSV, Arrow IPC or Lance file to Lance",
        **shared,
        description="Reads SRC (its format told by its content, not its name) and writes DST as "
        "one Lance file (or, with --dataset, a new version of a Lance dataset); shows a "
        "progress bar on a terminal and a summary line.",
    )
    c.add_argument("src", help="input file")
    c.add_argument(
        "dst", help="output Lance file (local path or fsspec URL; replaced atomically), or dataset with --dataset"
    )
    c.add_argument(
        "--version",
        dest="file_version",
        default=None,
        choices=VERSIONS,
        metavar="V",
        help=f"Lance file version to write, one of {', '.join(VERSIONS)} (default: {versions.DEFAULT}; "
        "appending to a dataset: the dataset's own)",
    )
    c.add_argument(
        "--max-page-bytes",
        type=_positive_int,
        default=None,
        metavar="N",
        help="largest page per column, in bytes (default: the writer's, 32 MiB)",
    )
    c.add_argument(
        "--profile",
        default=None,
        choices=PROFILES,
        help="how hard the 2.1+ writer compresses: fast, balanced (default) or compact (smallest, slower writes)",
    )
    c.add_argument(
        "--dataset",
        dest="dataset_mode",
        nargs="?",
        const="create",
        default=None,
        choices=("create", "append", "overwrite"),
        help="write DST as a Lance dataset instead of one file: a new version by create (the "
        "default with the bare flag), append or overwrite (default: a file)",
    )
    c.add_argument(
        "--from",
        dest="src_format",
        default="auto",
        choices=("auto", *FORMATS),
        help="input format (auto: told by the file's first and last bytes)",
    )
    c.add_argument(
        "--progress",
        default="auto",
        choices=("auto", "always", "never"),
        help="progress bar on stderr (auto: only when stderr is a terminal)",
    )
    c.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    sub.add_parser(
        "bench", help="run the benchmark suite (lancelot bench --help; see benchmarks/README.md)", add_help=False
    )
    return p


BENCH_COMMAND = "python -m benchmarks.run"


def _bench(rest: list[str]) -> int:
    """Run the benchmark suite of a source checkout (``python -m benchmarks.run``) in a child process.

    The suite is a developer tool (pylance, tpchgen-cli, psutil, gigabytes of data) that lives beside the package in a
    checkout and is not installed with it, so the library never imports it: from a checkout (or an editable install)
    this runs it there; an installed package says how to run it."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    if not (root / "benchmarks" / "run.py").is_file():
        print(
            f"lancelot: error: the benchmark suite is not installed with the package; from a source checkout "
            f"run `{BENCH_COMMAND} {' '.join(rest)}`".rstrip()
            + " (see benchmarks/README.md)",
            file=sys.stderr,
        )
        return 2
    env = dict(os.environ)  # the child finds benchmarks/ through its path; relative paths stay the caller's
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "benchmarks.run", *rest], env=env).returncode


def _message(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror and not str(e).startswith("file "):
        where = f": {e.filename}" if e.filename else ""
        return f"{e.strerror}{where}"
    text = str(e) or type(e).__name__
    return text.splitlines()[0] if text.strip() else type(e).__name__


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    """Run ``lancelot ARGV``; ``inspect`` prints its report to ``out`` (default: standard output)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    # bench passes every argument after it to the benchmark runner's own parser
    first = next((k for k, a in enumerate(argv) if a != "--debug"), None)
    if first is not None and argv[first] == "bench":
        return _run(lambda: _bench(argv[first + 1 :]), debug)
    args = build_parser().parse_args(argv)
    debug = getattr(args, "debug", False)
    if args.cmd == "inspect":

        def work() -> int:
            from lancelot.inspect import inspect_path

            print(inspect_path(args.file, verbose=args.verbose, max_pages=args.pages), file=out)
            return 0
    else:

        def work() -> int:
            from lancelot.convert import convert

            convert(
                args.src,
                args.dst,
                version=args.file_version,
                max_page_bytes=args.max_page_bytes,
                profile=args.profile,
                src_format=None if args.src_format == "auto" else args.src_format,
                progress=args.progress,
                quiet=args.quiet,
                dataset_mode=args.dataset_mode,
            )
            return 0

    return _run(work, debug)


def _run(work: Callable[[], int], debug: bool) -> int:
    try:
        return work()
    except KeyboardInterrupt:
        if debug:
            raise
        print("lancelot: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `lancelot inspect f | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as e:
        if debug:
            raise
        from lancelot.errors import LanceError

        kind = "" if isinstance(e, LanceError | OSError | ValueError | TypeError) else f"{type(e).__name__}: "
        print(f"lancelot: error: {kind}{_message(e)} (--debug shows the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
