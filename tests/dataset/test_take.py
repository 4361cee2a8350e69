"""``LanceDataset.take`` and ``LanceFragment.take``: rows, row-id columns and errors as pylance's, on a
dataset pylance wrote and deleted from (3 fragments of 15 rows; every fourth row deleted)."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset import deletion
from lancelot.errors import LanceError
from tests.dataset.helpers import table


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    p = str(tmp_path_factory.mktemp("take") / "ds")
    lance.write_dataset(table(40), p, max_rows_per_file=15)
    lance.dataset(p).delete("id % 4 = 1")
    return p


@pytest.mark.parametrize(
    "indices",
    [[0, 3, 5], [], [9, 0, 9, 2], np.array([7, 1], np.uint32), pa.chunked_array([[4], [6, 0]]), range(3)],
    ids=["ascending", "none", "repeats", "uint32", "chunked", "range"],
)
def test_fragment_take_is_pylances(uri: str, indices: object) -> None:
    """Any order and repeats (pylance takes ascending unique indices only: it answers those here)."""
    want = np.asarray(pa.chunked_array(indices).to_numpy() if isinstance(indices, pa.ChunkedArray) else list(indices))
    uniq = sorted(set(want.tolist()))
    theirs = lance.dataset(uri).get_fragments()[1].take(uniq, columns=["id", "s"]).to_pylist()
    ours = lancelot.dataset(uri).get_fragments()[1].take(indices, columns=["id", "s"])
    assert ours.to_pylist() == [theirs[uniq.index(i)] for i in want.tolist()]
    assert ours.schema.names == ["id", "s"]


def test_take_with_row_ids_is_pylances(uri: str) -> None:
    cols = ["id", "_rowid", "_rowaddr"]
    want = lance.dataset(uri).take([20, 3, 20, 0], columns=cols)
    assert lancelot.dataset(uri).take([20, 3, 20, 0], columns=cols).to_pylist() == want.to_pylist()
    frag = lancelot.dataset(uri).get_fragments()[2].take([3, 0], columns=cols).to_pylist()  # (33 deleted)
    assert frag == [
        {"id": 34, "_rowid": 2 << 32 | 4, "_rowaddr": 2 << 32 | 4},
        {"id": 30, "_rowid": 2 << 32, "_rowaddr": 2 << 32},
    ]


@pytest.mark.parametrize(
    "indices",
    [[9, 10, 19, 20, 29], [29, 0, 10, 0], [], np.random.default_rng(4).permutation(np.tile(np.arange(30), 3))],
    ids=["fragment-edges", "any-order", "none", "many"],
)
def test_dataset_take_is_pylances(uri: str, indices: object) -> None:
    """Live rows by index across fragments with deletions: at fragment edges, in any order, none, many with repeats."""
    assert lancelot.dataset(uri).take(indices).equals(lance.dataset(uri).take(indices))


@pytest.mark.parametrize(
    ("bad", "cls", "fragment_too"),
    [
        ([1.5], TypeError, True),
        (np.array([1.0]), TypeError, True),
        (3, TypeError, True),
        ([[1, 2]], TypeError, True),
        (["a"], TypeError, True),
        ([-1], OverflowError, True),
        ([2, 10**6], OSError, True),
        ([2**63], OSError, False),  # (pylance's fragment reads 2**63 as row 0)
    ],
    ids=["float", "floats", "scalar", "nested", "str", "negative", "past-end", "uint64"],
)
def test_take_errors_are_pylances(uri: str, bad: object, cls: type[Exception], fragment_too: bool) -> None:
    calls = [(lance.dataset(uri).take, lancelot.dataset(uri).take)]
    if fragment_too:
        calls.append((lance.dataset(uri).get_fragments()[0].take, lancelot.dataset(uri).get_fragments()[0].take))
    for theirs, ours in calls:
        with pytest.raises(cls):
            theirs(bad)
        with pytest.raises(cls) as e:
            ours(bad)
        assert isinstance(e.value, LanceError) and "take index" in str(e.value)
        if cls is OSError:
            assert isinstance(e.value, IndexError)


def test_fragment_to_table_takes_pylances_positional_arguments(uri: str) -> None:
    args = (["id"], "id > 16", 2, 1, True)  # columns, filter, limit, offset, with_row_id
    want = lance.dataset(uri).get_fragments()[1].to_table(*args)
    assert lancelot.dataset(uri).get_fragments()[1].to_table(*args).to_pylist() == want.to_pylist()


def test_deletion_files_of_a_known_layout_read_as_pyarrow_reads_them(uri: str) -> None:
    """A deletion file whose message layout pyarrow read before is read directly: the same rows; a copy with a buffer
    moved off Arrow's 8-byte alignment (which pyarrow refuses) is still refused."""
    import glob

    from lancelot.errors import CorruptFileError

    for path in sorted(glob.glob(f"{uri}/_deletions/*.arrow")):
        data = open(path, "rb").read()
        with pa.ipc.open_file(pa.py_buffer(data)) as r:
            want = np.unique(r.read_all().column(0).to_numpy())
        for _ in range(2):  # (the second read finds the layout known)
            got = deletion.parse_deletions(data, 0, 15, "here")
            assert got.dtype == np.uint32 and got.tolist() == want.tolist()
        start = data.index(b"\xff\xff\xff\xff", 80)  # the batch message
        moved = bytearray(data)
        body = data[start + 8 : start + 8 + int.from_bytes(data[start + 4 : start + 8], "little")]
        at = start + 8 + body.index((64).to_bytes(8, "little"))  # the values' offset in the body
        moved[at] = 65
        with pytest.raises(CorruptFileError, match="here"):
            deletion.parse_deletions(bytes(moved), 0, 15, "here")


def test_deletion_files_are_parsed_once_per_process(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reopened datasets find the deleted rows already read; a newer deletion file is read, not the old."""
    p = str(tmp_path / "ds")
    lance.write_dataset(table(20), p, max_rows_per_file=10)
    lance.dataset(p).delete("id = 3")
    parsed: list[int] = []
    parse = deletion.parse_deletions
    monkeypatch.setattr(deletion, "parse_deletions", lambda *a: parsed.append(1) or parse(*a))
    for _ in range(2):
        assert lancelot.dataset(p).take([3, 0]).equals(lance.dataset(p).take([3, 0]))
    assert len(parsed) == 1
    lance.dataset(p).delete("id = 4")
    assert lancelot.dataset(p).take([3, 0]).equals(lance.dataset(p).take([3, 0]))
    assert len(parsed) == 2
