"""Struct values in SQL (``named_struct``, ``struct``, ``get_field``, field access on a computed struct) against
pylance: the same expression in ``ds.sql``, a scan's computed column and a filter, on twin datasets; results equal,
schema (types and nullability) included, and the same builtin error class where pylance refuses."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.errors import LanceError

_ST = pa.struct([("x", pa.int64()), ("y", pa.string())])


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    path = tmp_path_factory.mktemp("structs") / "ds"
    table = pa.table(
        {
            "i": pa.array([1, -2, 3, None, 0], pa.int32()),
            "n": pa.array([10, 20, 30, 40, 50], pa.int64()),
            "s": ["a", "b", None, "d", "e"],
            "st": pa.array(
                [{"x": 1, "y": "a"}, {"x": 2, "y": None}, None, {"x": None, "y": "d"}, {"x": 5, "y": "e"}], _ST
            ),
        },
        schema=pa.schema([("i", pa.int32()), pa.field("n", pa.int64(), False), ("s", pa.string()), ("st", _ST)]),
    )
    lance.write_dataset(table, str(path))
    return lancelot.dataset(path), lance.dataset(str(path))


EXPRESSIONS = [
    "named_struct('a', i, 'b', s)",
    "named_struct('a', i, 'b', n)",  # a non-null column: the struct's fields are nullable all the same
    "named_struct('a', i, 'b', s)['a']",
    "named_struct('a', st)['a']['x']",
    "named_struct('a', 1, 'b', 'x')",
    "named_struct('a', 1, 'b', 'x')['b']",
    "struct(i, s)",
    "get_field(st, 'x')",
    "get_field(named_struct('a', i), 'a')",
    "st['y']",
    "st.x + 1",
]


def _sql(ds, expr: str) -> pa.Table:
    return ds.sql(f"SELECT {expr} AS r FROM dataset").build().to_stream_reader().read_all()


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_sql_select(twin, expr: str) -> None:
    ours, theirs = twin
    want = _sql(theirs, expr)
    got = _sql(ours, expr)
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize("expr", [e for e in EXPRESSIONS if "named_struct('a', 1" not in e])
def test_scan_column(twin, expr: str) -> None:
    ours, theirs = twin
    want = theirs.to_table(columns={"r": expr})
    got = ours.to_table(columns={"r": expr})
    assert got.schema.field("r").type == want.schema.field("r").type
    assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize(
    "where", ["named_struct('a', i)['a'] > 0", "get_field(st, 'x') >= 2", "named_struct('a', i) IS NULL"]
)
def test_filter(twin, where: str) -> None:
    ours, theirs = twin
    assert ours.to_table(filter=where).to_pylist() == theirs.to_table(filter=where).to_pylist()
    assert ours.count_rows(filter=where) == theirs.count_rows(filter=where)


@pytest.mark.parametrize("expr", ["named_struct(i, s)", "named_struct('a')", "get_field(st, 'zz')"])
def test_refused(twin, expr: str) -> None:
    ours, theirs = twin
    with pytest.raises(Exception) as want:
        _sql(theirs, expr)
    with pytest.raises(LanceError) as got:
        _sql(ours, expr)
    assert isinstance(got.value, type(want.value))
