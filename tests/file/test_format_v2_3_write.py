"""Writing 2.3 ("next") files: PlanarLayout pages (lancelot/encodings/planar/write_*.py, docs/format-2.3.md).

Every case of the read matrix (test_format_v2_3.CASES) is written by lancelot at 2.3 and read back by
pylance 14.0.2 (``LanceFileReader`` and ``lance.dataset``) and by lancelot; where pylance's own bytes
for the same data are deterministic, lancelot's page messages (and buffers) are pylance's.
"""

from __future__ import annotations

import struct
import warnings

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelot
from lancelot.encodings.planar import PLANAR_TYPE_URL, read_page_layout
from lancelot.encodings.structural.paths import column_paths
from lancelot.errors import UnsupportedTypeError
from lancelot.format.container import read_metadata
from lancelot.io.source import open_source
from lancelot.versions import FileVersion, UnstableVersionWarning
from tests.file.test_format_v2_3 import CASES, N
from tests.helpers import pylance_read, pylance_write

lance = pytest.importorskip("lance")

pytestmark = pytest.mark.filterwarnings("ignore::lancelot.versions.UnstableVersionWarning")

#: cases whose page messages and buffers are byte for byte pylance's
SAME_BYTES = [
    "int_plain",
    "i64_wide",
    "const",
    "all_null",
    "bools",
    "f64",
    "list",
    "list_nulls",
    "all_null_list",
    "fsl",
    "fsl_nulls",
    "dict_str",
    "dict_i64",
    "str",
    "str_nulls",
    "str_empty",
    "large_str",
    "bin",
    "str_list",
    "sparse_valid",
    "sparse_null",
    "sparse_f64",
    "sparse_bool",
    "sparse_random",
    "sparse_struct",
    "const_struct",
    "sparse_lists",
    "sparse_null_lists",
    "sparse_null_items",
    "sparse_list_of_lists",
    "sparse_list_in_struct",
    "sparse_structs_in_list",
    "sparse_bool_lists",
    "empty_lists",
    "sparse_long_str",
    "list_of_lists",
    "list_of_structs",
    "large_list",
    "str_list_nulls",
    "dictionary",
    "fsb",
    "decimal",
    "date",
    "f16",
    "bool_nulls",
]
#: cases whose page messages are pylance's (the bytes differ: the values left in null slots)
SAME_MESSAGES = ["int_nulls", "int_rare", "struct"]


def _table() -> pa.Table:
    return pa.table({name: values for name, (values, _) in CASES.items()})


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """(lancelot's 2.3 file, pylance's 2.3 file) of every case."""
    d = tmp_path_factory.mktemp("v23w")
    table = _table()
    ours = str(d / "ours.lance")
    lancelot.write_table(table, ours, version="2.3")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = pylance_write(d / "theirs.lance", table, "2.3")
    return ours, theirs


def _pages(path):
    """Per column: (the page's Any bytes, its buffers) of each page."""
    src = open_source(path)
    try:
        meta = read_metadata(src)
        return meta.version, [
            [
                (p.encoding.direct.encoding, [bytes(src.read(o, n)) for o, n in zip(p.buffer_offsets, p.buffer_sizes)])
                for p in col.pages
            ]
            for col in meta.columns
        ]
    finally:
        src.close()


def _columns_of(name):
    first = 0
    for n, (values, _) in CASES.items():
        k = len(column_paths(pa.field(n, values.type)))
        if n == name:
            return range(first, first + k)
        first += k
    raise KeyError(name)


def test_pylance_reads_every_case(files):
    ours, _ = files
    got = pylance_read(ours)
    for name, (values, _) in CASES.items():
        assert got.column(name).combine_chunks().equals(values), name


def test_lancelot_round_trip(files):
    ours, _ = files
    with lancelot.LanceFile(ours) as f:
        assert f.metadata.version == "2.3"
        got = f.read()
        rows = [0, 1, 3, 500, 1024, 1999]
        assert f.take(rows).equals(_table().take(rows))
    for name, (values, _) in CASES.items():
        assert got.column(name).combine_chunks().equals(values), name


