"""CUDA kernel of ``reduce`` with an add, multiply, maximum or minimum body (one input).

The CPU op's checks (:func:`xops.ops.reduction.reduce_checks`) read only types and
shapes; nothing is computed on the host. On the device one block folds one result element
(or, for few results over many elements, one fixed chunk of it, and a second launch
folds the chunks' partials): each thread folds a fixed strided share of the reduced
elements, starting from the body's identity (-0.0 / 0 for add, 1 for multiply, -inf / the
type's minimum for maximum, +inf / the maximum for minimum), a shared-memory tree combines
the threads' partials in a fixed order, and the init value is combined once, last. Element positions
are computed in the kernel from the kept and reduced dims' shapes and strides (small
tuples passed by value, adjacent dims merged). So a result is deterministic run to run.
Integer and i1 results are bit-exact with the CPU (wrapping arithmetic is order-free); float
sums and products differ from the CPU's by rounding order only (the accumulator is the
element type); maximum and minimum are exact. bf16, f16, f8 (f6, f4: session 22) inputs are
reduced as the CPU reduces them: decoded to float32 (exact), folded in float32 with the init
value in float32, the result rounded once (:mod:`.narrow`); maximum and minimum are
bit-exact, sums and products within the float32 rounding-order difference before that one
rounding.
c64 and c128 take add (from -0 - 0i) and multiply bodies (session 18): complex sums and
products in the element type, within the rounding-order difference of the CPU's pairwise
tree; and maximum / minimum (session 19), NumPy's complex order, bit-exact: each thread
then folds a contiguous run and the tree combines neighbouring runs, so a tie or a
second NaN keeps the earlier element as the CPU does.

Any other body, and several inputs (an argmax's (value, index) pairs), run the CPU's generic
tree (:func:`xops.ops.reduction._reduce_generic`) written with xops ops (``_reduce_tree``,
which reduce's rule runs too; session 22): transpose, reshape and strided slices pair the
reduced elements neighbour by neighbour, level by level, and each level is one call of the
body on whole device tensors (its ops' own CUDA kernels); an odd element out waits at its
level's right end, and the init values come in once, leftmost. The same pairs in the same
order as the CPU: results bit for bit as the CPU's where the body's ops are (add, maximum,
compare, select, ...), within their kernels' tolerance where not (exp, log). An op of the
body without a CUDA kernel raises its own "no cuda kernel" error.
"""

import math

import numpy as np
from numba import cuda

from ...autodiff.helpers import _on
from ...autodiff.tape import keep
from ...ops._bodies import binary_op_name
from ...ops.reduction import _body_types, _reduce_tree, reduce_checks

from ._storage import device_empty, flat, from_holder, jit
from ._complex_math import functions as _complex_functions
from .elementwise import _OK, _add, _and, _dev, _fmax, _fmin, _imax, _imin, _mul, _or
from .narrow import encode, is_small_float, to_f32

__all__ = ["KERNELS"]

# NumPy's complex maximum / minimum (the CPU's bodies): NaN first, else lexicographic on
# (real, imag), a tie keeping the first operand. No constant of the part type: one
# function serves c64 and c128.
_cmax = _complex_functions(np.complex128)["maximum"]
_cmin = _complex_functions(np.complex128)["minimum"]

WIDE, NARROW = 256, 32  # threads per block (powers of two: the tree halves them)
_SPLIT_CHUNK = 4096  # elements per block of the first pass when results are few
_FEW = 2 * 132  # "few results": under two blocks per SM of an H200
_cache = {}


def _kernel(fn, np_dtype, nt, ordered=False):
    key = (fn, np.dtype(np_dtype), nt, ordered)
    k = _cache.get(key)
    if k is None:
        k = _cache[key] = jit(_fold_source(fn, np.dtype(np_dtype), nt, ordered))
    return k


def _fold_source(fn, np_dtype, nt, ordered=False):
    """The fold kernel's Python function (compiled by :func:`_kernel`; the PTX compile
    check compiles it with ``fn`` as a device function). ``ordered``: each thread folds
    one contiguous run of the block's elements and the tree combines neighbouring runs,
    so every partial covers consecutive elements and ``fn(earlier, later)`` always gets
    them in order (complex maximum / minimum: a tie or a second NaN keeps the earlier
    element, as the CPU's order does; the strided fold would hand a later element in
    first)."""
    from numba import from_dtype

    nb_t = from_dtype(np_dtype)
    dfn = cuda.jit(device=True)(fn)

    def fold(x, init, out, parts, chunk, r, use_init, ident, kshape, kstr, rshape, rstr):
        b = cuda.blockIdx.x
        t = cuda.threadIdx.x
        part = cuda.shared.array(nt, nb_t)
        o = b // parts
        p = b - o * parts
        base = 0
        rem = o
        for d in range(len(kshape) - 1, -1, -1):
            q = rem // kshape[d]
            base += (rem - q * kshape[d]) * kstr[d]
            rem = q
        acc = ident
        j = p * chunk + t
        end = p * chunk + chunk
        if end > r:
            end = r
        step = nt
        if ordered:  # (a compile-time constant)
            per = (end - p * chunk + nt - 1) // nt
            j = p * chunk + t * per
            if j + per < end:
                end = j + per
            step = 1
        while j < end:
            pos = base
            rem = j
            for d in range(len(rshape) - 1, -1, -1):
                q = rem // rshape[d]
                pos += (rem - q * rshape[d]) * rstr[d]
                rem = q
            acc = dfn(acc, x[pos])
            j += step
        part[t] = acc
        cuda.syncthreads()
        if ordered:  # neighbouring runs: 2s threads' partial at each multiple of 2s
            s = 1
            while s < nt:
                if t % (2 * s) == 0:
                    part[t] = dfn(part[t], part[t + s])
                cuda.syncthreads()
                s *= 2
        else:
            s = nt // 2
            while s > 0:
                if t < s:
                    part[t] = dfn(part[t], part[t + s])
                cuda.syncthreads()
                s //= 2
        if t == 0:
            v = part[0]
            if use_init:
                v = dfn(init[0], v)
            out[b] = v

    return fold


