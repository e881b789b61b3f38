"""Neural-network functions built from xops ops (``xo.nn.functional``, ``F`` below).

Every function here but two is a *composite*: a few StableHLO ops (``convolution``,
``reduce_window``, ``batch_norm_training``, ``dot_general``, ``gather``, elementwise
ops), so the tape differentiates it through those ops' rules with nothing to add
(docs/autodiff.md). The exceptions: relu is one recorded op (``nn.functional.relu``)
with the composite's values and gradient bit for bit, and so is a layer's bias on host
tensors (``nn.functional.bias_add``: the composite's add and broadcast_in_dim under one
tape node, their rules in one); cross-entropy of (N, C) f32 / f64 logits on the host or
a CUDA device is one too (``nn.functional.softmax_cross_entropy``) with its own rule,
the same formulas computed in float64 and rounded once (a training step's loss without
a dozen tape nodes); other shapes and types take the composite.

Layout is PyTorch's: NCHW activations, OIHW kernels, (out, in) Linear weights, class
scores on dim 1.

=============================  ==============================================================
function                       ops
=============================  ==============================================================
relu                           select(compare(x, 0, LE), 0, x)  (gradient 0 at x = 0, as PyTorch)
                               (real host tensors, f32 / f64 on CUDA: one fused op, see above)
gelu                           0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation
softmax, log_softmax           reduce max (off the tape) + exponential + reduce add + log
linear                         dot_general + broadcast_in_dim + add (the bias: one
                               recorded op for real host tensors, nn.functional.bias_add)
conv1d, conv2d                 convolution (NCH/NCHW, OIH/OIHW) + bias (as linear's)
max_pool2d                     reduce_window(maximum, init -inf): gradient select_and_scatter
avg_pool2d                     reduce_window(add) / window size (or / in-bounds count)
batch_norm                     batch_norm_training (train) / batch_norm_inference (eval)
dropout                        rng_uniform (or a Generator) + compare + select
embedding                      gather (gradient: scatter-add)
cross_entropy                  log_softmax + one-hot (compare with iota) + reduce add
                               ((N, C) f32 / f64, host or CUDA: one fused op, see above)
mse_loss                       subtract, multiply, reduce add
leaky_relu, elu, silu,         select / compare / exponential_minus_one / logistic /
softplus                       log_plus_one (PyTorch's formulas and gradients at 0)
layer_norm, group_norm         mean and (biased) variance by reduce add, rsqrt, the affine
adaptive_avg_pool2d            two dot_generals with averaging matrices (PyTorch's windows)
binary_cross_entropy(_with_    log / log_plus_one / abs / maximum (PyTorch's stable form,
logits), l1, smooth_l1, huber  its -100 clamp of log for binary_cross_entropy)
=============================  ==============================================================
"""

import functools
import math
import weakref

import numpy as np

from ..autodiff import helpers as _H
from ..autodiff.tape import is_grad_enabled, no_grad, primitive
from .. import device as _device
from ..device import default_device
from ..ops.conversion import convert
from ..ops.convolution import convolution
from ..ops.convolution import _attributes as _conv_attrs
from ..ops.convolution import _convolution_impl as _conv_impl
from ..ops.convolution import _convolution_vjp as _conv_vjp
from ..ops.elementwise import (
    abs as _abs,
    add,
    compare,
    divide,
    erf,
    exponential,
    exponential_minus_one,
    log,
    log_plus_one,
    logistic,
    multiply,
    negate,
    rsqrt,
    select,
    subtract,
    tanh,
)
from ..ops.elementwise import maximum as _maximum
from ..kernels import activations as _K_act
from ..kernels import pool as _pool
from ..ops.elementwise.arithmetic import (
    _SELECT_KERNEL_MIN,
    _SELECT_WORDS,
    _memory_order,
    _select_flat,
    _select_kernel,
)
from ..ops.indexing import gather
from ..ops.linalg import dot_general
from ..ops.movement import broadcast_in_dim, iota, reshape
from ..ops.normalization import batch_norm_inference, batch_norm_training
from ..ops.reduction import reduce
from ..ops.windows import reduce_window
from ..ops.rng import rng_uniform
from ..tensor import Tensor, _wrap, tensor
from .parameter import assign_, host_floats

__all__ = [
    "relu",
    "gelu",
    "sigmoid",
    "softmax",
    "log_softmax",
    "linear",
    "conv1d",
    "conv2d",
    "max_pool2d",
    "avg_pool2d",
    "batch_norm",
    "dropout",
    "embedding",
    "flatten",
    "one_hot",
    "cross_entropy",
    "softmax_cross_entropy",
    "nll_loss",
    "mse_loss",
    "mse",
    "sum",
    "mean",
    "leaky_relu",
    "silu",
    "elu",
    "softplus",
    "layer_norm",
    "group_norm",
    "adaptive_avg_pool2d",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
]

_builtin_sum = sum


# ---------------------------------------------------------------------------------------
# Small helpers: reductions that keep their dims, axis normalisation
# ---------------------------------------------------------------------------------------


def _axes(axis, ndim):
    """``axis`` (int, sequence or None = all) as a sorted list of non-negative dims."""
    if axis is None:
        return list(range(ndim))
    items = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    out = sorted({int(a) + ndim if a < 0 else int(a) for a in items})
    if any(not 0 <= a < ndim for a in out):
        raise ValueError(f"axis {axis} out of range for a tensor of rank {ndim}")
    return out


def _keep(t, axes, shape):
    """Reduced ``t`` broadcast back to ``shape`` (the reduced dims were ``axes``)."""
    kept = [d for d in range(len(shape)) if d not in axes]
    return broadcast_in_dim(t, kept, shape)


def sum(x, axis=None, keepdims=False):
    """Sum over ``axis`` (int, sequence, None = all): ``xo.reduce`` with ``xo.add``."""
    axes = _axes(axis, x.ndim)
    out = reduce(x, 0, axes, add)
    return _keep(out, axes, x.shape) if keepdims else out


def mean(x, axis=None, keepdims=False):
    """Mean over ``axis``: the sum divided by the number of reduced elements."""
    axes = _axes(axis, x.ndim)
    n = math.prod(x.shape[a] for a in axes)
    return divide(sum(x, axes, keepdims), float(n) if x.dtype.kind == "float" else n)


