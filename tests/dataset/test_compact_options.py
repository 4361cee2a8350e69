"""pylance 14.0.2's compaction options in lancelot's ``compact_files`` and ``Compaction.plan``: the same operation on
twin datasets (written by pylance), compared as pylance reads them (fragment row counts, rows, versions); bad options
raise what pylance raises."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.optimize import Compaction as PyCompaction

import lancelot
from lancelot.optimize import Compaction
from tests.dataset.helpers import counts

ROWS = 4096


def _table() -> pa.Table:
    """2 KiB rows (a fixed-size list of 256 int64s), so byte limits bite within a few hundred rows."""
    values = pa.array(np.arange(ROWS * 256, dtype=np.int64))
    return pa.table({"v": pa.FixedSizeListArray.from_arrays(values, 256), "i": np.arange(ROWS)})


def _twins(tmp_path, per_file: int, delete: str | None) -> tuple[str, str]:
    out = []
    for name in ("ours", "theirs"):
        uri = str(tmp_path / name)
        lance.write_dataset(_table(), uri, max_rows_per_file=per_file)
        if delete:
            lance.dataset(uri).delete(delete)
        out.append(uri)
    return out[0], out[1]


def _state(uri: str) -> tuple[list[int], int, list[tuple[int, int]], list[int]]:
    ds = lance.dataset(uri)
    frags = ds.get_fragments()
    versions = sorted({(d.file_major_version, d.file_minor_version) for f in frags for d in f.metadata.files})
    return [f.count_rows() for f in frags], ds.version, versions, ds.to_table(columns=["i"]).column("i").to_pylist()


#: (input fragments' rows, delete, options): byte limits with batch sizes (also where a group is cut in two pieces,
#: k >= 2), a zero target, binary copy, the source limits, excluded fragments, another output version
CASES = [
    (256, None, {"target_rows_per_fragment": 1000, "max_bytes_per_file": 1000, "batch_size": 300}),
    (256, None, {"target_rows_per_fragment": 1000, "max_bytes_per_file": 1000}),
    (256, None, {"target_rows_per_fragment": 700, "max_bytes_per_file": 0, "batch_size": 250}),
    (4096, "i % 5 = 0", {"target_rows_per_fragment": 700, "max_bytes_per_file": 0, "batch_size": 250}),
    (4096, "i % 5 = 0", {"target_rows_per_fragment": 1000, "max_bytes_per_file": 3 << 20, "batch_size": 100}),
    (256, "i % 7 = 0", {"target_rows_per_fragment": 1000, "max_bytes_per_file": 1000, "batch_size": 300}),
    (256, "i % 7 = 0", {"target_rows_per_fragment": 0}),
    (256, None, {"target_rows_per_fragment": 1000, "compaction_mode": "force_binary_copy", "max_bytes_per_file": 0}),
    (256, "i % 7 = 0", {"target_rows_per_fragment": 1000, "compaction_mode": "try_binary_copy"}),
    (399, None, {"target_rows_per_fragment": 400, "compaction_mode": "try_binary_copy"}),
    (256, None, {"target_rows_per_fragment": 300, "max_source_rows": 1000}),
    (256, "i % 7 = 0", {"target_rows_per_fragment": 300, "max_source_bytes": 3 << 20}),
    (256, None, {"target_rows_per_fragment": 300, "max_source_fragments": 5}),
    (256, "i % 7 = 0", {"target_rows_per_fragment": 300, "excluded_fragment_ids": [3, 7, 7, 99]}),
    (256, None, {"target_rows_per_fragment": 1000, "data_storage_version": "2.0", "num_threads": 1}),
    (256, None, {"target_rows_per_fragment": 1000, "io_buffer_size": 1 << 20, "max_rows_per_group": 10}),
]


@pytest.mark.parametrize(("per_file", "delete", "options"), CASES)
def test_compact_files_options_match_pylance(tmp_path, per_file, delete, options):
    ours, theirs = _twins(tmp_path, per_file, delete)
    if "io_buffer_size" in options:  # (not a compact_files parameter in pylance: Compaction.execute takes it)
        m = Compaction.execute(lancelot.dataset(ours), options)
        pm = PyCompaction.execute(lance.dataset(theirs), options)
    else:
        m = lancelot.dataset(ours).optimize.compact_files(**options)
        pm = lance.dataset(theirs).optimize.compact_files(**options)
    assert counts(m) == counts(pm)
    assert _state(ours) == _state(theirs)


@pytest.mark.parametrize(("per_file", "delete", "options"), [CASES[0], CASES[3], CASES[9]])
def test_distributed_bins_as_pylance(tmp_path, per_file, delete, options):
    """max_bytes_per_file / batch_size / binary copy travel with the tasks: a plan run on workers bins as pylance's."""
    ours, theirs = _twins(tmp_path, per_file, delete)
    ds, pds = lancelot.dataset(ours), lance.dataset(theirs)
    Compaction.commit(ds, [t.execute(lancelot.dataset(ours)) for t in Compaction.plan(ds, options).tasks])
    PyCompaction.commit(pds, [t.execute(pds) for t in PyCompaction.plan(pds, options).tasks])
    assert _state(ours) == _state(theirs)


