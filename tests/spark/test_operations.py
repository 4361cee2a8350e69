"""Distributed operations from Spark (lancelot.spark.operations) against the library's own operations
on a twin dataset: same rows, same version history, pylance reads both equal and validates them.
The local[2] tests come first, the local-cluster and Connect ones last (switching modes restarts Spark)."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyspark")
lance = pytest.importorskip("lance")

import lancelot  # noqa: E402
from lancelot.dataset.changes import ChangeInputError  # noqa: E402
from lancelot.spark import operations as ops  # noqa: E402
from tests.spark.helpers import dataset_files  # noqa: E402
from tests.spark.sessions import classic_session, connect_mode, connect_session  # noqa: E402


def _twins(tmp_path, n: int = 900, stable: bool = False) -> tuple[str, str]:
    """Two equal datasets written by pylance: three fragments of 300 rows, a few rows deleted."""
    t = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "x": pa.array([i * 0.5 for i in range(n)]),
            "s": [f"s{i}" for i in range(n)],
        }
    )
    uris = []
    for name in ("spark", "library"):
        uri = str(tmp_path / name)
        ds = lance.write_dataset(t, uri, max_rows_per_file=300, enable_stable_row_ids=stable)
        ds.delete("id % 50 = 3")
        uris.append(uri)
    return uris[0], uris[1]


def _same(a: str, b: str, row_ids: bool = False, options: dict | None = None) -> pa.Table:
    """Dataset ``a`` (on S3 with pylance's ``options``) and ``b`` read equal by pylance and lancelot."""
    da, db = lance.dataset(a, storage_options=options), lance.dataset(b)
    da.validate()
    db.validate()
    assert da.version == db.version
    assert [v["version"] for v in da.versions()] == [v["version"] for v in db.versions()]
    ta = da.to_table(with_row_id=row_ids).sort_by("id")
    tb = db.to_table(with_row_id=row_ids).sort_by("id")
    assert ta.equals(tb)
    mine = lancelot.dataset(a, storage_options=options).to_table().sort_by("id")
    assert mine.equals(ta.drop_columns(["_rowid"]) if row_ids else ta)
    return ta


@pytest.mark.parametrize("stable", [False, True], ids=["row-addresses", "stable-row-ids"])
def test_delete_update_add_columns_as_the_library(spark, tmp_path, stable):
    a, b = _twins(tmp_path, stable=stable)
    lib = lancelot.dataset(b)
    got = ops.delete(spark, a, "id % 7 = 0 OR s = 's899'")
    assert got == lib.delete("id % 7 = 0 OR s = 's899'") == {"num_deleted_rows": 128}
    _same(a, b, stable)
    assert ops.delete(spark, a, "id < 0") == {"num_deleted_rows": 0}  # a version even when nothing matches
    lib.delete("id < 0")
    _same(a, b, stable)

    assert ops.update(spark, a, {"x": "x * 2 + 1", "s": "concat(s, '!')"}, where="id >= 250 AND id < 620") == {
        "num_rows_updated": lib.update({"x": "x * 2 + 1", "s": "concat(s, '!')"}, where="id >= 250 AND id < 620")[
            "num_rows_updated"
        ]
    }
    t = _same(a, b, stable)
    assert t.filter(pc.field("id") == 300).column("s").to_pylist() == ["s300!"]

    ops.add_columns(spark, a, {"y": "id * 3", "t": "concat('v', s)"})
    lib.add_columns({"y": "id * 3", "t": "concat('v', s)"})
    _same(a, b, stable)

    def double(batch: pa.RecordBatch) -> pa.RecordBatch:
        return pa.record_batch([pc.multiply(batch.column("x"), 2.0)], names=["x2"])

    ops.add_columns(spark, a, double, read_columns=["x"])
    lib.add_columns(double, read_columns=["x"])
    t = _same(a, b, stable)
    assert t.column("x2").to_pylist() == [2.0 * x for x in t.column("x").to_pylist()]
    assert lance.dataset(a).version == 7


def test_add_columns_pandas_udf(spark, tmp_path):
    a, b = _twins(tmp_path)

    def backfill(df):  # a pandas DataFrame in, a pandas DataFrame out
        return df.assign(z=df["id"] % 10)[["z"]]

    ops.add_columns(spark, a, backfill, read_columns=["id"], batch_format="pandas")
    lancelot.dataset(b).add_columns(lambda rb: backfill(rb.to_pandas()), read_columns=["id"])
    t = _same(a, b)
    assert t.column("z").to_pylist() == [i % 10 for i in t.column("id").to_pylist()]


def test_a_failing_task_commits_nothing(spark, tmp_path):
    a, _ = _twins(tmp_path)
    before = lance.dataset(a).to_table()
    files = dataset_files(a)

    def boom(batch: pa.RecordBatch) -> pa.RecordBatch:
        if pc.max(batch.column("id")).as_py() >= 600:  # the last fragment's task fails
            raise ValueError("boom on the last fragment")
        return pa.record_batch([batch.column("id")], names=["copy"])

    with pytest.raises(Exception, match="boom on the last fragment"):
        ops.add_columns(spark, a, boom, read_columns=["id"], output_schema=pa.schema([("copy", pa.int64())]))
    with pytest.raises(Exception, match="is not a column|does not exist|No field named|not found|nope"):
        ops.update(spark, a, {"x": "nope + 1"})  # refused on the driver, before any task runs
    ds = lance.dataset(a)
    ds.validate()
    assert ds.version == 2
    assert ds.to_table().equals(before)
    assert dataset_files(a) == files  # the files the other tasks wrote were deleted


def test_a_concurrent_commit_re_plans_on_the_latest_version(spark, tmp_path):
    a, b = _twins(tmp_path)
    marker = str(tmp_path / "appended")
    extra = pa.table({"id": pa.array([5000, 5001], pa.int64()), "x": [1.0, 2.0], "s": ["e0", "e1"]})

    def with_an_append(batch: pa.RecordBatch) -> pa.RecordBatch:
        try:  # the first task to run appends to the dataset, once: the Merge commit then conflicts
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
            lancelot.write_dataset(extra, a, mode="append")
        except FileExistsError:
            pass
        return pa.record_batch([pc.add(batch.column("id"), 1)], names=["next"])

    schema = pa.schema([("next", pa.int64())])
    ops.add_columns(spark, a, with_an_append, read_columns=["id"], output_schema=schema)
    lancelot.write_dataset(extra, b, mode="append")
    lancelot.dataset(b).add_columns(with_an_append, read_columns=["id"])
    t = _same(a, b)
    assert t.num_rows == lance.dataset(a).count_rows() and 5001 in t.column("id").to_pylist()
    assert t.column("next").to_pylist() == [i + 1 for i in t.column("id").to_pylist()]


def test_merge_insert_as_the_library(spark, tmp_path):
    a, b = _twins(tmp_path, stable=True)
    keys = list(range(250, 350)) + [1000, 1001, None]  # 253 and 303 were deleted: inserted again
    src = pa.table({"id": pa.array(keys, pa.int64()), "x": pa.array([-1.0] * len(keys))})
    got = ops.merge_insert(
        spark.createDataFrame(src.to_pylist(), "id long, x double"),
        a,
        "id",
        when_not_matched_by_source_delete="id < 100",
    )
    want = (
        lancelot.dataset(b)
        .merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete("id < 100")
        .execute(src)
    )
    assert got == want == {"num_inserted_rows": 5, "num_updated_rows": 98, "num_deleted_rows": 98}
    t = _same(a, b)
    assert t.filter(pc.field("id") == 300).to_pylist() == [{"id": 300, "x": -1.0, "s": "s300"}]
    # updated rows keep their stable row ids (inserted rows' fresh ids follow the order rows were written in)
    ra = lance.dataset(a).to_table(with_row_id=True)
    rb = lance.dataset(b).to_table(with_row_id=True)
    old = pc.field("_rowid") < 900
    assert ra.filter(old).sort_by("_rowid").equals(rb.filter(old).sort_by("_rowid"))
    assert sorted(ra.column("_rowid").to_pylist()) == sorted(rb.column("_rowid").to_pylist())

    cond = pa.table({"id": pa.array([400, 401, 402, 9001], pa.int64()), "x": [300.0, 0.0, 300.0, 1.0]})
    got = ops.merge_insert(spark.createDataFrame(cond.to_pylist(), "id long, x double"), a, "id", "source.x > target.x")
    want = lancelot.dataset(b).merge_insert("id").when_matched_update_all("source.x > target.x")
    assert (
        got
        == want.when_not_matched_insert_all().execute(cond)
        == {
            "num_inserted_rows": 1,
            "num_updated_rows": 2,
            "num_deleted_rows": 0,
        }
    )
    _same(a, b)

    dup = pa.table({"id": pa.array([400, 400, 7000], pa.int64()), "x": [1.0, 2.0, 3.0]})
    files = dataset_files(a)
    with pytest.raises(Exception, match="ambiguous merge insert"):
        ops.merge_insert(spark.createDataFrame(dup.to_pylist(), "id long, x double"), a, "id")
    bad = spark.createDataFrame(src.to_pylist(), "id long, x double").selectExpr("id", "CAST(x AS STRING) AS x")
    with pytest.raises(ChangeInputError, match="source column 'x' is string, the dataset's is double"):
        ops.merge_insert(bad, a, "id")
    assert lance.dataset(a).version == 4
    assert dataset_files(a) == files


def _typed(ids: list[int]) -> pa.Table:
    """Rows of decimals, timestamps (with and without a time zone), dates, booleans, binary, lists and structs, each
    column with nulls at its own rows."""
    import datetime as dt
    from decimal import Decimal

    utc = dt.timezone.utc
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("d", pa.decimal128(10, 2)),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
            pa.field("ntz", pa.timestamp("us")),
            pa.field("day", pa.date32()),
            pa.field("b", pa.bool_()),
            pa.field("bin", pa.binary()),
            pa.field("ls", pa.list_(pa.string())),
            pa.field("st", pa.struct([pa.field("dd", pa.decimal128(10, 2)), pa.field("t", pa.timestamp("us", "UTC"))])),
        ]
    )
    rows = [
        {
            "id": i,
            "d": None if i % 7 == 3 else Decimal(i * 25 - 300) / 100,
            "ts": None if i % 5 == 2 else dt.datetime(2024, 1, 1, tzinfo=utc) + dt.timedelta(hours=7 * i),
            "ntz": None if i % 7 == 3 else dt.datetime(2024, 3, 10, 1, 30) + dt.timedelta(minutes=37 * i),
            "day": None if i % 6 == 1 else dt.date(2024, 1, 1) + dt.timedelta(days=i),
            "b": None if i % 4 == 0 else i % 3 == 0,
            "bin": None if i % 7 == 3 else bytes([i % 256]) * (i % 3),
            "ls": None if i % 9 == 0 else [f"s{i}", None][: i % 3],
            "st": None
            if i % 8 == 5
            else {"dd": None if i % 3 == 0 else Decimal(i * 25) / 100, "t": dt.datetime(2020, 1, 1, tzinfo=utc)},
        }
        for i in ids
    ]
    return pa.Table.from_pylist(rows, schema)


