"""2.0 takes: planned rounds, mixed page shapes, even pages from the writer, scattered-read prefetch.

* a multi-field take of a 2.0 file plans every column's first round (``FieldReader20.plan``), so the
  reader fetches them in one call, then reads little else, only a small fraction of the file;
* a list column's take plans its offsets first, its items in a follow-up plan;
* a column whose pages differ in shape (pylance itself writes dictionary pages next to binary ones)
  is served by a ``MixedPlan``, with the result pylance's take gives;
* lancelot's 2.0 writer cuts a column into pages as pylance does (no small remainder page of
  another encoding);
* ``ByteSource.read_ranges`` hints its scattered requests to the OS before reading them one by one.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

import lancelot
from lancelot.encodings.base import Plan
from lancelot.encodings.v2_0 import take_plans
from lancelot.encodings.v2_0.take_plans import BinaryPlan, DictionaryPlan, GenericPlan, MixedPlan
from lancelot.io.source import CountingSource, LocalFileSource, MemorySource

ROWS = 60_000


def _table(rows: int = ROWS, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    some = rng.random(rows) < 0.1
    words = np.array(["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"])
    return pa.table(
        {
            "key": pa.array(rng.integers(0, 2**40, rows), pa.int64()),
            "price": pa.array(rng.integers(0, 10**9, rows)).cast(pa.decimal128(19, 0)).cast(pa.decimal128(15, 2)),
            "qty": pa.array(rng.random(rows), pa.float64(), mask=some),
            "day": pa.array(rng.integers(0, 20_000, rows).astype(np.int32), pa.date32()),
            "instr": pa.array(words[rng.integers(0, 4, rows)]),
            "comment": pa.array([f"c{i} " + "z" * int(k) for i, k in enumerate(rng.integers(0, 40, rows))]),
        }
    )


def _write(writer: str, table: pa.Table, path, batch: int = 4096, page: int = 32 * 1024) -> str:
    if writer == "pylance":
        w = LanceFileWriter(str(path), table.schema, version="2.0", max_page_bytes=page, data_cache_bytes=page)
        for b in table.to_batches(max_chunksize=batch):
            w.write_batch(pa.Table.from_batches([b]))
        w.close()
    else:
        with lancelot.LanceWriter(str(path), table.schema, version="2.0", max_page_bytes=page) as w:
            for b in table.to_batches(max_chunksize=batch):
                w.write(b)
    return str(path)


@pytest.mark.parametrize("writer", ["pylance", "lancelot"])
def test_multi_field_take_hints_first_and_reads_little(tmp_path, writer):
    table = _table()
    path = _write(writer, table, tmp_path / f"{writer}.lance")
    src = CountingSource(LocalFileSource(path))
    f = lancelot.LanceFile(src)
    assert all(len(f._columns[n][0].meta.pages) > 3 for n in table.column_names)  # multi-page columns
    f.take([0])  # builds the plans (dictionary items are read once per column)
    hinted: list[tuple[int, int]] = []
    reads: list[tuple[int, int]] = []
    calls: list[list[tuple[int, int]]] = []
    f._src.will_need = lambda ranges: hinted.extend(ranges)
    ranged = f._src.read_ranges
    f._src.read_ranges = lambda ranges: (calls.append(list(ranges)), ranged(ranges))[1]
    inner = src._read
    src._read = lambda off, ln: (reads.append((off, ln)), inner(off, ln))[1]
    rows = np.sort(np.random.default_rng(8).choice(ROWS, 10, replace=False))
    got = f.take(rows)
    assert got.equals(LanceFileReader(path).take_rows(rows).to_table().cast(got.schema))
    assert got.equals(table.take(pa.array(rows)))
    # every column's first round is announced: at least one range per row of each fixed/dictionary
    # column, the planned ones (one round: fixed-width values) asked in one read_ranges call first
    announced = hinted + calls[0]
    assert len(calls[0]) >= 10 * 4 and len(announced) >= 10 * 5, (len(calls[0]), len(hinted))
    starts = {a for a, _ in announced}
    first_round = [r for r in reads if r[0] in starts]  # a coalesced read starts at its first range
    # outside: only the second round, string bytes of binary pages (comment; instr pages pylance left binary)
    assert len(reads) - len(first_round) <= 2 * 10, (len(reads), len(first_round))
    size = src.size
    assert sum(n for _, n in reads) < 0.02 * size, (sum(n for _, n in reads), size)
    assert sum(n for _, n in announced) < 0.01 * size
    # a single field is not announced by the reader (its read_ranges prefetches by itself)
    hinted.clear()
    assert f.take(rows, columns=["key"]).column(0).equals(table.column("key").take(pa.array(rows)))
    assert hinted == []


@pytest.mark.parametrize("writer", ["pylance", "lancelot"])
def test_few_row_take_fetches_fixed_width_fields_in_one_call(tmp_path, writer):
    """A take of a few rows plans every field's first round (fixed-width values, with nulls too;
    dictionary indices once the dictionary is loaded; binary end offsets up to take_few.FEW_ROWS
    rows): one read_ranges call for all of them, then the string bytes; the result equals pylance's."""
    table = _table().select(["key", "price", "qty", "day", "comment"])
    path = _write(writer, table, tmp_path / f"{writer}.lance")
    f = lancelot.LanceFile(path)
    calls: list[list[tuple[int, int]]] = []
    ranged = f._src.read_ranges
    f._src.read_ranges = lambda ranges: (calls.append(list(ranges)), ranged(ranges))[1]
    for seed in range(5):
        rows = np.sort(np.random.default_rng(seed).choice(ROWS, 10 + 10 * seed, replace=False))
        if seed == 4:
            rows = np.flatnonzero(table.column("qty").is_null().to_numpy(zero_copy_only=False))[:12]
        calls.clear()
        got = f.take(rows)
        assert got.equals(LanceFileReader(path).take_rows(rows).to_table().cast(got.schema))
        assert got.equals(table.take(pa.array(rows)))
        # key, price, qty (values and validity bytes), day, comment's end offsets: one call; then
        # comment's bytes
        assert len(calls) == 2, [len(c) for c in calls]
        # a range per row and field, or one per field for rows near each other in a page (take_few.Span)
        assert len(calls[0]) >= 4 * len(rows) or (seed == 4 and len(calls[0]) >= 4), (len(calls[0]), len(rows))
    assert f.take(rows).column("qty").null_count == len(rows)


