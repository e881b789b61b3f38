"""CUDA kernels of the batch norm ops: batch_norm_training, batch_norm_inference and
batch_norm_grad (f32 and f64 operands; bf16, f16 and the f8, f6, f4 types through float64, see the
end).

Each kernel function runs the CPU op's own constraint checks first
(``batch_norm_*_checks`` of :mod:`xops.ops.normalization`: they read only types, shapes
and attributes, so no data is touched on the host), then launches. As on the CPU, the
feature dimension splits the operand into ``outer x C x inner`` (the dims before it, the
feature dim, the dims after it); the kernels take the operand flat and compute each
element's feature ``(i // inner) % C`` themselves, so any ``feature_index`` works with no
transpose and no host-built index map.

* **Per-feature sums** (the statistics; grad's ``sum g`` and ``sum g (x - mean)``): one
  block per feature, of nt threads (a power of two from 32 to 512 that grows with the
  elements per feature N: :func:`_threads`). Thread t adds, in float64, the feature's
  elements t, t + nt, t + 2 nt, ... (consecutive threads read consecutive elements of a
  run: coalesced), then a shared-memory tree combines the nt partials in a fixed order.
  The order depends on the shape only: results are the same on every run (no atomics).
  The statistics take one pass: each thread's float64 (count, mean, M2) by Welford's
  update, merged in the tree by Chan et al.'s formula (robust as the CPU's two-pass
  variance, which merges its tiles the same way); variance = M2 / N (biased). Thread 0
  of the block writes the feature's results, rounded once to the element type.
* **Elementwise results**: one thread per element, computed in float64 from the
  per-feature values and rounded once to the element type, with the CPU kernels'
  formulas: ``(x - mean) * (scale / sqrt(var + eps)) + offset`` (batch_norm_training
  normalises with its statistics *rounded to the element type*, as the spec composes it
  and as the CPU does) and ``k (g - sum g / N) - k inv_std (grad_scale / N) (x - mean)``
  with ``k = scale inv_std``, ``inv_std = 1 / sqrt(var + eps)``.

Against the CPU the results differ only by the order of the float64 sums (and, for f32
operands with short runs, by the CPU's f32 copies of the per-feature coefficients): a
few units in the last place of the element type (the tests allow rtol 1e-5 for f32,
1e-12 for f64, relative to the largest magnitude of the result). Where |mean| is much
larger than the standard deviation, f64 outputs differ more, as the data's conditioning
says: the means agree within a few float64 ulp of |mean|, which the normalisation
magnifies to about ``|scale| ulp(|mean|) / stddev`` (tested too). An empty batch (N = 0)
gives NaN statistics and zero gradient sums, as on the CPU.

bf16, f16 and the f8, f6, f4 types run as the CPU runs them: every operand widened
exactly to float64 on the device (:mod:`.narrow`, then :func:`.elementwise.convert`), the
float64 kernels, each
result rounded once to the narrow type; epsilon is the CPU's (rounded to f32, then to the
operand's type). batch_norm_training rounds its statistics to the narrow type first and
normalises with those rounded values, as the CPU does (the spec's composition). Other
float types (f8) raise the device seam's SpecError naming the op and the type.
"""

import math

import numpy as np
from numba import cuda, float64

from ...errors import SpecError
from ...ops.normalization import (
    _checked as _validated,
    batch_norm_grad_checks,
    batch_norm_inference_checks,
    batch_norm_training_checks,
)
from ...dtypes import as_dtype
from ._storage import device_empty, flat, from_holder, jit, launch_1d, on_device, shaped
from .elementwise import convert
from .narrow import encode, is_small_float, to_f32

__all__ = ["KERNELS", "T"]

T = 512  # the most threads per block of the per-feature sums (the shared arrays' size)


def _threads(n):
    """Threads per block for features of n elements: a power of two from 32 (a warp) to
    T, about n / 4 (a few elements per thread before the tree). A function of the shape
    only, so a result never depends on anything else."""
    nt = 32
    while nt < T and nt * 4 < n:
        nt *= 2
    return nt


