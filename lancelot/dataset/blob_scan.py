"""Blob columns in scans and DataFrames, as pylance 14 returns them on request: ``blob_handling= "all_binary"`` (the
blobs' bytes in place of their descriptions, at the top level or in structs) and ``to_pandas(blob_mode=...)``
(``BlobFile`` objects, bytes, or descriptions).

A scan's rows are found again by their row addresses (``_rowaddr``, added to the scan and dropped after unless asked
for); their blobs are read as ``take_blobs`` / ``read_blobs`` read them (``dataset/blob.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lancelot import field_metadata
from lancelot.dataset.blob import (
    BlobColumnError,
    SelectedRow,
    blob_places,
    choose,
    descend,
    holds_blob,
    is_blob_field,
    is_blob_v2,
    places_in,
    read_places,
    row_list,
    take_blobs,
)
from lancelot.dataset.blob_file import DEFAULT_BLOB_BUFFER_SIZE
from lancelot.util.types import is_offsets_list

if TYPE_CHECKING:
    from lancelot.dataset.blob_file import BlobFile
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.row_selection import Rows
    from lancelot.dataset.scanner import LanceScanner


# -- blob_handling="all_binary": scans with the bytes instead of the descriptions ---------------------
BLOB_HANDLING = ("all_binary", "blobs_descriptions", "all_descriptions")


def wants_binary(blob_handling: str | None) -> bool:
    """Whether a scan's ``blob_handling`` asks for the bytes of blob columns (pylance's three modes;
    ``all_descriptions`` reads as ``blobs_descriptions``, as pylance's does)."""
    if blob_handling is None:
        return False
    if blob_handling not in BLOB_HANDLING:
        raise BlobColumnError(
            f"Invalid blob_handling: {blob_handling}. Expected one of: all_binary, all_descriptions, blobs_descriptions"
        )
    return blob_handling == "all_binary"


def _output_field(ds: LanceDataset, name: str) -> tuple[pa.Field, str] | None:
    """The dataset field of a scan's output column (a column or a dotted path) holding a blob, and its path."""
    if name in ds.schema.names:
        f = ds.schema.field(name)
    else:
        parts = name.split(".")
        if parts[0] not in ds.schema.names:
            return None
        f = ds.schema.field(parts[0])
        for p in parts[1:]:
            if not pa.types.is_struct(f.type) or f.type.get_field_index(p) < 0:
                return None
            f = f.type.field(p)
    return (f, name) if holds_blob(f, is_blob_field) else None


def _binary_field(ds_field: pa.Field, out: pa.Field) -> pa.Field:
    """``out`` (a scanned field) as ``all_binary`` returns it: blobs as ``large_binary`` (2.0 / 2.1 keep the blob key,
    as pylance's)."""
    if is_blob_field(ds_field):
        md = None if is_blob_v2(ds_field) else ds_field.metadata
        return pa.field(out.name, pa.large_binary(), out.nullable, md)
    if is_offsets_list(out.type) and is_offsets_list(ds_field.type):
        item = _binary_field(ds_field.type.value_field, out.type.value_field)
        return pa.field(out.name, _list_of(out.type, item), out.nullable, out.metadata)
    if not pa.types.is_struct(out.type) or not pa.types.is_struct(ds_field.type):
        return out
    kids = []
    for i in range(out.type.num_fields):
        k = out.type.field(i)
        j = ds_field.type.get_field_index(k.name)
        kids.append(_binary_field(ds_field.type.field(j), k) if j >= 0 else k)
    return pa.field(out.name, pa.struct(kids), out.nullable, out.metadata)


def binary_schema(ds: LanceDataset, schema: pa.Schema) -> pa.Schema:
    """A scan's output schema under ``all_binary``."""
    fields = []
    for f in schema:
        hit = _output_field(ds, f.name)
        fields.append(f if hit is None else _binary_field(hit[0], f))
    return pa.schema(fields, metadata=schema.metadata)