def test_list_take_plans_offsets_then_items(tmp_path):
    """A list column has no vectorized plan: the node decoder plans the offsets' ranges, then the
    items' in a follow-up plan (no ranges read on its own)."""
    t = pa.table({"l": pa.array([[i, i + 1] for i in range(5000)], pa.list_(pa.int32()))})
    path = str(tmp_path / "l.lance")
    lancelot.write_table(t, path, version="2.0", max_page_bytes=4096)
    f = lancelot.LanceFile(path)
    r = f._reader(f.schema.field("l"))
    plan = r.plan(np.array([1, 2000, 4999]))
    assert plan.ranges and plan.planner == "decoder/ListNode"
    bufs = f._src.read_ranges(plan.ranges)
    items = plan.decode(bufs)
    assert isinstance(items, Plan) and items.ranges
    got = items.decode(f._src.read_ranges(items.ranges))
    assert got.to_pylist() == [[1, 2], [2000, 2001], [4999, 5000]]
    assert f.take([4999, 1]).column(0).to_pylist() == [[4999, 5000], [1, 2]]


def _mixed_pylance_file(path) -> tuple[pa.Table, str]:
    """Pylance writes one page per batch here: dictionary (few values), binary (many), all-null."""
    rng = np.random.default_rng(4)
    n = 3000
    words = np.array(["alpha", "beta", "gamma"])
    parts = [
        pa.array(words[rng.integers(0, 3, n)], mask=rng.random(n) < 0.1),
        pa.array([f"text {i} " + "y" * int(rng.integers(0, 30)) for i in range(n)], mask=rng.random(n) < 0.1),
        pa.array([None] * n, pa.string()),
        pa.array(words[rng.integers(0, 3, n)]),
    ]
    table = pa.table({"s": pa.chunked_array(parts)})
    w = LanceFileWriter(str(path), table.schema, version="2.0", data_cache_bytes=1)
    for p in parts:
        w.write_batch(pa.table({"s": p}))
    w.close()
    return table, str(path)


