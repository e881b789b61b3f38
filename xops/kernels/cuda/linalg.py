"""CUDA kernel of ``dot_general``: a batched, register-blocked shared-memory GEMM.

The CPU op's constraint checks (:func:`xops.ops.linalg.dot_general_checks`) run first on
the operands' types and give the result's type; no data is touched on the host. The
kernel reads lhs as (batch, m, k) and rhs as (batch, k, n) through one stride per axis:
the dimension numbering is mapped to strides of the C-contiguous operands on the host
(shape metadata only). When a group of dims (say two free dims that are not adjacent
in memory) has no single stride, that operand is first copied on the device into
(batch, free, contracting) order by :func:`xops.kernels.cuda.movement.strided_copy`.

Blocking: one block of 16 x 16 threads computes a BM x BN tile of one batch's result
(128 x 128, or 64 x 64 for results too small to fill the card with large tiles); each
step stages a BK = 8 deep slice of both operands in shared memory (the next slice is
read into registers while the current one is multiplied), and each thread accumulates a
TM x TN micro-tile in registers. A thread's rows are ty, ty + 16, ..., its columns tx,
tx + 16, ... : shared-memory reads are then conflict-free and the result's stores
coalesce. Every result element is summed by one thread in increasing k, so results are
deterministic run to run. Integer results are bit-exact with the CPU (wraparound is
order-free); float results differ from the CPU's by rounding order (accumulation in the
result type; the GPU may fuse multiply-adds). Complex operands (c64, c128) run the same
kernel in complex arithmetic (small tiles: their elements are 8 or 16 bytes).

``preferred_element_type`` (and bf16 / f16 / f8 / f6 / f4 operands) as on the CPU: each
operand is first converted on the device to the result type (integers wrap, floats round
once), then multiplied in that type; a result of one of those small float types is
computed in float32 (its operands decoded exactly) and rounded once at the end. Integer
results stay bit-exact (wrapping to the result's width commutes with the sums).
"""

import math

import numpy as np
from numba import cuda

from ...autodiff.tape import keep
from ...errors import SpecError
from ...limits import check_nbytes
from ...ops._core import operands
from ...ops import linalg as _linalg
from ...ops.linalg import dot_general_checks
from ._storage import device_empty, flat, from_holder, jit
from .elementwise import _OK, convert
from .narrow import encode, is_small_float, to_f32
from .movement import c_strides, fill, strided_copy

__all__ = ["KERNELS", "TILES"]

T = 16  # the block is T x T threads
BK = 8  # k depth of one shared-memory stage (the kernel's k steps are written out)
TILES = {"large": 8, "small": 4}  # micro-tile size TM = TN: BM = BN = T * TM
_MAX_Z = 65535  # the grid's y and z limit: larger batches take several launches
_NAMES = (
    "lhs_batching_dimensions",
    "rhs_batching_dimensions",
    "lhs_contracting_dimensions",
    "rhs_contracting_dimensions",
    "precision_config",
    "preferred_element_type",
)
_DEFAULTS = ((), (), (), (), None, None)
_cache = {}


def _gemm(np_dtype, tm):
    """The GEMM kernel for element type ``np_dtype`` with TM = TN = ``tm`` (cached)."""
    key = (np.dtype(np_dtype), tm)
    k = _cache.get(key)
    if k is None:
        k = _cache[key] = jit(_gemm_source(key[0], tm))
    return k


