"""pylance 14 API that lancelot lacked: scan keywords of ``to_pandas``, ``LanceFragment.to_table``/``to_batches``/
``count_rows``/``delete_rows``/``validate``/``create_from_file``, cleanup's options and its dry run, ``update``'s and
``merge_insert``'s write options, ``get_version``/``tracked_files``/``all_files``; and a pin of signature parity.
pylance is the oracle throughout (both directions where a fragment is written)."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import sys
from datetime import timedelta

import lance
import lance.fragment
import pyarrow as pa
import pytest

import lancelot
from lancelot.sql.errors import CountFilterError


@pytest.fixture(scope="module")
def two_fragments(tmp_path_factory) -> str:
    """8 rows in two fragments of 4, row id=1 deleted: read-only for the tests below."""
    p = str(tmp_path_factory.mktemp("api") / "d")
    lance.write_dataset(pa.table({"id": range(8), "s": [f"s{i}" for i in range(8)]}), p, max_rows_per_file=4)
    lance.dataset(p).delete("id = 1")
    return p


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> str:
    """Six versions (overwrites: each leaves a data file behind) plus a stray file no manifest names."""
    p = str(tmp_path_factory.mktemp("api") / "h")
    for i in range(6):
        lance.write_dataset(pa.table({"id": [i]}), p, mode="overwrite" if i else "create")
    with open(os.path.join(p, "data", "stray.lance"), "wb") as f:
        f.write(b"x")
    return p


def _copies(src: str, tmp_path) -> tuple[str, str]:
    a, b = str(tmp_path / "theirs"), str(tmp_path / "ours")
    shutil.copytree(src, a)
    shutil.copytree(src, b)
    return a, b


def test_to_pandas_takes_the_scan_keywords(two_fragments: str) -> None:
    kw = dict(use_stats=True, fast_search=False, io_buffer_size=1 << 20, late_materialization=True)
    kw |= dict(use_scalar_index=True, include_deleted_rows=None, order_by=None, disable_scoring_autoprojection=None)
    want = lance.dataset(two_fragments).to_pandas(filter="id > 2", **kw)
    got = lancelot.dataset(two_fragments).to_pandas(filter="id > 2", **kw)
    assert got.equals(want) and len(got) == 5


def test_fragment_to_table_positional_and_to_batches(two_fragments: str) -> None:
    ft, fo = lance.dataset(two_fragments).get_fragments()[0], lancelot.dataset(two_fragments).get_fragments()[0]
    # pylance's positional order: columns, filter, limit, offset, with_row_id, with_row_address, blob_handling...
    args = (["id"], "id > 0", 2, 1, True, False, None, None, True, 1 << 20, True, None, None, None)
    assert fo.to_table(*args).equals(ft.to_table(*args))
    kw = dict(columns=["s"], batch_size=2, use_scalar_index=True, late_materialization=False, strict_batch_size=True)
    want, got = list(ft.to_batches(**kw)), list(fo.to_batches(**kw))
    assert [b.to_pydict() for b in got] == [b.to_pydict() for b in want] and len(got) == 2
    for frag in (ft, fo):
        with pytest.raises(TypeError):
            frag.to_batches(["id"])  # keyword-only, as pylance's


@pytest.mark.parametrize("bad", ["nope > 1", "id >>> 3", "s > 3"])
def test_fragment_count_rows_bad_filter_is_oserror(two_fragments: str, bad: str) -> None:
    with pytest.raises(OSError):
        lance.dataset(two_fragments).get_fragments()[0].count_rows(bad)
    with pytest.raises(CountFilterError) as e:
        lancelot.dataset(two_fragments).get_fragments()[0].count_rows(bad)
    assert isinstance(e.value, OSError) and isinstance(e.value, ValueError)
    assert lancelot.dataset(two_fragments).get_fragments()[0].count_rows("id > 0") == 2


@pytest.mark.parametrize(
    "args, kw",
    [
        ((), dict(retain_versions=2)),
        ((timedelta(0), 3), {}),  # retain_versions is positional, as pylance's
        ((timedelta(days=1), 2), {}),  # both conditions must hold: none is older than a day
        ((), dict(versions=[2, 3, 6, 99])),  # only these (never the current; unknown ones ignored)
        ((), dict(versions=[2, 5], retain_versions=3)),
        ((timedelta(0),), dict(delete_rate_limit=1000, delete_concurrency=2, delete_unverified=True)),
        ((), dict(retain_versions=0)),
        ((), dict(retain_versions=-1)),
        ((timedelta(0),), dict(delete_rate_limit=0)),
        ((timedelta(0),), dict(delete_concurrency=0)),
    ],
)
def test_cleanup_options_like_pylance(history: str, tmp_path, args: tuple, kw: dict) -> None:
    theirs, ours = _copies(history, tmp_path)
    out = []
    for lib, p in ((lance, theirs), (lancelot, ours)):
        try:
            s = lib.dataset(p).cleanup_old_versions(*args, **kw)
            out.append((s.old_versions, s.data_files_removed, s.transaction_files_removed, s.bytes_removed))
        except (OSError, OverflowError) as e:
            out.append(type(e) if isinstance(e, OverflowError) else OSError)
        out.append([v["version"] for v in lance.dataset(p).versions()])
        out.append(sorted(os.listdir(os.path.join(p, "data"))))
    assert out[:3] == out[3:]


def test_cleanup_of_a_tagged_version_is_oserror(history: str, tmp_path) -> None:
    theirs, ours = _copies(history, tmp_path)
    lance.dataset(theirs).tags.create("t", 2)
    lance.dataset(ours).tags.create("t", 2)
    for lib, p in ((lance, theirs), (lancelot, ours)):
        with pytest.raises(OSError):
            lib.dataset(p).cleanup_old_versions(timedelta(0))
        lib.dataset(p).cleanup_old_versions(timedelta(0), error_if_tagged_old_versions=False)
        assert [v["version"] for v in lance.dataset(p).versions()] == [2, 6]


def test_explain_cleanup_like_pylance(history: str) -> None:
    theirs, ours = lance.dataset(history), lancelot.dataset(history)
    for kw in (dict(include_files=True), dict(include_files=True, max_files=2), dict(retain_versions=2)):
        want, got = (
            theirs.explain_cleanup_old_versions(timedelta(0), **kw),
            ours.explain_cleanup_old_versions(timedelta(0), **kw),
        )
        for key in ("bytes_removed", "old_versions", "data_files_removed", "transaction_files_removed"):
            assert getattr(got.stats, key) == getattr(want.stats, key), (kw, key)
        assert (got.read_version, got.candidate_file_limit, got.warnings) == (
            want.read_version,
            want.candidate_file_limit,
            want.warnings,
        )
        assert got.candidate_files_truncated == want.candidate_files_truncated
        files = [{(c.path, c.kind, c.unverified, c.size_bytes) for c in e.candidate_files} for e in (got, want)]
        assert files[0] == files[1] if not kw.get("max_files") else len(files[0]) == len(files[1]) == 2
    assert len(lance.dataset(history).versions()) == 6  # a dry run
    for ds in (theirs, ours):
        with pytest.raises(ValueError):
            ds.explain_cleanup_old_versions(max_files=0)


def test_update_data_storage_version(tmp_path) -> None:
    paths = {}
    for who in ("theirs", "ours"):
        paths[who] = p = str(tmp_path / who)
        lance.write_dataset(pa.table({"id": [1, 2, 3]}), p, data_storage_version="2.1")
    for tgt in ("2.1", "bogus", "legacy"):
        res = []
        for lib, p in ((lance, paths["theirs"]), (lancelot, paths["ours"])):
            try:
                res.append(lib.dataset(p).update({"id": "id + 10"}, "id > 1", 10, None, tgt))
            except ValueError:
                res.append(ValueError)
        assert res[0] == res[1], tgt
    assert lance.dataset(paths["ours"]).to_table() == lance.dataset(paths["theirs"]).to_table()


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_changes_write_another_file_version(tmp_path, version) -> None:
    """update's and merge_insert's ``data_storage_version``: the new files of that version beside the 2.1 ones, the
    manifest flagged ``mixed_file_versions`` (256) as pylance flags it; either library reads the result."""
    from lancelot.reader import LanceFile

    got = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        lance.write_dataset(pa.table({"id": [1, 2, 3], "s": ["a", "b", "c"]}), p, data_storage_version="2.1")
        b = lib.dataset(p).merge_insert("id").data_storage_version(version).when_matched_update_all()
        b.when_not_matched_insert_all().execute(pa.table({"id": [2, 4], "s": ["x", "y"]}))
        lib.dataset(p).update({"s": "s || '!'"}, "id = 1", data_storage_version=version)
        ds = lancelot.dataset(p)
        files = [LanceFile(os.path.join(p, "data", f.data_files()[0].path)).version for f in ds.get_fragments()]
        flags = (ds.manifest.reader_feature_flags, ds.manifest.writer_feature_flags)
        got.append((files, flags, ds.data_storage_version, ds.to_table(), lance.dataset(p).to_table()))
    assert got[0] == got[1]
    assert got[0][:3] == (["2.1", version, version], (257, 257), "2.1")
    assert got[0][3]["s"].to_pylist() == ["c", "x", "y", "a!"]


def test_merge_insert_write_mode_and_storage_version(tmp_path) -> None:
    p = str(tmp_path / "m")
    lance.write_dataset(pa.table({"id": [1, 2], "v": [1, 2]}), p, data_storage_version="2.1")
    b = lancelot.dataset(p).merge_insert("id").write_mode("rewrite_rows").data_storage_version("2.1")
    r = b.when_matched_update_all().when_not_matched_insert_all().execute(pa.table({"id": [2, 3], "v": [20, 30]}))
    assert (r["num_updated_rows"], r["num_inserted_rows"]) == (1, 1)
    assert lance.dataset(p).to_table().sort_by("id")["v"].to_pylist() == [1, 20, 30]
    for lib in (lance, lancelot):
        with pytest.raises(ValueError):
            lib.dataset(p).merge_insert("id").write_mode("bogus")


def test_fragment_delete_rows_both_directions(two_fragments: str, tmp_path) -> None:
    theirs, ours = _copies(two_fragments, tmp_path)
    for offsets in ([0, 2, 2], [1], []):  # row 1 of fragment 0 is deleted already
        want = lance.dataset(theirs).get_fragments()[0].delete_rows(offsets).to_json()
        got = lancelot.dataset(ours).get_fragments()[0].delete_rows(iter(offsets)).to_json()
        for j in (want, got):
            j["deletion_file"].pop("id")
        assert got == want
    assert lancelot.dataset(ours).get_fragments()[1].delete_rows([3, 0, 1, 2]) is None  # every row
    for lib in (lance, lancelot):
        frag = lib.dataset(ours).get_fragments()[0]
        with pytest.raises(ValueError):
            frag.delete_rows([4])
        with pytest.raises(OverflowError):
            frag.delete_rows([-1])
    # each commits the other's: lancelot's metadata by pylance, pylance's by lancelot
    mine = lancelot.dataset(ours).get_fragments()[0].delete_rows([3])
    op = lance.LanceOperation.Delete([lance.fragment.FragmentMetadata.from_json(json.dumps(mine.to_json()))], [], "x")
    lance.LanceDataset.commit(ours, op, read_version=2)
    yours = lance.dataset(theirs).get_fragments()[0].delete_rows([3])
    op2 = lancelot.LanceOperation.Delete([lancelot.FragmentMetadata.from_json(yours.to_json())], [], "x")
    lancelot.LanceDataset.commit(theirs, op2, read_version=2)
    for p in (ours, theirs):
        assert lance.dataset(p).to_table()["id"].to_pylist() == [0, 2, 4, 5, 6, 7]
        assert lancelot.dataset(p).to_table()["id"].to_pylist() == [0, 2, 4, 5, 6, 7]


def test_fragment_validate_like_pylance(two_fragments: str, tmp_path) -> None:
    p = str(tmp_path / "v")
    shutil.copytree(two_fragments, p)
    assert [f.validate() for f in lancelot.dataset(p).get_fragments()] == [None, None]
    for sub in ("_deletions", "data"):  # fragment 0's deletion file, then every data file, gone
        for name in os.listdir(os.path.join(p, sub)):
            os.remove(os.path.join(p, sub, name))
        for lib in (lance, lancelot):
            with pytest.raises(OSError):
                lib.dataset(p).get_fragments()[0].validate()


def test_fragment_create_from_file_both_directions(two_fragments: str, tmp_path) -> None:
    name = lance.dataset(two_fragments).get_fragments()[1].data_files()[0].path
    want = lance.LanceFragment.create_from_file(name, lance.dataset(two_fragments), 7).to_json()
    got = lancelot.LanceFragment.create_from_file(name, lancelot.dataset(two_fragments), 7).to_json()
    assert got == want and want["files"][0]["file_size_bytes"] is None  # the size is not recorded
    for bad in ("nope.lance", f"data/{name}"):
        for lib in (lance, lancelot):
            with pytest.raises(OSError):
                lib.LanceFragment.create_from_file(bad, lib.dataset(two_fragments), 3)
    # a fragment recovered by lancelot, committed by pylance; and the other way
    theirs, ours = _copies(two_fragments, tmp_path)
    for lib, other, p in ((lancelot, lance, ours), (lance, lancelot, theirs)):
        frag = lib.LanceFragment.create_from_file(name, lib.dataset(p), 0)
        meta = other.FragmentMetadata.from_json(json.dumps(frag.to_json()))
        other.LanceDataset.commit(p, other.LanceOperation.Overwrite(lance.dataset(p).schema, [meta]), read_version=2)
        assert lancelot.dataset(p).to_table() == lance.dataset(p).to_table()
        assert lance.dataset(p).to_table()["id"].to_pylist() == [4, 5, 6, 7]


@pytest.mark.parametrize("lib", [lance, lancelot], ids=["pylance", "lancelot"])
def test_create_from_file_appends_and_rewrites(tmp_path, lib) -> None:
    """The reference's flow (test_fragment.py): files written outside the dataset become fragments by Append, then
    replace them by Rewrite; the files by the other library's writer, the fragments by ``lib``, commits by pylance."""
    from lance.file import LanceFileWriter

    data = pa.table({"a": range(50), "b": range(50)})
    p = str(tmp_path / "d")
    lance.write_dataset([], p, schema=data.schema, data_storage_version="2.2")
    os.makedirs(os.path.join(p, "data"), exist_ok=True)  # (an empty dataset has no data directory yet)

    def write(name: str, t: pa.Table) -> str:
        if lib is lance:
            with lancelot.LanceWriter(os.path.join(p, "data", name), t.schema, version="2.2") as w:
                w.write(t)
        else:
            with LanceFileWriter(os.path.join(p, "data", name)) as w:
                w.write_batch(t)
        return name

    def meta(name: str) -> lance.fragment.FragmentMetadata:
        frag = lib.LanceFragment.create_from_file(name, lib.dataset(p), 0)
        return lance.fragment.FragmentMetadata.from_json(json.dumps(frag.to_json()))

    for i, name in enumerate(["one.lance", "two.lance"]):
        write(name, data)
        ds = lance.LanceDataset.commit(p, lance.LanceOperation.Append([meta(name)]), read_version=i + 1)
        assert [f.fragment_id for f in ds.get_fragments()] == list(range(i + 1))
    write("all.lance", lance.dataset(p).to_table())
    group = lance.LanceOperation.RewriteGroup([f.metadata for f in ds.get_fragments()], [meta("all.lance")])
    ds = lance.LanceDataset.commit(p, lance.LanceOperation.Rewrite([group], []), read_version=3)
    assert [f.fragment_id for f in ds.get_fragments()] == [2]
    assert lancelot.dataset(p).to_table() == ds.to_table() and ds.count_rows() == 100
    write("reordered.lance", data.select(["b", "a"]))
    with pytest.raises(OSError):  # the dataset's fields, in its order
        lib.LanceFragment.create_from_file("reordered.lance", lib.dataset(p), 0)


