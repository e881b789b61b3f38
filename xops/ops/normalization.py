"""Batch normalization: stablehlo.batch_norm_training, batch_norm_inference and
batch_norm_grad (XLA BatchNormTraining / BatchNormInference / BatchNormGrad).

The spec (seed 004) defines each op as a composition of other ops; the
``*_reference`` functions below are those compositions written line by line in NumPy
(the test oracle). The ops themselves run fused kernels (``xops.kernels.normalization``):
one pass for the statistics or the gradient sums, one pass for the elementwise result
(for NCHW-like operands, both passes feature by feature in one kernel).

Semantic choices (docs/semantics.md):

* **Statistics** are the mean and the *biased* variance (divide by N, the element
  count per feature) over every dim except ``feature_index``, which may be any dim.
  ``batch_norm_training``'s output is ``batch_norm_inference`` of the operand with the
  returned (element-type) ``batch_mean`` and ``batch_var``, exactly as the spec
  composes it, so the two ops agree bit for bit.
* **epsilon** is an f32 attribute (I4/I6): it is rounded to f32, then converted to the
  operand's element type (``constant(epsilon, element_type(operand))``), e.g. for f64
  operands ``1e-5`` means ``float32(1e-5)``, and for f8E4M3FN it flushes to 0.
* **Precision.** Sums accumulate in float64 (f32 operands too) and every elementwise
  result is computed in float64 and rounded once to the element type, except for f32
  operands whose feature dim is followed by fewer than 16 elements: their elementwise
  results are computed in f32 from coefficients rounded to f32 (a few f32 units in the
  last place of the formula's largest term; see ``xops.kernels.normalization``).
  Reduction order is implementation-defined, so results may differ from a float32
  evaluation of the composition in the last bits. Narrow floats (bf16, f16, f8...) are
  widened exactly to float64 and rounded once at the end (XLA on CPU computes them in
  f32 with excess precision and rounds each output once).
* **N** (``size(operand) / dim(operand, feature_index)``) is used exactly. The spec
  writes it as ``constant(N, element_type(operand))``, which for narrow types would
  round it (bf16 above 256) or overflow it (f16 above 65504, f8E4M3FN above 464, giving
  inf/NaN statistics); xops keeps the exact count, as the compute domain can hold it.
* **Empty batch** (N = 0): batch_mean and batch_var are 0/0 = NaN, grad_scale and
  grad_offset are sums over nothing, 0.

Gradients (:mod:`xops.autodiff`): the three ops are tape primitives; their rules are
written with xops ops (so they record too, and higher orders work):

* ``batch_norm_training``: the output's cotangent goes back through
  ``batch_norm_grad`` itself (the fused kernel, with the returned batch_mean and
  batch_var); cotangents on batch_mean / batch_var add ``g_mean / N`` and
  ``2 g_var (x - mean) / N`` to the operand's (skipped when they are the zeros the
  engine fills in for an unused output).
* ``batch_norm_inference``: the closed form (operand ``g scale / sqrt(var + eps)``,
  offset ``sum g``, scale ``sum g (x - mean) / sqrt(var + eps)``, mean ``-sum g scale /
  sqrt(var + eps)``, variance ``-1/2 sum g scale (x - mean) (var + eps)^(-3/2)``).
* ``batch_norm_grad``: the closed-form vjp of its formula in all five tensor inputs
  (operand, scale, mean, variance, grad_output), so second-order gradients through
  training-mode batch norm work: the mean / variance cotangents it returns reach
  batch_norm_training's batch_mean / batch_var outputs.

Narrow floats (bf16, f16, f8...) compute their rules in f32 and round the cotangents
once to the operand's element type.
"""

import math
import numbers

import numpy as np

from ..autodiff import helpers as _H
from ..autodiff.tape import keep, primitive
from ..dtypes import as_dtype, from_compute, to_compute
from ..kernels import normalization as K
from ..kernels import pool as _pool
from ..tensor import Tensor
from . import conversion as _C
from . import elementwise as _E
from . import movement as _M
from ._core import SpecError, as_tensor, attr_int, check, operands, result, tstr
from ._core import quiet as _quiet  # (NaN/inf results: 0/0 for an empty batch, var + eps = 0)
from .reduction import _readonly

__all__ = ["batch_norm_training", "batch_norm_inference", "batch_norm_grad"]


# ---------------------------------------------------------------------------------------
# Shared checks and plumbing
# ---------------------------------------------------------------------------------------


def _float_operand(op, label, t, name):
    check(
        t._dtype.kind == "float",
        op,
        label,
        lambda: f"{name} must be a tensor of floating-point type, got {tstr(t)}",
    )


