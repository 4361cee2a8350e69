"""The data and deletion files of a group of small fragments, read and decoded together.

A scan task of many small fragments (dataset/fragment_groups.py) would otherwise open each fragment's data file as a
``LanceFile`` and read it through the general read path: about a dozen steps of Python per fragment.  Here each data
file is read whole in one request, its footer and offset tables unpacked in place (container layout, seeds 000/002:
"File Layout"), its schema (global buffer 0) and each column's metadata looked up by their bytes (files of one writer
and schema repeat them), and the simple mini-block pages of every fragment of the group
(encodings/structural/simple_pages.py) decoded as one column: the Flat values of all their chunks joined into one
buffer, the Variable offsets of all rebased in one numpy step.  The files, and deletion files in Arrow form, are
fetched together by group_fetch.py.

Anything else (several data files, base paths, a 2.0 file, extension or blob columns, a page that is not simple, zone
maps a filter could use, a damaged file) makes ``group_files`` return None and the fragments are read by ``Fragment``'s
own path, which reports damage with its details."""

from __future__ import annotations

import struct
from functools import lru_cache
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from google.protobuf import any_pb2

from lancelot.dataset.fragment_columns import out_schema, plain_file, scan_schema
from lancelot.dataset.group_fetch import MAX_FILE_BYTES, deletion_todo, fetch_remote, parse_deletions, read_all
from lancelot.dataset.memo import IdentityMemo
from lancelot.encodings.structural import simple_pages as sp
from lancelot.format.container import FOOTER_SIZE, MAGIC
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.format.pb import file2_pb2
from lancelot.versions import ON_DISK

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment

_FOOTER = struct.Struct("<QQQIIHH4s")
#: a page: (layout, its buffers' (offset, size) in the file, rows, the encoding of its definition
#: levels when its items may be null: lance.encodings21 REPDEF_NULLABLE_ITEM, level 1 a null)
Page = tuple[sp.SimpleLayout, tuple[tuple[int, int], ...], int, pb.CompressiveEncoding | None]
#: per fragment of a group: its data file's bytes, and the pages of each column read
Files = list[tuple[bytes, dict[str, tuple[Page, ...]]]]
MAX_COLUMNS = 4096
#: column metadata bytes -> the column's pages when every one is simple (None: not all)
_COLUMNS = IdentityMemo(MAX_COLUMNS)


class _NotSimple(Exception):
    """A fragment of the group does not fit: the group takes the general path."""


def _pages(raw: bytes) -> tuple[Page, ...] | None:
    """The pages of a column whose metadata is ``raw`` (kept per metadata bytes), None when one is not simple."""
    return _COLUMNS.recall(raw, None, _column_pages, raw)


def _column_pages(raw: bytes) -> tuple[Page, ...] | None:
    out: tuple[Page, ...] | None = None
    try:
        meta = file2_pb2.ColumnMetadata()
        meta.ParseFromString(raw)
        pages = []
        for p in meta.pages:
            lay, levels = sp.simple_layout(p.encoding), None
            if lay is None and p.encoding.WhichOneof("location") == "direct":
                lay, levels = _nullable(p.encoding.direct.encoding)
            if lay is None or len(p.buffer_offsets) != lay.buffers:
                break
            ranges = tuple(zip(map(int, p.buffer_offsets), map(int, p.buffer_sizes)))
            pages.append((lay, ranges, int(p.length), levels))
        else:
            out = tuple(pages)
    except Exception:  # noqa: BLE001 - the general path reports a damaged file
        out = None
    return out