def test_footer_and_pages_are_2_3_planar(files):
    ours, _ = files
    with open(ours, "rb") as fh:
        fh.seek(-8, 2)
        assert struct.unpack("<HH4s", fh.read()) == (2, 3, b"LANC")
    version, columns = _pages(ours)
    assert version is FileVersion.V2_3
    for col in columns:
        for raw, _ in col:
            assert PLANAR_TYPE_URL.encode() in raw


@pytest.fixture(scope="module")
def pages_of_files(files):
    """(lancelot's, pylance's) pages of every column (``_pages``), read once."""
    ours, theirs = files
    return _pages(ours)[1], _pages(theirs)[1]


@pytest.mark.parametrize("name", SAME_BYTES + SAME_MESSAGES)
def test_page_messages_are_pylances(pages_of_files, name):
    a, b = pages_of_files
    for c in _columns_of(name):
        assert [m for m, _ in a[c]] == [m for m, _ in b[c]], name
        if name in SAME_BYTES:
            assert [bufs for _, bufs in a[c]] == [bufs for _, bufs in b[c]], name


def test_sparse_and_dense_planes_as_read(files):
    """What the reader makes of lancelot's pages is what it makes of pylance's, for every case."""
    ours, theirs = files

    def kinds(path):
        src = open_source(path)
        try:
            return [
                {type(read_page_layout(src, p.encoding)).__name__ for p in col.pages}
                for col in read_metadata(src).columns
            ]
        finally:
            src.close()

    assert kinds(ours) == kinds(theirs)


def test_next_is_2_3_and_warns_as_pylance(tmp_path):
    t = pa.table({"a": pa.array(range(10))})
    with pytest.warns(UnstableVersionWarning, match="unstable format version"):
        with lancelot.LanceWriter(tmp_path / "n.lance", t.schema, version="next") as w:
            w.write(t)
    with lancelot.LanceFile(tmp_path / "n.lance") as f:
        assert f.metadata.version == "2.3"
    assert pylance_read(tmp_path / "n.lance").equals(t)


def test_multi_page_columns(tmp_path):
    rng = np.random.default_rng(5)
    t = pa.table(
        {
            "i": pa.array(rng.integers(0, 1 << 40, 20_000)),
            "s": pa.array([None if i % 7 == 0 else 3 for i in range(20_000)], pa.int32()),
        }
    )
    path = tmp_path / "pages.lance"
    with lancelot.LanceWriter(path, t.schema, version="2.3", max_page_bytes=32 * 1024) as w:
        for b in t.to_batches(max_chunksize=3000):
            w.write(b)
    src = open_source(str(path))
    try:
        assert all(len(c.pages) > 1 for c in read_metadata(src).columns)
    finally:
        src.close()
    assert pylance_read(path).equals(t)
    with lancelot.LanceFile(path) as f:
        assert f.read().equals(t)


def test_blob_columns_are_refused_as_pylance_refuses_them(tmp_path):
    blob = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    t = pa.table([pa.array([b"x" * 10] * 4, pa.large_binary())], schema=pa.schema([blob]))
    with pytest.raises(UnsupportedTypeError, match="2.3"):
        lancelot.write_table(t, tmp_path / "b.lance", version="2.3")
    assert not (tmp_path / "b.lance").exists()


def test_dataset_at_2_3_pylance_opens_appends_reads(tmp_path):
    uri = str(tmp_path / "ds")
    names = ["int_nulls", "str", "list_nulls", "sparse_valid", "struct", "long_str"]
    t = pa.table({"id": pa.array(range(N), pa.int64()), **{n: CASES[n][0] for n in names}})
    lancelot.write_dataset(t.slice(0, 1000), uri, data_storage_version="2.3")
    ds = lance.dataset(uri)
    assert ds.data_storage_version == "2.3"
    assert ds.to_table().equals(t.slice(0, 1000))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lance.write_dataset(t.slice(1000, 500), uri, mode="append")
    lancelot.write_dataset(t.slice(1500), uri, mode="append", data_storage_version="next")
    ours = lancelot.dataset(uri)
    assert ours.data_storage_version == "2.3"
    assert ours.to_table().sort_by("id").equals(t)
    assert lance.dataset(uri).to_table().sort_by("id").equals(t)
    assert lance.dataset(uri).take([5, 1200, 1999]).equals(t.take([5, 1200, 1999]))


