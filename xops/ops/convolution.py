"""Convolution: stablehlo.convolution, and XLA's ConvWithGeneralPadding and Conv.

``convolution`` computes, for every output position, dot products between a window of
``lhs`` and ``rhs`` (spec: StableHLO "convolution"; XLA "ConvWithGeneralPadding").
Every attribute of the spec is supported: strides, low/high padding (negative too),
lhs (base) dilation, rhs (window) dilation, window reversal, any dimension layout,
any number of spatial dims (0 included), feature and batch groups, and a wider result
type (``preferred_element_type``).

How it runs:

1. the operands are converted to one *work* dtype and normalised to the canonical
   layout (batch, feature, spatial...) x (out-feature, in-feature, spatial...);
   batch groups become feature groups on the way (one transpose of lhs);
2. one of three packings around a single GEMM per group (``np.matmul``, BLAS), chosen
   by a cost model (``_strategy``):

   * ``im2col``: a Numba kernel (``xops.kernels.convolution.im2col``) copies every
     window of the padded input (the spec's ``padded_lhs``) into columns
     (C*K, N*P) (K kernel taps, P output positions), then weights (O, C*K) @ columns;
   * ``im2row``: the same with rows (N*P, C*K), for kernels wider than the output (the
     kernel gradient);
   * ``window_sum`` (kn2row): weights (O*K, C) @ input (C, positions) first, then a
     Numba kernel sums each output's K taps (``window_sum_rows``: contiguous runs, for
     one or two spatial dims with stride 1 along the last; else ``window_sum``, through
     an offset table); for fewer output than input features, or lhs dilation (the
     input gradient, transposed convolutions);
3. the result is transposed to the requested output layout and rounded once to the
   result type.

Element types: floats compute in float32/float64 (bf16, f16, f8... in float32, rounded
once), complex in complex64/complex128. Integer and boolean convolutions are exact:
they run in float64 BLAS when every partial sum is an integer below 2**53 (checked from
the operands' actual ranges and the contraction length), else in int64 (NumPy's integer
matmul, which wraps mod 2**64); the sum then wraps to the result type's width. i1 is
OR of ANDs. ``precision_config`` only matters on accelerators: on the CPU every
setting gives full precision of the work dtype. Quantized types are not supported yet.

``convolution_reference`` is the spec's formal semantics step by step (pad, slice,
reverse, dot_general per output position, split/concatenate for groups): the test
oracle. ``convolution_grad_lhs`` / ``convolution_grad_rhs`` are the two cotangents,
each itself a convolution.

Layout: this module holds the ops, the fast path (step 2 above) and the gradient
convolutions; ``_convolution_attrs.py`` the dimension numbers, every constraint check
and the operand/result value conversions; ``_convolution_tables.py`` the kernels'
geometry tables; ``_convolution_reference.py`` the reference.
"""

import math

import numpy as np

from ..autodiff import helpers as _H
from ..autodiff.tape import is_grad_enabled, primitive
from ..kernels import convolution as K
from ..kernels import pool as _pool
from ..limits import check_nbytes
from ..limits import config as _limits_config
from ..registry import declare
from ..tensor import Tensor, typestr
from . import _blas
from ._convolution_attrs import (
    ConvDimensionNumbers,
    _attribute_values,
    _attributes,
    _dimension_numbers,
    _dims_ok,
    _from_work,
    _operand_values,
    _spatial_ints,
)
from ._convolution_reference import convolution_reference  # noqa: F401 (re-exported: the oracle)
from ._convolution_tables import (
    _affine_table,
    _geometry_2d,
    _per_chan,
    _row_taps_table,
    _window_table,
    _words,
    _words_ok,
)
from . import _convolution_direct as _direct
from ._convolution_direct import direct_route, run_direct
from ._core import check, fast_grad_of, operands, result


__all__ = ["convolution", "conv_with_general_padding", "conv", "ConvDimensionNumbers"]


# ---------------------------------------------------------------------------------------
# stablehlo.convolution
# ---------------------------------------------------------------------------------------


@declare("convolution", quantized="dequantize")
def convolution(
    lhs,
    rhs,
    window_strides=None,
    padding=None,
    lhs_dilation=None,
    rhs_dilation=None,
    window_reversal=None,
    dimension_numbers=None,
    feature_group_count=1,
    batch_group_count=1,
    precision_config=None,
    preferred_element_type=None,
):
    """stablehlo.convolution: dot products between windows of ``lhs`` and ``rhs``.

    ``padding`` is one (low, high) pair per spatial dim (negative removes elements);
    zeros are inserted between input elements (``lhs_dilation``, "transposed conv") and
    between kernel taps (``rhs_dilation``, "atrous conv"); ``window_reversal`` flips the
    window per spatial dim. ``dimension_numbers``: None (NCHW x OIHW -> NCHW for any
    rank), ``"NHWC,HWIO,NHWC"``-style letters (N batch, C feature, O/I kernel out/in
    feature, other letters spatial, numbered in the kernel spec's order), the MLIR form
    ``"[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"``, or a dict / ConvDimensionNumbers with
    the spec's fields. ``feature_group_count`` splits the input features and the kernel
    output features into groups (depthwise: = input features); ``batch_group_count``
    splits the input batch and the kernel output features (output batch = N / count).

    >>> x = xo.tensor(np.arange(16.0, dtype=np.float32).reshape(1, 1, 4, 4))
    >>> xo.convolution(x, xo.tensor(np.ones((1, 1, 2, 2), np.float32)), [2, 2]).tolist()
    [[[[10.0, 18.0], [42.0, 50.0]]]]
    """
    return _convolution(
        "convolution",
        lhs,
        rhs,
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        window_reversal,
        dimension_numbers,
        feature_group_count,
        batch_group_count,
        precision_config,
        preferred_element_type,
    )


