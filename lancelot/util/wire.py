"""Protocol-buffer wire format without a schema, for the messages lancelot has no generated module
for: the 2.3 PlanarLayout (docs/format-2.3.md), the fragment reuse index's details
(protos/table.proto ``FragmentReuseIndexDetails``) and the field numbers present in an index's
details.  Fields are read by number.

Reading handles varints (wire type 0) and length-delimited bytes (wire type 2); the fixed-width
types (1 and 5) only where the caller asks (``fixed=True``), else they are refused.  Writing
handles varints and length-delimited fields.
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from lancelot.errors import CorruptFileError, UnsupportedEncodingError

#: field number -> its values in order (ints for varints and fixed-width, bytes for length-delimited)
Fields = dict[int, list[int | bytes]]


def read_varint(buf: bytes, pos: int, what: str = "protobuf message") -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    out = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise CorruptFileError(f"truncated varint in {what}")
        b = buf[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return out, pos


def encode_varint(n: int) -> bytes:
    """``n`` (non-negative) as a varint."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def int_field(field: int, value: int) -> bytes:
    """A varint field; nothing for 0 (proto3 does not serialize the default)."""
    return encode_varint(field << 3) + encode_varint(value) if value else b""


def bytes_field(field: int, value: bytes) -> bytes:
    """A length-delimited field (bytes, string or submessage)."""
    return encode_varint(field << 3 | 2) + encode_varint(len(value)) + value


def fields(buf: bytes, what: str = "protobuf message", fixed: bool = False) -> Fields:
    """Field number -> its values in order (ints for varints, bytes for length-delimited; with
    ``fixed``, the little-endian ints of fixed64/fixed32 fields, which are otherwise refused)."""
    out: Fields = {}
    pos = 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos, what)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise CorruptFileError(f"field number 0 in {what}")
        value: int | bytes
        if wt == 0:
            value, pos = read_varint(buf, pos, what)
        elif wt == 2:
            n, pos = read_varint(buf, pos, what)
            if pos + n > len(buf):
                raise CorruptFileError(f"length-delimited field {num} runs past the end of its {what}")
            value, pos = bytes(buf[pos : pos + n]), pos + n
        elif fixed and wt in (1, 5):
            n = 8 if wt == 1 else 4
            if pos + n > len(buf):
                raise CorruptFileError(f"fixed-width field {num} runs past the end of its {what}")
            value, pos = int.from_bytes(buf[pos : pos + n], "little"), pos + n
        else:
            raise UnsupportedEncodingError(f"wire type {wt} (field {num}) in {what}")
        out.setdefault(num, []).append(value)
    return out


def message(f: Fields, num: int) -> bytes | None:
    """The submessage at ``num`` (the last one, as protobuf merges), or None when absent."""
    vals = f.get(num)
    if not vals:
        return None
    v = vals[-1]
    if not isinstance(v, bytes):
        raise CorruptFileError(f"field {num} is a varint, expected a message")
    return v


def varint(f: Fields, num: int, default: int = 0) -> int:
    """The varint at ``num`` (the last one), or ``default`` when absent."""
    vals = f.get(num)
    if not vals:
        return default
    v = vals[-1]
    if not isinstance(v, int):
        raise CorruptFileError(f"field {num} is bytes, expected a varint")
    return v


def packed_varints(f: Fields, num: int) -> list[int]:
    """A repeated varint field, packed (bytes) or not."""
    out: list[int] = []
    for v in f.get(num, []):
        if isinstance(v, int):
            out.append(v)
            continue
        pos = 0
        while pos < len(v):
            x, pos = read_varint(v, pos)
            out.append(x)
    return out


def only(f: Fields, allowed: set[int], what: str) -> None:
    """Refuse fields of a message whose meaning lancelot does not establish."""
    extra = sorted(set(f) - allowed)
    if extra:
        raise UnsupportedEncodingError(f"{what} field(s) {extra} are not supported")


def check_known(
    buf: bytes,
    desc: Descriptor,
    what: str,
    allow: dict[str, frozenset[int]] | None = None,
    _here: frozenset[int] = frozenset(),
) -> None:
    """Refuse a message holding fields its descriptor does not know (2.3 added compressions to
    CompressiveEncoding: parsing with the 2.1 descriptor would silently drop them).

    ``allow``: full name of a field -> unknown field numbers the message in that field may hold
    (their content is the caller's to check).
    """
    for num, vals in fields(buf, what).items():
        fd = desc.fields_by_number.get(num)
        if fd is None:
            if num in _here:
                continue
            raise UnsupportedEncodingError(f"{what}: field {num} of {desc.name} is not supported (new in 2.3)")
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            here = allow.get(fd.full_name, frozenset()) if allow is not None else frozenset()
            for v in vals:
                if isinstance(v, bytes):
                    check_known(v, fd.message_type, what, allow, here)


# -- writing ----------------------------------------------------------------------------------------------------
def encode(*items: tuple[int, int | bytes | None]) -> bytes:
    """A message of (field number, value) pairs in the order given: an int is a varint, bytes a
    length-delimited field (an empty message too), None leaves the field out."""
    out = bytearray()
    for num, value in items:
        if value is None:
            continue
        if isinstance(value, int):
            out += encode_varint(num << 3) + encode_varint(value)
        else:
            out += encode_varint(num << 3 | 2) + encode_varint(len(value)) + value
    return bytes(out)


def packed(values: list[int]) -> bytes:
    """A packed repeated varint field's bytes."""
    return b"".join(encode_varint(v) for v in values)


def nonzero(v: int) -> int | None:
    """A proto3 scalar as written: zero is left out."""
    return v or None


def inline_sequence(raw: bytes) -> tuple[int, int] | None:
    """(start, step) of a sequence a CompressiveEncoding codes in the message alone: a Range (2.3's case
    14: ``{1: bits, 2: start, 3: step}``) or a Constant with a value (case 3: step 0); None otherwise."""
    f = fields(raw)
    if 14 in f:
        r = fields(message(f, 14) or b"")
        only(r, {1, 2, 3}, "range")
        return varint(r, 2), varint(r, 3)
    if 3 in f and len(f) == 1:
        value = message(fields(message(f, 3) or b""), 1)
        if value is not None:
            return int.from_bytes(value, "little"), 0
    return None


def needs_buffer(raw: bytes) -> bool:
    """Whether a sequence's CompressiveEncoding keeps its data in a page buffer (not a Range or a
    Constant, nor a Delta of such deltas)."""
    f = fields(raw)
    if 15 in f:  # a delta: its deltas' encoding decides
        return needs_buffer(message(fields(message(f, 15) or b""), 3) or b"")
    return not ({3, 14} & set(f))
