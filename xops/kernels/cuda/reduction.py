"""CUDA kernel of ``reduce`` with an add, maximum or minimum body (one input).

The CPU op runs first on stand-ins (stride-0 CPU tensors of the operands' types and
shapes): its checks, and the result's type and shape. The device then reduces: one block
per result element, each thread folds a fixed, strided share of the reduced elements, then
a shared-memory tree combines the threads' partials in a fixed order, so a result is
deterministic run to run. Integer and i1 results are bit-exact with the CPU (wrapping
arithmetic is order-free); float sums differ from the CPU's by rounding order only (the
accumulator is the element type). Other bodies raise the seam's "no cuda kernel" error.
"""

import math

import numpy as np

from ...errors import SpecError
from ...ops._core import operands
from ...ops._bodies import binary_op_name
from ...registry import get as _get_op
from numba import cuda

from ._storage import device_empty, flat, from_holder
from .elementwise import _OK, _add, _and, _fmax, _fmin, _imax, _imin, _or, _stand_in

__all__ = ["KERNELS"]

_T = 64  # threads per block (a power of two: the tree halves it)
_cache = {}


def _kernel(fn, np_dtype):
    key = (fn, np.dtype(np_dtype))
    k = _cache.get(key)
    if k is None:
        from numba import from_dtype

        nb_t = from_dtype(np.dtype(np_dtype))
        dfn = cuda.jit(device=True)(fn)

        def fold(x, idx, r, init, out):
            b = cuda.blockIdx.x
            t = cuda.threadIdx.x
            part = cuda.shared.array(_T, nb_t)
            acc = init[0]
            j = t
            while j < r:
                acc = dfn(acc, x[idx[b * r + j]])
                j += _T
            part[t] = acc
            cuda.syncthreads()
            s = _T // 2
            while s > 0:
                if t < s:
                    part[t] = dfn(part[t], part[t + s])
                cuda.syncthreads()
                s //= 2
            if t == 0:
                out[b] = part[0]

        k = _cache[key] = cuda.jit(fold)
    return k


def reduce(inputs, init_values, dimensions, body):
    r = _get_op("reduce").kernels["cpu"](
        _stand_in(inputs), _stand_in(init_values), dimensions, body
    )  # checks, result type
    name = binary_op_name(body)
    (x, init_t) = operands("reduce", inputs, init_values)
    dt = x._dtype
    fns = {
        "add": {"bool": _or, "si": _add, "ui": _add, "float": _add},
        "maximum": {"bool": _or, "si": _imax, "ui": _imax, "float": _fmax},
        "minimum": {"bool": _and, "si": _imin, "ui": _imin, "float": _fmin},
    }
    fn = fns.get(name, {}).get(dt.kind)
    if fn is None or dt.np not in _OK:
        raise SpecError(
            "reduce",
            "device",
            f"has no cuda kernel for body {name or body!r} "
            f"on element type {dt.name} (add, maximum and "
            f"minimum bodies of i1, si, ui, f32, f64)",
        )
    dims = sorted(int(d) % max(x.ndim, 1) for d in dimensions)
    kept = [d for d in range(x.ndim) if d not in dims]
    pos = np.arange(x.size, dtype=np.int64).reshape(x.shape).transpose(kept + dims)
    m = math.prod(x.shape[d] for d in kept)
    n = math.prod(x.shape[d] for d in dims)
    init = (
        init_t._value
        if hasattr(init_t._value, "copy_to_host")
        else cuda.to_device(np.asarray(init_t._value).reshape(1))
    )
    out = device_empty(r.shape, dt.np)
    if m:
        idx = cuda.to_device(np.ascontiguousarray(pos.reshape(-1)) if n else np.zeros(1, np.int64))
        _kernel(fn, dt.np)[m, _T](flat(x._value), idx, n, flat(init), flat(out))
    return from_holder(out, r._dtype)


KERNELS = {"reduce": reduce}