@primitive("convolution", core=True)
def _convolution(
    op,
    lhs,
    rhs,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    window_reversal,
    dimension_numbers,
    feature_group_count,
    batch_group_count,
    precision_config,
    preferred_element_type,
):
    """The recorded core of convolution, conv_with_general_padding and conv (``op`` only
    names the caller in error messages)."""
    x, y = operands(op, lhs, rhs, names=["lhs", "rhs"])
    a = _attributes(
        op,
        x._dtype,
        x.shape,
        y._dtype,
        y.shape,
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        window_reversal,
        dimension_numbers,
        feature_group_count,
        batch_group_count,
        precision_config,
        preferred_element_type,
    )
    return result(_convolution_impl(x, y, a), a.out_dt)


def _fast_convolution(args, grad=False):
    """``_convolution``'s dispatch fast path (xops.autodiff.tape.primitive): a call with
    all thirteen arguments positional (as ``convolution`` and the gradient rules make
    it) on two CPU tensors whose types are not quantized (no gradient unless ``grad``)
    goes straight to the validated attributes (``_attributes``: the op's own checks,
    kept per signature) and the computation, without the generic dispatch's scans of
    thirteen arguments; None for anything else (the full path)."""
    if len(args) != 13:
        return None
    lhs, rhs = args[1], args[2]
    if type(lhs) is not Tensor or type(rhs) is not Tensor:
        return None
    if type(lhs._value) is not np.ndarray or type(rhs._value) is not np.ndarray:
        return None
    if lhs._dtype.quantized or rhs._dtype.quantized:
        return None
    if not grad and (lhs.requires_grad or rhs.requires_grad):
        return None
    a = _attributes(args[0], lhs._dtype, lhs.shape, rhs._dtype, rhs.shape, *args[3:])
    return result(_convolution_impl(lhs, rhs, a), a.out_dt)


_convolution._fast = _fast_convolution
_convolution._fast_grad = fast_grad_of(_fast_convolution)  # (the op keeps no attributes)


@_convolution.defvjp
def _convolution_vjp(g, out, op, lhs, rhs, *attributes):
    """Convolution is bilinear: each cotangent is itself a convolution (see
    convolution_grad_lhs / convolution_grad_rhs below), so second order works."""
    x, y = operands(op, lhs, rhs, names=["lhs", "rhs"])
    a = _attributes(op, x._dtype, x.shape, y._dtype, y.shape, *attributes)
    if g._dtype is not x._dtype:  # preferred_element_type: back to the operands' type
        from .conversion import convert

        g = convert(g, x._dtype)
    g_lhs = _grad_lhs(g, y, a) if isinstance(lhs, Tensor) and lhs.requires_grad else None
    g_rhs = _grad_rhs(g, x, a) if isinstance(rhs, Tensor) and rhs.requires_grad else None
    return None, g_lhs, g_rhs


# -- fast path: im2col / im2row / window_sum (Numba) around one GEMM (BLAS) -------------

# Tests set this to "im2col", "im2row" or "window_sum" to run one strategy everywhere.
_FORCE_STRATEGY = None
# The Numba kernels share the cores with BLAS, which already runs in parallel: a second
# parallel phase per call gains little for a memory-bound copy (~0.3 of 5 ms on the
# 32->64 benchmark layer) and costs whole scheduler ticks when other processes compete
# for the cores (measured 2x slower on the 3->32 layer). So the kernels go parallel
# only for large work: the size handed to the serial/parallel dispatcher is the work
# divided by these factors (parallel from 16M copied words / 4M gathered terms).
_IM2COL_WORK_PER_UNIT = 256
_WINDOW_SUM_WORK_PER_UNIT = 64
# Cost model: one packed element (written by a kernel, read back by BLAS) costs about
# as much as this many GEMM flops (calibrated on the 2-core machine: with it the model
# picks the faster strategy for all six benchmarks/wl_convolution.py convolutions).
_FLOPS_PER_ELEMENT = 64


# The kernel gradient's im2row runs one GEMM per input feature (see _per_chan) where
# each product's result (output features x rows) has at most this many elements: thin
# products, where a second BLAS thread gains little and one GEMM over all features
# reads rows far apart. Larger results keep one multi-threaded GEMM. The digits CNN's
# second layer (32 x 144 = 4608) measured faster this way (idle, interleaved, both
# gradients of the layer, median us: 2469 vs 2980 at batch 32, 4701 vs 5395 at 64, with
# 4096 here); the mid layer (64 x 288) keeps its one GEMM.
_PER_CHAN_RESULT = 16384
# Its im2row rows are written and multiplied in pieces of about this many bytes of rows
# (see _per_chan_matmul): one core's L2 on the AVX-512 EPYC (the AVX2 ones have 512 KiB:
# a piece then stays in L3). 256 and 512 KiB measured no faster, with 4x / 2x the calls.
_PIECE_BYTES = 1 << 20
# The pieces go to several threads only from this many flops (~0.4 ms on one core): a
# hand-off costs ~20-50 us, and under load more (measured slower, not faster, on the
# kernel gradients of CIFAR's batch 8 and the digits CNN's first layer, ~14 MFLOP each).
_THREADED_FLOPS = 1 << 25


def _abs_max(v):
    """max |v| as a Python int (exact for int64/uint64; 0 for an empty array)."""
    if v.size == 0:
        return 0
    return max(abs(int(v.max())), abs(int(v.min())))


def _work_dtype(out_dt, xv, yv, contraction):
    """The dtype the packing and the matmul use."""
    if out_dt.kind in ("float", "complex"):
        return out_dt.compute
    # integers and i1: exact in float64 if every partial sum is an integer below 2**53
    if _abs_max(xv) * _abs_max(yv) * contraction < 2**53:
        return np.dtype(np.float64)
    return np.dtype(np.int64)


