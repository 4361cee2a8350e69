"""The model of the stateful differential test (test_differential.py): the generator of random dataset
operations (``Setup.of`` a seed, ``_pick``/``_gen``), the twin that applies one through pylance or lancelot
(``Twin``), the reads both must answer alike (``_reads``, ``_same``) and ``run``, which replays or generates a
sequence on twin directories and checks every step."""

from __future__ import annotations

import math
import os
import random
import re
import warnings
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import partial
from typing import Any

import lance
import pyarrow as pa
from lance.optimize import Compaction

import lancelot

Op = tuple[Any, ...]

BASE = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("s", pa.string()),
        pa.field("x", pa.float64(), nullable=False),
        ("l", pa.list_(pa.int32())),
        ("st", pa.struct([("p", pa.int32()), ("q", pa.bool_())])),
    ]
)
#: one more kind of column per seed (``Setup.column``), each with nulls at every level it has
MORE = {
    "vec": [pa.field("vec", pa.list_(pa.float32(), 8))],
    "large": [("ls", pa.large_string()), ("lb", pa.large_binary())],
    "time": [("ts", pa.timestamp("us", tz="UTC")), ("d", pa.date32()), ("dec", pa.decimal128(10, 2))],
    "map": [("m", pa.map_(pa.string(), pa.int32()))],
    "dict": [("dc", pa.dictionary(pa.int32(), pa.string()))],
    "nested": [("ns", pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())])))],
}
MORE_VALUES = {
    pa.large_string(): lambda rng: "é" * rng.randrange(3) + f"k{rng.randrange(4)}",
    pa.large_binary(): lambda rng: bytes(rng.randrange(256) for _ in range(rng.randrange(5))),
    pa.timestamp("us", tz="UTC"): lambda rng: datetime(2024, 1, 1, tzinfo=UTC) + timedelta(hours=rng.randrange(900)),
    pa.date32(): lambda rng: date(2024, 1, 1) + timedelta(days=rng.randrange(60)),
    pa.decimal128(10, 2): lambda rng: Decimal(rng.randrange(-5000, 5000)) / 100,
    pa.dictionary(pa.int32(), pa.string()): lambda rng: f"k{rng.randrange(4)}",
}
#: reads of those columns (the filters, when the column still has its name)
MORE_FILTERS = {
    "vec": ["vec IS NULL"],
    "large": ["ls = 'k1' OR lb IS NULL"],
    "time": ["ts > TIMESTAMP '2024-01-10 00:00:00' OR d < DATE '2024-01-15'", "dec > 10"]
    + ["dec < CAST(-10.5 AS DECIMAL(10, 2))"],
    "map": ["m IS NULL"],
    "dict": ["dc = 'k1'", "dc IS NULL"],
    "nested": ["ns IS NOT NULL AND id % 2 = 0"],
}
#: SQL texts over ``x`` (a float column) and ``s`` (a string column), renamed to the schema's current names
FILTERS = ["x > 20", "s IS NULL", "id % 3 = 1", "s = 'k2' OR x < 5", "s LIKE 'k1%' OR id IN (3, 103)"]
FILTERS += ["st.p > 40 AND x BETWEEN 10 AND 30"]
DELETES = ["id % 5 = 2", "x > 40", "s IS NULL", "id < 6", "id >= 0 AND id % 7 = 0", "true", "st.q AND st.p < 30"]
#: a projection by SQL expressions (``to_table(columns={...})``)
EXPRESSIONS = {"k": "id * 2", "v": "x + 1", "e": "s IS NULL", "w": "concat(s, '-')"}
UPDATES = [({"x": "x + 1"}, "id % 3 = 0"), ({"s": "'u'"}, "x < 12"), ({"x": "x * 2"}, None), ({"s": "NULL"}, "id > 9")]
UPDATES += [({"x": "x - id", "s": "concat(s, 'v')"}, "id % 2 = 0 AND s IS NOT NULL")]
#: merge_insert variants: an upsert, an upsert whose matched rows update only where a condition holds, one that also
#: deletes the target rows the source does not match (those a condition picks), an insert of the new keys only
MERGES = [("upsert", None), ("if", "source.x > target.x"), ("by_source", "x < 25"), ("insert_only", None)]