#: more types and null patterns than the read matrix holds (pylance reads lancelot's 2.3 of each)
MORE = {
    "ts": pa.array(np.arange(N).astype("datetime64[us]")),
    "u64": pa.array(np.random.default_rng(1).integers(0, 1 << 63, N).astype(np.uint64)),
    "i8_nulls": pa.array([None if i % 3 else i % 100 for i in range(N)], pa.int8()),
    "bool_all_null": pa.nulls(N, pa.bool_()),
    "bool_const": pa.array([False] * N),
    "null_type": pa.nulls(N),
    "fsl_str_null": pa.nulls(N, pa.list_(pa.string(), 2)),
    "struct_all_null": pa.array([None] * N, pa.struct([("x", pa.int32()), ("y", pa.string())])),
    "struct_null_child": pa.array([{"x": None, "y": "a"}] * N, pa.struct([("x", pa.int32()), ("y", pa.string())])),
    "large_bin": pa.array([b"ab" * (i % 7) for i in range(N)], pa.large_binary()),
    "dict_nulls": pa.array([None if i % 4 == 0 else ["a", "b"][i % 2] for i in range(N)]).dictionary_encode(),
    "const_str_nulls": pa.array([None if i % 3 == 0 else "abc" for i in range(N)]),
    "const_fsl_nulls": pa.array([None if i % 2 else [1, 2] for i in range(N)], pa.list_(pa.int32(), 2)),
    "const_decimal_nulls": pa.array([None if i % 2 else 1 for i in range(N)], pa.decimal128(10, 2)),
    "single_valid": pa.array([5 if i == 1777 else None for i in range(N)], pa.int32()),
    "first_valid": pa.array([5 if i == 0 else None for i in range(N)], pa.int64()),
    "single_list": pa.array([[1] if i == 7 else [] for i in range(N)], pa.list_(pa.int32())),
    "map_nulls": pa.array([None if i % 3 == 0 else [("k", i)] for i in range(N)], pa.map_(pa.string(), pa.int64())),
    "list_struct_nulls": pa.array(
        [None if i % 3 == 0 else [{"a": None if i % 2 else i}, None] for i in range(N)],
        pa.list_(pa.struct([("a", pa.int64())])),
    ),
    "nested_list_nulls": pa.array(
        [None if i % 5 == 0 else [None, [], [i]] for i in range(N)], pa.list_(pa.list_(pa.int16()))
    ),
    "long_bin_nulls": pa.array([None if i % 3 else b"z" * 400 for i in range(N)], pa.binary()),
    "vector": pa.array(np.random.default_rng(2).random((N, 8)).astype(np.float32).tolist(), pa.list_(pa.float32(), 8)),
    "dec256": pa.array(range(N), pa.decimal256(40, 2)),
    "big_strings": pa.array(["w" * (i % 700) for i in range(N)]),
    # wide values on fewer than half the rows: a sparse structure over a zipped plane of the valid ones
    "sparse_vector": pa.array(
        [np.arange(100, dtype=np.float32) + i if i % 10 == 0 else None for i in range(N)], pa.list_(pa.float32(), 100)
    ),
    "sparse_long_struct": pa.array(
        [{"s": ("x" * 500 + str(i)) if i % 3 else None} if i % 10 == 0 else None for i in range(N)],
        pa.struct([("s", pa.string())]),
    ),
    "sparse_long_random": pa.array([("x" * 300 + str(i)) if (i * 7919 % 100) < 45 else None for i in range(N)]),
    # every value empty: Constant offsets (pylance refuses bit-packing at width 0)
    "empty_strings": pa.array(["" if i % 3 else None for i in range(N)], pa.large_string()),
    "empty_string_lists": pa.array([[None, ""] if i % 4 else [] for i in range(N)], pa.list_(pa.string())),
}
#: of MORE, the cases whose page messages are pylance's
MORE_SAME_MESSAGES = [
    "single_valid",
    "first_valid",
    "single_list",
    "bool_all_null",
    "struct_all_null",
    "null_type",
    "sparse_vector",
]