def _gemm_source(np_dtype, tm):
    """The Python function of the GEMM kernel (compiled by :func:`_gemm`; the PTX
    compile check compiles it for each type)."""
    from numba import from_dtype

    nb_t = from_dtype(np_dtype)
    bm = T * tm  # = BN
    la = bm * BK // (T * T)  # elements of each operand a thread stages per step
    nt = T * T
    tt = tm * tm
    pad = bm + 4  # row length of the shared slices: staging along k is conflict-free
    slab = BK * pad

    def gemm(a, b, out, z0, m, n, kk, sab, sam, sak, sbb, sbk, sbn):
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        t = ty * T + tx
        row0 = cuda.blockIdx.y * bm
        col0 = cuda.blockIdx.x * bm
        sa = cuda.shared.array(slab, nb_t)  # sa[k * pad + i] = lhs[row0 + i, k0 + k]
        sb = cuda.shared.array(slab, nb_t)  # sb[k * pad + j] = rhs[k0 + k, col0 + j]
        # this thread's rows and columns start here: kstep then indexes with constants
        sat = sa[ty:]
        sbt = sb[tx:]
        acc = cuda.local.array(tt, nb_t)
        ra = cuda.local.array(tm, nb_t)
        rb = cuda.local.array(tm, nb_t)
        pa = cuda.local.array(la, nb_t)  # the next stage, read ahead into registers
        pb = cuda.local.array(la, nb_t)

        def staging(t, kfast):  # (numba inlines it)
            """What thread t stages of one operand's BK-deep slice: its q-th element
            sits at (free index, k index) = (i0 + q * di, k0 + q * dk); returns (i0,
            k0, di, dk). The block walks the operand's contiguous axis, so its reads
            coalesce: along k if ``kfast`` (k has the smaller stride), else along the
            free axis."""
            if kfast:
                f = t // BK
                return f, t - f * BK, nt // BK, 0
            k = t // bm
            return t - k * bm, k, 0, nt // bm

        ai0, ak0, adi, adk = staging(t, sak <= sam)
        bj0, bk0, bdj, bdk = staging(t, sbk <= sbn)
        ntiles = (kk + BK - 1) // BK
        # loop invariants: offsets of element q = base + q * step, bounds as limits
        abase = (row0 + ai0) * sam + ak0 * sak
        astep = adi * sam + adk * sak
        alim = m - row0 - ai0  # element q is a row of lhs while q * adi < alim
        bbase = bk0 * sbk + (col0 + bj0) * sbn
        bstep = bdk * sbk + bdj * sbn
        blim = n - col0 - bj0
        sa0 = ak0 * pad + ai0  # and its place in shared memory
        sas = adk * pad + adi
        sb0 = bk0 * pad + bj0
        sbs = bdk * pad + bdj

        def kstep(kx):  # one k step of the micro-tile (numba inlines it: kx is constant)
            for i in range(tm):
                ra[i] = sat[kx * pad + i * T]
            for j in range(tm):
                rb[j] = sbt[kx * pad + j * T]
            for i in range(tm):
                for j in range(tm):
                    acc[i * tm + j] += ra[i] * rb[j]

        z = z0 + cuda.blockIdx.z
        for i in range(tt):
            acc[i] = 0
        pa_z = z * sab + abase
        pb_z = z * sbb + bbase
        for tile in range(ntiles + 1):
            k0 = tile * BK
            if tile < ntiles:  # read stage `tile` into registers
                for q in range(la):
                    if q * adi < alim and k0 + ak0 + q * adk < kk:
                        pa[q] = a[pa_z + k0 * sak + q * astep]
                    else:
                        pa[q] = 0
                    if q * bdj < blim and k0 + bk0 + q * bdk < kk:
                        pb[q] = b[pb_z + k0 * sbk + q * bstep]
                    else:
                        pb[q] = 0
            if tile > 0:  # multiply stage tile - 1 (in shared memory), unrolled
                kstep(0)
                kstep(1)
                kstep(2)
                kstep(3)
                kstep(4)
                kstep(5)
                kstep(6)
                kstep(7)
            cuda.syncthreads()
            if tile < ntiles:  # stage `tile` to shared memory
                for q in range(la):
                    sa[sa0 + q * sas] = pa[q]
                    sb[sb0 + q * sbs] = pb[q]
            cuda.syncthreads()
        for i in range(tm):
            r = row0 + ty + i * T
            if r < m:
                for j in range(tm):
                    c = col0 + tx + j * T
                    if c < n:
                        out[(z * m + r) * n + c] = acc[i * tm + j]

    return gemm


