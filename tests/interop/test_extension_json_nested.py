"""JSON fields below the top level and extension types over unusual storage, against pylance 14.0.2.

pylance stores an ``arrow.json`` field inside a struct, a list or (2.2) a map as it stores a JSON
column: JSONB (``large_binary``) under ``lance.json``, logical type ``json``; its dataset reads
return JSON text (``arrow.json``) at every depth.  lancelot writes the same fields and bytes and
reads both back as pylance does, at every version pylance takes the type.
"""

from __future__ import annotations

import glob
import json
import os
import warnings

import numpy as np
import pyarrow as pa
import pytest

import lancelot

lance = pytest.importorskip("lance")

VERSIONS = ["2.0", "2.1", "2.2"]
N = 60


def _texts(seed: int, n: int) -> list[str | None]:
    rng = np.random.default_rng(seed)
    out: list[str | None] = []
    for k in range(n):
        if rng.random() < 0.15:
            out.append(None)
        else:
            doc = {"k": int(rng.integers(0, 100)), "s": f"v{k}", "l": [1.5, None, True], "o": {"x": k % 3 == 0}}
            out.append(json.dumps(doc))
    return out


def _json(texts: list[str | None]) -> pa.Array:
    return pa.array(texts, pa.json_())


def _table(version: str, seed: int = 0) -> pa.Table:
    """``s`` (a struct with a JSON field), ``l`` (a list of JSON), ``fl`` (a large list of JSON) and,
    at 2.2, ``m`` (a map of JSON values); nulls at each level (2.0 holds no null structs)."""
    rng = np.random.default_rng(seed)
    docs = _json(_texts(seed, N))
    struct_mask = None if version == "2.0" else pa.array(rng.random(N) < 0.1)
    s = pa.StructArray.from_arrays([docs, pa.array(np.arange(N))], ["doc", "i"], mask=struct_mask)
    lens = rng.integers(0, 4, N)
    offs = pa.array(np.concatenate([[0], np.cumsum(lens)]).astype(np.int32))
    items = _json(_texts(seed + 1, int(lens.sum())))
    list_mask = pa.array(rng.random(N) < 0.1)
    cols = {
        "s": s,
        "l": pa.ListArray.from_arrays(offs, items, mask=list_mask),
        "fl": pa.LargeListArray.from_arrays(offs.cast(pa.int64()), items),
    }
    if version == "2.2":
        keys = pa.array([f"k{i}" for i in range(int(lens.sum()))])
        cols["m"] = pa.MapArray.from_arrays(offs, keys, items)
    return pa.table(cols)


def _fields(path: str) -> list[tuple]:
    return [(f.name, f.id, f.parent_id, f.logical_type, f.extension_name, dict(f.metadata)) for f in _manifest(path)]


def _manifest(path: str):
    return lancelot.dataset(path).manifest.fields


def _files(path: str) -> list[str]:
    return sorted(glob.glob(os.path.join(path, "data", "*.lance")))


@pytest.mark.parametrize("version", VERSIONS)
def test_nested_json_both_ways(tmp_path, version):
    t = _table(version)
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lance.write_dataset(t, theirs, data_storage_version=version)
    lancelot.write_dataset(t, ours, data_storage_version=version)
    # the same manifest fields (json / lance.json at every depth) and the same JSONB bytes in the files
    assert _fields(ours) == _fields(theirs)
    with lancelot.LanceFile(_files(ours)[0]) as a, lancelot.LanceFile(_files(theirs)[0]) as b:
        assert a.schema == b.schema
        assert a.read().equals(b.read())
    # dataset reads give JSON text at every depth, in both directions
    want = lance.dataset(theirs).to_table()
    assert want.schema.field("s").type.field("doc").type == pa.json_()
    assert lance.dataset(ours).to_table().equals(want)
    got = lancelot.dataset(theirs).to_table()
    assert got.schema == want.schema
    assert got.equals(want)
    assert lancelot.dataset(ours).schema == lance.dataset(theirs).schema
    assert (
        lancelot.dataset(theirs)
        .take([5, 0, 17], columns=["l", "s"])
        .equals(lance.dataset(theirs).take([5, 0, 17], columns=["l", "s"]))
    )


def test_nested_json_appends_both_ways(tmp_path):
    path = str(tmp_path / "ds")
    lancelot.write_dataset(_table("2.2"), path)
    lance.write_dataset(_table("2.2", seed=1), path, mode="append")
    lancelot.write_dataset(_table("2.2", seed=2).slice(10, 20), path, mode="append")
    want = lance.dataset(path).to_table()
    assert want.num_rows == 2 * N + 20
    assert lancelot.dataset(path).to_table().equals(want)
    idx = [0, N, 2 * N + 19, 7, 7]
    assert lancelot.dataset(path).take(idx).equals(lance.dataset(path).take(idx))


def test_sliced_input(tmp_path):
    """Sliced struct / list / map input (offsets not starting at 0, nulls) is written as its visible values."""
    t = _table("2.2").slice(7, 30)
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    lance.write_dataset(t, theirs)
    lancelot.write_dataset(t, ours)
    want = lance.dataset(theirs).to_table()
    assert lance.dataset(ours).to_table().equals(want)

    def parsed(col):
        return [None if v is None else [None if x is None else json.loads(x) for x in v] for v in col.to_pylist()]

    assert parsed(want.column("l")) == parsed(t.column("l"))


@pytest.mark.parametrize("version", VERSIONS)
def test_extension_over_null_storage(tmp_path, version):
    """An extension type whose storage is ``null`` (``pa.opaque(pa.null(), ...)``) reads back with its
    nulls counted, as pylance reads it."""
    ext = pa.opaque(pa.null(), "geometry", "acme")
    t = pa.table({"o": pa.ExtensionArray.from_storage(ext, pa.nulls(5)), "i": pa.array(range(5))})
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    lance.write_dataset(t, theirs, data_storage_version=version)
    lancelot.write_dataset(t, ours, data_storage_version=version)
    for path in (theirs, ours):
        got = lancelot.dataset(path).to_table()
        got.validate(full=True)
        assert got.equals(lance.dataset(theirs).to_table())
        assert got.column("o").type == ext and got.column("o").null_count == 5
