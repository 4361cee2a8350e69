"""Writer profiles (lancelot/encodings/structural/write_profile.py): General compression of mini-block
chunks where it pays, every choice a file pylance reads equal, takes included."""

from __future__ import annotations

import decimal
import os
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

from lancelot.format.container import read_metadata, unpack_encoding
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.io.source import open_source
from lancelot.reader import LanceFile
from lancelot.writer import write_table

lance_file = pytest.importorskip("lance.file")

N = 20_000
VERSIONS = ["2.1", "2.2"]


def _table(seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    cents = rng.integers(100, 10_000_000, N)
    prices = pa.array([decimal.Decimal(int(c)).scaleb(-2) for c in cents], pa.decimal128(15, 2))
    words = np.array("lance pylance arrow parquet column page chunk buffer quick brown fox".split())
    text = [" ".join(words[rng.integers(0, len(words), 6)]) for _ in range(N)]
    keys = np.sort(rng.integers(0, 1 << 40, N))  # sorted: small deltas, General pays over Flat
    price_null = rng.random(N) < 0.05
    return pa.table(
        {
            "price": prices,
            "price_nulls": pa.array(
                [None if m else v for m, v in zip(price_null, prices.to_pylist())], pa.decimal128(15, 2)
            ),
            "text": pa.array(text),
            "key": pa.array(keys, pa.int64()),
            "noise": pa.array(rng.integers(-(1 << 62), 1 << 62, N), pa.int64()),  # incompressible: left alone
            "runs": pa.array(np.repeat(rng.integers(0, 1 << 30, N // 40), 40), pa.int64()),  # RLE: two buffers
        }
    )


def _value_compression(path: str, column: int) -> pb.CompressiveEncoding:
    src = open_source(path)
    md = read_metadata(src)
    layout = unpack_encoding(src, md.columns[column].pages[0].encoding, pb.PageLayout)
    assert layout.WhichOneof("layout") == "mini_block_layout"
    return layout.mini_block_layout.value_compression


def _write(tmp_path, table: pa.Table, version: str, profile: str | None, **kw) -> str:
    path = str(tmp_path / f"{profile}-{version}.lance")
    write_table(table, path, version=version, profile=profile, **kw)
    return path


@pytest.mark.parametrize("version", VERSIONS)
def test_profiles_read_equal_by_both_libraries_and_shrink(tmp_path, version):
    table = _table()
    sizes = {}
    rows = np.unique(np.random.default_rng(1).integers(0, N, 50))  # pylance takes ascending rows
    for profile in ("fast", "balanced", "compact"):
        path = _write(tmp_path, table, version, profile)
        sizes[profile] = os.path.getsize(path)
        assert lance_file.LanceFileReader(path).read_all().to_table().equals(table), profile
        with LanceFile(path) as f:
            assert f.read().equals(table), profile
            assert f.take(rows).equals(table.take(rows)), profile
        theirs = lance_file.LanceFileReader(path).take_rows(rows.tolist()).to_table()
        assert theirs.equals(table.take(rows)), profile
    assert sizes["compact"] < sizes["balanced"] < sizes["fast"], sizes


@pytest.mark.parametrize("version", VERSIONS)
def test_what_each_profile_chooses(tmp_path, version):
    table = _table()
    fast = _write(tmp_path, table, version, "fast")
    balanced = _write(tmp_path, table, version, "balanced")
    compact = _write(tmp_path, table, version, "compact")
    # decimals: flat under fast (as pylance writes them), General lz4 / zstd around them otherwise
    assert _value_compression(fast, 0).WhichOneof("compression") == "flat"
    for path, scheme in ((balanced, pb.COMPRESSION_ALGORITHM_LZ4), (compact, pb.COMPRESSION_ALGORITHM_ZSTD)):
        for column in (0, 1):
            enc = _value_compression(path, column)
            assert enc.WhichOneof("compression") == "general"
            assert enc.general.compression.scheme == scheme
            assert enc.general.values.WhichOneof("compression") == "flat"
    # RLE runs (0.2 bytes a value): what zstd saves is not worth a take's inflation under compact
    assert _value_compression(compact, 5).WhichOneof("compression") == "rle"
    # random 64-bit integers do not compress: no profile wraps them
    for path in (fast, balanced, compact):
        assert _value_compression(path, 4).WhichOneof("compression") != "general"


def test_balanced_leaves_pages_of_runs_as_they_are(tmp_path):
    """Sparse sorted keys repeated 1-7 times (TPC-H l_orderkey's shape) make Rle pages at 2.1 that lz4
    shrinks by 44%, but a take searches runs, while lz4 would have it inflate a chunk per row:
    balanced keeps them Rle, and both libraries read them equal.  (At 2.2 they become a dictionary.)"""
    rng = np.random.default_rng(5)
    keys = np.repeat(np.cumsum(rng.integers(1, 33, 60_000)), rng.integers(1, 8, 60_000))[:200_000]
    table = pa.table({"k": pa.array(keys.astype(np.int64))})
    path = _write(tmp_path, table, "2.1", "balanced")
    assert _value_compression(path, 0).WhichOneof("compression") == "rle"
    assert lance_file.LanceFileReader(path).read_all().to_table().equals(table)
    rows = np.unique(rng.integers(0, len(keys), 100))
    with LanceFile(path) as f:
        assert f.take(rows).equals(table.take(rows))


def _size_only(monkeypatch) -> None:
    """Compact as if a take's inflation cost nothing: the smallest choice wins on every page."""
    from lancelot.encodings.structural import write_profile

    profile = replace(write_profile.PROFILES["compact"], bytes_per_us=1e-9)
    monkeypatch.setitem(write_profile.PROFILES, "compact", profile)
    monkeypatch.setattr(write_profile, "PRICES", np.array([1e-9]))  # (a file's solved price: FilePrice)


def test_compact_weighs_bytes_against_take_cost(monkeypatch):
    """Compact picks, per page, the scheme and chunk size with the fewest bytes per value plus
    ``bytes_per_us`` per microsecond of a take's inflation: zstd in the largest chunks when bytes are
    all that count, smaller chunks or nothing as a microsecond gets dearer; every plan reads equal."""
    from lancelot.encodings.strategy import EncodingOptions
    from lancelot.encodings.structural import write_profile
    from lancelot.encodings.structural.write_strategy import plan_miniblock

    text = _table().column("text").combine_chunks()
    chosen = {}
    for bpu in (1e-9, 0.1, 100.0):
        monkeypatch.setitem(
            write_profile.PROFILES, "compact", replace(write_profile.PROFILES["compact"], bytes_per_us=bpu)
        )
        plan = plan_miniblock(text, opts=EncodingOptions(profile="compact"))
        enc = plan.chunk(0, 64)[0]
        chosen[bpu] = (enc.WhichOneof("compression"), plan.chunk_target)
    assert chosen[1e-9] == ("general", 16 * 1024)
    assert chosen[0.1][0] == "general" and chosen[0.1][1] < 16 * 1024
    assert chosen[100.0][0] != "general"


def test_the_default_profile_is_balanced(tmp_path):
    table = _table()
    default = str(tmp_path / "default.lance")
    write_table(table, default, version="2.2")
    balanced = _write(tmp_path, table, "2.2", "balanced")
    with open(default, "rb") as a, open(balanced, "rb") as b:
        assert a.read() == b.read()


def test_field_metadata_compression_wins_over_the_profile(tmp_path):
    table = _table()
    schema = table.schema.set(0, table.schema.field(0).with_metadata({"lance-encoding:compression": "none"}))
    table = table.cast(schema)
    path = _write(tmp_path, table, "2.2", "compact")
    assert _value_compression(path, 0).WhichOneof("compression") == "flat"
    assert _value_compression(path, 1).WhichOneof("compression") == "general"
    assert lance_file.LanceFileReader(path).read_all().to_table().equals(table)


def test_an_unknown_profile_is_refused(tmp_path):
    with pytest.raises(ValueError, match="profile must be one of fast, balanced, compact"):
        write_table(_table(), str(tmp_path / "x.lance"), profile="tiny")
    assert not os.path.exists(tmp_path / "x.lance")


@pytest.mark.parametrize("few", [0, 32])
def test_inflating_bad_chunks_is_a_clear_error(monkeypatch, few):
    """The take path's inflation of General chunks checks every size it reads (miniblock_general),
    chunk by chunk (a few) or with arrays (many)."""
    from lancelot.encodings.compression.general import buffer_compression, compress_buffer
    from lancelot.encodings.structural import miniblock_general
    from lancelot.encodings.structural.miniblock_general import inflate_chunks
    from lancelot.errors import CorruptFileError

    monkeypatch.setattr(miniblock_general, "FEW_CHUNKS", few)

    lz4 = buffer_compression("lz4")
    body = compress_buffer(lz4, np.arange(64, dtype=np.uint8))
    header = np.zeros(8, np.uint8)
    header[2:4] = np.frombuffer(len(body).to_bytes(2, "little"), np.uint8)
    good = np.concatenate([header, body])
    data, pos, size = inflate_chunks(
        good, np.array([0]), np.array([len(good)]), has_def=0, word=2, nb=1, compression=lz4
    )
    assert data[8 : 8 + 64].tolist() == list(range(64)) and size.tolist() == [72]
    with pytest.raises(CorruptFileError, match="shorter than its header"):
        inflate_chunks(good, np.array([0]), np.array([3]), has_def=0, word=2, nb=1, compression=lz4)
    with pytest.raises(CorruptFileError, match="runs past its chunk"):
        inflate_chunks(good, np.array([0]), np.array([len(good) - 1]), has_def=0, word=2, nb=1, compression=lz4)
    garbage = good.copy()
    garbage[8:12] = 255  # the size prefix claims far more than the body can hold
    with pytest.raises(CorruptFileError):
        inflate_chunks(garbage, np.array([0]), np.array([len(good)]), has_def=0, word=2, nb=1, compression=lz4)


def _tiny_table(rows: int = 25) -> pa.Table:
    """A table like TPC-H nation: a key, a name, a small foreign key and a sentence of text per row."""
    rng = np.random.default_rng(3)
    words = np.array("final quickly regular deposits packages express ideas furiously carefully pending".split())
    return pa.table(
        {
            "key": pa.array(np.arange(rows, dtype=np.int64)),
            "name": pa.array([f"NATION{i:02d}" for i in range(rows)]),
            "region": pa.array(rng.integers(0, 5, rows), pa.int64()),
            "comment": pa.array([" ".join(words[rng.integers(0, len(words), 12)]) for _ in range(rows)]),
        }
    )


@pytest.mark.parametrize("rows", [5, 25])
def test_tiny_tables_are_at_most_parquets_size(tmp_path, rows):
    """Tiny pages get General compression too (zstd under balanced: inflating a few KiB costs
    microseconds), the zone maps take a few hundred bytes: the default file is no larger than
    Parquet's (pyarrow's defaults, snappy), the compact one no larger than Parquet with zstd."""
    import pyarrow.parquet as pq

    table = _tiny_table(rows)
    pq.write_table(table, tmp_path / "snappy.parquet")
    pq.write_table(table, tmp_path / "zstd.parquet", compression="zstd")
    sizes = {}
    for profile in ("balanced", "compact"):
        path = _write(tmp_path, table, "2.2", profile)
        sizes[profile] = os.path.getsize(path)
        assert lance_file.LanceFileReader(path).read_all().to_table().equals(table), profile
        with LanceFile(path) as f:
            assert f.read().equals(table) and f.take([0, rows - 1]).equals(table.take([0, rows - 1]))
            assert f.zone_maps() is not None and f.zone_maps().row_ranges_matching([("key", ">", rows)]) == []
    assert _value_compression(_write(tmp_path, table, "2.2", "balanced"), 3).general.compression.scheme == (
        pb.COMPRESSION_ALGORITHM_ZSTD
    )
    assert sizes["balanced"] <= os.path.getsize(tmp_path / "snappy.parquet"), sizes
    assert sizes["compact"] <= os.path.getsize(tmp_path / "zstd.parquet"), sizes


@pytest.mark.parametrize("few", [0, 32])
def test_takes_inflate_few_chunks_and_many_alike(tmp_path, monkeypatch, few):
    """miniblock_general rebuilds up to FEW_CHUNKS chunks with Python integers, more with arrays: both
    give the rows asked, with definition levels (nulls) and second buffers (RLE) in the chunks."""
    from lancelot.encodings.structural import miniblock_general

    monkeypatch.setattr(miniblock_general, "FEW_CHUNKS", few)
    _size_only(monkeypatch)
    table = _table()
    path = _write(tmp_path, table, "2.2", "compact")
    assert _value_compression(path, 1).WhichOneof("compression") == "general"  # nulls: definition levels
    assert _value_compression(path, 5).general.values.WhichOneof("compression") == "rle"  # two buffers
    rng = np.random.default_rng(few)
    with LanceFile(path) as f:
        for k in (1, 3, 10, 40):
            rows = np.sort(rng.choice(N, k, replace=False))
            assert f.take(rows).equals(table.take(rows)), k


def test_the_lean_inflater_checks_as_decompress_buffer_does():
    """general.inflater (takes and scans of General chunks): the bytes decompress_buffer gives, and a
    CorruptFileError for a bad frame or a size prefix that does not match; bare zstd frames (older
    files) go the careful way."""
    import zstandard

    from lancelot.encodings.compression.general import (
        buffer_compression,
        compress_buffer,
        decompress_buffer,
        inflater,
    )
    from lancelot.errors import CorruptFileError

    raw = np.arange(3000, dtype=np.uint16).view(np.uint8)
    for scheme in ("zstd", "lz4"):
        comp = buffer_compression(scheme, 15 if scheme == "zstd" else None)
        buf = compress_buffer(comp, raw).tobytes()
        inflate = inflater(comp)
        assert inflate(buf) == raw.tobytes() == decompress_buffer(comp, buf).tobytes()
        assert inflate(memoryview(buf)) == raw.tobytes()
        with pytest.raises(CorruptFileError):
            inflate(buf[: len(buf) // 2])  # truncated body
        width = 8 if scheme == "zstd" else 4
        wrong = (raw.nbytes - 1).to_bytes(width, "little") + buf[width:]
        with pytest.raises(CorruptFileError):
            inflate(wrong)  # the prefix says one byte less than the body holds
    bare = zstandard.ZstdCompressor().compress(raw.tobytes())
    assert inflater(buffer_compression("zstd"))(bare) == raw.tobytes()


def test_compact_solves_each_files_price_for_the_take_budget(tmp_path, monkeypatch):
    """Compact's price of a microsecond is solved once per file, on a sample of every column, before
    the first page (FilePrice): the least of PRICES whose choices keep the modelled take within
    TAKE_BUDGET times balanced's; every page of the file is then priced so.  A tighter budget dears
    the price and grows the file; both files read equal."""
    from lancelot.encodings.structural import write_profile

    solved: list[tuple[float, list]] = []
    used: list[float] = []
    real_solve, real_cheapest = write_profile.solve_price, write_profile._cheapest

    def solve(samples, budget=None):
        price = real_solve(samples, budget)
        solved.append((price, samples))
        return price

    def cheapest(plan, costs, bytes_per_us):
        used.append(bytes_per_us)
        return real_cheapest(plan, costs, bytes_per_us)

    monkeypatch.setattr(write_profile, "solve_price", solve)
    monkeypatch.setattr(write_profile, "_cheapest", cheapest)
    table = _table()
    sizes, prices = {}, {}
    for budget in (3.0, 1.05):
        monkeypatch.setattr(write_profile, "TAKE_BUDGET", budget)
        solved.clear(), used.clear()
        path = _write(tmp_path, table, "2.2", "compact", max_page_bytes=64 * 1024)  # several pages a column
        assert len(solved) == 1, "one price per file"
        price, samples = solved[0]
        assert len(samples) == table.num_columns and used and all(u == price for u in used)
        assert len(used) > table.num_columns  # (pages beyond the first of each column priced alike)

        def take_us(p: float, samples=samples) -> float:
            return sum(s.base_us + min(s.options, key=lambda o: o.bytes_per_item + p * o.us).us for s in samples)

        balanced = sum(s.base_us + s.inflate_us for s in samples)
        assert take_us(price) <= budget * balanced
        lower = write_profile.PRICES[write_profile.PRICES < price]
        assert not len(lower) or take_us(float(lower[-1])) > budget * balanced  # the least such price
        sizes[budget], prices[budget] = os.path.getsize(path), price
        assert lance_file.LanceFileReader(path).read_all().to_table().equals(table)
        with LanceFile(path) as f:
            assert f.take([3, 7, N - 1]).equals(table.take([3, 7, N - 1]))
    assert prices[1.05] > prices[3.0] and sizes[1.05] > sizes[3.0], (prices, sizes)


def test_compact_keeps_the_tighter_of_two_zstd_levels(tmp_path, monkeypatch):
    """Compact probes zstd at ZSTD_LEVEL and ZSTD_FAST_LEVEL in each chunk size and keeps the tighter:
    decimals like TPC-H's account balances pack tighter at level 9 (fewer, longer matches, which also
    inflate sooner), words at 15; the file is smaller than with level 15 alone and reads equal."""
    from lancelot.encodings.structural import write_profile

    monkeypatch.setattr(write_profile.zstd_frames, "raw_literals_available", lambda: False)  # (two levels alone)
    monkeypatch.setattr(write_profile, "PRICES", np.array([0.8]))  # (both files at one price)
    rng = np.random.default_rng(3)
    cents = rng.integers(-99_999, 1_000_000, N)
    table = pa.table(
        {
            "balance": pa.array([decimal.Decimal(int(c)).scaleb(-2) for c in cents], pa.decimal128(15, 2)),
            "text": _table().column("text"),
        }
    )
    both = _write(tmp_path, table, "2.2", "compact")
    levels = [_value_compression(both, c).general.compression.level for c in (0, 1)]
    assert levels == [write_profile.ZSTD_FAST_LEVEL, write_profile.ZSTD_LEVEL]
    monkeypatch.setattr(write_profile, "ZSTD_FAST_LEVEL", write_profile.ZSTD_LEVEL)
    alone = str(tmp_path / "level-15-alone.lance")
    write_table(table, alone, version="2.2", profile="compact")
    assert os.path.getsize(both) < os.path.getsize(alone)
    rows = [0, 17, 4_321, N - 1]
    assert lance_file.LanceFileReader(both).read_all().to_table().equals(table)
    assert lance_file.LanceFileReader(both).take_rows(rows).to_table().equals(table.take(rows))
    with LanceFile(both) as f:
        assert f.take(rows).equals(table.take(rows))


@pytest.mark.parametrize("word", [2, 4])
def test_few_and_many_chunks_are_rebuilt_to_the_same_bytes(monkeypatch, word):
    """Both ways of inflating General chunks (miniblock_general: Python integers up to FEW_CHUNKS,
    arrays beyond) give the same bytes, for headers with definition levels, two value buffers and
    2- or 4-byte buffer sizes (large chunks)."""
    from lancelot.encodings.compression.general import buffer_compression, compress_buffer
    from lancelot.encodings.structural import miniblock_general
    from lancelot.encodings.structural.miniblock_general import inflate_chunks

    zstd = buffer_compression("zstd", 3)
    rng = np.random.default_rng(word)

    def pad(b: bytes) -> bytes:
        return b + bytes(-len(b) % 8)

    chunks, inflated = [], []
    for k in range(5):
        levels = rng.integers(0, 256, 2 * (3 + k), dtype=np.uint8).tobytes()
        raw = np.repeat(rng.integers(0, 9, 40 + k, dtype=np.uint8), 7).tobytes()
        first = compress_buffer(zstd, np.frombuffer(raw, np.uint8)).tobytes()
        second = rng.integers(0, 256, 5 + k, dtype=np.uint8).tobytes()
        header = (3 + k).to_bytes(2, "little") + len(levels).to_bytes(2, "little")
        header += len(first).to_bytes(word, "little") + len(second).to_bytes(word, "little")
        chunks.append(pad(header) + pad(levels) + pad(first) + pad(second))
        header = header[:4] + len(raw).to_bytes(word, "little") + header[4 + word :]
        inflated.append(pad(header) + pad(levels) + pad(raw) + pad(second))
    data = np.frombuffer(b"".join(chunks), np.uint8)
    size = np.array([len(c) for c in chunks])
    pos = np.concatenate([[0], np.cumsum(size)[:-1]])
    made = {}
    for few in (0, 32):
        monkeypatch.setattr(miniblock_general, "FEW_CHUNKS", few)
        made[few] = inflate_chunks(data, pos, size, has_def=1, word=word, nb=2, compression=zstd)
    assert all(np.array_equal(a, b) for a, b in zip(made[0], made[32]))
    assert made[32][0].tobytes() == b"".join(inflated)


def test_pages_of_one_column_under_two_zstd_levels_share_a_point_kernel_call():
    """A compact column may hold pages at zstd levels 15 and 9 (each page keeps its tighter): what a
    take groups pages by for one kernel call (PointReader.codes) holds the scheme, not the level,
    which inflation does not need; lz4 and zstd pages stay apart."""
    from lancelot.encodings.compression.general import buffer_compression, general_encoding
    from lancelot.encodings.structural.miniblock_points import PointReader

    def codes(scheme: str, level: int | None) -> tuple[object, ...]:
        flat = pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=128))
        layout = pb.MiniBlockLayout(
            num_buffers=1, value_compression=general_encoding(buffer_compression(scheme, level), flat)
        )
        reader = PointReader.of(layout, 2)
        assert reader is not None
        return reader.codes

    assert codes("zstd", 15) == codes("zstd", 9) != codes("lz4", None)


def test_compact_may_leave_zstds_literals_raw(tmp_path, monkeypatch):
    """Where a microsecond is dear, compact takes zstd frames whose literals stay uncompressed
    (zstd_frames.py: they inflate sooner, for a few more bytes); pylance and lancelot read them equal."""
    from lancelot.encodings.structural import write_profile

    if not write_profile.zstd_frames.raw_literals_available():
        pytest.skip("no libzstd that takes ZSTD_c_literalCompressionMode")
    chosen: list[str] = []

    def cheapest(plan, costs, bytes_per_us):
        best = min(write_profile._options_of(plan, costs), key=lambda o: o.bytes_per_item + bytes_per_us * o.us)
        chosen.append(best.label)
        return best.plan

    monkeypatch.setattr(write_profile, "_cheapest", cheapest)
    monkeypatch.setattr(write_profile, "PRICES", np.array([0.5]))
    rng = np.random.default_rng(5)
    phones = [
        f"{rng.integers(10, 35)}-{rng.integers(100, 1000)}-{rng.integers(100, 1000)}-{rng.integers(1000, 10000)}"
        for _ in range(N)
    ]
    table = pa.table({"phone": pa.array(phones), "text": _table().column("text")})
    path = _write(tmp_path, table, "2.2", "compact")
    assert any("raw literals" in c for c in chosen), chosen
    assert lance_file.LanceFileReader(path).read_all().to_table().equals(table)
    rows = [0, 17, 4_321, N - 1]
    assert lance_file.LanceFileReader(path).take_rows(rows).to_table().equals(table.take(rows))
    with LanceFile(path) as f:
        assert f.read().equals(table) and f.take(rows).equals(table.take(rows))


def test_compact_samples_every_column_at_the_same_rows_when_batches_stream(tmp_path, monkeypatch):
    """Batches arriving one by one: the price is settled once a batch fills a page, after that batch
    is in every column (not in the middle of it), so every column's sample holds the same rows, more
    than one batch's; the file reads equal."""
    from lancelot.encodings.structural import write_profile
    from lancelot.writer import LanceWriter

    seen: list[list[int]] = []
    real = write_profile.FilePrice.settle

    def settle(self):
        if not self.settled:
            seen.append([c.pending_rows() for c in self.columns])
        return real(self)

    monkeypatch.setattr(write_profile.FilePrice, "settle", settle)
    table = _table()
    path = str(tmp_path / "stream.lance")
    with LanceWriter(path, table.schema, version="2.2", profile="compact", max_page_bytes=64 * 1024) as w:
        for batch in table.to_batches(max_chunksize=500):
            w.write(batch)
    assert len(seen) == 1 and len(set(seen[0])) == 1 and 500 < seen[0][0] < N, seen
    assert lance_file.LanceFileReader(path).read_all().to_table().equals(table)
    with LanceFile(path) as f:
        assert f.take([3, 7, N - 1]).equals(table.take([3, 7, N - 1]))


@pytest.mark.parametrize("scheme,raw_literals", [("zstd", False), ("zstd", True), ("lz4", False)])
def test_a_pages_chunks_compressed_side_by_side_are_the_same_bytes(monkeypatch, scheme, raw_literals):
    """A large page's chunks are compressed in runs on several threads (write_profile._compress_pieces):
    the bytes and bounds are those of one run."""
    from lancelot.encodings.compression.general import buffer_compression, compress_buffers
    from lancelot.encodings.structural import write_profile

    if raw_literals and not write_profile.zstd_frames.raw_literals_available():
        pytest.skip("no libzstd that takes ZSTD_c_literalCompressionMode")
    monkeypatch.setattr(write_profile, "PIECE_BYTES", 4096)
    text = "".join(_table().column("text").to_pylist()[:3000]).encode()
    data = np.frombuffer(text, np.uint8)
    bounds = np.unique(np.append(np.arange(0, len(data), 1500), len(data))).astype(np.int64)
    comp = buffer_compression(scheme, 15 if scheme == "zstd" else None)
    one = compress_buffers(comp, data, bounds, raw_literals)
    many = write_profile._compress_pieces(comp, data, bounds, raw_literals)
    assert min(write_profile.PIECES, len(bounds) - 1) > 1
    assert np.array_equal(one[0], many[0]) and np.array_equal(one[1], many[1])