def _group_stride(shape, strides, dims):
    """The one stride that walks ``dims`` (in that order, row-major) of an array with
    ``shape``/``strides``, or None if there is none. Size-1 dims do not count."""
    dims = [d for d in dims if shape[d] != 1]
    if not dims:
        return 0
    for d, e in zip(dims, dims[1:]):
        if strides[d] != strides[e] * shape[e]:
            return None
    return strides[dims[-1]]


def _operand_strides(t, groups):
    """(device array, strides of each group) of operand ``t`` read as ``groups`` (lists
    of dims): the operand itself when each group has one stride, else a device copy in
    the groups' order."""
    st = c_strides(t.shape)
    out = [_group_stride(t.shape, st, g) for g in groups]
    if None not in out:
        return flat(t._value), out
    order = [d for g in groups for d in g]
    copy = strided_copy(t._value, [t.shape[d] for d in order], [st[d] for d in order], 0)
    sizes = [math.prod(t.shape[d] for d in g) for g in groups]
    return copy, [sizes[1] * sizes[2], sizes[2], 1]


_SMALL = 132 * 128 * 128  # results under one large tile per SM of an H200 use 64 x 64


def _attributes(attributes, named):
    """dot_general's six attributes in signature order, from the positional and named
    ones after lhs and rhs (defaults as the CPU op's; a bad name is Python's TypeError)."""
    if len(attributes) > len(_NAMES):
        raise TypeError(f"dot_general() takes at most {len(_NAMES) + 2} positional arguments")
    vals = list(attributes) + list(_DEFAULTS[len(attributes) :])
    for k, v in named.items():
        if k not in _NAMES or _NAMES.index(k) < len(attributes):
            raise TypeError(f"dot_general() got an unexpected or repeated argument {k!r}")
        vals[_NAMES.index(k)] = v
    return vals


def dot_general(lhs, rhs, *attributes, **named):
    """The kernel; it takes the arguments as the CPU op does (lhs, rhs, then the
    batching and contracting dimensions, precision_config, preferred_element_type)."""
    op = "dot_general"
    x, y = operands(op, lhs, rhs, names=["lhs", "rhs"])
    vals = _attributes(attributes, named)
    # (the CPU op's validated signatures: the checks read only types, shapes, attributes)
    key = _linalg._signature(x, y, vals[:4], vals[4], vals[5])
    hit = _linalg._CHECKED.get(key) if key is not None else None
    if hit is not None and hit[0] is x._dtype and hit[1] is y._dtype:
        *dims, out_dt = hit[2]
    else:
        checked = dot_general_checks(x, y, *vals)
        if key is not None and len(_linalg._CHECKED) < _linalg._CHECKED_MAX:
            _linalg._CHECKED[key] = (x._dtype, y._dtype, checked)
        *dims, out_dt = checked
    keep(op, **{k: list(v) for k, v in zip(_NAMES, dims)})  # (parsed, for the gradient)
    lb, rb, lc, rc = dims
    # (complex: the same kernel in Numba's complex arithmetic, summed in k order)
    ok = [t.np in _OK or t.kind == "complex" or is_small_float(t) for t in (x._dtype, out_dt)]
    if not all(ok) or x._dtype.kind == "bool" or x._dtype.quantized:
        raise SpecError(
            op,
            "device",
            f"has no cuda kernel for {x._dtype.name} "
            f"operands with a {out_dt.name} result "
            f"(si, ui, bf16, f16, the f8, f6, f4 types, f32, f64, c64, c128)",
        )
    if x._dtype is not out_dt:  # each operand converted to the result type first
        x, y = convert(x, out_dt), convert(y, out_dt)
    if is_small_float(out_dt):  # computed in float32, rounded once
        xf, yf = to_f32(x), to_f32(y)
        return encode(_gemm_run(xf, yf, dims, xf._dtype), out_dt)
    return _gemm_run(x, y, dims, out_dt)


