"""Arrow extension types against pylance 14.0.2, files and datasets, both ways.

pylance stores an extension type as its storage type, with the name in ``Field.extension_name`` and
both ``ARROW:extension:name`` and ``ARROW:extension:metadata`` in the field's metadata, at 2.0, 2.1
and 2.2; reading gives the extension type back when it is registered in the process (pyarrow's
canonical ones always; pylance's ``lance.bfloat16`` once ``lance`` is imported, as here), else the
storage array with those two metadata keys.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelot
from lancelot.errors import UnsupportedTypeError
from tests.helpers import pylance_write

lance = pytest.importorskip("lance")
lance_file = pytest.importorskip("lance.file")
from lance.arrow import BFloat16Type, EncodedImageType, ImageURIType  # noqa: E402  (after the skip: the oracle)

VERSIONS = ["2.0", "2.1", "2.2"]
N = 300


def _mask(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.random(n) < 0.2


def _table(seed: int = 0, n: int = N) -> pa.Table:
    """Every extension type pylance round-trips, nulls in each, some nested."""
    rng = np.random.default_rng(seed)
    ids = pa.array([uuid.UUID(int=int(x)).bytes for x in rng.integers(0, 2**62, n)], pa.binary(16), mask=_mask(rng, n))
    uuids = pa.ExtensionArray.from_storage(pa.uuid(), ids)
    tensor_t = pa.fixed_shape_tensor(pa.float32(), [2, 3], dim_names=["r", "c"], permutation=[1, 0])
    flat = pa.array(rng.normal(size=n * 6).astype(np.float32))
    tensors = pa.ExtensionArray.from_storage(
        tensor_t, pa.FixedSizeListArray.from_arrays(flat, 6, mask=pa.array(_mask(rng, n)))
    )
    ints = pa.ExtensionArray.from_storage(
        pa.fixed_shape_tensor(pa.int32(), [4]),
        pa.FixedSizeListArray.from_arrays(pa.array(rng.integers(-9, 9, n * 4).astype(np.int32)), 4),
    )
    bf16 = pa.ExtensionArray.from_storage(
        BFloat16Type(),
        pa.array(
            [rng.normal(size=1).astype(np.float32).tobytes()[2:] for _ in range(n)], pa.binary(2), mask=_mask(rng, n)
        ),
    )
    halves = pa.array([v.tobytes()[2:] for v in rng.normal(size=n * 4).astype(np.float32)], pa.binary(2))
    bf16_vectors = pa.FixedSizeListArray.from_arrays(
        pa.ExtensionArray.from_storage(BFloat16Type(), halves), 4, mask=pa.array(_mask(rng, n))
    )  # logical type fixed_size_list:lance.bfloat16:4
    bool8 = pa.ExtensionArray.from_storage(
        pa.bool8(), pa.array(rng.integers(0, 2, n).astype(np.int8), mask=_mask(rng, n))
    )
    opaque = pa.ExtensionArray.from_storage(
        pa.opaque(pa.binary(), "geometry", "acme"),
        pa.array(
            [bytes(rng.integers(0, 256, int(k)).astype(np.uint8)) for k in rng.integers(0, 20, n)], mask=_mask(rng, n)
        ),
    )
    uris = pa.ExtensionArray.from_storage(
        ImageURIType(), pa.array([f"s3://bucket/{i}.png" for i in range(n)], mask=_mask(rng, n))
    )
    images = pa.ExtensionArray.from_storage(
        EncodedImageType(),
        pa.array([b"\x89PNG" + rng.bytes(int(k)) for k in rng.integers(0, 30, n)], mask=_mask(rng, n)),
    )
    struct = pa.StructArray.from_arrays([uuids, pa.array(np.arange(n))], ["id", "i"])  # (2.0 holds no null structs)
    offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 4, n))]).astype(np.int32)
    more = pa.array([uuid.UUID(int=int(x)).bytes for x in rng.integers(0, 2**62, offsets[-1])], pa.binary(16))
    lists = pa.ListArray.from_arrays(pa.array(offsets), pa.ExtensionArray.from_storage(pa.uuid(), more))
    return pa.table(
        {
            "uuid": uuids,
            "tensor": tensors,
            "tensor_int": ints,
            "bf16": bf16,
            "bf16_vectors": bf16_vectors,
            "bool8": bool8,
            "opaque": opaque,
            "image_uri": uris,
            "image": images,
            "struct": struct,
            "list": lists,
        }
    )


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return _table()


def _descriptor_fields(path: str) -> list[tuple[object, ...]]:
    fd = lancelot.LanceFile(path)._descriptor
    return [
        (f.id, f.parent_id, f.name, f.logical_type, f.extension_name, dict(f.metadata), f.nullable)
        for f in fd.schema.fields
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_file_lancelot_writes_pylance_reads(tmp_path: Path, table: pa.Table, version: str) -> None:
    ours = str(tmp_path / "ours.lance")
    lancelot.write_table(table, ours, version=version)
    got = lance_file.LanceFileReader(ours).read_all().to_table()
    assert got.schema == table.schema
    assert got.equals(table)
    # the schema as pylance stores it: storage logical types, extension name and both metadata keys
    theirs = pylance_write(tmp_path / "theirs.lance", table, version)
    assert _descriptor_fields(ours) == _descriptor_fields(theirs)
    uuid_field = _descriptor_fields(ours)[0]
    assert uuid_field[3:6] == (
        "fixed_size_binary:16",
        "arrow.uuid",
        {"ARROW:extension:name": b"arrow.uuid", "ARROW:extension:metadata": b""},
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_file_pylance_writes_lancelot_reads(tmp_path: Path, table: pa.Table, version: str) -> None:
    path = pylance_write(tmp_path / "theirs.lance", table, version)
    f = lancelot.LanceFile(path)
    assert f.schema == table.schema
    assert f.read().equals(table)
    rows = [5, 0, 299, 17, 17]
    assert f.take(rows).equals(table.take(rows))
    assert f.read_range(10, 40, ["bf16", "list"]).equals(table.select(["bf16", "list"]).slice(10, 30))
    assert pa.Table.from_batches(list(f.iter_batches(64))).equals(table)
    # bfloat16: the same storage bytes as pylance returns
    assert (
        f.read()
        .column("bf16")
        .combine_chunks()
        .storage.equals(lance_file.LanceFileReader(path).read_all().to_table().column("bf16").combine_chunks().storage)
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_dataset_lancelot_writes_pylance_reads(tmp_path: Path, table: pa.Table, version: str) -> None:
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(table, uri, data_storage_version=version)
    lancelot.write_dataset(_table(1, 50), uri, mode="append")
    expected = pa.concat_tables([table, _table(1, 50)])
    ds = lance.dataset(uri)
    assert ds.schema == table.schema
    assert ds.to_table().equals(expected)
    assert lancelot.dataset(uri).to_table().equals(expected)


@pytest.mark.parametrize("version", VERSIONS)
def test_dataset_pylance_writes_lancelot_reads(tmp_path: Path, table: pa.Table, version: str) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(table, uri, data_storage_version=version)
    ds = lancelot.dataset(uri)
    assert ds.schema == table.schema
    assert ds.to_table().equals(table)
    assert ds.take([3, 250, 0]).equals(table.take([3, 250, 0]))
    # lancelot appends to pylance's dataset: pylance reads both fragments
    lancelot.write_dataset(_table(2, 40), uri, mode="append")
    expected = pa.concat_tables([table, _table(2, 40)])
    assert lance.dataset(uri).to_table().equals(expected)
    assert lancelot.dataset(uri).to_table().equals(expected)


class _Point(pa.ExtensionType):
    """An extension type only this test registers (then unregisters)."""

    def __init__(self) -> None:
        pa.ExtensionType.__init__(self, pa.list_(pa.float64(), 2), "lancelot.test.point")

    def __arrow_ext_serialize__(self) -> bytes:
        return b"crs=none"

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> _Point:
        return _Point()


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_unregistered_extension_reads_as_storage_with_metadata(tmp_path: Path, version: str) -> None:
    storage = pa.array([[1.0, 2.0], None, [-3.5, 0.0]], pa.list_(pa.float64(), 2))
    pa.register_extension_type(_Point())
    try:
        t = pa.table({"p": pa.ExtensionArray.from_storage(_Point(), storage)})
        ours = str(tmp_path / "ours.lance")
        lancelot.write_table(t, ours, version=version)
        theirs = pylance_write(tmp_path / "theirs.lance", t, version)
        assert lancelot.read_table(ours).equals(t)  # registered: the extension type back
    finally:
        pa.unregister_extension_type("lancelot.test.point")
    for path in (ours, theirs):
        got = lancelot.read_table(path)
        oracle = lance_file.LanceFileReader(path).read_all().to_table()
        assert got.equals(oracle)
        assert got.schema.field("p").type == storage.type
        assert got.schema.field("p").metadata == oracle.schema.field("p").metadata
        assert got.schema.field("p").metadata == {
            b"ARROW:extension:name": b"lancelot.test.point",
            b"ARROW:extension:metadata": b"crs=none",
        }
        assert got.column("p").combine_chunks().equals(storage)


def test_extension_of_unstorable_type_is_refused(tmp_path: Path) -> None:
    class _Weird(pa.ExtensionType):
        def __init__(self) -> None:
            pa.ExtensionType.__init__(self, pa.month_day_nano_interval(), "lancelot.test.weird")

        def __arrow_ext_serialize__(self) -> bytes:
            return b""

        @classmethod
        def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> _Weird:
            return _Weird()

    arr = pa.ExtensionArray.from_storage(_Weird(), pa.array([(1, 2, 3)], pa.month_day_nano_interval()))
    with pytest.raises(UnsupportedTypeError, match=r"'when'.*lancelot\.test\.weird"):
        lancelot.write_table(pa.table({"when": arr}), str(tmp_path / "x.lance"))
    assert not (tmp_path / "x.lance").exists()


# -- JSON: pylance stores arrow.json as JSONB ('lance.json'); datasets read it back as text ----------

EDGE_JSON = [
    "0", "-0", "1", "-1", "127", "128", "255", "256", "-128", "-129", "65536", "-32769", "4294967296",
    "9223372036854775807", "9223372036854775808", "18446744073709551615", "-9223372036854775808",
    "18446744073709551616", "-9223372036854775809", "0.0", "-0.0", "1.0", "1.5", "1e300", "1e-7", "1.5e-5",
    "0.00001", "1e15", "1e16", "2.5e-10", "5e-324", "0.1", "1E2", "true", "false", "null", '""',
    '"a\\"b\\\\c\\n\\t\\u0001\\u00e9\\ud83d\\ude00/"', "[]", "{}", '{"b":1,"a":[1,{"c":null}],"aa":true}',
    '{"é":1,"z":2,"B":3,"":[[[]]]}', " [ 1 , 2 ] ", "",
]  # fmt: skip


def _random_json(rng: np.random.Generator, depth: int = 0) -> object:
    k = int(rng.integers(0, 9 if depth < 3 else 6))
    if k == 0:
        return None
    if k == 1:
        return bool(rng.integers(0, 2))
    if k == 2:
        return int(rng.integers(-(2**63), 2**63 - 1)) >> int(rng.integers(0, 63))
    if k == 3:
        return float(rng.normal() * 10.0 ** int(rng.integers(-12, 20)))
    if k in (4, 5):
        return "".join(rng.choice(list('ab"\\\n\té€😀 /'), int(rng.integers(0, 8))))
    if k in (6, 7):
        return [_random_json(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))]
    return {f"k{int(rng.integers(0, 30))}": _random_json(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))}


def _json_table(seed: int, n: int = 200) -> pa.Table:
    import json

    rng = np.random.default_rng(seed)
    texts = [None if rng.random() < 0.15 else json.dumps(_random_json(rng)) for _ in range(n)]
    texts += EDGE_JSON
    large = pa.array(texts[::-1], pa.json_(pa.large_string()))  # read back as arrow.json over string, as pylance does
    return pa.table({"j": pa.array(texts, pa.json_()), "jl": large, "i": pa.array(np.arange(len(texts)))})


@pytest.mark.parametrize("version", VERSIONS)
def test_json_file_both_ways(tmp_path: Path, version: str) -> None:
    t = _json_table(3)
    ours = str(tmp_path / "ours.lance")
    lancelot.write_table(t, ours, version=version)
    theirs = pylance_write(tmp_path / "theirs.lance", t, version)
    assert _descriptor_fields(ours) == _descriptor_fields(theirs)
    assert _descriptor_fields(ours)[0][3:5] == ("json", "lance.json")
    # a file reader returns the JSONB bytes (large_binary, 'lance.json' metadata): the same bytes both ways
    oracle = lance_file.LanceFileReader(theirs).read_all().to_table()
    assert oracle.schema.field("j").type == pa.large_binary()
    assert lance_file.LanceFileReader(ours).read_all().to_table().equals(oracle)
    for path in (ours, theirs):
        got = lancelot.read_table(path)
        assert got.schema == oracle.schema
        assert got.equals(oracle)


@pytest.mark.parametrize("version", VERSIONS)
def test_json_dataset_both_ways(tmp_path: Path, version: str) -> None:
    t, more = _json_table(4), _json_table(5, 30)
    for writer in ("lancelot", "pylance"):
        uri = str(tmp_path / writer)
        (lancelot.write_dataset if writer == "lancelot" else lance.write_dataset)(t, uri, data_storage_version=version)
        lancelot.write_dataset(more, uri, mode="append")
        oracle = lance.dataset(uri)
        ds = lancelot.dataset(uri)
        assert ds.schema == oracle.schema
        assert ds.schema.field("j").type == pa.json_()
        # the text pylance gives back (normalized: sorted keys, no spaces, its number forms)
        expected = oracle.to_table()
        assert ds.to_table().equals(expected)
        assert ds.take([0, 7, 240]).equals(oracle.take([0, 7, 240]))
        few = pc.field("i") < 5
        assert ds.to_table(columns=["j"], filter=few).equals(oracle.to_table(columns=["j"], filter=few))


def test_jsonb_text_matches_pylance_for_edge_values(tmp_path: Path) -> None:
    from lancelot import jsonb

    t = pa.table({"j": pa.array(EDGE_JSON, pa.json_())})
    uri = str(tmp_path / "ds")
    lance.write_dataset(t, uri)
    texts = lance.dataset(uri).to_table().column("j").to_pylist()
    raw = lance_file.LanceFileReader(pylance_write(tmp_path / "f.lance", t, "2.1")).read_all().to_table()
    for source, text, stored in zip(EDGE_JSON, texts, raw.column("j").to_pylist()):
        assert jsonb.encode(source) == stored, source
        assert jsonb.decode(stored) == text, source


def test_json_invalid_is_refused(tmp_path: Path) -> None:
    """Text that is not JSON is refused (nested JSON is written: tests/interop/test_extension_json_nested.py)."""
    nested = pa.StructArray.from_arrays([pa.array(["{"], pa.json_())], ["doc"])
    with pytest.raises(ValueError, match="not JSON"):
        lancelot.write_table(pa.table({"s": nested}), str(tmp_path / "a.lance"))
    with pytest.raises(ValueError, match="not JSON"):
        lancelot.write_table(pa.table({"j": pa.array(['{"a":'], pa.json_())}), str(tmp_path / "b.lance"))
    with pytest.raises(ValueError, match="duplicate object key 'a'"):
        lancelot.write_table(pa.table({"j": pa.array(['{"a":1,"a":2}'], pa.json_())}), str(tmp_path / "c.lance"))
    assert not list(tmp_path.glob("*.lance"))


def test_damaged_jsonb_is_a_corrupt_file_error(tmp_path: Path) -> None:
    from lancelot.errors import CorruptFileError

    # JSONB given as such (large_binary with the 'lance.json' name) is stored as it is, as pylance does
    field = pa.field("doc", pa.large_binary(), metadata={"ARROW:extension:name": "lance.json"})
    good = b"\x20\x00\x00\x00\x20\x00\x00\x02\x50\x07"  # the number 7
    bad = b"\x80\x00\x00\x05\x10"  # an array of 5 entries that holds none
    uri = str(tmp_path / "ds")
    lancelot.write_dataset(
        pa.table({"doc": pa.array([good, bad, None], pa.large_binary())}, schema=pa.schema([field])), uri
    )
    assert lance.dataset(uri).schema.field("doc").type == pa.json_()
    assert lancelot.dataset(uri).take([0]).column("doc").to_pylist() == ["7"]
    with pytest.raises(CorruptFileError, match="'doc'.*JSONB"):
        lancelot.dataset(uri).to_table()