def _feature_vector(op, label, t, name):
    check(
        t.ndim == 1 and t._dtype.kind == "float",
        op,
        label,
        lambda: f"{name} must be a 1-dimensional tensor of floating-point type, got {tstr(t)}",
    )


def _feature_index(op, i_label, operand, feature_index):
    fi = attr_int(op, i_label, "feature_index", feature_index)
    check(
        0 <= fi < operand.ndim,
        op,
        "C1",
        lambda: (
            f"feature_index must be in [0, rank(operand)={operand.ndim}), got {fi} "
            f"for operand {tstr(operand)}"
        ),
    )
    return fi


def _same_element_type(op, label, operand, others):
    for name, t in others:
        check(
            t._dtype is operand._dtype,
            op,
            label,
            lambda: (
                f"operand and {name} must have the same element type, got "
                f"{tstr(operand)} and {tstr(t)}"
            ),
        )


def _feature_size(op, label, operand, fi, t, name):
    check(
        t.shape[0] == operand.shape[fi],
        op,
        label,
        lambda: (
            f"size({name})={t.shape[0]} must equal dim(operand, feature_index={fi})="
            f"{operand.shape[fi]} for operand {tstr(operand)}"
        ),
    )


def _check_inputs(op, tensors, names, epsilon, feature_index):
    """The checks the three ops share, labelled as the spec numbers them: the n tensor
    inputs are I1..In (``operand`` and ``grad_output`` float tensors, the others 1-d float
    vectors), epsilon is I(n+1), feature_index I(n+2) and C1; all share the operand's
    element type (C2). Returns ``(feature_index, epsilon)`` as Python numbers."""
    x = tensors[0]
    for i, (t, name) in enumerate(zip(tensors, names)):
        if name in ("operand", "grad_output"):
            _float_operand(op, f"I{i + 1}", t, name)
        else:
            _feature_vector(op, f"I{i + 1}", t, name)
    n = len(tensors)
    fi = _feature_index(op, f"I{n + 2}", x, feature_index)
    eps = _epsilon(op, f"I{n + 1}", epsilon, x._dtype)
    _same_element_type(op, "C2", x, list(zip(names[1:], tensors[1:])))
    keep(op, epsilon=eps, feature_index=fi)  # the rule reads them parsed
    return fi, eps


# Validated signatures (dot_general's pattern): the checks read only the tensors' element
# types and shapes and the attributes, so a signature that passed them once passes again,
# and its parsed (feature_index, epsilon) is reused (a training step repeats a few). Keyed
# only for Tensors with an int feature_index and a float or int epsilon (its sign too:
# -0.0 == 0.0); anything else, and every failing call, runs the checks.
_CHECKED = {}
_CHECKED_MAX = 1024


def _checked(checks, tensors, epsilon, feature_index):
    """``checks(*tensors, epsilon, feature_index)`` (an op's ``<op>_checks``), or the same
    ``(*tensors, feature_index, epsilon)`` for a signature that passed them before."""
    key = None
    if type(feature_index) is int and type(epsilon) in (float, int):
        if [type(t) for t in tensors] == [Tensor] * len(tensors):
            sig = [(id(t._dtype), t.shape) for t in tensors]
            key = (checks, feature_index, epsilon, math.copysign(1.0, epsilon), *sig)
    hit = _CHECKED.get(key) if key is not None else None
    if hit is not None:
        op, fi, eps = hit[1:]
        keep(op, epsilon=eps, feature_index=fi)  # as _check_inputs does
        return (*tensors, fi, eps)
    out = checks(*tensors, epsilon, feature_index)
    if key is not None and len(_CHECKED) < _CHECKED_MAX:
        op = checks.__name__.removesuffix("_checks")
        _CHECKED[key] = (tuple(t._dtype for t in tensors), op, *out[-2:])  # (holds the ids)
    return out


def _epsilon(op, label, epsilon, dt):
    """The spec's ``constant(epsilon, element_type(operand))``: the f32 attribute,
    converted to the operand's element type, as a Python float."""
    if isinstance(epsilon, Tensor):
        ok = epsilon.ndim == 0 and epsilon._dtype.kind == "float"
        epsilon = epsilon.item() if ok else epsilon
    elif isinstance(epsilon, np.ndarray) and epsilon.ndim == 0:
        epsilon = epsilon[()]
    if isinstance(epsilon, (bool, np.bool_)) or not isinstance(epsilon, numbers.Real):
        raise SpecError(
            op, label, f"epsilon must be an f32 constant (a real number), got {epsilon!r}"
        )
    with np.errstate(over="ignore"):
        e32 = np.array(epsilon, np.float32)
    return float(to_compute(from_compute(e32, dt), dt))


