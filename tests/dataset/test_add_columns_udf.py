"""add_columns with a function (``lancelot.batch_udf`` / pylance's ``lance.batch_udf``) and its
checkpoint: a backfill that fails or is killed resumes without computing finished fragments again,
from a checkpoint file in pylance's layout (pylance and lancelot resume each other's). The first tests
are the reference's test_schema_evolution.py ones (test_add_columns_udf, _udf_caching,
test_add_cols_batch_size) run by both libraries."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import lance
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from tests.dataset.helpers import LIBS, assert_twins, table, twins


@pytest.mark.parametrize("lib", LIBS)
def test_add_columns_udf(tmp_path, lib) -> None:
    mod = LIBS[lib]
    tab = pa.table({"a": range(100), "b": range(100)})
    lance.write_dataset(tab, tmp_path / "d", max_rows_per_file=25)
    ds = mod.dataset(str(tmp_path / "d"))

    @mod.batch_udf(output_schema=pa.schema([pa.field("double_a", pa.int64())]))
    def double_a(batch):
        assert batch.schema.names == ["a"]
        return pa.record_batch([pa.array([2 * x.as_py() for x in batch["a"]])], ["double_a"])

    ds.add_columns(double_a, read_columns=["a"])
    want = tab.append_column("double_a", pa.array([2 * x for x in range(100)]))
    assert lance.dataset(str(tmp_path / "d")).to_table() == want

    @mod.batch_udf()
    def inconsistent(batch):
        return pa.record_batch([batch["a"]], [f"c{batch['a'][0].as_py()}"])

    with pytest.raises(Exception, match="Output schema of function does not match the expected schema"):
        ds.add_columns(inconsistent, read_columns=["a"])

    @mod.batch_udf()
    def triple_a(batch):  # schema inferred, pandas result
        return pd.DataFrame({"triple_a": [3 * x.as_py() for x in batch["a"]]})

    ds.add_columns(triple_a, read_columns=["a"])
    want = want.append_column("triple_a", pa.array([3 * x for x in range(100)]))
    assert lance.dataset(str(tmp_path / "d")).to_table() == want
    assert lancelot.dataset(str(tmp_path / "d")).to_table() == want


@pytest.mark.parametrize("lib", LIBS)
def test_add_columns_udf_caching(tmp_path, lib) -> None:
    mod = LIBS[lib]
    lance.write_dataset(pa.table({"a": range(100), "b": range(100)}), tmp_path / "d", max_rows_per_file=20)
    ds = mod.dataset(str(tmp_path / "d"))
    cache = tmp_path / "cache.sqlite"

    @mod.batch_udf(checkpoint_file=cache)
    def failing(batch):
        if batch["a"][0].as_py() >= 50:
            raise RuntimeError("I failed")
        return pa.record_batch([pc.multiply(batch["a"], pa.scalar(2))], ["a_times_2"])

    with pytest.raises(Exception, match="I failed"):
        ds.add_columns(failing, read_columns=["a"])
    assert ds.version == 1 and "cache.sqlite" in os.listdir(tmp_path)

    seen = []

    @mod.batch_udf(checkpoint_file=cache)
    def resumed(batch):
        seen.append(batch["a"][0].as_py())
        return pa.record_batch([pc.multiply(batch["a"], pa.scalar(2))], ["a_times_2"])

    ds.add_columns(resumed, read_columns=["a"])
    assert all(a == 0 or a >= 50 for a in seen)  # (0: the call that infers the schema)
    assert ds.schema.names == ["a", "b", "a_times_2"]
    assert "cache.sqlite" not in os.listdir(tmp_path)
    assert lance.dataset(str(tmp_path / "d")).to_table()["a_times_2"].to_pylist() == [2 * i for i in range(100)]
    lance.dataset(str(tmp_path / "d")).validate()


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("batch_size", [1, 10, 100])
def test_add_cols_batch_size(tmp_path, lib, batch_size) -> None:
    mod = LIBS[lib]
    lance.write_dataset(pa.table({"a": range(300)}), tmp_path / "d", max_rows_per_file=100)
    ds = mod.dataset(str(tmp_path / "d"))

    def mutate(batch):
        assert batch.num_rows <= batch_size
        return pa.RecordBatch.from_pydict({"b": batch.column("a")})

    ds.add_columns(mutate, batch_size=batch_size)
    got = lance.dataset(str(tmp_path / "d"))
    got.validate()
    assert got.to_table() == pa.table({"a": range(300), "b": range(300)})


_KILLED = """
import os, sys
import pyarrow as pa, pyarrow.compute as pc
import {mod} as lib
ds = lib.dataset(sys.argv[1])
@lib.batch_udf(output_schema=pa.schema([pa.field("y", pa.float64())]), checkpoint_file=sys.argv[2])
def f(batch):
    with open(sys.argv[3], "a") as log:
        log.write(f"{{batch['id'][0].as_py()}}\\n")
    if batch["id"][0].as_py() >= 25:
        os._exit(9)  # killed mid-backfill: no cleanup, no exception handling
    return pa.record_batch([pc.multiply(batch["x"], 2.0)], ["y"])