def test_operations_on_decimals_timestamps_lists_and_structs_as_pylance(spark, tmp_path):
    """Each operation on a dataset of four fragments with nulls in every column, through Spark and through pylance on a
    twin: predicates on decimals, timestamps, dates, binary and nested fields; new values of those types (NULL too);
    merges keyed on a decimal and on a timestamp (a source read from Lance: Spark's own types); SQL columns."""
    a, b = str(tmp_path / "spark"), str(tmp_path / "pylance")
    for uri in (a, b):
        lance.write_dataset(_typed(list(range(120))), uri, max_rows_per_file=30)

    def same() -> None:
        ta, tb = lance.dataset(a).to_table().sort_by("id"), lance.dataset(b).to_table().sort_by("id")
        assert {c: ta[c].to_pylist() for c in ta.column_names} == {c: tb[c].to_pylist() for c in tb.column_names}
        assert ta.equals(tb)
        assert lancelot.dataset(a).to_table().sort_by("id").equals(ta)

    where = "d > CAST(5.5 AS DECIMAL(10,2)) OR ts < TIMESTAMP '2024-01-03 00:00:00Z' OR day = DATE '2024-02-01'"
    where += " OR bin = X'0505' OR st.dd IS NULL OR NOT (ntz < TIMESTAMP '2024-03-12 00:00:00')"
    got = ops.delete(spark, a, where)
    lance.dataset(b).delete(where)
    assert got["num_deleted_rows"] == 120 - lance.dataset(b).count_rows() > 0
    same()
    for st, cond in [
        ({"d": "d * 2", "b": "NOT b"}, "d < 0 OR b"),
        ({"ls": "NULL", "st": "NULL", "bin": "NULL"}, "id % 4 = 1"),
        # (no SET reads a column another SET writes: pylance 14.0.2 applies them one by one in a random order)
        ({"ts": "ntz", "day": "CAST(ntz AS DATE)"}, "id < 40"),
    ]:
        assert ops.update(spark, a, st, where=cond) == lance.dataset(b).update(st, where=cond)
        same()
    for i, key in enumerate(["d", "ts"]):
        src = _typed([4, 8, 12, 13, 300 + i])  # an update of each column, and an insert
        path = str(tmp_path / f"source-{key}")
        lance.write_dataset(src, path)
        got = ops.merge_insert(spark.read.format("lance").load(path), a, key)
        want = lance.dataset(b).merge_insert(key).when_matched_update_all().when_not_matched_insert_all().execute(src)
        assert got == {k: v for k, v in want.items() if k.startswith("num_")}
        same()
    cols = {"d2": "d * 2", "t2": "st.t", "n": "CAST(NULL AS DECIMAL(10,2))"}
    ops.add_columns(spark, a, cols)
    lance.dataset(b).add_columns(cols)
    same()


