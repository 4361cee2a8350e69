"""Schema changes without new values: ``drop_columns`` and ``alter_columns`` (table format, "Schema evolution";
transactions Project and Merge), as pylance 14 performs them.

Drops and renames are Project transactions: only the schema changes (data files keep listing dropped ids; a file left
with none of the schema's fields leaves its fragment, and indices on dropped fields go).  A cast gives the column a new
field id and a new data file per fragment (a Merge); pylance refuses to cast an indexed column, and so does this."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lancelot import versions
from lancelot.dataset.changes import ChangeInputError
from lancelot.dataset.column_files import (
    SchemaEvolutionError,
    cast_column,
    commit_merge,
    commit_project,
    next_field_id,
    numbered_fields,
    rust_name,
    write_column_files,
)
from lancelot.errors import LanceError
from lancelot.format.pb import file_pb2, table_pb2

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment


def _field_by_path(ds: LanceDataset, path: str) -> file_pb2.Field:
    fields = list(ds.manifest.fields)
    parent, found = -1, None
    for part in path.split("."):
        hit: file_pb2.Field | None = next((f for f in fields if int(f.parent_id) == parent and f.name == part), None)
        if hit is None:
            raise KeyError(path)
        parent, found = int(hit.id), hit
    if found is None:
        raise KeyError(path)
    return found


def _subtree(fields: list[file_pb2.Field], root: int) -> set[int]:
    ids = {root}
    grew = True
    while grew:
        more = {int(f.id) for f in fields if int(f.parent_id) in ids} - ids
        grew = bool(more)
        ids |= more
    return ids


def _top_of(fields: list[file_pb2.Field], f: file_pb2.Field) -> file_pb2.Field:
    by_id = {int(x.id): x for x in fields}
    while int(f.parent_id) != -1:
        f = by_id[int(f.parent_id)]
    return f


def _drops_whole_lists(ds: LanceDataset) -> bool:
    """pylance 14 drops a whole top-level list column when asked to drop a field under it (``ls.item.q``) in a dataset
    of file version 2.1 or older; from 2.2 only that field goes. A list nested in a struct (``s.ls.item.q``) loses only
    the field in every version."""
    v = ds.data_storage_version
    if v in ("legacy", "0.1", "0.3"):
        return True
    try:
        major, minor = (int(x) for x in v.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) < (2, 2)


def drop_columns(ds: LanceDataset, columns: list[str]) -> None:
    if isinstance(columns, str):
        columns = [columns]
    fields = list(ds.manifest.fields)
    whole_lists = _drops_whole_lists(ds)
    gone: set[int] = set()
    for c in columns:
        try:
            hit = _field_by_path(ds, c)
        except KeyError:
            raise ChangeInputError(f"Column {c} does not exist in the dataset") from None
        top = _top_of(fields, hit)
        if whole_lists and top is not hit and str(top.logical_type).startswith(("list", "large_list")):
            hit = top  # below a top-level list, files before 2.2 drop the whole column (pylance 14)
        gone |= _subtree(fields, int(hit.id))
    had_children = {int(f.parent_id) for f in fields}
    while True:  # a struct whose last child went goes too, as in pylance
        kept = [f for f in fields if int(f.id) not in gone]
        parents = {int(f.parent_id) for f in kept}
        emptied = {int(f.id) for f in kept if int(f.id) in had_children and int(f.id) not in parents}
        if not emptied:
            break
        gone |= emptied
    keep = [f for f in fields if int(f.id) not in gone]
    if not any(int(f.parent_id) == -1 for f in keep):
        raise ChangeInputError("Cannot drop all columns from a dataset")
    commit_project(ds, keep)


class AlterColumnTypeError(LanceError, TypeError):
    """An alteration's ``name``, ``nullable`` or ``data_type`` of the wrong type (pylance: TypeError)."""


