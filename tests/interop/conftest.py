"""Fixtures the interop tests share (the conformance cases and their tables are in tests/support/)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.support import conformance as C
from tests.support.conformance_matrix import TPCH_SCALE


@pytest.fixture(scope="session")
def tpch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pa.Table]:
    """TPC-H's lineitem and orders at ``TPCH_SCALE``, generated once for the read and the write conformance tests."""
    return C.tpch_tables(tmp_path_factory.mktemp("tpch"), TPCH_SCALE, ["lineitem", "orders"])
