"""The ``lancelot`` command, run as a user runs it (a subprocess): strict arguments, --version,
help with defaults, one-line errors, convert by content with progress and summary, inspect."""

from __future__ import annotations

import contextlib
import io
import os
import pty
import re
import subprocess
import sys
import threading

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import lancelot
from lancelot.cli import build_parser, main

T = pa.table({"a": pa.array(np.arange(3000), pa.int64()), "s": [f"v{i % 17}" for i in range(3000)]})


def run(*args, check_rc: int | None = 0, **kw) -> subprocess.CompletedProcess:
    p = subprocess.run(
        [sys.executable, "-m", "lancelot.cli", *map(str, args)], capture_output=True, text=True, timeout=120, **kw
    )
    if check_rc is not None:
        assert p.returncode == check_rc, (p.returncode, p.stdout, p.stderr)
    return p


def run_in_process(*args, check_rc: int | None = 0) -> subprocess.CompletedProcess:
    """``run``'s answer from ``lancelot.cli.main`` in this process (argparse's exits included): for the
    further commands of a test whose first ran as a subprocess (each child costs an interpreter start)."""
    argv = list(map(str, args))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 1
    p = subprocess.CompletedProcess(["lancelot", *argv], rc, out.getvalue(), err.getvalue())
    if check_rc is not None:
        assert p.returncode == check_rc, (p.returncode, p.stdout, p.stderr)
    return p


def one_line_error(p: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    errors = [ln for ln in lines if ln.startswith("lancelot") and "error:" in ln]
    assert len(errors) == 1, p.stderr
    return errors[0]


def test_version():
    p = run("--version")
    assert p.stdout.strip() == f"lancelot {lancelot.__version__}"


def test_typo_is_an_error_with_a_suggestion(tmp_path):
    src = tmp_path / "a.parquet"
    pq.write_table(T, src)
    p = run("convert", src, tmp_path / "b.lance", "--verison", "2.0", check_rc=2)
    assert "unrecognized arguments: --verison" in p.stderr and "--version" in p.stderr.split("did you mean")[1]
    assert not (tmp_path / "b.lance").exists()
    p = run_in_process("convert", src, tmp_path / "b.lance", "extra", check_rc=2)
    assert "unrecognized arguments: extra" in p.stderr
    p = run_in_process("inspet", src, check_rc=2)
    assert "did you mean: inspet -> inspect" in p.stderr
    p = run_in_process("convert", src, tmp_path / "b.lance", "--vers", "2.0", check_rc=2)  # no abbreviations
    assert not (tmp_path / "b.lance").exists()


def test_every_option_has_help_with_its_default():
    parser = build_parser()
    subs = [a for a in parser._actions if isinstance(a, type(parser._subparsers._group_actions[0]))][0]
    for name in ("inspect", "convert"):
        sp = subs.choices[name]
        fmt = sp._get_formatter()
        for action in sp._actions:
            if not action.option_strings or action.dest == "help":
                continue
            text = fmt._get_help_string(action) % {"default": action.default}
            assert action.help and "default" in text, (name, action.option_strings)
    out = run("convert", "--help").stdout
    flat = " ".join(out.split())
    assert "(default: 2.2;" in flat and "(default: the writer's, 32 MiB)" in flat and "(default: auto)" in flat
    assert "(default: None)" not in flat


@pytest.mark.parametrize(
    "case",
    ["missing_source", "missing_dir", "target_is_dir", "negative_page_bytes", "not_a_known_format", "bad_version"],
)
def test_convert_errors_are_one_line(tmp_path, case):
    src = tmp_path / "a.parquet"
    pq.write_table(T, src)
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 4)
    args = {
        "missing_source": (tmp_path / "nope.parquet", tmp_path / "b.lance"),
        "missing_dir": (src, tmp_path / "no" / "dir" / "b.lance"),
        "target_is_dir": (src, tmp_path),
        "negative_page_bytes": (src, tmp_path / "b.lance", "--max-page-bytes", "-5"),
        "not_a_known_format": (junk, tmp_path / "b.lance"),
        "bad_version": (src, tmp_path / "b.lance", "--version", "3.0"),
    }[case]
    line = one_line_error((run if case == "missing_source" else run_in_process)("convert", *args, check_rc=None))
    want = {
        "missing_source": "nope.parquet': no such file",
        "missing_dir": "does not exist",
        "target_is_dir": "is a directory",
        "negative_page_bytes": "must be a positive number",
        "not_a_known_format": "cannot tell the format",
        "bad_version": "invalid choice: '3.0'",
    }[case]
    assert want in line
    assert not (tmp_path / "b.lance").exists()


def test_debug_shows_the_traceback(tmp_path):
    p = run("--debug", "inspect", tmp_path / "nope.lance", check_rc=None)
    assert p.returncode != 0 and "Traceback" in p.stderr and "LanceFileNotFoundError" in p.stderr
    p = run("inspect", tmp_path / "nope.lance", "--debug", check_rc=None)
    assert "Traceback" in p.stderr


