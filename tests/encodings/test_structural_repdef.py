"""Unit tests of the 2.1+ structural pieces: level meanings, unravelling rep/def levels into
Arrow structure (the examples of encoding.md), row selection, and column allocation
(checked against the number of columns pylance 14.0.2 writes)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileWriter

from lancelot.encodings.structural import column_count, column_paths
from lancelot.encodings.structural.page import PageLevels, ranges_to_index, select_rows
from lancelot.encodings.structural.repdef import (
    ALL_VALID_ITEM,
    ALL_VALID_LIST,
    EMPTYABLE_LIST,
    NULL_AND_EMPTY_LIST,
    NULLABLE_ITEM,
    NULLABLE_LIST,
    LevelMeaning,
    unravel,
)
from lancelot.errors import CorruptFileError
from lancelot.format.container import read_metadata
from lancelot.io.source import LocalFileSource

U16 = np.uint16


def _unravel(t: pa.DataType, layers, rep, dfn, values: pa.Array) -> pa.Array:
    path = column_paths(pa.field("f", t))[0]
    meaning = LevelMeaning.of(layers)
    n = len(rep) if rep is not None else len(dfn) if dfn is not None else len(values)
    rep = None if rep is None else np.asarray(rep, U16)
    dfn = None if dfn is None else np.asarray(dfn, U16)

    def leaf(valid):
        if valid is None:
            return values
        return pa.array([v if ok else None for v, ok in zip(values.to_pylist(), valid)], values.type)

    return unravel(path, meaning, rep, dfn, n, leaf)


def test_definition_levels_of_the_spec_example():
    """encoding.md: [{"middle": {"inner": 1}}, NULL, {"middle": NULL}, {"middle": {"inner": NULL}}]."""
    t = pa.struct([("middle", pa.struct([("inner", pa.int32())]))])
    got = _unravel(t, [NULLABLE_ITEM] * 3, None, [0, 3, 2, 1], pa.array([1, 0, 0, 0], pa.int32()))
    expected = pa.array([{"middle": {"inner": 1}}, None, {"middle": None}, {"middle": {"inner": None}}], t)
    assert got.equals(expected)


def test_repetition_levels_of_the_spec_example():
    """encoding.md: [{<0,1>, <>, <2>}, {<3>}, {}], [], [{<4>}] as three nested lists."""
    t = pa.list_(pa.list_(pa.list_(pa.int64())))
    rep = [3, 0, 1, 1, 2, 2, 3, 3]
    dfn = [0, 0, 1, 0, 0, 2, 3, 0]  # empty inner, middle and outer lists at 1, 2, 3
    layers = [ALL_VALID_ITEM, EMPTYABLE_LIST, EMPTYABLE_LIST, EMPTYABLE_LIST]
    got = _unravel(t, layers, rep, dfn, pa.array([0, 1, 2, 3, 4], pa.int64()))
    assert got.to_pylist() == [[[[0, 1], [], [2]], [[3]], []], [], [[[4]]]]


def test_null_and_empty_lists_and_null_items():
    t = pa.list_(pa.int32())
    # rows: [1, None], None, [], [3]
    rep = [1, 0, 1, 1, 1]
    dfn = [0, 1, 2, 3, 0]  # item null = 1, list null = 2, list empty = 3
    got = _unravel(t, [NULLABLE_ITEM, NULL_AND_EMPTY_LIST], rep, dfn, pa.array([1, 0, 3], pa.int32()))
    assert got.to_pylist() == [[1, None], None, [], [3]]
    assert got.is_null().to_pylist() == [False, True, False, False]


def test_list_of_struct_with_null_structs_and_items():
    t = pa.list_(pa.struct([("a", pa.int64())]))
    # rows: [{a: 1}, None, {a: None}], None, []
    rep = [1, 0, 0, 1, 1]
    dfn = [0, 2, 1, 3, 4]
    layers = [NULLABLE_ITEM, NULLABLE_ITEM, NULL_AND_EMPTY_LIST]
    got = _unravel(t, layers, rep, dfn, pa.array([1, 0, 0], pa.int64()))
    assert got.to_pylist() == [[{"a": 1}, None, {"a": None}], None, []]


def test_struct_of_list_masked_by_a_null_struct():
    t = pa.struct([("l", pa.list_(pa.int8()))])
    # rows: {l: [5]}, None, {l: None}, {l: []}
    rep = [1, 1, 1, 1]
    dfn = [0, 3, 1, 2]  # list null = 1, list empty = 2, struct null = 3
    layers = [ALL_VALID_ITEM, NULL_AND_EMPTY_LIST, NULLABLE_ITEM]
    got = _unravel(t, layers, rep, dfn, pa.array([5], pa.int8()))
    assert got.to_pylist() == [{"l": [5]}, None, {"l": None}, {"l": []}]
    assert got.field(0).is_null().to_pylist() == [False, True, True, False]  # masked lists read as null


def test_list_of_lists_nullable():
    t = pa.list_(pa.list_(pa.int16()))
    # rows: [[1, 2], None], None, [[]]
    rep = [2, 0, 1, 2, 2]
    dfn = [0, 0, 1, 3, 2]  # inner null = 1, inner empty = 2, outer null = 3, outer empty = 4
    layers = [ALL_VALID_ITEM, NULL_AND_EMPTY_LIST, NULL_AND_EMPTY_LIST]
    got = _unravel(t, layers, rep, dfn, pa.array([1, 2], pa.int16()))
    assert got.to_pylist() == [[[1, 2], None], None, [[]]]


def test_all_valid_lists_need_no_definition_levels():
    t = pa.large_list(pa.float32())
    got = _unravel(
        t, [ALL_VALID_ITEM, ALL_VALID_LIST], [1, 0, 1, 1, 0, 0], None, pa.array([1, 2, 3, 4, 5, 6], pa.float32())
    )
    assert got.type == t
    assert got.to_pylist() == [[1, 2], [3], [4, 5, 6]]


def test_nullable_list_without_empties():
    t = pa.list_(pa.int32())
    got = _unravel(t, [ALL_VALID_ITEM, NULLABLE_LIST], [1, 1, 0], [1, 0, 0], pa.array([7, 8], pa.int32()))
    assert got.to_pylist() == [None, [7, 8]]


def test_emptyable_list_without_nulls():
    t = pa.list_(pa.int32())
    got = _unravel(t, [ALL_VALID_ITEM, EMPTYABLE_LIST], [1, 1, 0], [1, 0, 0], pa.array([7, 8], pa.int32()))
    assert got.to_pylist() == [[], [7, 8]]
    assert got.null_count == 0


def test_fixed_size_list_of_struct_multiplies_levels():
    """2.2 stores fixed_size_list<struct> with every level repeated per item (a NULLABLE_ITEM layer)."""
    t = pa.list_(pa.struct([("a", pa.int32())]), 2)
    # rows: [{a:1}, None], None
    dfn = [0, 2, 3, 3]  # item null = 1, struct null = 2, fsl null = 3
    got = _unravel(t, [NULLABLE_ITEM, NULLABLE_ITEM, NULLABLE_ITEM], None, dfn, pa.array([1, 0, 0, 0], pa.int32()))
    assert got.to_pylist() == [[{"a": 1}, None], None]


def test_levels_beyond_the_layers_are_corrupt():
    t = pa.list_(pa.int32())
    with pytest.raises(CorruptFileError):
        _unravel(t, [ALL_VALID_ITEM, NULLABLE_LIST], [1, 1], [0, 2], pa.array([1], pa.int32()))
    with pytest.raises(CorruptFileError):
        _unravel(t, [ALL_VALID_ITEM, NULLABLE_LIST], [2, 1], [0, 0], pa.array([1, 2], pa.int32()))
    with pytest.raises(CorruptFileError):  # the first level must start a row
        _unravel(t, [ALL_VALID_ITEM, NULLABLE_LIST], [0, 1], [0, 0], pa.array([1, 2], pa.int32()))
    with pytest.raises(CorruptFileError):  # lists need repetition levels
        _unravel(t, [ALL_VALID_ITEM, NULLABLE_LIST], None, [0, 0], pa.array([1, 2], pa.int32()))


def test_level_meaning():
    m = LevelMeaning.of([NULLABLE_ITEM, NULLABLE_ITEM, NULL_AND_EMPTY_LIST, NULLABLE_ITEM])
    assert (m.max_rep, m.max_def, m.max_visible) == (1, 5, 2)
    assert m.null_level(2) == 3 and m.empty_level(2) == 4 and m.null_level(3) == 5
    assert m.rep_level(2) == 1
    with pytest.raises(CorruptFileError):
        LevelMeaning.of([99])


def test_ranges_to_index():
    assert ranges_to_index(np.array([3, 10, 10]), np.array([5, 10, 12])).tolist() == [3, 4, 10, 11]
    assert ranges_to_index(np.array([], np.int64), np.array([], np.int64)).tolist() == []


def test_select_rows_with_invisible_levels():
    # rows: [1, 2], None, [3], [] ; only items are visible
    meaning = LevelMeaning.of([ALL_VALID_ITEM, NULL_AND_EMPTY_LIST])
    rep = np.array([1, 0, 1, 1, 1], U16)
    dfn = np.array([0, 0, 1, 0, 2], U16)
    span = PageLevels(meaning, rep, dfn, 5, pa.array([1, 2, 3]))
    for rows, levels, values in [([1, 2], [1, 0], [3]), ([0, 3], [0, 0, 2], [1, 2]), ([2], [0], [3])]:
        out = select_rows(span, 0, np.array(rows))
        assert out.dfn.tolist() == levels and out.values.to_pylist() == values
    assert select_rows(span, 0, np.arange(4)) is span


# --------------------------------------------------------------- column allocation vs pylance

STRUCT2 = pa.struct([("a", pa.int32()), ("b", pa.string())])
ALLOCATION = [
    ("int", pa.array([1, 2], pa.int32()), None, "2.1", 1),
    ("struct", pa.array([{"a": 1, "b": "x"}], STRUCT2), None, "2.1", 2),
    (
        "packed",
        pa.array([{"a": 1, "b": 2.0}], pa.struct([("a", pa.int32()), ("b", pa.float64())])),
        {"lance-encoding:packed": "true"},
        "2.1",
        1,
    ),
    (
        "packed-false",
        pa.array([{"a": 1, "b": 2.0}], pa.struct([("a", pa.int32()), ("b", pa.float64())])),
        {"lance-encoding:packed": "false"},
        "2.1",
        2,
    ),
    (
        "list<struct<list, string>>",
        pa.array([[{"x": [1], "y": "a"}]], pa.list_(pa.struct([("x", pa.list_(pa.int64())), ("y", pa.string())]))),
        None,
        "2.1",
        2,
    ),
    ("fsl<float>", pa.array([[1.0, 2.0]], pa.list_(pa.float32(), 2)), None, "2.1", 1),
    ("fsl<fsl<int>>", pa.array([[[1, 2], [3, 4]]], pa.list_(pa.list_(pa.int32(), 2), 2)), None, "2.1", 1),
    ("fsl<struct>", pa.array([[{"a": 1, "b": "x"}] * 2], pa.list_(STRUCT2, 2)), None, "2.2", 2),
    ("map", pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())), None, "2.2", 2),
    ("map<string, struct>", pa.array([[("k", {"a": 1, "b": "x"})]], pa.map_(pa.string(), STRUCT2)), None, "2.2", 3),
    ("blob", pa.array([b"abc"], pa.large_binary()), {"lance-encoding:blob": "true"}, "2.1", 1),
    ("dictionary", pa.array(["a", "b"]).dictionary_encode(), None, "2.1", 1),
    ("empty struct", pa.array([{}], pa.struct([])), None, "2.1", 1),
    ("null", pa.array([None], pa.null()), None, "2.1", 1),
]


@pytest.mark.parametrize("name,arr,meta,version,expected", ALLOCATION, ids=[a[0] for a in ALLOCATION])
def test_column_count_matches_pylance(tmp_path, name, arr, meta, version, expected):
    field = pa.field("c", arr.type, metadata=meta)
    path = str(tmp_path / "f.lance")
    w = LanceFileWriter(path, pa.schema([field]), version=version)
    w.write_batch(pa.Table.from_arrays([arr], schema=pa.schema([field])))
    w.close()
    written = len(read_metadata(LocalFileSource(path)).columns)
    assert written == expected
    assert column_count(field) == expected
