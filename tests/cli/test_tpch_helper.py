"""lancelot/testing/tpch.py: the TPC-H helper shared by the conformance tests, benchmarks and demo."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lancelot.testing import tpch


def test_generate_and_plain_schema(tmp_path):
    paths = tpch.generate(tmp_path, 0.001, ["nation", "region"])
    assert set(paths) == {"nation", "region"}
    nation = pq.read_table(paths["nation"])
    assert nation.num_rows == 25
    plain = tpch.plain_schema(nation.schema)
    assert pa.string_view() in nation.schema.types and pa.string_view() not in plain.types
    assert all(f.metadata is None for f in plain) and plain.names == nation.schema.names
    assert nation.cast(plain).column("n_name").type == pa.string()


def test_bad_table_and_missing_generator(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="unknown TPC-H tables"):
        tpch.generate(tmp_path, 0.001, ["lineitems"])
    monkeypatch.setattr(tpch, "tpchgen_cli", lambda: None)
    with pytest.raises(FileNotFoundError, match="pip install tpchgen-cli"):
        tpch.generate(tmp_path, 0.001, ["nation"])