def _named(text: str, schema: pa.Schema) -> str | None:
    """``text`` with ``x``/``s`` replaced by the schema's first float/string column (None: it has none, or ``st``)."""
    if "st." in text and "st" not in schema.names:
        return None
    for alias, kind in (("x", pa.types.is_floating), ("s", pa.types.is_string)):
        if re.search(rf"\b{alias}\b", text):
            name = next((f.name for f in schema if kind(f.type)), None)
            if name is None:
                return None
            text = re.sub(rf"\b{alias}\b", name, text)
    return text


def _value(rng: random.Random, t: pa.DataType, i: int) -> Any:
    if t in MORE_VALUES:
        return None if rng.random() < 0.15 else MORE_VALUES[t](rng)
    if pa.types.is_fixed_size_list(t):  # a vector: null now and then, a null element rarely
        return None if rng.random() < 0.1 else [round(rng.random() * 10, 2) for _ in range(t.list_size)]
    if pa.types.is_map(t):
        keys = rng.sample(["a", "b", "c", "d"], rng.randrange(4))
        return None if rng.random() < 0.1 else [(k, None if rng.random() < 0.2 else rng.randrange(50)) for k in keys]
    if pa.types.is_list(t) and pa.types.is_struct(t.value_type):
        if rng.random() < 0.1:
            return None
        return [None if rng.random() < 0.1 else _value(rng, t.value_type, i) for _ in range(rng.randrange(4))]
    if pa.types.is_string(t):
        return None if rng.random() < 0.2 else f"k{rng.randrange(5)}"
    if pa.types.is_floating(t):
        return round(rng.random() * 50, 2)
    if pa.types.is_integer(t):
        return None if rng.random() < 0.1 else rng.randrange(100)
    if pa.types.is_boolean(t):
        return rng.random() < 0.5
    if pa.types.is_list(t):
        return None if rng.random() < 0.1 else [rng.randrange(9) for _ in range(rng.randrange(3))]
    if pa.types.is_struct(t):
        return {f.name: _value(rng, f.type, i) for f in t}  # a null struct: 2.1+ only (pylance refuses 2.0)
    raise AssertionError(t)


def make_batch(rng: random.Random, schema: pa.Schema, ids: list[int]) -> pa.Table:
    """Rows of ``schema`` (the twin's current one) with the given keys."""
    cols = {}
    for f in schema:
        if f.name == "id":
            cols["id"] = ids
        else:
            cols[f.name] = [_value(rng, f.type, i) for i in ids]
            if not f.nullable:
                cols[f.name] = [0.5 if v is None else v for v in cols[f.name]]
    return pa.table(cols, schema=schema)