def _merge(shape, strides):
    """Adjacent dims that one stride walks merged, size-1 dims dropped (row-major order
    kept); no dims left: one dim of size 1."""
    out_s, out_t = [], []
    for n, st in zip(shape, strides):
        if n == 1:
            continue
        if out_s and out_t[-1] == st * n:
            out_s[-1] *= n
            out_t[-1] = st
        else:
            out_s.append(n)
            out_t.append(st)
    return (tuple(out_s), tuple(out_t)) if out_s else ((1,), (0,))


_BODIES = {
    "add": {"bool": _or, "si": _add, "ui": _add, "float": _add, "complex": _add},
    "multiply": {"bool": _and, "si": _mul, "ui": _mul, "float": _mul, "complex": _mul},
    "maximum": {"bool": _or, "si": _imax, "ui": _imax, "float": _fmax, "complex": _cmax},
    "minimum": {"bool": _and, "si": _imin, "ui": _imin, "float": _fmin, "complex": _cmin},
}


_identities = {}


def _identity(name, np_dtype):
    """The body's identity in the element type (cached): the fold's starting value."""
    v = _identities.get((name, np_dtype))
    if v is None:
        v = _identities[(name, np_dtype)] = _identity_of(name, np_dtype)
    return v


def _identity_of(name, np_dtype):
    t = np_dtype.type
    if np_dtype.kind == "b":
        return t(name in ("minimum", "multiply"))
    if name == "add":
        if np_dtype.kind == "c":
            return t(complex(-0.0, -0.0))
        return t(-0.0) if np_dtype.kind == "f" else t(0)
    if name == "multiply":
        return t(1)
    if np_dtype.kind == "c":  # (an element equal to it has its bits: a kept tie is exact)
        inf = np.inf if name == "minimum" else -np.inf
        return t(complex(inf, inf))
    if np_dtype.kind == "f":
        return t(-np.inf if name == "maximum" else np.inf)
    info = np.iinfo(np_dtype)
    return t(info.min if name == "maximum" else info.max)


def reduce(inputs, init_values, dimensions, body):
    xs, inits, dims = reduce_checks(inputs, init_values, dimensions, body)
    keep("reduce", dimensions=dims)
    name = binary_op_name(body) if len(xs) == 1 else None
    x, init_t = xs[0], inits[0]
    dt = x._dtype
    fn = _BODIES.get(name, {}).get(dt.kind)
    ok = dt.np in _OK or dt.kind == "complex" or is_small_float(dt)
    if fn is None or not ok or len(xs) != 1:
        out = _generic(xs, inits, dims, body)
        return out[0] if len(out) == 1 else tuple(out)
    if is_small_float(dt):  # in float32 (exact), the init value too, rounded once (the CPU's)
        return encode(reduce([to_f32(x)], [to_f32(init_t)], dims, body), dt)
    kept = [d for d in range(x.ndim) if d not in dims]
    red = sorted(dims)
    st, s = [0] * x.ndim, 1
    for d in range(x.ndim - 1, -1, -1):
        st[d] = s
        s *= x.shape[d]
    m = math.prod(x.shape[d] for d in kept)
    r = math.prod(x.shape[d] for d in red)
    out = device_empty([x.shape[d] for d in kept], dt.np)
    if not m:
        return from_holder(out, dt)
    kshape, kstr = _merge([x.shape[d] for d in kept], [st[d] for d in kept])
    rshape, rstr = _merge([x.shape[d] for d in red], [st[d] for d in red])
    init = _dev("reduce", init_t)
    src = flat(x._value) if x.size else init  # (r = 0: never read)
    ident = _identity(name, np.dtype(dt.np))
    ordered = dt.kind == "complex" and name in ("maximum", "minimum")
    if m < _FEW and r >= 2 * _SPLIT_CHUNK:  # two passes: chunks, then their partials
        parts = min(1024, -(-r // _SPLIT_CHUNK))
        chunk = -(-r // parts)
        partial = device_empty((m * parts,), dt.np)
        args = (parts, chunk, r, False, ident, kshape, kstr, rshape, rstr)
        nt = WIDE if chunk > 4 * NARROW else NARROW
        _kernel(fn, dt.np, nt, ordered)[m * parts, nt](src, init, partial, *args)
        src, r, kshape, kstr, rshape, rstr = partial, parts, (m,), (parts,), (parts,), (1,)
    nt = WIDE if r > 4 * NARROW else NARROW
    args = (1, r, r, True, ident, kshape, kstr, rshape, rstr)
    _kernel(fn, dt.np, nt, ordered)[m, nt](src, init, flat(out), *args)
    return from_holder(out, dt)


def _generic(xs, inits, dims, body):
    """The CPU's generic tree on device tensors: xops.ops.reduction._reduce_tree (the
    tree the reduce rule re-runs on the tape, in xops ops), with the body's results
    checked as the CPU's forward path checks them. Returns the results as a list."""
    inits = [_on(i, xs[0]) for i in inits]  # (weak scalars: 0-d CPU tensors here)
    dts = _body_types("reduce", "C6", body, inits, xs)
    fresh = [from_holder(t._value, t._dtype) for t in xs + inits]  # (nothing records)
    n = len(xs)
    return _reduce_tree(fresh[:n], fresh[n:], dims, body, dts, checked=True)


KERNELS = {"reduce": reduce}