@pytest.mark.parametrize("path", ["join", "lookup"])
def test_an_ambiguous_merge_found_after_other_fragments_leaves_no_file(spark, tmp_path, path):
    """Two source rows for a target row of a later fragment than another matched row: the error is pylance's (an
    OSError naming the key), and no file stays behind.  Through Spark's join (a clause by source), the one task has
    already written the first fragment's deletion file when it finds the second: the job deletes that one too."""
    a, b = _twins(tmp_path)
    files, version = dataset_files(a), lance.dataset(a).version
    src = pa.table({"id": pa.array([1, 700, 700], pa.int64()), "x": [0.0, 1.0, 2.0]})  # fragments 0, then 2 twice
    by_source = "id < 0" if path == "join" else False  # deletes nothing; only the path changes
    builder = lance.dataset(b).merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    with pytest.raises(OSError, match=r"Ambiguous merge inserts are prohibited.* on \(id = 700\)") as want:
        (builder.when_not_matched_by_source_delete(by_source) if by_source else builder).execute(src)
    df = spark.createDataFrame(src.to_pylist(), "id long, x double")
    with pytest.raises(type(want.value), match=r"ambiguous merge inserts are prohibited.* on \(id = 700\)"):
        ops.merge_insert(df, a, "id", when_not_matched_by_source_delete=by_source, num_partitions=1)
    assert lance.dataset(a).version == version
    assert dataset_files(a) == files


