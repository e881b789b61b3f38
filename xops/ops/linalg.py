"""Contractions: stablehlo.dot_general and XLA's legacy Dot.

Float types run on BLAS through NumPy's matmul (f32, f64, c64, c128; narrower floats
are computed in float32 and rounded once to the result type). Integer dots accumulate
exactly in 64-bit integers and wrap to the result type's width, so an i8 x i8 -> i32
dot never overflows in i8. i1 dots are OR-of-ANDs (add and multiply of i1).

``precision_config`` (DEFAULT, HIGH, HIGHEST) trades speed for precision on
accelerators only; on the CPU every value computes at full precision of the
accumulation type, so all three give the same result.

Gradients (jax.vjp convention: no conjugation for complex operands): each operand's
cotangent is a dot_general of the output cotangent with the other operand, contracting
over that operand's free dims, transposed back into the operand's dim order; with
``preferred_element_type`` the other operand is converted to the result type first and
the cotangent converted back to the operand's type. Integer dots have no gradient.
"""

import functools
import math

import numpy as np

from ..autodiff.tape import is_grad_enabled, keep, primitive
from ..dtypes import as_dtype
from ..tensor import Tensor
from ..limits import check_nbytes
from ..limits import config as _limits_config
from . import _blas
from ._core import SpecError, attr_ints, check, compute, operands, quiet, result, tstr
from .movement import transpose
from .convolution import _abs_max

__all__ = ["dot_general", "dot"]

_PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST")


def _accumulation_dtype(dt):
    if dt.kind == "bool":
        return np.dtype(bool)
    if dt.kind == "si":
        return np.dtype(np.int64)
    if dt.kind == "ui":
        return np.dtype(np.uint64)
    return dt.compute  # f32/f64/c64/c128 (narrow floats compute in f32)


@primitive("dot_general", quantized="dequantize")
def dot_general(
    lhs,
    rhs,
    lhs_batching_dimensions=(),
    rhs_batching_dimensions=(),
    lhs_contracting_dimensions=(),
    rhs_contracting_dimensions=(),
    precision_config=None,
    preferred_element_type=None,
):
    """stablehlo.dot_general: contract ``lhs`` and ``rhs`` over the contracting
    dimensions, batched over the batching dimensions (paired by position).

    The result's dims are the batch dims, then lhs's free dims, then rhs's free dims
    (C12). ``preferred_element_type`` sets the result element type (e.g. f32 for bf16
    operands, i32 for i8 operands): each operand converts to it before multiplying.

    >>> a = xo.tensor([[1, 2], [3, 4]])
    >>> xo.dot_general(a, a, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
    ... # [[7, 10], [15, 22]]
    xo.tensor([[ 7, 10],
               [15, 22]], i64[2,2])
    """
    op = "dot_general"
    x, y = operands(op, lhs, rhs, names=["lhs", "rhs"])
    attrs = (
        lhs_batching_dimensions,
        rhs_batching_dimensions,
        lhs_contracting_dimensions,
        rhs_contracting_dimensions,
    )
    key = _signature(x, y, attrs, precision_config, preferred_element_type)
    hit = _CHECKED.get(key) if key is not None else None
    if hit is not None and hit[0] is x._dtype and hit[1] is y._dtype:
        lb, rb, lc, rc, out_dt = hit[2]
    else:
        checked = dot_general_checks(x, y, *attrs, precision_config, preferred_element_type)
        if key is not None and len(_CHECKED) < _CHECKED_MAX:
            _CHECKED[key] = (x._dtype, y._dtype, checked)  # (holds the types: ids stay)
        lb, rb, lc, rc, out_dt = checked
    keep(
        op,
        lhs_batching_dimensions=list(lb),
        rhs_batching_dimensions=list(rb),
        lhs_contracting_dimensions=list(lc),
        rhs_contracting_dimensions=list(rc),
    )
    return result(_dot_general_impl(x, y, lb, rb, lc, rc, out_dt), out_dt)