def test_get_version_tracked_and_all_files(two_fragments: str) -> None:
    theirs, ours = lance.dataset(two_fragments), lancelot.dataset(two_fragments)
    assert ours.get_version() == theirs.get_version()
    assert (
        lancelot.dataset(two_fragments, version=1).get_version()
        == lance.dataset(two_fragments, version=1).get_version()
    )

    def rows(reader: pa.RecordBatchReader, cols: list[str]) -> tuple[pa.Schema, list[tuple]]:
        t = reader.read_all()
        return t.schema, sorted(zip(*(t.column(c).to_pylist() for c in cols)))

    calls: list[tuple] = []
    got = rows(ours.tracked_files(min_version=2, progress=lambda *a: calls.append(a)), ["version", "path", "type"])
    assert got == rows(theirs.tracked_files(min_version=2), ["version", "path", "type"]) and calls == [(1, 1)]
    assert rows(ours.tracked_files(), ["base_uri", "path"])[1] == rows(theirs.tracked_files(), ["base_uri", "path"])[1]
    cols = ["base_uri", "path", "size_bytes", "last_modified"]
    assert rows(ours.all_files(), cols) == rows(theirs.all_files(), cols)
    for ds in (theirs, ours):  # pyarrow's Dataset.replace_schema, refused
        with pytest.raises(NotImplementedError):
            ds.replace_schema(ds.schema)


