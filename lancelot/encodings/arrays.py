"""The old home of ``lancelot.util.arrays``, kept for ``lancelot/spark/row_filter.py`` until it imports
``lancelot.util.arrays`` itself (then delete this module)."""

from lancelot.util.arrays import from_numpy

__all__ = ["from_numpy"]
