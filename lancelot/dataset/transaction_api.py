"""Transactions as values (pylance's ``Transaction``): a ``LanceOperation`` planned against a read
version, committed later, by this process or another, with ``LanceDataset.commit`` (transaction.proto
``Transaction``; table format, "Transaction types").

Two-phase writers use it: ``merge_insert(...).execute_uncommitted(data)`` writes the new files and
returns the Update transaction; committing it (transaction_commit.py) makes one version, with the
conflict rules of its operation (transaction.py) against whatever was committed since its read
version. Operations are lancelot's or pylance's ``LanceOperation`` objects (read by their class name
and fields), so a driver can commit a transaction either library planned. ``read_transaction`` /
``get_transactions`` turn the stored transaction files back into these values; ``LanceSchema`` is
the schema with field ids that Merge and Project take.
"""

from __future__ import annotations

import copy
import json
import uuid as _uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lancelot.dataset.lance_operation import LanceOperation, as_fragment_metadata
from lancelot.errors import LanceError, LanceValueError
from lancelot.format.pb import file_pb2, table_pb2, transaction_pb2

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset


class TransactionError(LanceError, ValueError):
    """A transaction that cannot be committed as given (pylance raises ValueError/OSError alike)."""


class UnsupportedTransactionError(LanceError, OSError):
    """A transaction pylance refuses with an OSError ("Not supported": a batch of non-appends)."""


class InvalidOperationError(LanceError, OSError):
    """An operation pylance refuses as "Invalid user input" with an OSError (e.g. new fragments
    without row ids in a dataset with stable row ids)."""

    __str__ = BaseException.__str__


@dataclass
class Transaction:
    """An operation planned against ``read_version``, not yet committed (pylance's ``Transaction``)."""

    read_version: int
    operation: LanceOperation.BaseOperation
    uuid: str = field(default_factory=lambda: str(_uuid.uuid4()))
    transaction_properties: dict[str, str] | None = field(default_factory=dict)


class LanceField:
    """One field of a ``LanceSchema``: name, field id, children (pylance's ``LanceField``)."""

    def __init__(self, schema: LanceSchema, pb: file_pb2.Field) -> None:
        self._schema, self._pb = schema, pb

    def name(self) -> str:
        return str(self._pb.name)

    def id(self) -> int:
        return int(self._pb.id)

    def children(self) -> list[LanceField]:
        return [LanceField(self._schema, f) for f in self._schema._fields if f.parent_id == self._pb.id]

    @property
    def metadata(self) -> dict[str, str]:
        """The field's metadata, as strings (a property, as pylance's)."""
        return {k: bytes(v).decode("utf-8", "replace") for k, v in self._pb.metadata.items()}

    def to_arrow(self) -> pa.Field:
        return self._schema._arrow_field(self._pb)

    def __repr__(self) -> str:
        return f"LanceField(name={self.name()!r}, id={self.id()})"


class LanceSchema:
    """A schema with Lance field ids (pylance's ``LanceSchema``, ``LanceDataset.lance_schema``): what
    ``Merge`` and ``Project`` need to say which data-file field ids the columns are."""

    def __init__(self, fields: Sequence[file_pb2.Field], metadata: dict[str, bytes] | None = None) -> None:
        self._fields = [copy.deepcopy(f) for f in fields]
        self._metadata = dict(metadata or {})

    @staticmethod
    def from_pyarrow(schema: pa.Schema) -> LanceSchema:
        """Field ids by position, pre-order (as pylance assigns them)."""
        from lancelot.dataset.write_schema import schema_fields, schema_metadata

        return LanceSchema(schema_fields(schema), schema_metadata(schema))

    def to_pyarrow(self) -> pa.Schema:
        from lancelot.dataset.manifest import manifest_schema

        m = table_pb2.Manifest(fields=self._fields)
        for k, v in self._metadata.items():
            m.schema_metadata[k] = v
        return manifest_schema(m)

    def fields(self) -> list[LanceField]:
        return [LanceField(self, f) for f in self._fields if f.parent_id == -1]

    def field(self, name: str) -> LanceField | None:
        return next((f for f in self.fields() if f.name() == name), None)

    def _arrow_field(self, pb: file_pb2.Field) -> pa.Field:
        top = pb
        by_id = {int(f.id): f for f in self._fields}
        path = [pb.name]
        while top.parent_id != -1:
            top = by_id[int(top.parent_id)]
            path.insert(0, top.name)
        f = self.to_pyarrow().field(path[0])
        for name in path[1:]:
            f = f.type.field(name)
        return f

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, LanceSchema)
            and [f.SerializeToString() for f in self._fields] == [f.SerializeToString() for f in other._fields]
            and self._metadata == other._metadata
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        """pylance's: the Rust schema's debug text (``Schema { fields: [Field { name: "x", id: 0, ... }], ... }``)."""
        top = ", ".join(_debug(f, self._fields) for f in self._fields if f.parent_id == -1)
        return f"Schema {{ fields: [{top}], metadata: {_debug_map({k: bytes(v) for k, v in self._metadata.items()})} }}"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _unpickle, ([f.SerializeToString() for f in self._fields], self._metadata)