def _view(t, fi, limit=None):
    """``(x, plan, C, inner, n)``: the operand flat and C-contiguous in float32 or
    float64, its kernel plan (None where :func:`_fused` takes the operand to the fused
    kernels, features up to ``limit`` bytes, default _FUSED_BYTES), the feature count,
    the run length (product of the dims after ``feature_index``) and the elements per
    feature. Narrow floats widen exactly to float64 (one rounding at the end, correct
    through the dtype layer's round-to-odd).
    """
    shape = t.shape
    outer = math.prod(shape[:fi])
    C = shape[fi]
    inner = math.prod(shape[fi + 1 :])
    plan = None if _fused(t, C, inner, limit or _FUSED_BYTES) else K.plan(outer, C, inner)
    return _flat(t), plan, C, inner, outer * inner


def _flat(t):
    """t's data flat, C-contiguous and read-only in float32 or float64 (narrow floats:
    float64). Read-only always, as reduce's kernel inputs (``_readonly``): an operand
    arrives writable (a layer's fresh output) or not (a tensor's value), and Numba
    compiles a signature per flag (the main job compiled both fused kernels twice: 0.9 s
    of its cold start)."""
    v = t._value
    v = v.astype(np.float64) if t._dtype.is_narrow else np.ascontiguousarray(v)
    return _readonly(v.reshape(-1))


def _fused(t, C, inner, limit):
    """Whether the fused per-feature kernels take operand ``t``: runs of at least
    K.FUSED_RUN elements, at least K.FUSED_FEATURES features of at most _FUSED_BYTES
    each (a feature's runs are read again from cache; larger ones read in memory order,
    by tiles, stream faster), an element type held as computed (the kernels round the
    statistics to x's own holder type). A rule on the shape alone: results never depend
    on the thread count."""
    nbytes = t._value.nbytes // C if C else 0
    return (
        inner >= K.FUSED_RUN
        and C >= K.FUSED_FEATURES
        and nbytes <= limit
        and not t._dtype.is_narrow
    )


#: the largest feature (bytes of one operand) the fused kernels take: with grad_output
#: and the result, three such blocks stay in a 512 KiB L2 cache between the passes
_FUSED_BYTES = 1 << 17
#: batch_norm_grad's: its fused kernel re-reads a feature's runs in reverse (what is
#: still in L2 first, the rest from L3); for features past _FUSED_BYTES the tiles were
#: still faster on the idle machine ((64,32,32,32) f32, two threads, min of 40: fused at
#: 1 << 19 1.45-1.54 ms, tiles 1.08-1.16, PyTorch 1.31-1.42; docs/kernels.md)
_FUSED_GRAD_BYTES = _FUSED_BYTES


def _vec64(t):
    """A feature vector in float64 (exact for every float type)."""
    return (
        np.ascontiguousarray(t._value, dtype=np.float64)
        if not t._dtype.is_narrow
        else t._value.astype(np.float64)
    )


def _round(v64, dt):
    """A float64 array rounded once to element type ``dt``, and back to float64 (the
    value the spec's element-type tensor holds)."""
    return to_compute(from_compute(v64, dt), dt).astype(np.float64)


# -- gradient-rule helpers (rules are written with xops ops, so they record too) --------

_needs = _H.needs


def _is_zero(g):
    """Whether cotangent ``g`` is a constant zero, as the engine fills in for an unused
    output of a multi-output op: off the tape and all zeros. Cheap: the engine's zeros
    are a stride-0 broadcast (one element to look at), on a device the shared zero array
    of :func:`xops.autodiff.helpers.zeros_like`; feature vectors are small; a large
    materialised tensor is taken as nonzero without a look, and so is any other one on a
    device (looking would copy it to the host): the rule then adds the zero terms."""
    if g.requires_grad:
        return False
    v = g._value
    if type(v) is not np.ndarray and hasattr(v, "copy_to_host"):
        return _H.is_shared_zero(g)
    if v.size and not any(v.strides):
        v = v.reshape(-1)[:1]
    elif v.size > 4096:
        return False
    if g._dtype.name in ("f32", "f64") and type(v) is np.ndarray:  # (values: no conversion)
        return not v.any()
    return not np.any(to_compute(v, g._dtype))


def _work_dtype(dt):
    """The element type a rule computes in: f32 for narrow floats, the type itself
    otherwise."""
    return as_dtype("f32") if dt.is_narrow else dt