def _max_const(x, axes):
    """max over ``axes`` computed off the tape: the shift of a log-sum-exp cancels in
    its value and its gradient, so it needs no gradient of its own."""
    with no_grad():
        return reduce(x.detach(), -math.inf, axes, _maximum)


# ---------------------------------------------------------------------------------------
# Activations
# ---------------------------------------------------------------------------------------


def relu(x):
    """max(x, 0) as ``select(x <= 0, 0, x)``: NaN propagates (as ``torch.relu``), -0.0
    gives +0.0, and the gradient is 1 where x > 0 and 0 elsewhere, x = 0 included
    (PyTorch's convention; ``xo.maximum(x, 0)`` would split the tie at 0).

    Real (not quantized) tensors on the host, and f32 / f64 ones on a device with a
    kernel, take one recorded op (``nn.functional.relu``) with the same values and
    gradient, bit for bit; anything else takes the composite."""
    if isinstance(x, Tensor) and _relu_fusable(x):
        return _relu(x)
    return _relu_ops(x)


def _relu_ops(x):
    return select(compare(x, 0, "LE"), 0, x)


def _relu_fusable(x):
    dt = x._dtype
    if type(x._value) is np.ndarray:
        return dt.kind in ("float", "si", "ui") and not dt.quantized
    return dt.name in ("f32", "f64") and "cuda" in _relu.kernels


def _zero_where_le0(x, v):
    """``0 if x <= 0 else v`` elementwise on host arrays of one shape: the composite's
    compare + select without their dispatch (select's own raw-bits kernel from its size
    threshold on, in the arrays' memory order, np.where below it: the same bits, NaN
    payloads and signed zeros kept)."""
    if x.dtype in _RELU_TYPES and v.dtype == x.dtype and v.size >= _SELECT_KERNEL_MIN:
        out = _relu_fused(x, v)
        if out is not None:
            return out
    with np.errstate(invalid="ignore"):  # (NaN compares False, silently, as compare does)
        p = x <= 0
    # (any memory layout; v broadcast from one element, as a sum's cotangent: np.where,
    # as select does, since its kernel wants one branch of full size)
    if v.size >= _SELECT_KERNEL_MIN and v.dtype.itemsize <= 8 and any(v.strides):
        return _select_kernel(p, np.zeros((), v.dtype), v)
    return np.where(p, v.dtype.type(0), v)


_RELU_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _relu_fused(x, v):
    """``_zero_where_le0`` in one pass (``xops.kernels.activations``) for f32/f64 arrays
    of one shape that share a memory layout (any, e.g. a convolution's transposed
    result): read and written in memory order, the result in that layout. None when
    the layouts differ (the caller's two-pass path copies then)."""
    word = _SELECT_WORDS[x.dtype.itemsize]
    if x.flags.c_contiguous and v.flags.c_contiguous:  # (the common layout: no permuting)
        out = _pool.empty(x.shape, x.dtype)
        xs, vs = _select_flat(x, None, x.dtype), _select_flat(v, None, word)  # (views)
        _K_act.zero_where_le0_bits(out.size, xs, vs, out.reshape(-1).view(word))
        return out
    perm = _memory_order([x, v])
    if perm is None:
        return None
    out = _pool.empty([x.shape[d] for d in perm], x.dtype)  # (recycled: no page faults)
    xs, vs = _select_flat(x, perm, x.dtype), _select_flat(v, perm, word)  # (views)
    _K_act.zero_where_le0_bits(out.size, xs, vs, out.reshape(-1).view(word))
    return out.transpose(np.argsort(perm))


@primitive("relu")
def _relu(x):
    """relu as one op: ``0 if x <= 0 else x`` (the composite's compare and select in one
    step; a device's kernel elsewhere)."""
    return _wrap(_zero_where_le0(x._value, x._value), x._dtype)


@_relu.defvjp
def _relu_vjp(g, out, x):
    """``0 if x <= 0 else g`` (x = 0 gives 0, NaN passes g): the rule of the composite's
    select; under ``create_graph`` that select itself, so that it is recorded."""
    xv, gv = x._value, g._value
    if not is_grad_enabled():
        if type(xv) is np.ndarray and type(gv) is np.ndarray and xv.shape == gv.shape:
            return (_wrap(_zero_where_le0(xv, gv), g._dtype),)
        fused = _device._updates.get((x.device.kind, "relu_grad"))
        if fused is not None and g._dtype == x._dtype and g.shape == x.shape:
            d = fused(xv, gv)
            if d is not None:
                return (_wrap(d, g._dtype),)
    return (select(compare(x.detach(), 0, "LE"), 0, g),)


_SQRT1_2 = 1 / math.sqrt(2)
_SQRT_2_PI = math.sqrt(2 / math.pi)


def gelu(x, approximate="none"):
    """GELU: ``x Phi(x)``. ``approximate="none"`` is the exact form
    0.5 x (1 + erf(x / sqrt 2)); ``"tanh"`` is 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    (both as ``torch.nn.functional.gelu``)."""
    if approximate == "none":
        return multiply(multiply(x, 0.5), add(erf(multiply(x, _SQRT1_2)), 1.0))
    if approximate == "tanh":
        cube = multiply(multiply(x, x), x)
        inner = multiply(add(x, multiply(cube, 0.044715)), _SQRT_2_PI)
        return multiply(multiply(x, 0.5), add(tanh(inner), 1.0))
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def sigmoid(x):
    """1 / (1 + exp(-x)) element-wise: the spec's ``logistic`` (``xo.logistic``)."""
    from ..ops.elementwise import logistic

    return logistic(x)


def softmax(x, axis=-1):
    """exp(x - max) / sum(exp(x - max)) along ``axis`` (stable for any finite x)."""
    axes = _axes(axis, x.ndim)
    e = exponential(subtract(x, _keep(_max_const(x, axes), axes, x.shape)))
    return divide(e, _keep(sum(e, axes), axes, x.shape))


def log_softmax(x, axis=-1):
    """x - max - log(sum(exp(x - max))) along ``axis``: log-sum-exp via reduce max/add,
    so large logits never overflow and tiny probabilities keep their logs."""
    axes = _axes(axis, x.ndim)
    z = subtract(x, _keep(_max_const(x, axes), axes, x.shape))
    return subtract(z, _keep(log(sum(exponential(z), axes)), axes, x.shape))


# ---------------------------------------------------------------------------------------
# Linear and convolution layers
# ---------------------------------------------------------------------------------------


