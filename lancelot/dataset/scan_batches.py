"""A scan's rows fragment by fragment, in order, cut in batches as pylance 14 cuts them.

The scan reads its fragments in order: the filter is applied per fragment; ``offset`` and ``limit``
count the rows that pass, and fragments wholly before the offset or after the limit are never read
(without a filter, the fragments' row counts plan the window; with one, the reads stop once the limit
is reached, a few fragments read ahead over an object store: fragment_readahead.py).

Batches (``to_batches``): without a filter, at most ``batch_size`` rows, never spanning two
fragments; with one, what passed of each ``batch_size`` live rows read (deleted rows too with
``include_deleted_rows``), empty batches dropped.  When pylance reads some projected columns after
the filter (late materialisation: ``late``), it coalesces the filtered batches before taking those
columns: batches held until they reach ``batch_size`` rows (across fragments), a batch of
``batch_size`` rows passed on alone after those held.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.fragment_columns import POS
from lancelot.dataset.fragment_readahead import READ_AHEAD, read_ahead, tasks
from lancelot.dataset.scan import apply_filter, filter_columns, filter_paths
from lancelot.dataset.scan_projection import with_row_columns
from lancelot.util.arrays import combined

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.fragment_groups import InOrder
    from lancelot.dataset.scanner import LanceScanner

Piece = tuple["Fragment", pa.Table]


def batches(scan: LanceScanner) -> Iterator[pa.RecordBatch]:
    """The scan's output batches (before blobs are read as bytes): each piece projected; under late
    materialisation, the pieces coalesced as pylance coalesces them before its take: held until they
    reach ``batch_size`` rows, a piece of ``batch_size`` rows passed on alone after those held."""
    size = scan.batch_size
    bases = scan.state.bases(scan.state.proj.rows)
    joined = late(scan)
    held: list[pa.Table] = []
    for frag, t in pieces(scan, size):
        out = scan.state.finish(frag, t, bases)
        if not joined:
            yield from out.combine_chunks().to_batches(max_chunksize=size)
            continue
        if out.num_rows >= size:
            yield from _joined(held)
            held = []
        held.append(out)
        if sum(h.num_rows for h in held) >= size:
            yield from _joined(held)
            held = []
    yield from _joined(held)


def _joined(held: list[pa.Table]) -> Iterator[pa.RecordBatch]:
    """The tables ``held`` as one batch (none if there are none, or no columns)."""
    if held and held[0].num_columns:
        yield combined(pa.concat_tables(held) if len(held) > 1 else held[0]).to_batches()[0]


def strict(batches: Iterator[pa.RecordBatch], size: int) -> Iterator[pa.RecordBatch]:
    """``strict_batch_size``: ``batches`` re-cut to exactly ``size`` rows each (across fragments),
    the last one shorter."""
    held: list[pa.RecordBatch] = []
    n = 0
    for b in batches:
        held.append(b)
        n += b.num_rows
        if n < size:
            continue
        t = combined(pa.Table.from_batches(held))
        full = n - n % size
        yield from t.slice(0, full).to_batches(max_chunksize=size)
        held, n = ([t.slice(full).to_batches()[0]], n - full) if n > full else ([], 0)
    if n:
        yield combined(pa.Table.from_batches(held)).to_batches()[0]


def late(scan: LanceScanner) -> bool:
    """Whether pylance reads some projected columns after the filter, taking them by row id (late
    materialisation): those named by ``late_materialization`` (True: all, False: none); by default
    when a projected leaf field (a struct's child, a column) the filter does not name has no fixed
    width, or one of 10 bytes or more (1000 over an object store), or is a boolean."""
    ds, filt, choice = scan.state.ds, scan.filter, scan.late_materialization
    if filt is None or choice is False:
        return False
    used = set(filter_columns(filt, list(ds.schema.names)))
    paths = filter_paths(filt)
    limit = 10 if ds.store.is_local else 1000
    for c in scan.state.proj.reads:
        if choice is not None:  # (True or a list of names: whole columns, the filter's aside)
            if c not in used and (choice is True or c in choice):
                return True
            continue
        for path, t in _leaves(scan, c):
            named = c in used if paths is None else any(p[: len(path)] == path for p in paths)  # (st IS NULL: not q)
            width = _byte_width(t)
            if not named and (pa.types.is_boolean(t) or width is None or width >= limit):
                return True
    return False


def _leaves(scan: LanceScanner, column: str) -> Iterator[tuple[tuple[str, ...], pa.DataType]]:
    """(path, type) of the leaf fields of ``column`` the scan projects: the children of the struct paths asked
    (``st.q``), else of the whole column."""
    field = scan.state.ds.schema.field(column)
    asked = [tuple(n.split(".")) for n in scan.state.proj.names if n.startswith(column + ".")]
    whole = column in scan.state.proj.names or column in scan.state.proj.fields
    roots: list[tuple[tuple[str, ...], pa.DataType]] = []
    for path in [] if whole else asked:
        t: pa.DataType | None = field.type
        for part in path[1:]:
            i = t.get_field_index(part) if t is not None and pa.types.is_struct(t) else -1
            t = t.field(i).type if t is not None and i >= 0 else None
        if t is None:  # (not a path into the column: an expression's name)
            roots = []
            break
        roots.append((path, t))
    stack = roots or [((column,), field.type)]
    while stack:
        path, t = stack.pop()
        if pa.types.is_struct(t) and t.num_fields:
            stack.extend(((*path, t.field(i).name), t.field(i).type) for i in range(t.num_fields))
        else:
            yield path, t


def _byte_width(t: pa.DataType) -> int | None:
    """Bytes per value of a fixed-width type (None: variable width, nested; a dictionary's are its values')."""
    if pa.types.is_dictionary(t):
        return _byte_width(t.value_type)
    try:
        return int(t.byte_width)
    except ValueError:
        return None


def pieces(scan: LanceScanner, chunk: int | None) -> Iterator[Piece]:
    """Per fragment (in order), tables of the columns to read, the rows that pass the filter and fall
    in [offset, offset + limit), and the physical positions (``POS``) when row ids are asked (or a
    filtered scan is cut in batches of ``chunk`` rows: ``_batches_of``)."""
    need_pos = bool(scan.state.proj.rows)
    skip, left = scan.offset, scan.limit
    cols = scan.state.read_cols()
    if scan.include_deleted_rows or scan.state.filter_rows:
        yield from _pieces_with_deleted(scan, cols, chunk)
        return
    reads = _in_order(scan, cols, need_pos or (chunk is not None and scan.filter is not None))
    # remote with a limit: a few fragments' reads in flight side by side, none issued past the limit
    ahead = scan.limit is not None and not scan.state.ds.store.is_local
    passed = [0]  # (the rows that passed the filter so far: a later fragment's read needs fewer)
    for frag, t in read_ahead(_reads(scan, reads, cols, chunk, need_pos, passed), READ_AHEAD if ahead else 0):
        if scan.filter is None:  # (offset and limit planned from the fragments' row counts)
            yield frag, t
            continue
        passed[0] += t.num_rows
        for piece in _batches_of(frag, t, chunk, False):
            piece, skip, left = _window(piece, skip, left)
            if piece.num_rows:
                yield frag, piece
        if left is not None and left <= 0:
            return


def _reads(
    scan: LanceScanner,
    reads: InOrder | None,
    cols: list[str],
    chunk: int | None,
    need_pos: bool,
    passed: list[int],
) -> Iterator[Callable[[], Piece]]:
    """The reads of ``pieces``, in order, not yet run: without a filter, the pieces in [offset,
    offset + limit) (from the fragments' row counts); with one, each fragment's rows that pass (with a
    limit, the first offset + limit of them less those ``passed`` in the fragments read before)."""
    skip, left = scan.offset, scan.limit
    for i, frag in enumerate(scan.state.frags):
        if left is not None and left <= 0:
            return
        if scan.filter is not None:  # (a limit: the read stops once offset + limit rows passed)
            want = None if scan.limit is None else max(1, scan.offset + scan.limit - passed[0])
            yield partial(_whole, reads, frag, i, cols, scan.filter, need_pos or bool(chunk), want)
            continue
        n = frag.count_rows()
        if skip >= n:
            skip -= n
            continue
        lo, hi = skip, n if left is None else min(n, skip + left)
        skip = 0
        if left is not None:
            left -= hi - lo
        step = hi - lo if chunk is None else _read_rows(frag, chunk)
        for a in range(lo, hi, step):
            b = min(hi, a + step)
            if (a, b) == (0, n) and (chunk is None or reads is not None):
                yield partial(_whole, reads, frag, i, cols, None, need_pos)
            else:
                yield partial(_live_range, frag, a, b, cols, need_pos)


#: the data-file bytes an unfiltered ``to_batches`` reads at once: whole multiples of the batch size, sliced
#: into batches after the read (one read per batch cost 4-5x a ``to_table`` of the same rows)
READ_BYTES = 16 << 20


def _read_rows(frag: Fragment, chunk: int) -> int:
    """The rows of ``frag`` to read at once for batches of ``chunk`` rows: a multiple of ``chunk`` of about
    ``READ_BYTES`` of its data files (all their columns: an upper bound for the ones projected)."""
    size = sum(int(f.file_size_bytes) for f in frag.data_fragment.files)
    per_row = size / max(1, frag.physical_rows) if size else 64.0
    return chunk * max(1, int(READ_BYTES // max(1.0, per_row * chunk)))


def _in_order(scan: LanceScanner, cols: list[str], need_pos: bool) -> InOrder | None:
    """Whole-fragment reads with the runs of small fragments read together (a scan without a limit:
    a limit would read a run it may not need); remote, a run's files are fetched side by side."""
    frags = scan.state.frags
    if scan.limit is not None or not cols or len(frags) < 2:
        return None
    from lancelot.dataset.fragment_groups import InOrder

    return InOrder(frags, cols, scan.filter, need_pos, tasks(frags))


def _pieces_with_deleted(scan: LanceScanner, cols: list[str], chunk: int | None) -> Iterator[Piece]:
    """Like ``pieces``, with deleted rows when asked (their ``_rowid`` is null, as pylance gives it),
    and the row-id columns a filter names computed before it is applied."""
    filt, deleted, skip, left = scan.filter, scan.include_deleted_rows, scan.offset, scan.limit
    fcols = [] if filt is None else filter_columns(filt, list(scan.state.ds.schema.names))
    read = cols + [c for c in fcols if c not in cols]
    bases = scan.state.bases(scan.state.filter_rows)
    for frag in scan.state.frags:
        if left is not None and left <= 0:
            return
        if deleted:
            t = frag.read_physical(read, 0, frag.physical_rows)
            t = t.append_column(POS, pa.array(np.arange(frag.physical_rows, dtype=np.int64)))
        else:
            t = frag.read(read, positions=True)
        if filt is not None:
            if scan.state.filter_rows:
                t = with_row_columns(frag, t, scan.state.filter_rows, bases, deleted)
            t = apply_filter(t, filt, frag.where).select(cols + [POS])
        for piece in _batches_of(frag, t, chunk if filt is not None else None, deleted):
            piece, skip, left = _window(piece, skip, left)
            if piece.num_rows:
                yield frag, piece


def _window(t: pa.Table, skip: int, left: int | None) -> tuple[pa.Table, int, int | None]:
    """The rows of ``t`` after ``skip`` rows, at most ``left`` of them; the offset and limit left."""
    if skip:
        cut = min(skip, t.num_rows)
        t, skip = slice_rows(t, cut), skip - cut
    if left is not None:
        t = slice_rows(t, 0, left)
        left -= t.num_rows
    return t, skip, left


def slice_rows(t: pa.Table, offset: int, length: int | None = None) -> pa.Table:
    """``t.slice(offset, length)``, clamped to the rows ``t`` has even when it has no columns (pyarrow's slice
    of a table without columns keeps ``length`` rows, or all of them, past its end)."""
    end = t.num_rows if length is None else min(t.num_rows, offset + length)
    offset = min(offset, t.num_rows)
    if t.num_columns:
        return t.slice(offset, end - offset)
    return pa.table({"_": pa.nulls(max(0, end - offset))}).drop_columns(["_"])


def _whole(
    reads: InOrder | None,
    frag: Fragment,
    i: int,
    cols: list[str],
    filt: pc.Expression | None,
    pos: bool,
    want: int | None = None,
) -> Piece:
    """A fragment's live rows (that pass ``filt``; at least the first ``want`` of them, when given), from its run
    when read together (``reads``)."""
    return frag, reads.read(i) if reads is not None else frag.read(cols, filt, positions=pos, limit=want)


def _live_range(frag: Fragment, a: int, b: int, cols: list[str], need_pos: bool) -> Piece:
    """Live rows ``a`` to ``b`` of a fragment, with their physical positions when asked."""
    t = frag.read_range(a, b - a, cols)
    if need_pos:
        t = t.append_column(POS, pa.array(frag.physical_of_live(np.arange(a, b, dtype=np.int64))))
    return frag, t


def _batches_of(frag: Fragment, t: pa.Table, chunk: int | None, physical: bool) -> list[pa.Table]:
    """A fragment's filtered rows cut as pylance's batches: the fragment read ``chunk`` live rows
    (``physical``: rows, deleted too) at a time, each batch filtered, the empty ones dropped."""
    if chunk is None or t.num_rows <= 1:
        return [t]
    pos = t.column(POS).to_numpy().astype(np.int64)
    deleted = frag.deleted_positions() if not physical else np.empty(0, np.int64)
    live = pos - np.searchsorted(deleted, pos) if len(deleted) else pos
    which = live // chunk
    if which[0] == which[-1]:
        return [t]
    cuts = np.flatnonzero(np.diff(which)) + 1
    bounds = [0, *cuts.tolist(), t.num_rows]
    return [t.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]
