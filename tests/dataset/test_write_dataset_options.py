"""``write_dataset``'s options beyond the data's layout: ``max_bytes_per_file``, ``progress``
(pylance's ``FragmentWriteProgress``) and ``auto_cleanup_options``, each against pylance 14."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.progress import FragmentWriteProgress

import lancelot
from lancelot.dataset.commit import load_transaction
from lancelot.dataset.write_options import humantime
from tests.dataset.helpers import LIBS, table


class Events(FragmentWriteProgress):
    """The calls a writer makes: (hook, fragment id, rows, files)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, int, int]] = []

    def begin(self, fragment, **kwargs) -> None:
        self.seen.append(("begin", fragment.id, fragment.physical_rows or 0, len(fragment.files)))

    def complete(self, fragment, **kwargs) -> None:
        self.seen.append(("complete", fragment.id, fragment.physical_rows, len(fragment.files)))


@pytest.mark.parametrize("rows_per_file", [15, 20])
def test_progress_calls_as_pylance(tmp_path, rows_per_file):
    """``begin`` per data file opened, ``complete`` per file closed full: pylance 14 leaves out the
    last file's ``complete`` when the input ends before the file fills (40 rows in 15s: 2 of 3)."""
    seen = []
    for lib in LIBS.values():
        ev = Events()
        lib.write_dataset(table(40), tmp_path / lib.__name__, max_rows_per_file=rows_per_file, progress=ev)
        seen.append(ev.seen)
    assert seen[0] == seen[1]
    assert [e[0] for e in seen[1]].count("complete") == 40 // rows_per_file


def test_max_bytes_per_file_starts_new_fragments(tmp_path):
    """A file is closed once the bytes written to it reach the limit, checked after each batch:
    fragments end on batch boundaries, each but the last holds at least the limit; pylance reads
    them. One batch is never split by bytes (pylance's rule too)."""
    t = pa.table({"id": np.arange(3000, dtype=np.int64)})
    src = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=300))
    ds = lancelot.write_dataset(src, tmp_path / "ours", max_bytes_per_file=3000, max_page_bytes=1024)
    frags = lance.dataset(tmp_path / "ours").get_fragments()
    assert len(frags) > 1
    assert all(f.count_rows() % 300 == 0 for f in frags)
    assert all(f.data_files()[0].file_size_bytes >= 3000 for f in frags[:-1])
    assert lance.dataset(tmp_path / "ours").to_table() == t == ds.to_table()
    for lib in LIBS.values():
        one = lib.write_dataset(t, tmp_path / f"one_{lib.__name__}", max_bytes_per_file=1)
        assert len(one.get_fragments()) == 1
    with pytest.raises(OverflowError):
        lancelot.write_dataset(t, tmp_path / "neg", max_bytes_per_file=-1)


@pytest.mark.parametrize(
    "options",
    [
        {"interval": 5, "older_than_seconds": 60},
        {"interval": 3, "older_than_seconds": 40_000_000},
        {"interval": 0, "older_than_seconds": 0},
        {"interval": 7},  # the other key gets pylance's default
        {"older_than_seconds": 90061},
    ],
)
def test_auto_cleanup_options_are_pylance_s_config(tmp_path, options):
    """Stored as the table config keys pylance writes (and reads), only by the write that creates
    the dataset: a later write's options change nothing."""
    configs = []
    for lib in LIBS.values():
        p = tmp_path / lib.__name__
        lib.write_dataset(table(5), p, mode="append", auto_cleanup_options=options)
        lib.write_dataset(table(5), p, mode="overwrite", auto_cleanup_options={"interval": 9, "older_than_seconds": 9})
        configs.append((lance.dataset(p).config(), lancelot.dataset(p).config()))
    assert configs[0][0] == configs[0][1] == configs[1][0] == configs[1][1]
    assert set(configs[1][0]) == {"lance.auto_cleanup.interval", "lance.auto_cleanup.older_than"}
    for lib in LIBS.values():  # the Overwrite transaction upserts them, as pylance's does
        ds = lancelot.dataset(tmp_path / lib.__name__, version=1)
        assert dict(load_transaction(ds.store, ds.manifest_file).overwrite.config_upsert_values) == configs[0][0]


def test_no_auto_cleanup_options_no_config(tmp_path):
    lancelot.write_dataset(table(5), tmp_path / "d")
    assert lance.dataset(tmp_path / "d").config() == {}


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(61, "1m 1s"), (86400, "1day"), (172800, "2days"), (2630017, "1month 1s"), (63115200, "2years")],
)
def test_humantime_as_pylance_prints_durations(seconds, text):
    assert humantime(seconds) == text


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
