"""CUDA kernels of ``convolution``: direct kernels, output-parallel.

The CPU op's constraint checks run first (:func:`xops.ops._convolution_attrs._attributes`,
the same function the CPU op calls): they read only the operands' types and shapes and the
attributes, and give the canonical attributes, the result type and shape. No data is
touched on the host. The device then computes every attribute of the spec:

* the general kernel (any number of spatial dims): thread ``i`` owns output element ``i``
  (flat position in the result's own layout) and decodes it into (batch, output feature,
  spatial position) from a small table (the output's shape and the role of each of its
  dims), so any dimension numbering works without a transpose copy, and neighbouring
  threads write neighbouring addresses. The planar kernel (one or two spatial dims, the
  common case): a thread owns one output position and up to 4 output features of one
  group (see :func:`_planar`);
* feature groups: output feature ``o`` reads the input features of group
  ``o // (O / feature_group_count)``; batch groups: it reads the input batch
  ``(o // (O / batch_group_count)) * N' + b`` (N' the result's batch);
* along each spatial dim, kernel tap ``k`` is window tap ``k`` (``K - 1 - k`` where the
  window is reversed), which at output position ``p`` sits at ``q = p * stride + window
  tap * rhs_dilation - low_padding`` in the spec's padded, lhs-dilated input; it reads
  ``lhs[q / lhs_dilation]`` when ``q`` lands on an input element and is a zero otherwise
  (edge padding, dilation holes; negative padding is the shift of ``q``);
* the sum runs in one fixed order in both kernels (kernel taps row-major, then the input
  features of the group), so a result is the same on every run; each thread writes only
  its own outputs: race-free, no atomics.

Element types: i1, si8-64, ui8-64, f32, f64, c64, c128, with a result type of the same family
(``preferred_element_type``). As on the CPU, each operand element is converted to the
result's compute type before it is multiplied (f64 operands with an f32 result round
first). Integer sums run in 64 bits (wrapping, as the CPU's int64 matmul) and wrap to the
result's width: bit-exact with the CPU. i1 is OR of ANDs. Float sums accumulate in the
result type in the fixed order above: they differ from the CPU's BLAS by rounding order
only (``|dev - cpu| <= 2 * n * eps * sum |lhs| |rhs|`` with n the number of terms).
``precision_config`` is checked and has no effect (full precision of the result type).
bf16 and f16 run as on the CPU: operands converted to the result type first (a
``preferred_element_type`` of another type; :func:`.elementwise.convert`), a bf16 / f16
result computed by the float32 kernel on the operands decoded to float32 (exact) and
rounded once (:mod:`.narrow`); the f8, f6 and f4 types likewise (f8E8M0FNU, f4E2M1FN,
f6E2M3FN and f6E3M2FN since session 22). Complex (c64, c128; session 18) runs the same
kernels in Numba's complex arithmetic, summed in the result type in the same order.
"""

import math

import numpy as np
from numba import cuda, from_dtype, types

from ...errors import SpecError
from ...limits import check_nbytes
from ...ops._convolution_attrs import _attributes
from ...ops._core import operands
from ._storage import device_empty, device_table, flat, from_holder, jit, on_device
from .elementwise import convert
from .movement import c_strides
from .narrow import encode, is_small_float, to_f32

__all__ = ["KERNELS", "MAX_SPATIAL"]

THREADS = 128  # threads per block (the planar kernel's split of its sums depends on it)
MAX_SPATIAL = 12  # spatial dims per convolution (the kernel's local arrays have this size)
_GEO = 9  # entries per spatial dim in the general kernel's table
_PLANAR = True  # one or two spatial dims: the planar kernel (tests switch it off)
_MAX_GRID_Y = 65535  # CUDA's limit on gridDim.y
# The planar kernel splits its sums over the kernel rows when it has fewer than
# _SPLIT_BELOW threads and each part still sums at least _SPLIT_MIN_WORK products (a
# GPU holds some 10**5 threads at once; a kernel gradient has few outputs, long sums).
_SPLIT_BELOW = 32768
_SPLIT_MIN_WORK = 512
# ... and only when a thread's whole sum is longer than _SPLIT_MIN_SUM products: shorter
# sums take little device time unsplit, while a split costs a fold launch and a buffer,
# host time that small convolutions (a training step's) are bound by
_SPLIT_MIN_SUM = 8192
_OK = frozenset(np.dtype(t) for t in "? i1 i2 i4 i8 u1 u2 u4 u8 f4 f8 c8 c16".split())