class Twin:
    """One library, its directory and its long-lived dataset object."""

    def __init__(self, lib: Any, path: str) -> None:
        self.lib, self.path, self.ds = lib, path, lib.dataset(path)

    def apply(self, op: Op) -> Any:
        kind, *args = op
        if kind == "fresh":  # pylance: through a fresh object at the latest version (see ``_stale``); kept on success
            old = self.ds
            if self.lib is lance:
                self.ds = lance.dataset(self.path)
            was = self.ds.version
            try:
                out = self.apply(args[0])
            except Exception:
                self.ds = old
                raise
            if self.ds.version == was:  # (nothing committed: a compaction with nothing to do)
                self.ds = old
            return out
        ds = self.ds
        if kind in ("append", "overwrite"):
            out = self.lib.write_dataset(args[0], self.path, mode=kind, max_rows_per_file=args[1])
            if args[2]:  # continue with the dataset write_dataset returned (else keep the stale one)
                self.ds = out
            return None
        if kind == "insert":  # (data, mode)
            return ds.insert(args[0], mode=args[1] if len(args) > 1 else "append")
        if kind == "delete":
            return ds.delete(args[0])
        if kind == "update":  # (values, where, data_storage_version of the rewritten rows)
            return ds.update(args[0], where=args[1], data_storage_version=args[2] if len(args) > 2 else None)
        if kind == "merge":  # (data, variant, SQL of its condition)
            b = ds.merge_insert("id")
            variant = args[1] if len(args) > 1 else "upsert"
            if variant != "insert_only":
                b = b.when_matched_update_all(args[2] if variant == "if" else None)
            b = b.when_not_matched_insert_all()
            if variant == "by_source":
                b = b.when_not_matched_by_source_delete(args[2])
            return b.execute(args[0])
        if kind == "add_columns":
            return ds.add_columns({args[0]: args[1]})
        if kind == "rename":
            return ds.alter_columns({"path": args[0], "name": args[1]})
        if kind == "nullable":
            return ds.alter_columns({"path": args[0], "nullable": True})
        if kind == "cast":
            return ds.alter_columns({"path": args[0], "data_type": args[1]})
        if kind == "drop":
            return ds.drop_columns([args[0]])
        if kind == "compact":  # (target rows, more options)
            opts = {"target_rows_per_fragment": args[0], **(args[1] if len(args) > 1 else {})}
            opts = {k: v for k, v in opts.items() if v is not None}  # (None: the table config's or the default)
            try:
                return ds.optimize.compact_files(**opts)
            except OSError as e:
                # pylance's compaction over a schema change since its object's version fails asking for a retry;
                # lancelot's plans again on the latest version: compared with pylance's retry as asked
                if self.lib is not lance or "Retryable commit conflict" not in str(e):
                    raise
                ds.checkout_latest()
                return ds.optimize.compact_files(**opts)
        if kind == "join":  # ``merge``: columns of a table joined on ``id``
            return ds.merge(args[0], left_on="id")
        if kind == "udf":  # add_columns with a batch UDF of ``id``
            udf = self.lib.batch_udf(output_schema=pa.schema([(args[0], pa.float64())]))(partial(_udf, args[0]))
            return ds.add_columns(udf, read_columns=["id"])
        if kind == "config":
            return ds.update_config(args[0], replace=args[1])
        if kind == "metadata":
            return ds.update_metadata(args[0], replace=args[1])
        if kind == "checkout":
            self.ds = ds.checkout_version(args[0])
            return None
        if kind == "latest":
            ds.checkout_latest()
            return None
        if kind == "reopen":
            self.ds = self.lib.dataset(self.path)
            return None
        if kind == "restore":
            return ds.restore()
        if kind == "tag":
            return ds.tags.create(args[0], args[1])
        if kind == "cleanup":
            return ds.cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False)
        raise AssertionError(kind)


def _udf(name: str, batch: pa.RecordBatch) -> pa.RecordBatch:
    """A new column from ``id``: half of it, null every fourth."""
    values = [None if i % 4 == 0 else i / 2 for i in batch["id"].to_pylist()]
    return pa.record_batch([pa.array(values, pa.float64())], names=[name])