def _to(t, dt):
    """``t`` converted to element type ``dt`` (no op when it already is; None stays)."""
    return t if t is None or t._dtype is dt else _C.convert(t, dt)


def _count(x, fi):
    """N, the elements per feature (exact), as a Python float."""
    return float(x.size // x.shape[fi]) if x.shape[fi] else 0.0


def _bcast(v, fi, shape):
    """broadcast_in_dim(v, [feature_index], shape) (None stays None)."""
    return None if v is None else _M.broadcast_in_dim(v, [fi], shape)


def _fsum(t, fi):
    """``t`` summed over every dim but ``feature_index`` (None stays None)."""
    if t is None:
        return None
    return _H.sum(t, [d for d in range(t.ndim) if d != fi])  # (init on t's device)


def _add(a, b):
    """a + b, a None term counting as zero."""
    return b if a is None else a if b is None else _E.add(a, b)


def _sub(a, b):
    """a - b, a None term counting as zero."""
    return a if b is None else _E.negate(b) if a is None else _E.subtract(a, b)


def _mul(a, b):
    """a * b, None (zero) when either factor is."""
    return None if a is None or b is None else _E.multiply(a, b)


# ---------------------------------------------------------------------------------------
# batch_norm_training
# ---------------------------------------------------------------------------------------


@primitive("batch_norm_training", quantized="dequantize")
def batch_norm_training(operand, scale, offset, epsilon, feature_index):
    """stablehlo.batch_norm_training: normalize ``operand`` by the mean and biased
    variance of every feature (all dims but ``feature_index``), then scale and offset.

    Returns ``(output, batch_mean, batch_var)``; ``output`` is
    ``batch_norm_inference(operand, scale, offset, batch_mean, batch_var, ...)``.

    >>> x = xo.tensor([[[1.0, 2.0], [3.0, 4.0]], [[3.0, 4.0], [1.0, 2.0]]], "f64")
    >>> one = xo.tensor([1.0, 1.0], "f64")
    >>> out, mean, var = xo.batch_norm_training(x, one, one, 0.0, 2)
    ... # out [[[0, 0], [2, 2]], [[2, 2], [0, 0]]], mean [2, 3], var [1, 1]
    """
    ts = (operand, scale, offset)
    x, s, o, fi, eps = _checked(batch_norm_training_checks, ts, epsilon, feature_index)
    return _batch_norm_training_impl(x, s, o, eps, fi)


def batch_norm_training_checks(operand, scale, offset, epsilon, feature_index):
    """batch_norm_training's constraints (I1-I5, C1-C4) on the operands' types (Tensors
    on any device: no data is read) and the attributes; returns ``(operand, scale,
    offset, feature_index, epsilon)``, the tensors converted, the attributes parsed."""
    op = "batch_norm_training"
    names = ["operand", "scale", "offset"]
    x, s, o = ts = operands(op, operand, scale, offset, names=names)
    fi, eps = _check_inputs(op, ts, names, epsilon, feature_index)
    _feature_size(op, "C3", x, fi, s, "scale")
    _feature_size(op, "C4", x, fi, o, "offset")
    # C5-C7 (batch_mean/batch_var sizes, output type) hold by construction
    return x, s, o, fi, eps


@batch_norm_training.defvjp
def _batch_norm_training_vjp(g, out, operand, scale, offset, epsilon, feature_index):
    """The output's cotangent: batch_norm_grad with the returned statistics (the fused
    kernel; it accounts for the statistics' own dependence on the operand). batch_mean's
    and batch_var's: ``g_mean / N`` and ``2 g_var (x - mean) / N`` broadcast onto the
    operand's (d var / dx is exact in that form, as sum(x - mean) = 0)."""
    gy, gm, gv = g
    _, mean, var = out
    x = as_tensor(operand)
    fi = feature_index  # (kept parsed by the op, as epsilon)
    gx = gs = go = None
    if not _is_zero(gy):
        gx, gs, go = batch_norm_grad(x, as_tensor(scale), mean, var, gy, epsilon, fi)
    if _needs(operand):
        gm = None if _is_zero(gm) else gm
        gv = None if _is_zero(gv) else gv
        if gm is not None or gv is not None:
            dt = x._dtype
            wt = _work_dtype(dt)
            n = _count(x, fi)
            extra = _bcast(_E.divide(_to(gm, wt), n) if gm is not None else None, fi, x.shape)
            if gv is not None:
                centered = _E.subtract(_to(x, wt), _bcast(_to(mean, wt), fi, x.shape))
                coef = _E.multiply(_to(gv, wt), 2.0)
                extra = _add(extra, _E.multiply(_bcast(_E.divide(coef, n), fi, x.shape), centered))
            gx = _to(_add(_to(gx, wt), extra), dt)
    return (
        gx if _needs(operand) else None,
        gs if _needs(scale) else None,
        go if _needs(offset) else None,
        None,
        None,
    )


def _batch_norm_training_impl(x, s, o, eps, fi):
    dt = x._dtype
    flat, plan, C, inner, _ = _view(x, fi)
    out = _pool.empty(flat.shape, flat.dtype)  # (recycled: no page faults)
    if plan is None:  # one kernel: statistics and output, feature by feature
        stats = np.empty((2, C), flat.dtype)  # (compiled code: no NumPy warnings to quiet)
        K.train_features(flat, C, inner, _vec64(s), _vec64(o), eps, out, stats)
        mean, var = stats
        return (result(out.reshape(x.shape), dt), result(mean, dt), result(var, dt))
    psum, pm2 = plan.partials(), plan.partials()
    mean = np.empty(C)
    var = np.empty(C)
    with _quiet():
        K.moments(flat, C, inner, plan, psum, pm2)
        K.merge_moments.serial(plan.parts, psum, pm2, mean, var)  # O(tiles): always serial
        mean = _round(mean, dt)  # the element-type batch_mean / batch_var that the spec
        var = _round(var, dt)  # then feeds to batch_norm_inference
        a = _vec64(s) / np.sqrt(var + eps)
        K.normalize(flat, C, inner, plan, mean, a, _vec64(o), out)
    return (result(out.reshape(x.shape), dt), result(mean, dt), result(var, dt))


def batch_norm_training_reference(operand, scale, offset, epsilon, feature_index):
    """The spec's composition for batch_norm_training, in NumPy, in the arrays' own
    float dtype (float32 or float64): the test oracle."""
    mean = _compute_mean_ref(operand, feature_index)
    variance = _compute_variance_ref(operand, feature_index)
    out = batch_norm_inference_reference(
        operand, scale, offset, mean, variance, epsilon, feature_index
    )
    return out, mean, variance


def _compute_sum_ref(operand, feature_index):
    dims = tuple(i for i in range(operand.ndim) if i != feature_index)
    return np.add.reduce(operand, axis=dims, initial=operand.dtype.type(0))


def _compute_mean_ref(operand, feature_index):
    total = _compute_sum_ref(operand, feature_index)
    divisor = operand.dtype.type(
        operand.size // operand.shape[feature_index] if operand.shape[feature_index] else 0
    )
    with _quiet():
        return total / divisor


def _compute_variance_ref(operand, feature_index):
    mean = _compute_mean_ref(operand, feature_index)
    centered = operand - _bcast_ref(mean, feature_index, operand.ndim)
    return _compute_mean_ref(centered * centered, feature_index)


def _bcast_ref(v, feature_index, rank):
    """broadcast_in_dim(v, [feature_index], type(operand)) as a broadcastable view."""
    shape = [1] * rank
    shape[feature_index] = v.shape[0]
    return v.reshape(shape)


# ---------------------------------------------------------------------------------------
# batch_norm_inference
# ---------------------------------------------------------------------------------------


@primitive("batch_norm_inference", quantized="dequantize")
def batch_norm_inference(operand, scale, offset, mean, variance, epsilon, feature_index):
    """stablehlo.batch_norm_inference: ``scale * (operand - mean) / sqrt(variance +
    epsilon) + offset`` per feature, with the given mean and variance.

    >>> x = xo.tensor([[[1.0, 2.0], [3.0, 4.0]], [[3.0, 4.0], [1.0, 2.0]]], "f64")
    >>> one = xo.tensor([1.0, 1.0], "f64")
    >>> xo.batch_norm_inference(x, one, one, xo.tensor([2.0, 3.0], "f64"), one, 0.0, 2).tolist()
    [[[0.0, 0.0], [2.0, 2.0]], [[2.0, 2.0], [0.0, 0.0]]]
    """
    ts = (operand, scale, offset, mean, variance)
    x, s, o, m, v, fi, eps = _checked(batch_norm_inference_checks, ts, epsilon, feature_index)
    flat, plan, C, inner, _ = _view(x, fi)
    out = _pool.empty(flat.shape, flat.dtype)  # (recycled: no page faults)
    if plan is None:  # the training kernel, given the statistics (same bits)
        stats = np.stack([m._value, v._value]).astype(flat.dtype, copy=False)
        K.train_features(flat, C, inner, _vec64(s), _vec64(o), eps, out, stats, given=True)
        return result(out.reshape(x.shape), x._dtype)
    with _quiet():
        a = _vec64(s) / np.sqrt(_vec64(v) + eps)
        K.normalize(flat, C, inner, plan, _vec64(m), a, _vec64(o), out)
    return result(out.reshape(x.shape), x._dtype)


def batch_norm_inference_checks(operand, scale, offset, mean, variance, epsilon, feature_index):
    """batch_norm_inference's constraints (I1-I7, C1-C6) on the operands' types (no data
    is read); returns ``(operand, scale, offset, mean, variance, feature_index,
    epsilon)``, the tensors converted, the attributes parsed."""
    op = "batch_norm_inference"
    names = ["operand", "scale", "offset", "mean", "variance"]
    ts = operands(op, operand, scale, offset, mean, variance, names=names)
    fi, eps = _check_inputs(op, ts, names, epsilon, feature_index)
    for k in range(1, 5):
        _feature_size(op, f"C{k + 2}", ts[0], fi, ts[k], names[k])
    # C7 (result type = operand type) holds by construction
    return (*ts, fi, eps)


@batch_norm_inference.defvjp
def _batch_norm_inference_vjp(
    g, out, operand, scale, offset, mean, variance, epsilon, feature_index
):
    """With ``inv = 1 / sqrt(variance + eps)`` and sums over every dim but feature_index:
    operand ``g scale inv``; scale ``inv sum g (x - mean)``; offset ``sum g``; mean
    ``-scale inv sum g``; variance ``-1/2 scale inv^3 sum g (x - mean)``."""
    need = [_needs(a) for a in (operand, scale, offset, mean, variance)]
    x, s, m, v = (as_tensor(a) for a in (operand, scale, mean, variance))
    fi, eps = feature_index, epsilon  # (kept parsed by the op)
    dt = x._dtype
    wt = _work_dtype(dt)
    gw, s, v = _to(g, wt), _to(s, wt), _to(v, wt)
    inv = _E.rsqrt(_E.add(v, eps))
    k = _E.multiply(s, inv)  # scale / stddev
    gx = _E.multiply(gw, _bcast(k, fi, x.shape)) if need[0] else None
    total = _fsum(gw, fi) if need[2] or need[3] else None  # sum g
    gm = _E.negate(_E.multiply(total, k)) if need[3] else None
    gs = gv = None
    if need[1] or need[4]:
        centered = _E.subtract(_to(x, wt), _bcast(_to(m, wt), fi, x.shape))
        gs = _E.multiply(_fsum(_E.multiply(gw, centered), fi), inv)  # sum g xhat
        if need[4]:
            gv = _E.multiply(_E.multiply(gs, k), _E.multiply(inv, -0.5))
    return (
        _to(gx, dt),
        _to(gs, dt) if need[1] else None,
        _to(total, dt) if need[2] else None,
        _to(gm, dt),
        _to(gv, dt),
        None,
        None,
    )


def batch_norm_inference_reference(operand, scale, offset, mean, variance, epsilon, feature_index):
    """The spec's composition for batch_norm_inference, in NumPy, in the arrays' own
    float dtype: the test oracle."""
    r = operand.ndim
    scale_bcast = _bcast_ref(scale, feature_index, r)
    offset_bcast = _bcast_ref(offset, feature_index, r)
    _, _, _, normalized_operand = _normalized_ref(operand, mean, variance, epsilon, feature_index)
    with _quiet():
        return scale_bcast * normalized_operand + offset_bcast


def _normalized_ref(operand, mean, variance, epsilon, feature_index):
    """The steps both compositions begin with: ``(centered_operand, variance_bcast +
    epsilon_bcast, stddev, normalized_operand)``."""
    T = operand.dtype.type
    r = operand.ndim
    mean_bcast = _bcast_ref(mean, feature_index, r)
    variance_bcast = _bcast_ref(variance, feature_index, r)
    epsilon_bcast = T(np.float32(epsilon))
    with _quiet():
        centered_operand = operand - mean_bcast
        variance_plus_epsilon = variance_bcast + epsilon_bcast
        stddev = np.sqrt(variance_plus_epsilon)
        return centered_operand, variance_plus_epsilon, stddev, centered_operand / stddev


# ---------------------------------------------------------------------------------------
# batch_norm_grad
# ---------------------------------------------------------------------------------------


@primitive("batch_norm_grad", quantized="dequantize")
def batch_norm_grad(operand, scale, mean, variance, grad_output, epsilon, feature_index):
    """stablehlo.batch_norm_grad: gradients of batch_norm_training's output with
    respect to operand, scale and offset, using the *given* mean and variance (not
    recomputed). With ``xhat = (x - mean) / sqrt(variance + epsilon)``:

    * ``grad_operand = scale / sqrt(variance + epsilon) * (g - mean(g) - xhat * mean(g * xhat))``
    * ``grad_scale = sum(g * xhat)``, ``grad_offset = sum(g)``

    (means and sums over every dim but ``feature_index``). Returns
    ``(grad_operand, grad_scale, grad_offset)``.

    >>> x = xo.tensor([[[1.0, 2.0], [3.0, 4.0]], [[3.0, 4.0], [1.0, 2.0]]], "f64")
    >>> one = xo.tensor([1.0, 1.0], "f64")
    >>> g = xo.tensor(np.full((2, 2, 2), 0.1))
    >>> grads = xo.batch_norm_grad(x, one, xo.tensor([2.0, 3.0], "f64"), one, g, 0.0, 2)
    >>> [t.tolist() for t in grads]   # grad_operand zeros, grad_scale, grad_offset
    [[[[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]], [0.0, 0.0], [0.4, 0.4]]
    """
    ts = (operand, scale, mean, variance, grad_output)
    x, s, m, v, g, fi, eps = _checked(batch_norm_grad_checks, ts, epsilon, feature_index)
    return _batch_norm_grad_impl(x, s, m, v, g, eps, fi)


def batch_norm_grad_checks(operand, scale, mean, variance, grad_output, epsilon, feature_index):
    """batch_norm_grad's constraints (I1-I7, C1-C5) on the operands' types (no data is
    read); returns ``(operand, scale, mean, variance, grad_output, feature_index,
    epsilon)``, the tensors converted, the attributes parsed."""
    op = "batch_norm_grad"
    names = ["operand", "scale", "mean", "variance", "grad_output"]
    x, s, m, v, g = ts = operands(op, operand, scale, mean, variance, grad_output, names=names)
    fi, eps = _check_inputs(op, ts, names, epsilon, feature_index)
    check(
        g.shape == x.shape,
        op,
        "C3",
        lambda: f"operand and grad_output must have the same shape, got {tstr(x)} and {tstr(g)}",
    )
    for name, t in (("mean", m), ("variance", v)):
        check(
            t.shape == s.shape,
            op,
            "C4",
            lambda: (
                f"scale, mean and variance must have the same shape, got scale "
                f"{tstr(s)} and {name} {tstr(t)}"
            ),
        )
    _feature_size(op, "C5", x, fi, s, "scale")
    return x, s, m, v, g, fi, eps


@batch_norm_grad.defvjp
def _batch_norm_grad_vjp(
    ct, out, operand, scale, mean, variance, grad_output, epsilon, feature_index
):
    """The vjp of batch_norm_grad's formula, in closed form. Per feature, with
    ``inv = 1/sqrt(variance + eps)``, ``k = scale inv``, ``c = x - mean``,
    ``r = k inv^2 / N``, the output cotangents ``a`` (grad_operand), ``b`` (grad_scale),
    ``c0`` (grad_offset) and the sums ``G = sum g``, ``S = sum g c``, ``A = sum a``,
    ``P = sum a c``, ``Q = sum a g``, ``u = b inv - r P``, ``T = Q - (G A + inv^2 S P) / N``:

    * grad_output: ``k a + u c + (c0 - k A / N)``
    * operand: ``u g - r S a``;  mean: ``r S A - G u`` (minus the operand's sum)
    * scale: ``inv T``;  variance: ``-1/2 inv^2 (k T + S (u - r P))``
    """
    need_x, need_s, need_m, need_v, need_g = (
        _needs(a) for a in (operand, scale, mean, variance, grad_output)
    )
    x, s, m, v, gy = (as_tensor(t) for t in (operand, scale, mean, variance, grad_output))
    fi, eps = feature_index, epsilon  # (kept parsed by the op)
    dt = x._dtype
    wt = _work_dtype(dt)
    a, b, c0 = (None if _is_zero(c) else _to(c, wt) for c in ct)
    none = (None,) * 7
    if a is None and b is None and c0 is None:
        return none
    x, s, m, v, gy = (_to(t, wt) for t in (x, s, m, v, gy))
    n = _count(x, fi)
    shape = x.shape

    def B(t):
        return _bcast(t, fi, shape)

    inv = _E.rsqrt(_E.add(v, eps))
    inv2 = _E.multiply(inv, inv)
    k = _E.multiply(s, inv)
    r = _E.divide(_E.multiply(k, inv2), n)
    c = _E.subtract(x, B(m))
    need_stats = need_x or need_m or need_s or need_v
    G = _fsum(gy, fi) if need_stats else None
    S = _fsum(_E.multiply(gy, c), fi) if need_stats else None
    A = _fsum(a, fi)
    P = _fsum(_mul(a, c), fi)
    u = _sub(_mul(b, inv), _mul(r, P))
    rS = _mul(r, S)
    d_g = d_x = d_m = d_s = d_v = None
    if need_g:
        d_g = _add(
            _add(_mul(B(k), a), _mul(c, B(u))),
            B(_sub(c0, _E.divide(_mul(k, A), n) if A is not None else None)),
        )
    if need_x:
        d_x = _sub(_mul(gy, B(u)), _mul(a, B(rS)))
    if need_m:
        d_m = _sub(_mul(rS, A), _mul(G, u))
    if need_s or need_v:
        T = None
        if a is not None:
            Q = _fsum(_E.multiply(a, gy), fi)
            T = _E.subtract(
                Q, _E.divide(_E.add(_E.multiply(G, A), _E.multiply(inv2, _E.multiply(S, P))), n)
            )
        d_s = _mul(inv, T) if need_s else None
        if need_v:
            inner = _add(_mul(k, T), _mul(S, _sub(u, _mul(r, P))))
            d_v = _mul(_E.multiply(inv2, -0.5), inner)
    return tuple(_to(t, dt) for t in (d_x, d_s, d_m, d_v, d_g)) + (None, None)


def _batch_norm_grad_impl(x, s, m, v, g, eps, fi):
    dt = x._dtype
    flat, plan, C, inner, n = _view(x, fi, _FUSED_GRAD_BYTES)
    gflat = _flat(g)
    mean = _vec64(m)
    out = _pool.empty(flat.shape, flat.dtype)  # (recycled: no page faults)
    if plan is None:  # one kernel: both sums and grad_operand, feature by feature
        sums = np.empty((2, C))  # (compiled code: no NumPy warnings to quiet)
        K.grad_features(flat, gflat, C, inner, mean, _vec64(v), _vec64(s), eps, out, sums)
        grad_scale, sum_g = from_compute(sums, dt)  # (one rounding for both)
        return (result(out.reshape(x.shape), dt), result(grad_scale, dt), result(sum_g, dt))
    psg, psgc = plan.partials(), plan.partials()
    sum_g, sum_gc = np.empty(C), np.empty(C)
    with _quiet():
        K.grad_sums(flat, gflat, C, inner, plan, mean, psg, psgc)
        K.merge_sums.serial(plan.parts, psg, sum_g)  # O(tiles): always serial
        K.merge_sums.serial(plan.parts, psgc, sum_gc)
        inv_std = 1.0 / np.sqrt(_vec64(v) + eps)  # 1 / stddev
        grad_scale = sum_gc * inv_std  # sum(g * xhat)
        k = _vec64(s) * inv_std  # scale / stddev
        # k * (g - mean(g) - xhat * mean(g * xhat)), xhat = (x - mean) * inv_std
        kc = k * inv_std * (grad_scale / n)
        K.grad_operand(flat, gflat, C, inner, plan, mean, sum_g / n, k, kc, out)
    return (result(out.reshape(x.shape), dt), result(grad_scale, dt), result(sum_g, dt))


def batch_norm_grad_reference(operand, scale, mean, variance, grad_output, epsilon, feature_index):
    """The spec's composition for batch_norm_grad (itself XLA's batchnorm_expander), in
    NumPy, in the arrays' own float dtype, with the spec's variable names: the oracle."""
    T = operand.dtype.type
    r = operand.ndim
    scale_bcast = _bcast_ref(scale, feature_index, r)
    centered_operand, variance_plus_epsilon, stddev, normalized_operand = _normalized_ref(
        operand, mean, variance, epsilon, feature_index
    )
    with _quiet():
        n = operand.size // operand.shape[feature_index] if operand.shape[feature_index] else 0
        elements_per_feature = T(n)
        i1 = grad_output * elements_per_feature
        i2 = _bcast_ref(_compute_sum_ref(grad_output, feature_index), feature_index, r)
        i3 = _bcast_ref(
            _compute_sum_ref(grad_output * centered_operand, feature_index), feature_index, r
        )
        i4 = i3 * centered_operand
        i5 = i4 / variance_plus_epsilon
        i6 = (i1 - i2) - i5
        grad_operand = scale_bcast / stddev / elements_per_feature * i6
        grad_scale = _compute_sum_ref(grad_output * normalized_operand, feature_index)
        grad_offset = _compute_sum_ref(grad_output, feature_index)
    return grad_operand, grad_scale, grad_offset
