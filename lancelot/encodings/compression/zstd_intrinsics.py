"""libzstd's ``ZSTD_decompressDCtx`` as a numba intrinsic (imported only once numba is: jit.py).

The kernels of zstd_kernel.py call it once per chunk, without the interpreter.  The function comes from the library
``zstd_kernel.zstd_library`` found (python-zstandard's own copy); its address is registered with LLVM under a name of
our own, so that compiled kernels, also those loaded from numba's on-disk cache, link to that library and no other zstd
a process may hold."""

from __future__ import annotations

import ctypes
from typing import Any

from llvmlite import binding, ir
from numba import types
from numba.core import cgutils, errors
from numba.extending import intrinsic

from lancelot.encodings.compression.zstd_kernel import zstd_library

SYMBOL = "lancelot_ZSTD_decompressDCtx"
_I8P = ir.IntType(8).as_pointer()
_I64 = ir.IntType(64)

_lib = zstd_library()
if _lib is not None:
    binding.add_symbol(SYMBOL, ctypes.cast(_lib.ZSTD_decompressDCtx, ctypes.c_void_p).value)


def _u8(arr: Any) -> None:
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and arr.layout == "C"):
        raise errors.TypingError(f"expected a C-contiguous uint8 array, got {arr}")


@intrinsic
def decompress_into(
    typingctx: Any, dctx: Any, out: Any, out_pos: Any, capacity: Any, src: Any, src_pos: Any, src_len: Any
) -> tuple[Any, Any]:
    """``ZSTD_decompressDCtx(dctx, out + out_pos, capacity, src + src_pos, src_len)``: the bytes written, or a zstd
    error code (a value above any capacity).  The caller checks every bound first."""
    _u8(out)
    _u8(src)
    if not out.mutable:
        raise errors.TypingError("decompress_into needs a writable output array")
    sig = types.uint64(types.int64, out, types.intp, types.intp, src, types.intp, types.intp)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        fnty = ir.FunctionType(_I64, [_I8P, _I8P, _I64, _I8P, _I64])
        fn = cgutils.get_or_insert_function(builder.module, fnty, SYMBOL)  # type: ignore[no-untyped-call]
        o = context.make_array(signature.args[1])(context, builder, args[1])
        s = context.make_array(signature.args[4])(context, builder, args[4])
        ctx = builder.inttoptr(args[0], _I8P)
        dst = builder.gep(o.data, [args[2]])
        source = builder.gep(s.data, [args[5]])
        return builder.call(fn, [ctx, dst, args[3], source, args[6]])

    return sig, codegen