def _unpickle(fields: list[bytes], metadata: dict[str, bytes]) -> LanceSchema:
    return LanceSchema([file_pb2.Field.FromString(b) for b in fields], metadata)


_ENCODINGS = {1: "Some(Plain)", 2: "Some(VarBinary)", 3: "Some(Dictionary)", 4: "Some(RLE)"}


def _debug_map(m: Mapping[str, bytes]) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v.decode('utf-8', 'replace'))}" for k, v in m.items()) + "}"


def _debug(f: file_pb2.Field, every: Sequence[file_pb2.Field]) -> str:
    """A field as the Rust ``Field``'s debug text (pylance's repr), its children nested."""
    children = ", ".join(_debug(c, every) for c in every if c.parent_id == f.id and c is not f)
    pk = [g.id for g in every if g.unenforced_primary_key]
    return (
        f"Field {{ name: {json.dumps(f.name)}, id: {f.id}, parent_id: {f.parent_id}, "
        f'logical_type: LogicalType("{f.logical_type}"), metadata: {_debug_map(dict(f.metadata))}, '
        f"encoding: {_ENCODINGS.get(f.encoding, 'None')}, nullable: {str(f.nullable).lower()}, "
        f"children: [{children}], dictionary: {'Some(..)' if f.HasField('dictionary') else 'None'}, "
        f"unenforced_primary_key_position: {f'Some({pk.index(f.id)})' if f.id in pk else 'None'}, "
        "unenforced_clustering_key_position: None }"
    )


def schema_fields_of(schema: Any) -> tuple[list[file_pb2.Field], dict[str, bytes]]:
    """Manifest fields (with ids) and schema metadata of a lancelot or pylance ``LanceSchema``, or of
    a ``pyarrow.Schema`` (ids by position, as pylance assigns them)."""
    from lancelot.dataset.write_schema import schema_fields, schema_metadata

    if isinstance(schema, LanceSchema):
        return [copy.deepcopy(f) for f in schema._fields], dict(schema._metadata)
    if isinstance(schema, pa.Schema):
        from lancelot.schema import normalize_schema

        stored = normalize_schema(schema)
        return schema_fields(stored), schema_metadata(stored)
    if hasattr(schema, "to_pyarrow") and hasattr(schema, "fields"):  # pylance's LanceSchema
        arrow = schema.to_pyarrow()
        ids: list[int] = []

        def walk(f: Any) -> None:
            ids.append(int(f.id()))
            for c in f.children():
                walk(c)

        for f in schema.fields():
            walk(f)
        fields, md = schema_fields_of(arrow)
        if len(ids) != len(fields):
            raise TransactionError(f"cannot read the field ids of {schema!r}")
        remap = {int(f.id): i for f, i in zip(fields, ids)}
        for f in fields:
            f.id = remap[int(f.id)]
            if f.parent_id != -1:
                f.parent_id = remap[int(f.parent_id)]
        return fields, md
    raise TypeError(f"expected a LanceSchema or pyarrow.Schema, got {type(schema).__name__}")


def as_pyarrow_schema(schema: Any) -> pa.Schema:
    if isinstance(schema, pa.Schema):
        return schema
    if hasattr(schema, "to_pyarrow"):
        out: pa.Schema = schema.to_pyarrow()
        return out
    raise TypeError(f"expected a pyarrow.Schema or LanceSchema, got {type(schema).__name__}")


# -- protobuf <-> values -------------------------------------------------------------------------------


def fragment_protos(frags: Any) -> list[table_pb2.DataFragment]:
    """An operation's fragments (a list of ``FragmentMetadata``, or what stands for one) as manifest messages; a
    TypeError for anything but a list."""
    if not isinstance(frags, list):
        raise TypeError(f"fragments must be list[FragmentMetadata], got {type(frags)}")
    return [as_fragment_metadata(f).to_pb() for f in frags]