def _inputs(tmp_path):
    """Each format under a name that does not tell it (content decides)."""
    paths = {}
    paths["parquet"] = tmp_path / "parquet.dat"
    pq.write_table(T, paths["parquet"], row_group_size=700)
    paths["csv"] = tmp_path / "csv.dat"
    pcsv.write_csv(T, paths["csv"])
    paths["arrow_file"] = tmp_path / "arrow.dat"
    feather.write_feather(T, paths["arrow_file"], compression="uncompressed", chunksize=1000)
    paths["arrow_stream"] = tmp_path / "stream.dat"
    with pa.ipc.new_stream(paths["arrow_stream"], T.schema) as w:
        w.write_table(T, max_chunksize=1000)
    paths["lance"] = tmp_path / "lance.dat"
    lancelot.write_table(T, paths["lance"], version="2.0")
    return paths


def test_convert_reads_by_content(tmp_path):
    for i, (kind, src) in enumerate(_inputs(tmp_path).items()):
        dst = tmp_path / f"{kind}.lance"
        p = (run if i == 0 else run_in_process)("convert", src, dst, "--version", "2.1")
        assert lancelot.read_table(dst).equals(T), kind
        assert lancelot.LanceFile(dst).version == "2.1"
        # the summary: rows, input format and size, output size, time
        name = {
            "parquet": "Parquet",
            "csv": "CSV",
            "arrow_file": "Arrow IPC",
            "arrow_stream": "Arrow IPC",
            "lance": "Lance",
        }[kind]
        assert re.fullmatch(
            rf".* -> .*: 3,000 rows, {name} [\d.]+ (B|KiB) -> Lance 2.1 [\d.]+ (B|KiB) in [\d.]+ s", p.stdout.strip()
        ), p.stdout
        assert p.stderr == ""  # piped: no progress bar
    p = run_in_process("convert", tmp_path / "csv.dat", tmp_path / "q.lance", "-q")
    assert p.stdout == "" and p.stderr == ""


def test_convert_progress_bar_on_a_terminal(tmp_path):
    src = tmp_path / "big.dat"
    pq.write_table(pa.table({"a": np.arange(400_000)}), src, row_group_size=20_000)
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain():  # read the terminal while the command runs (a full pty buffer would block it)
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        p = subprocess.run(
            [sys.executable, "-m", "lancelot.cli", "convert", str(src), str(tmp_path / "o.lance")],
            stdout=subprocess.PIPE,
            stderr=slave,
            text=True,
            timeout=120,
            env={**os.environ, "COLUMNS": "120"},
        )
    finally:
        os.close(slave)
        reader.join(10)
        os.close(master)
    bar = b"".join(chunks).decode(errors="replace")
    assert p.returncode == 0
    assert "Parquet -> Lance" in bar and "rows" in bar and "/s" in bar, bar  # rows and rate
    assert re.search(r"<\d\d:\d\d", bar), bar  # the ETA
    assert "wrote" in bar  # bytes written
    assert "400,000 rows" in p.stdout


def _nested(tmp_path, version):
    cols = {f"c{i}": pa.array(np.arange(500) * i, pa.int64()) for i in range(13)}
    cols["st"] = pa.array([{"x": i, "y": str(i)} for i in range(500)])
    cols["l"] = pa.array([[i, i + 1] for i in range(500)], pa.list_(pa.int32()))
    cols["s"] = pa.array([f"s{i % 5}" for i in range(500)])
    path = tmp_path / f"n{version}.lance"
    lancelot.write_table(pa.table(cols), path, version=version, max_page_bytes=1024)
    return path


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_inspect_table(tmp_path, version):
    path = _nested(tmp_path, version)
    out = run("inspect", path).stdout
    lines = out.splitlines()
    assert len(lines) < 30  # 16 fields: a readable table, not pages of protobuf text
    header = lines[3].split()
    assert header == ["column", "type", "pages", "rows", "bytes", "B/value", "encoding", "ratio"]
    paths = [ln.split()[0] for ln in lines[5:] if ln.strip()]
    assert "st.x" in paths and "st.y" in paths and "l.item" in paths  # struct children by their own names
    assert "mini_block_layout" not in out and "bits_per_value" not in out
    row = next(ln for ln in lines if ln.startswith("c3 "))
    assert re.search(r"int64\s+\d+\s+500\s+[\d.]+ (B|KiB)\s+\d+\.\d\d\s+\S.*\d+\.\d\dx$", row), row
    stored, unit, per_value = re.search(r"500\s+([\d.]+) (B|KiB)\s+(\d+\.\d\d)", row).groups()
    assert abs(float(stored) * (1024 if unit == "KiB" else 1) / 500 - float(per_value)) < 0.3  # KiB: rounded
    with lancelot.LanceFile(path) as f:
        pages = sum(len(c.pages) for c in f.metadata.columns)
    verbose = run_in_process("inspect", path, "--verbose", "--pages", "-1").stdout
    assert len(re.findall(r"^  page \d+:", verbose, re.M)) == pages
    assert ("PageLayout" if version != "2.0" else "ArrayEncoding") in verbose
    none = run_in_process("inspect", path, "-v", "--pages", "0").stdout
    assert not re.search(r"^  page \d+:", none, re.M)
    hidden = sum(int(n) for n in re.findall(r"\((\d+) more pages not shown", none))
    assert hidden == pages
    two = run_in_process("inspect", path, "-v", "--pages", "2").stdout
    assert (
        len(re.findall(r"^  page \d+:", two, re.M))
        + sum(int(n) for n in re.findall(r"\((\d+) more pages not shown", two))
        == pages
    )
    p = run_in_process("inspect", path, "--pages", "-2", check_rc=2)
    assert "give a count >= 0, or -1" in p.stderr