def binary_table(ds: LanceDataset, t: pa.Table, addresses: Any) -> pa.Table:
    """A scan's output ``t`` (rows at row ``addresses``) with its blob descriptions, at the top level or in structs,
    replaced by the blobs' bytes (``blob_handling="all_binary"``)."""
    out_schema = binary_schema(ds, t.schema)
    if out_schema.equals(t.schema, check_metadata=True):
        return t
    from lancelot.dataset.row_selection import by_address

    rows = by_address(ds, np.asarray(addresses, dtype=np.uint64), "keep")
    cols = []
    for f, out, col in zip(t.schema, out_schema, t.columns):
        hit = _output_field(ds, f.name)
        if hit is None:
            cols.append(col)
            continue
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        cols.append(_bytes_of(ds, hit[0], hit[1], arr, out, rows))
    return pa.Table.from_arrays(cols, schema=out_schema)


def _bytes_of(ds: LanceDataset, ds_field: pa.Field, path: str, arr: pa.Array, out: pa.Field, rows: Rows) -> pa.Array:
    if is_blob_field(ds_field):
        places = blob_places(ds, path, rows)
        return pa.array(read_places(places, [(0, p.size if p else 0) for p in places]), pa.large_binary())
    if not holds_blob(ds_field, is_blob_field):
        return arr
    if is_offsets_list(arr.type):
        return _list_bytes(ds, ds_field, path, arr, out, row_list(rows))
    if not pa.types.is_struct(arr.type):
        return arr
    children = []
    for i in range(arr.type.num_fields):
        name = arr.type.field(i).name
        j = ds_field.type.get_field_index(name)
        child = arr.field(i)
        if j >= 0:
            child = _bytes_of(ds, ds_field.type.field(j), f"{path}.{name}", child, out.type.field(i), rows)
        children.append(child)
    kids = [out.type.field(i) for i in range(out.type.num_fields)]
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(children, fields=kids, mask=mask)


def _list_of(like: pa.DataType, item: pa.Field) -> pa.DataType:
    return pa.large_list(item) if pa.types.is_large_list(like) else pa.list_(item)


def _list_bytes(
    ds: LanceDataset, ds_field: pa.Field, path: str, arr: pa.Array, out: pa.Field, rows: list[SelectedRow]
) -> pa.Array:
    """A list holding blobs: each item's bytes, read with the descriptions in hand from its row's data file."""
    offs = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    item_rows = [r for r, k in zip(rows, np.diff(offs).tolist()) for _ in range(k)]
    items = arr.values.slice(int(offs[0]), int(offs[-1] - offs[0]))
    values = _in_hand(ds, ds_field.type.value_field, path, items, out.type.value_field, item_rows)
    cls = pa.LargeListArray if pa.types.is_large_list(arr.type) else pa.ListArray
    rebased = pa.array(offs - offs[0], pa.int64() if pa.types.is_large_list(arr.type) else pa.int32())
    return cls.from_arrays(rebased, values, type=out.type, mask=arr.is_null() if arr.null_count else None)


def _in_hand(
    ds: LanceDataset, ds_field: pa.Field, path: str, arr: pa.Array, out: pa.Field, rows: list[SelectedRow]
) -> pa.Array:
    """``arr`` (descriptions, or structs / lists holding them, one per entry of ``rows``) as bytes."""
    if is_blob_field(ds_field):
        places = places_in(ds, path.split(".")[0], rows, arr.to_pylist(), path)
        return pa.array(read_places(places, [(0, p.size if p else 0) for p in places]), pa.large_binary())
    if not holds_blob(ds_field, is_blob_field):
        return arr
    if is_offsets_list(arr.type):
        return _list_bytes(ds, ds_field, path, arr, out, rows)
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), bool)
    live = [r if ok else None for r, ok in zip(rows, valid.tolist())]
    children = []
    for i in range(arr.type.num_fields):
        name = arr.type.field(i).name
        j = ds_field.type.get_field_index(name)
        child = arr.field(i)
        if j >= 0 and holds_blob(ds_field.type.field(j), is_blob_field):
            sub = [k for k, r in enumerate(live) if r is not None]  # rows under a null struct: none read
            got = _in_hand(
                ds, ds_field.type.field(j), f"{path}.{name}", child.take(sub), out.type.field(i), [rows[k] for k in sub]
            )
            child = _scatter(got, sub, len(live), out.type.field(i).type)
        children.append(child)
    kids = [out.type.field(i) for i in range(out.type.num_fields)]
    return pa.StructArray.from_arrays(children, fields=kids, mask=pa.array(~valid) if not valid.all() else None)


