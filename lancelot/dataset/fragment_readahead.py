"""Fragments read side by side (pylance's ``fragment_readahead``): a whole scan's fragments as tasks
on the fragment pool, runs of small fragments read together in one task (fragment_groups.py); a scan
with a limit a few fragments ahead, none issued past the limit; over an object store, more tasks at
once, as their requests wait on the store, not on the CPU."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from lancelot.util.pools import shared_pool

if TYPE_CHECKING:
    from lancelot.dataset.fragment import Fragment

#: scans with a limit over an object store: fragments read side by side
READ_AHEAD = 8
#: small fragments share a task of the scan's fragment pool up to this many rows (or TASK_FRAGMENTS)
TASK_ROWS = 1 << 14
TASK_FRAGMENTS = 32
#: scan tasks at once over an object store (their requests wait on the store, not on the CPU)
REMOTE_TASKS = 8
_R = TypeVar("_R")


def remote_tasks() -> ThreadPoolExecutor:
    """The pool a remote scan's tasks run on: more at once than locally, so fragments read alone
    (large ones) keep requests in flight side by side too."""
    return shared_pool("scan-tasks", REMOTE_TASKS)


def tasks(frags: list[Fragment], order: list[int] | None = None) -> list[list[int]]:
    """``order`` (default: the fragments' own) cut into tasks: runs of small fragments (known from the
    manifest) together, each other fragment alone, so a scan of thousands of small fragments is not
    thousands of tasks."""
    from lancelot.dataset.fragment_groups import small_runs

    return small_runs(frags, list(range(len(frags))) if order is None else order, TASK_ROWS, TASK_FRAGMENTS)


def read_ahead(reads: Iterator[Callable[[], _R]], ahead: int) -> Iterator[_R]:
    """The results of ``reads`` in order; with ``ahead``, that many run side by side on the remote
    scan's pool, the next one issued as a result is taken (none once the caller stops)."""
    if not ahead:
        yield from (read() for read in reads)
        return
    pending: deque[Future[_R]] = deque()
    try:
        for read in reads:
            pending.append(remote_tasks().submit(read))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for fut in pending:
            fut.cancel()


def read_all(
    frags: list[Fragment],
    cols: list[str],
    filt: pc.Expression | None,
    need_pos: bool,
    local: bool,
    finish: Callable[[Fragment, pa.Table], pa.Table],
) -> list[pa.Table]:
    """Every fragment's live rows that pass ``filt`` (with their positions when ``need_pos``), each
    through ``finish``, in order; fragments read two at a time (the fragment pool), those with
    deletions to filter first, so a scan does not end on one thread filtering."""
    from lancelot.dataset.open_files import fragment_pool

    def one(f: Fragment) -> pa.Table:
        with f.reading([f]):
            return finish(f, f.read(cols, filt, positions=need_pos))

    if len(frags) < 2:
        return [one(f) for f in frags]
    order = list(range(len(frags)))
    if filt is None and local:  # (remote: costs would read deletion files one by one)
        order.sort(key=lambda i: -frags[i].filter_cost())
    out: list[pa.Table | None] = [None] * len(frags)

    def task(group: list[int]) -> None:
        if len(group) < 2 or not cols:
            for i in group:
                out[i] = one(frags[i])
            return
        from lancelot.dataset.fragment_groups import read_group, read_group_table

        members = [frags[i] for i in group]  # small fragments: one deletion filter, one filter of all
        with members[0].reading(members):
            if not need_pos and group == list(range(group[0], group[0] + len(group))):  # in order: one table
                out[group[0]] = finish(members[0], read_group_table(members, cols, filt))
                return
            for i, t in zip(group, read_group(members, cols, filt, need_pos)):
                out[i] = finish(frags[i], t)

    groups = tasks(frags, order)
    if len(groups) == 1:  # one task (a run of small fragments): on this thread, nothing to overlap it with
        task(groups[0])
    else:
        pool = fragment_pool() if local else remote_tasks()
        for fut in [pool.submit(task, g) for g in groups]:
            fut.result()
    return [t for t in out if t is not None]


def count_rows(frags: list[Fragment], filt: pc.Expression | None, local: bool) -> int:
    """The live rows of ``frags`` that pass ``filt``: runs of small fragments counted together, over an
    object store several runs' requests in flight."""
    from lancelot.dataset.fragment_groups import count_group

    def count(run: list[int]) -> int:
        if len(run) > 1 and filt is not None:
            return count_group([frags[i] for i in run], filt)
        return sum(frags[i].count_rows(filt) for i in run)

    runs = tasks(frags)
    return sum(map(count, runs) if local else remote_tasks().map(count, runs))
