"""Property tests: random schemas and data round-trip through lancelot and pylance."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelot
from tests.support.data import tables_equal
from tests.support.strategies import tables

lance_file = pytest.importorskip("lance.file", reason="pylance (the test oracle) is not installed")

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(table=tables(null_structs=False), page=st.sampled_from([None, 200, 4096]), data=st.data())
def test_roundtrip_2_0(tmp_path_factory, table, page, data):
    path = tmp_path_factory.mktemp("h") / "t.lance"
    lancelot.write_table(table, path, version="2.0", max_page_bytes=page)
    theirs = lance_file.LanceFileReader(str(path)).read_all().to_table()
    assert tables_equal(theirs, table)
    f = lancelot.LanceFile(path)
    assert tables_equal(f.read(), table)
    if table.num_rows:
        idx = data.draw(st.lists(st.integers(0, table.num_rows - 1), max_size=20))
        assert tables_equal(f.take(np.array(idx, dtype=np.int64)), table.take(pa.array(idx, pa.int64())))
        s = data.draw(st.integers(0, table.num_rows))
        e = data.draw(st.integers(s, table.num_rows))
        assert tables_equal(f.read_range(s, e), table.slice(s, e - s))


@SETTINGS
@given(table=tables(null_structs=False), page=st.sampled_from([None, 300]))
def test_pylance_2_0_files_read_equal(tmp_path_factory, table, page):
    path = tmp_path_factory.mktemp("h") / "p.lance"
    kw = {"max_page_bytes": page} if page else {}
    with lance_file.LanceFileWriter(str(path), table.schema, version="2.0", **kw) as w:
        w.write_batch(table)
    assert tables_equal(lancelot.read_table(path), table)