def test_mixed_page_shapes_pylance(tmp_path):
    table, path = _mixed_pylance_file(tmp_path / "mixed.lance")
    f = lancelot.LanceFile(path)
    col = f._reader(f.schema.field("s")).root.col
    kinds = {col.encoding(i).WhichOneof("array_encoding") for i in range(len(col.info.meta.pages))}
    assert kinds == {"dictionary", "binary"}, kinds
    rng = np.random.default_rng(2)
    ref = LanceFileReader(path)
    for rows in (
        rng.choice(12_000, 40, replace=False),
        np.array([11_999, 0, 3000, 2999, 6001, 0]),
        np.arange(2990, 3010),
    ):
        got = f.take(rows)
        assert got.column(0).combine_chunks().equals(table.column("s").take(pa.array(rows)).combine_chunks()), rows
        uniq = np.unique(rows)
        assert f.take(uniq).equals(ref.take_rows(uniq).to_table())
    # the take's first round is planned (dictionary indices, binary end offsets)
    r = f._reader(f.schema.field("s"))
    rows = np.sort(rng.choice(12_000, 30, replace=False))
    first = r.plan(rows)
    assert first.ranges
    assert r.read(rows).equals(table.column("s").take(pa.array(rows)).combine_chunks())
    plan = r._plan
    assert isinstance(plan, MixedPlan)
    assert {type(p) for p in plan.plans} == {DictionaryPlan, BinaryPlan}


def test_mixed_plan_routes_other_pages_to_the_generic_decoder(tmp_path, monkeypatch):
    """Pages of no vectorized shape go through the generic decoder, in the same MixedPlan."""
    table = _table(20_000)
    path = _write("lancelot", table, tmp_path / "g.lance", page=16 * 1024)
    shape = take_plans._page_kind
    monkeypatch.setattr(take_plans, "_page_kind", lambda t, i, d: None if i % 3 == 1 else shape(t, i, d))
    f = lancelot.LanceFile(path)
    rows = np.random.default_rng(6).choice(20_000, 60, replace=False)
    got = f.take(rows)
    assert got.equals(table.take(pa.array(rows)))
    for name in ("key", "instr", "comment"):
        plan = f._reader(f.schema.field(name))._plan
        assert isinstance(plan, MixedPlan) and any(isinstance(p, GenericPlan) for p in plan.plans), name


def test_writer_pages_like_pylance(tmp_path):
    """Batches are gathered up to max_page_bytes into one page, as pylance does; no small
    remainder page, so a low-cardinality string column is dictionary-encoded in every page."""
    table = _table(ROWS)
    page, batch = 64 * 1024, 3000
    ours = _write("lancelot", table, tmp_path / "ours.lance", batch=batch, page=page)
    f = lancelot.LanceFile(ours)
    for name in table.column_names:
        lengths = [p.length for p in f._columns[name][0].meta.pages]
        assert len(lengths) > 3 and min(lengths[:-1]) >= batch and sum(lengths) == ROWS, (name, lengths)
        assert all(n % batch == 0 for n in lengths[:-1]), (name, lengths)  # whole batches, as pylance
    col = f._reader(f.schema.field("instr")).root.col
    assert {col.encoding(i).WhichOneof("array_encoding") for i in range(len(col.info.meta.pages))} == {"dictionary"}
    assert LanceFileReader(ours).read_all().to_table().equals(table)
    # one huge batch is still cut, into pages of equal rows
    big = tmp_path / "big.lance"
    lancelot.write_table(table, str(big), version="2.0", max_page_bytes=page)
    lengths = [p.length for p in lancelot.LanceFile(str(big))._columns["key"][0].meta.pages]
    assert len(lengths) >= 6 and max(lengths) - min(lengths) <= 1, lengths
    assert LanceFileReader(str(big)).read_all().to_table().equals(table)


def test_read_ranges_does_not_hint_what_will_need_announced(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(100_000))
    src = LocalFileSource(path)
    src._read_cached = lambda off, ln: None  # as if the page cache held none of the file
    advised: list[list[tuple[int, int]]] = []
    src._fadvise = lambda ranges: advised.append(list(ranges))
    src.will_need([(0, 8), (50_000, 8)])
    src.read_ranges([(0, 8), (50_000, 8)])  # both announced: no second hint
    src.read_ranges([(0, 8), (20_000, 8), (90_000, 8)])  # two not announced: hinted
    assert advised == [[(0, 8), (50_000, 8)], [(20_000, 8), (90_000, 8)]]
    src.close()