@pytest.fixture(scope="module")
def more_file(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("v23more") / "more.lance")
    lancelot.write_table(pa.table(MORE), path, version="2.3")
    return path


def test_more_types_both_ways(more_file):
    theirs = pylance_read(more_file)
    with lancelot.LanceFile(more_file) as f:
        ours = f.read()
    for name, values in MORE.items():
        assert theirs.column(name).combine_chunks().equals(values), name
        assert ours.column(name).combine_chunks().equals(values), name


@pytest.mark.parametrize("name", MORE_SAME_MESSAGES)
def test_more_page_messages_are_pylances(tmp_path, name):
    t = pa.table({name: MORE[name]})
    ours = str(tmp_path / "ours.lance")
    lancelot.write_table(t, ours, version="2.3")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = pylance_write(tmp_path / "theirs.lance", t, "2.3")
    assert _pages(ours)[1] == _pages(theirs)[1]


def _wide_strings() -> pa.Table:
    """Wide strings (full-zip widths): few distinct, half distinct, distinct on half the rows, few on a
    tenth of the rows; an Arrow dictionary on a third of the rows."""
    rng = np.random.default_rng(11)
    pool = ["".join(chr(c) for c in rng.integers(65, 91, 400)) for _ in range(700)]
    return pa.table(
        {
            "few": pa.array([["a" * 300, "b" * 400, "c" * 500][i % 3] for i in range(N)]),
            "half_distinct": pa.array(["z" * (300 + i % 1000) for i in range(N)]),
            "distinct_half_null": pa.array([None if i % 2 else pool[i % 700] + str(i) for i in range(N)]),
            # few distinct on fewer than half the rows (2.3: a sparse structure over chunked dictionary indices)
            "few_sparse": pa.array([["a" * 300, "b" * 400][i % 2] if i % 10 == 3 else None for i in range(N)]),
            "dict_sparse": pa.array([["x", "yy"][i % 2] if i % 3 == 0 else None for i in range(N)]).dictionary_encode(),
        }
    )


@pytest.mark.parametrize("version", ["2.2", "2.3"])
def test_wide_strings_dictionary_as_pylance(tmp_path, version):
    """pylance weighs a page dictionary before the widths: few distinct wide strings are a mini-block page
    of dictionary indices (pages as pylance's), many are full-zip."""
    t = _wide_strings()
    ours = str(tmp_path / "ours.lance")
    lancelot.write_table(t, ours, version=version)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = pylance_write(tmp_path / "theirs.lance", t, version)
    assert [_choice(ours, c) for c in range(5)] == [_choice(theirs, c) for c in range(5)]
    assert [_choice(ours, c)[1] for c in range(3)] == [True, True, False]  # (a page dictionary)
    if version == "2.3":
        assert [_choice(ours, c) for c in (3, 4)] == [("sparse+chunked", True)] * 2
    assert pylance_read(ours).equals(t)
    with lancelot.LanceFile(ours) as f:
        assert f.read().equals(t)


def _choice(path, column):
    """(layout, has a page dictionary) of a column's first page: the 2.2 layout's name, or the 2.3
    structure and value planes ("dense+chunked", "sparse+zipped"...)."""
    from google.protobuf import any_pb2

    from lancelot.format.pb import encodings_v2_1_pb2 as pb21
    from lancelot.util import wire

    raw = _pages(path)[1][column][0][0]
    a = any_pb2.Any()
    a.ParseFromString(raw)
    if a.type_url != PLANAR_TYPE_URL:
        layout = pb21.PageLayout.FromString(a.value)
        kind = layout.WhichOneof("layout")
        return kind, kind == "mini_block_layout" and layout.mini_block_layout.HasField("dictionary")
    f = wire.fields(a.value)
    structure, values = wire.fields(f[1][0]), wire.fields(f[2][0])
    plane = next(iter(values))
    chunked_dict = plane == 1 and 3 in wire.fields(values[1][0])
    return ("dense" if 1 in structure else "sparse") + "+" + {1: "chunked", 2: "zipped", 3: "constant", 4: "none"}[
        plane
    ], chunked_dict