_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


@jit
def _moments(x, C, inner, n, mean, var, scale, offset, eps, out, fused):
    """Block c: feature c's mean and biased variance in one pass over its n elements,
    stored rounded to mean's/var's type. Each thread keeps float64 (count, mean, M2) of
    its share by Welford's update; a fixed-order tree merges them by Chan et al.'s
    ``M2 = M2_a + M2_b + d^2 n_a n_b / n`` (no E[x^2] - E[x]^2 cancellation: the CPU's
    tiles merge the same way). ``fused`` (features of at most ``FUSED_N`` elements):
    the block then also writes the feature's elements with :func:`_normalize`'s formula
    from the stored (rounded) statistics, the two kernels' bits (else ``scale``,
    ``offset`` and ``out`` are not read)."""
    c = cuda.blockIdx.x
    t = cuda.threadIdx.x
    nt = cuda.blockDim.x
    pn = cuda.shared.array(T, float64)
    pm = cuda.shared.array(T, float64)
    pq = cuda.shared.array(T, float64)
    cnt = float64(0.0)
    mu = float64(0.0)
    m2 = float64(0.0)
    j = t
    while j < n:
        o = j // inner
        v = float64(x[(o * C + c) * inner + (j - o * inner)])
        cnt += 1.0
        d = v - mu
        mu += d / cnt
        m2 += d * (v - mu)
        j += nt
    pn[t] = cnt
    pm[t] = mu
    pq[t] = m2
    cuda.syncthreads()
    h = nt // 2
    while h > 0:
        if t < h and pn[t + h] > 0.0:
            na = pn[t]
            nb = pn[t + h]
            nab = na + nb
            d = pm[t + h] - pm[t]
            pm[t] += d * (nb / nab)
            pq[t] += pq[t + h] + d * d * (na * (nb / nab))
            pn[t] = nab
        cuda.syncthreads()
        h //= 2
    if t == 0:
        if n > 0:
            mean[c] = pm[0]
            var[c] = pq[0] / n
        else:  # an empty batch: 0/0 = NaN, as the spec's formula gives
            mean[c] = math.nan
            var[c] = math.nan
        pn[0] = float64(mean[c])  # (the stored values, rounded to their type)
        pn[1] = float64(var[c])
    if fused:
        cuda.syncthreads()
        m = pn[0]
        a = float64(scale[c]) / math.sqrt(pn[1] + eps)
        b = float64(offset[c])
        j = t
        while j < n:
            o = j // inner
            k = (o * C + c) * inner + (j - o * inner)
            out[k] = (float64(x[k]) - m) * a + b
            j += nt


