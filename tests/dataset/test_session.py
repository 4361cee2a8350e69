"""``LanceDataset.session()`` and ``dataset(metadata_cache_size_bytes=, session=)`` beside pylance's: the same calls
on both libraries, the same properties (a read fills the cache, a capacity bounds it, 0 keeps nothing, a session is
shared by the datasets given it), and lancelot's reads stay right whatever the cache keeps."""

from __future__ import annotations

import re

import lance
import pyarrow as pa
import pytest

import lancelot
from lancelot.dataset.session import Session, file_bytes
from tests.dataset.helpers import LIBS

SESSIONS = {"pylance": lance.Session, "lancelot": Session}


def _metadata(session) -> int:
    """The metadata bytes a session reports (pylance's repr is the one place both libraries give them)."""
    m = re.fullmatch(r"Session\(index_cache_size_bytes=(\d+), metadata_cache_size_bytes=(\d+)\)", repr(session))
    assert m is not None, repr(session)
    return int(m.group(2))


@pytest.fixture(scope="module")
def uri(tmp_path_factory):
    path = tmp_path_factory.mktemp("session") / "ds"
    table = pa.table({"id": range(600), "s": [f"v{i}" for i in range(600)], "x": [i * 0.5 for i in range(600)]})
    lance.write_dataset(table, path, max_rows_per_file=100)
    return str(path)


@pytest.mark.parametrize("lib", LIBS)
def test_reads_fill_the_default_session(uri, lib) -> None:
    mod = LIBS[lib]
    ds = mod.dataset(uri)
    before = _metadata(ds.session())
    ds.to_table()
    after = ds.session()
    assert _metadata(after) > before and after.size_bytes() >= _metadata(after) > 0
    assert after.index_cache_size_bytes() == 0
    assert ds.session().is_same_as(ds.session())
    assert not ds.session().is_same_as(mod.dataset(uri).session())


@pytest.mark.parametrize("lib", LIBS)
def test_a_capacity_bounds_the_metadata(uri, lib) -> None:
    mod = LIBS[lib]
    want = lance.dataset(uri).to_table()
    for capacity in (0, 1500, 10**7):
        ds = mod.dataset(uri, metadata_cache_size_bytes=capacity)
        assert ds.to_table() == want and ds.take([5, 250, 599]) == want.take([5, 250, 599])
        held = _metadata(ds.session())
        assert held <= capacity if lib == "pylance" or capacity != 1500 else ds.file_cache.held <= capacity
        if capacity == 0:
            assert held == 0


@pytest.mark.parametrize("lib", LIBS)
def test_a_session_is_shared(uri, lib) -> None:
    mod, session_class = LIBS[lib], SESSIONS[lib]
    s = session_class(metadata_cache_size_bytes=10**7)
    assert _metadata(s) == 0
    a, b = mod.dataset(uri, session=s), mod.dataset(uri, session=s)
    assert a.session().is_same_as(s) and b.session().is_same_as(a.session())
    rows = [3, 150, 420, 599]
    assert a.take(rows) == b.take(rows) == lance.dataset(uri).take(rows)
    one = _metadata(s)
    assert one > 0
    c = mod.dataset(uri, session=session_class(metadata_cache_size_bytes=10**7))
    c.take(rows)
    assert 0 < _metadata(c.session()) <= one  # a and b together kept no more than c alone (the files once)
    assert not mod.dataset(uri).session().is_same_as(s)


@pytest.mark.parametrize("lib", LIBS)
def test_no_metadata_cache_survives_a_commit(tmp_path, lib) -> None:
    mod = LIBS[lib]
    lance.write_dataset(pa.table({"id": range(300)}), tmp_path / "ds", max_rows_per_file=100)
    ds = mod.dataset(tmp_path / "ds", metadata_cache_size_bytes=0)
    ds.delete("id % 7 = 0")
    assert ds.version == 2
    got = ds.to_table()
    assert got == lance.dataset(tmp_path / "ds").to_table()
    if lib == "lancelot":  # the fragments still hold their deleted positions (read once per dataset object)
        held = sum(f.deleted_positions().nbytes for f in ds.get_fragments())
        assert _metadata(ds.session()) == held
        assert ds.file_cache is not None and len(ds.file_cache) == 0
    else:
        assert _metadata(ds.session()) == 0


@pytest.mark.parametrize("lib", LIBS)
def test_a_checkout_shares_the_session(tmp_path, lib) -> None:
    mod = LIBS[lib]
    lance.write_dataset(pa.table({"id": range(10)}), tmp_path / "ds")
    lance.write_dataset(pa.table({"id": range(10, 15)}), tmp_path / "ds", mode="append")
    for capacity in (None, 0):
        ds = mod.dataset(tmp_path / "ds", metadata_cache_size_bytes=capacity)
        old = ds.checkout_version(1)
        assert old.session().is_same_as(ds.session())
        assert old.to_table() == lance.dataset(tmp_path / "ds", version=1).to_table()
        if capacity == 0:
            assert _metadata(ds.session()) == 0


def test_lancelot_default_session_counts_its_open_files(uri) -> None:
    """The default session reports the process-wide cache's entries of the dataset's own files: their metadata."""
    from lancelot.dataset import open_files

    open_files._FILES.clear()
    ds = lancelot.dataset(uri)
    ds.to_table(columns=["id"])
    files = [ds.data_file(df, "t") for f in ds.manifest.fragments for df in f.files]
    opened = sum(file_bytes(lf) for lf in files)
    held = ds.session().size_bytes()
    assert held >= opened > 0
    open_files._FILES.clear()  # the process drops them: the session no longer counts them
    assert ds.session().size_bytes() == held - opened


def test_lancelot_refuses_what_it_cannot_honour() -> None:
    with pytest.raises(ValueError, match="backend"):
        Session(metadata_cache_backend="moka://?capacity=1048576")
    with pytest.raises(ValueError):
        Session(metadata_cache_size_bytes=-1)