def _scatter(values: pa.Array, at: list[int], n: int, t: pa.DataType) -> pa.Array:
    """``values`` placed at positions ``at`` of an array of ``n`` (nulls elsewhere)."""
    if len(at) == n:
        return values
    idx = np.full(n, -1, np.int64)
    idx[np.asarray(at, np.int64)] = np.arange(len(at))
    return values.take(pa.array(idx, mask=idx < 0)).cast(t)


# -- to_pandas(blob_mode=...) ----------------------------------------------------------------------------
BLOB_PANDAS_MODES = ("lazy", "bytes", "descriptions")


def _blob_paths(schema: pa.Schema) -> list[str]:
    """The output paths of a scanned schema that are blob descriptions (pylance's test: the blob key set to ``true``, or
    the blob v2 extension name)."""

    def walk(f: pa.Field, parent: str) -> Iterator[str]:
        here = f"{parent}.{f.name}" if parent else f.name
        if field_metadata.value(f, field_metadata.BLOB_KEY) == "true" or is_blob_v2(f):
            yield here
        elif pa.types.is_struct(f.type):
            for i in range(f.type.num_fields):
                yield from walk(f.type.field(i), here)

    return [p for f in schema for p in walk(f, "")]


def _is_null_description(d: Any) -> bool:
    """pylance's rule: None, or 2.0's null (position 1, size 0)."""
    if d is None:
        return True
    return isinstance(d, dict) and d.keys() == {"position", "size"} and (d["position"], d["size"]) == (1, 0)


def to_pandas(scanner: LanceScanner, blob_mode: str, kwargs: dict[str, Any]) -> Any:
    """A scan as a pandas DataFrame, its blob columns as pylance 14 gives them: ``"lazy"`` (the default) one
    ``BlobFile`` per value (None for a null), ``"bytes"`` their bytes, ``"descriptions"`` the descriptions
    (``to_table().to_pandas()``).  ``kwargs`` go to ``pyarrow.Table.to_pandas``."""
    from lancelot.dataset.row_id_columns import ROW_ADDR

    if blob_mode not in BLOB_PANDAS_MODES:
        raise BlobColumnError("blob_mode must be one of: 'lazy', 'bytes', 'descriptions'")
    schema = scanner.projected_schema
    paths = _blob_paths(schema)
    if not paths or blob_mode == "descriptions":
        return scanner.to_table().to_pandas(**kwargs)
    asked = ROW_ADDR in schema.names
    if blob_mode == "bytes":
        return scanner.with_blob_reads(binary=True).to_table().to_pandas(**kwargs)
    t = scanner.with_blob_reads(binary=False, with_row_address=True).to_table()
    ds = scanner.state.ds
    addresses = t.column(ROW_ADDR).to_pylist()
    files: dict[str, list[BlobFile | None]] = {}
    for path in paths:
        parts = path.split(".")
        descs = t.column(parts[0]).to_pylist()
        descs = [descend(d, parts[1:]) for d in descs]
        source = path if _output_field(ds, path) is not None else parts[0]
        wanted = [a for a, d in zip(addresses, descs) if not _is_null_description(d)]
        rows = choose(ds, source, None, wanted, None) if wanted else None
        got = iter(take_blobs(ds, source, rows, DEFAULT_BLOB_BUFFER_SIZE) if rows else [])
        files[path] = [None if _is_null_description(d) else next(got) for d in descs]
    top = [p for p in files if "." not in p and p in t.schema.names]
    rest = t.drop_columns(top + ([] if asked else [ROW_ADDR]))
    df = rest.to_pandas(**kwargs)  # (no columns left: an empty frame of the rows' index)
    for i, name in enumerate(schema.names):
        if name in top:
            df.insert(i, name, files[name])
    for path, values in files.items():
        if path in top:
            continue
        parts = path.split(".")
        df[parts[0]] = [_with_value(v, parts[1:], f) for v, f in zip(df[parts[0]].tolist(), values)]
    return df


def _with_value(parent: dict[str, Any] | None, path: list[str], value: Any) -> dict[str, Any] | None:
    if parent is None:
        return None
    out = dict(parent)
    out[path[0]] = value if len(path) == 1 else _with_value(parent.get(path[0]), path[1:], value)
    return out