def _add_channel_bias(y, bias, dim):
    """``add(y, broadcast_in_dim(bias, [dim], y.shape))``: a layer's bias. One recorded
    op (``_bias_add``) for real host tensors, else the composite."""
    if (
        type(y._value) is np.ndarray
        and type(bias._value) is np.ndarray
        and bias.ndim == 1
        and not y._dtype.quantized
        and not bias._dtype.quantized
    ):
        return _bias_add(y, bias, dim)
    return add(y, broadcast_in_dim(bias, [dim], y.shape))


@primitive("bias_add")
def _bias_add(y, bias, dim):
    """The composite's add(y, broadcast_in_dim(bias, [dim], y.shape)) as one op: the
    same ops compute it (its checks and errors too), but the tape records one node and
    runs one rule where the composite records two (a digits training step has three
    biases: six nodes and rules, about a tenth of them)."""
    return add(y, broadcast_in_dim(bias, [dim], y.shape))


@_bias_add.defvjp
def _bias_add_vjp(g, out, y, bias, dim):
    """g for y (add's rule); for the bias, broadcast_in_dim's: g summed over every dim
    not of size 1 but ``dim`` (that one too when a bias of one element was expanded
    along it), with the same helper, so the same bits."""
    expanded = bias.shape[0] != g.shape[dim]
    gb = _H.sum(g, [d for d in range(g.ndim) if (d != dim or expanded) and g.shape[d] != 1])
    if gb.shape != bias.shape:
        gb = reshape(gb, bias.shape)
    return g, gb, None


def linear(x, weight, bias=None):
    """``x @ weight.T + bias`` over x's last dim: weight is (out_features, in_features)."""
    y = dot_general(
        x, weight, lhs_contracting_dimensions=[x.ndim - 1], rhs_contracting_dimensions=[1]
    )
    return y if bias is None else _add_channel_bias(y, bias, y.ndim - 1)


def _tuple(v, n, name):
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    v = tuple(int(a) for a in v)
    if len(v) != n:
        raise ValueError(f"{name} must be an int or {n} ints, got {v}")
    return v


_CONV_LAYOUT = {1: "NCH,OIH,NCH", 2: "NCHW,OIHW,NCHW"}


def _conv_padding(padding, kernel, dilation, n):
    """PyTorch's padding argument as the spec's (low, high) pairs: an int, ints per dim,
    (low, high) pairs, "valid" (0) or "same" (output size = input size at stride 1;
    an odd total puts the extra element at the end, as PyTorch)."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * n
        if padding == "same":
            total = [d * (k - 1) for k, d in zip(kernel, dilation)]
            return [(t // 2, t - t // 2) for t in total]
        raise ValueError(f"padding must be an int, a tuple, 'valid' or 'same', got {padding!r}")
    if isinstance(padding, (int, np.integer)):
        return [(int(padding), int(padding))] * n
    items = list(padding)
    if len(items) == n and all(isinstance(p, (int, np.integer)) for p in items):
        return [(int(p), int(p)) for p in items]
    if len(items) == n and all(len(p) == 2 for p in items):
        return [(int(lo), int(hi)) for lo, hi in items]
    raise ValueError(f"padding {padding!r} does not fit {n} spatial dims")


def _conv(x, weight, bias, stride, padding, dilation, groups, n):
    if x.ndim != n + 2 or weight.ndim != n + 2:
        raise ValueError(
            f"conv{n}d: input and weight must have rank {n + 2}, got {x.type} and {weight.type}"
        )
    stride = _tuple(stride, n, "stride")
    dilation = _tuple(dilation, n, "dilation")
    if isinstance(padding, str) and padding == "same" and any(s != 1 for s in stride):
        raise ValueError(f"conv{n}d: padding='same' needs stride 1, got {stride}")
    pads = _conv_padding(padding, weight.shape[2:], dilation, n)
    if bias is not None and _host_floats32(x, weight, bias) and bias.ndim == 1:
        return _conv_bias(
            x, weight, bias, list(stride), pads, list(dilation), _CONV_LAYOUT[n], int(groups)
        )
    y = _layer_convolution(
        x, weight, list(stride), pads, list(dilation), _CONV_LAYOUT[n], int(groups)
    )
    return y if bias is None else _add_channel_bias(y, bias, 1)


def _layer_convolution(x, weight, window_strides, padding, rhs_dilation, layout, groups):
    """A layer's convolution (no bias), in ``xo.convolution``'s terms."""
    return convolution(
        x,
        weight,
        window_strides=window_strides,
        padding=padding,
        rhs_dilation=rhs_dilation,
        dimension_numbers=layout,
        feature_group_count=groups,
    )


def _host_floats32(*ts):
    """Whether every one of ``ts`` is a float32 Tensor on the host."""
    return all(
        type(t) is Tensor and type(t._value) is np.ndarray and t._dtype.name == "f32" for t in ts
    )


def _conv_attributes(window_strides, padding, rhs_dilation, dimension_numbers, groups):
    """``_convolution``'s eleven attributes (positional, as ``convolution`` passes them)
    for a layer's convolution."""
    return (window_strides, padding, None, rhs_dilation, None, dimension_numbers, groups, 1,
            None, None)  # fmt: skip


@primitive("conv_bias")
def _conv_bias(x, weight, bias, window_strides, padding, rhs_dilation, dimension_numbers, groups):
    """A layer's convolution and its bias over the feature dim (1) as one op: where the
    convolution runs the blocked forward kernel (float32, 3 x 3), the bias is added in
    the kernel's last step, after each output's sums (the composite's bits: the
    convolution, then one add per element, without a second pass over the result);
    elsewhere the composite's ops, with their checks and errors. The tape records one
    node and runs one rule where the composite records two."""
    attrs = _conv_attributes(window_strides, padding, rhs_dilation, dimension_numbers, groups)
    a = _conv_attrs("convolution", x._dtype, x.shape, weight._dtype, weight.shape, *attrs)
    if bias.shape == (a.result_shape[1],) and bias._dtype is a.out_dt:
        out = _conv_impl(x, weight, a, bias._value)
        if out is not None:
            return _wrap(out, a.out_dt)
    y = _layer_convolution(
        x, weight, window_strides, padding, rhs_dilation, dimension_numbers, groups
    )
    return add(y, broadcast_in_dim(bias, [1], y.shape))


