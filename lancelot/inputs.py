"""User input as Arrow record batches: the one place that decides what ``write_table``,
``write_dataset`` and the dataset writers accept.

Accepted: a pyarrow Table, RecordBatch or RecordBatchReader; a pandas DataFrame (recognised
with pandas' own class, whatever its module is called, and only if pandas is already imported:
lancelot never imports pandas itself); a lancelot ``LanceDataset`` (its batches); any object
exporting the Arrow PyCapsule stream protocol (``__arrow_c_stream__``: polars, DuckDB, nanoarrow,
pandas >= 2.2...) or the dataframe interchange protocol (``__dataframe__``); an iterable of
RecordBatches or Tables (cast to ``schema=`` when given, as pylance does); for the dataset writers
(``records=True``) also a dict of columns or a list of row dicts, as pylance's ``write_dataset``
takes them.  Anything else is a TypeError that names what was given.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator

import pyarrow as pa

__all__ = ["EXPECTED", "as_batches", "is_pandas_dataframe", "type_name"]

#: what the TypeError for a refused input lists
EXPECTED = (
    "a pyarrow Table, RecordBatch or RecordBatchReader, an iterable of RecordBatches or Tables, a pandas "
    "DataFrame, or an object with __arrow_c_stream__ or __dataframe__"
)


def type_name(x: object) -> str:
    """The name of ``x``'s type for error messages: builtins bare, others with their module."""
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def is_pandas_dataframe(data: object) -> bool:
    """Whether ``data`` is a pandas DataFrame (or a subclass), by ``isinstance`` against pandas' own class.

    pandas is looked up in ``sys.modules`` only: an object cannot be a DataFrame unless pandas
    is imported, so a process without pandas never pays for (or fails on) importing it.
    """
    pd = sys.modules.get("pandas")
    frame = getattr(pd, "DataFrame", None) if pd is not None else None
    return isinstance(frame, type) and isinstance(data, frame)


def _is_lance_dataset(data: object) -> bool:
    mod = sys.modules.get("lancelot.dataset.dataset")  # as with pandas: not imported, so no instance
    cls = getattr(mod, "LanceDataset", None) if mod is not None else None
    return isinstance(cls, type) and isinstance(data, cls)


def _cast(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` cast to ``schema`` when its schema differs, as pylance casts an iterable's batches
    (int32 into int64...); one that does not cast is left for the writer to accept or refuse (blob
    columns, which the writer converts itself; else its SchemaMismatchError)."""
    if batch.schema == schema:
        return batch
    try:
        return pa.Table.from_batches([batch]).cast(schema).combine_chunks().to_batches()[0]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError, TypeError):
        return batch


def as_batches(
    data: object, schema: pa.Schema | None = None, *, caller: str = "write_table", records: bool = False
) -> tuple[pa.Schema | None, Iterator[pa.RecordBatch]]:
    """``data`` as ``(schema, batches)``: streamed, so at most one batch of an iterable is held.

    ``schema``, when given, is the schema returned (a pandas DataFrame is converted with it, as
    ``pyarrow.Table.from_pandas(df, schema=schema)`` does: pylance's conversion); else the data's.
    The schema is None only for an empty iterable given no ``schema``.  ``caller`` names the
    function in error messages.  ``records`` also takes a dict of columns or a non-empty list of row
    dicts (pyarrow's ``from_pydict`` / ``from_pylist`` with ``schema``, as pylance's writers do).

    Raises:
        TypeError: ``data`` is none of the accepted inputs (a str, bytes, dict, number...), or an
            item of an iterable is not a RecordBatch or Table.
    """
    if isinstance(data, pa.Table):
        return schema or data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return schema or data.schema, iter([data])
    if isinstance(data, pa.RecordBatchReader):
        return schema or data.schema, iter(data)
    if is_pandas_dataframe(data):
        t = pa.Table.from_pandas(data, schema=schema)
        return schema or t.schema, iter(t.to_batches())
    if _is_lance_dataset(data):
        return schema or data.schema, iter(data.to_batches())  # type: ignore[attr-defined]
    pads = sys.modules.get("pyarrow.dataset")  # a pyarrow Scanner or Dataset, as pylance takes them
    if pads is not None and isinstance(data, pads.Scanner | pads.Dataset):
        reader = data.to_reader() if isinstance(data, pads.Scanner) else data.scanner().to_reader()
        return schema or reader.schema, iter(reader)
    if hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
        return schema or reader.schema, iter(reader)
    if hasattr(data, "__dataframe__"):
        from pyarrow.interchange import from_dataframe

        t = from_dataframe(data)
        return schema or t.schema, iter(t.to_batches())
    if records and isinstance(data, dict):
        b = pa.RecordBatch.from_pydict(data, schema=schema)
        return b.schema, iter([b])
    if records and isinstance(data, list) and data and isinstance(data[0], dict):
        b = pa.RecordBatch.from_pylist(data, schema=schema)
        return b.schema, iter([b])
    if isinstance(data, str | bytes | bytearray | dict) or not isinstance(data, Iterable):
        raise TypeError(f"{caller} expects {EXPECTED}; got {type_name(data)}")

    def parts(it: Iterator[object]) -> Iterator[pa.RecordBatch]:
        for i, b in enumerate(it):
            if isinstance(b, pa.Table):
                yield from b.to_batches()
            elif isinstance(b, pa.RecordBatch):
                yield b
            else:
                raise TypeError(
                    f"{caller} expects an iterable of pyarrow RecordBatches or Tables; item {i} is {type_name(b)}"
                )

    it = parts(iter(data))
    if schema is not None:
        return schema, (_cast(b, schema) for b in it)
    try:
        first = next(it)
    except StopIteration:
        return None, iter(())
    return first.schema, itertools.chain([first], it)