def test_compact_as_the_library(spark, tmp_path):
    a, b = _twins(tmp_path, n=1200, stable=True)
    for uri in (a, b):  # small fragments to merge, and one with most rows deleted
        lance.write_dataset(
            pa.table({"id": pa.array([5000, 5001], pa.int64()), "x": [0.0, 1.0], "s": ["a", "b"]}), uri, mode="append"
        )
        lance.dataset(uri).delete("id >= 300 AND id < 560")
    got = ops.compact(spark, a, target_rows_per_fragment=500)
    want = lancelot.dataset(b).optimize.compact_files(target_rows_per_fragment=500)
    assert got == want and got.fragments_removed >= 3
    _same(a, b, row_ids=True)
    assert [len(f.data_files()) for f in lance.dataset(a).get_fragments()] == [
        len(f.data_files()) for f in lance.dataset(b).get_fragments()
    ]


def test_operations_on_s3(spark, tmp_path, s3_dataset):
    """Storage options reach every task: the operations on a dataset in a (local moto) S3 bucket."""
    t = pa.table({"id": pa.array(range(600), pa.int64()), "x": pa.array([i * 0.5 for i in range(600)])})
    a, opts, b = s3_dataset.uri, s3_dataset.lancelot_options(), str(tmp_path / "library")
    lance.write_dataset(t, a, max_rows_per_file=200, storage_options=s3_dataset.pylance_options())
    lance.write_dataset(t, b, max_rows_per_file=200)
    lib = lancelot.dataset(b)
    assert ops.delete(spark, a, "id % 3 = 0", storage_options=opts) == lib.delete("id % 3 = 0")
    assert ops.update(spark, a, {"x": "-x"}, "id > 500", storage_options=opts) == lib.update({"x": "-x"}, "id > 500")
    src = pa.table({"id": pa.array([1, 3, 9000], pa.int64()), "x": [7.0, 7.0, 7.0]})
    got = ops.merge_insert(spark.createDataFrame(src.to_pylist(), "id long, x double"), a, "id", storage_options=opts)
    assert got == lib.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    _same(a, b, options=s3_dataset.pylance_options())


