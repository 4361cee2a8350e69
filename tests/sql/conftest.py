"""Fixtures the SQL tests share (the fuzzer's grammar and table: tests/sql/fuzz_grammar.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lance
import pyarrow as pa
import pytest


@pytest.fixture(scope="session")
def pylance_dataset(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., str]:
    """``make(name, table, **write_kw)``: the URI of a new dataset pylance wrote ``table`` into (its directory named
    after ``name``): the tests' data, read by pylance and lancelot alike."""

    def make(name: str, table: pa.Table, **write_kw: Any) -> str:
        uri = str(tmp_path_factory.mktemp(name) / "ds")
        lance.write_dataset(table, uri, **write_kw)
        return uri

    return make
