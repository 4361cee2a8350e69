"""Schema evolution against pylance 14.0.2: ``add_columns`` (SQL, functions over batches, readers,
all-null fields), ``alter_columns``, ``drop_columns`` and ``merge``, each one Merge or Project
transaction whose new columns live in new data files of each fragment, as pylance writes them."""

from __future__ import annotations

import lance
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.dataset.commit import list_versions, load_manifest, load_transaction
from tests.dataset.helpers import LIBS, VERSIONS, assert_twins, both, files_of, needs_sql, table, twins


def _udf(batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.record_batch({"tripled": pc.multiply(batch["id"], 3)})


def _steps(lib: str) -> list:
    sql = lib == "lance"
    return [
        lambda ds: ds.delete("id = 1" if sql else pc.field("id") == 1),
        lambda ds: ds.add_columns({"double": "id * 2"} if sql else {"double": pc.field("id") * 2}),
        lambda ds: ds.add_columns(pa.field("empty", pa.int32())),
        lambda ds: ds.add_columns([pa.field("e1", pa.string()), pa.field("e2", pa.float32())]),
        lambda ds: ds.add_columns(_udf, read_columns=["id"]),
        lambda ds: ds.add_columns(
            pa.RecordBatchReader.from_batches(
                pa.schema([("g", pa.int64())]), [pa.record_batch({"g": list(range(100, 139))})]
            )
        ),
        lambda ds: ds.drop_columns(["double"]),  # its data file leaves every fragment
        lambda ds: ds.drop_columns(["e1", "s"]),
        lambda ds: ds.alter_columns({"path": "empty", "name": "renamed"}, {"path": "x", "nullable": True}),
        lambda ds: ds.alter_columns({"path": "tripled", "data_type": pa.int32()}),
        lambda ds: ds.merge(pa.table({"id": [2, 2, 5, 77], "m": ["a", "b", "c", "d"]}), "id"),
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_schema_evolution_twins(tmp_path, version):
    theirs, ours = twins(tmp_path, table(), version)
    lt, lo = lance.dataset(theirs), lancelot.dataset(ours)
    for step_t, step_o in zip(_steps("lance"), _steps("lancelot")):
        assert step_o(lo) == step_t(lt)  # delete's counts; None from the others, as pylance
        assert lo.version == lt.version and lo.schema == lt.schema
    assert_twins(theirs, ours)


def test_schema_evolution_with_stable_row_ids(tmp_path):
    theirs, ours = twins(tmp_path, table(), stable=True)
    for step_t, step_o in zip(_steps("lance")[:6], _steps("lancelot")[:6]):
        step_t(lance.dataset(theirs))
        step_o(lancelot.dataset(ours))
    assert_twins(theirs, ours, row_ids=True)


def test_schema_evolution_alternating_with_pylance(tmp_path):
    theirs, ours = twins(tmp_path, table(), "2.1")
    for i, (step_t, step_o) in enumerate(zip(_steps("lance"), _steps("lancelot"))):
        step_t(lance.dataset(theirs))
        (step_t(lance.dataset(ours)) if i % 2 else step_o(lancelot.dataset(ours)))
    assert_twins(theirs, ours)


def test_transactions_and_files_are_pylance_s(tmp_path):
    _, ours = twins(tmp_path, table(), "2.2")
    ds = lancelot.dataset(ours)
    nfiles = [len(f.files) for f in ds.manifest.fragments]
    ds.add_columns({"double": pc.field("id") * 2})  # v2: Merge, one more file per fragment
    ds.add_columns(pa.field("empty", pa.int32()))  # v3: Merge, metadata only
    ds.drop_columns(["double"])  # v4: Project, the file goes
    ds.alter_columns({"path": "x", "name": "xx"})  # v5: Project
    d = lancelot.dataset(ours)
    vs = list_versions(d.store, d.uri)
    ops = [
        load_transaction(d.store, load_manifest(d.store, d.uri, vs, v)).WhichOneof("operation") for v in (2, 3, 4, 5)
    ]
    assert ops == ["merge", "merge", "project", "project"]
    m2 = load_manifest(d.store, d.uri, vs, 2).manifest
    assert [len(f.files) for f in m2.fragments] == [n + 1 for n in nfiles]
    assert [list(f.files[-1].fields) for f in m2.fragments] == [[4 + 2]] * len(nfiles)  # after st.p, st.q
    m3 = load_manifest(d.store, d.uri, vs, 3).manifest
    assert [len(f.files) for f in m3.fragments] == [n + 1 for n in nfiles]
    assert [len(f.files) for f in d.manifest.fragments] == nfiles
    assert [f.name for f in d.manifest.fields if f.parent_id == -1] == ["id", "s", "xx", "st", "empty"]


# -- ported from the reference's python/python/tests/test_schema_evolution.py (facts, not code) ---


def test_drop_columns_ported(tmp_path):
    lance.write_dataset(pa.table({"a": range(10), "b": range(10), "c": range(10)}), tmp_path / "d")
    ds = lancelot.dataset(tmp_path / "d")
    ds.drop_columns(["b"])
    assert ds.schema == pa.schema({"a": pa.int64(), "c": pa.int64()})
    ds.drop_columns(["a"])
    assert lance.dataset(tmp_path / "d").schema == pa.schema({"c": pa.int64()})
    with pytest.raises(ValueError):
        ds.drop_columns(["c"])
    with pytest.raises(ValueError, match="zz"):
        ds.drop_columns(["zz"])
    lance.dataset(tmp_path / "d").validate()


_ITEM = pa.struct([("p", pa.int64()), ("q", pa.int64())])
_NESTED = pa.table(
    {
        "id": pa.array([1, 2, 3], pa.int64()),
        "ls": pa.array([[{"p": 1, "q": 2}], [], [{"p": 3, "q": 4}, {"p": 5, "q": 6}]], pa.list_(_ITEM)),
        "s": pa.array(
            [{"a": 1, "ls": [{"p": 1, "q": 2}]}] * 3, pa.struct([("a", pa.int64()), ("ls", pa.list_(_ITEM))])
        ),
    }
)


@pytest.mark.parametrize(
    ("writer", "version"), [("pylance", "2.1"), ("lancelot", "2.1"), ("pylance", "2.2"), ("lancelot", "2.2")]
)
def test_drop_nested_fields_in_lists_as_pylance(tmp_path, writer, version):
    """A field under a top-level list goes alone from file version 2.2; before it pylance drops
    the whole list column (a list inside a struct loses only the field in every version)."""
    lib = lance if writer == "pylance" else lancelot
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    for p in (theirs, ours):
        lib.write_dataset(_NESTED, p, data_storage_version=version)
    for cols in (["ls.item.q", "s.ls.item.q"], ["s.a"]):
        lance.dataset(theirs).drop_columns(cols)
        lancelot.dataset(ours).drop_columns(cols)
    assert_twins(theirs, ours)
    want = "ls: list<item: struct<p: int64>>" if version == "2.2" else None
    got = [f"{f.name}: {f.type}" for f in lance.dataset(ours).schema if f.name == "ls"]
    assert got == ([want] if want else [])
    assert str(lancelot.dataset(ours).schema.field("s").type) == "struct<ls: list<item: struct<p: int64>>>"


@pytest.mark.parametrize("lib", [lance, lancelot])
def test_drop_columns_errors_as_pylance(tmp_path, lib):
    lance.write_dataset(_NESTED, tmp_path / "d")
    ds = lib.dataset(tmp_path / "d")
    for bad in (["ls.q"], ["ls.item.q", "nope"], ["ls.element.q"]):
        with pytest.raises(ValueError, match=f"^Column {bad[-1]} does not exist in the dataset$"):
            ds.drop_columns(bad)
    with pytest.raises(ValueError, match="^Cannot drop all columns from a dataset$"):
        ds.drop_columns(["id", "ls", "s.a", "s.ls"])
    assert lance.dataset(tmp_path / "d").version == 1


def test_add_columns_udf_ported(tmp_path):
    tab = pa.table({"a": range(100), "b": range(100)})
    lance.write_dataset(tab, tmp_path / "d", max_rows_per_file=25)
    ds = lancelot.dataset(tmp_path / "d")

    def double_a(batch):
        assert batch.schema.names == ["a"]
        return pa.record_batch([pa.array([2 * x.as_py() for x in batch["a"]])], ["double_a"])

    double_a.output_schema = pa.schema([pa.field("double_a", pa.int64())])
    ds.add_columns(double_a, read_columns=["a"])
    expected = tab.append_column("double_a", pa.array([2 * x for x in range(100)]))
    assert ds.to_table() == expected

    calls = iter(range(1000))

    def make_new_col(batch):
        return pa.record_batch([batch["a"]], [f"c{next(calls)}"])

    with pytest.raises(Exception, match="Output schema of function does not match the expected schema"):
        ds.add_columns(make_new_col)

    def triple_a(batch):  # schema inferred, pandas output
        return pd.DataFrame({"triple_a": [3 * x.as_py() for x in batch["a"]]})

    ds.add_columns(triple_a, read_columns=["a"])
    expected = expected.append_column("triple_a", pa.array([3 * x for x in range(100)]))
    assert lance.dataset(tmp_path / "d").to_table() == expected
    lance.dataset(tmp_path / "d").validate()


def test_add_columns_from_reader_ported(tmp_path):
    """test_add_columns_from_rbr / _from_file: new values in chunks unlike the fragments'."""
    tab = pa.table({"a": range(100), "b": range(100)})
    lance.write_dataset(tab, tmp_path / "d", max_rows_per_file=25)
    ds = lancelot.dataset(tmp_path / "d")

    def gen():
        for i in range(34):
            n = 1 if i == 33 else 3
            yield pa.record_batch({"c": [i * 3 + j for j in range(n)]})

    ds.add_columns(gen(), reader_schema=pa.schema([("c", pa.int64())]))
    assert lance.dataset(tmp_path / "d").to_table() == tab.append_column("c", pa.array(range(100)))
    too_many = pa.RecordBatchReader.from_batches(pa.schema([("d", pa.int64())]), [pa.record_batch({"d": range(101)})])
    with pytest.raises(OSError, match="more values than expected"):
        ds.add_columns(too_many)
    assert lancelot.dataset(tmp_path / "d").version == 2


def test_add_columns_exprs_and_callable_ported(tmp_path):
    lance.write_dataset(pa.table({"a": range(100)}), tmp_path / "d")
    ds = lancelot.dataset(tmp_path / "d")
    ds.add_columns({"b": pc.field("a") + 1})
    ds.add_columns(lambda batch: pa.record_batch([pc.add(batch["a"], 2)], names=["c"]))
    assert lance.dataset(tmp_path / "d").to_table() == pa.table(
        {"a": range(100), "b": range(1, 101), "c": range(2, 102)}
    )


@needs_sql
def test_add_many_columns_ported(tmp_path):
    lance.write_dataset(pa.table([pa.array([1, 2, 3])], names=["0"]), tmp_path / "d")
    lancelot.dataset(tmp_path / "d").add_columns({str(i): "0" for i in range(1, 200)})
    got = lance.dataset(tmp_path / "d")
    assert got.to_table().num_rows == 3 and len(got.schema) == 200


@needs_sql
def test_add_cols_all_null_with_sql_ported(tmp_path):
    lance.write_dataset(pa.table({"a": range(100)}), tmp_path / "d", max_rows_per_file=50)
    before = lancelot.dataset(tmp_path / "d").manifest.fragments
    lancelot.dataset(tmp_path / "d").add_columns({"b": "CAST(NULL AS INT)"})
    got = lance.dataset(tmp_path / "d")
    assert got.schema == pa.schema({"a": pa.int64(), "b": pa.int32()})
    assert list(lancelot.dataset(tmp_path / "d").manifest.fragments) == list(before)  # metadata only
    assert got.to_table().column("b").null_count == 100


def test_add_cols_batch_size_ported(tmp_path):
    for batch_size in [1, 10, 100]:
        p = str(tmp_path / str(batch_size))
        lance.write_dataset(pa.table({"a": range(300)}), p, max_rows_per_file=100)

        def mutate(batch, size=batch_size):
            assert batch.num_rows <= size
            return pa.RecordBatch.from_pydict({"b": batch.column("a")})

        lancelot.dataset(p).add_columns(mutate, batch_size=batch_size)
        got = lance.dataset(p)
        got.validate()
        assert got.to_table() == pa.table({"a": range(300), "b": range(300)})


def test_add_null_columns_with_conflicting_names_ported(tmp_path):
    lance.write_dataset(pa.table({"id": [1, 2, 4]}), tmp_path / "d")
    ds = lancelot.dataset(tmp_path / "d")
    with pytest.raises(Exception, match="Column id already exists in the dataset"):
        ds.add_columns(pa.field("id", pa.float32()))
    with pytest.raises(Exception, match="Column id already exists in the dataset"):
        ds.add_columns([pa.field("id", pa.float32()), pa.field("good", pa.int32())])
    assert lancelot.dataset(tmp_path / "d").version == 1


@pytest.mark.parametrize("lib", LIBS)
def test_alter_columns_ported(tmp_path, lib):
    """The reference's test_alter_columns, run by each library (pylance the oracle of the messages) on
    a dataset pylance wrote: a refused alteration writes nothing."""
    schema = pa.schema([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.string(), nullable=False)])
    lance.write_dataset(pa.table({"a": [1, 2, 1024], "b": ["a", "b", "c"]}, schema=schema), tmp_path / "d")
    ds = LIBS[lib].dataset(tmp_path / "d")
    ds.alter_columns({"path": "a", "name": "x", "nullable": True}, {"path": "b", "name": "y"})
    expected = pa.schema([pa.field("x", pa.int64()), pa.field("y", pa.string(), nullable=False)])
    assert ds.schema == expected
    assert ds.to_table() == pa.table({"x": [1, 2, 1024], "y": ["a", "b", "c"]}, schema=expected) == both(tmp_path / "d")
    ds.alter_columns({"path": "x", "data_type": pa.int32()}, {"path": "y", "data_type": pa.large_string()})
    expected = pa.schema([pa.field("x", pa.int32()), pa.field("y", pa.large_string(), nullable=False)])
    got = lance.dataset(tmp_path / "d")
    got.validate()
    assert got.schema == expected
    want = pa.table({"x": [1, 2, 1024], "y": ["a", "b", "c"]}, schema=expected)
    assert got.to_table() == want == both(tmp_path / "d")
    before = files_of(str(tmp_path / "d"))
    with pytest.raises(Exception, match="Can't cast value 1024 to type Int8"):
        ds.alter_columns({"path": "x", "data_type": pa.int8()})
    with pytest.raises(Exception, match='Cannot cast column "x" from Int32 to Utf8'):
        ds.alter_columns({"path": "x", "data_type": pa.string()})
    with pytest.raises(Exception, match='Column "q" does not exist'):
        ds.alter_columns({"path": "q", "name": "z"})
    with pytest.raises(ValueError, match="Unknown key: type"):
        ds.alter_columns({"path": "x", "type": "string"})
    with pytest.raises(ValueError, match="At least one of name, nullable, or data_type must be specified"):
        ds.alter_columns({"path": "x"})
    assert files_of(str(tmp_path / "d")) - before <= {
        f for f in files_of(str(tmp_path / "d")) if f.startswith("_transactions/")
    }
    assert lancelot.dataset(tmp_path / "d").version == 3


def test_merge_columns_ported(tmp_path):
    """test_query_after_merge / LanceDataset.merge: a left join on a key column."""
    lance.write_dataset(pa.table({"id": range(100), "v": range(100)}), tmp_path / "d", max_rows_per_file=30)
    ds = lancelot.dataset(tmp_path / "d")
    ds.merge(pa.table({"key": range(50, 150), "data": range(150, 250)}), left_on="id", right_on="key")
    got = lance.dataset(tmp_path / "d")
    got.validate()
    assert got.to_table().column("data").to_pylist() == [None] * 50 + list(range(150, 200))
    with pytest.raises(OSError, match="does not exist"):
        ds.merge(pa.table({"q": [1], "z": [1]}), "id")
    with pytest.raises(OSError, match="exists in both"):
        ds.merge(pa.table({"id": [1], "v": [1]}), "id")


# -- bad input --------------------------------------------------------------------------------------


@needs_sql
def test_add_columns_sql_errors_write_nothing(twin_paths):
    _, ours = twin_paths
    before = files_of(ours)
    ds = lancelot.dataset(ours)
    with pytest.raises(OSError):
        ds.add_columns({"z": "id +"})
    with pytest.raises(OSError, match="already exists"):
        ds.add_columns({"id": "s"})
    assert lancelot.dataset(ours).version == 1 and files_of(ours) == before


@pytest.mark.parametrize("op", ["add", "drop", "rename"])
def test_indices_after_schema_changes_as_pylance_leaves_them(tmp_path, op):
    """Indices on a dropped column go (pylance refuses a manifest whose index names a field the
    schema lacks); renames and new columns keep them."""
    from tests.dataset.helpers import index_section, indexed_twins

    theirs, ours = indexed_twins(tmp_path)
    for lib, p in (("lance", theirs), ("lancelot", ours)):
        ds = (lance if lib == "lance" else lancelot).dataset(p)
        if op == "add":
            ds.add_columns({"y": "id * 2"} if lib == "lance" else {"y": pc.field("id") * 2})
        elif op == "drop":
            ds.drop_columns(["x"])
        else:
            ds.alter_columns({"path": "x", "name": "xx"})
    assert index_section(ours) == index_section(theirs)
    assert lance.dataset(ours).to_table(filter="id = 3") == lance.dataset(theirs).to_table(filter="id = 3")
    assert_twins(theirs, ours)


def test_cast_of_an_indexed_column_is_refused(tmp_path):
    from tests.dataset.helpers import indexed_twins

    _, ours = indexed_twins(tmp_path)
    before = files_of(ours)
    with pytest.raises(OSError, match="x_idx"):
        lancelot.dataset(ours).alter_columns({"path": "x", "data_type": pa.float32()})
    with pytest.raises(OSError, match="x_idx"):
        lance.dataset(ours).alter_columns({"path": "x", "data_type": pa.float32()})
    assert files_of(ours) == before


def test_schema_changes_read_no_manifest_back(tmp_path, monkeypatch):
    """add_columns (a Merge), alter_columns and drop_columns (Projects) move the dataset to the manifest their commit
    built (no read back, no ``_versions/`` listing); pylance reads each result the same."""
    from tests.dataset.helpers import CommitReads

    uri = str(tmp_path / "ds")
    lancelot.write_dataset(pa.table({"a": pa.array(range(6), pa.int64())}), uri)
    ds = lancelot.dataset(uri)
    for change in (
        lambda d: d.add_columns({"b": "a * 2"}),
        lambda d: d.alter_columns({"path": "b", "name": "c"}),
        lambda d: d.drop_columns(["c"]),
    ):
        ds.to_table()  # what a read caches (file column maps by name) must not outlive the version it read
        with CommitReads(uri, monkeypatch):
            change(ds)
        theirs = lance.dataset(uri)
        assert ds.version == theirs.version and ds.schema == theirs.schema
        assert ds.to_table() == lancelot.dataset(uri).to_table() == theirs.to_table()


@pytest.mark.parametrize("stable", [True, False], ids=["stable", "addresses"])
@pytest.mark.parametrize(
    "left_on, key_type",
    [("_rowid", pa.uint64()), ("_rowaddr", pa.uint64()), ("_rowid", pa.int64()), ("_rowoffset", pa.uint64())],
    ids=["rowid", "rowaddr", "rowid-int64", "rowoffset"],
)
def test_merge_on_row_ids_as_pylance(tmp_path, stable, left_on, key_type):
    """``merge(left_on="_rowid" | "_rowaddr")`` joins on each row's id or address, after deletes and an
    update that moved a row (stable ids keep its id, not its address); other key types and ``_rowoffset``
    are refused alike."""
    theirs, ours = twins(tmp_path, pa.table({"id": pa.array(range(10), pa.int64())}), stable=stable, rows_per_file=4)
    keys = [0, 1, 3, 5, 9, (1 << 32) + 1, 2 << 32]
    right = pa.table({"rid": pa.array(keys, key_type), "y": pa.array(range(len(keys)), pa.int64())})
    outcomes = []
    for lib, path in ((lance, theirs), (lancelot, ours)):
        ds = lib.dataset(path)
        ds.delete("id = 2")
        ds.update({"id": "id + 100"}, where="id = 5")
        try:
            lib.dataset(path).merge(right, left_on=left_on, right_on="rid")
            outcomes.append("merged")
        except OSError as e:
            outcomes.append(f"refused ({type(e).__name__})" if lib is lance else "refused (OSError)")
    assert outcomes[0] == outcomes[1]
    assert_twins(theirs, ours, row_ids=True)