# -- signature parity ---------------------------------------------------------------------------------------------

#: parameters of pylance's methods that lancelot's do not take, each for a reason
MISSING_PARAMETERS = {
    # index creation: lancelot builds no progress-reporting, versioned or FTS indices
    ("LanceDataset", "create_scalar_index"): {"progress_callback", "format_version", "document_granularity"},
    # use_legacy_format: deprecated, and v1 files are not written; namespace_client, table_id, session: pylance's
    # namespace and session objects, which lancelot has not
    ("LanceFragment", "create"): {"use_legacy_format", "namespace_client", "table_id", "session"},
}


def _classes() -> list[tuple[str, type, type]]:
    ours = sys.modules["lancelot.dataset.dataset"]
    from lancelot.dataset.merge_insert import MergeInsertBuilder
    from lancelot.dataset.scanner import LanceScanner

    theirs = sys.modules["lance.dataset"]
    return [
        ("LanceDataset", theirs.LanceDataset, ours.LanceDataset),
        ("LanceFragment", lance.fragment.LanceFragment, lancelot.LanceFragment),
        ("LanceScanner", theirs.LanceScanner, LanceScanner),
        ("MergeInsertBuilder", theirs.MergeInsertBuilder, MergeInsertBuilder),
    ]


def _parameters(fn: object) -> list[tuple[str, str, object]]:
    return [(p.name, p.kind.name, p.default) for p in inspect.signature(fn).parameters.values() if p.name != "self"]  # type: ignore[arg-type]


