"""Byte sources: where a Lance file's bytes come from (local file, fsspec URL)."""

from lancelot.io.source import ByteSource, CountingSource, LocalFileSource, MemorySource, open_source

__all__ = ["ByteSource", "CountingSource", "LocalFileSource", "MemorySource", "open_source"]