_PACKED = pa.struct([("a", pa.int32()), ("b", pa.float64())])
_PACKED_VAR = pa.struct([("a", pa.int32()), ("s", pa.string())])


@pytest.mark.parametrize(
    "values",
    [
        pa.array([None if i % 3 == 0 else {"a": i, "b": i * 0.5} for i in range(N)], _PACKED),
        pa.array([{"a": 1, "b": 2.0}] * N, _PACKED),
        pa.array([None if i % 4 == 0 else {"a": i, "s": f"x{i}"} for i in range(N)], _PACKED_VAR),
        pa.array([None] * N, _PACKED),
    ],
    ids=["fixed", "constant", "variable", "all_null"],
)
def test_packed_structs_are_pylances(tmp_path, values):
    schema = pa.schema([pa.field("p", values.type, metadata={"packed": "true"})])
    t = pa.Table.from_arrays([values], schema=schema)
    ours = str(tmp_path / "ours.lance")
    lancelot.write_table(t, ours, version="2.3")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = pylance_write(tmp_path / "theirs.lance", t, "2.3")
    assert _pages(ours)[1] == _pages(theirs)[1]
    assert pylance_read(ours).column("p").combine_chunks().equals(values)
    with lancelot.LanceFile(ours) as f:
        assert f.read().column("p").combine_chunks().equals(values)


# ----------------------------------------------------------------------------- the conformance matrix at 2.3


def _matrix_groups():
    """The 2.1/2.2 conformance matrix's shapes and nestings (nulls "some") and field-metadata settings, in
    groups of one row count: each group one table, a column per case (named by it, its field metadata
    kept), so that a file and its checks serve many cases.  Cases holding a fixed-size list of structs
    form groups of their own (pylance reads those columns only apart from the others)."""
    from tests.interop.test_conformance_write import _has_fsl_struct
    from tests.support import conformance_matrix as M

    groups: dict[str, list] = {}
    for case in M.SHAPES + M.NESTED + M.SETTINGS:
        if "blob" in case.name or "some" not in case.nulls:  # (pylance writes no Blob v1 pages at 2.3)
            continue
        fsl_struct = _has_fsl_struct(case.make(np.random.default_rng(0), 4, "some").type)
        key = f"rows{case.rows}" + ("-fsl_struct" if fsl_struct else "")
        groups.setdefault(key, []).append(case)
    return [pytest.param(cases, id=key) for key, cases in groups.items()]