def test_signature_parity() -> None:
    """Every public method pylance has that lancelot has too takes the same parameters, in the same positional order
    (keyword-only ones keyword-only), with the same defaults, but for ``MISSING_PARAMETERS``."""
    compared, differ = 0, []
    for cls, theirs, ours in _classes():
        for name in sorted(n for n in dir(theirs) if not n.startswith("_") and hasattr(ours, n)):
            a, b = getattr(theirs, name), getattr(ours, name)
            if not (inspect.isfunction(a) and inspect.isfunction(b)):
                continue  # properties, attributes
            skip = MISSING_PARAMETERS.get((cls, name), set())
            compared += 1
            if [p for p in _parameters(a) if p[0] not in skip] != _parameters(b):
                differ.append(f"{cls}.{name}: pylance {_parameters(a)}, lancelot {_parameters(b)}")
    assert not differ, "\n".join(differ)
    assert compared > 80  # (a renamed class would compare nothing)


# -- merge_insert's key from the schema's primary key -------------------------------------


_PK = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False, metadata={"lance-schema:unenforced-primary-key": "true"}),
        ("v", pa.string()),
    ]
)


@pytest.mark.parametrize("writer", [lance, lancelot])
def test_merge_insert_on_primary_key(tmp_path, writer) -> None:
    """Without ``on``, the key is the schema's unenforced primary key (the Field flag, set from the Arrow metadata),
    whichever library wrote the dataset; without one, ValueError in both."""
    got = []
    for lib in (lance, lancelot):
        p = str(tmp_path / lib.__name__)
        writer.write_dataset(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=_PK), p)
        ds = lib.dataset(p)
        r = ds.merge_insert().when_matched_update_all().when_not_matched_insert_all()
        got.append((r.execute(pa.table({"id": [1, 5], "v": ["x", "y"]}, schema=_PK)), ds.to_table().to_pydict()))
        assert lance.dataset(p).schema == _PK
        plain = lib.write_dataset(pa.table({"id": [1]}), str(tmp_path / f"plain_{lib.__name__}"))
        with pytest.raises(ValueError, match="primary key"):
            plain.merge_insert()
        with pytest.raises(ValueError):
            plain.merge_insert([])
    assert got[0] == got[1]
    assert got[0][1]["v"] == ["b", "c", "x", "y"]


