"""``LanceDataset.validate()`` and ``LanceDataset.drop()``: the consistency checks and the removal pylance offers beside
reading.

``validate`` checks what a manifest promises about its fragments (table.proto ``Manifest`` and ``DataFragment``): unique
fragment ids within ``max_fragment_id``, data files that exist and hold only schema fields, deletion files that exist
and delete no more rows than the fragment has, and indices built at this version or before. The first problem raises a
CorruptFileError (a missing file: LanceFileNotFoundError, an OSError as pylance's) naming the dataset, version,
fragment, file."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from lancelot.dataset.deletion import read_deletions
from lancelot.dataset.store import ObjectStore
from lancelot.errors import CorruptFileError, DatasetNotFoundError, LanceFileNotFoundError

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset
    from lancelot.format.pb import table_pb2


def validate(ds: LanceDataset) -> None:
    """Raise CorruptFileError on the first inconsistency of this version's manifest and files."""
    m = ds.manifest
    where = f"dataset {ds.uri!r} version {ds.version}"
    seen: set[int] = set()
    for frag in m.fragments:
        fid = int(frag.id)
        at = f"{where}: fragment {fid}"
        if fid in seen:
            raise CorruptFileError(f"{at}: fragment id repeats")
        seen.add(fid)
        if m.HasField("max_fragment_id") and fid > m.max_fragment_id:
            raise CorruptFileError(f"{at}: id above the manifest's max_fragment_id {m.max_fragment_id}")
        validate_fragment(ds, frag)
    from lancelot.dataset.indices import index_metadata

    for meta in index_metadata(ds):
        if int(meta.dataset_version) > ds.version:
            raise CorruptFileError(f"{where}: index {meta.name!r} was built at a later version {meta.dataset_version}")


def validate_fragment(ds: LanceDataset, frag: table_pb2.DataFragment) -> None:
    """One fragment's checks (pylance's ``LanceFragment.validate``): data files that exist and hold only schema
    fields, a deletion file that exists and deletes no more rows than the fragment has."""
    fid = int(frag.id)
    at = f"dataset {ds.uri!r} version {ds.version}: fragment {fid}"
    field_ids = {int(f.id) for f in ds.manifest.fields}
    if not frag.files:
        raise CorruptFileError(f"{at}: no data files")
    for df in frag.files:
        unknown = [x for x in df.fields if x >= 0 and x not in field_ids]
        if unknown:
            raise CorruptFileError(f"{at}: data file {df.path!r} holds fields {unknown} not in the schema")
        if len(df.column_indices) and len(df.column_indices) != len(df.fields):
            raise CorruptFileError(
                f"{at}: data file {df.path!r} has {len(df.fields)} fields but {len(df.column_indices)} column indices"
            )
        store, prefix = ds.base_store(df, at)
        if not store.exists(prefix + df.path):
            raise LanceFileNotFoundError(f"{at}: data file {df.path!r} is missing", path=store.url(prefix + df.path))
    if frag.HasField("deletion_file"):
        d = frag.deletion_file
        if d.num_deleted_rows > frag.physical_rows:
            raise CorruptFileError(f"{at}: deletes {d.num_deleted_rows} of {frag.physical_rows} rows")
        deleted = read_deletions(ds.store, fid, d, int(frag.physical_rows), at)
        if d.num_deleted_rows and len(deleted) != d.num_deleted_rows:
            raise CorruptFileError(
                f"{at}: deletion file holds {len(deleted)} rows, the manifest says {d.num_deleted_rows}"
            )


def drop(
    base_uri: str | os.PathLike[str],
    storage_options: dict[str, Any] | None = None,
    ignore_not_found: bool | None = None,
) -> None:
    """Delete the dataset at ``base_uri`` and everything under it (pylance's ``LanceDataset.drop``)."""
    store = ObjectStore(base_uri, storage_options)
    if not store.list("_versions/"):
        if ignore_not_found:
            return
        raise DatasetNotFoundError(f"dataset {store.uri!r} does not exist (no manifest in _versions/)")
    if store.fs is None:
        import shutil

        shutil.rmtree(store.root)
    else:
        store.fs.rm(store.root, recursive=True)
