"""Pickling datasets and fragments (multiprocessing, Ray and Spark ship them to workers); ported
from the reference's test_dataset.py (test_pickle, test_pickle_fragment): a copy reopens the
same version, even after the dataset moved on."""

import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import lance
import pyarrow as pa

import lancelot

TABLE = pa.table({"a": range(100), "b": range(100)})


def _count(ds):
    return ds.version, ds.count_rows()


def test_pickle_dataset(tmp_path):
    uri = str(tmp_path / "test")
    lancelot.write_dataset(TABLE, uri)
    ds = lancelot.dataset(uri)
    copy = pickle.loads(pickle.dumps(ds))
    assert copy.to_table() == ds.to_table() == lance.dataset(uri).to_table()
    lancelot.write_dataset(TABLE, uri, mode="append")
    old = pickle.loads(pickle.dumps(ds))
    assert old.version == 1 and old.count_rows() == 100  # the pickled version, not the latest
    assert pickle.loads(pickle.dumps(lancelot.dataset(uri))).count_rows() == 200


def test_pickle_fragment(tmp_path):
    uri = str(tmp_path / "test")
    lance.write_dataset(TABLE, uri, max_rows_per_file=30)
    lance.dataset(uri).delete("a = 40")
    frag = lancelot.dataset(uri).get_fragments()[1]
    copy = pickle.loads(pickle.dumps(frag))
    assert copy.fragment_id == frag.fragment_id == 1
    assert copy.to_table() == frag.to_table() == lance.dataset(uri).get_fragments()[1].to_table()
    assert copy.dataset.version == frag.dataset.version


def test_dataset_to_a_worker_process(tmp_path):
    uri = str(tmp_path / "test")
    lancelot.write_dataset(TABLE, uri)
    ds = lancelot.dataset(uri)
    lancelot.write_dataset(TABLE, uri, mode="append")
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(_count, ds).result() == (1, 100)
