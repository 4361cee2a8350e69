"""compact_files on datasets with indices (pylance builds them): lancelot keeps every index valid as
pylance 14 does, checked with pylance (validate, index-using queries equal full scans and equal the
results of pylance compacting a twin dataset, same index coverage)."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pyarrow as pa
import pytest

import lancelot

lance = pytest.importorskip("lance")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FILTERS = ["id = 5", "id = 14", "id > 390", "id < 50", "cat = 'c1'", "array_has_any(tags, ['t1'])"]


def _table(start: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(start, start + 100)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(100 * 8).astype("float32")), 8)
    return pa.table(
        {
            "id": ids,
            "cat": pa.array([f"c{i % 5}" for i in ids]),
            "tags": pa.array([[f"t{i % 3}", f"u{i % 4}"] for i in ids]),
            "text": pa.array([f"hello world {i} foo{i % 7}" for i in ids]),
            "vec": vec,
        }
    )


def _build(path: str, stable: bool) -> None:
    rng = np.random.default_rng(0)
    ds = lance.write_dataset(_table(0, rng), path, enable_stable_row_ids=stable)
    for s in (100, 200, 300):
        ds = lance.write_dataset(_table(s, rng), path, mode="append")
    ds.delete("id % 10 = 3")
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("tags", "LABEL_LIST")
    ds.create_scalar_index("text", "INVERTED")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.create_index("vec", "IVF_PQ", num_partitions=2, num_sub_vectors=2)
    ds.delete("id % 10 = 4")  # deleted after indexing: the compaction drops them from the indices
    lance.write_dataset(_table(400, rng), path, mode="append")  # a fragment no index covers


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, str]:
    out = {}
    for stable in (False, True):
        p = str(tmp_path_factory.mktemp("indexed") / f"ds_{stable}")
        _build(p, stable)
        out[stable] = p
    return out


def _coverage(ds: lance.LanceDataset) -> list[tuple[str, str, tuple[int, ...]]]:
    return sorted((i["name"], i["type"], tuple(sorted(i["fragment_ids"]))) for i in ds.list_indices())


def _uuids(ds: lance.LanceDataset) -> dict[str, str]:
    return {i["name"]: i["uuid"] for i in ds.list_indices()}


@pytest.mark.parametrize(("stable", "defer"), [(False, False), (True, False), (False, True)])
def test_compact_indexed_like_pylance(indexed: dict[bool, str], tmp_path, stable: bool, defer: bool) -> None:
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(indexed[stable], ours)
    shutil.copytree(indexed[stable], theirs)
    before = _uuids(lance.dataset(ours))
    m1 = lancelot.dataset(ours).optimize.compact_files(target_rows_per_fragment=1000, defer_index_remap=defer)
    m2 = lance.dataset(theirs).optimize.compact_files(target_rows_per_fragment=1000, defer_index_remap=defer)
    assert (m1.fragments_removed, m1.fragments_added) == (m2.fragments_removed, m2.fragments_added) == (4, 1)
    a, b = lance.dataset(ours), lance.dataset(theirs)
    a.validate()
    cov_a, cov_b = _coverage(a), _coverage(b)
    if not stable and not defer:  # lancelot defers the vector and FTS indices to a fragment reuse index
        assert [c for c in cov_a if c[0] != "__lance_frag_reuse"] == cov_b
        assert ("__lance_frag_reuse", "FragmentReuse", (5,)) in cov_a
    else:
        assert cov_a == cov_b
    assert [f.count_rows() for f in a.get_fragments()] == [f.count_rows() for f in b.get_fragments()]
    after = _uuids(a)
    remapped = {"id_idx", "cat_idx", "tags_idx"} if not (stable or defer) else {"id_idx"} if not defer else set()
    assert {n for n in before if before[n] != after[n]} == remapped
    for f in FILTERS:
        got = sorted(a.to_table(filter=f, columns=["id"]).column("id").to_pylist())
        full = sorted(a.to_table(filter=f, columns=["id"], use_scalar_index=False).column("id").to_pylist())
        twin = sorted(b.to_table(filter=f, columns=["id"]).column("id").to_pylist())
        assert got == full == twin, f
        assert "ScalarIndexQuery" in a.scanner(filter=f).explain_plan(), f
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fts = [sorted(d.to_table(full_text_query="foo3", columns=["id"]).column("id").to_pylist()) for d in (a, b)]
        assert fts[0] == fts[1] and len(fts[0]) > 0
        q = a.take([0], columns=["vec"]).column("vec")[0].values.to_numpy()
        knn = [
            d.to_table(nearest={"column": "vec", "q": q, "k": 10}, columns=["id"]).column("id").to_pylist()
            for d in (a, b)
        ]
    assert knn[0] == knn[1]


def test_compact_indexed_rewritten_indices_and_reuse(indexed: dict[bool, str], tmp_path) -> None:
    """The Rewrite transaction lists the remapped indices (old and new uuid); pylance can compact
    the result again (extending lancelot's fragment reuse index) and still answers correctly."""
    from lancelot.dataset.index_remap import read_indices

    p = str(tmp_path / "ds")
    shutil.copytree(indexed[False], p)
    ds = lancelot.dataset(p)
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    from lancelot.dataset.commit import load_transaction

    t = load_transaction(ds.store, ds.manifest_file)
    assert t is not None
    names = {bytes(i.uuid.uuid): i.name for i in read_indices(ds.manifest_file.index_section)}
    assert sorted(names[bytes(r.new_id.uuid)] for r in t.rewrite.rewritten_indices) == ["cat_idx", "id_idx", "tags_idx"]
    # pylance compacts again on top (the unindexed fragment stays apart; materialize deletions)
    lance.dataset(p).delete("id % 10 = 5")
    lance.dataset(p).optimize.compact_files(target_rows_per_fragment=1000, materialize_deletions_threshold=0.05)
    b = lance.dataset(p)
    b.validate()
    for f in FILTERS:
        got = sorted(b.to_table(filter=f, columns=["id"]).column("id").to_pylist())
        assert got == sorted(b.to_table(filter=f, columns=["id"], use_scalar_index=False).column("id").to_pylist())


def _check_filters(ds: lance.LanceDataset, filters: list[str]) -> None:
    for f in filters:
        got = sorted(ds.to_table(filter=f, columns=["id"]).column("id").to_pylist())
        assert got == sorted(ds.to_table(filter=f, columns=["id"], use_scalar_index=False).column("id").to_pylist()), f


def test_compact_after_deferred_compaction(indexed: dict[bool, str], tmp_path) -> None:
    """A dataset pylance compacted with defer_index_remap: lancelot's remap applies the fragment
    reuse index's earlier moves first (pylance 14.0.2's own remap there loses BTREE and FTS rows);
    with defer_index_remap lancelot appends a version to the reuse index, byte for byte as pylance."""
    from lancelot.dataset.index_remap import read_indices

    base = str(tmp_path / "base")
    shutil.copytree(indexed[False], base)
    lance.dataset(base).optimize.compact_files(target_rows_per_fragment=1000, defer_index_remap=True)
    lance.dataset(base).delete("id % 10 = 6")
    lance.write_dataset(_table(500, np.random.default_rng(1)), base, mode="append")
    paths = {}
    for who, defer in (("ours", False), ("ours_defer", True), ("theirs_defer", True)):
        p = paths[who] = str(tmp_path / who)
        shutil.copytree(base, p)
        opt = lancelot.dataset(p).optimize if who.startswith("ours") else lance.dataset(p).optimize
        opt.compact_files(target_rows_per_fragment=1000, materialize_deletions_threshold=0.05, defer_index_remap=defer)
    for p in paths.values():
        ds = lance.dataset(p)
        ds.validate()
        _check_filters(ds, FILTERS)
        fts = sorted(ds.to_table(full_text_query="foo3", columns=["id"]).column("id").to_pylist())
        assert fts == sorted(ds.to_table(filter="text LIKE '%foo3'", columns=["id"]).column("id").to_pylist())

    def reuse(p: str) -> bytes:
        (i,) = [
            x for x in read_indices(lancelot.dataset(p).manifest_file.index_section) if x.name == "__lance_frag_reuse"
        ]
        return bytes(i.index_details.value)

    assert reuse(paths["ours_defer"]) == reuse(paths["theirs_defer"])
    assert _coverage(lance.dataset(paths["ours_defer"])) == _coverage(lance.dataset(paths["theirs_defer"]))


def test_compact_multipage_btree_with_nulls(tmp_path) -> None:
    """BTREE pages cut again after deleted rows leave the index (same pages and statistics as
    pylance's), null keys in BTREE, BITMAP and LABEL_LIST indices."""
    n = 2500

    def tbl(s: int) -> pa.Table:
        ids = np.arange(s, s + n)
        return pa.table(
            {
                "id": ids,
                "v": pa.array([None if i % 17 == 0 else int((i * 7919) % 5000) for i in ids], pa.int64()),
                "s": pa.array([None if i % 13 == 0 else f"s{(i * 31) % 900:04d}" for i in ids]),
                "c": pa.array([None if i % 11 == 0 else f"k{i % 6}" for i in ids]),
                "l": pa.array([None if i % 19 == 0 else [f"a{i % 3}"] for i in ids]),
            }
        )

    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    ds = lance.write_dataset(tbl(0), ours)
    for s in range(1, 4):
        ds = lance.write_dataset(tbl(s * n), ours, mode="append")
    for c in ("v", "s"):
        ds.create_scalar_index(c, "BTREE")
    ds.create_scalar_index("c", "BITMAP")
    ds.create_scalar_index("l", "LABEL_LIST")
    ds.delete("id % 7 = 1 or id < 2000")
    shutil.copytree(ours, theirs)
    lancelot.dataset(ours).optimize.compact_files(target_rows_per_fragment=100000)
    lance.dataset(theirs).optimize.compact_files(target_rows_per_fragment=100000)
    a, b = lance.dataset(ours), lance.dataset(theirs)
    a.validate()
    assert a.stats.index_stats("v_idx")["indices"] == b.stats.index_stats("v_idx")["indices"]
    assert a.stats.index_stats("v_idx")["indices"][0]["num_pages"] == 2
    filters = ["v = 5", "v < 100", "v > 4900", "v is null", "s = 's0100'", "s < 's0050'", "s is null"]
    filters += ["c = 'k1'", "c is null", "array_has_any(l, ['a1'])"]
    _check_filters(a, filters)
    for f in filters:
        assert "ScalarIndexQuery" in a.scanner(filter=f).explain_plan(), f


def test_defer_index_remap_refused_with_stable_row_ids(indexed: dict[bool, str], tmp_path) -> None:
    p = str(tmp_path / "ds")
    shutil.copytree(indexed[True], p)
    with pytest.raises(OSError, match="defer_index_remap"):
        lancelot.dataset(p).optimize.compact_files(target_rows_per_fragment=1000, defer_index_remap=True)
    with pytest.raises(OSError, match="defer_index_remap"):
        lance.dataset(p).optimize.compact_files(target_rows_per_fragment=1000, defer_index_remap=True)