@_conv_bias.defvjp
def _conv_bias_vjp(g, out, x, weight, bias, window_strides, padding, rhs_dilation, dn, groups):
    """The convolution's rule for x and weight, the bias add's for the bias."""
    attrs = _conv_attributes(window_strides, padding, rhs_dilation, dn, groups)
    _, gx, gw = _conv_vjp(g, out, "convolution", x, weight, *attrs)
    gb = _bias_add_vjp(g, out, None, bias, 1)[1] if bias.requires_grad else None
    return gx, gw, gb, None, None, None, None, None


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation, as PyTorch): x (N, C_in, L), weight
    (C_out, C_in / groups, K), on ``xo.convolution`` with "NCH,OIH,NCH"."""
    return _conv(x, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation, as PyTorch): x (N, C_in, H, W), weight
    (C_out, C_in / groups, kH, kW), on ``xo.convolution`` with "NCHW,OIHW,NCHW".
    ``padding``: int, (ph, pw), ((lo, hi), (lo, hi)), "valid" or "same"."""
    return _conv(x, weight, bias, stride, padding, dilation, groups, 2)


# ---------------------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------------------


def _pool_args(x, kernel_size, stride, padding, dilation, name):
    if x.ndim not in (3, 4):
        raise ValueError(f"{name}: input must be (N, C, H, W) or (C, H, W), got {x.type}")
    k = _tuple(kernel_size, 2, "kernel_size")
    s = k if stride is None else _tuple(stride, 2, "stride")
    p = _tuple(padding, 2, "padding")
    d = _tuple(dilation, 2, "dilation")
    if any(2 * pi > ki for pi, ki in zip(p, k)):
        raise ValueError(f"{name}: padding {p} must be at most half the kernel size {k}")
    lead = x.ndim - 2
    return (
        [1] * lead + list(k),
        [1] * lead + list(s),
        [(0, 0)] * lead + [(pi, pi) for pi in p],
        [1] * lead + list(d),
    )


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1):
    """Max over each window: ``reduce_window`` with ``xo.maximum`` and init -inf (so
    padding never wins). Its gradient is ``select_and_scatter`` (each window's
    cotangent goes to its first maximum). ``stride`` defaults to ``kernel_size``."""
    wd, ws, pad, wdl = _pool_args(x, kernel_size, stride, padding, dilation, "max_pool2d")
    return reduce_window(x, -math.inf, wd, ws, None, wdl, pad, body=_maximum)


def avg_pool2d(x, kernel_size, stride=None, padding=0, count_include_pad=True):
    """Mean over each window: ``reduce_window`` with ``xo.add`` divided by the window
    size, or (``count_include_pad=False``) by the number of in-bounds elements."""
    wd, ws, pad, _ = _pool_args(x, kernel_size, stride, padding, 1, "avg_pool2d")
    total = reduce_window(x, 0, wd, ws, None, None, pad, body=add)
    if count_include_pad or all(p == (0, 0) for p in pad):
        return divide(total, float(math.prod(wd)))
    with no_grad():
        ones = tensor(np.ones(x.shape[-2:], x.dtype.compute), x.dtype)
        count = reduce_window(ones, 0, wd[-2:], ws[-2:], None, None, pad[-2:], body=add)
    return divide(total, broadcast_in_dim(count, [x.ndim - 2, x.ndim - 1], total.shape))


# ---------------------------------------------------------------------------------------
# Normalisation and dropout
# ---------------------------------------------------------------------------------------


def _feature_vector(v, n, dt, fill, device):
    if v is None:
        return tensor(np.full(n, fill, dt.compute), dt, device=device)
    return v


def batch_norm(
    x,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-5,
):
    """Batch normalization over every dim but dim 1 (the channels).

    ``training=True``: ``xo.batch_norm_training`` (batch mean and *biased* variance
    normalise); when running statistics are given they are updated in place (through
    :func:`xops.nn.assign_`, off the tape) as PyTorch does::

        running_mean = (1 - momentum) * running_mean + momentum * batch_mean
        running_var  = (1 - momentum) * running_var  + momentum * batch_var * n / (n - 1)

    with n the number of elements per channel: the running variance is the *unbiased*
    estimate (PyTorch's convention), while the batch is normalised with the biased one.
    ``training=False``: ``xo.batch_norm_inference`` with the running statistics.
    ``weight`` / ``bias`` (gamma / beta) default to 1 / 0.
    """
    return _batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)


def _batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps, count=None):
    """:func:`batch_norm`; ``count`` (BatchNorm's ``num_batches_tracked``, training with
    running statistics) is incremented here: by the fused running-statistics kernel when
    it runs (one launch on a device instead of an op more), else by an add."""
    untracked = running_mean is None and running_var is None
    if count is not None and (untracked or not training):
        assign_(count, count + 1)  # (no running statistics to update with it)
        count = None
    if x.ndim < 2:
        raise ValueError(f"batch_norm: input must be (N, C, ...), got {x.type}")
    c = x.shape[1]
    scale = _feature_vector(weight, c, x.dtype, 1.0, x.device)
    offset = _feature_vector(bias, c, x.dtype, 0.0, x.device)
    if not training:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: evaluation mode needs running_mean and running_var")
        return batch_norm_inference(x, scale, offset, running_mean, running_var, eps, 1)
    try:
        out, batch_mean, batch_var = batch_norm_training(x, scale, offset, eps, 1)
        n = x.size // c if c else 0
        if n <= 1 and not untracked:
            raise ValueError(
                f"batch_norm: training needs more than one value per channel, got input {x.type}"
            )
    except Exception:
        if count is not None:  # (counted before the failure, as PyTorch's module counts)
            assign_(count, count + 1)
        raise
    if not untracked:
        with no_grad():
            m = float(momentum)
            s = n / (n - 1)
            if _running_fused(running_mean, batch_mean, running_var, batch_var, m, s, count):
                return out
            if count is not None:
                assign_(count, count + 1)
            if running_mean is not None:
                assign_(running_mean, _running_update(running_mean, batch_mean, m, None))
            if running_var is not None:
                assign_(running_var, _running_update(running_var, batch_var, m, n / (n - 1)))
    return out