def _metas(frags: Any) -> list[Any]:
    from lancelot.dataset.fragment_metadata import FragmentMetadata

    return [FragmentMetadata.from_pb(f) for f in frags]


def _update_map(m: transaction_pb2.Transaction.UpdateMap) -> LanceOperation.UpdateMap:
    return LanceOperation.UpdateMap(
        {e.key: (e.value if e.HasField("value") else None) for e in m.update_entries}, bool(m.replace)
    )


def operation_from_pb(pb: transaction_pb2.Transaction) -> LanceOperation.BaseOperation | None:
    """The ``LanceOperation`` of a stored transaction (None for kinds lancelot does not expose)."""
    kind = pb.WhichOneof("operation")
    if kind == "append":
        return LanceOperation.Append(_metas(pb.append.fragments))
    if kind == "overwrite":
        o = pb.overwrite
        return LanceOperation.Overwrite(LanceSchema(o.schema, dict(o.schema_metadata)), _metas(o.fragments))
    if kind == "delete":
        d = pb.delete
        return LanceOperation.Delete(_metas(d.updated_fragments), [int(i) for i in d.deleted_fragment_ids], d.predicate)
    if kind == "update":
        u = pb.update
        mode = {0: "rewrite_rows", 1: "rewrite_columns"}.get(int(u.update_mode), "")
        return LanceOperation.Update(
            [int(i) for i in u.removed_fragment_ids],
            _metas(u.updated_fragments),
            _metas(u.new_fragments),
            [int(i) for i in u.fields_modified],
            [int(i) for i in u.fields_for_preserving_frag_bitmap],
            mode,
        )
    if kind == "merge":
        return LanceOperation.Merge(
            _metas(pb.merge.fragments), LanceSchema(pb.merge.schema, dict(pb.merge.schema_metadata))
        )
    if kind == "project":
        return LanceOperation.Project(LanceSchema(pb.project.schema))
    if kind == "restore":
        return LanceOperation.Restore(int(pb.restore.version))
    if kind == "data_replacement":
        groups = [
            LanceOperation.DataReplacementGroup(int(g.fragment_id), copy.deepcopy(g.new_file))
            for g in pb.data_replacement.replacements
        ]
        return LanceOperation.DataReplacement(groups)
    if kind == "rewrite":
        r = pb.rewrite
        rgroups = [LanceOperation.RewriteGroup(_metas(g.old_fragments), _metas(g.new_fragments)) for g in r.groups]
        if r.old_fragments or r.new_fragments:  # the older, ungrouped form
            rgroups.insert(0, LanceOperation.RewriteGroup(_metas(r.old_fragments), _metas(r.new_fragments)))
        rewritten = [
            LanceOperation.RewrittenIndex(
                str(_uuid.UUID(bytes=bytes(i.old_id.uuid))),
                str(_uuid.UUID(bytes=bytes(i.new_id.uuid))),
                i.new_index_details.type_url,
                bytes(i.new_index_details.value),
                int(i.new_index_version),
            )
            for i in r.rewritten_indices
        ]
        return LanceOperation.Rewrite(rgroups, rewritten)
    if kind == "clone":
        c = pb.clone
        return LanceOperation.Clone(
            bool(c.is_shallow),
            c.ref_name if c.HasField("ref_name") else None,
            int(c.ref_version),
            c.ref_path,
            c.branch_name if c.HasField("branch_name") else None,
        )
    if kind == "create_index":
        from lancelot.dataset.index_types import index_from_pb  # (pylance's Index values)

        ci = pb.create_index
        return LanceOperation.CreateIndex(
            [index_from_pb(i) for i in ci.new_indices], [index_from_pb(i) for i in ci.removed_indices]
        )
    if kind == "update_config":
        c = pb.update_config
        return LanceOperation.UpdateConfig(
            _update_map(c.config_updates) if c.HasField("config_updates") else None,
            _update_map(c.table_metadata_updates) if c.HasField("table_metadata_updates") else None,
            _update_map(c.schema_metadata_updates) if c.HasField("schema_metadata_updates") else None,
            {int(k): _update_map(v) for k, v in c.field_metadata_updates.items()} or None,
        )
    return None


def transaction_from_pb(pb: transaction_pb2.Transaction) -> Transaction:
    op = operation_from_pb(pb)
    if op is None:
        raise TransactionError(f"transaction {pb.uuid}: lancelot exposes no {pb.WhichOneof('operation')} operation")
    return Transaction(int(pb.read_version), op, str(pb.uuid), dict(pb.transaction_properties))


