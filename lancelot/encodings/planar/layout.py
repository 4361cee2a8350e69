"""PlanarLayout -> the 2.1/2.2 page layout holding the same facts (docs/format-2.3.md).

The planes lancelot reads, by field number of ``lance.encodings23.PlanarLayout``:

* structure (1): dense (1: packed rep/def layers, innermost first, as 2.1's
  ``RepDefLayer``) or sparse (2: positions per layer, outermost first);
* values (2): chunked (1), zipped (2), a constant scalar (3) or no values (4).

Dense + chunked is a mini-block page (u32 chunk words, as 2.2's ``has_large_chunk``; its
Variable values may have 2.3-coded offsets, binary.py), dense + zipped a full-zip page,
dense all-valid + constant an inline-value constant page, and sparse whose outermost
layer keeps no position + no values a page of null rows.  Other sparse pages become
``SparsePlanes`` (sparse.py, sparse_lists.py).  Anything else, and any field or
compression case docs/format-2.3.md does not establish, raises UnsupportedEncodingError.
"""

from __future__ import annotations

from functools import lru_cache

from google.protobuf import any_pb2

from lancelot.encodings.planar.binary import OFFSET_CASES
from lancelot.encodings.planar.sparse import SparsePlanes
from lancelot.encodings.planar.sparse import parse as sparse_planes
from lancelot.errors import CorruptFileError, LanceError, UnsupportedEncodingError
from lancelot.format.container import encoding_bytes
from lancelot.format.pb import encodings_v2_1_pb2 as pb
from lancelot.format.pb import file2_pb2
from lancelot.io.source import ByteSource
from lancelot.util import wire

PLANAR_TYPE_URL = "/lance.encodings23.PlanarLayout"
_PAGE_LAYOUT = pb.PageLayout.DESCRIPTOR.full_name

# PlanarLayout
_STRUCTURE, _VALUES = 1, 2
# structure plane
_DENSE, _SPARSE = 1, 2
_DENSE_LAYERS = 1
_SPARSE_LAYER = 1  # repeated, outermost first
_SPARSE_ITEM, _SPARSE_LIST, _SPARSE_FSL = 1, 2, 3  # a layer's kind
_FSL_VALIDITY = 2  # of a fixed-size-list layer ({1: dimension, 2: validity})
_LIST_VALIDITY = 5  # of a list layer
_MEANING, _POSITIONS, _NUM_POSITIONS = 1, 2, 3  # of a validity set
_VALID_POSITIONS = 2  # meaning: the positions listed are the valid ones
# value plane
_CHUNKED, _ZIPPED, _CONSTANT, _NO_VALUES, _INDEXED = 1, 2, 3, 4, 5
# indexed values: an index per slot (1) into items (2: zipped values)
_I_INDICES, _I_ITEMS = 1, 2
# chunked values
_C_VALUE, _C_LEVELS, _C_DICT, _C_DICT_ITEMS, _C_BUFFERS, _C_ITEMS = 1, 2, 3, 4, 5, 6
_L_REP, _L_DEF, _L_REP_INDEX_DEPTH = 1, 2, 3
# zipped values
_Z_VALUE, _Z_LEVELS, _Z_BITS_PER_VALUE, _Z_BITS_PER_OFFSET, _Z_ITEMS, _Z_VISIBLE = 1, 2, 3, 4, 5, 6
_ZL_BITS_REP, _ZL_BITS_DEF = 1, 2
# constant value
_SCALAR = 1


def read_page_layout(
    src: ByteSource, enc: file2_pb2.Encoding, *, column: int | None = None, page: int | None = None
) -> pb.PageLayout | SparsePlanes | None:
    """A page's layout: a 2.1/2.2 ``PageLayout``, or a 2.3 ``PlanarLayout`` translated to one
    (or, sparse, to the planes sparse.py reads).

    None for a page without an encoding.
    """
    raw = encoding_bytes(src, enc, column=column, page=page)
    if raw is None:
        return None
    try:
        type_url, value = _unpack_any(raw)
    except Exception as e:
        raise CorruptFileError(f"encoding does not parse: {e}", path=src.path, column=column, page=page) from None
    try:
        if type_url == PLANAR_TYPE_URL:
            return to_page_layout(value)
        return _page_layout(type_url, value)
    except LanceError as e:
        raise e.at(path=src.path, column=column, page=page) from None
    except Exception as e:
        raise CorruptFileError(f"encoding does not parse: {e}", path=src.path, column=column, page=page) from None


@lru_cache(maxsize=1024)
def _unpack_any(raw: bytes) -> tuple[str, bytes]:
    """A serialized ``Any``'s type URL and value, parsed once per distinct encoding (the pages of a
    column, and of files written alike, repeat theirs)."""
    msg = any_pb2.Any()
    msg.ParseFromString(raw)
    return msg.type_url, msg.value


