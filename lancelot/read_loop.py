"""The read loop of a ``LanceFile`` (reader.py): rounds of coalesced fetches and decodes of the
fields' plans (encodings/base.py ``Plan``), on the caller's thread or the shared decode pools, each
field's last planner reported to encodings/served.py; and the guard that turns a low-level failure
on bad bytes into a CorruptFileError naming the file."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pyarrow as pa

from lancelot.encodings.base import FieldReader, Plan, Rows
from lancelot.encodings.served import served
from lancelot.errors import CorruptFileError, LanceError
from lancelot.io.source import ByteSource, Range

_S = TypeVar("_S")
_T = TypeVar("_T")

#: reads told to the OS ahead (reader.READ_AHEAD_MIN_ROWS) stay below this many bytes: no flooding
#: the page cache on huge reads
READ_AHEAD_MAX_BYTES = 256 << 20
#: a local round of the read loop fetching more than this many bytes fetches each field's ranges
#: right before it decodes them (the bytes still in the CPU's cache) instead of all at once
ROUND_APART_BYTES = 1 << 20
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


_REMOTE_POOL: ThreadPoolExecutor | None = None


def _remote_pool() -> ThreadPoolExecutor:
    """Fields of a remote read side by side (16 threads; their requests run on io.source's own pool)."""
    global _REMOTE_POOL
    with _POOL_LOCK:
        if _REMOTE_POOL is None:
            _REMOTE_POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="lancelot-remote")
        return _REMOTE_POOL


