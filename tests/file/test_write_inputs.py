"""What write_table and write_dataset accept (lancelot/inputs.py, one function for both): pandas
DataFrames recognised by pandas' own class (pandas 3's DataFrame lives in module "pandas", not
"pandas.core.frame"), the Arrow PyCapsule stream and dataframe interchange protocols, a dataset;
each checked against what pylance writes and reads for the same input."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import lance
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset import dataset, write_dataset
from lancelot.inputs import as_batches, is_pandas_dataframe
from tests.helpers import pylance_read

T = pa.table(
    {
        "i": pa.array(np.arange(300), pa.int64()),
        "f": pa.array(np.linspace(0, 1, 300), pa.float64()),
        "s": [None if k % 7 == 0 else f"s{k}" for k in range(300)],
    }
)
DF = T.to_pandas()

# pandas 3 defines DataFrame in module "pandas": the old test (module starts with "pandas.") missed it
Pandas3StyleFrame = type("DataFrame", (pd.DataFrame,), {"__module__": "pandas"})


class StreamOnly:
    """Exports only the Arrow PyCapsule stream protocol (as polars, DuckDB or nanoarrow objects do)."""

    def __init__(self, table: pa.Table) -> None:
        self._t = table

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self._t.__arrow_c_stream__(requested_schema)


class StreamAndIterable(StreamOnly):
    """Iterable over something other than batches (a polars DataFrame iterates its columns):
    the stream protocol wins."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._t.column_names)


class InterchangeOnly:
    """Exports only the dataframe interchange protocol (``__dataframe__``)."""

    def __init__(self, table: pa.Table) -> None:
        self._t = table

    def __dataframe__(self, nan_as_null: bool = False, allow_copy: bool = True) -> object:
        return self._t.__dataframe__(nan_as_null, allow_copy)


def _pylance_roundtrip(data: object, path: Path) -> pa.Table:
    return lance.write_dataset(data, str(path)).to_table()


@pytest.mark.parametrize("make", [lambda: DF, lambda: Pandas3StyleFrame(DF)], ids=["pandas", "pandas3_module_name"])
def test_pandas_dataframe_write_table_and_dataset(tmp_path, make):
    df = make()
    assert is_pandas_dataframe(df)
    expected = _pylance_roundtrip(df, tmp_path / "theirs")
    assert expected.select(["i", "f", "s"]).equals(T)

    lancelot.write_table(df, tmp_path / "f.lance")
    got = lancelot.read_table(tmp_path / "f.lance")
    assert got.equals(expected)
    assert lance.file.LanceFileReader(str(tmp_path / "f.lance")).read_all().to_table().equals(expected)

    write_dataset(df, tmp_path / "ours")
    assert dataset(tmp_path / "ours").to_table().equals(expected)
    assert lance.dataset(str(tmp_path / "ours")).to_table().equals(expected)


def test_pandas_index_and_schema_as_pylance(tmp_path):
    """A non-range index becomes a column and ``schema=`` drives the conversion, as in pylance."""
    df = DF.set_index(pd.Index([f"r{k}" for k in range(300)], name="key"))
    schema = pa.schema([("i", pa.int32()), ("key", pa.string())])
    expected = _pylance_roundtrip(df, tmp_path / "theirs")
    assert "key" in expected.column_names
    write_dataset(df, tmp_path / "ours")
    assert dataset(tmp_path / "ours").to_table().equals(expected)

    expected = lance.write_dataset(df, str(tmp_path / "theirs_s"), schema=schema).to_table()
    assert expected.schema.names == ["i", "key"] and expected.schema.field("i").type == pa.int32()
    write_dataset(df, tmp_path / "ours_s", schema=schema)
    assert dataset(tmp_path / "ours_s").to_table().equals(expected)
    lancelot.write_table(df, tmp_path / "s.lance", schema=schema)
    assert lancelot.read_table(tmp_path / "s.lance").equals(expected)