@jit
def _normalize(x, C, inner, mean, var, scale, offset, eps, out):
    """One thread per element: ``(x - mean) * (scale / sqrt(var + eps)) + offset`` in
    float64, rounded once to out's type."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        c = (i // inner) % C
        a = float64(scale[c]) / math.sqrt(float64(var[c]) + eps)
        out[i] = (float64(x[i]) - float64(mean[c])) * a + float64(offset[c])


@jit
def _grad_sums(x, g, C, inner, n, mean, var, scale, eps, grad_scale, grad_offset, coef, out, fused):
    """Block c: ``sum g`` and ``sum g (x - mean)`` of feature c (float64 partials, a
    fixed-order tree); thread 0 stores grad_scale and grad_offset (rounded to their type)
    and grad_operand's float64 coefficients ``k``, ``sum g / N``, ``k inv_std grad_scale /
    N``: in ``coef[0..2, c]``, or with ``fused`` (features of at most ``FUSED_N``
    elements) in shared memory, the block then writing the feature's elements with
    :func:`_grad_operand`'s formula (the two kernels' bits; ``coef`` not read, ``out``
    written only then)."""
    c = cuda.blockIdx.x
    t = cuda.threadIdx.x
    nt = cuda.blockDim.x
    pg = cuda.shared.array(T, float64)
    pc = cuda.shared.array(T, float64)
    mu = float64(mean[c])
    ag = float64(0.0)
    ac = float64(0.0)
    j = t
    while j < n:
        o = j // inner
        k = (o * C + c) * inner + (j - o * inner)
        gv = float64(g[k])
        ag += gv
        ac += gv * (float64(x[k]) - mu)
        j += nt
    pg[t] = ag
    pc[t] = ac
    cuda.syncthreads()
    s = nt // 2
    while s > 0:
        if t < s:
            pg[t] += pg[t + s]
            pc[t] += pc[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        inv_std = float64(1.0) / math.sqrt(float64(var[c]) + eps)
        gs = pc[0] * inv_std  # sum(g * xhat)
        k = float64(scale[c]) * inv_std
        grad_scale[c] = gs
        grad_offset[c] = pg[0]
        k1 = float64(0.0)  # (no element reads them when n = 0)
        k2 = float64(0.0)
        if n > 0:
            k1 = pg[0] / n
            k2 = k * inv_std * (gs / n)
        if fused:
            pc[0] = k
            pc[1] = k1
            pc[2] = k2
        else:
            coef[0, c] = k
            coef[1, c] = k1
            coef[2, c] = k2
    if fused:
        cuda.syncthreads()
        k0 = pc[0]
        k1 = pc[1]
        k2 = pc[2]
        j = t
        while j < n:
            o = j // inner
            i = (o * C + c) * inner + (j - o * inner)
            gm = float64(g[i]) - k1
            out[i] = k0 * gm - k2 * (float64(x[i]) - mu)
            j += nt


@jit
def _grad_operand(x, g, C, inner, mean, coef, out):
    """One thread per element: ``k (g - sum g / N) - kc (x - mean)`` (``coef[:, c]``) in
    float64, rounded once to out's type."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        c = (i // inner) % C
        gm = float64(g[i]) - coef[1, c]
        out[i] = coef[0, c] * gm - coef[2, c] * (float64(x[i]) - float64(mean[c]))