def test_will_need_announces_near_ranges_as_one(tmp_path):
    """A clustered take's rows lie a few bytes apart: one hint per run of near ranges, not per row."""
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(100_000))
    src = LocalFileSource(path)
    src._read_cached = lambda off, ln: None  # as if the page cache held none of the file
    advised: list[list[tuple[int, int]]] = []
    src._fadvise = lambda ranges: advised.append(list(ranges))
    gap = src.coalesce_gap
    src.will_need([(1000, 8), (0, 8), (500, 8), (1000 + gap + 100, 8), (90_000, 16), (90_004, 4)])
    assert advised == [[(0, 1008), (1000 + gap + 100, 8), (90_000, 16)]]
    src.read_ranges([(500, 8), (90_004, 4)])  # inside announced ranges: no second hint
    assert len(advised) == 1
    src.close()


def test_will_need_reads_what_the_page_cache_holds(tmp_path):
    """Ranges the page cache holds are read by will_need at once, not hinted, and served from
    memory until unstage; the others are hinted, and read when asked."""
    data = bytes(range(256)) * 400
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    src = LocalFileSource(path)
    if not src._nowait:
        pytest.skip("no preadv(RWF_NOWAIT) here")
    advised: list[list[tuple[int, int]]] = []
    tried: list[tuple[int, int]] = []
    reads: list[tuple[int, int]] = []
    src._fadvise = lambda ranges: advised.append(list(ranges))
    cached, inner = src._read_cached, src._read
    src._read_cached = lambda off, ln: (tried.append((off, ln)), None if off == 50_000 else cached(off, ln))[1]
    src._read = lambda off, ln: (reads.append((off, ln)), inner(off, ln))[1]
    src.will_need([(100, 8), (0, 8), (50_000, 8), (90_000, 16)])
    assert tried == [(0, 108), (50_000, 8), (90_000, 16)]  # near ranges as one
    assert advised == [[(50_000, 8)]] and reads == []
    tried.clear()
    got = src.read_ranges([(100, 8), (0, 8), (90_000, 16)])
    assert [bytes(g) for g in got] == [data[100:108], data[:8], data[90_000:90_016]]
    assert tried == [] and reads == []  # from memory
    assert bytes(src.read_ranges([(0, 4), (50_000, 8)])[1]) == data[50_000:50_008]
    assert tried == [(50_000, 8)] and reads == [(50_000, 8)] and len(advised) == 1  # hinted once only
    src.unstage()
    tried.clear()
    assert bytes(src.read_ranges([(100, 8)])[0]) == data[100:108]
    assert tried == [(100, 8)] and reads == [(50_000, 8)]  # unstaged: from the page cache again
    src.close()


def test_read_ranges_hints_only_what_the_page_cache_lacks(tmp_path):
    data = bytes(range(256)) * 400
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    src = LocalFileSource(path)
    if not src._nowait:
        pytest.skip("no preadv(RWF_NOWAIT) here")
    advised: list[list[tuple[int, int]]] = []
    src._fadvise = lambda ranges: advised.append(list(ranges))
    got = src.read_ranges([(90_000, 4), (10, 2), (60_000, 3)])
    assert [bytes(g) for g in got] == [data[90_000:90_004], data[10:12], data[60_000:60_003]]
    assert advised == []  # all cached: one preadv each, no hint
    cached = src._read_cached
    src._read_cached = lambda off, ln: None if off >= 50_000 else cached(off, ln)
    got = src.read_ranges([(90_000, 4), (10, 2), (60_000, 3)])
    assert [bytes(g) for g in got] == [data[90_000:90_004], data[10:12], data[60_000:60_003]]
    assert advised == [[(60_000, 3), (90_000, 4)]]
    src.close()


class _Recording(MemorySource):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.prefetched: list[list[tuple[int, int]]] = []

    def _prefetch(self, ranges):
        self.prefetched.append(list(ranges))


def test_read_ranges_prefetches_scattered_requests():
    src = _Recording(bytes(range(256)) * 1024)
    got = src.read_ranges([(100_000, 4), (10, 2), (200_000, 3)])
    assert [bytes(g) for g in got] == [
        bytes([(100_000 + i) % 256 for i in range(4)]),
        bytes([10, 11]),
        bytes([(200_000 + i) % 256 for i in range(3)]),
    ]
    assert src.prefetched == [[(10, 2), (100_000, 4), (200_000, 3)]]
    src.read_ranges([(10, 2), (20, 5)])  # one coalesced request: nothing to overlap
    assert len(src.prefetched) == 1
