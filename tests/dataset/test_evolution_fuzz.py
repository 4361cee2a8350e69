"""Random sequences of merge_insert (executed, or planned with execute_uncommitted and committed
later), update, delete, add_columns, alter_columns and drop_columns. One dataset is changed by
lancelot and pylance in turn (a coin decides each step), its twin by pylance only: after every step
both have the same version, schema and rows (stable row ids too, where enabled), lancelot reads them
as pylance does, and pylance validates the mixed one."""

from __future__ import annotations

import random
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute
import pytest

import lancelot
from lancelot.dataset import LanceDataset

KEYS = ["k", "k2"]


def _value(rng: random.Random, t: pa.DataType) -> Any:
    if rng.random() < 0.1:
        return None
    if pa.types.is_integer(t):
        return rng.randrange(0, 100)
    if pa.types.is_floating(t):
        return round(rng.random() * 100, 2)
    return rng.choice(["x", "y", "z"])


def _rows(rng: random.Random, schema: pa.Schema, n: int, lo: int, hi: int) -> pa.Table:
    cols = {}
    seen: set[tuple[Any, Any]] = set()
    ks, k2s = [], []
    while len(ks) < n:  # unique keys (a duplicate source key is an error in both)
        k, k2 = rng.randrange(lo, hi), rng.choice(["a", "b"])
        if (k, k2) not in seen:
            seen.add((k, k2))
            ks.append(k)
            k2s.append(k2)
    for f in schema:
        if f.name == "k":
            cols[f.name] = pa.array(ks, f.type)
        elif f.name == "k2":
            cols[f.name] = pa.array(k2s, f.type)
        else:
            cols[f.name] = pa.array([_value(rng, f.type) for _ in range(n)], f.type)
    return pa.table(cols, schema=schema)


def _step(rng: random.Random, schema: pa.Schema, n_added: int) -> dict[str, Any]:
    others = [f for f in schema if f.name not in KEYS]
    op = rng.choice(
        [
            "mi",
            "mi3",
            "mi2",
            "update",
            "delete",
            "add",
            "alter",
            "drop",
            "mi",
            "update",
            "udf",
            "merge",
            "index",
            "compact",
        ]
    )
    if op == "drop" and len(others) < 2:
        op = "add"
    s: dict[str, Any] = {"op": op}
    if op in ("mi", "mi2", "mi3"):
        sub = [f for f in schema if f.name in KEYS or rng.random() < 0.8]
        s["src"] = _rows(rng, pa.schema(sub), rng.randint(1, 15), 0, 80)
        s["matched"] = rng.choice(["update", "update", "delete", "update_if", None])
        s["insert"] = rng.random() < 0.7 or s["matched"] is None
        s["by_source"] = rng.choice([None, None, None, "all", "k < 25"])
        if len(sub) != len(schema):  # a sub-column source: pylance only updates with it
            s["matched"], s["insert"], s["by_source"] = "update", False, None
        if s["matched"] == "delete" and s["by_source"] and not s["insert"]:
            s["insert"] = True  # pylance 14.0.2's delete-only plan fails on this one ("field missing")
    elif op == "update":
        f = rng.choice(others)
        if pa.types.is_integer(f.type):
            expr = f"{f.name} + 1"
        elif pa.types.is_floating(f.type):
            expr = f"{f.name} * 2"
        else:
            expr = "'w'"
        s["values"] = {f.name: expr}
        s["where"] = rng.choice([None, "k < 30", "k2 = 'a'", f"{f.name} IS NULL"])
    elif op == "delete":
        s["where"] = rng.choice(["k > 70", "k % 7 = 3", "k2 = 'b' AND k < 20"])
    elif op == "add":
        name = f"c{n_added}"
        s["exprs"] = {name: rng.choice(["k * 2", "CAST(k AS DOUBLE) + 0.5", "concat(k2, 'q')", "CAST(NULL AS BIGINT)"])}
    elif op == "alter":
        f = rng.choice(others)
        alts: list[dict[str, Any]] = [{"path": f.name, "name": f"{f.name}r"}]
        if pa.types.is_int64(f.type):
            alts.append({"path": f.name, "data_type": pa.float64()})
        s["alter"] = rng.choice(alts)
    elif op == "drop":
        s["columns"] = [rng.choice(others).name]
    elif op == "udf":
        s["name"] = f"u{n_added}"
        s["batch_size"] = rng.choice([3, 8, None])
    elif op == "merge":
        s["name"] = f"m{n_added}"
        s["keys"] = sorted(rng.sample(range(0, 80), 20))
    return s