# Validated signatures: dot_general's checks read only the operands' shapes and element
# types and the attributes, so a signature that passed them once passes again; its
# parsed attributes are reused (a training step repeats three or four signatures).
# Only the common spelling is keyed (lists of ints, no precision_config or
# preferred_element_type); anything else, and every failing call, runs the checks.
_CHECKED = {}
_CHECKED_MAX = 1024


def _signature(x, y, attrs, precision_config, preferred_element_type):
    if precision_config is not None or preferred_element_type is not None:
        return None
    for a in attrs:
        if type(a) not in (list, tuple) or not all(type(v) is int for v in a):
            return None
    return (id(x._dtype), id(y._dtype), x.shape, y.shape, *(tuple(a) for a in attrs))


def dot_general_checks(x, y, lb, rb, lc, rc, precision_config, preferred_element_type):
    """dot_general's constraints (C1-C14) on operands ``x``, ``y`` (Tensors on any
    device: only their types are read) and the dimension attributes (lhs/rhs batching,
    lhs/rhs contracting); returns those parsed and the result element type, ``(lb, rb,
    lc, rc, out_dt)``. The result's shape is x's batch dims, x's free dims, then y's
    free dims."""
    op = "dot_general"
    lb = attr_ints(op, "I3", "lhs_batching_dimensions", lb)
    rb = attr_ints(op, "I4", "rhs_batching_dimensions", rb)
    lc = attr_ints(op, "I5", "lhs_contracting_dimensions", lc)
    rc = attr_ints(op, "I6", "rhs_contracting_dimensions", rc)
    check(
        len(lb) == len(rb),
        op,
        "C1",
        lambda: (
            f"lhs_batching_dimensions {lb} and rhs_batching_dimensions {rb} must have the same size"
        ),
    )
    check(
        len(lc) == len(rc),
        op,
        "C2",
        lambda: (
            f"lhs_contracting_dimensions {lc} and "
            f"rhs_contracting_dimensions {rc} must have the same size"
        ),
    )
    check(
        len(set(lb + lc)) == len(lb + lc),
        op,
        "C3",
        lambda: f"lhs batching + contracting dimensions {lb + lc} must be unique",
    )
    check(
        len(set(rb + rc)) == len(rb + rc),
        op,
        "C4",
        lambda: f"rhs batching + contracting dimensions {rb + rc} must be unique",
    )
    for label, dims, t, side in (
        ("C5", lb, x, "lhs_batching"),
        ("C6", lc, x, "lhs_contracting"),
        ("C7", rb, y, "rhs_batching"),
        ("C8", rc, y, "rhs_contracting"),
    ):
        check(
            all(0 <= d < t.ndim for d in dims),
            op,
            label,
            lambda: f"{side}_dimensions {dims} must be in [0, {t.ndim}) for {tstr(t)}",
        )
    check(
        [x.shape[d] for d in lb] == [y.shape[d] for d in rb],
        op,
        "C9",
        lambda: f"batch dims differ: lhs {tstr(x)} dims {lb} vs rhs {tstr(y)} dims {rb}",
    )
    check(
        [x.shape[d] for d in lc] == [y.shape[d] for d in rc],
        op,
        "C10",
        lambda: f"contracting dims differ: lhs {tstr(x)} dims {lc} vs rhs {tstr(y)} dims {rc}",
    )
    if precision_config is not None:
        pc = [str(p).upper() for p in precision_config]
        check(
            len(pc) == 2 and all(p in _PRECISIONS for p in pc),
            op,
            "C11",
            lambda: f"precision_config must be 2 of {_PRECISIONS}, got {precision_config!r}",
        )
    check(
        x._dtype is y._dtype,
        op,
        "C13",
        lambda: f"lhs and rhs must have the same element type, got {tstr(x)} and {tstr(y)}",
    )
    out_dt = (
        x._dtype if preferred_element_type is None else as_dtype(preferred_element_type, op, "C12")
    )
    check(
        not out_dt.quantized,
        op,
        "C14",
        lambda: (
            f"a quantized result needs quantized lhs and rhs, got {tstr(x)} and "
            f"{tstr(y)} with preferred_element_type {out_dt.name}"
        ),
    )
    check(
        out_dt.kind == x._dtype.kind
        or (x._dtype.kind in ("si", "ui") and out_dt.kind in ("si", "ui"))
        or (x._dtype.kind == "float" and out_dt.kind == "float"),
        op,
        "C12",
        lambda: f"preferred_element_type {out_dt.name} cannot hold a dot of {x._dtype.name}",
    )
    return lb, rb, lc, rc, out_dt


