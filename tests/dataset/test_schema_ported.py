"""The reference's python/python/tests/test_schema.py (lancedb/lance: ``LanceSchema``, a dataset's
schema with field ids), ported: the same code with pylance and with lancelot (``lib``), on a dataset
that library wrote, pylance the oracle."""

from __future__ import annotations

import pickle

import lance
import pyarrow as pa
import pytest
from lance.schema import LanceSchema as TheirSchema

from lancelot.dataset.transaction_api import LanceSchema as OurSchema
from tests.dataset.helpers import LIBS

SCHEMAS = {"pylance": TheirSchema, "lancelot": OurSchema}


@pytest.mark.parametrize("lib", LIBS)
def test_lance_schema(tmp_path, lib) -> None:
    mod, LanceSchema = LIBS[lib], SCHEMAS[lib]
    data = pa.table(
        {"x": range(2), "s": [{"a": 1, "b": "hello"}, {"a": 2, "b": "world"}], "y": [[1.0, 2.0], [3.0, 4.0]]}
    )
    ds = mod.write_dataset(data, tmp_path)
    schema = ds.lance_schema
    assert repr(schema).startswith("Schema {")
    assert pickle.loads(pickle.dumps(schema)) == schema
    assert schema.to_pyarrow() == data.schema
    assert LanceSchema.from_pyarrow(data.schema) == schema
    fields = schema.fields()
    assert [(f.name(), f.id()) for f in fields] == [("x", 0), ("s", 1), ("y", 4)]
    assert [(f.name(), f.id()) for f in fields[1].children()] == [("a", 2), ("b", 3)]
    assert [(f.name(), f.id()) for f in fields[2].children()] == [("item", 5)]
    ds.alter_columns({"path": "s.a", "name": "new_name"})  # a new name keeps the id
    s_fields = ds.lance_schema.fields()[1].children()
    assert (s_fields[0].name(), s_fields[0].id()) == ("new_name", 2)
    theirs = lance.dataset(tmp_path).lance_schema.fields()[1].children()
    assert (theirs[0].name(), theirs[0].id()) == ("new_name", 2)
