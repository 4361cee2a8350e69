"""Utilities below the encodings, shared by them and by the layers above: zero-copy Arrow/numpy
views (``arrays``), lazy numba kernels (``jit``, ``jit_intrinsics``), Arrow type predicates
(``types``), the Arrow C data interface's schema metadata (``c_schema``) and protobuf's wire format
without a schema (``wire``).  Nothing here imports the rest of lancelot but its errors."""
