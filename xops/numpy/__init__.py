"""``xops.numpy``: the everyday layer — the Python array API standard (2024.12) on xops.

``import xops.numpy as xnp``. Every function of the standard, its constants and dtype
objects, ``__array_namespace_info__``, and the ``linalg`` and ``fft`` extensions, built
on the spec ops (``xo.<op>``) so everything is differentiable through the tape. Unlike
the strict spec ops, this layer promotes types (see ``xops/numpy/_dtypes.py`` and
docs/numpy.md) and broadcasts. Extras beyond the standard: ``array``, ``einsum``,
``random`` (explicit keys), ``float16``.
"""

import functools as _functools

from . import _dtypes, fft, linalg, random  # noqa: F401
from ._creation import *  # noqa: F403
from ._creation import __all__ as _cr_all
from ._creation import array  # noqa: F401
from ._dtypes import (
    bool,
    can_cast,
    complex64,
    complex128,
    e,
    finfo,
    float16,  # noqa: F401
    float32,
    float64,
    iinfo,
    inf,
    int8,
    int16,
    int32,
    int64,
    isdtype,
    nan,
    newaxis,
    pi,
    result_type,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._elementwise import *  # noqa: F403
from ._elementwise import __all__ as _ew_all
from ._extras import __array_namespace_info__, astype, broadcast_shapes, einsum, isin  # noqa: F401
from ._manipulation import *  # noqa: F403
from ._manipulation import __all__ as _mp_all
from ._reduction import *  # noqa: F403
from ._reduction import __all__ as _rd_all
from .linalg import matmul, tensordot, vecdot
from . import _docs  # one-line docstrings (the standard's) where a function has none

_docs.fill(globals(), _docs.NAMESPACE)
_docs.fill(vars(linalg), _docs.LINALG, "linalg.")
_docs.fill(vars(fft), _docs.FFT, "fft.")
del _docs

__array_api_version__ = "2024.12"

__all__ = [
    "__array_api_version__",
    "__array_namespace_info__",
    "linalg",
    "fft",
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "e",
    "inf",
    "nan",
    "newaxis",
    "pi",
    "astype",
    "can_cast",
    "finfo",
    "iinfo",
    "isdtype",
    "result_type",
    "matmul",
    "tensordot",
    "vecdot",
    *_ew_all,
    *_cr_all,
    *_mp_all,
    *_rd_all,
]
from . import _numpy_names  # noqa: E402  (NumPy's names beyond the standard: extras)
from ._numpy_names import *  # noqa: E402,F403

EXTRAS = ["array", "einsum", "random", "float16", "broadcast_shapes", "isin", *_numpy_names.__all__]


def _owning(fn):
    """``fn``, giving a new Tensor object wherever ``fn`` handed back one of its inputs
    unchanged (``reshape`` to the same shape, ``sum`` over no axis, ...). ``t[...] = v``
    rebinds the object ``t``; a result computed before must not change with it."""
    from ..tensor import Tensor, _fresh

    def owned(out, inputs):  # (this module's `any` is the array function)
        for a in inputs:
            if out is a:
                return _fresh(out)
        return out

    @_functools.wraps(fn)
    def owning(*args, **kwargs):
        out = fn(*args, **kwargs)
        inputs = [
            a
            for arg in args
            for a in (arg if isinstance(arg, (list, tuple)) else (arg,))
            if type(a) is Tensor
        ]
        if not inputs:
            return out
        if isinstance(out, (list, tuple)):
            return type(out)(owned(o, inputs) for o in out)
        return owned(out, inputs)

    return owning


# The functions that may return an input as it is (asarray does by design: docs/numpy.md).
for _name in (
    "reshape permute_dims squeeze flip moveaxis positive clip conj real astype sum "
    "prod max min mean round floor ceil trunc abs broadcast_to broadcast_arrays "
    "concat"
).split():
    globals()[_name] = _owning(globals()[_name])
for _name in _numpy_names.__all__:  # (NumPy's names: several are such functions, or call one)
    globals()[_name] = _owning(globals()[_name])
del _name
del _ew_all, _cr_all, _mp_all, _rd_all