_KEY = {"lance-schema:unenforced-primary-key": "true"}


@pytest.mark.parametrize(
    "field,ok",
    [
        (pa.field("k", pa.int64(), nullable=True, metadata=_KEY), False),  # nullable
        (pa.field("k", pa.list_(pa.field("item", pa.int64(), False, _KEY)), nullable=False), False),  # in a list
        (pa.field("k", pa.struct([pa.field("x", pa.int64(), False)]), nullable=False, metadata=_KEY), False),  # no leaf
        (pa.field("k", pa.struct([pa.field("x", pa.int64(), False, _KEY)]), nullable=True), False),  # nullable parent
        (pa.field("k", pa.struct([pa.field("x", pa.int64(), False, _KEY)]), nullable=False), True),
    ],
    ids=["nullable", "list", "struct", "nullable-parent", "nested"],
)
def test_primary_key_field_checked_on_write(tmp_path, field, ok) -> None:
    """A primary key field must be a non-nullable leaf outside lists: pylance refuses others with OSError."""
    t = pa.Table.from_pylist(
        [{"k": [1] if pa.types.is_list(field.type) else ({"x": 1} if field.type.num_fields else 1)}],
        schema=pa.schema([field]),
    )
    for lib in (lance, lancelot):
        if ok:
            lib.write_dataset(t, str(tmp_path / lib.__name__))
        else:
            with pytest.raises(OSError, match="rimary key"):
                lib.write_dataset(t, str(tmp_path / lib.__name__))
