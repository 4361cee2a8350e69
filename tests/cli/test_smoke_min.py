"""Smoke tests (``-m smoke``): the few fast checks `make test` also runs in two venvs holding
exactly the lowest versions pyproject.toml declares (scripts/min_constraints.py) plus pylance
14.0.2: .venv-min (with the spark extra: pyspark 4.1's first release, pandas) and .venv-min-core
(the core dependencies only: no pandas, no pyspark; the Spark test skips there).  They prove the
lower bounds: lancelot writes what pylance reads and reads what pylance writes at 2.0/2.1/2.2,
the core paths work without pandas, and a Spark job writes and reads through "lance".
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

import lancelot

pytestmark = pytest.mark.smoke


def _table(n: int = 2000) -> pa.Table:
    rng = np.random.default_rng(7)
    ints = rng.integers(-1000, 1000, n)
    return pa.table(
        {
            "i": pa.array(ints, pa.int64(), mask=ints % 11 == 0),
            "f": pa.array(rng.random(n), pa.float32()),
            "s": pa.array([None if k % 13 == 0 else f"s{k % 50}" * (k % 4) for k in range(n)]),
            "l": pa.array([None if k % 7 == 0 else list(range(k % 5)) for k in range(n)], pa.list_(pa.int32())),
            "st": pa.array([{"a": k, "b": str(k)} for k in range(n)]),
            "fsl": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4), pa.float32()), 4),
        }
    )


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_lancelot_writes_pylance_reads(tmp_path, version):
    from lance.file import LanceFileReader

    t = _table()
    path = tmp_path / f"ours_{version}.lance"
    lancelot.write_table(t, path, version=version, max_page_bytes=16 * 1024)
    assert LanceFileReader(str(path)).read_all().to_table().equals(t)
    f = lancelot.LanceFile(path)
    assert f.read().equals(t)
    rows = [0, 5, 999, 1998]
    assert f.take(rows).equals(t.take(rows))


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_pylance_writes_lancelot_reads(tmp_path, version):
    from lance.file import LanceFileWriter

    t = _table()
    path = tmp_path / f"theirs_{version}.lance"
    with LanceFileWriter(str(path), t.schema, version=version) as w:
        w.write_batch(t)
    f = lancelot.LanceFile(path)
    assert f.version == version
    assert f.read().equals(t)
    assert f.read_range(100, 400).equals(t.slice(100, 300))


def test_url_write_and_cli_convert(tmp_path):
    import pyarrow.parquet as pq

    t = _table(300)
    lancelot.write_table(t, "memory://smoke/t.lance")
    assert lancelot.read_table("memory://smoke/t.lance").equals(t)
    src = tmp_path / "t.parquet"
    pq.write_table(t, src)
    p = subprocess.run(
        [sys.executable, "-m", "lancelot.cli", "convert", str(src), str(tmp_path / "c.lance")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "300 rows" in p.stdout
    assert lancelot.read_table(tmp_path / "c.lance").equals(t)


_NO_PANDAS = """
import sys

class _NoPandas:
    \"\"\"Makes every import of pandas fail, as in a venv without it.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}")

sys.meta_path.insert(0, _NoPandas())
"""


def test_core_paths_without_pandas(tmp_path):
    """Files, datasets and the CLI with every import of pandas failing (pandas is no core dependency)."""
    code = f"""
{_NO_PANDAS}
import pyarrow as pa
import pyarrow.compute as pc
import lancelot
from lancelot.dataset import dataset, write_dataset
from lancelot.cli import main

d = {str(tmp_path)!r}
n = 3000
t = pa.table({{
    "i": pa.array(range(n), pa.int64()),
    "u": pa.array([k % 200 for k in range(n)], pa.uint8()),
    "f": pa.array([k * 0.5 for k in range(n)], pa.float32()),
    "b": pa.array([k % 3 == 0 for k in range(n)]),
    "s": pa.array([None if k % 11 == 0 else "v" + str(k % 40) for k in range(n)]),
    "l": pa.array([[k, k + 1] for k in range(n)], pa.list_(pa.int16())),
}})
for version in ("2.0", "2.1", "2.2"):
    path = d + "/t" + version.replace(".", "") + ".lance"
    lancelot.write_table(t, path, version=version, max_page_bytes=8192)
    f = lancelot.LanceFile(path)
    assert f.read().equals(t), version
    assert f.take([0, 7, n - 1]).equals(t.take([0, 7, n - 1])), version
ds = write_dataset(t, d + "/ds", max_rows_per_file=1000)
write_dataset(t.slice(0, 10), d + "/ds", mode="append")
ds = dataset(d + "/ds")
assert ds.count_rows() == n + 10
assert ds.to_table(filter=pc.field("i") < 5).num_rows == 10
assert ds.take([0, n]).column("i").to_pylist() == [0, 0]
ds.delete(pc.field("u") == 3)
assert dataset(d + "/ds").count_rows() == n + 10 - 15 - 1
assert main(["inspect", d + "/t22.lance"]) == 0
assert "pandas" not in sys.modules
print("ok")
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout[-2000:] + p.stderr[-4000:]


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark", reason="the core venv (.venv-min-core) has no spark extra")
    from tests.spark.sessions import spark_session  # the suite's one shared session (stopped at exit)

    return spark_session()


def test_spark_write_and_read_through_lance(spark, tmp_path):
    from lance.file import LanceFileReader, LanceFileWriter

    out = str(tmp_path / "spark_out")
    df = spark.sql(
        "select id, cast(id * 2 as int) as twice, concat('r', id) as name, array(id, id + 1) as arr from range(0, 50)"
    ).repartition(2)
    df.write.format("lance").mode("overwrite").save(out)
    back = spark.read.format("lance").load(out)
    assert sorted(tuple(r) for r in back.collect()) == sorted(tuple(r) for r in df.collect())
    files = glob.glob(os.path.join(out, "**", "*.lance"), recursive=True)
    assert files
    ours = pa.concat_tables([lancelot.read_table(p) for p in files])
    theirs = pa.concat_tables([LanceFileReader(p).read_all().to_table() for p in files])
    assert ours.num_rows == theirs.num_rows == 50
    assert sorted(ours.column("id").to_pylist()) == list(range(50))
    assert ours.sort_by("id").equals(theirs.sort_by("id"))

    # a file pylance wrote, read by Spark through "lance"
    inp = tmp_path / "pylance_in"
    inp.mkdir()
    t = pa.table({"k": pa.array(range(20), pa.int64()), "v": [f"x{i}" for i in range(20)]})
    with LanceFileWriter(str(inp / "part.lance"), t.schema) as w:
        w.write_batch(t)
    got = spark.read.format("lance").load(str(inp)).orderBy("k").collect()
    assert [(r.k, r.v) for r in got] == list(zip(range(20), [f"x{i}" for i in range(20)]))


def test_view_types_written_as_plain_types(tmp_path):
    """pyarrow < 18 cannot cast views: the writer's compatibility path keeps the pyarrow 17 floor true."""
    from lance.file import LanceFileReader

    t = pa.table(
        {"s": pa.array(["a", None, "ccc"], pa.string_view()), "b": pa.array([b"x", b"", None], pa.binary_view())}
    )
    for version in ("2.0", "2.2"):
        path = tmp_path / f"v{version}.lance"
        lancelot.write_table(t, path, version=version)
        got = LanceFileReader(str(path)).read_all().to_table()
        assert got.schema == pa.schema([("s", pa.string()), ("b", pa.binary())])
        assert got.to_pylist() == lancelot.read_table(path).to_pylist() == t.to_pylist()