ds.add_columns(f, read_columns=["id", "x"], batch_size=5)
"""


@pytest.mark.parametrize(("first", "then"), [("lancelot", "lancelot"), ("lance", "lancelot")])
def test_killed_backfill_resumes(tmp_path, first, then) -> None:
    """A process killed in the middle of add_columns; the next run (of either library) with the same
    checkpoint computes only what the first did not finish, and the result equals pylance's own."""
    theirs, ours = twins(tmp_path, table(40), rows_per_file=10)
    ds = lance.dataset(ours)
    ds.delete("id = 12")  # a deletion file in a finished fragment
    lance.dataset(theirs).delete("id = 12")
    cache, log = str(tmp_path / "ckpt.sqlite"), str(tmp_path / "calls.txt")
    script = tmp_path / "killed.py"
    script.write_text(textwrap.dedent(_KILLED.format(mod=first)))
    root = os.path.dirname(os.path.dirname(lancelot.__file__))  # this checkout's lancelot, in the child too
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, str(script), ours, cache, log], env=env, timeout=120)
    assert r.returncode == 9
    assert lance.dataset(ours).version == 2 and os.path.exists(cache)
    first_calls = [int(x) for x in open(log).read().split()]
    assert 25 in first_calls

    calls = []

    @(lance if then == "lance" else lancelot).batch_udf(
        output_schema=pa.schema([pa.field("y", pa.float64())]), checkpoint_file=cache
    )
    def f(batch):
        calls.append(batch["id"][0].as_py())
        return pa.record_batch([pc.multiply(batch["x"], 2.0)], ["y"])

    (lance if then == "lance" else lancelot).dataset(ours).add_columns(f, read_columns=["id", "x"], batch_size=5)
    assert min(calls) >= 20  # fragments 0 and 1 (ids 0-19) were finished: not computed again
    assert not os.path.exists(cache)
    lance.dataset(theirs).add_columns({"y": "x * 2.0"})
    assert_twins(theirs, ours)


def test_failed_backfill_resumed_by_pylance(tmp_path) -> None:
    """lancelot's checkpoint (pylance's layout) read by pylance: a backfill lancelot did not finish
    is finished by pylance without computing lancelot's fragments again."""
    theirs, ours = twins(tmp_path, table(40), rows_per_file=10)
    cache = str(tmp_path / "ckpt.sqlite")
    schema = pa.schema([pa.field("y", pa.float64())])

    @lancelot.batch_udf(output_schema=schema, checkpoint_file=cache)
    def failing(batch):
        if batch["id"][0].as_py() >= 25:
            raise RuntimeError("stop")
        return pa.record_batch([pc.multiply(batch["x"], 2.0)], ["y"])

    with pytest.raises(RuntimeError, match="stop"):
        lancelot.dataset(ours).add_columns(failing, read_columns=["id", "x"], batch_size=5)
    calls = []

    @lance.batch_udf(output_schema=schema, checkpoint_file=cache)
    def resumed(batch):
        calls.append(batch["id"][0].as_py())
        return pa.record_batch([pc.multiply(batch["x"], 2.0)], ["y"])

    lance.dataset(ours).add_columns(resumed, read_columns=["id", "x"], batch_size=5)
    assert min(calls) >= 25  # fragments 0, 1 and the first batch of fragment 2 came from the checkpoint
    lance.dataset(theirs).add_columns({"y": "x * 2.0"})
    assert_twins(theirs, ours)