@lru_cache(maxsize=1024)
def _page_layout(type_url: str, value: bytes) -> pb.PageLayout:
    """A serialized PageLayout, parsed once: the pages of files written alike (a dataset's fragments)
    share their layout messages, which readers only read."""
    if type_url.rpartition("/")[2] != _PAGE_LAYOUT:  # (``Any.Unpack``'s test, without its calls)
        raise CorruptFileError(f"encoding is a {type_url!r}, expected {_PAGE_LAYOUT}")
    layout = pb.PageLayout()
    layout.ParseFromString(value)
    return layout


def to_page_layout(raw: bytes) -> pb.PageLayout | SparsePlanes:
    """The 2.1/2.2 ``PageLayout`` a serialized PlanarLayout stands for, or the sparse planes
    sparse.py reads (UnsupportedEncodingError for the planes lancelot does not read)."""
    top = wire.fields(raw)
    wire.only(top, {_STRUCTURE, _VALUES}, "PlanarLayout")
    structure = wire.fields(wire.message(top, _STRUCTURE) or b"")
    values = wire.fields(wire.message(top, _VALUES) or b"")
    wire.only(structure, {_DENSE, _SPARSE}, "planar structure")
    wire.only(values, {_CHUNKED, _ZIPPED, _CONSTANT, _NO_VALUES, _INDEXED}, "planar value plane")
    if len(structure) != 1 or len(values) != 1:
        raise CorruptFileError("a planar page needs exactly one structure and one value plane")
    dense = wire.message(structure, _DENSE)
    if dense is not None:
        layers = _dense_layers(dense)
        if _CHUNKED in values:
            return pb.PageLayout(mini_block_layout=_chunked(wire.message(values, _CHUNKED) or b"", layers))
        if _ZIPPED in values:
            return pb.PageLayout(full_zip_layout=_zipped(wire.message(values, _ZIPPED) or b"", layers))
        if _CONSTANT in values:
            return pb.PageLayout(constant_layout=_constant(wire.message(values, _CONSTANT) or b"", layers))
        if _INDEXED in values:
            raise UnsupportedEncodingError(
                "a dense planar page of indexed values is not supported (never seen written)"
            )
        raise UnsupportedEncodingError("a dense planar page without values is not supported")
    sparse = wire.message(structure, _SPARSE) or b""
    if _NO_VALUES in values and _outermost_all_null(sparse):
        # every row is null at its outermost level: the page is null rows (one nullable-item layer,
        # as 2.1/2.2 write all-null pages)
        return pb.PageLayout(constant_layout=pb.ConstantLayout(layers=[pb.REPDEF_NULLABLE_ITEM]))
    if _CONSTANT in values or _NO_VALUES in values:
        scalar = None
        if _CONSTANT in values:
            const = wire.fields(wire.message(values, _CONSTANT) or b"")
            wire.only(const, {_SCALAR}, "planar constant value")
            scalar = wire.message(const, _SCALAR) or b""
        return sparse_planes(sparse, scalar)
    if _ZIPPED in values:
        return sparse_planes(sparse, None, _zipped(wire.message(values, _ZIPPED) or b"", [pb.REPDEF_ALL_VALID_ITEM]))
    if _INDEXED in values:
        indices, items = _indexed(wire.message(values, _INDEXED) or b"")
        return sparse_planes(sparse, None, items, indices=indices)
    # chunked values of the innermost layer's slots (their count comes from the structure)
    return sparse_planes(
        sparse, None, None, _chunked(wire.message(values, _CHUNKED) or b"", [pb.REPDEF_ALL_VALID_ITEM])
    )


def _dense_layers(raw: bytes) -> list[pb.RepDefLayer]:
    f = wire.fields(raw)
    wire.only(f, {_DENSE_LAYERS}, "dense planar structure")
    layers = wire.packed_varints(f, _DENSE_LAYERS)
    if not layers or any(x not in pb.RepDefLayer.values() or x == pb.REPDEF_UNSPECIFIED for x in layers):
        raise CorruptFileError(f"dense planar layers {layers} are empty or invalid")
    return [pb.RepDefLayer.ValueType(x) for x in layers]


def _compression(
    raw: bytes | None, what: str, allow: dict[str, frozenset[int]] | None = None
) -> pb.CompressiveEncoding | None:
    if raw is None:
        return None
    wire.check_known(raw, pb.CompressiveEncoding.DESCRIPTOR, what, allow)
    enc = pb.CompressiveEncoding()
    enc.ParseFromString(raw)
    if enc.WhichOneof("compression") is None:
        raise CorruptFileError(f"{what} names no compression")
    return enc


