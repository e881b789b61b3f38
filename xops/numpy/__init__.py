"""``xops.numpy``: the everyday layer — the Python array API standard (2024.12) on xops.

``import xops.numpy as xnp``. Every function of the standard, its constants and dtype
objects, ``__array_namespace_info__``, and the ``linalg`` and ``fft`` extensions, built
on the spec ops (``xo.<op>``) so everything is differentiable through the tape. Unlike
the strict spec ops, this layer promotes types (see ``xops/numpy/_dtypes.py`` and
docs/numpy.md) and broadcasts. Extras beyond the standard: ``array``, ``einsum``,
``random`` (explicit keys), ``float16``.
"""
from . import _dtypes, fft, linalg, random  # noqa: F401
from ._creation import *  # noqa: F403
from ._creation import __all__ as _cr_all
from ._creation import array  # noqa: F401
from ._dtypes import (bool, can_cast, complex64, complex128, e, finfo, float16,  # noqa: F401
                      float32, float64, iinfo, inf, int8, int16, int32, int64, isdtype, nan,
                      newaxis, pi, result_type, uint8, uint16, uint32, uint64)
from ._elementwise import *  # noqa: F403
from ._elementwise import __all__ as _ew_all
from ._extras import __array_namespace_info__, astype, broadcast_shapes, einsum, isin  # noqa: F401
from ._manipulation import *  # noqa: F403
from ._manipulation import __all__ as _mp_all
from ._reduction import *  # noqa: F403
from ._reduction import __all__ as _rd_all
from .linalg import matmul, tensordot, vecdot

__array_api_version__ = "2024.12"

__all__ = ["__array_api_version__", "__array_namespace_info__", "linalg", "fft",
           "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float32", "float64", "complex64", "complex128",
           "e", "inf", "nan", "newaxis", "pi",
           "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
           "matmul", "tensordot", "vecdot",
           *_ew_all, *_cr_all, *_mp_all, *_rd_all]
EXTRAS = ["array", "einsum", "random", "float16", "broadcast_shapes", "isin"]
del _ew_all, _cr_all, _mp_all, _rd_all