def _convolution_impl(x, y, a, bias=None):
    """Canonical layout, packing + matmul, output layout. Returns the result in the
    result type's compute domain. ``bias`` (float32 values of the output features, for
    a float32 convolution): added to each feature after its sums where the blocked
    forward kernel runs the call; elsewhere the result is None (nothing computed: the
    caller adds the bias itself)."""
    dn, out_dt = a.dn, a.out_dt
    n = len(a.in_spatial)
    groups = a.fgc * a.bgc  # one of them is 1 (C23)
    k_taps = math.prod(a.k_spatial)
    c_group = y.shape[dn.kernel_input_feature_dimension]
    xv, yv = _operand_values(x, out_dt), _operand_values(y, out_dt)
    work = _work_dtype(out_dt, xv, yv, c_group * k_taps)

    # lhs as (N', [batch groups,] C, *spatial): batch groups become feature groups
    lhs_c = np.transpose(
        xv, [dn.input_batch_dimension, dn.input_feature_dimension, *dn.input_spatial_dimensions]
    )
    batch, chan = lhs_c.shape[:2]
    if a.bgc > 1:
        batch //= a.bgc
        lhs_c = lhs_c.reshape(a.bgc, batch, chan, *a.in_spatial).swapaxes(0, 1)
        chan *= a.bgc
    n_out = y.shape[dn.kernel_output_feature_dimension]
    out_pos = math.prod(a.out_spatial)
    plan = _plan(a, work, batch, chan, groups, n_out, k_taps, out_pos)
    if bias is not None and (plan is None or plan[1] is None or plan[1][0] != "blocked"):
        return None

    if plan is None:  # (an empty result or an empty contraction)
        out = np.zeros((batch, n_out, *a.out_spatial), work)
    else:
        # rhs as (O, C/groups, *kernel); window reversal = flipping the kernel
        w = np.transpose(
            yv,
            [
                dn.kernel_output_feature_dimension,
                dn.kernel_input_feature_dimension,
                *dn.kernel_spatial_dimensions,
            ],
        )
        flips = [2 + d for d in range(n) if a.reversal[d]]
        if flips:
            w = np.flip(w, flips)
        w = np.asarray(w, dtype=work)  # (a view where it can be: the packings reshape it)
        strategy, route = plan
        out = None
        if route is not None:
            out = run_direct(route, lhs_c, w, a, work, batch, chan, n_out, bias)
        if out is None:
            out = _fast_2d(strategy, lhs_c, w, a, work, batch, chan, groups, n_out)
        if out is None and strategy == "window_sum":
            out = _window_sum_matmul(lhs_c, w, a, work, batch, chan, groups, n_out)
        elif out is None:
            out = _im2col_matmul(
                lhs_c, w, a, work, batch, chan, groups, n_out, strategy == "im2row"
            )

    # canonical (N', O, *spatial) -> the requested output layout: a view (like
    # xo.transpose's results); copying it would cost a pass over the output
    axes = [0] * (n + 2)
    axes[dn.output_batch_dimension] = 0
    axes[dn.output_feature_dimension] = 1
    for i, d in enumerate(dn.output_spatial_dimensions):
        axes[d] = 2 + i
    return _from_work(np.transpose(out, axes), out_dt)