@lru_cache(maxsize=MAX_COLUMNS)
def _nullable(raw: bytes) -> tuple[sp.SimpleLayout | None, pb.CompressiveEncoding | None]:
    """A mini-block page of nullable items without dictionary (REPDEF_NULLABLE_ITEM, definition levels in each chunk
    before its one value buffer: encoding.md, "Mini Block Page Layout") of Flat, bitpacked or Variable values: its
    values' layout and its levels' encoding; else (None, None)."""
    wrapper = any_pb2.Any()
    layout = pb.PageLayout()
    try:
        wrapper.ParseFromString(raw)
        layout.ParseFromString(wrapper.value)
    except Exception:  # noqa: BLE001 - the general path reports it
        return None, None
    m = layout.mini_block_layout
    if (
        layout.WhichOneof("layout") != "mini_block_layout"
        or list(m.layers) != [pb.REPDEF_NULLABLE_ITEM]
        or not m.HasField("def_compression")
        or m.HasField("rep_compression")
        or m.HasField("dictionary")
        or m.repetition_index_depth
        or m.num_buffers != 1
        or m.value_compression.WhichOneof("compression") not in ("flat", "variable", "inline_bitpacking")
    ):
        return None, None
    vc = m.value_compression
    lay = sp.parse_values(vc, vc.WhichOneof("compression"), 4 if m.has_large_chunk else 2, int(m.num_items))
    return (lay, m.def_compression) if lay is not None else (None, None)


def _shape(
    f: Fragment, fd: Any, stored: pa.Schema, version: Any, counts: dict[Any, list[int]], columns: list[str]
) -> dict[str, int] | None:
    """{dataset column: file column index} of ``columns`` for files of this schema and field ids (kept per dataset
    object: ``LanceDataset.file_shapes``), None when one of them cannot be read here."""
    df = f.data_fragment.files[0]
    names = f.file_column_names(SimpleNamespace(descriptor=fd, version=version), df)  # type: ignore[arg-type]
    per_field = counts.get(version)
    if per_field is None:
        from lancelot import encodings

        per_field = counts[version] = [encodings.field_package(version).column_count(x) for x in stored]
    starts = np.cumsum([0, *per_field]).tolist()
    out_fields, _ = out_schema(scan_schema(f.dataset.schema), columns)
    if not plain_file(stored):
        return None
    found: dict[str, int] = {}
    for c, want in zip(columns, out_fields):
        i = stored.get_field_index(names.get(c, ""))
        if i < 0 or per_field[i] != 1 or stored.field(i).type != want.type or sp.type_kind(want.type) is None:
            return None
        found[c] = int(starts[i])
    return found


def _file(f: Fragment, data: bytes, columns: list[str], filtered: bool) -> dict[str, tuple[Page, ...]]:
    """The pages of ``columns`` in one fragment's data file (its bytes)."""
    size = len(data)
    if size < FOOTER_SIZE:
        raise _NotSimple
    cm_start, cmo_pos, gbo_pos, n_gb, n_cols, major, minor, magic = _FOOTER.unpack_from(data, size - FOOTER_SIZE)
    version = ON_DISK.get((major, minor))
    end = size - FOOTER_SIZE
    if magic != MAGIC or version is None or not version.structural or not n_gb:
        raise _NotSimple
    if cmo_pos + 16 * n_cols > end or gbo_pos + 16 * n_gb > end:
        raise _NotSimple
    gbo = struct.unpack_from(f"<{2 * n_gb}Q", data, gbo_pos)
    if filtered and n_gb > 1:
        from lancelot.zonemaps import MAGICS

        width = len(MAGICS[0])
        for i in range(1, n_gb):  # zone maps a filter could prune with: the general path uses them
            if data[gbo[2 * i] : gbo[2 * i] + width] in MAGICS:
                raise _NotSimple
    p, n = gbo[0], gbo[1]
    if p + n > end:
        raise _NotSimple
    from lancelot.reader import file_shape

    try:
        fd, stored, resolved, counts = file_shape(data[p : p + n])
    except Exception:  # noqa: BLE001 - the general path reports it
        raise _NotSimple from None
    if resolved is not stored or int(fd.length) != f.physical_rows:
        raise _NotSimple
    key = ("pages", id(fd), version, tuple(f.data_fragment.files[0].fields), tuple(columns))
    index = f.dataset.file_shapes.recall(key, fd, _shape, f, fd, stored, version, counts, columns)
    if index is None:
        raise _NotSimple
    cmo = struct.unpack_from(f"<{2 * n_cols}Q", data, cmo_pos)
    out = {}
    rows = f.physical_rows
    for c, i in index.items():
        if i >= n_cols:
            raise _NotSimple
        p, n = cmo[2 * i], cmo[2 * i + 1]
        if p + n > end:
            raise _NotSimple
        pages = _pages(data[p : p + n])
        if pages is None or sum(pg[2] for pg in pages) != rows:
            raise _NotSimple
        for _, ranges, _, _ in pages:
            for off, ln in ranges:
                if off + ln > size:
                    raise _NotSimple
        out[c] = pages
    return out


