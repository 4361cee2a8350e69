"""Golden files: small .lance files written by older Lance releases (tests/data/README.md).

Each 2.0 file (footer 0.3) must read in lancelot exactly as pylance 14.0.2 reads it: whole,
column by column, by row ranges and by takes.  Files of the legacy formats (footer 0.1 / 0.2,
"v1") get a clear UnsupportedVersionError from lancelot, as pylance's file reader refuses them.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import lancelot

lance_file = pytest.importorskip("lance.file", reason="pylance (the test oracle) is not installed")

DATA = Path(__file__).parents[1] / "data" / "reference"
FILES = sorted(DATA.glob("*.lance"))


def footer_version(path: Path) -> tuple[int, int]:
    tail = path.read_bytes()[-8:]
    assert tail[4:] == b"LANC"
    return struct.unpack("<HH", tail[:4])


#: 2.0 files pylance's own file reader cannot read whole, with the reason
PYLANCE_FAILS = {
    # Lance 0.13 stored each string/binary field as two columns (a List of offsets, then u8
    # items); the dataset layer maps fields to columns from its manifest.  pylance's file
    # reader assumes one column per such field, so it reads "strings" (columns 1-2) but then
    # takes column 2 as "bins" and fails; lancelot sees the List encoding of a string field's
    # first page and gives the field both columns, so it reads what pylance's dataset reads.
    "0.13.0-string_encoding-data-19080b7e.lance": "cannot read columns of differing lengths together",
}

V2_0 = [p for p in FILES if footer_version(p) == (0, 3)]
LEGACY = [p for p in FILES if footer_version(p) in ((0, 1), (0, 2))]


def test_golden_files_present():
    """Every file in the directory is either a 2.0 file or a legacy one (and there are some)."""
    assert len(V2_0) >= 15 and len(LEGACY) >= 3
    assert len(V2_0) + len(LEGACY) == len(FILES)
    assert sum(p.stat().st_size for p in FILES) < 512 * 1024


@pytest.mark.parametrize("path", [p for p in V2_0 if p.name not in PYLANCE_FAILS], ids=lambda p: p.name)
def test_golden_file_reads_as_pylance_reads(path):
    expected = lance_file.LanceFileReader(str(path)).read_all().to_table()
    f = lancelot.LanceFile(path)
    assert f.version == "2.0"
    assert f.num_rows == expected.num_rows
    assert f.schema.equals(expected.schema, check_metadata=True)
    assert f.read().equals(expected)
    for name in expected.column_names:
        assert f.read(columns=[name]).equals(expected.select([name]))
    n = expected.num_rows
    if n:
        rows = sorted({0, n // 3, n // 2, n - 1})
        assert f.take(rows).equals(expected.take(rows))
        assert f.take(rows[::-1]).equals(expected.take(rows[::-1]))
        assert f.read_range(n // 4, n - n // 4).equals(expected.slice(n // 4, n - 2 * (n // 4)))
        got = lance_file.LanceFileReader(str(path)).take_rows(rows).to_table()
        assert f.take(rows).equals(got)


@pytest.mark.parametrize("name", sorted(PYLANCE_FAILS))
def test_golden_file_pylance_fails(name):
    path = DATA / name
    with pytest.raises(Exception, match=PYLANCE_FAILS[name]):
        lance_file.LanceFileReader(str(path)).read_all().to_table()
    # the column before the two-column string field reads alike in both
    f = lancelot.LanceFile(path)
    expected = lance_file.LanceFileReader(str(path), columns=["numbers"]).read_all().to_table()
    assert f.read(columns=["numbers"]).equals(expected)
    # the whole file as pylance's dataset layer reads it (the same bytes, in reference_datasets/)
    lance = pytest.importorskip("lance")
    whole = lance.dataset(DATA.parent / "reference_datasets" / "0.13.0" / "0.13.0_string_encoding.lance").to_table()
    assert whole.column("strings").to_pylist() == ["foo", "bar", "baz"]
    assert f.read().equals(whole)
    for name in whole.column_names:
        assert f.read(columns=[name]).equals(whole.select([name]))
    assert f.take([2, 0, 2]).equals(whole.take([2, 0, 2]))
    assert f.read_range(1, 3).equals(whole.slice(1, 2))


@pytest.mark.parametrize("path", LEGACY, ids=lambda p: p.name)
def test_legacy_golden_file_is_unsupported(path):
    major, minor = footer_version(path)
    with pytest.raises(Exception, match="Version conflict"):
        lance_file.LanceFileReader(str(path)).read_all()
    with pytest.raises(lancelot.UnsupportedVersionError, match=rf"legacy Lance format {major}\.{minor}") as err:
        lancelot.LanceFile(path)
    assert str(path) in str(err.value)
