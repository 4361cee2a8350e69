"""Nested empty / null shapes, both ways against pylance 14.0.2.

A list under a list, struct or map whose batch holds no inner item (all null, all empty) once made the
2.1/2.2 writer fail with a raw IndexError.  Every case here is written by lancelot (read back by
lancelot and pylance) and by pylance (read back by lancelot and pylance), one batch and several.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.crosscheck import batch_sizes, crosscheck
from tests.support.nested_strategies import nested_tables

pytest.importorskip("lance.file", reason="pylance (the test oracle) is not installed")

I32 = pa.int32()
LL = pa.list_(pa.list_(I32))
LSL = pa.list_(pa.struct([("x", pa.list_(I32))]))
SLL = pa.struct([("m", pa.list_(pa.list_(I32))), ("k", pa.int8())])
LMAP = pa.list_(pa.map_(pa.string(), I32))
MAPL = pa.map_(pa.string(), pa.list_(I32))

# (name, values, type, versions): the shapes of the issue's report and their neighbours
ISSUE_SHAPES = [
    ("list<list> all null", [None] * 3, LL, ("2.1", "2.2")),
    ("list<list> all empty", [[], []], LL, ("2.1", "2.2")),
    ("list<list> empty inner lists", [[[], []], [None], [], None], LL, ("2.1", "2.2")),
    ("list<list> one item after empties", [[[], None], [], [[7]]], LL, ("2.1", "2.2")),
    ("list<struct<list>> no items", [[], None, [None, {"x": None}, {"x": []}]], LSL, ("2.1", "2.2")),
    (
        "struct<list<list>> null struct",
        [None, {"m": [], "k": 1}, {"m": None, "k": None}, {"m": [None, []], "k": 2}],
        SLL,
        ("2.1", "2.2"),
    ),
    ("struct<list<list>> all null", [None, None], SLL, ("2.1", "2.2")),
    ("list<map> no entries", [[], None, [None, []]], LMAP, ("2.2",)),
    ("list<map> one entry", [[], [[("a", 1)]], [None]], LMAP, ("2.2",)),
    ("map<list> empty and null lists", [[("a", None), ("b", [])], None, []], MAPL, ("2.2",)),
]


#: pylance 14.0.2 misreads its own file when a struct above a list has pages whose rep/def layers differ (a
#: page with a null struct beside one without): "Incorrect number of nulls for StructArray".  lancelot reads
#: it; lancelot's writer declares the same layers on every page of such a column, which pylance reads.
PYLANCE_STRUCT_ABOVE_LIST = "Incorrect number of nulls for StructArray"

ISSUE_CELLS = [(s, v) for s in ISSUE_SHAPES for v in s[3]]


@pytest.mark.parametrize("batches", [1, 3], ids=["one-batch", "three-batches"])
@pytest.mark.parametrize("shape,version", ISSUE_CELLS, ids=[f"{s[0]}@{v}" for s, v in ISSUE_CELLS])
def test_issue_shapes_both_ways(tmp_path, shape, version, batches):
    name, values, t, _ = shape
    table = pa.table({"id": pa.array(range(len(values)), pa.int64()), "c": pa.array(values, t)})
    own = None
    if name.startswith("struct<list<list>> null") and batches > 1:
        own = PYLANCE_STRUCT_ABOVE_LIST
    crosscheck(tmp_path, table, version, batch_sizes(table.num_rows, batches)).assert_equal(own)


# ----------------------------------------------------------------------------- property test

PROPERTY = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def _struct_above_list(t: pa.DataType) -> bool:
    """A struct with a list somewhere below it (pylance misreads its own multi-page files of these)."""
    if pa.types.is_struct(t):
        return any(_has_list(t.field(i).type) or _struct_above_list(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        return _struct_above_list(t.value_type if not pa.types.is_map(t) else t.item_type)
    return False


def _has_list(t: pa.DataType) -> bool:
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        return True
    return pa.types.is_struct(t) and any(_has_list(t.field(i).type) for i in range(t.num_fields))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@PROPERTY
@given(data=st.data())
def test_nested_empty_and_null_shapes(tmp_path_factory, version, data):
    """lancelot writes -> lancelot and pylance read equal; pylance writes -> lancelot reads equal."""
    table, sizes = data.draw(nested_tables(version))
    tmp = tmp_path_factory.mktemp("prop")
    result = crosscheck(tmp, table, version, sizes)
    own = result.problems.get("pylance->pylance")
    if own is not None and PYLANCE_STRUCT_ABOVE_LIST in own and _struct_above_list(table.schema.field("c").type):
        result.assert_equal(PYLANCE_STRUCT_ABOVE_LIST)  # pylance misreads its own file; lancelot reads both
    else:
        result.assert_equal()