def _reads(ds: Any) -> dict[str, Any]:
    """Everything compared between the twins' dataset objects."""
    t = ds.to_table()
    n = t.num_rows
    if any(pa.types.is_dictionary(f.type) for f in t.schema):  # (pyarrow sorts no chunks of unlike dictionaries)
        plain = [f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in t.schema]
        t = t.cast(pa.schema(plain))
    out: dict[str, Any] = {
        "version": ds.version,
        "latest": ds.latest_version,
        "schema": ds.schema,
        "rows": t.sort_by("id").to_pylist(),
        "count": ds.count_rows(),
        "versions": len(ds.versions()),
        "tags": sorted((k, v["version"]) for k, v in ds.tags.list().items()),
        "config": ds.config(),
        "metadata": ds.metadata,
        "storage version": ds.data_storage_version,
    }
    names = ds.schema.names
    for text in FILTERS:
        f = _named(text, ds.schema)
        if f is not None:
            out[f"count {f}"] = ds.count_rows(filter=f)
            out[f"scan {f}"] = ds.scanner(filter=f, with_row_id=True).to_table().to_pylist()
            cols = ["id", names[-1]]
            page = ds.scanner(filter=f, columns=cols, limit=4, offset=1, with_row_address=True)
            out[f"page {f}"] = page.to_table().to_pylist()
    for key, texts in MORE_FILTERS.items():
        cols = [f[0] if isinstance(f, tuple) else f.name for f in MORE[key]]
        for f in texts:
            if all(c in names for c in cols if re.search(rf"\b{c}\b", f)) and any(c in names for c in cols):
                out[f"count {f}"] = ds.count_rows(filter=f)
                out[f"scan {f}"] = ds.scanner(filter=f, with_row_id=True).to_table().to_pylist()
    if "vec" in names and pa.types.is_fixed_size_list(ds.schema.field("vec").type):
        out.update(_nearest(ds))
    exprs = {k: _named(v, ds.schema) for k, v in EXPRESSIONS.items()}
    sql = {k: v for k, v in exprs.items() if v is not None}
    out["exprs"] = ds.to_table(columns=sql, filter="id % 2 = 0", limit=9).to_pylist()
    if n:
        idx = sorted({0, n // 2, n - 1})
        out["take"] = ds.take(idx).to_pylist()
        out["take cols"] = ds.take(idx, columns=["id", names[-1]]).to_pylist()
        out["take any order"] = ds.take([n - 1, 0, n // 3, n - 1], columns=sql).to_pylist()
        out["take rowaddr"] = result_or_error(lambda: ds.take([n - 1, 0], columns=["id", "_rowaddr"]).to_pylist())
    out["take past"] = result_or_error(lambda: ds.take([n], columns=["id"]).to_pylist())
    out["limit"] = ds.scanner(limit=7, offset=3, columns=["id"], with_row_id=True).to_table().to_pylist()
    out.update(_row_reads(ds, names))
    return out


def _nearest(ds: Any) -> dict[str, Any]:
    """Exact nearest neighbours of two vectors (lancelot's search is brute force: pylance's without an index), as (id,
    distance) pairs, the distances equal within float32 precision (lancelot's may differ in the last bits)."""
    out = {}
    for k, q in enumerate([[1.0] * 8, [float(i) for i in range(8)]]):
        for opts in ({}, {"filter": "id % 2 = 0", "prefilter": True}, {"filter": "id % 3 = 0"}):
            near = {"column": "vec", "q": q, "k": 5 + 20 * k, "use_index": False}
            t = ds.to_table(nearest=near, columns=["id"], **opts)
            got = [(i, d if d is None else Near(d)) for i, d in zip(t["id"].to_pylist(), t["_distance"].to_pylist())]
            out[f"nearest {k} {opts}"] = (sorted(got, key=lambda r: r[0]), t.schema)  # (by id: ties of near distances)
            dist = [d for _, d in got if d is not None]
            out[f"nearest {k} {opts} in order"] = dist == sorted(dist)
    return out


class Near(float):
    """A distance, equal to another within float32 precision."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, float) and math.isclose(self, other, rel_tol=1e-5, abs_tol=1e-5)

    __hash__ = float.__hash__


def _row_reads(ds: Any, names: list[str]) -> dict[str, Any]:
    """Reads by and of row ids and addresses (stable or not), fragment by fragment and in a sort order."""
    frags = ds.get_fragments()
    out: dict[str, Any] = {"fragments": [(f.fragment_id, f.count_rows()) for f in frags]}
    # each data file's version (an update or compaction may write another than the dataset's)
    out["file versions"] = [[(d.file_major_version, d.file_minor_version) for d in f.metadata.files] for f in frags]
    rows = ds.to_table(columns=["id"], with_row_id=True, with_row_address=True).sort_by("id")
    out["row ids"] = rows.to_pylist()
    ids = rows["_rowid"].to_pylist()
    if ids:
        pick = [ids[-1], ids[0], ids[len(ids) // 2]]
        out["take rows"] = ds._take_rows(pick, columns=["id", names[-1]]).to_pylist()
        out["take rows gone"] = result_or_error(lambda: ds._take_rows([max(ids) + 1000], columns=["id"]).to_pylist())
    s = _named("s", ds.schema)
    keys = [s, "id"] if s else ["id"]  # (a key twice: a KeyError in lancelot, another error in pylance)
    # (not a dictionary column: lancelot's order_by of 2.0 dictionaries of two fragments fails, pyarrow cannot unify
    # dictionaries holding a null; a fix for scanner.py, ``take.take_table`` as in take.py, is left to its owner)
    shown = names[-1] if not pa.types.is_dictionary(ds.schema.field(names[-1]).type) else "id"
    order = ds.scanner(columns=list(dict.fromkeys(["id", shown])), order_by=keys, limit=6, offset=1, with_row_id=True)
    out["order"] = order.to_table().to_pylist()
    if frags:
        some = ds.scanner(fragments=[frags[-1], frags[0]], columns=["id"], with_row_id=True, with_row_address=True)
        out["fragments scan"] = some.to_table().to_pylist()
        out["fragment tables"] = [f.to_table(columns=["id", names[-1]]).to_pylist() for f in frags]
        for f in {frags[0].fragment_id: frags[0], frags[-1].fragment_id: frags[-1]}.values():
            page = f.to_table(columns=["id"], filter="id % 2 = 0", limit=3, offset=1, with_row_id=True)
            out[f"fragment {f.fragment_id} page"] = page.to_pylist()
            at = [f.count_rows() - 1, 0, f.count_rows()]  # (the last one past the end: an error)
            out[f"fragment {f.fragment_id} take"] = result_or_error(
                lambda f=f, at=at: f.take(at, columns=["id"]).to_pylist()
            )
    return out


class Raised:
    """An error a read raised, equal to another whose builtin classes (OSError, IndexError...) its own include, or the
    other way round: lancelot's errors subclass pylance's builtin class, and often one more."""

    def __init__(self, e: Exception) -> None:
        kinds = {c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins"}
        self.kinds = kinds - {"object", "BaseException", "Exception"} or {"Exception"}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Raised) and (self.kinds <= other.kinds or other.kinds <= self.kinds)

    def __repr__(self) -> str:
        return f"Raised({sorted(self.kinds)})"


def result_or_error(read: Any) -> Any:
    """What ``read()`` returns, or its error (``Raised``)."""
    try:
        return read()
    except Exception as e:  # compared between the twins
        return Raised(e)


def _same(ours: dict[str, Any], theirs: dict[str, Any], where: str) -> None:
    for k in theirs:
        shown = f"lancelot {str(ours.get(k))[:400]} pylance {str(theirs[k])[:400]}"
        assert ours.get(k) == theirs[k], f"{where}: {k}: {shown}"
    assert ours.keys() == theirs.keys(), where


def _gen(rng: random.Random, lt: Any, nxt: list[int], k: int, more: bool = False) -> Op:
    """The next operation, chosen from pylance's twin state (``more``: from MORE_OPS too)."""
    op = _pick(rng, lt, nxt, k, more)
    return _stale(lt, op) if lt.ds.version != lt.ds.latest_version else op


def _stale(lt: Any, op: Op) -> Op:
    """``op`` through pylance's object behind the latest version, as compared: as it is, through a fresh object at the
    latest version (``("fresh", op)``, where pylance's own answer is a bug and that is what lancelot does), or not at
    all (``("latest",)``: a known difference, explained)."""
    ds, kind = lt.ds, op[0]
    now = lt.lib.dataset(lt.path).schema
    gone = not set(range(ds.version, ds.latest_version)) <= {v["version"] for v in ds.versions()}
    renamed = now.names != ds.schema.names
    cast = any(f.name in now.names and now.field(f.name).type != f.type for f in ds.schema)
    if kind in ("rename", "nullable", "drop") and now != ds.schema:
        # pylance's alter/drop_columns through an object whose schema a later commit changed commit the stale
        # schema when the versions in between were cleaned up (a column dropped since comes back, unreadable)
        return ("latest",)
    if kind in ("update", "delete", "merge") and (gone or cast):
        # versions after the object's cleaned up: pylance checks only the versions left, so a delete or update it
        # rebases over them loses what they did (rows deleted there come back); lancelot's commit cannot check them
        # and re-runs the operation on the latest version.  A column cast since: pylance re-runs the update with the
        # expressions planned at the object's schema ("x + 1": Float32 + Float64 fails); lancelot plans again.
        # Either way lancelot's answer is that of the operation run on the latest version (when the names still mean
        # the same columns there)
        return ("latest",) if renamed else ("fresh", op)
    if kind == "compact" and not gone:
        later = {f.fragment_id: str(f.metadata.deletion_file) for f in lt.lib.dataset(lt.path).get_fragments()}
        if any(later.get(f.fragment_id) != str(f.metadata.deletion_file) for f in ds.get_fragments()):
            # fragments it would rewrite changed deletions since: lancelot's compaction carries the rows deleted since
            # into the new fragments and commits, where pylance's fails asking for a retry (see
            # test_stale_compaction_carries_deletions)
            return ("latest",)
    plan = {"target_rows_per_fragment": op[1], **(op[2] if len(op) > 2 else {})} if kind == "compact" else {}
    if kind == "compact" and gone and Compaction.plan(ds, {k: v for k, v in plan.items() if v is not None}).num_tasks():
        # (lancelot plans again on the latest version; pylance checks only the versions left: see above)
        return ("fresh", op)
    if kind == "insert" and (gone or cast):
        # lancelot refuses an append it cannot check against versions cleaned up since its read version (one may be an
        # overwrite or restore, which an append conflicts with), where pylance appends unchecked; and data for a
        # column cast since is checked against its new type, where pylance's fragments keep the old field id (the
        # values read back as nulls)
        return ("latest",)
    return op


def _pick(rng: random.Random, lt: Any, nxt: list[int], k: int, more: bool = False) -> Op:
    """The next operation (pylance's object as if it were at the latest version)."""
    ds = lt.ds
    schema = ds.schema
    ids = ds.to_table(columns=["id"])["id"].to_pylist() if "id" in schema.names else []
    new = list(range(nxt[0], nxt[0] + rng.randrange(1, 12)))
    nxt[0] += len(new)
    others = [c for c in schema.names if c != "id"]
    kind = rng.choice(
        ["append", "append", "insert", "overwrite", "delete", "delete", "update", "update", "merge", "merge"]
        + ["add_columns", "rename", "nullable", "cast", "drop", "compact", "checkout", "latest", "reopen", "restore"]
        + ["tag", "cleanup"]
        + (MORE_OPS if more else [])
    )
    if kind in MORE_OPS:
        return _pick_more(rng, kind, ds, ids, new, k)
    if kind in ("append", "overwrite"):
        return (kind, make_batch(rng, schema, new), rng.choice([4, 10, 1000]), rng.random() < 0.5)
    if kind == "insert":
        return (kind, make_batch(rng, schema, new))
    if kind == "delete":
        return (kind, _named(rng.choice(DELETES), schema) or "id % 4 = 0")
    if kind == "update":
        vals, where = rng.choice(UPDATES)
        vals = {_named(k, schema): _named(v, schema) for k, v in vals.items()}
        where = where and _named(where, schema)
        return ("latest",) if None in vals or None in vals.values() else (kind, vals, where)
    if kind == "merge":
        # matched keys in the target's order: pylance writes updated rows in target order (its fast path) or in
        # source order (a list column sends it down its other path); either way the same rows then
        chosen = set(rng.sample(ids, min(len(ids), rng.randrange(0, 6))))
        data = make_batch(rng, schema, [i for i in ids if i in chosen] + new)
        variant, cond = rng.choice(MERGES)
        cond = cond and _named(cond, schema)
        if variant == "upsert" or (cond is None and variant != "insert_only"):
            return (kind, data)
        return (kind, data, variant, cond)
    if kind == "add_columns":
        return (kind, f"c{k}", rng.choice(["x * 2", "id + 1", "CAST(id AS INT)", "concat(s, 'z')"]))
    if kind == "rename" and others:
        return (kind, rng.choice(others), f"r{k}")
    if kind == "cast":
        num = [f.name for f in schema if f.type in (pa.float64(), pa.float32(), pa.int32())]
        to = {pa.float64(): pa.float32(), pa.float32(): pa.float64(), pa.int32(): pa.int64()}
        return (kind, name, to[schema.field(name).type]) if (name := rng.choice(num or ["id"])) in num else ("latest",)
    if kind == "nullable" and others:
        return (kind, rng.choice(others))
    if kind == "drop" and len(others) > 1:
        return (kind, rng.choice(others))
    if kind == "compact":
        return (kind, rng.choice([8, 1000]))
    if kind == "checkout":
        tags = sorted(ds.tags.list())
        return (kind, rng.choice(tags) if tags and rng.random() < 0.5 else rng.randrange(1, ds.latest_version + 1))
    if kind == "tag":
        return (kind, f"t{k}", rng.randrange(1, ds.latest_version + 1))
    if kind in ("latest", "reopen", "restore", "cleanup"):
        return (kind,)
    return ("latest",)


#: the operations of ``Setup.more``: a join, a UDF, config and metadata, compaction options, an overwrite by ``insert``,
#: an update writing another file version
MORE_OPS = ["join", "udf", "config", "metadata", "compact options", "insert overwrite", "update version"]
#: the operations whose answers (dicts) are compared
ANSWERS = ("merge", "delete", "update", "config", "metadata")
CONFIG = [{"a": "1"}, {"a": None, "b": "x"}, {"lance.compaction.materialize_deletions_threshold": "0.5"}, {"c": ""}]
CONFIG += [{"lance.compaction.target_rows_per_fragment": "6", "lance.compaction.materialize_deletions": "false"}]


def _pick_more(rng: random.Random, kind: str, ds: Any, ids: list[int], new: list[int], k: int) -> Op:
    schema = ds.schema
    if kind == "join":
        keys = rng.sample(ids, min(len(ids), rng.randrange(0, 12))) + new[:2]
        if keys and rng.random() < 0.1:
            keys.append(keys[0])  # (a key twice: an error, compared)
        kind = rng.choice([pa.string(), pa.list_(pa.int32()), BASE.field("st").type, pa.large_binary()])
        vals = [None if rng.random() < 0.2 else _value(rng, kind, 0) for _ in keys]
        return ("join", pa.table({"id": pa.array(keys, pa.int64()), f"j{k}": pa.array(vals, kind)}))
    if kind == "udf":
        return ("udf", f"u{k}")
    if kind in ("config", "metadata"):
        return (kind, rng.choice(CONFIG), rng.random() < 0.2)
    if kind == "compact options":
        opts = {"materialize_deletions": rng.random() < 0.7}
        opts["materialize_deletions_threshold"] = rng.choice([0, 0.1, 0.5])
        return ("compact", rng.choice([8, 1000, None]), opts)
    if kind == "insert overwrite":
        return ("insert", make_batch(rng, schema, new), "overwrite")
    vals, where = rng.choice(UPDATES)
    vals = {_named(k, schema): _named(v, schema) for k, v in vals.items()}
    where = where and _named(where, schema)
    version = rng.choice(["2.0", "2.1", "2.2", "2.3", "stable"])
    return ("latest",) if None in vals or None in vals.values() else ("update", vals, where, version)


def _outcome(twin: Twin, op: Op) -> tuple[Any, Exception | None]:
    try:
        return twin.apply(op), None
    except Exception as e:  # compared between the twins
        return None, e


@dataclass(frozen=True)
class Setup:
    """What a seed's twins start from: the file version, stable row ids or not."""

    version: str
    stable: bool = False
    column: str = ""  # a key of MORE ("": none)
    more: bool = False  # MORE_OPS too

    @property
    def schema(self) -> pa.Schema:
        return pa.schema(list(BASE) + MORE.get(self.column, []))

    @staticmethod
    def of(seed: int) -> Setup:
        """The seed's setup (from a generator of its own: the sequence's stays as it was), then the overrides of
        ``LANCELOT_DIFF_SETUP`` ("version=2.3,stable=1"), which a hunt along one axis sets."""
        rng = random.Random(f"setup {seed}")
        got: dict[str, Any] = {"version": rng.choice(["2.0", "2.1", "2.2", "2.3"]), "stable": rng.random() < 0.3}
        got["column"] = rng.choice(["", *MORE])
        got["more"] = rng.random() < 0.5
        for item in filter(None, os.environ.get("LANCELOT_DIFF_SETUP", "").split(",")):
            key, value = item.split("=")
            got[key] = bool(int(value)) if key in ("stable", "more") else value
        if got["column"] == "map" and got["version"] in ("2.0", "2.1"):  # (maps: 2.2 on; pylance refuses them before)
            got["version"] = "2.2"
        if got["column"] == "nested" and got["version"] == "2.0":  # (null structs in a list: 2.1 on)
            got["version"] = "2.1"
        return Setup(**got)


def run(tmp_path: Any, ops: list[Op] | None, seed: int, steps: int = 12, done: list[Op] | None = None) -> None:
    """Replay ``ops`` (or generate ``steps`` of them from ``seed``), each appended to ``done`` as it runs."""
    rng = random.Random(seed)
    setup = Setup.of(seed)
    rng.choice(["2.0", "2.1", "2.2"])  # (was the version: the sequences of the seeds stay as they were)
    first = make_batch(rng, setup.schema, list(range(20)))
    per_file = rng.choice([5, 8, 1000])
    opts = {"data_storage_version": setup.version, "max_rows_per_file": per_file}
    if setup.stable:
        opts["enable_stable_row_ids"] = True
    with warnings.catch_warnings():  # (2.3: "an unstable format version")
        warnings.simplefilter("ignore")
        lance.write_dataset(first, str(tmp_path / "theirs"), **opts)
        lancelot.write_dataset(first, str(tmp_path / "ours"), **opts)
    lt, lo = Twin(lance, str(tmp_path / "theirs")), Twin(lancelot, str(tmp_path / "ours"))
    done = [] if done is None else done
    nxt = [100]
    for k in range(len(ops) if ops is not None else steps):
        op = ops[k] if ops is not None else _gen(rng, lt, nxt, k, setup.more)
        done.append(op)
        shown = op[1] if op[0] == "fresh" else op
        hidden = ("append", "overwrite", "insert", "merge", "join")  # (data)
        where = f"step {k} {op[0]} {shown[1:] if shown[0] not in hidden else ''}"
        rt, et = _outcome(lt, op)
        ro, eo = _outcome(lo, op)
        assert (eo is None) == (et is None), f"{where}: pylance {et!r}, lancelot {eo!r}"
        assert eo is None or Raised(eo) == Raised(et), f"{where}: pylance {et!r}, lancelot {eo!r}"  # type: ignore[arg-type]
        if (op[1][0] if op[0] == "fresh" else op[0]) in ANSWERS and rt is not None:
            assert dict(ro) == dict(rt), where
        _same(_reads(lo.ds), _reads(lt.ds), where)
        if rng.random() < 0.3 or k == len(ops or range(steps)) - 1:
            # cross-open: each library reads the other's directory at the twins' version as its own
            v = lt.ds.version
            _same(_reads(lance.dataset(lo.path, version=v)), _reads(lt.ds), f"{where}: pylance reads ours")
            _same(_reads(lancelot.dataset(lt.path, version=v)), _reads(lt.ds), f"{where}: lancelot reads theirs")
    lance.dataset(lo.path).validate()