def group_files(frags: list[Fragment], columns: list[str], filtered: bool) -> Files | None:
    """Per fragment, its data file's bytes and the pages of ``columns`` in it; None when a fragment does not fit (module
    docstring).  ``filtered``: a filter's zone maps could prune (files holding zone maps go to the general path)."""
    ds = frags[0].dataset
    store = ds.store
    if not columns:
        return None
    root = store.full_path("data") + "/"
    paths = []
    sizes: list[int | None] = []
    for f in frags:
        files = f.data_fragment.files
        if len(files) != 1 or files[0].HasField("base_id"):
            return None
        name = files[0].path
        if not name or "/" in name or "\\" in name or ":" in name or name in (".", ".."):
            return None
        paths.append(root + name)
        n = int(files[0].file_size_bytes)
        if n > MAX_FILE_BYTES:
            return None
        v = ON_DISK.get((files[0].file_major_version, files[0].file_minor_version))
        if v is not None and not v.structural:  # a 2.0 file: not fetched for nothing
            return None
        sizes.append(n)
    if store.is_local:
        datas = read_all(paths)
    else:  # the deletion files in the same requests' round
        todo = deletion_todo(frags)
        got = fetch_remote(store, paths + [p for _, _, p in todo], sizes + [None] * len(todo))
        datas = got[: len(paths)]
        parse_deletions(todo, got[len(paths) :])
    out = []
    try:
        for f, data in zip(frags, datas):
            if data is None:
                return None
            out.append((data, _file(f, data, columns, filtered)))
    except _NotSimple:
        return None
    return out


