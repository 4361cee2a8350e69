"""Appends that leave out nullable fields, as pylance takes them.

pylance accepts appended data holding a subset of the dataset's fields (at any nesting level,
in any order) when every field left out is nullable, and refuses a missing non-nullable field
("Append with different schema ... missing=[a]"). Like pylance, lancelot writes such data files
with only the fields they hold, in the data's order (``DataFile.fields`` lists their ids; table
format, "Data files"): the fields a fragment's files lack read as nulls.
"""

from __future__ import annotations

import pyarrow as pa

from lancelot.errors import DatasetSchemaError


def _missing(have: pa.DataType | pa.Schema, want: pa.DataType | pa.Schema, prefix: str) -> list[pa.Field]:
    """Fields of ``want`` absent from ``have`` (struct children too), named by dotted path."""
    names = {f.name: f for f in have}
    out = []
    for f in want:
        path = f"{prefix}{f.name}"
        got = names.get(f.name)
        if got is None:
            out.append(f.with_name(path))
        elif pa.types.is_struct(f.type) and pa.types.is_struct(got.type):
            out += _missing(got.type, f.type, f"{path}.")
    return out


def is_subset(data: pa.Schema, dataset: pa.Schema) -> bool:
    """True when ``data`` lacks some of the dataset's fields and has none the dataset lacks (an
    extra field is left to the schema check to refuse)."""
    return bool(_missing(data, dataset, "")) and not _missing(dataset, data, "")


def check_missing(data: pa.Schema, dataset: pa.Schema, uri: str) -> None:
    """Refuse data missing a non-nullable field, as pylance refuses it."""
    absent = [f.name for f in _missing(data, dataset, "") if not f.nullable]
    if absent:
        raise DatasetSchemaError(
            f"dataset {uri!r}: append with a different schema: fields did not match, missing={absent}"
        )


def restrict(dataset: pa.Schema, data: pa.Schema) -> pa.Schema:
    """The dataset's schema with only the fields ``data`` holds (its types, for the schema check)."""
    return pa.schema(_pick(dataset, data), metadata=dataset.metadata)


def _pick(source: pa.Schema | pa.DataType, order: pa.Schema | pa.DataType) -> list[pa.Field]:
    """``source``'s fields that ``order`` also has (struct children too), in ``order``'s order."""
    names = {f.name: f for f in source}
    out = []
    for f in order:
        got = names.get(f.name)
        if got is None:
            continue
        if pa.types.is_struct(f.type) and pa.types.is_struct(got.type):
            got = got.with_type(pa.struct(_pick(got.type, f.type)))
        out.append(got)
    return out
