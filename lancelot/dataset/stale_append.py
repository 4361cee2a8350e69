"""An append through a dataset object behind the latest version (``ds.insert(data)``, ``write_dataset(data, ds)``).

pylance reads the data against the schema the object shows and writes fragments carrying that schema's field ids; the
Append then commits on top of the schema changes made since (a Project does not conflict with it), so readers match
the data to columns by field id.  Lancelot writes against the latest schema, so the data's columns are first renamed
as their fields are named now (table format, "Schema": field ids are stable across renames): a column renamed since
takes the data under its new name, a column dropped since is left out, a column added since is null.  A column whose
field a cast replaced keeps its name and is checked against its new type (pylance's fragments keep the old field id
there, and the values read back as nulls).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from lancelot.format.pb import table_pb2


def as_latest(
    shown: table_pb2.Manifest, latest: table_pb2.Manifest, schema: pa.Schema, batches: Iterator[pa.RecordBatch]
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """(schema, batches) of data given for the version ``shown`` renamed by field id to ``latest``'s top-level names
    (columns whose field was dropped since left out; columns ``shown`` does not have kept as given)."""
    ids = {f.name: int(f.id) for f in shown.fields if f.parent_id == -1}
    now = {int(f.id): f.name for f in latest.fields if f.parent_id == -1}
    keep: list[int] = []
    fields: list[pa.Field] = []
    for i, f in enumerate(schema):
        fid = ids.get(f.name)
        if fid is not None and fid not in now and f.name not in now.values():
            continue  # dropped since
        keep.append(i)
        fields.append(f.with_name(now.get(fid, f.name)) if fid is not None else f)
    out = pa.schema(fields, metadata=schema.metadata)
    if out.equals(schema, check_metadata=True):
        return schema, batches
    return out, (pa.RecordBatch.from_arrays([b.column(i) for i in keep], schema=out) for b in batches)