@dot_general.defvjp
def _dot_general_vjp(g, out, lhs, rhs, lb, rb, lc, rc, precision_config, preferred_element_type):
    # (lb, rb, lc, rc: the dimension lists, kept parsed by the op as lists of ints)
    return _dot_general_transpose(g, lhs, rhs, lb, rb, lc, rc, precision_config)


def _dot_general_transpose(g, lhs, rhs, lb, rb, lc, rc, precision_config):
    """Cotangents of lhs and rhs (None where not needed); no conjugation (jax.vjp).

    lhs's: dot_general(g, rhs) batched over the batch dims and contracting g's rhs-free
    dims with rhs's free dims; its dims are then (batch, lhs free, rhs contracting in
    ascending order = the matching lhs contracting dims), transposed into lhs's order.
    rhs's is the mirror image. With preferred_element_type, g (of the result type) is
    contracted with the other operand converted to that type, and the cotangent is
    converted back to the operand's type (the transpose of the forward conversion).
    """
    need_l = isinstance(lhs, Tensor) and lhs.requires_grad
    need_r = isinstance(rhs, Tensor) and rhs.requires_grad
    x, y = operands("dot_general", lhs, rhs, names=["lhs", "rhs"])
    nb = len(lb)
    lf = [d for d in range(x.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(y.ndim) if d not in rb and d not in rc]
    g_batch = list(range(nb))
    g_lfree = list(range(nb, nb + len(lf)))
    g_rfree = list(range(nb + len(lf), nb + len(lf) + len(rf)))
    gl = gr = None
    if need_l:
        # tmp dims: batch (lb), lhs free (lf), then y's rc dims ascending -> lhs lc dims
        src = lb + lf + [lc[j] for j in sorted(range(len(rc)), key=rc.__getitem__)]
        gl = _contract(g, y, g_batch, rb, g_rfree, rf, precision_config, x._dtype)
        gl = _to_order(gl, src)
    if need_r:
        src = rb + rf + [rc[j] for j in sorted(range(len(lc)), key=lc.__getitem__)]
        gr = _contract(g, x, g_batch, lb, g_lfree, lf, precision_config, y._dtype)
        gr = _to_order(gr, src)
    return gl, gr


def _contract(g, t, gb, tb, gc, tc, precision_config, want):
    """dot_general(g, t) in g's element type, converted to ``want``."""
    from .conversion import convert

    if t._dtype is not g._dtype:
        t = convert(t, g._dtype)
    if (
        precision_config is None
        and not is_grad_enabled()
        and not _limits_config.check_finite
        and type(g._value) is np.ndarray
        and type(t._value) is np.ndarray
        and not g._dtype.quantized
    ):
        # outside create_graph, on the host: the op's own product without its checks,
        # which hold by construction (the dimensions come from the validated forward
        # call, g has its result's shape, t is in g's type); nothing is recorded either way
        out = result(_dot_general_impl(g, t, gb, tb, gc, tc, g._dtype), g._dtype)
    else:
        out = dot_general(g, t, gb, tb, gc, tc, precision_config=precision_config)
    return out if out._dtype is want else convert(out, want)


def _to_order(t, src):
    """Transpose ``t`` (whose dim i is operand dim src[i]) into the operand's dim order."""
    perm = sorted(range(len(src)), key=src.__getitem__)
    return t if perm == list(range(len(src))) else transpose(t, perm)


@functools.lru_cache(maxsize=1024)
def _layout(xshape, yshape, lb, rb, lc, rc):
    """(a's axes, a's (batch, m, k), b's axes, b's (batch, k, n), result shape) of the
    matmul that computes a dot_general of operands of these shapes (attributes as
    tuples: the result is cached per signature)."""
    lf = [d for d in range(len(xshape)) if d not in lb and d not in lc]
    rf = [d for d in range(len(yshape)) if d not in rb and d not in rc]
    bshape = [xshape[d] for d in lb]
    m = math.prod(xshape[d] for d in lf)
    n = math.prod(yshape[d] for d in rf)
    k = math.prod(xshape[d] for d in lc)
    nb = math.prod(bshape)
    out_shape = tuple(bshape + [xshape[d] for d in lf] + [yshape[d] for d in rf])
    return (*lb, *lf, *lc), (nb, m, k), (*rb, *rc, *rf), (nb, k, n), out_shape


def _dot_general_impl(x, y, lb, rb, lc, rc, out_dt):
    """Transpose to (batch, free, contracting) x (batch, contracting, free), matmul."""
    a_axes, a_shape, b_axes, b_shape, out_shape = _layout(
        x.shape, y.shape, tuple(lb), tuple(rb), tuple(lc), tuple(rc)
    )
    k = a_shape[2]
    acc = _accumulation_dtype(out_dt)
    check_nbytes("dot_general", out_shape, acc)
    a = _to_accumulation(x, out_dt, acc)
    b = _to_accumulation(y, out_dt, acc)
    a = np.transpose(a, a_axes).reshape(a_shape)
    b = np.transpose(b, b_axes).reshape(b_shape)
    with quiet():
        if acc.kind in "iu" and _abs_max(a) * _abs_max(b) * k < 2**53:
            # exact in float64 BLAS: every partial sum is an integer below 2**53
            out = _blas.matmul(a.astype(np.float64), b.astype(np.float64)).astype(acc)
        else:
            out = _blas.matmul(a, b)
    return out.reshape(out_shape)


def _to_accumulation(t, out_dt, acc):
    v = compute(t)
    if out_dt is not t._dtype and out_dt.kind == "float" and t._dtype.kind == "float":
        # convert each operand to the result type first (spec/reference semantics)
        from ..dtypes import from_compute, to_compute

        v = to_compute(from_compute(v, out_dt), out_dt)
    return v.astype(acc, copy=False)


@primitive("dot", quantized="dequantize", spec="xla")
def dot(lhs, rhs, precision_config=None, preferred_element_type=None):
    """XLA Dot (legacy): vector.vector -> scalar, matrix.vector -> vector,
    matrix.matrix -> matrix; contracts lhs's last dim with rhs's first.

    >>> xo.dot(xo.tensor([1.0, 2.0]), xo.tensor([3.0, 4.0]))   # 11
    xo.tensor(11., f32[])
    """
    x, y = operands("dot", lhs, rhs, names=["lhs", "rhs"])
    check(
        1 <= x.ndim <= 2 and 1 <= y.ndim <= 2,
        "dot",
        "I1",
        lambda: f"lhs and rhs must have rank 1 or 2, got {tstr(x)} and {tstr(y)}",
    )
    try:
        return dot_general(
            x,
            y,
            lhs_contracting_dimensions=[x.ndim - 1],
            rhs_contracting_dimensions=[0],
            precision_config=precision_config,
            preferred_element_type=preferred_element_type,
        )
    except SpecError as e:
        raise SpecError("dot", e.label, str(e).split(": ", 1)[1]) from None


@dot.defvjp
def _dot_vjp(g, out, lhs, rhs, precision_config, preferred_element_type):
    return _dot_general_transpose(
        g, lhs, rhs, [], [], [len(_shape(lhs)) - 1], [0], precision_config
    )


def _shape(a):
    return a.shape if isinstance(a, Tensor) else np.shape(a)