_cache = {}


def _accumulator(in_np, out_np):
    """The type each operand element is converted to and summed in: the result's own
    float type; 64-bit integers of the operands' signedness (wrapping; an i1 sum counts
    the true products); complex results their own complex type."""
    if out_np.kind in "fc":
        return out_np
    return np.dtype(np.uint64) if in_np.kind == "u" else np.dtype(np.int64)


def _direct(in_np, out_np):
    """The general direct kernel (any number of spatial dims) for operands of ``in_np``
    and a result of ``out_np``."""
    key = (np.dtype(in_np), np.dtype(out_np))
    k = _cache.get(key)
    if k is None:
        tc = from_dtype(_accumulator(*key))
        # the result type: integers wrap (the simulator's NumPy checks bounds otherwise),
        # i1 is "sum != 0"
        oc = from_dtype(key[1])

        def conv(x, w, geo, rank, n_sp, taps, cg, per_f, per_b, n_b, xs_b, xs_f, ws_o, ws_i, out):
            i = cuda.grid(1)
            if i < out.shape[0]:
                pos = cuda.local.array(MAX_SPATIAL, types.int64)
                tap = cuda.local.array(MAX_SPATIAL, types.int64)
                # the output coordinates, from the flat position in the output's layout
                r = i
                b = 0
                o = 0
                for d in range(rank - 1, -1, -1):
                    size = geo[d]
                    c = r % size
                    r = r // size
                    role = geo[rank + d]
                    if role == 0:
                        b = c
                    elif role == 1:
                        o = c
                    else:
                        pos[role - 2] = c
                for s in range(n_sp):
                    tap[s] = 0
                x0 = ((o // per_b) * n_b + b) * xs_b + (o // per_f) * cg * xs_f
                w0 = o * ws_o
                acc = tc(0)
                for _t in range(taps):
                    # kernel tap ``tap`` (row-major over the spatial dims): offsets in x, w
                    xoff = x0
                    woff = w0
                    ok = True
                    for s in range(n_sp):
                        g = 2 * rank + s * _GEO
                        k = tap[s]  # the kernel tap; the window tap, reversed or not:
                        kw = geo[g + 1] - 1 - k if geo[g + 6] != 0 else k
                        q = pos[s] * geo[g + 2] + kw * geo[g + 5] - geo[g + 3]
                        ld = geo[g + 4]
                        if q < 0 or q > (geo[g] - 1) * ld:
                            ok = False
                            break
                        if ld != 1:
                            if q % ld != 0:
                                ok = False
                                break
                            q = q // ld
                        xoff += q * geo[g + 7]
                        woff += k * geo[g + 8]
                    if ok:
                        for c in range(cg):
                            acc += tc(x[xoff + c * xs_f]) * tc(w[woff + c * ws_i])
                    s = n_sp - 1  # next tap (an odometer: no divisions)
                    while s >= 0:
                        tap[s] += 1
                        if tap[s] < geo[2 * rank + s * _GEO + 1]:
                            break
                        tap[s] = 0
                        s -= 1
                out[i] = oc(acc)

        k = _cache[key] = jit(conv)
    return k


def _planar(in_np, out_np, ob):
    """The kernel for one or two spatial dims (a unit dim ``H`` in front for one, two for
    none): blockIdx.y picks (batch, a block of ``ob`` output features of one group), the
    threads of a block run over the output's (h, w) positions, w fastest. Each thread
    keeps ``ob`` sums, so every input element it loads is used ``ob`` times; the kernel
    values are the same for the whole block (broadcast loads), the input values of
    neighbouring threads neighbours for stride 1 (coalesced). Where each tap lands is
    looked up in two small tables (see _tap_table), so the loops do no divisions. The
    sum's order is the general kernel's (kernel taps row-major, then input features).

    Split sums (few threads, long sums: a kernel gradient): blockIdx.z takes the kernel
    rows ``[z * chunk, (z + 1) * chunk)`` and writes its partial sums to ``part``; then
    :func:`_fold` adds the parts in increasing z (a fixed order; no atomics)."""
    key = (np.dtype(in_np), np.dtype(out_np), ob)
    k = _cache.get(key)
    if k is None:
        tc = from_dtype(_accumulator(*key[:2]))
        oc = from_dtype(key[1])

        def conv2(x, w, geo, chunk, part, out):
            sp = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
            oh_n = geo[0]
            ow_n = geo[1]
            if sp < oh_n * ow_n:
                z = cuda.blockIdx.y
                b = z // geo[4]
                o0 = (z - b * geo[4]) * ob
                oh = sp // ow_n
                ow = sp - oh * ow_n
                kh_n = geo[2]
                kw_n = geo[3]
                cg = geo[8]
                xs_f = geo[10]
                ws_o = geo[11]
                ws_i = geo[12]
                th = _HEADER + oh * kh_n  # this row's taps in the H table
                tw = _HEADER + oh_n * kh_n + ow * kw_n  # this column's in the W table
                x0 = ((o0 // geo[6]) * geo[7] + b) * geo[9] + (o0 // geo[5]) * cg * xs_f
                acc = cuda.local.array(ob, tc)
                for j in range(ob):
                    acc[j] = 0
                zs = cuda.blockIdx.z
                kh_end = zs * chunk + chunk  # (no min(): it needs a driver to compile)
                if kh_end > kh_n:
                    kh_end = kh_n
                for kh in range(zs * chunk, kh_end):
                    xh = geo[th + kh]
                    if xh >= 0:
                        for kw in range(kw_n):
                            xw = geo[tw + kw]
                            if xw >= 0:
                                xoff = x0 + xh + xw
                                woff = o0 * ws_o + kh * geo[13] + kw * geo[14]
                                for c in range(cg):
                                    xv = tc(x[xoff + c * xs_f])
                                    for j in range(ob):
                                        acc[j] += xv * tc(w[woff + c * ws_i + j * ws_o])
                at = b * geo[15] + o0 * geo[16] + oh * geo[17] + ow * geo[18]
                for j in range(ob):
                    if cuda.gridDim.z > 1:
                        part[zs * out.shape[0] + at + j * geo[16]] = acc[j]
                    else:
                        out[at + j * geo[16]] = oc(acc[j])

        k = _cache[key] = jit(conv2)
    return k


def _fold(in_np, out_np):
    """Adds the split sums' parts (``parts`` blocks of out's size) in increasing order and
    writes the result type."""
    key = ("fold", np.dtype(in_np), np.dtype(out_np))
    k = _cache.get(key)
    if k is None:
        oc = from_dtype(key[2])

        def fold(part, parts, out):
            i = cuda.grid(1)
            n = out.shape[0]
            if i < n:
                acc = part[i]
                for z in range(1, parts):
                    acc += part[z * n + i]
                out[i] = oc(acc)

        k = _cache[key] = jit(fold)
    return k


_HEADER = 19  # entries of the planar table before its tap tables


def _tap_table(in_n, k_n, out_n, stride, lo, ld, rd, rev, xs):
    """For output position o and kernel tap k (row o, column k) along one spatial dim:
    the offset in lhs of the input element the tap reads, or -1 where it reads edge
    padding or a dilation hole (the window tap is k, or k_n - 1 - k when reversed)."""
    o = np.arange(out_n, dtype=np.int64)[:, None]
    k = np.arange(k_n, dtype=np.int64)[None, :]
    q = o * stride + ((k_n - 1 - k) if rev else k) * rd - lo  # in the padded, dilated lhs
    ok = (q >= 0) & (q % ld == 0) & (q // ld < in_n)
    return np.where(ok, (q // ld) * xs, -1).reshape(-1)


_ones = {}  # dtype -> a one-element device array (an argument the kernel never reads)


def _split(rows, per_row, threads):
    """(parts, rows per part) of the planar kernel's sums over ``rows`` kernel rows of
    ``per_row`` products each, run by ``threads`` threads (see _SPLIT_BELOW)."""
    if rows * per_row <= _SPLIT_MIN_SUM:
        return 1, rows
    parts = min(
        rows,
        _MAX_GRID_Y,  # (gridDim.z has the same limit)
        -(-_SPLIT_BELOW // threads),
        rows * per_row // _SPLIT_MIN_WORK,
    )
    if parts <= 1:
        return 1, rows
    chunk = -(-rows // parts)
    return -(-rows // chunk), chunk


def _device_operand(op, t, name):
    v = on_device(op, t, name)
    if v.size == 0:  # never read (the sum has no terms); a valid pointer all the same
        return _one(v.dtype)
    return flat(v)


def _one(np_dtype):
    """A one-element device array of ``np_dtype`` (cached) for an argument not read."""
    key = np.dtype(np_dtype)
    a = _ones.get(key)
    if a is None:
        a = _ones[key] = cuda.device_array(1, np_dtype)
    return a


def convolution(op, lhs, rhs, *attributes):
    """The kernel of the recorded core of convolution (and of conv_with_general_padding
    and conv): it takes the core's arguments, ``op`` naming the caller."""
    x, y = operands(op, lhs, rhs, names=["lhs", "rhs"])
    a = _attributes(op, x._dtype, x.shape, y._dtype, y.shape, *attributes)
    in_dt, out_dt = x._dtype, a.out_dt
    if is_small_float(in_dt) or is_small_float(out_dt):
        return _narrow(op, x, y, out_dt, attributes)
    if in_dt.quantized or in_dt.np not in _OK or out_dt.np not in _OK or out_dt.quantized:
        raise SpecError(
            op,
            "device",
            f"has no cuda kernel for {in_dt.name} operands with a {out_dt.name} result "
            f"(i1, si8-64, ui8-64, f32, f64, c64, c128; bf16, f16 and the f8, f6, f4 "
            f"types in float32)",
        )
    n_sp = len(a.in_spatial)
    if n_sp > MAX_SPATIAL:
        raise SpecError(
            op, "device", f"the cuda kernel takes up to {MAX_SPATIAL} spatial dims, got {n_sp}"
        )
    xv = _device_operand(op, x, "lhs")
    wv = _device_operand(op, y, "rhs")
    shape = a.result_shape
    check_nbytes(op, shape, out_dt.np)
    out = device_empty(shape, out_dt.np)
    size = math.prod(shape)
    if size == 0:
        return from_holder(out, out_dt)
    key = (a, _PLANAR, _SPLIT_BELOW, _SPLIT_MIN_WORK, _SPLIT_MIN_SUM)  # (tests switch these)
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) >= _PLANS_KEPT:
            _plans.clear()
        plan = _plans[key] = _plan(a, x.shape, y.shape, in_dt.np, out_dt.np, size)
    kind, kernel, config, args, fold = plan
    if kind == "planar":
        splits, acc_np = fold
        part = device_empty((size * splits,), acc_np) if splits > 1 else _one(acc_np)
        kernel[config](xv, wv, *args, part, flat(out))
        if splits > 1:
            _fold(in_dt.np, out_dt.np)[(size + THREADS - 1) // THREADS, THREADS](
                part, splits, flat(out)
            )
    else:
        kernel[config](xv, wv, *args, flat(out))
    return from_holder(out, out_dt)


# (a validated convolution (the checks' cached result, one per signature: shapes, types,
# attributes), the module's switches) -> its launch plan: what convolution() works out
# from the signature alone
_plans = {}
_PLANS_KEPT = 1024


def _plan(a, x_shape, y_shape, in_np, out_np, size):
    """(kind, kernel, launch configuration, the arguments between the operands and the
    result, fold) of the validated convolution ``a``: "planar" (fold: the number of
    kernel-row splits and the partial sums' type) or "general" (fold None)."""
    dn = a.dn
    n_sp = len(a.in_spatial)
    shape = a.result_shape
    xs, ws = c_strides(x_shape), c_strides(y_shape)
    n_out = y_shape[dn.kernel_output_feature_dimension]
    cg = y_shape[dn.kernel_input_feature_dimension]
    per_f, per_b = n_out // a.fgc, n_out // a.bgc  # output features per group
    n_b = x_shape[dn.input_batch_dimension] // a.bgc  # the result's batch
    dims = []  # per spatial dim: what both tables hold about it
    for s in range(n_sp):
        dims.append(
            (
                a.in_spatial[s],
                a.k_spatial[s],
                a.strides[s],
                a.padding[s][0],
                a.lhs_dilation[s],
                a.rhs_dilation[s],
                int(a.reversal[s]),
                xs[dn.input_spatial_dimensions[s]],
                ws[dn.kernel_spatial_dimensions[s]],
            )
        )
    ob = next(v for v in (4, 2, 1) if per_f % v == 0 and per_b % v == 0)
    if _PLANAR and n_sp <= 2 and n_b * (n_out // ob) <= _MAX_GRID_Y:
        os_ = c_strides(shape)
        lead = 2 - n_sp  # unit dims in front: one position, one tap
        hw = [(1, 1, 1, 0, 1, 1, 0, 0, 0)] * lead + dims
        out_hw = [1] * lead + list(a.out_spatial)
        os_hw = [0] * lead + [os_[d] for d in dn.output_spatial_dimensions]
        header = (
            *out_hw,
            hw[0][1],
            hw[1][1],
            n_out // ob,
            per_f,
            per_b,
            n_b,
            cg,
            xs[dn.input_batch_dimension],
            xs[dn.input_feature_dimension],
            ws[dn.kernel_output_feature_dimension],
            ws[dn.kernel_input_feature_dimension],
            hw[0][8],
            hw[1][8],
            os_[dn.output_batch_dimension],
            os_[dn.output_feature_dimension],
            *os_hw,
        )

        def build():
            taps = [_tap_table(d[0], d[1], o_n, *d[2:8]) for d, o_n in zip(hw, out_hw)]
            return np.concatenate([np.array(header, np.int64)] + taps)

        table = device_table(("conv planar",) + header + hw[0] + hw[1], build)
        positions = out_hw[0] * out_hw[1]
        threads = min(THREADS, -(-positions // 32) * 32)
        grid = (-(-positions // threads), n_b * (n_out // ob))
        splits, chunk = _split(hw[0][1], hw[1][1] * cg * ob, grid[0] * grid[1] * threads)
        kernel = _planar(in_np, out_np, ob)
        fold = (splits, _accumulator(in_np, out_np))
        return "planar", kernel, (grid + (splits,), threads), (table, chunk), fold

    rank = len(shape)
    roles = [0] * rank  # what each output dim is: 0 batch, 1 feature, 2 + s spatial s
    roles[dn.output_feature_dimension] = 1
    for s, d in enumerate(dn.output_spatial_dimensions):
        roles[d] = 2 + s
    table = tuple(shape) + tuple(roles) + sum(dims, ())
    table = device_table(("conv general",) + table, lambda: table)
    args = (
        table,
        rank,
        n_sp,
        math.prod(a.k_spatial),
        cg,
        per_f,
        per_b,
        n_b,
        xs[dn.input_batch_dimension],
        xs[dn.input_feature_dimension],
        ws[dn.kernel_output_feature_dimension],
        ws[dn.kernel_input_feature_dimension],
    )
    config = ((size + THREADS - 1) // THREADS, THREADS)
    return "general", _direct(in_np, out_np), config, args, None


def _narrow(op, x, y, out_dt, attributes):
    """bf16 / f16 / f8 / f6 / f4 operands or result (checked): each operand converted to
    the result type (rounded once where it is narrower), a narrow result computed in
    float32 from the decoded operands and rounded once, as the CPU computes it."""
    ok = out_dt.kind == "float" and (is_small_float(out_dt) or out_dt.np in _OK)
    if not ok or not (is_small_float(x._dtype) or x._dtype.np in _OK):
        raise SpecError(
            op,
            "device",
            f"has no cuda kernel for {x._dtype.name} operands with a {out_dt.name} result "
            f"(i1, si8-64, ui8-64, bf16, f16, the f8, f6, f4 types, f32, f64)",
        )
    on_device(op, x, "lhs")
    on_device(op, y, "rhs")
    if x._dtype is not out_dt:
        x, y = convert(x, out_dt), convert(y, out_dt)
    plain = tuple(attributes[:-1]) + (None,)  # preferred_element_type: now the operands'
    if not is_small_float(out_dt):
        return convolution(op, x, y, *plain)
    return encode(convolution(op, to_f32(x), to_f32(y), *plain), out_dt)


KERNELS = {"convolution": convolution}
