"""Encodings: 2.0 array encodings (v2_0/) and 2.1+ structural layouts (structural/)
with their compression techniques (compression/).

The per-version factories are here, above ``lancelot.versions`` (which only names the versions and
their feature switches): a version's field package is imported when a file of that version is
first read or written, so a process that reads only 2.1+ files never loads the 2.0 decoders.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from lancelot.versions import FileVersion

if TYPE_CHECKING:
    from lancelot.encodings.structural.write_pipeline import PageWorker


def field_package(version: FileVersion) -> ModuleType:
    """The reader's field package: ``column_count(field)`` and ``make_field_reader(ctx)`` (encodings/base.py)."""
    if version.structural:
        from lancelot.encodings import structural

        return structural
    from lancelot.encodings import v2_0

    return v2_0


def page_worker(version: FileVersion) -> PageWorker | None:
    """The background page encoder of a writer (2.1+, write_pipeline.py); 2.0 pages encode in line."""
    if not version.structural:
        return None
    from lancelot.encodings.structural.write_pipeline import PageWorker

    return PageWorker()


def field_writer_factory(version: FileVersion) -> Callable[..., Any]:
    """``make(out, field, *, first_column, settings, worker)``: the writer of one top-level field
    (a 2.0 field's pages are encoded in line: no worker)."""
    if version.structural:
        from lancelot.encodings.structural.write_field import make_field_writer

        return make_field_writer
    from lancelot.encodings.v2_0.field_writer import make_field_writer as make_v2_0

    def make(out: Any, field: Any, *, first_column: int, settings: Any, worker: Any = None) -> Any:
        return make_v2_0(out, field, first_column=first_column, max_page_bytes=settings.max_page_bytes)

    return make
