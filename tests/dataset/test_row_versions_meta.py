"""``FragmentMetadata.row_id_meta`` (a ``RowIdMeta``) and its row-version metas (``RowDatasetVersionMeta``) against
pylance's: the same dataset read by both gives the same JSON, both objects behave alike (equality, hashing, pickling,
``asdict``, bad JSON), and a fragment rewritten by hand carries its row ids over through ``FragmentMetadata`` and
``LanceOperation.Update`` on twin datasets, read back alike."""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lancelot
from tests.helpers import builtin_class

lance = pytest.importorskip("lance")

METAS = ("row_id_meta", "created_at_version_meta", "last_updated_at_version_meta")
C, U = "_row_created_at_version", "_row_last_updated_at_version"


def _write(lib: Any, path: Path, stable: bool = True) -> Any:
    t = pa.table({"id": pa.array(range(10), pa.int64()), "v": [f"r{i}" for i in range(10)]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = lib.write_dataset(t, str(path), max_rows_per_file=4, enable_stable_row_ids=stable)
    ds.update({"v": "'u'"}, where="id % 3 = 0")
    ds.delete("id = 4")
    return lib.dataset(str(path))


def _behaviour(meta: Any) -> dict[str, Any]:
    """What a meta object does, library aside."""
    cls = type(meta)
    out: dict[str, Any] = {"class": cls.__name__, "json": meta.json(), "equal": meta == cls.from_json(meta.json())}
    out["not_equal_to_text"] = meta != meta.json()
    out["pickled"] = pickle.loads(pickle.dumps(meta)) == meta
    out["repr"] = repr(meta).startswith("<") and cls.__name__ in repr(meta)
    for name, call in (("hash", lambda: hash(meta)), ("asdict", meta.asdict), ("new", cls)):
        try:
            out[name] = call()
        except Exception as e:  # compared by class
            out[name] = builtin_class(e)
    for bad in ("nope", '{"External": 1}'):
        try:
            cls.from_json(bad)
        except Exception as e:  # compared by class
            out[bad] = builtin_class(e)
    if hasattr(cls, "from_dict"):
        out["from_dict"] = cls.from_dict(meta.asdict()) == meta
    return out


@pytest.mark.parametrize("written_by", ["pylance", "lancelot"])
@pytest.mark.parametrize("stable", [True, False], ids=["stable", "addresses"])
def test_metas_of_one_dataset_match(tmp_path: Path, written_by: str, stable: bool) -> None:
    """Both libraries read the same metas from the same dataset, and their objects behave alike."""
    path = tmp_path / "d"
    _write(lance if written_by == "pylance" else lancelot, path, stable)
    theirs = [f.metadata for f in lance.dataset(str(path)).get_fragments()]
    ours = [f.metadata for f in lancelot.dataset(str(path)).get_fragments()]
    assert len(ours) == len(theirs)
    for a, b in zip(theirs, ours, strict=True):
        for name in METAS:
            x, y = getattr(a, name), getattr(b, name)
            assert (x is None) == (y is None) == (not stable)
            if x is not None:
                assert _behaviour(y) == _behaviour(x)
        assert b.to_json() == a.to_json()


@pytest.mark.parametrize("lib", [lance, lancelot], ids=["pylance", "lancelot"])
def test_fragment_metadata_round_trips_its_metas(tmp_path: Path, lib: Any) -> None:
    """A ``FragmentMetadata`` built from another's fields (metas included) equals it and keeps its metas."""
    for frag in _write(lib, tmp_path / "d").get_fragments():
        m = frag.metadata
        again = type(m)(m.id, m.files, m.physical_rows, m.deletion_file, *(getattr(m, n) for n in METAS))
        assert again == m
        assert all(getattr(again, n) == getattr(m, n) for n in METAS)
        assert type(m).from_json(m.to_json() if lib is lancelot else __import__("json").dumps(m.to_json())) == m


def _rewrite(lib: Any, path: Path) -> dict[str, list[Any]]:
    """Rewrite fragment 1 by hand (``LanceFragment.create`` of its rows with new values, carrying its ``row_id_meta``)
    and commit it as an ``Update`` that removes the old one; the rows with their ids and versions after."""
    t = pa.table({"id": pa.array(range(10), pa.int64()), "v": [f"r{i}" for i in range(10)]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = lib.write_dataset(t, str(path), max_rows_per_file=4, enable_stable_row_ids=True)
    ds = lib.write_dataset(t.slice(0, 2), str(path), mode="append")
    old = ds.get_fragment(1)
    rows = old.to_table().set_column(1, "v", pa.array(["new"] * old.count_rows()))
    made = lib.LanceFragment.create(str(path), rows)
    new = type(made)(made.id, made.files, made.physical_rows, None, old.metadata.row_id_meta)
    op = lib.LanceOperation.Update(removed_fragment_ids=[1], new_fragments=[new])
    ds = lib.LanceDataset.commit(str(path), op, read_version=ds.version)
    return dict(ds.to_table(columns=["id", "v", "_rowid", C, U]).to_pydict())


def test_rewrite_by_hand_carries_row_ids_alike(tmp_path: Path) -> None:
    """The same hand-made rewrite on twin datasets gives the same row ids and versions."""
    assert _rewrite(lancelot, tmp_path / "lancelot") == _rewrite(lance, tmp_path / "pylance")