def _pool() -> ThreadPoolExecutor:
    """The process-wide decode pool (one thread per CPU, at most 8), created on first use."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1), thread_name_prefix="lancelot-read")
        return _POOL


class ReadLoop:
    """The read loop and decode guard of a LanceFile (its source, path and ``parallel`` switch)."""

    _src: ByteSource
    path: str
    parallel: bool

    def _guard(self, fn: Callable[..., _T], *args: object) -> _T:
        """Run a decode step; any low-level failure on bad bytes becomes a CorruptFileError.

        Args:
            fn: The decode step.
            *args: Its arguments.

        Returns:
            What ``fn`` returns.

        Raises:
            CorruptFileError: ``fn`` failed on the file's bytes (naming the file).
        """
        try:
            return fn(*args)
        except LanceError as e:
            raise e.at(path=self.path) from None
        except (IndexError, ValueError, TypeError, OverflowError, KeyError, pa.ArrowException) as e:
            raise CorruptFileError(f"cannot decode: {type(e).__name__}: {e}", path=self.path) from e

    #: the public name of the decode guard, for readers built with ``make_field_reader``
    guard = _guard

    def _map(self, fn: Callable[[_S], _T], items: list[_S], parallel: bool) -> list[_T]:
        """``fn`` over the fields, on the shared decode pool when worth it (pread, numpy, pyarrow
        and the numba kernels release the GIL, so columns decode side by side).  On a remote
        source the fields mostly wait for round trips: a wider pool lets every field's requests
        go out together."""
        if not parallel or len(items) < 2 or not self.parallel:
            return [fn(x) for x in items]
        return list((_remote_pool() if self._src.round_trip_costly else _pool()).map(fn, items))

    def _read_fields(
        self,
        fields: list[pa.Field],
        readers: list[FieldReader],
        rows: Rows,
        op: str,
        spread: bool,
        announce: bool = False,
    ) -> list[pa.Array | pa.ChunkedArray]:
        """``rows`` of every field, their plans through the read loop.  ``spread`` (a large read): on a
        local file each field runs its own rounds on the decode pool, so one field's reads overlap
        another's decoding (``announce``: every field's ranges told to the OS first); otherwise
        every field is planned here and each round fetched as one."""
        if spread and len(readers) > 1 and self.parallel and not self._src.round_trip_costly:
            early: list[Plan] = []
            if announce:
                early = self._guard(self._plans, readers, rows)
                self._announce([r for p in early for r in p.ranges])

            def one(i: int) -> pa.Array | pa.ChunkedArray:
                return self._run([fields[i]], [early[i] if early else self._guard(readers[i].plan, rows)], op)[0]

            return self._map(one, list(range(len(readers))), True)
        return self._guard(self._plan_loop, fields, readers, rows, op, spread, announce)

    def _plan_loop(
        self, fields: list[pa.Field], readers: list[FieldReader], rows: Rows, op: str, parallel: bool, announce: bool
    ) -> list[pa.Array | pa.ChunkedArray]:
        """Plan every field, then ``_loop`` (unguarded: ``_read_fields`` guards the whole)."""
        plans = [r.plan(rows) for r in readers]
        if announce and len(plans) > 1:
            self._announce([r for p in plans for r in p.ranges])
        return self._loop(fields, plans, op, parallel)

    @staticmethod
    def _plans(readers: list[FieldReader], rows: Rows) -> list[Plan]:
        return [r.plan(rows) for r in readers]

    def _announce(self, ranges: list[Range]) -> None:
        """``ByteSource.will_need`` of ``ranges`` (local files: read ahead), unless they are huge."""
        if ranges and min([off for off, _ in ranges]) < 0:
            ranges = [(off, ln) for off, ln in ranges if off >= 0]
        if ranges and sum([ln for _, ln in ranges]) <= READ_AHEAD_MAX_BYTES:
            self._src.will_need(ranges)

    def _run(
        self, fields: list[pa.Field], plans: list[Plan], op: str, parallel: bool = False
    ) -> list[pa.Array | pa.ChunkedArray]:
        """The read loop: fetch the union of the pending plans' ranges in one coalesced round (one
        ``read_ranges``; remotely one round of requests side by side), decode (``parallel``: on
        the pool), repeat for the follow-up plans.  Each field's last planner is reported to
        encodings/served.py."""
        return self._guard(self._loop, fields, plans, op, parallel)

    def _loop(
        self, fields: list[pa.Field], plans: list[Plan], op: str, parallel: bool
    ) -> list[pa.Array | pa.ChunkedArray]:
        """``_run`` unguarded."""
        out: list[pa.Array | pa.ChunkedArray] = [None] * len(plans)
        pending = list(enumerate(plans))
        src = self._src
        while pending:
            ranges = [r for _, p in pending for r in p.ranges]
            if not src.round_trip_costly and len(pending) > 1 and sum([ln for _, ln in ranges]) > ROUND_APART_BYTES:
                # a large local round: each field's bytes read right before it decodes (still in
                # the CPU's cache)
                results = [self._fetch_decode(p) for _, p in pending]
            else:
                bufs = src.read_ranges(ranges) if ranges else []
                steps = []
                at = 0
                for _, p in pending:
                    steps.append((p, bufs[at : at + len(p.ranges)]))
                    at += len(p.ranges)
                if parallel and len(steps) > 1 and self.parallel:
                    results = self._map(lambda step: step[0].decode(step[1]), steps, True)
                else:
                    results = [p.decode(part) for p, part in steps]
            pending = self._settle(fields, pending, results, out, op)
        return out

    def _fetch_decode(self, p: Plan) -> pa.Array | pa.ChunkedArray | Plan:
        return p.decode(self._src.read_ranges(p.ranges) if p.ranges else [])

    @staticmethod
    def _settle(
        fields: list[pa.Field],
        pending: list[tuple[int, Plan]],
        results: list[pa.Array | pa.ChunkedArray | Plan],
        out: list[pa.Array | pa.ChunkedArray],
        op: str,
    ) -> list[tuple[int, Plan]]:
        """Store the fields a round finished (reporting their planners); the follow-up plans."""
        nxt = []
        for (i, p), res in zip(pending, results):
            if isinstance(res, Plan):
                nxt.append((i, res))
            else:
                out[i] = res
                if p.planner:
                    served(fields[i].name, op, p.planner)
        return nxt