def _chunked(raw: bytes, layers: list[pb.RepDefLayer]) -> pb.MiniBlockLayout:
    f = wire.fields(raw)
    wire.only(f, {_C_VALUE, _C_LEVELS, _C_DICT, _C_DICT_ITEMS, _C_BUFFERS, _C_ITEMS}, "chunked planar values")
    out = pb.MiniBlockLayout(
        layers=layers,
        num_buffers=wire.varint(f, _C_BUFFERS),
        num_items=wire.varint(f, _C_ITEMS),
        has_large_chunk=True,  # 2.3 chunk metadata words are always u32
    )
    # (Variable values may have 2.3-coded offsets: binary.py reads them)
    value = _compression(wire.message(f, _C_VALUE), "chunked value compression", OFFSET_CASES)
    if value is None:
        raise CorruptFileError("chunked planar values without a value compression")
    out.value_compression.CopyFrom(value)
    levels = wire.fields(wire.message(f, _C_LEVELS) or b"")
    wire.only(levels, {_L_REP, _L_DEF, _L_REP_INDEX_DEPTH}, "chunked planar levels")
    rep = _compression(wire.message(levels, _L_REP), "repetition level compression")
    dfn = _compression(wire.message(levels, _L_DEF), "definition level compression")
    if rep is not None:
        out.rep_compression.CopyFrom(rep)
    if dfn is not None:
        out.def_compression.CopyFrom(dfn)
    out.repetition_index_depth = wire.varint(levels, _L_REP_INDEX_DEPTH)
    dictionary = _compression(wire.message(f, _C_DICT), "dictionary compression")
    if dictionary is not None:
        out.dictionary.CopyFrom(dictionary)
        out.num_dictionary_items = wire.varint(f, _C_DICT_ITEMS)
    return out


def _zipped(raw: bytes, layers: list[pb.RepDefLayer]) -> pb.FullZipLayout:
    f = wire.fields(raw)
    wire.only(
        f, {_Z_VALUE, _Z_LEVELS, _Z_BITS_PER_VALUE, _Z_BITS_PER_OFFSET, _Z_ITEMS, _Z_VISIBLE}, "zipped planar values"
    )
    out = pb.FullZipLayout(
        layers=layers, num_items=wire.varint(f, _Z_ITEMS), num_visible_items=wire.varint(f, _Z_VISIBLE)
    )
    value = _compression(wire.message(f, _Z_VALUE), "zipped value compression")
    if value is None:
        raise CorruptFileError("zipped planar values without a value compression")
    out.value_compression.CopyFrom(value)
    levels = wire.fields(wire.message(f, _Z_LEVELS) or b"")
    wire.only(levels, {_ZL_BITS_REP, _ZL_BITS_DEF}, "zipped planar levels")
    out.bits_rep = wire.varint(levels, _ZL_BITS_REP)
    out.bits_def = wire.varint(levels, _ZL_BITS_DEF)
    if _Z_BITS_PER_OFFSET in f:
        out.bits_per_offset = wire.varint(f, _Z_BITS_PER_OFFSET)
    elif _Z_BITS_PER_VALUE in f:
        out.bits_per_value = wire.varint(f, _Z_BITS_PER_VALUE)
    else:
        raise CorruptFileError("zipped planar values without an addressing")
    return out


def _indexed(raw: bytes) -> tuple[bytes, pb.FullZipLayout]:
    """(the indices' encoding, the items as a full-zip page of them) of an indexed value plane: one index
    per slot of the innermost layer (pylance: 0 for null slots) into items that are zipped values
    (``{1: indices, 2: ZippedValues}``)."""
    f = wire.fields(raw)
    wire.only(f, {_I_INDICES, _I_ITEMS}, "indexed values")
    indices, items = wire.message(f, _I_INDICES), wire.message(f, _I_ITEMS)
    if indices is None or items is None:
        raise CorruptFileError("indexed planar values without indices or items")
    return indices, _zipped(items, [pb.REPDEF_ALL_VALID_ITEM])


def _constant(raw: bytes, layers: list[pb.RepDefLayer]) -> pb.ConstantLayout:
    f = wire.fields(raw)
    wire.only(f, {_SCALAR}, "planar constant value")
    scalar = wire.message(f, _SCALAR)
    if scalar is None or not 1 <= len(scalar) <= 32:
        raise CorruptFileError("a planar constant scalar must hold 1..=32 bytes")
    if any(x != pb.REPDEF_ALL_VALID_ITEM for x in layers):
        raise UnsupportedEncodingError(f"planar constant pages with layers {layers} are not supported")
    return pb.ConstantLayout(layers=layers, inline_value=scalar)


def _outermost_all_null(raw: bytes) -> bool:
    """Whether the outermost sparse layer keeps no position valid (every row null)."""
    layers = wire.fields(raw).get(_SPARSE_LAYER, [])
    if not layers or not isinstance(layers[0], bytes):
        return False
    kinds = wire.fields(layers[0])
    if len(kinds) != 1:
        return False
    if _SPARSE_ITEM in kinds:  # an item layer is its validity set
        validity = wire.message(kinds, _SPARSE_ITEM)
    elif _SPARSE_LIST in kinds:
        lst = wire.message(kinds, _SPARSE_LIST)
        validity = None if lst is None else wire.message(wire.fields(lst), _LIST_VALIDITY)
    elif _SPARSE_FSL in kinds:  # (a fixed-size list of structs whose rows are all null)
        fsl = wire.message(kinds, _SPARSE_FSL)
        validity = None if fsl is None else wire.message(wire.fields(fsl), _FSL_VALIDITY)
    else:
        return False
    if validity is None:
        return False
    v = wire.fields(validity)
    return wire.varint(v, _MEANING) == _VALID_POSITIONS and wire.varint(v, _NUM_POSITIONS) == 0