def _gemm_run(x, y, dims, out_dt):
    """dot_general of device tensors ``x``, ``y`` of type ``out_dt`` (checked)."""
    key = (x.shape, y.shape, *map(tuple, dims), x._dtype.np, out_dt.np, _SMALL)  # (tests: tiles)
    plan = _plans.get(key)
    if plan is not None:  # (operands read in place, results of one launch per batch piece)
        shape, kernel, launches, strides = plan
        out = device_empty(shape, out_dt.np)
        a, b, o = flat(x._value), flat(y._value), flat(out)
        for grid, z0, m, n, kk in launches:
            kernel[grid, (T, T)](a, b, o, z0, m, n, kk, *strides)
        return from_holder(out, out_dt)
    return _gemm_first(x, y, dims, out_dt, key)


# (operand shapes, dimension numbers, types) -> the launch plan of a product whose
# operands are read in place: _gemm_first works it out once per signature
_plans = {}
_PLANS_KEPT = 1024


def _gemm_first(x, y, dims, out_dt, key):
    op = "dot_general"
    lb, rb, lc, rc = dims
    lf = [d for d in range(x.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(y.ndim) if d not in rb and d not in rc]
    nb = math.prod(x.shape[d] for d in lb)
    m = math.prod(x.shape[d] for d in lf)
    n = math.prod(y.shape[d] for d in rf)
    kk = math.prod(x.shape[d] for d in lc)
    shape = [x.shape[d] for d in lb + lf] + [y.shape[d] for d in rf]
    check_nbytes(op, shape, out_dt.np)
    out = device_empty(shape, out_dt.np)
    if not (nb and m and n):
        return from_holder(out, out_dt)
    if kk == 0:  # an empty contraction: zeros
        fill(flat(out), 0)
        return from_holder(out, out_dt)
    a, (sab, sam, sak) = _operand_strides(x, (lb, lf, lc))
    b, (sbb, sbk, sbn) = _operand_strides(y, (rb, rc, rf))
    big = m * n * nb >= _SMALL and x._dtype.np.itemsize <= 4  # (8-byte: 252 registers)
    tm = TILES["large"] if big else TILES["small"]
    bm = T * tm
    if (m + bm - 1) // bm > _MAX_Z:
        raise SpecError(
            op,
            "device",
            f"has no cuda kernel for more than {_MAX_Z * bm} result rows (the grid's y "
            f"limit), got {m}",
        )
    kernel = _gemm(x._dtype.np, tm)
    launches = []
    for z0 in range(0, nb, _MAX_Z):  # (one launch unless the batch passes the grid's z)
        grid = ((n + bm - 1) // bm, (m + bm - 1) // bm, min(nb - z0, _MAX_Z))
        launches.append((grid, z0, m, n, kk))
    strides = (sab, sam, sak, sbb, sbk, sbn)
    for grid, z0, m, n, kk in launches:
        kernel[grid, (T, T)](a, b, flat(out), z0, m, n, kk, *strides)
    if _in_place(x, y, dims):  # (a copied operand: the next call works it out again)
        if len(_plans) >= _PLANS_KEPT:
            _plans.clear()
        _plans[key] = (tuple(shape), kernel, launches, strides)
    return from_holder(out, out_dt)


def _in_place(x, y, dims):
    """Whether both operands are read in place (each dimension group has one stride)."""
    lb, rb, lc, rc = dims
    lf = [d for d in range(x.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(y.ndim) if d not in rb and d not in rc]
    sx, sy = c_strides(x.shape), c_strides(y.shape)
    return None not in [_group_stride(x.shape, sx, g) for g in (lb, lf, lc)] + [
        _group_stride(y.shape, sy, g) for g in (rb, rc, rf)
    ]


KERNELS = {"dot_general": dot_general}