def _chunks_of(
    view: memoryview, meta: tuple[int, int], values: tuple[int, int], n: int, word: int, levels: list[Any] | None
) -> list[tuple[int, int, int]] | None:
    """(value-buffer start, size, items) of a page's chunks (absolute in the file): a chunk is a u16 level count, (with
    levels) a u16 levels size, the value buffer's size (``word`` bytes), padded to 8; (the levels, padded;) the values.
    ``levels``: each chunk's (file, levels start, size) is added."""
    (mo, ml), (vo, vl) = meta, values
    if ml % word:
        return None
    words = np.frombuffer(view[mo : mo + ml], "<u4" if word == 4 else "<u2").tolist()
    out, pos, left = [], vo, n
    fields = 2 if levels is None else 4
    head = -(-(fields + word) // sp.ALIGN) * sp.ALIGN
    for k, w in enumerate(words):
        size = ((w >> 4) + 1) * sp.ALIGN
        items = left if k == len(words) - 1 else 1 << (w & 0xF)
        if items > left or pos + size > vo + vl:
            return None
        count, dsize = struct.unpack_from("<HH", view, pos) if levels is not None else (items, 0)
        vsize = int.from_bytes(view[pos + fields : pos + fields + word], "little")
        at = pos + head + -(-dsize // sp.ALIGN) * sp.ALIGN
        if count != items or at + vsize > pos + size:
            return None
        if levels is not None:
            levels.append((view, pos + head, dsize))
        out.append((at, vsize, items))
        pos += size
        left -= items
    return out if left == 0 else None


def _packed(
    lay: sp.SimpleLayout,
    t: pa.DataType,
    bits: int | None,
    view: memoryview,
    ranges: tuple[tuple[int, int], ...],
    n: int,
    levels: pb.CompressiveEncoding,
    valid: _Validity,
) -> pa.Array:
    """A page of inline-bitpacked values of nullable items."""
    chunks = valid.chunks(levels, view, ranges[0], ranges[1], n, lay.word)
    if not lay.packed or bits != lay.bits or lay.num_items != n or not chunks:
        raise _NotSimple
    values = sp.fixed_values(lay, view, chunks)
    if values is None or len(values) != n:
        raise _NotSimple
    return pa.Array.from_buffers(t, n, [valid.bitmap(), pa.py_buffer(values)])


class _Validity:
    """The validity of the rows of a run of pages decoded together: all valid, or from the definition levels of nullable
    pages (level 0: valid, 1: null), decoded together."""

    def __init__(self) -> None:
        self.marks: list[int] = []  # per page: -n (n rows all valid) or n (n rows of levels)
        self.defs: list[tuple[memoryview, int, int]] = []  # per chunk: (file, start, size) of its levels
        self.counts: list[int] = []
        self.enc: pb.CompressiveEncoding | None = None

    def all(self, n: int) -> None:
        self.marks.append(-n)

    def chunks(
        self,
        enc: pb.CompressiveEncoding,
        view: memoryview,
        meta: tuple[int, int],
        values: tuple[int, int],
        n: int,
        word: int,
    ) -> list[tuple[int, int, int]] | None:
        """``_chunks_of`` a nullable page; its levels are kept for ``bitmap``."""
        if self.enc is not None and enc != self.enc:
            raise _NotSimple  # (one level encoding per run)
        self.enc = enc
        at = len(self.defs)
        out = _chunks_of(view, meta, values, n, word, self.defs)
        self.counts.extend(items for _, _, items in (out or [])[: len(self.defs) - at])
        self.marks.append(n)
        return out

    def bitmap(self) -> pa.Buffer | None:
        """The validity bitmap of the run's rows (None: all valid), and a new run."""
        marks, defs, counts, enc = self.marks, self.defs, self.counts, self.enc
        self.marks, self.defs, self.counts, self.enc = [], [], [], None
        if not defs or enc is None:
            return None
        from lancelot.encodings.compression.segments import Segments
        from lancelot.encodings.structural.miniblock_chunks import level_chunks

        sizes = np.array([d[2] for d in defs], dtype=np.int64)
        joined = np.frombuffer(b"".join([v[s : s + n] for v, s, n in defs]), np.uint8)
        try:
            levels = level_chunks(
                enc, Segments(joined, np.cumsum(sizes) - sizes, sizes), np.array(counts), "definition"
            )
        except Exception:  # noqa: BLE001 - the general path reports it
            raise _NotSimple from None
        if len(levels) and int(levels.max()) > 1:
            raise _NotSimple
        parts, at = [], 0
        for m in marks:
            if m < 0:
                parts.append(np.ones(-m, dtype=bool))
            else:
                parts.append(levels[at : at + m] == 0)
                at += m
        return pa.py_buffer(np.packbits(np.concatenate(parts), bitorder="little"))


def _column(t: pa.DataType, parts: list[tuple[bytes, tuple[Page, ...]]]) -> pa.Array | pa.ChunkedArray:
    """The pages of one column of several files (each file's bytes and pages) as one column."""
    bits = sp.value_bits(t)
    variable = sp.is_variable(t)
    pieces: list[pa.Array] = []
    flat: list[memoryview] = []  # Flat values of consecutive pages, joined at the next other page
    offs: list[memoryview] = []  # Variable chunks: offsets, (file view, start, size, items)
    var: list[tuple[memoryview, int, int, int]] = []
    rows = vwidth = 0
    valid = _Validity()

    def flush() -> None:
        nonlocal rows
        if flat:
            pieces.append(pa.Array.from_buffers(t, rows, [valid.bitmap(), pa.py_buffer(b"".join(flat))]))
            flat.clear()
        elif var:
            pieces.append(_variable(t, offs, var, rows, vwidth, valid.bitmap()))
            offs.clear()
            var.clear()
        rows = 0

    for data, pages in parts:
        view = memoryview(data)
        for lay, ranges, n, levels in pages:
            plain = lay.constant is None and lay.dictionary is None and lay.other is None and not lay.packed
            fixed = plain and lay.num_items == n and not lay.variable and bits == lay.bits
            if not fixed and not (plain and lay.num_items == n and lay.variable and variable):
                flush()
                if levels is not None:  # bitpacked values with nulls
                    pieces.append(_packed(lay, t, bits, view, ranges, n, levels, valid))
                    continue
                a = sp.decode_page(lay, t, n, *(view[o : o + ln] for o, ln in ranges))
                if a is None:
                    raise _NotSimple
                pieces.append(a)
                continue
            width = lay.bits // 8
            if var if fixed else flat or (var and width != vwidth):
                flush()
            if levels is None:
                chunks = _chunks_of(view, ranges[0], ranges[1], n, lay.word, None)
                valid.all(n)
            else:
                chunks = valid.chunks(levels, view, ranges[0], ranges[1], n, lay.word)
            if chunks is None:
                raise _NotSimple
            rows += n
            if fixed:
                for start, vsize, items in chunks:
                    if items * width > vsize:
                        raise _NotSimple
                    flat.append(view[start : start + items * width])
                continue
            vwidth = width
            for start, vsize, items in chunks:
                if (items + 1) * width > vsize:
                    raise _NotSimple
                offs.append(view[start : start + (items + 1) * width])
                var.append((view, start, vsize, items))
    flush()
    return pieces[0] if len(pieces) == 1 else pa.chunked_array(pieces, t)


def _variable(
    t: pa.DataType,
    offs: list[memoryview],
    var: list[tuple[memoryview, int, int, int]],
    rows: int,
    width: int,
    validity: pa.Buffer | None,
) -> pa.Array:
    """Variable chunks of several pages (offsets of ``width`` bytes) as one array: every chunk's offsets rebased at
    once."""
    allo = np.frombuffer(b"".join(offs), "<u4" if width == 4 else "<u8").astype(np.int64)
    items = np.array([v[3] for v in var], dtype=np.int64)
    ends = np.cumsum(items + 1)
    firsts = ends - items - 1
    lo, hi = allo[firsts], allo[ends - 1]
    sizes = np.array([v[2] for v in var], dtype=np.int64)
    steps = np.diff(allo)
    steps[ends[:-1] - 1] = 0  # (across chunks)
    if (lo < (items + 1) * width).any() or (hi > sizes).any() or (steps < 0).any():
        raise _NotSimple
    lens = hi - lo
    base = np.cumsum(lens) - lens
    out = allo + np.repeat(base - lo, items + 1)
    keep = np.ones(len(out), dtype=bool)
    keep[firsts[1:]] = False
    out = out[keep]
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    total = int(lens.sum())
    if not large and total >= 1 << 31:
        raise _NotSimple
    starts = [v[1] for v in var]
    joined = b"".join([v[0][s + a : s + b] for v, s, a, b in zip(var, starts, lo.tolist(), hi.tolist())])
    return pa.Array.from_buffers(
        t, rows, [validity, pa.py_buffer(out.astype(np.int64 if large else np.int32)), pa.py_buffer(joined)]
    )


def group_table(frags: list[Fragment], files: Files, columns: list[str], which: list[int]) -> pa.Table | None:
    """The physical rows of the fragments ``which`` (indices into ``frags`` and ``files``), in that order, of
    ``columns`` as one table of the scan schema; None when a page does not decode here."""
    fields, schema = out_schema(scan_schema(frags[0].dataset.schema), columns)
    try:
        arrays = [_column(fl.type, [(files[k][0], files[k][1][c]) for k in which]) for c, fl in zip(columns, fields)]
    except _NotSimple:
        return None
    return pa.Table.from_arrays(arrays, schema=schema)