def _both_ways(tmp_path, table, seed, max_page_bytes):
    """lancelot writes ``table`` at 2.3 in odd batches and several pages: pylance reads it (whole, ranges,
    takes, projections), lancelot reads it (whole, ranges across pages, a take); pylance writes it:
    lancelot reads it every way check_reads knows (ranges, takes, projections, batches)."""
    from tests.interop.test_conformance_write import check_pylance, write_ours
    from tests.support import conformance as C
    from tests.support import conformance_matrix as M

    ours = write_ours(tmp_path / "ours.lance", table, "2.3", max_page_bytes)
    check_pylance(ours, table, seed)
    exp = C.normalize(table)
    n = exp.num_rows
    with lancelot.LanceFile(ours) as lf:
        assert lf.version == "2.3"
        M.fail_if(C.difference(lf.read(), exp), "full read", ours)
        starts = np.cumsum(C.page_lengths(ours)[0])[:-1].tolist()
        for a, b in [(b - 1, b + 1) for b in starts[:2]] + [(n // 3, n // 3 + 1), (max(0, n - 5), n)]:
            M.fail_if(C.difference(lf.read_range(a, b), exp.slice(a, b - a)), f"read_range({a}, {b})", ours)
        rows = np.random.default_rng(seed).choice(n, min(n, 37), replace=False).astype(np.int64)
        M.fail_if(C.difference(lf.take(rows), exp.take(pa.array(rows))), f"take of {rows.tolist()}", ours)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = pylance_write(tmp_path / "theirs.lance", table, "2.3")
    M.check_reads(theirs, table, seed)


@pytest.mark.parametrize("cases", _matrix_groups())
def test_conformance_matrix_both_ways(tmp_path, monkeypatch, cases):
    """The matrix's cases at 2.3, a group of one row count at a time, both ways (``_both_ways``)."""
    import re

    from tests.interop.test_conformance_write import page_bytes_for
    from tests.support import conformance as C

    monkeypatch.setattr(C, "VERSIONS", (*C.VERSIONS, "2.3"))  # (check_reads checks the file's version)
    fields, arrays, page_bytes = [pa.field("id", pa.int64())], [], []
    for case in cases:
        t = C.case_table(case, "2.2", "some", case.metadata)
        fields.append(t.schema.field("c").with_name(re.sub(r"[^A-Za-z0-9_]", "_", case.name)))
        arrays.append(t.column("c").combine_chunks())
        page_bytes.append(page_bytes_for(t))
    n = cases[0].rows
    table = pa.Table.from_arrays([pa.array(np.arange(n), pa.int64()), *arrays], schema=pa.schema(fields))
    _both_ways(tmp_path, table, C.case_seed(cases[0], "2.2", "some"), max(page_bytes))


def test_conformance_matrix_all_null_nestings_both_ways(tmp_path, monkeypatch):
    """Every nesting of the matrix all null (sparse structures of no values, one layer per level), as
    columns of one table, both ways."""
    from tests.support import conformance as C
    from tests.support import conformance_matrix as M

    monkeypatch.setattr(C, "VERSIONS", (*C.VERSIONS, "2.3"))
    types = {}
    for case in M.NESTED:
        if "all" in case.nulls and "blob" not in case.name:
            types.setdefault(str(case.make(np.random.default_rng(0), 4, "all").type), case.make)
    n = 1800
    cols = {f"c{i}": make(np.random.default_rng(i), n, "all") for i, make in enumerate(types.values())}
    assert all(c.null_count == n for c in cols.values()) and len(cols) >= 12
    table = pa.table({"id": pa.array(np.arange(n), pa.int64()), **cols})
    _both_ways(tmp_path, table, 7, 4096)


def test_a_damaged_page_names_file_column_and_page(tmp_path):
    """Sparse positions (a Delta in a page buffer) overwritten: a CorruptFileError naming the file, column
    and page, not wrong rows."""
    from lancelot.errors import CorruptFileError

    path = str(tmp_path / "bad.lance")
    lancelot.write_table(pa.table({"k": pa.array(range(N)), "s": CASES["sparse_random"][0]}), path, version="2.3")
    src = open_source(path)
    try:
        page = read_metadata(src).columns[1].pages[0]
    finally:
        src.close()
    assert len(page.buffer_offsets) == 1  # the deltas of the valid rows' positions
    with open(path, "r+b") as fh:
        fh.seek(page.buffer_offsets[0])
        fh.write(b"\xff" * page.buffer_sizes[0])
    with lancelot.LanceFile(path) as f:
        assert f.read(["k"]).column("k").to_pylist() == list(range(N))
        with pytest.raises(CorruptFileError) as e:
            f.read(["s"])
    assert path in str(e.value) and "column 1" in str(e.value) and "page 0" in str(e.value)


# ----------------------------------------------------------------------------- nested shapes, property


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=st.data())
def test_nested_shapes_both_ways(tmp_path_factory, data):
    """Random nested tables of few rows (empty and null lists, structs, maps, dictionaries) at 2.3:
    lancelot writes -> lancelot and pylance read equal; pylance writes -> lancelot reads equal.  pylance
    codes the small pages these make with the sequences it keeps in the layout alone (ranges, constants)."""
    from tests.support.crosscheck import crosscheck
    from tests.support.nested_strategies import nested_tables

    table, sizes = data.draw(nested_tables("2.2"))
    result = crosscheck(tmp_path_factory.mktemp("nested23"), table, "2.3", sizes)
    problems = {k: v for k, v in result.problems.items() if k != "pylance->pylance" and v is not None}
    assert not problems, problems
