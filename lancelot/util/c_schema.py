"""Schema metadata as the Arrow C data interface exports it (``struct ArrowSchema``'s ``metadata``):
every key/value pair in order, duplicates kept, and the extension keys pyarrow adds for its C++
extension types, which ``pa.Field.metadata`` / ``pa.Schema.metadata`` do not show."""

from __future__ import annotations

import ctypes
from typing import Any

import pyarrow as pa


class _ArrowSchema(ctypes.Structure):
    """The C data interface's ``struct ArrowSchema`` (only read here)."""


_ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.c_void_p),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]


def metadata_pairs(obj: pa.Field | pa.Schema) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of ``obj``'s exported metadata, in order: an int32 count, then per pair an
    int32 length and the key's bytes, an int32 length and the value's bytes."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    capsule: Any = obj.__arrow_c_schema__()  # owns the struct; released when collected
    schema = _ArrowSchema.from_address(get(capsule, b"arrow_schema"))
    if not schema.metadata:
        return []
    pos = int(schema.metadata)

    def chunk() -> bytes:
        nonlocal pos
        n = int(ctypes.c_int32.from_address(pos).value)
        data = ctypes.string_at(pos + 4, n)
        pos += 4 + n
        return data

    count = int(ctypes.c_int32.from_address(pos).value)
    pos += 4
    return [(chunk(), chunk()) for _ in range(count)]