def alter_columns(ds: LanceDataset, *alterations: dict[str, Any]) -> None:
    fields = [file_pb2.Field() for _ in ds.manifest.fields]
    for g, f in zip(fields, ds.manifest.fields, strict=True):
        g.CopyFrom(f)
    by_id = {int(f.id): f for f in fields}
    casts: dict[str, pa.DataType] = {}
    for alt in alterations:
        path = alt.get("path")
        if not isinstance(path, str):
            raise ChangeInputError(f"alter_columns: each alteration needs a 'path', got {alt!r}")
        for k in alt:
            if k not in ("path", "name", "nullable", "data_type"):
                raise ChangeInputError(f"alter_columns: Unknown key: {k}")
        for key, cls in (("name", str), ("nullable", bool), ("data_type", pa.DataType)):
            if key in alt and not isinstance(alt[key], cls):
                got = alt[key]
                raise AlterColumnTypeError(
                    f"alter_columns {path!r}: {key}: "
                    + ("'None' is" if got is None else f"{type(got).__name__!r} object is")
                    + f" not an instance of {cls.__name__!r}"
                )
        if all(alt.get(k) is None for k in ("name", "nullable", "data_type")):
            raise ChangeInputError(
                f"alter_columns {path!r}: At least one of name, nullable, or data_type must be specified"
            )
        try:
            target = by_id[int(_field_by_path(ds, path).id)]
        except KeyError:
            raise SchemaEvolutionError(f'Column "{path}" does not exist in the dataset {ds.uri!r}') from None
        if "data_type" in alt and alt["data_type"] is not None:
            casts[path] = alt["data_type"]
        if alt.get("nullable") is not None:
            if target.nullable and not alt["nullable"] and _has_nulls(ds, path):
                raise SchemaEvolutionError(f'Column "{path}" contains NULL values and cannot be made non-nullable')
            target.nullable = bool(alt["nullable"])
        if alt.get("name") is not None:
            name = str(alt["name"])
            if any(f.name == name and f.parent_id == target.parent_id and f.id != target.id for f in fields):
                raise SchemaEvolutionError(f'duplicate field name "{name}" in the schema of dataset {ds.uri!r}')
            target.name = name
    if not casts:
        commit_project(ds, fields)
        return
    if any(a.get("nullable") is False for a in alterations):
        raise SchemaEvolutionError(
            "cannot make a column non-nullable and cast columns in the same call: apply the cast first, then the "
            "nullability change (as pylance)"
        )
    _alter_with_casts(ds, fields, casts)


def _has_nulls(ds: LanceDataset, path: str) -> bool:
    """Whether a live row's value at ``path`` is null (a null struct above it included), as pylance checks before it
    makes a column non-nullable."""
    quoted = ".".join("`" + part.replace("`", "``") + "`" for part in path.split("."))
    return ds.count_rows(filter=f"{quoted} IS NULL") > 0


def _alter_with_casts(ds: LanceDataset, fields: list[file_pb2.Field], casts: dict[str, pa.DataType]) -> None:
    """Cast columns or fields of structs, as pylance: each cast field gets a new field id, and each fragment a new
    data file holding the cast fields alone (under their structs, which keep their ids); a Merge."""
    manifest = list(ds.manifest.fields)
    by_id = {int(f.id): f for f in manifest}
    new_types: dict[int, pa.DataType] = {}
    for p, t in casts.items():
        f = _field_by_path(ds, p)
        if int(f.parent_id) != -1 and not versions.parse(ds.manifest.data_format.version or "2.0").structural:
            # (pylance 14 commits a version it cannot read back at 2.0)
            raise SchemaEvolutionError(f"alter_columns: casting the struct field {p!r} needs file version 2.1+")
        up = int(f.parent_id)
        while up != -1:
            if by_id[up].logical_type.split(".")[0] not in ("struct", "list", "large_list"):
                raise SchemaEvolutionError(f"alter_columns: lancelot casts fields of structs and lists, not {p!r}")
            up = int(by_id[up].parent_id)
        _checkcast_column(p, _arrow_field(ds, p).type, t)
        new_types[int(f.id)] = t
    if ds.manifest_file.index_section:
        idx = table_pb2.IndexSection()
        idx.ParseFromString(ds.manifest_file.index_section)
        hit = [i.name for i in idx.indices if set(new_types) & {int(x) for x in i.fields}]
        if hit:
            raise SchemaEvolutionError(
                f"dataset {ds.uri!r}: cannot cast column(s) {list(casts)} to a new type: they have "
                f"{len(hit)} index(es) attached: {hit}; drop the index(es) before the cast, recreate them after"
            )
    kids: dict[int, list[int]] = {}
    for f in manifest:
        kids.setdefault(int(f.parent_id), []).append(int(f.id))
    first_ids: dict[int, int] = {}  # (new ids in the order of the alterations, as pylance numbers them)
    next_id = next_field_id(ds.manifest)
    for fid, t in new_types.items():
        first_ids[fid] = next_id
        next_id += len(numbered_fields(pa.schema([pa.field("x", t)]), 0))
    file_fields: list[file_pb2.Field] = []
    replaced: dict[int, list[file_pb2.Field]] = {}

    def pruned(fid: int, af: pa.Field) -> pa.Field | None:
        """``af`` (dataset field ``fid``) kept down to its cast fields (the new ones numbered), or None."""
        old = by_id[fid]
        if fid in new_types:
            nf = pa.field(af.name, new_types[fid], af.nullable, af.metadata)
            sub = numbered_fields(pa.schema([nf]), first_ids[fid])
            sub[0].parent_id, sub[0].nullable = old.parent_id, old.nullable
            replaced[fid] = sub
            file_fields.extend(sub)
            return nf
        listed = pa.types.is_list(af.type) or pa.types.is_large_list(af.type)
        if fid not in kids or not (pa.types.is_struct(af.type) or listed):
            return None
        mark = len(file_fields)
        children = [af.type.value_field] if listed else list(af.type)
        kept = [k for c, cf in zip(kids[fid], children, strict=True) if (k := pruned(c, cf)) is not None]
        if not kept:
            return None
        file_fields.insert(mark, _copy(old))
        if listed:
            kind = pa.list_ if pa.types.is_list(af.type) else pa.large_list
            return pa.field(af.name, kind(kept[0]), af.nullable, af.metadata)
        return pa.field(af.name, pa.struct(kept), af.nullable, af.metadata)

    tops = []
    for fid, af in zip(kids.get(-1, []), ds.schema, strict=True):
        if (k := pruned(fid, af)) is not None:
            tops.append(k)
    schema = pa.schema(tops)
    out: list[file_pb2.Field] = []
    gone: set[int] = set()
    for f in fields:
        fid = int(f.id)
        if int(f.parent_id) in gone:
            gone.add(fid)
        elif fid in replaced:
            gone.add(fid)
            sub = [_copy(g) for g in replaced[fid]]
            sub[0].name, sub[0].nullable = f.name, f.nullable  # (renamed or made nullable in this call too)
            out.extend(sub)
        else:
            out.append(f)

    def values(frag: Fragment) -> pa.Table:
        t = frag.read_physical([f.name for f in tops], 0, frag.physical_rows)
        return pa.table([_pruned_values(t.column(i).combine_chunks(), f) for i, f in enumerate(tops)], schema=schema)

    frags = write_column_files(ds, schema, file_fields, values)
    commit_merge(ds, frags, out)