@pytest.mark.parametrize("mode", ["local-cluster", "connect"])
def test_operations_on_executor_jvms_and_spark_connect(tmp_path, mode):
    """What is pickled to executors (separate JVMs and Python workers, or a Connect server's) suffices."""
    a, b = _twins(tmp_path)
    lib = lancelot.dataset(b)
    src = pa.table({"id": pa.array([1, 2, 2000], pa.int64()), "x": [9.0, 9.0, 9.0]})

    def copy(batch: pa.RecordBatch) -> pa.RecordBatch:
        return pa.record_batch([batch.column("id")], names=["c"])

    def run(spark) -> None:
        assert ops.delete(spark, a, "id % 7 = 0") == lib.delete("id % 7 = 0")
        ops.add_columns(spark, a, copy, read_columns=["id"])
        lib.add_columns(copy, read_columns=["id"])
        got = ops.merge_insert(spark.createDataFrame(src.to_pylist(), "id long, x double"), a, "id")
        assert got == lib.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)

    if mode == "connect":
        with connect_mode():
            run(connect_session())
    else:
        run(classic_session("local-cluster[2,1,1024]"))
    _same(a, b)


def test_compact_of_an_indexed_dataset_remaps_its_index(spark, tmp_path):
    """An indexed dataset compacts through the library's index-remapping compaction: the same
    version, rows and index coverage as the library on a twin, pylance's index queries correct."""
    a, b = str(tmp_path / "spark"), str(tmp_path / "library")
    for uri in (a, b):
        lance.write_dataset(pa.table({"id": pa.array(range(900), pa.int64())}), uri, max_rows_per_file=150)
        lance.dataset(uri).create_scalar_index("id", "BTREE")
        lance.dataset(uri).delete("id % 7 = 0")
    got = ops.compact(spark, a, target_rows_per_fragment=400)
    want = lancelot.dataset(b).optimize.compact_files(target_rows_per_fragment=400)
    assert got == want and got.fragments_removed > 0
    ours, theirs = lance.dataset(a), lance.dataset(b)
    assert ours.version == theirs.version
    ours.validate()
    assert ours.to_table(filter="id > 600 AND id < 640") == ours.to_table(
        filter="id > 600 AND id < 640", use_scalar_index=False
    )
    assert [sorted(s.fragment_ids) for d in ours.describe_indices() for s in d.segments] == [
        sorted(s.fragment_ids) for d in theirs.describe_indices() for s in d.segments
    ]