def _running_fused(running_mean, batch_mean, running_var, batch_var, m, scale, count=None):
    """Both running statistics updated by one fused device kernel (``device._updates``
    "batch_norm_running": :func:`_running_update`'s formulas and bits, in one launch
    instead of ~8 ops) when the given ones and the batch's are f32 / f64 of one type,
    shape and device off the host; False (nothing done) otherwise."""
    pairs = [
        (o, b) for o, b in ((running_mean, batch_mean), (running_var, batch_var)) if o is not None
    ]
    dt, dev = pairs[0][0]._dtype, pairs[0][0].device
    if dev.kind == "cpu" or dt.name not in ("f32", "f64"):
        return False
    for o, b in pairs:
        if not (o._dtype == b._dtype == dt and o.shape == b.shape and o.device == b.device == dev):
            return False
    update = _device._updates.get((dev.kind, "batch_norm_running"))
    if update is None:
        return False
    om, bm = (None, None) if running_mean is None else (running_mean._value, batch_mean._value)
    ov, bv = (None, None) if running_var is None else (running_var._value, batch_var._value)
    if count is not None and (count.device != dev or count._dtype.name != "i64"):
        return False
    new = update(om, bm, ov, bv, m, scale, None if count is None else count._value)
    if new is None:
        return False
    for o, v in zip((running_mean, running_var), new):
        if o is not None:
            assign_(o, _wrap(v, dt))
    if count is not None:
        assign_(count, _wrap(new[2], count._dtype))
    return True


def _running_update(old, batch, m, scale):
    """(1 - m) old + m (batch * scale) (scale None: batch), rounded per step as the ops
    round; f32 / f64 on the host in NumPy ufuncs (the same roundings, without six op
    dispatches per training step)."""
    arrays = host_floats(old, batch)
    if arrays is not None:
        ov, bv = arrays
        c = old._dtype.np.type
        with np.errstate(all="ignore"):  # (overflow: inf, as the ops give)
            bv = bv if scale is None else bv * c(scale)
            return _wrap(ov * c(1 - m) + bv * c(m), old._dtype)
    b = batch.detach() if scale is None else multiply(batch.detach(), scale)
    return add(multiply(old, 1 - m), multiply(b, m))


def _unit_uniform(shape, generator):
    """f32 uniforms on [0, 1) for masks."""
    if generator is not None:
        return generator.uniform(shape, 0.0, 1.0, "f32")
    return rng_uniform(tensor(0.0, "f32"), tensor(1.0, "f32"), list(shape))


def dropout(x, p=0.5, training=True, generator=None):
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p)
    (inverted dropout); the identity when ``training`` is False or p = 0. The mask is
    ``u >= p`` for u uniform on [0, 1) from xops' stream (``xo.random_seed``) or from
    ``generator``: reproducible."""
    if not 0 <= p <= 1:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0:
        return x
    if p == 1:
        return multiply(x, 0.0)
    keep = compare(_unit_uniform(x.shape, generator), float(p), "GE")
    return select(keep, multiply(x, 1.0 / (1.0 - p)), 0)


# ---------------------------------------------------------------------------------------
# Shapes, embeddings
# ---------------------------------------------------------------------------------------


def flatten(x, start_dim=1, end_dim=-1):
    """Merge dims start_dim..end_dim into one (``xo.reshape``)."""
    s = start_dim + x.ndim if start_dim < 0 else start_dim
    e = end_dim + x.ndim if end_dim < 0 else end_dim
    if not 0 <= s <= e < max(x.ndim, 1):
        raise ValueError(f"flatten: dims {start_dim}..{end_dim} out of range for {x.type}")
    shape = list(x.shape[:s]) + [math.prod(x.shape[s : e + 1])] + list(x.shape[e + 1 :])
    return x if tuple(shape) == x.shape else reshape(x, shape)


def embedding(indices, weight):
    """Rows of ``weight`` (num_embeddings, dim) at integer ``indices`` (any shape):
    result indices.shape + (dim,), by ``xo.gather`` (its gradient scatter-adds rows)."""
    if not isinstance(indices, Tensor):
        indices = tensor(np.asarray(indices))
    if indices.dtype.kind not in ("si", "ui"):
        raise ValueError(f"embedding: indices must be integers, got {indices.type}")
    r = indices.ndim
    return gather(
        weight,
        indices,
        offset_dims=[r],
        collapsed_slice_dims=[0],
        start_index_map=[0],
        index_vector_dim=r,
        slice_sizes=[1, weight.shape[1]],
    )


def one_hot(labels, num_classes, dtype="f32", dim=-1):
    """1 where the position along the new dim ``dim`` equals the label, else 0."""
    if not isinstance(labels, Tensor):
        labels = tensor(np.asarray(labels))
    rank = labels.ndim + 1
    d = dim + rank if dim < 0 else dim
    shape = list(labels.shape)
    shape.insert(d, int(num_classes))
    with default_device(labels.device):  # (iota, a creation op, follows the default)
        positions = iota(d, shape, labels.dtype)
    spread = broadcast_in_dim(labels, [i for i in range(rank) if i != d], shape)
    return convert(compare(positions, spread, "EQ"), dtype)


# ---------------------------------------------------------------------------------------
# Losses
# ---------------------------------------------------------------------------------------


def _reduce_loss(per_item, reduction, name):
    if reduction == "mean":
        return mean(per_item)
    if reduction == "sum":
        return sum(per_item)
    if reduction == "none":
        return per_item
    raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _labels(labels, logits, name, ignore_index=None):
    """``labels`` as an integer Tensor of logits' shape less the class dim, each a class
    index in [0, C) or ``ignore_index``."""
    if not isinstance(labels, Tensor):
        labels = tensor(np.asarray(labels))
    if labels.dtype.kind not in ("si", "ui"):
        raise ValueError(f"{name}: labels must be integers (class indices), got {labels.type}")
    want = (logits.shape[0],) + logits.shape[2:]
    if labels.shape != want:
        raise ValueError(
            f"{name}: labels must have shape {want} for logits {logits.type}, got {labels.type}"
        )
    if labels.size:
        lo, hi = _label_range(labels)
        if lo < 0 or hi >= logits.shape[1]:
            if ignore_index is None or not np.all(_host_labels(labels, logits.shape[1],
                                                               ignore_index)):  # fmt: skip
                ignored = "" if ignore_index is None else f" or ignore_index {ignore_index}"
                raise ValueError(
                    f"{name}: labels must be class indices in [0, {logits.shape[1]}){ignored}, "
                    f"got values in [{lo}, {hi}]"
                )
    return labels


def _host_labels(labels, c, ignore_index):
    """Whether each label is a class index in [0, c) or ``ignore_index`` (a host read)."""
    y = np.asarray(labels.numpy() if hasattr(labels, "numpy") else labels._value)
    return ((y >= 0) & (y < c)) | (y == ignore_index)


# (min, max) of the device label arrays seen so far: id(array) -> (weak reference, min, max)
_RANGES = {}


def _label_range(labels):
    """(min, max) of the non-empty integer tensor ``labels``, for the range check.

    A device tensor's labels are copied to the host (a copy that waits for every queued
    kernel) once per device array: the result is kept, keyed by the array object, for as
    long as that array lives (a weak reference; the entry goes with it). xops never
    writes into a device array once made (in-place updates rebind the tensor to a new
    array, copy-on-write), so a training loop that passes the same label tensor every
    step syncs once, not per step. Memory shared with another framework (``from_dlpack``)
    that the other framework overwrites later is not re-read: the kernels then give NaN
    for a row whose label is out of range (they never read outside the row) in place of
    this check's ValueError."""
    v = labels._value
    if not hasattr(v, "copy_to_host"):  # on the host
        v = np.asarray(labels)
        return v.min(), v.max()
    hit = _RANGES.get(id(v))
    if hit is not None and hit[0]() is v:
        return hit[1], hit[2]
    host = labels.numpy()
    lo, hi = host.min(), host.max()
    key = id(v)
    try:
        ref = weakref.ref(v, functools.partial(_forget_range, key))
    except TypeError:  # (an array type without weak references: read every call)
        return lo, hi
    _RANGES[key] = (ref, lo, hi)
    return lo, hi


