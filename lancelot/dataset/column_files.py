"""The new columns of a schema change, as data files: fresh field ids, one new data file per fragment, and the Merge or
Project that commits them (table format, "Schema evolution"); shared by schema_evolution.py and schema_alter.py.

New columns get fresh field ids (one past the largest id the schema or any data file has used) and live in one new data
file per fragment, beside the fragment's other files, with as many rows as the fragment has physically (deleted rows
hold nulls)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.changes import SCAN_ROWS, ChangeInputError, commit_change, fragment_map, retrying, row_groups
from lancelot.dataset.fragment_metadata import DATA_DIR
from lancelot.dataset.manifest import ManifestFile, writable_data_version
from lancelot.dataset.operation_changes import build_merge, build_project
from lancelot.dataset.transaction import new_transaction
from lancelot.encodings.structural.write_pipeline import INLINE_BYTES
from lancelot.errors import LanceError, RetryableCommitConflictError
from lancelot.format.pb import file_pb2, table_pb2
from lancelot.util.pools import shared_pool
from lancelot.versions import parse as parse_version

if TYPE_CHECKING:
    from lancelot.dataset.changes import Committed
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.dataset.fragment import Fragment
    from lancelot.dataset.udf import BatchUDFCheckpoint


class SchemaEvolutionError(LanceError, OSError):
    """A schema change pylance refuses with an OSError (conflicting names, bad casts...)."""

    __str__ = BaseException.__str__


# -- field ids -----------------------------------------------------------------------------------


def next_field_id(m: table_pb2.Manifest) -> int:
    """One past every field id the schema or a data file has used (ids are never reused)."""
    used = [int(f.id) for f in m.fields]
    used += [int(x) for fr in m.fragments for d in fr.files for x in d.fields]
    return max(used, default=-1) + 1


def numbered_fields(schema: pa.Schema, first_id: int) -> list[file_pb2.Field]:
    """Manifest fields of ``schema`` with ids from ``first_id`` (pre-order, as pylance assigns)."""
    from lancelot.dataset.write_schema import schema_fields

    out = []
    for f in schema_fields(schema):
        g = file_pb2.Field()
        g.CopyFrom(f)
        g.id = int(f.id) + first_id
        if int(f.parent_id) >= 0:
            g.parent_id = int(f.parent_id) + first_id
        out.append(g)
    return out


def merge_transaction(
    ds: LanceDataset, frags: list[table_pb2.DataFragment], fields: list[file_pb2.Field]
) -> tuple[Any, Callable[..., Any]]:
    """The Merge of ``frags`` and ``fields`` (the schema metadata kept) on ``ds``'s version: its transaction and the
    manifest builder ``commit_change`` takes."""
    txn = new_transaction(ds.version)
    txn.merge.fragments.extend(frags)
    txn.merge.schema.extend(fields)
    for k, v in ds.manifest.schema_metadata.items():
        txn.merge.schema_metadata[k] = v
    read_ids = {int(f.id) for f in ds.manifest.fragments}
    return txn, build_merge(frags, fields, None, read_ids, ds.uri)


def commit_merge(ds: LanceDataset, frags: list[table_pb2.DataFragment], fields: list[file_pb2.Field]) -> None:
    txn, build = merge_transaction(ds, frags, fields)
    ds.move_to(*commit_change(ds, txn, build))


def commit_project(ds: LanceDataset, fields: list[file_pb2.Field]) -> None:
    """Commit the Project of ``fields``; over concurrent appends and updates (a retryable conflict) once more on the
    latest version when no commit since ``ds``'s version changed the schema or replaced the data (as pylance's
    alter/drop_columns, whose Project rebases over those but not over a Merge, Project, Overwrite or Restore)."""

    def attempt(cur: LanceDataset) -> Committed:
        if cur is not ds:
            kept = {int(v["version"]) for v in cur.versions()}  # (a cleaned-up version is not checked: pylance)
            since = [cur.read_transaction(v) for v in range(ds.version + 1, cur.version + 1) if v in kept]
            kinds = {type(t.operation).__name__ if t is not None else None for t in since}
            changed = list(cur.manifest.fields) != list(ds.manifest.fields)  # (also over cleaned-up versions)
            if changed or kinds & {None, "Merge", "Project", "Overwrite", "Restore", "UpdateMemWalState"}:
                raise RetryableCommitConflictError(
                    f"dataset {ds.uri!r}: commit conflict with a concurrent {sorted(map(str, kinds))} since version "
                    f"{ds.version}; re-read the dataset and retry"
                )
        txn = new_transaction(cur.version)
        txn.project.schema.extend(fields)
        return commit_change(cur, txn, build_project(fields, None, cur.uri))

    ds.move_to(*retrying(ds, 1, attempt))


# -- new data files per fragment --------------------------------------------------------------------


def write_column_files(
    ds: LanceDataset,
    schema: pa.Schema,
    fields: list[file_pb2.Field],
    values: Callable[[Fragment], pa.Table],
    pure: bool = False,
    checkpoint: BatchUDFCheckpoint | None = None,
    only: Fragment | None = None,
    groups: Callable[[list[Fragment]], list[pa.Table]] | None = None,
) -> list[table_pb2.DataFragment]:
    """Every fragment of ``ds`` with one more data file: ``values(fragment)`` (its physical rows) written with
    ``fields``' ids.  Values are computed in order on this thread (a reader or a function sees the fragments in turn);
    when ``pure`` (SQL expressions), two fragments side by side; given ``groups`` (``values`` of each of a run of
    fragments at once), by runs of up to ``SCAN_ROWS`` rows.  Each file (but a small one) is written on another
    thread while this one prepares the next (at most a few fragments' new columns in memory).  With a ``checkpoint``,
    fragments it holds are taken from it, and each fragment written is recorded in it (its file then survives a
    failure of the rest)."""
    from concurrent.futures import Future, wait

    written: list[str] = []
    new_files = file_writer(ds, schema, fields)

    def write(nf: table_pb2.DataFragment, t: pa.Table) -> table_pb2.DataFragment:
        files = new_files(t)
        written.extend(d.path for d in files)
        nf.files.extend(files)
        if checkpoint is not None:
            from lancelot.dataset.udf import fragment_json

            checkpoint.insert_fragment(int(nf.id), fragment_json(nf))
            for d in files:
                written.remove(d.path)  # kept for the resumed run
        return nf

    prev: Future[table_pb2.DataFragment] | None = None
    out: list[table_pb2.DataFragment] = []
    pool = shared_pool("column-files", 2)  # (one file of this call at a time: ``prev``)
    frags = [only] if only is not None else ds.get_fragments()
    computed: Iterator[pa.Table | None] | None = None
    grouped = groups is not None and checkpoint is None
    if groups is not None and grouped:
        computed = (t for g in row_groups(frags, SCAN_ROWS) for t in groups(g))
    elif pure:
        computed = fragment_map(lambda f: values(f) if f.physical_rows else None, frags, 2)
    try:
        for f in frags:
            nf = table_pb2.DataFragment()
            nf.CopyFrom(f.data_fragment)
            hit = checkpointed(checkpoint, f, fields) if checkpoint is not None else None
            if hit is not None:
                out.append(hit)
                continue
            t = next(computed) if computed is not None else None
            if not f.physical_rows:
                out.append(nf)
                continue
            t = new_values(f, t if t is not None else values(f), schema)
            if prev is not None:
                prev.result()  # the previous file is written (or its error raised)
                prev = None
            out.append(nf)
            if t.nbytes < INLINE_BYTES:  # a small file: written here (handing it over costs more than it saves)
                write(nf, t)
            else:
                prev = pool.submit(write, nf, t)
        if prev is not None:
            prev.result()
    except BaseException:
        if prev is not None:
            wait([prev])
        for p in written:  # files no manifest will reference
            try:
                ds.store.delete(f"data/{p}")
            except Exception:  # noqa: BLE001
                pass
        raise
    finally:
        if isinstance(computed, Generator):
            computed.close()
    return out


def new_values(f: Fragment, t: pa.Table, schema: pa.Schema) -> pa.Table:
    """``t``, the new columns' values of ``f``'s physical rows, checked and cast to ``schema``."""
    if t.num_rows != f.physical_rows:
        raise ChangeInputError(f"{f.where}: {t.num_rows} new values for {f.physical_rows} rows")
    return pa.Table.from_arrays([cast_column(t.column(c.name), c) for c in schema], schema=schema).combine_chunks()


def file_writer(
    ds: LanceDataset, schema: pa.Schema, fields: list[file_pb2.Field]
) -> Callable[[pa.Table], list[table_pb2.DataFile]]:
    """``column_files`` for many tables of ``schema`` (one per fragment): what their files share (file version, stored
    schema, field ids and columns) worked out once, each table then written as one data file; data of blob v2 columns
    goes through ``column_files`` (write_fragments writes their bytes its own way)."""
    from lancelot.dataset.blob_schema import manifest_schema
    from lancelot.dataset.write_schema import dataset_fields, file_field_lists
    from lancelot.dataset.writing import UnwritableTypeError, data_file_name
    from lancelot.errors import UnsupportedTypeError
    from lancelot.schema import normalize_schema
    from lancelot.writer import resolve_version

    version = resolve_version(writable_data_version(ds.manifest, f"dataset {ds.uri!r} version {ds.version}"))
    stored = normalize_schema(schema)
    if manifest_schema(stored, version) is not stored:
        return lambda t: column_files(ds, t, fields)
    base = ManifestFile(table_pb2.Manifest(fields=fields), None, None)
    ids, cols = file_field_lists(dataset_fields(stored, base), version)
    major, minor = parse_version(version).key

    def write(t: pa.Table) -> list[table_pb2.DataFile]:
        if not t.num_rows:
            return []
        name = data_file_name()
        try:
            w = ds.store.open_output(f"{DATA_DIR}/{name}", stored, version=version, in_place=True)
            try:
                w.write(t)
                w.close()
            except BaseException:
                w.abort()
                raise
        except UnsupportedTypeError as e:
            if isinstance(e, OSError):
                raise
            raise UnwritableTypeError(str(e)) from e
        size = int(getattr(w, "file_size", 0))
        return [
            table_pb2.DataFile(
                path=name,
                fields=ids,
                column_indices=cols,
                file_major_version=major,
                file_minor_version=minor,
                file_size_bytes=size,
            )
        ]

    return write


def column_files(ds: LanceDataset, t: pa.Table, fields: list[file_pb2.Field]) -> list[table_pb2.DataFile]:
    """The data files holding ``t`` (one fragment's new values, ``new_values``) with ``fields``' ids: a fragment's
    files to add."""
    from lancelot.dataset.writing import write_fragments

    metas = write_fragments(
        t.to_batches(),
        ds.uri,
        schema=t.schema,
        data_storage_version=writable_data_version(ds.manifest, f"dataset {ds.uri!r} version {ds.version}"),
        max_rows_per_file=t.num_rows,
        _store=ds.store,
        _base=ManifestFile(table_pb2.Manifest(fields=fields), None, None),
    )
    return [mt.to_pb().files[0] for mt in metas]


def checkpointed(
    checkpoint: BatchUDFCheckpoint, f: Fragment, fields: list[file_pb2.Field]
) -> table_pb2.DataFragment | None:
    """``f`` with the new data file a previous run recorded for it, if that run wrote the same fields over the same
    files (else None: computed again)."""
    from lancelot.dataset.udf import fragment_of_json

    text = checkpoint.get_fragment(f.fragment_id)
    if text is None:
        return None
    done = fragment_of_json(text)
    old = [d.path for d in f.data_fragment.files]
    ids = sorted(int(x.id) for x in fields)
    if [d.path for d in done.files[: len(old)]] != old or len(done.files) != len(old) + 1:
        return None
    if sorted(int(x) for x in done.files[-1].fields) != ids or int(done.physical_rows) != f.physical_rows:
        return None
    nf = table_pb2.DataFragment()
    nf.CopyFrom(f.data_fragment)  # the fragment as it is now (its deletions may have changed since)
    nf.files.append(done.files[-1])
    return nf


def cast_column(arr: pa.ChunkedArray, f: pa.Field) -> pa.ChunkedArray:
    """``arr`` cast to ``f``'s type; a value that does not survive is named as pylance names it."""
    if arr.type == f.type:
        return arr
    try:
        out: pa.ChunkedArray = pc.cast(arr, f.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        bad = ""
        try:  # the first value that does not survive the cast, as pylance names it
            back = pc.cast(pc.cast(arr, f.type, safe=False), arr.type)
            hit = arr.filter(pc.not_equal(back, arr))
            if len(hit):
                bad = f"Can't cast value {hit[0].as_py()} to type {rust_name(f.type)}: "
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        raise SchemaEvolutionError(f"{bad}cannot cast column {f.name!r} to {f.type}: {e}") from None
    return out


def scatter_live(f: Fragment, t: pa.Table) -> pa.Table:
    """Values of the fragment's live rows placed at their physical positions (nulls elsewhere)."""
    deleted = f.deleted_positions()
    if not len(deleted):
        return t
    n = f.physical_rows
    live = f.live_positions()
    idx = np.full(n, -1, dtype=np.int64)
    idx[live] = np.arange(len(live))
    ind = pa.array(idx, mask=idx < 0)
    return t.take(ind)


def check_new_names(ds: LanceDataset, names: Iterable[str], types: Mapping[str, pa.DataType]) -> None:
    for n in names:
        if n in ds.schema.names:
            raise SchemaEvolutionError(
                f"dataset {ds.uri!r}: type conflicts between {n}({ds.schema.field(n).type}) and "
                f"{n}({types.get(n, '?')}): Column {n} already exists in the dataset"
            )


RUST_NAMES = {
    "string": "Utf8",
    "large_string": "LargeUtf8",
    "float": "Float32",
    "double": "Float64",
    "bool": "Boolean",
}


def rust_name(t: pa.DataType) -> str:
    """A type as pylance's messages name it (Arrow's Rust names: Int32, Utf8...)."""
    s = str(t)
    return RUST_NAMES.get(s, s[:1].upper() + s[1:])