def _checked(op, checks, args):
    """Run the CPU op's checks on its arguments ``args``; returns ``(x, epsilon, device
    arrays of the tensor operands (flat, x first), (C, inner, N))`` with ``C`` the
    feature count, ``inner`` the run length (at least 1), ``N`` the elements per feature.
    A SpecError for an element type with no kernel, or for a tensor operand that is not on
    the device (a NumPy array or a list becomes a CPU tensor: it is not moved silently)."""
    *ts, fi, eps = _validated(checks, args[:-2], args[-2], args[-1])  # (kept per signature)
    x = ts[0]
    if x._dtype.np not in _TYPES and not is_small_float(x._dtype):
        raise SpecError(
            op,
            "device",
            f"has no cuda kernel for element type {x._dtype.name} (the CUDA kernels of "
            f"the batch norm ops take bf16, f16, the f8, f6, f4 types, f32 and f64; convert "
            f"first, or run it on the CPU)",
        )
    arrays = []
    for t in ts:
        v = t._value
        if not hasattr(v, "copy_to_host"):  # (the message's name is built only then)
            on_device(op, t, f"a {t.type} operand")
        if is_small_float(t._dtype):  # (exact)
            v = _wide(t)
        arrays.append(flat(v))
    C = x.shape[fi]
    inner = math.prod(x.shape[fi + 1 :])
    return x, eps, arrays, (C, max(inner, 1), x.size // C if C else 0)


_F64 = as_dtype("f64")


def _wide(t):
    """A small float (bf16, f16, f8, f6, f4) device tensor ``t``'s values as a float64
    device array (exact)."""
    return convert(to_f32(t), _F64)._value


def _work(dt):
    """The element type the kernels compute and store in: float64 for the small floats."""
    return _F64 if is_small_float(dt) else dt


def _result(arr, dt):
    """Kernel array ``arr`` as a tensor of element type ``dt`` (rounded once if narrow)."""
    return encode(from_holder(arr, _F64), dt) if is_small_float(dt) else from_holder(arr, dt)


# Features of at most this many elements take the one-kernel paths (a block per feature
# also does the elementwise part: at most ~16 elements per thread; larger features keep
# the one-thread-per-element kernels, which fill the GPU)
FUSED_N = 16 * T


_coefs = []


def _no_coef():
    """A (3, 1) float64 device array for _grad_sums' ``coef`` when it is not written."""
    if not _coefs:
        _coefs.append(device_empty((3, 1), np.dtype(np.float64)))
    return _coefs[0]


def _normalize_into(x, xv, C, inner, mean, var, scale, offset, eps):
    out = device_empty((x.size,), _work(x._dtype).np)
    launch_1d(_normalize, x.size, xv, C, inner, mean, var, scale, offset, eps, out)
    return _result(shaped(out, x.shape), x._dtype)


def batch_norm_training(operand, scale, offset, epsilon, feature_index):
    """The kernel; same signature and checks as the CPU op."""
    args = (operand, scale, offset, epsilon, feature_index)
    x, eps, (xv, sv, ov), (C, inner, n) = _checked(
        "batch_norm_training", batch_norm_training_checks, args
    )
    dt = x._dtype
    mean = device_empty((C,), _work(dt).np)
    var = device_empty((C,), _work(dt).np)
    if C and n <= FUSED_N and not is_small_float(dt):  # (one launch; the two kernels' bits)
        out = device_empty((x.size,), dt.np)
        _moments[C, _threads(n)](xv, C, inner, n, mean, var, sv, ov, eps, out, 1)
        return from_holder(shaped(out, x.shape), dt), from_holder(mean, dt), from_holder(var, dt)
    if C:  # (scale, offset, out: not read)
        _moments[C, _threads(n)](xv, C, inner, n, mean, var, mean, mean, eps, mean, 0)
    mean_t, var_t = _result(mean, dt), _result(var, dt)
    if is_small_float(dt):  # normalised with the statistics rounded to dt (the CPU's)
        mean, var = _wide(mean_t), _wide(var_t)
    out = _normalize_into(x, xv, C, inner, mean, var, sv, ov, eps)
    return out, mean_t, var_t


def batch_norm_inference(operand, scale, offset, mean, variance, epsilon, feature_index):
    """The kernel; same signature and checks as the CPU op."""
    args = (operand, scale, offset, mean, variance, epsilon, feature_index)
    x, eps, (xv, sv, ov, mv, vv), (C, inner, _) = _checked(
        "batch_norm_inference", batch_norm_inference_checks, args
    )
    return _normalize_into(x, xv, C, inner, mv, vv, sv, ov, eps)


def batch_norm_grad(operand, scale, mean, variance, grad_output, epsilon, feature_index):
    """The kernel; same signature and checks as the CPU op."""
    args = (operand, scale, mean, variance, grad_output, epsilon, feature_index)
    x, eps, (xv, sv, mv, vv, gv), (C, inner, n) = _checked(
        "batch_norm_grad", batch_norm_grad_checks, args
    )
    dt = x._dtype
    grad_scale = device_empty((C,), _work(dt).np)
    grad_offset = device_empty((C,), _work(dt).np)
    out = device_empty((x.size,), _work(dt).np)
    fused = int(n <= FUSED_N)  # (one launch; the two kernels' bits)
    if C:
        coef = _no_coef() if fused else device_empty((3, C), np.float64)
        args = (xv, gv, C, inner, n, mv, vv, sv, eps, grad_scale, grad_offset, coef, out, fused)
        _grad_sums[C, _threads(n)](*args)
        if not fused:
            launch_1d(_grad_operand, x.size, xv, gv, C, inner, mv, coef, out)
    return (_result(shaped(out, x.shape), dt), _result(grad_scale, dt), _result(grad_offset, dt))


KERNELS = {
    "batch_norm_training": batch_norm_training,
    "batch_norm_inference": batch_norm_inference,
    "batch_norm_grad": batch_norm_grad,
}