def _forget_range(key, ref):
    """The weak reference's callback: drop the entry of the array that died (not one
    made since for a new array at the same address)."""
    hit = _RANGES.get(key)
    if hit is not None and hit[0] is ref:
        del _RANGES[key]


def nll_loss(log_probs, labels, reduction="mean", *, weight=None, ignore_index=-100):
    """-log_probs[i, labels[i]] (class dim 1), reduced: the one-hot mask is a compare
    of ``iota`` with the labels, so no gradient ever reaches the labels. ``weight`` (C,)
    scales each item by its class's weight and ``ignore_index`` drops the items of that
    label; "mean" then divides by the sum of the kept items' weights (PyTorch's
    ``nll_loss``)."""
    labels = _labels(labels, log_probs, "nll_loss", ignore_index)
    if weight is None and not _ignoring(labels, ignore_index):
        mask = one_hot(labels, log_probs.shape[1], log_probs.dtype, dim=1)
        picked = reduce(multiply(log_probs, mask), 0, [1], add)
        return _reduce_loss(negate(picked), reduction, "nll_loss")
    return _weighted_loss(log_probs, labels, reduction, 0.0, weight, ignore_index, "nll_loss")


def cross_entropy(
    logits, labels, reduction="mean", label_smoothing=0.0, *, weight=None, ignore_index=-100
):
    """Softmax cross-entropy of ``logits`` (N, C, ...) against integer ``labels``
    (N, ...): ``-log_softmax(logits)[label]``, numerically stable (log-sum-exp via
    reduce max and add). ``label_smoothing`` mixes the one-hot target with the uniform
    distribution; ``weight`` (C,) weighs each class and ``ignore_index`` drops the items
    of that label, "mean" dividing by the kept items' weights (all as PyTorch's)."""
    labels = _labels(labels, logits, "cross_entropy", ignore_index)
    plain = weight is None and not _ignoring(labels, ignore_index)
    if plain and not label_smoothing and _fusable(logits, labels, reduction):
        return _softmax_xent(logits, labels, reduction)
    logp = log_softmax(logits, axis=1)
    if not plain:
        return _weighted_loss(
            logp, labels, reduction, float(label_smoothing), weight, ignore_index, "cross_entropy"
        )
    if not label_smoothing:
        return nll_loss(logp, labels, reduction)
    eps = float(label_smoothing)
    c = logits.shape[1]
    target = add(multiply(one_hot(labels, c, logits.dtype, dim=1), 1 - eps), eps / c)
    per_item = negate(reduce(multiply(logp, target), 0, [1], add))
    return _reduce_loss(per_item, reduction, "cross_entropy")


def _ignoring(labels, ignore_index):
    """Whether some label may equal ``ignore_index`` (within the labels' range)."""
    if not labels.size:
        return False
    lo, hi = _label_range(labels)
    return lo <= ignore_index <= hi


def _weighted_loss(logp, labels, reduction, eps, weight, ignore_index, name):
    """PyTorch's weighted / ignoring loss over log-probabilities ``logp`` (N, C, ...):
    per item (1 - eps) w[y] (-logp[y]) + eps / C sum_c w[c] (-logp[c]), 0 where y is
    ``ignore_index``; "mean" divides the sum by the sum of w[y] over the kept items
    (NaN where none is kept, as PyTorch)."""
    c = logp.shape[1]
    dt = logp.dtype
    keep = compare(labels, ignore_index, "NE")
    safe = select(keep, labels, _H.zeros_like(labels))
    hot = one_hot(safe, c, dt, dim=1)
    if weight is not None:
        w = weight if isinstance(weight, Tensor) else tensor(np.asarray(weight))
        if w.shape != (c,):
            raise ValueError(f"{name}: weight must have shape ({c},), got {w.type}")
        w = broadcast_in_dim(convert(w, dt) if w.dtype != dt else w, [1], logp.shape)
        hot = multiply(hot, w)
    kept = broadcast_in_dim(keep, [0] + list(range(2, logp.ndim)), logp.shape)
    zero = _H.zeros_like(logp)
    w_y = reduce(select(kept, hot, zero), 0, [1], add)  # w[y] of each kept item, else 0
    per_item = negate(reduce(select(kept, multiply(logp, hot), zero), 0, [1], add))
    if eps:
        spread = logp if weight is None else multiply(logp, w)
        smooth = negate(reduce(select(kept, spread, zero), 0, [1], add))
        per_item = add(multiply(per_item, 1 - eps), multiply(smooth, eps / c))
    if reduction == "mean":
        return divide(sum(per_item), sum(w_y))
    return _reduce_loss(per_item, reduction, name)