def _apply(lib: Any, path: str, s: dict[str, Any]) -> Any:
    ds = lib.dataset(path)
    op = s["op"]
    if op == "update":
        return dict(ds.update(s["values"], where=s["where"]))
    if op == "delete":
        ds.delete(s["where"])
        return None
    if op == "add":
        return ds.add_columns(s["exprs"])
    if op == "alter":
        return ds.alter_columns(s["alter"])
    if op == "drop":
        return ds.drop_columns(s["columns"])
    if op == "compact":
        lib.dataset(path).optimize.compact_files(target_rows_per_fragment=30)
        return None
    if op == "index":  # pylance builds indices, whoever changes the data
        return lance.dataset(path).create_scalar_index("k", "BTREE", replace=True) and None
    if op == "udf":
        name = s["name"]

        def f(batch: pa.RecordBatch) -> pa.RecordBatch:
            return pa.record_batch([pa.compute.add(batch["k"], 1000)], [name])

        return ds.add_columns(f, read_columns=["k"], batch_size=s["batch_size"])
    if op == "merge":
        right = pa.table({"k": pa.array(s["keys"], pa.int64()), s["name"]: [f"m{x}" for x in s["keys"]]})
        return ds.merge(right, "k")
    b = (lance.dataset(path) if op == "mi3" else ds).merge_insert(KEYS)  # mi3: pylance plans, lib commits
    if s["matched"] == "update":
        b = b.when_matched_update_all()
    elif s["matched"] == "update_if":
        b = b.when_matched_update_all("source.k2 = 'a' OR target.k > 40")
    elif s["matched"] == "delete":
        b = b.when_matched_delete()
    if s["insert"]:
        b = b.when_not_matched_insert_all()
    if s["by_source"] == "all":
        b = b.when_not_matched_by_source_delete()
    elif s["by_source"]:
        b = b.when_not_matched_by_source_delete(s["by_source"])
    if op == "mi":
        r = b.execute(s["src"])
    else:  # two-phase: plan, then commit the transaction (planned by pylance for mi3)
        txn, r = b.execute_uncommitted(s["src"])
        (lance.LanceDataset if lib is lance else LanceDataset).commit(path, txn)
    return {k: r[k] for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")}


def _sorted(t: pa.Table) -> list[dict[str, Any]]:
    return t.sort_by([(c, "ascending") for c in t.column_names]).to_pylist()


def _table(path: str, stable: bool) -> list[dict[str, Any]]:
    t = lance.dataset(path).to_table(with_row_id=stable)
    return t.sort_by([(c, "ascending") for c in t.column_names]).to_pylist()


@pytest.mark.parametrize(("seed", "version", "stable"), [(1, "2.2", False), (7, "2.1", True)])
def test_random_evolution_alternating_libraries(tmp_path, seed: int, version: str, stable: bool) -> None:
    rng = random.Random(seed)
    twin, mixed = str(tmp_path / "twin"), str(tmp_path / "mixed")
    schema = pa.schema([("k", pa.int64()), ("k2", pa.string()), ("v", pa.float64()), ("n", pa.int64())])
    start = _rows(rng, schema, 40, 0, 60)
    for p in (twin, mixed):
        lance.write_dataset(start, p, data_storage_version=version, max_rows_per_file=15, enable_stable_row_ids=stable)
    added = 0
    for i in range(10):
        schema = lance.dataset(twin).schema
        s = _step(rng, schema, added)
        added += s["op"] in ("add", "udf", "merge")
        who = rng.choice([lance, lancelot])
        out = []
        for lib, p in ((lance, twin), (who, mixed)):
            try:
                out.append(_apply(lib, p, s))
            except Exception as e:  # both must refuse the same steps
                out.append(f"refused: {type(e).__name__}" if lib is lance else "refused")
                if lib is lance:
                    out[-1] = "refused"
        where = f"step {i} by {who.__name__}: { ({k: v for k, v in s.items() if k != 'src'}) }"
        assert out[1] == out[0], where
        a, b = lance.dataset(twin), lance.dataset(mixed)
        assert b.version == a.version, where
        assert b.schema == a.schema, where
        assert _table(mixed, stable) == _table(twin, stable), where
        cover = [sorted((i["name"], tuple(sorted(i["fragment_ids"]))) for i in d.list_indices()) for d in (a, b)]
        assert cover[1] == cover[0], where  # the same fragments covered by the same indices
        for q in ("k = 7", "k < 12", "k >= 75"):
            assert _sorted(b.to_table(filter=q)) == _sorted(a.to_table(filter=q)), (where, q)
        mine = lancelot.dataset(mixed).to_table()
        assert mine.sort_by([(c, "ascending") for c in mine.column_names]).to_pylist() == _table(mixed, False), where
        b.validate()