def _copy(f: file_pb2.Field) -> file_pb2.Field:
    g = file_pb2.Field()
    g.CopyFrom(f)
    return g


def _arrow_field(ds: LanceDataset, path: str) -> pa.Field:
    """The dataset's Arrow field at a dotted path of struct fields."""
    parts = path.split(".")
    f = ds.schema.field(parts[0])
    for name in parts[1:]:
        listed = pa.types.is_list(f.type) or pa.types.is_large_list(f.type)
        f = f.type.value_field if listed else f.type.field(name)
    return f


def _pruned_values(arr: pa.Array, f: pa.Field) -> pa.Array:
    """``arr`` (a dataset column) cut down to the (pruned) field ``f``: its kept struct fields, cast leaves cast."""
    if pa.types.is_temporal(f.type) and arr.type != f.type:  # (truncating finer units, as arrow-rs's cast does)
        try:
            return pc.cast(arr, f.type, safe=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaEvolutionError(f"Cast error: cannot cast {f.name!r} from {arr.type} to {f.type}: {e}") from None
    if (pa.types.is_list(f.type) or pa.types.is_large_list(f.type)) and arr.type != f.type:
        cls = pa.ListArray if pa.types.is_list(f.type) else pa.LargeListArray
        values = _pruned_values(arr.values, f.type.value_field)
        return cls.from_arrays(arr.offsets, values, type=f.type, mask=arr.is_null() if arr.null_count else None)
    if not pa.types.is_struct(f.type) or not pa.types.is_struct(arr.type) or arr.type == f.type:
        return cast_column(pa.chunked_array([arr], arr.type), f).combine_chunks()
    children = [_pruned_values(arr.field(c.name), c) for c in f.type]
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(f.type), mask=mask)


def _checkcast_column(path: str, old: pa.DataType, new: pa.DataType) -> None:
    """Casts pylance allows: within integers, floats, temporal types, decimals, booleans; between size variants of
    strings and binaries; lists (of any size variant, fixed-size too) whose items may be cast so."""
    if not _same_kind(old, new):
        raise SchemaEvolutionError(f'Cannot cast column "{path}" from {rust_name(old)} to {rust_name(new)}')


def _same_kind(old: pa.DataType, new: pa.DataType) -> bool:
    t = pa.types
    kinds = (
        t.is_integer,
        t.is_floating,
        t.is_temporal,
        t.is_decimal,
        t.is_boolean,
        lambda x: t.is_string(x) or t.is_large_string(x),
        lambda x: t.is_binary(x) or t.is_large_binary(x),
    )
    if any(k(old) and k(new) for k in kinds):
        return True
    lists = (t.is_list, t.is_large_list, t.is_fixed_size_list)
    if any(k(old) for k in lists) and any(k(new) for k in lists):
        return _same_kind(old.value_type, new.value_type)
    return bool(old == new)