def _plan(a, work, batch, chan, groups, n_out, k_taps, out_pos):
    """(packing strategy, direct route or None) for convolution ``a`` computed in
    ``work``, after the size checks of its result and temporaries; None for an empty
    result or contraction. Kept in ``a.derived`` with what it depends on besides the
    attributes (the work type, the limit, the routing switches): a training step's
    convolutions are planned once."""
    stamp = (work, _limits_config._max_bytes, _FORCE_STRATEGY, _FAST_2D, _direct.stamp())
    kept = a.derived.get("plan")
    if kept is not None and kept[0] == stamp:
        return kept[1]
    check_nbytes("convolution", (batch, n_out, *a.out_spatial), work)
    if batch * n_out * out_pos == 0 or (chan // groups) * k_taps == 0:
        plan = None
    else:
        strategy = _strategy(a, chan, n_out, groups, k_taps, out_pos)
        padded = math.prod(
            lo + (0 if s == 0 else (s - 1) * ld + 1) + hi
            for s, (lo, hi), ld in zip(a.in_spatial, a.padding, a.lhs_dilation)
        )
        check_nbytes("convolution", (batch, chan, padded), work, "padded input temporary")
        if strategy == "window_sum":
            check_nbytes(
                "convolution",
                (batch, n_out * k_taps, math.prod(a.in_spatial) + 1),
                work,
                "window-sum temporary",
            )
        else:
            check_nbytes("convolution", (batch, chan * k_taps, out_pos), work, "im2col temporary")
        route = None
        if _FORCE_STRATEGY is None and _FAST_2D:  # (tests that force a packing get it)
            route = direct_route(a, work, batch, chan, groups, n_out)
        plan = (strategy, route)
    a.derived["plan"] = (stamp, plan)
    return plan


def _strategy(a, chan, n_out, groups, k_taps, out_pos):
    """ "im2col"/"im2row" pack C*K values per output position, "window_sum" O*K per input
    position (and does its GEMM at input positions): pick the cheaper (per image).
    im2row when the kernel's last dim is longer than the output's (the copy loops run
    along the longer one)."""
    if _FORCE_STRATEGY is not None:
        return _FORCE_STRATEGY
    size = math.prod(a.in_spatial)
    padded = math.prod(
        lo + (0 if s == 0 else (s - 1) * ld + 1) + hi
        for s, (lo, hi), ld in zip(a.in_spatial, a.padding, a.lhs_dilation)
    )
    flops = 2 * n_out * (chan // groups) * k_taps
    cost_im2col = chan * (k_taps * out_pos + padded) + flops * out_pos / _FLOPS_PER_ELEMENT
    # window_sum: BLAS writes Y (half the cost of a packed element), the kernel gathers it
    cost_window_sum = n_out * k_taps * (size / 2 + out_pos) + flops * size / _FLOPS_PER_ELEMENT
    if cost_window_sum < cost_im2col:
        return "window_sum"
    kw_n, ow_n = (a.k_spatial[-1], a.out_spatial[-1]) if a.k_spatial else (1, 1)
    return "im2row" if ow_n < kw_n else "im2col"


def _padded_input(lhs_c, a, work, batch, chan):
    """The spec's padded_lhs: (N', C, *padded spatial) with lhs-dilation holes and edge
    padding as zeros, negative padding cropped; one strided copy (and cast) of lhs."""
    n = len(a.in_spatial)
    padded = [
        lo + (0 if s == 0 else (s - 1) * ld + 1) + hi
        for s, (lo, hi), ld in zip(a.in_spatial, a.padding, a.lhs_dilation)
    ]
    buf = np.zeros((batch, chan, *padded), work)
    view = np.reshape(buf, lhs_c.shape[: lhs_c.ndim - n] + tuple(padded), copy=False)
    dst, src = [], []
    for s, (lo, _), ld, p in zip(a.in_spatial, a.padding, a.lhs_dilation, padded):
        i_min = max(0, -(lo // ld))  # first input index that lands inside [0, padded)
        i_max = min(s - 1, (p - 1 - lo) // ld)
        if i_max < i_min:
            return buf  # every input element is cropped away
        src.append(slice(i_min, i_max + 1))
        dst.append(slice(lo + i_min * ld, lo + i_max * ld + 1, ld))
    lead = (slice(None),) * (lhs_c.ndim - n)
    np.copyto(view[lead + tuple(dst)], lhs_c[lead + tuple(src)], casting="unsafe")
    return buf


def _im2col_matmul(lhs_c, w, a, work, batch, chan, groups, n_out, im2row):
    """Pack the windows as columns (C*K, N*P) — or as rows (N*P, C*K), im2row, with
    contiguous runs along the kernel's last dim instead of the output's — and multiply
    in one GEMM per group (one BLAS call: a single thread-synchronisation point, which
    keeps it fast when other processes compete for the cores)."""
    padded = _padded_input(lhs_c, a, work, batch, chan)
    table, kw_n, kw_step, ow_n, ow_step = _affine_table(
        padded.shape[2:],
        tuple(a.k_spatial),
        tuple(a.out_spatial),
        tuple(a.strides),
        tuple(a.rhs_dilation),
    )
    k_taps, out_pos = math.prod(a.k_spatial), math.prod(a.out_spatial)
    rows = chan * k_taps
    c_k = rows // groups
    if im2row:  # (N, P, C*K)
        d_n, d_c, d_k, d_p = out_pos * rows, k_taps, 1, rows
    else:  # (C*K, N, P)
        d_n, d_c, d_k, d_p = out_pos, k_taps * batch * out_pos, batch * out_pos, 1
    cols = _pool.empty(batch * rows * out_pos, work)
    planes = padded.reshape(-1)
    plane = planes.size // (batch * chan)
    if work == np.complex128:  # two float64 passes into the interleaved columns
        words = cols.view(np.float64).view(np.uint64)
        passes = [(np.ascontiguousarray(planes.real), 0), (np.ascontiguousarray(planes.imag), 1)]
        lanes = 2
    else:
        word = np.uint64 if work.itemsize == 8 else np.uint32
        words = cols.view(word)
        passes, lanes = [(planes, 0)], 1
    for src, d0 in passes:
        K.im2col(
            cols.size // _IM2COL_WORK_PER_UNIT,
            src.view(words.dtype),
            plane,
            table,
            kw_n,
            kw_step,
            ow_n,
            ow_step,
            words,
            d0,
            d_n * lanes,
            d_c * lanes,
            d_k * lanes,
            d_p * lanes,
            chan,
            im2row,
        )
    w2 = w.reshape(groups, n_out // groups, c_k)
    if im2row:
        b = cols.reshape(batch * out_pos, groups, c_k).transpose(1, 2, 0)
    else:
        b = cols.reshape(groups, c_k, batch * out_pos)
    with np.errstate(all="ignore"):
        out = _blas.matmul(w2, b)  # (G, O/G, N*P)
    return out.reshape(n_out, batch, *a.out_spatial).swapaxes(0, 1)


def _window_sum_matmul(lhs_c, w, a, work, batch, chan, groups, n_out):
    """Y = W @ X at every input position of every image, in one GEMM per group (rows:
    output feature x kernel tap; columns: image x position, plus zero columns), then
    each output sums its taps' Y entries (kn2row): with ``window_sum_rows`` where
    ``_row_taps`` allows (a zero column or two after every row of X), else with
    ``window_sum`` (one zero column per image, an offset table; complex sums on their
    (real, imaginary) lanes)."""
    n = len(a.in_spatial)
    k_taps = math.prod(a.k_spatial)
    c_g, o_g = chan // groups, n_out // groups
    taps = _row_taps(a, work)
    if taps is not None:
        width, row = a.in_spatial[-1], taps[0]
        cols = math.prod(a.in_spatial[:-1]) * row
        buf = _pool.empty((chan, batch, cols // row, row), work)
        body, zero = buf[..., :width], buf[..., width:]
    else:
        cols = math.prod(a.in_spatial) + 1
        buf = _pool.empty((chan, batch, cols), work)
        body, zero = buf[:, :, :-1], buf[:, :, -1:]
    # channel-major: one GEMM for all images
    if taps is None or not _copy_rows(lhs_c, buf, a, work, batch, chan):
        chan_shape = lhs_c.shape[1 : lhs_c.ndim - n]  # (C,) or (batch groups, C)
        body = np.reshape(body, (*chan_shape, batch, *a.in_spatial), copy=False)
        np.copyto(np.moveaxis(body, len(chan_shape), 0), lhs_c, casting="unsafe")
        zero[...] = 0
    w2 = (
        w.reshape(groups, o_g, c_g, k_taps).transpose(0, 1, 3, 2).reshape(groups, o_g * k_taps, c_g)
    )
    out = _pool.empty((batch, n_out, math.prod(a.out_spatial)), work)
    with np.errstate(all="ignore"):
        y = _blas.matmul(w2, buf.reshape(groups, c_g, batch * cols))  # (G, O/G*K, N*cols)
        y = y.reshape(n_out * k_taps, batch, cols)
        if taps is not None:
            taps, padding_cells = taps[1]
            out_hw = [1] * (2 - n) + list(a.out_spatial)
            K.window_sum_rows(
                out.size * k_taps // _WINDOW_SUM_WORK_PER_UNIT, y, taps, out, row, *out_hw
            )
            # a tap whose zero-column product is NaN (an infinite or NaN weight) makes
            # its padding cells NaN, as adding it does in window_sum
            nan = np.isnan(y[:, 0, row - 1]).reshape(n_out, k_taps)
            if nan.any():
                out[:, (nan[:, :, None] & padding_cells).any(1)] = np.nan
            return out.reshape(batch, n_out, *a.out_spatial)
        # complex sums are sums of (real, imaginary) lanes: real kernels only
        real = np.dtype(work.char.lower()) if work.kind == "c" else work
        lanes = work.itemsize // real.itemsize
        table = _window_table(
            tuple(a.in_spatial),
            tuple(a.k_spatial),
            tuple(a.out_spatial),
            tuple(a.strides),
            tuple(a.padding),
            tuple(a.lhs_dilation),
            tuple(a.rhs_dilation),
            lanes,
        )
        K.window_sum(
            out.size * k_taps // _WINDOW_SUM_WORK_PER_UNIT, y.view(real), table, out.view(real)
        )
    return out.reshape(batch, n_out, *a.out_spatial)


def _row_taps(a, work):
    """For ``window_sum_rows``: (X's row length W + s, (the (K, 3) tap table, the taps'
    (K, P) padding cells)), or None where it does not apply. It needs one or two
    spatial dims of float32/float64, a non-empty input, stride 1 and no lhs dilation
    along the last dim, padding of at most 2 on either side of it (s = that padding,
    at least 1: the zero columns), an output no wider than W + s, and every kernel row
    reading a band of input rows."""
    n = len(a.in_spatial)
    if not _FAST_2D or n not in (1, 2) or work not in (np.float32, np.float64):
        return None
    if math.prod(a.in_spatial) == 0 or a.strides[-1] != 1 or a.lhs_dilation[-1] != 1:
        return None
    slots = max(1, *a.padding[-1])
    if slots > 2 or a.out_spatial[-1] > a.in_spatial[-1] + slots:
        return None
    fill = [1] * (2 - n)
    taps = _row_taps_table(
        tuple(fill + list(a.in_spatial)),
        tuple(fill + list(a.k_spatial)),
        tuple(fill + list(a.out_spatial)),
        tuple(fill + list(a.strides)),
        tuple([(0, 0)] * len(fill) + a.padding),
        tuple(fill + list(a.lhs_dilation)),
        tuple(fill + list(a.rhs_dilation)),
        slots,
    )
    return None if taps is None else (a.in_spatial[-1] + slots, taps)


def _copy_rows(lhs_c, buf, a, work, batch, chan):
    """window_sum_rows's X: ``buf`` (C, N, H, W + s) <- lhs (N, C, H, W), zero columns
    after every row, as ``im2col_2d`` with a 1 x 1 kernel (a word copy: 1.4-1.7x NumPy's
    strided copy with 16- and 32-word rows). False (nothing done) where lhs is no view
    of words of the work type (then NumPy copies)."""
    fill = [1] * (2 - len(a.in_spatial))
    in_hw = tuple(fill + list(a.in_spatial))
    try:
        src = np.reshape(lhs_c, (batch, chan, *in_hw), copy=False)
    except ValueError:
        return False
    if not _words_ok(src, work):
        return False
    word = np.uint64 if work.itemsize == 8 else np.uint32
    flat, step = _words(src, word)
    row = buf.shape[-1]
    geometry = _geometry_2d(
        in_hw, (1, 1), (in_hw[0], row), (1, 1), ((0, 0), (0, row - in_hw[1])), (1, 1), (1, 1)
    )
    dst = (buf.reshape(-1).view(word), in_hw[0] * row, batch * in_hw[0] * row, row)
    K.im2col_2d(buf.size // _IM2COL_WORK_PER_UNIT, flat, batch, chan, *step[:3], *geometry, *dst)
    return True


# -- the two-dimensional fast path (1-D runs as 2-D with one row) ----------------------

# Tests set this to False to run the general packings everywhere.
_FAST_2D = True


def _fast_2d(strategy, lhs_c, w, a, work, batch, chan, groups, n_out):
    """im2col and im2row for one or two spatial dims without a padded copy of the input
    and with contiguous runs along the last dim (``im2col_2d``), or None where they do
    not apply (then the general packings run):

    * im2col: columns (C*K, N*P), then W (O, C*K) @ columns per group;
    * im2row (the kernel gradient's shape: a kernel wider than the output, no groups):
      rows (B*P, C*K) written as the forward im2col with the roles swapped, or one
      (B*P, K) block per input feature for thin products (``_per_chan``).

    window_sum has its own 2-D kernel (``window_sum_rows``, see _window_sum_matmul).

    Otherwise one GEMM over all images (per group), never one per image: each BLAS call
    with several threads is a synchronisation point of its threads, which costs whole
    scheduler ticks when other processes compete for the cores (measured under load: 16
    per-image GEMMs of the mid layer took 0.9 s against 51 ms for one). The per-feature
    GEMMs of ``_per_chan`` run on one BLAS thread for that reason.
    """
    n = len(a.in_spatial)
    if not _FAST_2D or n not in (1, 2) or work == np.complex128 or strategy == "window_sum":
        return None
    if strategy == "im2row" and groups > 1:
        return None
    fill = [1] * (2 - n)
    in_hw = tuple(fill + list(a.in_spatial))
    k_hw = tuple(fill + list(a.k_spatial))
    out_hw = tuple(fill + list(a.out_spatial))
    strides, rdil = tuple(fill + list(a.strides)), tuple(fill + list(a.rhs_dilation))
    ldil, pads = tuple(fill + list(a.lhs_dilation)), tuple([(0, 0)] * (2 - n) + a.padding)
    src = np.reshape(lhs_c, (batch, chan, *in_hw))
    k_taps, out_pos = math.prod(k_hw), math.prod(out_hw)
    word = np.uint64 if work.itemsize == 8 else np.uint32
    if not _words_ok(src, work):
        src = np.ascontiguousarray(src, work)
    flat, step = _words(src, word)
    c_k = chan * k_taps // groups
    if strategy == "im2col":
        rows, band, runs = _geometry_2d(in_hw, k_hw, out_hw, strides, pads, ldil, rdil)
        cols = _pool.empty((groups, c_k, batch * out_pos), work)
        img, ch, s_n, s_c, d_n, d_r = batch, chan, step[0], step[1], out_pos, batch * out_pos
        ow = out_hw[1]
    else:  # im2row: image/channel roles swapped; taps run over the output, positions over k
        rows, band, runs = _geometry_2d(in_hw, out_hw, k_hw, rdil, pads, ldil, strides)
        per_chan = _per_chan(w, chan, batch * out_pos, _PER_CHAN_RESULT)
        if per_chan is not None:
            geometry = (rows, band, runs)
            out = _per_chan_matmul(per_chan, flat, step, geometry, batch, out_pos, k_hw[1], word)
            return out.reshape(n_out, batch, *a.out_spatial).swapaxes(0, 1)
        cols = _pool.empty((batch * out_pos, chan * k_taps), work)  # rows (B*P, C*K)
        d_n, d_r = k_taps, chan * k_taps
        img, ch, s_n, s_c = chan, batch, step[1], step[0]
        ow = k_hw[1]
    K.im2col_2d(
        cols.size // _IM2COL_WORK_PER_UNIT,
        flat,
        img,
        ch,
        s_n,
        s_c,
        step[2],
        rows,
        band,
        runs,
        cols.reshape(-1).view(word),
        d_n,
        d_r,
        ow,
    )
    with np.errstate(all="ignore"):
        if strategy == "im2row":
            out = _blas.matmul(w.reshape(n_out, chan * k_taps), cols.T)  # (O, B*P)
        else:  # (G, O/G, C*K/G) @ (G, C*K/G, N*P)
            prod = _pool.empty((groups, n_out // groups, batch * out_pos), work)
            out = _blas.matmul(w.reshape(groups, n_out // groups, c_k), cols, out=prod)
    # (a view in (O, N, P) memory order: a copy to NCHW measured slower on the
    # convolution rows, e.g. CIFAR's batch 64 1.55 -> 2.78 ms, than the elementwise ops
    # after it lose: they read a transposed operand in its own memory order)
    return out.reshape(n_out, batch, *a.out_spatial).swapaxes(0, 1)


def _per_chan_matmul(per_chan, flat, step, geometry, batch, out_pos, n_ow, word):
    """The thin kernel gradient: for each input feature c, its (B*P, K) block of im2row
    rows (``im2col_2d``: ``flat``/``step`` the input as (B, C, H, W) words, ``n_ow`` the
    rows' last dim) and the product per_chan[c] (O, K) @ rows.T, then the C products
    added in order: (O, B*P).

    The features go in pieces of about _PIECE_BYTES of rows, each piece's rows written
    into a scratch block of its thread and multiplied while they are still in the
    core's cache (all the rows at once, 7 MiB on CIFAR's batch 64, went out to memory,
    freshly faulted in on every call, and were read back); the pieces are shared out by
    ``_blas.run_pieces`` (the calling thread and the pool's, one BLAS thread each: thin
    products, see _blas). Every product lands in its own slot and the sum over features
    runs after them in feature order: the same bits for any thread count and sharing.
    """
    chan, n_out, k_taps = per_chan.shape
    work, b_p = per_chan.dtype, batch * out_pos
    block = b_p * k_taps  # one feature's rows
    count = -(-chan // max(1, _PIECE_BYTES // (block * work.itemsize)))
    per = -(-chan // count)  # pieces of one size: the threads end together
    products = _pool.empty((chan, n_out, b_p), work)

    def body(pieces):
        rows = _pool.empty((per, b_p, k_taps), work)
        words = rows.reshape(-1).view(word)
        for i in pieces:
            c0, c1 = i * per, min(i * per + per, chan)
            im2row = (flat[c0 * step[1] :], c1 - c0, batch, step[1], step[0], step[2])
            K.im2col_2d.serial(*im2row, *geometry, words, block, k_taps, n_ow)
            np.matmul(per_chan[c0:c1], rows[: c1 - c0].transpose(0, 2, 1), out=products[c0:c1])

    with np.errstate(all="ignore"):  # (the pool threads run in this context)
        _blas.run_pieces(body, count, 2 * chan * n_out * block >= _THREADED_FLOPS)
        return np.add.reduce(products, axis=0)


# ---------------------------------------------------------------------------------------
# XLA's ConvWithGeneralPadding and Conv
# ---------------------------------------------------------------------------------------


@declare("conv_with_general_padding", spec="xla", calls="convolution")
def conv_with_general_padding(
    lhs,
    rhs,
    window_strides,
    padding,
    feature_group_count=1,
    batch_group_count=1,
    precision_config=None,
    preferred_element_type=None,
    *,
    dimension_numbers=None,
):
    """XLA ConvWithGeneralPadding: ``convolution`` with strides and (low, high) padding
    only (no dilations); dims NCHW x OIHW -> NCHW unless ``dimension_numbers`` is given.

    >>> x = xo.tensor(np.ones((1, 1, 3, 3), np.float32))
    >>> w = xo.tensor(np.ones((1, 1, 3, 3), np.float32))
    >>> xo.conv_with_general_padding(x, w, [1, 1], [(1, 1), (1, 1)]).tolist()
    [[[[4.0, 6.0, 4.0], [6.0, 9.0, 6.0], [4.0, 6.0, 4.0]]]]
    """
    return _convolution(
        "conv_with_general_padding",
        lhs,
        rhs,
        window_strides,
        padding,
        None,
        None,
        None,
        dimension_numbers,
        feature_group_count,
        batch_group_count,
        precision_config,
        preferred_element_type,
    )


@declare("conv", spec="xla", calls="convolution")
def conv(
    lhs,
    rhs,
    window_strides,
    padding,
    feature_group_count=1,
    batch_group_count=1,
    precision_config=None,
    preferred_element_type=None,
    *,
    rhs_dilation=None,
    dimension_numbers=None,
):
    """XLA Conv: ``convolution`` with ``padding`` "SAME" or "VALID" (or explicit pairs).
    SAME pads so that the output has ceil(in / stride) positions: total =
    max((ceil(in / stride) - 1) * stride + dilated_k - in, 0), low = total // 2,
    high = the rest; VALID pads nothing.

    >>> x = xo.tensor(np.ones((2, 3, 5, 5), np.float32))
    >>> w = xo.tensor(np.ones((4, 3, 3, 3), np.float32))
    >>> xo.conv(x, w, [1, 1], "SAME").shape == x.shape[:1] + w.shape[:1] + x.shape[2:]
    True
    """
    op = "conv"
    if isinstance(padding, str):
        x, y = operands(op, lhs, rhs, names=["lhs", "rhs"])
        kind = padding.upper()
        check(
            kind in ("SAME", "VALID"),
            op,
            "I4",
            lambda: f"padding must be 'SAME', 'VALID' or (low, high) pairs, got {padding!r}",
        )
        check(
            x.ndim == y.ndim and x.ndim >= 2,
            op,
            "C1",
            lambda: (
                f"lhs and rhs must have the same rank >= 2, got "
                f"{typestr(x._dtype, x.shape)} and {typestr(y._dtype, y.shape)}"
            ),
        )
        dn = _dimension_numbers(op, dimension_numbers, x.ndim)
        n = x.ndim - 2
        strides = _spatial_ints(op, "I3", "C2", "C3", "window_strides", window_strides, n)
        rdil = _spatial_ints(op, "I6", "C7", "C8", "rhs_dilation", rhs_dilation, n)
        check(
            len(dn.input_spatial_dimensions) == n
            and len(dn.kernel_spatial_dimensions) == n
            and _dims_ok(dn.input_spatial_dimensions, x.ndim)
            and _dims_ok(dn.kernel_spatial_dimensions, y.ndim),
            op,
            "C12",
            lambda: f"dimension_numbers {dn} do not fit rank {x.ndim}",
        )
        pads = []
        for st, rd, ld, kd in zip(
            strides, rdil, dn.input_spatial_dimensions, dn.kernel_spatial_dimensions
        ):
            if kind == "VALID":
                pads.append((0, 0))
                continue
            size, k = x.shape[ld], y.shape[kd]
            dk = 0 if k == 0 else (k - 1) * rd + 1
            total = max((-(-size // st) - 1) * st + dk - size, 0)
            pads.append((total // 2, total - total // 2))
        padding = pads
        lhs, rhs = x, y
    return _convolution(
        op,
        lhs,
        rhs,
        window_strides,
        padding,
        None,
        rhs_dilation,
        None,
        dimension_numbers,
        feature_group_count,
        batch_group_count,
        precision_config,
        preferred_element_type,
    )


# ---------------------------------------------------------------------------------------
# Gradients: both cotangents are convolutions (convolution is bilinear)
# ---------------------------------------------------------------------------------------


def _dilate_shape(sizes, dilation):
    return [0 if s == 0 else (s - 1) * d + 1 for s, d in zip(sizes, dilation)]


def _reshape_axis_out_of(src, size1, t):
    """Split dim ``src`` of size S into (size1, S / size1), in place."""
    from .movement import reshape

    shape = list(t.shape)
    shape[src : src + 1] = [size1, shape[src] // size1]
    return reshape(t, shape)


def _reshape_axis_into(src, dst, t):
    """Merge dim ``src`` into dim ``dst`` (numbered without ``src``) as its major part."""
    from .movement import reshape, transpose

    perm = [i for i in range(t.ndim) if i != src]
    perm.insert(dst, src)
    shape = [s for i, s in enumerate(t.shape) if i != src]
    shape[dst] *= t.shape[src]
    return reshape(transpose(t, perm), shape)


def _zeros(shape, like):
    """Zeros of ``shape`` in ``like``'s element type, on ``like``'s device."""
    return _H.zeros_on(shape, like._dtype, like)


def convolution_grad_lhs(cotangent, rhs, lhs_shape, *attributes, **named_attributes):
    """The cotangent of ``lhs`` for ``convolution(lhs, rhs, <attributes>)`` (given as
    ``convolution`` takes them, positional or by name): a convolution of ``cotangent``
    with the spatially reversed kernel, kernel input and output features swapped,
    window_strides and lhs_dilation swapped, and padding
    ``(dk - lo - 1, dilated_in + dk - 1 - dilated_out - (dk - lo - 1))`` with dk the
    dilated kernel size. Feature groups move into the kernel's input-feature dim; batch
    groups become feature groups of the transposed convolution (as jax.lax does).
    ``cotangent`` and ``rhs`` must have one element type.
    """
    op = "convolution"
    g, w = operands(op, cotangent, rhs, names=["cotangent", "rhs"])
    attributes = _attribute_values(attributes, named_attributes)
    a = _attributes(op, g._dtype, tuple(lhs_shape), w._dtype, w.shape, *attributes)
    _check_cotangent(g, a, "lhs")
    return _grad_lhs(g, w, a)


def _grad_lhs(g, w, a):
    """convolution_grad_lhs for the validated attributes ``a`` of the convolution."""
    if g.size == 0 or math.prod(a.lhs_shape) == 0:
        return _zeros(a.lhs_shape, g)
    dn = a.dn
    groups = a.fgc
    if a.fgc > 1 or a.bgc > 1:
        groups = max(a.fgc, a.bgc)
        w = _reshape_axis_out_of(dn.kernel_output_feature_dimension, groups, w)
        w = _reshape_axis_into(
            dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension, w
        )
    out = _grad_conv(a, "lhs", g, w, _grad_lhs_attributes, groups)
    if a.bgc > 1:
        out = _reshape_axis_out_of(dn.input_feature_dimension, a.bgc, out)
        out = _reshape_axis_into(dn.input_feature_dimension, dn.input_batch_dimension, out)
    return out


def _grad_lhs_attributes(a, groups):
    """The attributes (as ``convolution`` takes them by name) of the convolution that
    computes lhs's cotangent of convolution ``a``: see convolution_grad_lhs."""
    dn = a.dn
    dk = _dilate_shape(a.k_spatial, a.rhs_dilation)
    din = _dilate_shape(a.in_spatial, a.lhs_dilation)
    dout = _dilate_shape(a.out_spatial, a.strides)
    before = [k - lo - 1 for k, (lo, _) in zip(dk, a.padding)]
    trans = ConvDimensionNumbers(
        dn.output_batch_dimension,
        dn.output_feature_dimension,
        dn.output_spatial_dimensions,
        dn.kernel_output_feature_dimension,
        dn.kernel_input_feature_dimension,
        dn.kernel_spatial_dimensions,
        dn.input_batch_dimension,
        dn.input_feature_dimension,
        dn.input_spatial_dimensions,
    )
    return dict(
        window_strides=a.lhs_dilation,
        padding=[(b, i + k - 1 - o - b) for b, i, k, o in zip(before, din, dk, dout)],
        lhs_dilation=a.strides,
        rhs_dilation=a.rhs_dilation,
        window_reversal=[not r for r in a.reversal],
        dimension_numbers=trans,
        feature_group_count=groups,
        precision_config=a.precision_config,
    )


def _grad_rhs_attributes(a):
    """The attributes of the convolution that computes rhs's cotangent of convolution
    ``a`` (before the window reversal's reverse): see convolution_grad_rhs."""
    dn = a.dn
    dk = _dilate_shape(a.k_spatial, a.rhs_dilation)
    din = _dilate_shape(a.in_spatial, a.lhs_dilation)
    dout = _dilate_shape(a.out_spatial, a.strides)
    trans = ConvDimensionNumbers(
        dn.input_feature_dimension,
        dn.input_batch_dimension,
        dn.input_spatial_dimensions,
        dn.output_batch_dimension,
        dn.output_feature_dimension,
        dn.output_spatial_dimensions,
        dn.kernel_input_feature_dimension,
        dn.kernel_output_feature_dimension,
        dn.kernel_spatial_dimensions,
    )
    return dict(
        window_strides=a.rhs_dilation,
        padding=[(lo, o - i + k - lo - 1) for (lo, _), i, k, o in zip(a.padding, din, dk, dout)],
        lhs_dilation=a.lhs_dilation,
        rhs_dilation=a.strides,
        dimension_numbers=trans,
        feature_group_count=a.bgc,
        batch_group_count=a.fgc,
        precision_config=a.precision_config,
    )


def _grad_conv(a, which, lhs, rhs, attributes, *args):
    """``convolution(lhs, rhs, **attributes(a, *args))``: one of convolution ``a``'s
    cotangents. The attributes are derived once per validated convolution (kept in
    ``a.derived``). Outside ``create_graph``, for host operands, the op's own core runs
    on attributes validated once (the call records nothing either way, and the
    validation depends on types and shapes only): a training step's gradient
    convolutions skip re-deriving and re-checking what the forward call fixed."""
    kw = a.derived.get((which, *args))
    if kw is None:
        kw = a.derived[(which, *args)] = attributes(a, *args)
    if (
        is_grad_enabled()
        or _limits_config.check_finite
        or type(lhs._value) is not np.ndarray
        or type(rhs._value) is not np.ndarray
        or lhs._dtype.quantized
        or rhs._dtype.quantized
    ):
        return convolution(lhs, rhs, **kw)
    key = (which, *args, lhs._dtype, lhs.shape, rhs._dtype, rhs.shape)
    b = a.derived.get(key)
    if b is None:
        b = a.derived[key] = _attributes(
            "convolution", lhs._dtype, lhs.shape, rhs._dtype, rhs.shape, *_attribute_values((), kw)
        )
    return result(_convolution_impl(lhs, rhs, b), b.out_dt)


def convolution_grad_rhs(cotangent, lhs, rhs_shape, *attributes, **named_attributes):
    """The cotangent of ``rhs`` for ``convolution(lhs, rhs, <attributes>)`` (given as
    ``convolution`` takes them): a convolution of ``lhs`` (batch and feature roles
    swapped) with ``cotangent`` as the kernel (its batch dim contracted as input feature),
    window_strides and rhs_dilation swapped, padding (lo, dilated_out - dilated_in + dk -
    lo - 1); feature groups become batch groups and vice versa. Window reversal reverses
    the result. ``cotangent`` and ``lhs`` must have one element type.
    """
    op = "convolution"
    g, x = operands(op, cotangent, lhs, names=["cotangent", "lhs"])
    attributes = _attribute_values(attributes, named_attributes)
    a = _attributes(op, x._dtype, x.shape, g._dtype, tuple(rhs_shape), *attributes)
    _check_cotangent(g, a, "rhs")
    return _grad_rhs(g, x, a)


def _check_cotangent(g, a, which):
    """The cotangent has the convolution's result shape (its gradient convolution's
    attributes are derived from that shape)."""
    check(
        tuple(g.shape) == tuple(a.result_shape),
        "convolution",
        "grad",
        lambda: (
            f"convolution_grad_{which}: the cotangent must have the convolution's result "
            f"shape {list(a.result_shape)}, got {g.type}"
        ),
    )


def _grad_rhs(g, x, a):
    """convolution_grad_rhs for the validated attributes ``a`` of the convolution."""
    if g.size == 0 or x.size == 0:
        return _zeros(a.rhs_shape, g)
    dn = a.dn
    out = _grad_conv(a, "rhs", x, g, _grad_rhs_attributes)
    flips = [dn.kernel_spatial_dimensions[d] for d in range(len(a.reversal)) if a.reversal[d]]
    if flips:
        from .movement import reverse

        out = reverse(out, flips)
    return out