def _fusable(logits, labels, reduction):
    """Whether :func:`_softmax_xent` computes this cross-entropy: (N, C) f32 / f64
    logits, a known reduction, and logits and labels both on the host, or both on a
    device with the op's kernel and its gradient's (``device._updates``
    "softmax_cross_entropy_grad"; labels of a NumPy integer type there, not the
    sub-byte ones); else the composite of ops."""
    if logits.ndim != 2 or reduction not in ("mean", "sum", "none"):
        return False
    if host_floats(logits, labels) is not None:
        return True
    x, y = logits._value, labels._value
    if not (hasattr(x, "copy_to_host") and hasattr(y, "copy_to_host")):
        return False
    kind = logits.device.kind
    return (
        logits._dtype.name in ("f32", "f64")
        and y.dtype == labels._dtype.np
        and labels.device == logits.device
        and kind in _softmax_xent.kernels
        and (kind, "softmax_cross_entropy_grad") in _device._updates
    )


def _xent_parts(x, labels):
    """(z, lse, rows) of logits array ``x`` in float64: z = x - max (per row), lse =
    log(sum(exp(z))) (per row), rows = arange(N) (to pick each row's label)."""
    z = x.astype(np.float64)
    z -= z.max(axis=1, keepdims=True)  # (inf - inf: NaN, as the composite's subtract)
    lse = np.log(np.exp(z).sum(axis=1))
    return z, lse, np.arange(x.shape[0])


@primitive("softmax_cross_entropy")
def _softmax_xent(logits, labels, reduction):
    """cross_entropy of (N, C) logits and integer labels as one recorded op (forward
    and gradient in one pass each, in float64 and rounded once to the logits' type):
    the value and gradient of the composite of ops in :func:`cross_entropy` (the same
    formulas, rounded once instead of per op), with one tape node in place of a dozen.
    On a CUDA device: one kernel launch each way (:mod:`xops.kernels.cuda.losses`)."""
    x, y = logits._value, np.asarray(labels._value, np.intp)
    with np.errstate(all="ignore"):  # NaN / inf logits give NaN / inf, as IEEE says
        z, lse, rows = _xent_parts(x, y)
        per_item = lse - z[rows, y]  # -log_softmax at the label
        if reduction == "mean":
            per_item = per_item.sum() / x.shape[0]
        elif reduction == "sum":
            per_item = per_item.sum()
    return _wrap(np.asarray(per_item).astype(x.dtype), logits._dtype)


@_softmax_xent.defvjp
def _softmax_xent_vjp(g, out, logits, labels, reduction):
    """d/d logits = (softmax(logits) - one_hot(labels)) * g (/ N for the mean); under
    ``create_graph`` written with ops, so that it is recorded too."""
    n, c = logits.shape
    if is_grad_enabled():  # a graph of the backward pass: the same formula in ops
        d = subtract(softmax(logits, axis=1), one_hot(labels, c, logits.dtype, dim=1))
        if reduction == "mean":
            g = divide(g, float(n))
        return multiply(d, broadcast_in_dim(g, [0] if g.ndim else [], d.shape)), None
    if hasattr(logits._value, "copy_to_host"):  # on a device: its fused kernel, one launch
        grad = _device._updates[logits.device.kind, "softmax_cross_entropy_grad"]
        return grad(g, logits, labels, reduction), None
    x, y = logits._value, np.asarray(labels._value, np.intp)
    with np.errstate(all="ignore"):  # (as in the forward pass)
        z, lse, rows = _xent_parts(x, y)
        d = np.exp(z - lse[:, None])
        d[rows, y] -= 1.0
        gv = np.asarray(g._value, np.float64)
        d *= gv[:, None] if gv.ndim else (gv / n if reduction == "mean" else gv)
    return _wrap(d.astype(x.dtype), logits._dtype), None


def softmax_cross_entropy(logits, labels, reduction="mean"):
    """Alias of :func:`cross_entropy` under the name the training loop reads best with."""
    return cross_entropy(logits, labels, reduction)


def mse_loss(input, target, reduction="mean"):
    """Mean squared error: (input - target)^2, reduced."""
    if input.shape != target.shape:
        raise ValueError(
            f"mse_loss: input {input.type} and target {target.type} must have the same shape"
        )
    d = subtract(input, target)
    return _reduce_loss(multiply(d, d), reduction, "mse_loss")


mse = mse_loss


# ---------------------------------------------------------------------------------------
# More activations, normalisations, pooling and losses (PyTorch's definitions)
# ---------------------------------------------------------------------------------------


def _float(x, name):
    if not isinstance(x, Tensor) or x.dtype.kind != "float":
        raise ValueError(f"{name}: expected a float tensor, got {getattr(x, 'type', x)!r}")
    return x


def leaky_relu(x, negative_slope=0.01):
    """x where x > 0, else negative_slope x (gradient negative_slope at 0, as PyTorch)."""
    x = _float(x, "leaky_relu")
    return select(compare(x, 0.0, "GT"), x, multiply(x, float(negative_slope)))


def silu(x):
    """x sigmoid(x) (swish)."""
    x = _float(x, "silu")
    return multiply(x, logistic(x))


def elu(x, alpha=1.0):
    """x where x > 0, else alpha (e^x - 1) (``exponential_minus_one``)."""
    x = _float(x, "elu")
    pos = compare(x, 0.0, "GT")
    neg = exponential_minus_one(select(pos, _H.zeros_like(x), x))  # (no overflow unused)
    return select(pos, x, multiply(neg, float(alpha)))


def softplus(x, beta=1.0, threshold=20.0):
    """log(1 + e^(beta x)) / beta, and x itself where beta x > threshold (PyTorch's)."""
    x = _float(x, "softplus")
    bx = multiply(x, float(beta))
    big = compare(bx, float(threshold), "GT")
    safe = select(big, _H.zeros_like(x), bx)  # (no overflow in the branch not taken)
    return select(big, x, divide(log_plus_one(exponential(safe)), float(beta)))