def read_transaction(ds: LanceDataset, version: int) -> Transaction | None:
    """The transaction that committed ``version`` (None: none stored, or a kind lancelot does not expose)."""
    from lancelot.dataset.commit import load_transaction

    mf = ds.checkout_version(int(version)).manifest_file  # (the listing re-read when this object has not seen it)
    pb = load_transaction(ds.store, mf, where=f"dataset {ds.uri!r} version {version}")
    if pb is None or operation_from_pb(pb) is None:
        return None
    return transaction_from_pb(pb)


def get_transactions(ds: LanceDataset, recent_transactions: int = 10) -> list[Transaction | None]:
    """The transactions of the latest versions, newest first (pylance's ``get_transactions``)."""
    names = ds.version_names()  # a fresh listing (an object opened by name knows one version)
    top = max(names)
    out = []
    for v in range(top, max(0, top - int(recent_transactions)), -1):
        if v not in names:
            break
        out.append(read_transaction(ds, v))
    return out


def schema_to_json(schema: pa.Schema) -> dict[str, Any]:
    """``schema`` as pylance's JSON dict (``lance.schema.schema_to_json``): fields with name, type (Lance's
    logical type name; children under ``fields``, sizes under ``length``), nullable, and metadata when set."""
    from lancelot.schema import logical_type

    def of_type(t: pa.DataType) -> dict[str, Any]:
        if pa.types.is_struct(t):
            return {"type": "struct", "fields": [of_field(t.field(i)) for i in range(t.num_fields)]}
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return {"type": "large_list" if pa.types.is_large_list(t) else "list", "fields": [of_field(t.value_field)]}
        if pa.types.is_fixed_size_list(t):
            return {"type": "fixed_size_list", "fields": [of_field(t.value_field)], "length": t.list_size}
        if pa.types.is_fixed_size_binary(t):
            return {"type": "fixed_size_binary", "length": t.byte_width}
        if pa.types.is_map(t):
            raise LanceValueError(f"Failed to convert schema to json: Json conversion: Unsupported type: {t}")
        return {"type": logical_type(t)}

    def of_field(f: pa.Field) -> dict[str, Any]:
        out = {"name": f.name, "type": of_type(f.type), "nullable": f.nullable}
        if f.metadata:
            out["metadata"] = {k.decode(): v.decode() for k, v in f.metadata.items()}
        return out

    out: dict[str, Any] = {"fields": [of_field(f) for f in schema]}
    if schema.metadata:
        out["metadata"] = {k.decode(): v.decode() for k, v in schema.metadata.items()}
    return out


def json_to_schema(schema_json: dict[str, Any]) -> pa.Schema:
    """The pyarrow schema of pylance's JSON dict (``lance.schema.json_to_schema``; ``schema_to_json``'s inverse).

    Raises:
        ValueError: A required key (``fields``, ``name``, ``type``, ``nullable``) is missing or malformed.
    """
    from lancelot.schema import parse_logical_type

    def need(d: Any, key: str) -> Any:
        if not isinstance(d, dict) or key not in d:
            raise LanceValueError(f"Failed to convert json to schema: missing field `{key}`, json={schema_json}")
        return d[key]

    def of_field(d: Any) -> pa.Field:
        t, nullable = need(d, "type"), need(d, "nullable")
        name, kind = need(d, "name"), need(t, "type")
        kids = [of_field(c) for c in t.get("fields", ())]
        if kind == "struct":
            typ: pa.DataType = pa.struct(kids)
        elif kind in ("list", "large_list", "fixed_size_list"):
            if len(kids) != 1:
                raise LanceValueError(f"Failed to convert json to schema: {kind} needs one child field")
            typ = (
                pa.list_(kids[0], int(need(t, "length")))
                if kind == "fixed_size_list"
                else (pa.large_list if kind == "large_list" else pa.list_)(kids[0])
            )
        elif kind == "fixed_size_binary":
            typ = pa.binary(int(need(t, "length")))
        else:
            try:
                typ = parse_logical_type(kind)
            except LanceError as e:
                raise LanceValueError(f"Failed to convert json to schema: {e}") from None
        return pa.field(name, typ, bool(nullable), d.get("metadata") or None)

    fields = need(schema_json, "fields")
    if not isinstance(fields, list):
        raise LanceValueError("Failed to convert json to schema: invalid type for `fields`, expected a sequence")
    return pa.schema([of_field(f) for f in fields], schema_json.get("metadata") or None)
