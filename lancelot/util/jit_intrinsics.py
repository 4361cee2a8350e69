"""Unaligned 8-byte loads and stores for the numba kernels (imported only once numba is).

numba writes ``out[p + b] = symbols[c, b]`` for b in 0..7 as eight byte stores, and LLVM
does not merge them: an FSST decode spends most of its time there.  ``load_u64`` and
``store_u64`` are one unaligned 64-bit load / store at a byte position of a C-contiguous
uint8 array (x86-64 and aarch64 allow them).  The caller guarantees ``pos + 8 <= size``.

The kernels name these through ``jit.lazy_intrinsic`` so that importing a kernel module
does not import numba (jit.py).
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.core import errors
from numba.extending import intrinsic

_I64P = ir.IntType(64).as_pointer()


def _check(arr: Any, mutable: bool) -> None:
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and arr.layout == "C"):
        raise errors.TypingError(f"expected a C-contiguous uint8 array, got {arr}")
    if mutable and not arr.mutable:
        raise errors.TypingError("store_u64 needs a writable array")


@intrinsic
def load_u64(typingctx: Any, arr: Any, pos: Any) -> tuple[Any, Any]:
    """The 8 bytes at byte position ``pos`` of ``arr`` as a little-endian uint64 (native order)."""
    _check(arr, mutable=False)
    sig = types.uint64(arr, types.intp)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        a = context.make_array(signature.args[0])(context, builder, args[0])
        pos = context.cast(builder, args[1], signature.args[1], types.intp)
        ld = builder.load(builder.bitcast(builder.gep(a.data, [pos]), _I64P))
        ld.align = 1
        return ld

    return sig, codegen


@intrinsic
def store_u64(typingctx: Any, arr: Any, pos: Any, value: Any) -> tuple[Any, Any]:
    """Write ``value`` as 8 bytes at byte position ``pos`` of ``arr``."""
    _check(arr, mutable=True)
    sig = types.void(arr, types.intp, types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        a = context.make_array(signature.args[0])(context, builder, args[0])
        pos = context.cast(builder, args[1], signature.args[1], types.intp)
        val = context.cast(builder, args[2], signature.args[2], types.uint64)
        st = builder.store(val, builder.bitcast(builder.gep(a.data, [pos]), _I64P))
        st.align = 1
        return context.get_dummy_value()

    return sig, codegen