def test_config_defaults_match_pylance(tmp_path):
    """``lance.compaction.<option>`` table config keys: defaults for the options not given."""
    ours, theirs = _twins(tmp_path, 256, None)
    config = {
        "lance.compaction.max_source_fragments": "5",
        "lance.compaction.data_storage_version": "2.1",
        "lance.compaction.max_bytes_per_file": "0",
        "lance.compaction.batch_size": "100",
    }
    for uri in (ours, theirs):
        lance.dataset(uri).update_config(config)
    lancelot.dataset(ours).compact_files(target_rows_per_fragment=300)
    lance.dataset(theirs).optimize.compact_files(target_rows_per_fragment=300)
    assert _state(ours) == _state(theirs)
    for uri in (ours, theirs):
        lance.dataset(uri).update_config({"lance.compaction.compaction_mode": "bogus"})
    with pytest.raises(ValueError):
        lance.dataset(theirs).optimize.compact_files()
    with pytest.raises(ValueError, match="compaction_mode"):
        lancelot.dataset(ours).compact_files()


BAD = [
    {"bogus_option": 1},
    {"compaction_mode": "bogus"},
    {"max_source_fragments": 0},
    {"max_source_rows": -1},
    {"target_rows_per_fragment": "x"},
    {"data_storage_version": "legacy"},
    {"data_storage_version": "bogus"},
    {"target_rows_per_fragment": 300, "batch_size": 0},
    {"target_rows_per_fragment": 300, "compaction_mode": "force_binary_copy"},  # (deleted rows)
    {"target_rows_per_fragment": 300, "compaction_mode": "force_binary_copy", "data_storage_version": "2.1"},
]


@pytest.mark.parametrize("options", BAD)
def test_bad_options_raise_as_pylance(tmp_path, options):
    ours, theirs = _twins(tmp_path, 256, "i % 7 = 0" if "2.1" not in str(options) else None)

    def run(lib, compaction, uri):
        ds = lib.dataset(uri)
        plan = compaction.plan(ds, options)
        compaction.commit(ds, [t.execute(ds) for t in plan.tasks])

    with pytest.raises(Exception) as theirs_err:
        run(lance, PyCompaction, theirs)
    with pytest.raises(type(theirs_err.value)):
        run(lancelot, Compaction, ours)
    with pytest.raises(type(theirs_err.value)):
        lancelot.dataset(ours).compact_files(**options)
    assert lance.dataset(ours).version == lance.dataset(theirs).version  # nothing committed


def test_compact_files_signature_is_pylances(tmp_path):
    import inspect

    from lancelot.dataset.compact import Optimizer

    def params(f):
        return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]

    assert params(Optimizer.compact_files) == params(
        type(lance.dataset(_twins(tmp_path, 4096, None)[1]).optimize).compact_files
    )
    with pytest.raises(TypeError):
        lancelot.dataset(str(tmp_path / "ours")).optimize.compact_files(io_buffer_size=1)


def _plain(uri: str) -> None:
    lance.write_dataset(pa.table({"a": range(1000)}), uri, max_rows_per_file=100, enable_stable_row_ids=True)


def _added_column(uri: str) -> None:
    lance.write_dataset(pa.table({"a": range(1000)}), uri, max_rows_per_file=100)
    lance.dataset(uri).add_columns({"b": "a * 2"})  # two data files a fragment


def _dropped_column(uri: str) -> None:
    lance.write_dataset(pa.table({"a": range(1000), "b": range(1000)}), uri, max_rows_per_file=100)
    lance.dataset(uri).drop_columns(["b"])  # the files still hold b


def _structs(uri: str) -> None:
    t = pa.table({"s": pa.array([{"x": i, "y": str(i)} for i in range(1000)]), "l": [[i, i] for i in range(1000)]})
    lance.write_dataset(t, uri, max_rows_per_file=100)


def _blobs(uri: str) -> None:
    blob = pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    schema = pa.schema([pa.field("id", pa.int64()), blob])
    table = pa.table({"id": range(100), "blob": pa.array([b"x" * 10] * 100, pa.large_binary())}, schema=schema)
    lance.write_dataset(table, uri, schema=schema, max_rows_per_file=10)


@pytest.mark.parametrize("setup", [_plain, _added_column, _dropped_column, _structs, _blobs])
@pytest.mark.parametrize("mode", ["try_binary_copy", "force_binary_copy"])
def test_binary_copy_as_pylance(tmp_path, setup, mode):
    """Binary copy takes whole fragments (4 of 100 rows, target 250: one of 400, where re-encoding writes 300 + 100);
    fragments it cannot copy are re-encoded (try) or refused (force), as pylance decides."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    setup(ours)
    setup(theirs)
    options = {"target_rows_per_fragment": 250, "compaction_mode": mode}
    try:
        lance.dataset(theirs).optimize.compact_files(**options)
    except OSError:
        with pytest.raises(OSError, match="binary copy is not supported"):
            lancelot.dataset(ours).optimize.compact_files(**options)
        assert lance.dataset(ours).version == lance.dataset(theirs).version
        return
    lancelot.dataset(ours).optimize.compact_files(**options)
    got = [lance.dataset(u) for u in (ours, theirs)]
    counts = [[f.count_rows() for f in d.get_fragments()] for d in got]
    assert counts[0] == counts[1]
    assert got[0].to_table() == got[1].to_table() and got[0].version == got[1].version
