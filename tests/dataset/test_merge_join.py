"""The join of ``merge_insert`` (``lancelot.dataset.merge_join``): the candidate lookup over an
integer first key finds exactly the pairs a plain hash join finds, whatever the key types, nulls,
deleted rows and ranges; and a two-column key with nulls upserts as pylance upserts it."""

from __future__ import annotations

import importlib

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from tests.dataset.helpers import assert_twins, twins

merge_join = importlib.import_module("lancelot.dataset.merge_join")


def _pairs(kj, frags):
    out = []
    for f, (_live, pos, srow) in zip(frags, kj.matches(frags)):
        out.append(sorted(zip((f.fragment_id,) * len(pos), pos.tolist(), srow.tolist())))
    return out


def _target(typ: pa.DataType, rng: np.random.Generator) -> pa.Table:
    n = 300
    info = np.iinfo(typ.to_pandas_dtype())
    k = rng.integers(max(info.min, -50), min(info.max, 50), n, endpoint=True).astype(info.dtype)
    k[:3] = [info.min, info.max, info.max - 1]  # the type's ends: the lookup's arithmetic wraps there
    null = rng.random(n) < 0.1
    return pa.table(
        {
            "k": pa.array(k, typ, mask=null),
            "k2": pa.array(rng.integers(0, 3, n), pa.int32(), mask=rng.random(n) < 0.1),
            "v": pa.array(np.arange(n)),
        }
    )


@pytest.mark.parametrize("typ", [pa.int8(), pa.uint8(), pa.int32(), pa.int64(), pa.uint64()])
def test_lookup_join_equals_hash_join(tmp_path, typ):
    rng = np.random.default_rng(int(typ.bit_width))
    t = _target(typ, rng)
    uri = str(tmp_path / "d")
    lance.write_dataset(t, uri, max_rows_per_file=70)
    lance.dataset(uri).delete("v % 5 = 1")
    ds = lancelot.dataset(uri)
    frags = ds.get_fragments()
    first = 0 if typ.bit_width == 8 else 3  # the ends of a wide type: too wide a range for the lookup
    src = t.take(pa.array(rng.integers(first, t.num_rows, 60))).select(["k", "k2"])  # duplicates, nulls
    for on in (["k"], ["k", "k2"]):
        fast = merge_join.KeyJoin(src, on)
        assert fast._table is not None
        plain = merge_join.KeyJoin(src, on)
        plain._table = None  # the hash join over every live row
        got, want = _pairs(fast, frags), _pairs(plain, frags)
        assert got == want
        assert sum(map(len, got)) > 0


def test_wide_or_non_integer_keys_use_the_hash_join():
    wide = pa.table({"k": pa.array([0, 1 << 40], pa.int64())})
    assert merge_join.KeyJoin(wide, ["k"])._table is None
    text = pa.table({"k": pa.array(["a", "b"])})
    assert merge_join.KeyJoin(text, ["k"])._table is None
    nulls = pa.table({"k": pa.array([None, None], pa.int64())})
    assert merge_join.KeyJoin(nulls, ["k"])._table is None


def test_two_column_key_with_nulls_twins(tmp_path):
    n = 200
    a = np.arange(n)
    data = pa.table(
        {
            "id": pa.array(a // 4, pa.int64(), mask=a % 13 == 5),
            "line": pa.array(a % 4, pa.int32()),
            "x": pa.array(a * 1.0),
        }
    )
    theirs, ours = twins(tmp_path, data, "2.1", rows_per_file=60)
    src = pa.table(
        {
            "id": pa.array([0, 1, 1, 7, None, 400, 401], pa.int64()),
            "line": pa.array([0, 1, 2, 3, 1, 0, 1], pa.int32()),
            "x": pa.array([-1.0] * 7),
        }
    )
    results = []
    for p, lib in ((theirs, lance), (ours, lancelot)):
        ds = lib.dataset(p)
        results.append(
            ds.merge_insert(["id", "line"]).when_matched_update_all().when_not_matched_insert_all().execute(src)
        )
    assert results[1] == results[0]
    assert_twins(theirs, ours, key="x")
    assert sorted(map(str, lancelot.dataset(ours).to_table().to_pylist())) == sorted(
        map(str, lance.dataset(theirs).to_table().to_pylist())
    )