def test_bench_still_reaches_the_benchmark_runner():
    p = run("bench", "--help")
    assert "usage: lancelot bench" in p.stdout.lower()


def test_bench_runs_the_suite_without_the_library_importing_it(tmp_path):
    """The library never imports benchmarks/ nor touches sys.path: the suite runs in a child process."""
    code = (
        "import sys; before = list(sys.path); from lancelot.cli import main; rc = main(['bench', '--help']); "
        "assert rc == 0, rc; assert sys.path == before, 'sys.path changed'; "
        "assert not [m for m in sys.modules if m.split('.')[0] == 'benchmarks'], 'benchmarks imported'"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "usage: lancelot bench" in p.stdout


def test_bench_from_an_installed_package_says_how_to_run_it(tmp_path, monkeypatch, capsys):
    import lancelot.cli as cli

    monkeypatch.setattr(cli, "__file__", str(tmp_path / "site-packages" / "lancelot" / "cli.py"))
    assert cli._bench(["--quick"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lancelot: error: the benchmark suite is not installed")
    assert "`python -m benchmarks.run --quick`" in err


def test_convert_to_a_dataset(tmp_path):
    """--dataset writes a dataset version pylance opens; a dataset target needs --dataset append/overwrite."""
    lance = pytest.importorskip("lance", reason="pylance (the test oracle) is not installed")
    src, src2 = tmp_path / "in.parquet", tmp_path / "in2.parquet"
    pq.write_table(pa.table({"a": np.arange(1000), "s": [str(i) for i in range(1000)]}), src)
    pq.write_table(pa.table({"a": np.arange(5), "s": list("abcde")}), src2)
    ds = tmp_path / "ds.lance"
    assert "dataset version 1" in run("convert", src, ds, "--dataset", "--version", "2.0").stdout
    assert "--dataset append" in one_line_error(run_in_process("convert", src2, ds, check_rc=1))
    assert "already exists" in one_line_error(run_in_process("convert", src2, ds, "--dataset", check_rc=1))
    assert "dataset version 2" in run_in_process("convert", src2, ds, "--dataset", "append").stdout
    d = lance.dataset(str(ds))
    d.validate()
    assert d.version == 2 and d.count_rows() == 1005
    assert d.data_storage_version == "2.0"  # the append kept the dataset's version
    assert d.to_table().equals(pa.concat_tables([pq.read_table(src), pq.read_table(src2)]))
    run_in_process("convert", src2, ds, "--dataset", "overwrite")
    assert lancelot.dataset(str(ds)).to_table().equals(pq.read_table(src2))


def test_convert_profile(tmp_path):
    """--profile reaches the writer (a file and a dataset); compact is smaller than fast; a bad name is refused."""
    lance = pytest.importorskip("lance", reason="pylance (the test oracle) is not installed")
    rng = np.random.default_rng(3)
    src = tmp_path / "in.parquet"
    table = pa.table({"price": pa.array(rng.integers(0, 10**7, 20_000), pa.int64()).cast(pa.decimal128(19, 0))})
    pq.write_table(table, src)
    sizes = {}
    for profile in ("fast", "compact"):
        out = tmp_path / f"{profile}.lance"
        (run if profile == "fast" else run_in_process)("convert", src, out, "--profile", profile)
        sizes[profile] = out.stat().st_size
        assert lance.file.LanceFileReader(str(out)).read_all().to_table().equals(table)
    assert sizes["compact"] < 0.5 * sizes["fast"], sizes
    ds = tmp_path / "ds"
    run_in_process("convert", src, ds, "--dataset", "--profile", "compact")
    files = list((ds / "data").glob("*.lance"))
    assert len(files) == 1 and files[0].stat().st_size < 0.5 * sizes["fast"]
    assert lance.dataset(str(ds)).to_table().equals(table)
    assert (
        "invalid choice" in run_in_process("convert", src, tmp_path / "x.lance", "--profile", "tiny", check_rc=2).stderr
    )