def _normalize(x, axes, eps):
    """(x - mean) / sqrt(var + eps) over ``axes`` (biased variance, as PyTorch's norms)."""
    n = float(math.prod(x.shape[a] for a in axes))
    mu = _keep(divide(sum(x, axes), n), axes, x.shape)
    d = subtract(x, mu)
    var = _keep(divide(sum(multiply(d, d), axes), n), axes, x.shape)
    return multiply(d, rsqrt(add(var, float(eps))))


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the last ``len(normalized_shape)`` dims (which must be
    ``normalized_shape``), then ``* weight + bias`` (each of that shape) where given."""
    x = _float(x, "layer_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or tuple(x.shape[x.ndim - k :]) != shape or k > x.ndim:
        raise ValueError(
            f"layer_norm: normalized_shape {list(shape)} must be the trailing dims of {x.type}"
        )
    axes = list(range(x.ndim - k, x.ndim))
    y = _normalize(x, axes, eps)
    trailing = list(range(x.ndim - k, x.ndim))
    if weight is not None:
        y = multiply(y, broadcast_in_dim(weight, trailing, x.shape))
    if bias is not None:
        y = add(y, broadcast_in_dim(bias, trailing, x.shape))
    return y


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each of ``num_groups`` groups of channels (dim 1) over the group's
    channels and every dim after them, then a per-channel ``weight`` and ``bias``."""
    x = _float(x, "group_norm")
    n, c = x.shape[0], x.shape[1]
    if x.ndim < 2 or c % num_groups:
        raise ValueError(f"group_norm: {num_groups} groups must divide the channels of {x.type}")
    grouped = reshape(x, [n, num_groups, c // num_groups] + list(x.shape[2:]))
    y = reshape(_normalize(grouped, list(range(2, grouped.ndim)), eps), list(x.shape))
    if weight is not None:
        y = multiply(y, broadcast_in_dim(weight, [1], x.shape))
    if bias is not None:
        y = add(y, broadcast_in_dim(bias, [1], x.shape))
    return y


def _averaging(n_in, n_out, dt):
    """(n_out, n_in) matrix averaging PyTorch's adaptive windows [floor(i n / m),
    ceil((i + 1) n / m))."""
    a = np.zeros((n_out, n_in))
    for i in range(n_out):
        lo, hi = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        a[i, lo:hi] = 1.0 / (hi - lo)
    return tensor(a.astype(dt.np))


def adaptive_avg_pool2d(x, output_size):
    """The mean of each of PyTorch's adaptive windows of the last two dims of (N, C, H,
    W) or (C, H, W) ``x`` (``output_size``: an int or (h, w); None keeps that dim)."""
    x = _float(x, "adaptive_avg_pool2d")
    if x.ndim not in (3, 4):
        raise ValueError(f"adaptive_avg_pool2d: expected (N, C, H, W) or (C, H, W), got {x.type}")
    h, w = x.shape[-2:]
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else output_size
    oh, ow = h if oh is None else int(oh), w if ow is None else int(ow)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"adaptive_avg_pool2d: output_size must be positive, got {output_size}")
    r = x.ndim
    ah, aw = _averaging(h, oh, x.dtype), _averaging(w, ow, x.dtype)
    # (..., H, W) x (ow, W) -> (..., H, ow); then (oh, H) x (..., H, ow) -> (oh, ..., ow)
    y = dot_general(x, aw, lhs_contracting_dimensions=[r - 1], rhs_contracting_dimensions=[1])
    y = dot_general(ah, y, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[r - 2])
    perm = list(range(1, r - 1)) + [0, r - 1]
    from ..ops.movement import transpose

    return transpose(y, perm)


def _same_shape(a, b, name):
    if a.shape != b.shape:
        raise ValueError(f"{name}: input {a.type} and target {b.type} must have the same shape")


def _weighted(per_item, weight, like):
    if weight is None:
        return per_item
    w = weight if isinstance(weight, Tensor) else tensor(np.asarray(weight, like.dtype.np))
    return multiply(per_item, _broadcast_to(w, like))


def _broadcast_to(t, like):
    """``t`` broadcast to ``like``'s shape NumPy-style (trailing dims aligned)."""
    if t.shape == like.shape:
        return t
    k = like.ndim - t.ndim
    keep = [d for d in range(t.ndim) if t.shape[d] != 1 or like.shape[k + d] == 1]
    squeezed = reshape(t, [t.shape[d] for d in keep])
    return broadcast_in_dim(squeezed, [k + d for d in keep], like.shape)


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """-[pos_weight t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))] in PyTorch's stable
    form (1 - t) x + (1 + (pos_weight - 1) t) (log(1 + e^-|x|) + max(-x, 0))."""
    x, t = _float(input, "binary_cross_entropy_with_logits"), target
    _same_shape(x, t, "binary_cross_entropy_with_logits")
    soft = add(log_plus_one(exponential(negate(_abs(x)))), _maximum(negate(x), _H.zeros_like(x)))
    if pos_weight is not None:
        pw = _broadcast_to(
            pos_weight if isinstance(pos_weight, Tensor) else tensor(np.asarray(pos_weight)), x
        )
        soft = multiply(add(multiply(subtract(pw, 1.0), t), 1.0), soft)
    per = add(multiply(subtract(1.0, t), x), soft)
    return _reduce_loss(_weighted(per, weight, x), reduction, "binary_cross_entropy_with_logits")


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """-[t log p + (1 - t) log(1 - p)] of probabilities ``input``, each log clamped at
    -100 (PyTorch's)."""
    p, t = _float(input, "binary_cross_entropy"), target
    _same_shape(p, t, "binary_cross_entropy")
    lo = tensor(np.asarray(-100.0, p.dtype.np))
    lp = _maximum(log(p), broadcast_in_dim(lo, [], p.shape))
    lq = _maximum(log_plus_one(negate(p)), broadcast_in_dim(lo, [], p.shape))
    per = negate(add(multiply(t, lp), multiply(subtract(1.0, t), lq)))
    return _reduce_loss(_weighted(per, weight, p), reduction, "binary_cross_entropy")


def l1_loss(input, target, reduction="mean"):
    """|input - target|, reduced."""
    _same_shape(input, target, "l1_loss")
    return _reduce_loss(_abs(subtract(input, target)), reduction, "l1_loss")


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target)."""
    _same_shape(input, target, "smooth_l1_loss")
    d = _abs(subtract(input, target))
    if beta == 0:
        return _reduce_loss(d, reduction, "smooth_l1_loss")
    small = compare(d, float(beta), "LT")
    per = select(small, multiply(multiply(d, d), 0.5 / beta), subtract(d, 0.5 * beta))
    return _reduce_loss(per, reduction, "smooth_l1_loss")


def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 d^2 where |d| <= delta, else delta (|d| - 0.5 delta) (d = input - target)."""
    _same_shape(input, target, "huber_loss")
    d = _abs(subtract(input, target))
    small = compare(d, float(delta), "LE")
    per = select(small, multiply(multiply(d, d), 0.5), multiply(subtract(d, 0.5 * delta), delta))
    return _reduce_loss(per, reduction, "huber_loss")