@pytest.mark.parametrize("wrap", [StreamOnly, StreamAndIterable, InterchangeOnly])
def test_protocol_objects(tmp_path, wrap):
    schema, batches = as_batches(wrap(T))
    assert schema == T.schema
    assert pa.Table.from_batches(list(batches), schema).equals(T)

    lancelot.write_table(wrap(T), tmp_path / "p.lance")
    assert lancelot.read_table(tmp_path / "p.lance").equals(T)
    write_dataset(wrap(T), tmp_path / "ours")
    got = dataset(tmp_path / "ours").to_table()
    assert got.equals(T)
    with pytest.raises((TypeError, ValueError)):  # pylance 14's write_dataset takes neither protocol
        lance.write_dataset(wrap(T), str(tmp_path / "theirs"))
    assert lance.dataset(str(tmp_path / "ours")).to_table().equals(T)


def test_dataset_as_input(tmp_path):
    src = write_dataset(T, tmp_path / "src", max_rows_per_file=100)
    write_dataset(src, tmp_path / "copy")
    assert dataset(tmp_path / "copy").to_table().equals(T)
    lancelot.write_table(src, tmp_path / "copy.lance")
    assert lancelot.read_table(tmp_path / "copy.lance").equals(T)


# (not a dict: pylance and lancelot take a dict of columns)
@pytest.mark.parametrize("bad, name", [(None, "NoneType"), ("x.parquet", "str"), (3, "int")])
def test_write_dataset_refuses_with_type_error(tmp_path, bad, name):
    with pytest.raises(TypeError, match=f"write_dataset expects a pyarrow Table.*got {name}"):
        write_dataset(bad, tmp_path / "ds")
    with pytest.raises(TypeError, match="write_dataset expects an iterable of pyarrow RecordBatches.*item 1 is int"):
        write_dataset([T.to_batches()[0], 5], tmp_path / "ds2")
    assert not (tmp_path / "ds" / "_versions").exists()


def _pandas3_dir() -> Path:
    return Path(os.environ.get("LANCELOT_PANDAS3_PATH") or Path(sys.prefix) / "pandas3")


@pytest.mark.skipif(not (_pandas3_dir() / "pandas").is_dir(), reason="no pandas 3 beside the venv (make installs it)")
def test_real_pandas3_dataframe(tmp_path):
    """A real pandas 3 DataFrame (installed by ``make`` into <venv>/pandas3), in a subprocess."""
    code = f"""
        import pandas as pd, pyarrow as pa, lance, lancelot
        from lancelot.dataset import dataset, write_dataset
        assert pd.__version__.startswith("3."), pd.__version__
        df = pd.DataFrame({{"i": range(100), "s": [f"v{{k}}" for k in range(100)]}})
        d = {str(tmp_path)!r}
        expected = lance.write_dataset(df, d + "/theirs").to_table()
        lancelot.write_table(df, d + "/t.lance")
        assert lancelot.read_table(d + "/t.lance").equals(expected)
        write_dataset(df, d + "/ours")
        assert dataset(d + "/ours").to_table().equals(expected)
        assert lance.dataset(d + "/ours").to_table().equals(expected)
        print("ok", pd.__version__)
    """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(_pandas3_dir()), os.getcwd()]))
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=180, env=env
    )
    assert p.returncode == 0 and p.stdout.startswith("ok 3."), p.stderr


def test_schemas_equal_but_for_metadata_written_apart(tmp_path):
    """Normalized schemas are cached per schema: schemas pyarrow calls equal (metadata aside) keep each its
    own field and schema metadata in the files pylance reads."""
    t = pa.table({"a": [1, 2, 3]})
    metas = [{"k": "one"}, {"k": "two"}, None]
    for i, md in enumerate(metas):
        schema = pa.schema([pa.field("a", pa.int64(), metadata=md)], metadata={"m": str(i)})
        lancelot.write_table(t.cast(schema), tmp_path / f"{i}.lance")
    for i, md in enumerate(metas):
        got = pylance_read(tmp_path / f"{i}.lance").schema
        assert got.field("a").metadata == ({b"k": md["k"].encode()} if md else None)
        assert got.metadata == {b"m": str(i).encode()}
