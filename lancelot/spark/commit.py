"""The commit protocol of the "lance" data source: one atomic switch per job, in a plain directory.

Layout while a job runs (every name starting with ``_`` is hidden from readers)::

    <dir>/_lancelot_staging/<job>/            the job's record: its tasks' staged files, then commit.json
    <dir>/_lancelot_staging/<job>.committed/  the same record once the job is committed

The driver's commit, under an exclusive ``flock`` of ``<dir>`` (commits into one directory run one at
a time):

1. writes ``commit.json`` = {"files": new file names, "replaces": names an overwrite removes} into
   the job's record;
2. renames the staged files into ``<dir>`` under their final names ``part-<n>-<job>.lance``;
3. renames the record ``<job>/`` to ``<job>.committed/``: **the commit point** (one atomic rename);
4. deletes the replaced files, then the record.

Readers that list through :func:`visible_names` (the Spark reader, :func:`lancelot.spark.save`) apply
the records: while a job's record is uncommitted its files are hidden; once committed its files are
shown (even if a listing raced the renames) and the files it replaces are hidden.  They read the
records before and after listing the directory and list again if they changed, so they see the
directory either before or after each commit, never in between.  Any other reader (pylance, a
shell) just sees ``.lance`` files: the renames of step 2 and the deletes of step 4 happen one by one.

A crash leaves a record behind: a committed one is finished (step 4) by the next commit into the
directory, and readers already treat it as committed; an uncommitted one keeps its renamed files
hidden from the readers above until it is removed by hand (it cannot be told from a running job).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

STAGING = "_lancelot_staging"
COMMITTED = ".committed"
RECORD = "commit.json"
#: listings retried while commits keep changing the records under them
MAX_LIST_ATTEMPTS = 8


@dataclass(frozen=True)
class JobRecord:
    """One job's record in the staging directory."""

    job: str
    committed: bool
    files: tuple[str, ...] = ()
    replaces: tuple[str, ...] = ()

    def owns(self, name: str) -> bool:
        """Whether ``name`` is one of this job's output files."""
        return name in self.files or name.endswith(f"-{self.job}.lance")


def staging_root(directory: str) -> str:
    return os.path.join(directory, STAGING)


def job_dir(directory: str, job: str, committed: bool = False) -> str:
    return os.path.join(staging_root(directory), job + (COMMITTED if committed else ""))


def _read_record(path: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    try:
        with open(os.path.join(path, RECORD)) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return (), ()
    return tuple(rec.get("files", ())), tuple(rec.get("replaces", ()))


def job_records(directory: str) -> tuple[JobRecord, ...]:
    """The records of the jobs committing into ``directory`` (() when none), sorted by job."""
    try:
        entries = list(os.scandir(staging_root(directory)))
    except (FileNotFoundError, NotADirectoryError):
        return ()
    out = []
    for e in entries:
        if e.name.startswith(".") or not e.is_dir():
            continue
        committed = e.name.endswith(COMMITTED)
        job = e.name[: -len(COMMITTED)] if committed else e.name
        files, replaces = _read_record(e.path) if committed else ((), ())
        out.append(JobRecord(job, committed, files, replaces))
    return tuple(sorted(out, key=lambda r: r.job))


def apply_records(names: Sequence[str], records: Sequence[JobRecord], exists) -> list[str]:
    """The visible names among ``names`` (a listing) given the job ``records``.

    Uncommitted jobs' files are hidden; committed jobs' files are shown if they exist
    (``exists(name)``), listed or not, and the files they replace are hidden.
    """
    hidden: set[str] = set()
    shown: set[str] = set()
    for r in records:
        if r.committed:
            hidden.update(r.replaces)
            shown.update(n for n in r.files if exists(n))
    out = set()
    for n in names:
        if n in hidden or any(not r.committed and r.owns(n) for r in records):
            continue
        out.add(n)
    return sorted(out | (shown - hidden))


def visible_names(directory: str, list_names) -> list[str]:
    """``list_names(directory)`` with the job records applied, consistent with one moment between commits."""
    before = job_records(directory)
    for _ in range(MAX_LIST_ATTEMPTS):
        names = list_names(directory)
        after = job_records(directory)
        if after == before:
            break
        before = after
    if not after:
        return sorted(names)
    return apply_records(names, after, lambda n: os.path.isfile(os.path.join(directory, n)))


@contextmanager
def directory_lock(directory: str) -> Iterator[None]:
    """An exclusive flock on ``directory`` itself (no lock file is left behind)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def finish_committed(directory: str) -> None:
    """Step 4 for every committed record in ``directory`` (a driver that crashed after its commit point)."""
    for r in job_records(directory):
        if r.committed:
            _delete_replaced(directory, r.job, r.replaces)


def _delete_replaced(directory: str, job: str, replaces: Sequence[str]) -> None:
    for name in replaces:
        try:
            os.remove(os.path.join(directory, name))
        except FileNotFoundError:
            pass
    shutil.rmtree(job_dir(directory, job, committed=True))


def remove_staging_root(directory: str) -> None:
    """The staging root, if no job uses it any more."""
    try:
        os.rmdir(staging_root(directory))
    except OSError:
        pass


def commit_job(directory: str, job: str, staged: Sequence[tuple[str, str]], replaces: Sequence[str]) -> None:
    """Publish ``staged`` = [(staged path, final name)] of ``job``, replacing ``replaces`` (names), atomically.

    Must run under :func:`directory_lock`; the staged paths lie in the job's record directory.
    """
    record = job_dir(directory, job)
    os.makedirs(record, exist_ok=True)
    tmp = os.path.join(record, RECORD + ".tmp")
    with open(tmp, "w") as f:
        json.dump({"files": [n for _, n in staged], "replaces": list(replaces)}, f)
    os.replace(tmp, os.path.join(record, RECORD))
    for path, name in staged:
        os.replace(path, os.path.join(directory, name))
    os.rename(record, job_dir(directory, job, committed=True))  # the commit point
    try:
        _delete_replaced(directory, job, replaces)
    except OSError:
        pass  # the committed record stays: readers honour it, the next commit finishes it


def abort_job(directory: str, job: str, names: Sequence[str]) -> None:
    """Undo an uncommitted ``job``: its files already renamed into ``directory`` (``names``), then its record."""
    record = job_dir(directory, job)
    if os.path.isdir(job_dir(directory, job, committed=True)):
        return  # past the commit point: the job is committed, nothing to undo
    for name in names:
        try:
            os.remove(os.path.join(directory, name))
        except FileNotFoundError:
            pass
    shutil.rmtree(record, ignore_errors=True)
