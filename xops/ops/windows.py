"""Windows: stablehlo.reduce_window and stablehlo.select_and_scatter (XLA ReduceWindow,
SelectAndScatter). The window geometry they share (attributes, result shape C15, index
tables, the padded-input view the gradient rules use) is in
:mod:`xops.ops._window_geometry`.

Bodies, the two paths (a recognised body on a Numba kernel of
``xops.kernels.windows``, any other body vectorised over all windows at once),
element types and body promotion are those described in :mod:`xops.ops.reduction`.

Reduce-window padding and base-dilation holes hold the init values (not zeros), and
each counts as an element of its window. select_and_scatter never picks padding; a
window with no operand element (possible only with padding) scatters nothing (the
spec leaves it undefined, #731).

**Gradients** (besides the generic rule of :mod:`xops.ops.reduction`: any other body
is differentiated by re-running reduce_window's fold over window positions on the tape):

* reduce_window, add: the transpose of the windowing (g dilated by the strides,
  padded, summed over windows with the window dilations, then the padding and holes
  taken off); the init value gets sum(g * (1 + padding/hole positions of the window)).
* reduce_window, maximum/minimum: each window's g goes to its *first* extreme position
  in row-major order (ties are not split: select_and_scatter's convention, as JAX).
  Undilated windows with the identity init (-inf / +inf) use ``select_and_scatter(GE/LE,
  add)``; with base or window dilations (which JAX cannot differentiate for max), a
  non-identity init, or an init that needs a gradient, a running pick over the
  window positions of the padded input: padding and holes hold the init value and are
  positions too (their g goes to the init value), and the init value the fold starts
  from gets g where no position attains the result. A NaN result sends nothing back.
* select_and_scatter (scatter = add only): source gets g gathered at each window's
  selected position, init_value sum(g), the operand zeros (the selection is piecewise
  constant). Other scatter bodies have no rule (a SpecError names the body).
"""

import builtins
import functools
import math

import numpy as np

from .. import device as _device
from ..autodiff.helpers import _on, zeros_like as _zeros_like, zeros_on as _zeros_on
from ..autodiff.local import local_vjp
from ..autodiff.tape import is_grad_enabled, no_grad, primitive
from ..dtypes import as_dtype
from ..kernels import pool as _pool
from ..limits import config as _limits_config
from ..kernels import reduction as KR
from ..kernels import windows as KW
from ..tensor import Tensor, _wrap
from . import conversion as _C
from . import elementwise as _E
from . import movement as _M
from ._core import SpecError, _fast_scalar, bound_arguments, check, compute, operands, tstr
from ._window_checks import (
    _reduce_window_args,
    _select_and_scatter_args,
    reduce_window_checks,
    remembered_window,
    select_and_scatter_checks,
)
from ._window_geometry import (
    _canonical4,
    _extended,
    _gather_window,
    _Geometry,
    _result_shape,
    _runs,
    _table,
    _tile_planes,
    _tiling,
    _unplanes,
)
from ._bodies import Body, binary_op_name, call, describe, outputs
from .reduction import (
    _bcast,
    _body_call,
    _body_dtypes,
    _body_types,
    _compute_dtype,
    _contig,
    _fold_reference,
    _from_kernel,
    _full,
    _HOST_FLOATS,
    _inits,
    _kernel_plan,
    _kernel_scalar,
    _narrow,
    _needs,
    _pack,
    _promote,
    _promoted,
    _readonly,
    _single_or_tuple,
    _sum,
    _tensors,
    _to_kernel,
    _variadic,
    _widen,
    _zero_entries,
)

__all__ = ["reduce_window", "select_and_scatter"]


# ---------------------------------------------------------------------------------------
# Windows: the per-geometry plan
# ---------------------------------------------------------------------------------------


class _Plan:
    """Everything about a window geometry that does not depend on the values: the
    result shape, the index tables, their canonical rank-4 form (None past rank 4),
    the tile sizes (None unless the windows tile the last two dims), the affine runs of
    the last dim's table and the covering ranges (for the general kernels). Built once
    per geometry (:func:`_plan`): a pooling layer calls with the same one every step.
    Nothing here is ever written to."""

    __slots__ = ("out", "tables", "canon", "tiles", "_runs", "_cover")

    def __init__(self, op, shape, wd, ws, bd, wdl, pad):
        self.out = _result_shape(shape, wd, ws, bd, wdl, pad)
        self.tables = [
            _table(nd, w, s, b, d, p[0], o, op)
            for nd, w, s, b, d, p, o in zip(shape, wd, ws, bd, wdl, pad, self.out)
        ]
        self.canon = _canonical4(self.tables, shape, self.out)
        self.tiles = _tiling(self.canon) if self.canon is not None else None
        self._runs = self._cover = None

    def runs(self):
        """_runs of the canonical last dim's table (reduce_window4)."""
        if self._runs is None:
            self._runs = _runs(self.canon[0][3])
        return self._runs

    def cover(self):
        """_covering of the canonical dims 0-2 (scatter_selected4)."""
        if self._cover is None:
            tables, in4, _ = self.canon
            self._cover = [_covering(t, n) for t, n in zip(tables[:3], in4[:3])]
        return self._cover


@functools.lru_cache(maxsize=256)
def _cached_plan(op, shape, wd, ws, bd, wdl, pad):
    return _Plan(op, shape, wd, ws, bd, wdl, pad)


def _plan(op, shape, wd, ws, bd, wdl, pad):
    """The :class:`_Plan` of a geometry (attributes as parsed: lists of ints, padding
    pairs), from a small cache keyed on them."""
    return _cached_plan(
        op,
        builtins.tuple(shape),
        builtins.tuple(wd),
        builtins.tuple(ws),
        builtins.tuple(bd),
        builtins.tuple(wdl),
        builtins.tuple(pad),
    )


# ---------------------------------------------------------------------------------------
# reduce_window
# ---------------------------------------------------------------------------------------


@primitive("reduce_window", quantized_params=("inputs", "init_values"), body_params=("body",))
def reduce_window(
    inputs,
    init_values,
    window_dimensions,
    window_strides=None,
    base_dilations=None,
    window_dilations=None,
    padding=None,
    *,
    body,
):
    """stablehlo.reduce_window: reduce each window of ``inputs`` with ``body``.

    The inputs are padded (``padding``: (low, high) per dim, negative allowed) and
    base-dilated with the *init values*; windows of ``window_dimensions``, dilated by
    ``window_dilations``, start every ``window_strides`` (C15 gives the result shape;
    0 where the window exceeds the padded input). Defaults: strides and dilations 1,
    padding 0. ``body`` is required and keyword-only (the spec lists it last, after
    attributes that have defaults here). Variadic like :func:`reduce`.

    >>> x = xo.tensor([[1, 2], [3, 4], [5, 6]])
    >>> xo.reduce_window(x, 0, [2, 1], [4, 1], [2, 1], [3, 1], [[2, 1], [0, 0]], body=xo.add)
    ... # [[0, 0], [3, 4]]
    xo.tensor([[0, 0],
               [3, 4]], i64[2,2])
    """
    op = "reduce_window"
    xs, inits, window, out_shape = reduce_window_checks(
        inputs,
        init_values,
        window_dimensions,
        window_strides,
        base_dilations,
        window_dilations,
        padding,
        body,
    )
    n = len(xs)
    geometry = _plan(op, xs[0].shape, *window)
    tables = geometry.tables

    name = binary_op_name(body) if n == 1 else None
    plan = _kernel_plan(xs[0]._dtype, name) if name else None
    if plan is not None:
        if geometry.canon is not None and xs[0].size:
            return _reduce_window_fast(xs[0], inits[0], geometry, out_shape, *plan)
        # rank > 4 after merging, or an empty operand whose windows hold padding only
        # (no kernel layout has a zero-size input row): the same semantics (compute
        # type, one rounding) on the generic path, then one rounding
        cdt = _compute_dtype(xs[0]._dtype)
        (out,) = _reduce_window_generic(
            [_widen(xs[0], cdt)], [_widen(inits[0], cdt)], tables, out_shape, body, [cdt]
        )
        return _narrow(out, xs[0]._dtype)
    dts = _body_types(op, "C13", body, inits, xs)
    outs = _reduce_window_generic(
        _promoted(xs, dts), _promoted(inits, dts), tables, out_shape, body, dts
    )
    return _single_or_tuple(outs)


_WINDOW_NAMES = (
    "inputs",
    "init_values",
    "window_dimensions",
    "window_strides",
    "base_dilations",
    "window_dilations",
    "padding",
)


def _fast_reduce_window(args, kwargs=None, grad=False):
    """reduce_window's dispatch fast path (xops.autodiff.tape.primitive, keyword calls
    included: ``body`` is keyword-only): one CPU f32 / f64 Tensor (no gradient unless
    ``grad``), a Python float init value, a body with a kernel (max, min, add, ...) and a
    window signature that passed the checks before (``_window_checks._CHECKED``, keyed
    with the size limit) go straight to the kernel with the remembered attributes.
    Returns (result, the parsed attributes the op keeps for its rule), or None: the full
    path, with every check."""
    values = list(args) + [None] * (len(_WINDOW_NAMES) - len(args))
    body = None
    for k, v in (kwargs or {}).items():
        if k == "body":
            body = v
            continue
        i = _WINDOW_NAMES.index(k) if k in _WINDOW_NAMES else -1
        if i < len(args):  # (unknown, or given twice: the full path's error)
            return None
        values[i] = v
    x, init = values[0], values[1]
    if body is None or len(values) != len(_WINDOW_NAMES) or type(init) is not float:
        return None
    if type(x) is not Tensor or type(x._value) is not np.ndarray or x._dtype.np not in _HOST_FLOATS:
        return None
    if x._dtype.quantized or (x.requires_grad and not grad) or not x.size:
        return None
    hit = remembered_window(x.shape, [x._dtype], values[2:])[1]
    if hit is None:
        return None
    name = binary_op_name(body)
    plan = _kernel_plan(x._dtype, name) if name else None
    iv = _fast_scalar(init, x._dtype)
    if plan is None or iv is None:
        return None
    window = [list(a) for a in hit[1]]
    geometry = _plan("reduce_window", x.shape, *window)
    if geometry.canon is None:
        return None
    out = _reduce_window_fast(x, _wrap(iv, x._dtype), geometry, list(hit[2]), *plan)
    wd, ws, bd, wdl, pad = window
    kept = dict(
        window_dimensions=wd,
        window_strides=ws,
        base_dilations=bd,
        window_dilations=wdl,
        padding=pad,
    )
    return out, kept


def _fast_reduce_window_plain(args, kwargs=None):
    done = _fast_reduce_window(args, kwargs)
    return None if done is None else done[0]


def _fast_reduce_window_grad(args, kwargs=None):
    return _fast_reduce_window(args, kwargs, True)


reduce_window._fast = _fast_reduce_window_plain
reduce_window._fast_grad = _fast_reduce_window_grad
reduce_window._fast_kwargs = True


def _identity_of(name, t):
    """Whether 0-d float ``t`` holds the identity of max (-inf) / min (+inf)."""
    v = np.asarray(compute(t)).reshape(())[()]
    return bool(v == (-np.inf if name == "maximum" else np.inf))


def _nan_masked(out, g):
    """``g`` where ``out`` is not NaN, 0 where it is: ``select(compare(out, out, EQ), g,
    0)``; off the host and outside ``create_graph``, one fused device kernel (the same
    values) where the device has one (``device._updates`` "nan_mask")."""
    if not is_grad_enabled():
        fused = _device._updates.get((out.device.kind, "nan_mask"))
        if fused is not None and g._dtype == out._dtype and g.shape == out.shape:
            d = fused(out._value, g._value)
            if d is not None:
                return _wrap(d, g._dtype)
    return _E.select(_E.compare(out, out, "EQ"), g, _zeros_like(out))


def _has_nan(v):
    """Whether any element of the float array ``v`` is NaN: its minimum, which NumPy
    propagates NaN into (one vectorised pass: 6 us on 100k float32, where the pairwise
    sum this used to take cost 18), or for other float types its sum (NaN for a NaN,
    and maybe where none is: an inf - inf, for which the caller's mask is exact too)."""
    if v.dtype in _HOST_FLOATS:
        return bool(np.isnan(np.min(v))) if v.size else False
    with np.errstate(all="ignore"):  # (an overflow or inf - inf warns nothing)
        return bool(np.isnan(np.sum(v, dtype=np.float64)))


def _pooling_vjp(g, out, x, init, attributes):
    """The rule's common case without its parsing: one f32 / f64 operand, a Python
    float init that is max's -inf or min's +inf, undilated windows (the op keeps its
    attributes parsed: lists of ints, padding pairs). None for anything else."""
    *window, body = attributes
    name = binary_op_name(body)
    if name not in ("maximum", "minimum") or x._dtype.np not in _HOST_FLOATS:
        return None
    if init != (-math.inf if name == "maximum" else math.inf):
        return None
    geo = _geometry(x.shape, *window)
    if geo is None or any(b != 1 for b in geo.bd) or any(d != 1 for d in geo.wdl):
        return None
    if math.prod(geo.out) == 0:
        return None
    return _pool_vjp(g, out, x, geo, name), None, None, None, None, None, None, None


@functools.lru_cache(maxsize=256)
def _cached_geometry(shape, wd, ws, bd, wdl, pad):
    return _Geometry(shape, list(wd), list(ws), list(bd), list(wdl), [list(p) for p in pad])


def _geometry(shape, wd, ws, bd, wdl, pad):
    """``_Geometry`` of parsed window attributes, kept per geometry (never written to),
    or None where an attribute is not the parsed form (lists of ints, padding pairs)."""
    try:
        key = [builtins.tuple(a) for a in (shape, wd, ws, bd, wdl)]
        return _cached_geometry(*key, builtins.tuple(builtins.tuple(p) for p in pad))
    except TypeError:  # (unhashable: not the parsed form)
        return None


def _pool_vjp(g, out, x, geo, name):
    """Max / min pooling's operand cotangent (None where x needs none): a NaN result
    sends nothing back (the common case, no NaN: g as it is; a sum is NaN if any term
    is, or inf - inf: then the exact mask, which is the same; off the CPU always the
    mask, so that no data is read back to the host). float32/float64 sum in their own
    type (an overflow to inf can only add an inf - inf: the mask again), the narrow
    types in float64."""
    if not _needs(x):
        return None
    host = out.device.kind == "cpu"
    nan = not host or _has_nan(compute(out))
    gm = _nan_masked(out, g) if nan else g
    return _pool_grad(x, gm, geo, "GE" if name == "maximum" else "LE")


def _pool_grad(x, g, geo, direction):
    """``select_and_scatter(x, g, 0, window, select=compare(direction), scatter=add)``:
    a max / min pooling's operand cotangent. Outside ``create_graph``, for host
    operands, select_and_scatter's own kernel path without its checks, which hold by
    construction here (g has the windows' shape and x's type, the window attributes
    passed reduce_window's checks): the same result, nothing recorded either way."""
    if (
        not is_grad_enabled()
        and not _limits_config.check_finite
        and type(x._value) is np.ndarray
        and type(g._value) is np.ndarray
        and g._dtype is x._dtype
    ):
        plan = _kernel_plan(x._dtype, "add")
        ones = [1] * x.ndim
        pad = [builtins.tuple(p) for p in geo.pad]
        geometry = _plan("select_and_scatter", x.shape, geo.wd, geo.ws, ones, ones, pad)
        fits = geometry.canon is not None and builtins.tuple(geometry.out) == g.shape
        if plan is not None and fits:
            zero = _wrap(np.zeros((), x._dtype.np), x._dtype)
            code = KR.SELECT_CODES[direction]
            return _select_and_scatter_fast(x, g, zero, geometry, code, *plan)
    return select_and_scatter(
        x,
        g,
        0.0,  # (a weak scalar: x's element type, on x's device)
        geo.wd,
        geo.ws,
        geo.pad,
        select=Body.compare(direction),
        scatter=_E.add,
    )


@reduce_window.defvjp
def _reduce_window_vjp(g, out, inputs, init_values, *attributes):
    """add: the transpose of the windowing (g dilated by the strides, padded, summed over
    windows of the same size and window dilations -- a sum, so no reversal is needed --,
    then the padding and base-dilation holes taken away again); the init value gets
    sum(g * (1 + padding/hole positions of the window)), as the fold starts from it and
    every padding position holds it.

    maximum/minimum: each window's g goes to its *first* extreme position in row-major
    order (ties are not split: JAX's and XLA's select_and_scatter convention).
    Undilated windows with the identity init (-inf / +inf) use select_and_scatter(GE/LE,
    add). Otherwise (base or window dilations, another init, an init that needs a
    gradient) a running pick over the window positions of the padded input finds each
    window's position, and g goes back through the strided slices' transposes: padding
    and holes hold the init value and are positions too (g at them goes to the init
    value), and the init value the fold starts from gets g where no position attains the
    result (positions win ties with it). A NaN result sends nothing back.

    Any other body (multiply, variadic): the vjp of the generic fold re-run on the tape."""
    op = "reduce_window"
    if type(inputs) is Tensor and type(init_values) is float:  # (max pooling's spelling)
        done = _pooling_vjp(g, out, inputs, init_values, attributes)
        if done is not None:
            return done
    xs = _variadic(op, inputs)
    inits = _inits(op, "I2", init_values, xs)
    # (the window attributes are kept parsed by the op: lists of ints, padding pairs)
    *window, body = attributes
    geo = _Geometry(xs[0].shape, *window)
    n = len(xs)
    name = binary_op_name(body) if n == 1 else None
    x, init = xs[0], inits[0]
    gs = list(g) if n > 1 else [g]
    if math.prod(geo.out) == 0:
        cts = _zero_entries([None] * (2 * n), xs + inits)
    elif name == "add":
        cts = _reduce_window_add_vjp(g, x, init, geo)
    elif name in ("maximum", "minimum") and x._dtype.kind == "float":
        plain = all(b == 1 for b in geo.bd) and all(d == 1 for d in geo.wdl)
        if plain and not _needs(init) and _identity_of(name, init):
            cts = [_pool_vjp(g, out, x, geo, name), None]
        else:
            cts = _reduce_window_choice_vjp(g, out, x, init, geo, name)
    else:
        inits = [_on(i, x) for i in inits]  # (a CUDA call's weak scalars: on x's device)
        dts = _body_dtypes(op, "C13", body, inits, xs)

        def fold(*ts):
            return window_fold(ts[:n], ts[n:], geo, body, dts)

        cts = local_vjp(op, body, fold, xs + inits, gs)
    return (
        _pack(inputs, cts[:n]),
        _pack(init_values, cts[n:], True),
        None,
        None,
        None,
        None,
        None,
        None,
    )


def window_fold(xs, inits, geo, body, dts, checked=False):
    """_reduce_window_generic written with xops ops (so it records, and runs on any
    device): each input padded and base-dilated with its init value, the values at one
    window position for all windows a strided slice of it (``geo``: a _Geometry), folded
    left to right from the init values in row-major window order. Returns the list of
    results. ``checked``: the body's results are checked as the forward path checks them
    (the CUDA kernel's generic bodies run this fold as their forward path)."""
    op = "reduce_window"
    xps = [geo.padded(_promote(t, dt), _promote(i, dt)) for t, i, dt in zip(xs, inits, dts)]
    acc = [_bcast(_promote(i, dt), geo.out) for i, dt in zip(inits, dts)]
    want = dts if checked else None
    for w in geo.positions():
        args = acc + [geo.slot(xp, w) for xp in xps]
        acc = _body_call(op, "C13", "body", body, args, geo.out, want)
    return acc


def _reduce_window_add_vjp(g, x, init, geo):
    dt = x._dtype
    gx = gi = None
    if _needs(x):
        extent = [(w - 1) * d for w, d in zip(geo.wd, geo.wdl)]
        dilated = [(n - 1) * s + 1 for n, s in zip(geo.out, geo.ws)]
        gd = (
            g
            if all(s == 1 for s in geo.ws)
            else _M.pad(
                g, _on(_M.constant(0, dt), g), [0] * g.ndim, [0] * g.ndim, [s - 1 for s in geo.ws]
            )
        )
        gxp = reduce_window(
            gd,
            _on(_M.constant(0, dt), g),
            geo.wd,
            None,
            None,
            geo.wdl,
            [(e, p - k) for e, p, k in zip(extent, geo.size, dilated)],
            body=_E.add,
        )
        gx = geo.unpad(gxp, dt)
    if _needs(init):
        # the fold starts from init once, and each padding / hole position holds it
        valid = reduce_window(
            _M.broadcast_in_dim(_M.constant(1, "i64"), [], list(x.shape)),
            _M.constant(0, "i64"),
            geo.wd,
            geo.ws,
            geo.bd,
            geo.wdl,
            geo.pad,
            body=_E.add,
        )  # elements per window
        times = _E.subtract(1 + math.prod(geo.wd), valid)
        gi = _sum(_E.multiply(g, _C.convert(times, dt)))
    return [gx, gi]


def _reduce_window_choice_vjp(g, out, x, init, geo, name):
    """max/min through a running pick over the window positions (see _reduce_window_vjp):
    the pick is piecewise constant, so g goes back linearly (and records)."""
    dt = x._dtype
    better = "GT" if name == "maximum" else "LT"
    positions = geo.positions()
    with no_grad():
        init_x = _on(init, x)  # (a weak scalar's init value: on x's device)
        xp = geo.padded(x, init_x)
        best = _bcast(init_x, geo.out)
        arg = _bcast(_on(_M.constant(-1, "i64"), x), geo.out)  # -1: the init value's
        for k, w in enumerate(positions):
            v = geo.slot(xp, w)
            take = _E.or_(
                _E.compare(v, best, better),
                _E.and_(_E.compare(arg, -1, "EQ"), _E.compare(v, best, "EQ")),
            )
            best = _E.select(take, v, best)
            arg = _E.select(take, k, arg)
        arg = _E.select(_E.compare(best, out, "EQ"), arg, -2)  # NaN results: nobody
    zeros = _zeros_like(g)
    gxp = None
    for k, w in enumerate(positions):
        term = geo.slot_t(_E.select(_E.compare(arg, k, "EQ"), g, zeros), w)
        gxp = term if gxp is None else _E.add(gxp, term)
    gx = geo.unpad(gxp, dt) if _needs(x) else None
    gi = None
    if _needs(init):
        holes = geo.padded(_zeros_on(x.shape, dt, x), _const_on(1, dt, x))  # 1: padding, holes
        gi = _E.add(
            _sum(_E.select(_E.compare(arg, -1, "EQ"), g, zeros)), _sum(_E.multiply(gxp, holes))
        )
    return [gx, gi]


def _reduce_window_fast(x, init, geometry, out_shape, kdt, code):
    tables, in4, out4 = geometry.canon
    dt = x._dtype
    if math.prod(out4) == 0:
        return _wrap(_full(out_shape, init), dt)
    iv = _kernel_scalar(init, kdt)
    tiles = geometry.tiles
    if tiles is not None:
        a, perm = _tile_planes(x, kdt, in4)
        out = _pool.empty((a.shape[0], out4[2], out4[3]), kdt)
        if tiles[0] == tiles[1] == 2 and code in KW.REDUCE_WINDOW_TILES22 and kdt.kind == "f":
            KW.REDUCE_WINDOW_TILES22[code](x.size, a, out, iv)  # SIMD rows of windows
        else:
            KW.REDUCE_WINDOW_TILES[code](x.size, a, out, *tiles, iv)
        return _from_kernel(_unplanes(out, out_shape, perm), dt)
    a = _to_kernel(x, kdt).reshape(-1, in4[3])
    out = _pool.empty((math.prod(out4[:3]), out4[3]), kdt)
    KW.REDUCE_WINDOW4[code](
        out.size * math.prod(t.shape[0] for t in tables),
        a,
        tuple(in4),
        out,
        tuple(out4),
        *tables,
        geometry.runs(),
        iv,
    )
    return _from_kernel(out.reshape(out_shape), dt)


def _reduce_window_generic(xs, inits, tables, out_shape, body, dts):
    """Any body, vectorised: the values at one window position, for all windows at
    once, are gathered (the init values standing in for padding and holes), and folded
    left to right from the init values, position by position in row-major order."""
    acc = [_full(out_shape, i) for i in inits]
    if math.prod(out_shape) == 0:
        return [_wrap(a, dt) for a, dt in zip(acc, dts)]
    exts = [_extended(x._value, i._value) for x, i in zip(xs, inits)]
    for w_index in np.ndindex(*[t.shape[0] for t in tables]):
        vals = [_gather_window(e, tables, w_index) for e in exts]
        acc = call(
            "reduce_window", "C13", "body", body, _tensors(acc + vals, dts * 2), dts, out_shape
        )
    return [_wrap(_contig(a), dt) for a, dt in zip(acc, dts)]


def _pad_reference(x, fill, low, high, interior):
    """The spec's pad (value-filled, negative edges allowed) on a holder array."""
    shape = [
        lo + n + builtins.max(n - 1, 0) * it + hi
        for n, lo, hi, it in zip(x.shape, low, high, interior)
    ]
    out = _full([builtins.max(s, 0) for s in shape], fill)
    for index in np.ndindex(*x.shape):
        j = [lo + i * (it + 1) for i, lo, it in zip(index, low, interior)]
        if all(0 <= v < s for v, s in zip(j, shape)):
            out[builtins.tuple(j)] = x[index]
    return out


def reduce_window_reference(*args, **kwargs):
    """The spec's reduce_window, index by index (the test oracle; takes reduce_window's
    arguments): pad and base-dilate with the init values, slice each window, fold its
    elements in row-major order from the init values by calling ``body`` on 0-d
    tensors."""
    a = bound_arguments(reduce_window, args, kwargs)
    xs, inits, window = _reduce_window_args(*a.values())
    window_dimensions, window_strides, base_dilations, window_dilations, padding = window
    body = a["body"]
    dts = _body_types("reduce_window", "C13", body, inits, xs)
    xs = _promoted(xs, dts)
    inits = _promoted(inits, dts)
    padded_inputs = [
        _pad_reference(
            x._value,
            i,
            [p[0] for p in padding],
            [p[1] for p in padding],
            [b - 1 for b in base_dilations],
        )
        for x, i in zip(xs, inits)
    ]
    shape = _result_shape(xs[0].shape, *window)
    results = [np.empty(shape, dt.np) for dt in dts]
    for result_index in np.ndindex(*shape):
        window_start = [i * s for i, s in zip(result_index, window_strides)]
        window_end = [
            st + (w - 1) * d + 1
            for st, w, d in zip(window_start, window_dimensions, window_dilations)
        ]
        index = builtins.tuple(
            builtins.slice(st, en, d)
            for st, en, d in zip(window_start, window_end, window_dilations)
        )
        windows = [p[index] for p in padded_inputs]
        values = _fold_reference("reduce_window", "C13", body, inits, windows, dts)
        for res, v in zip(results, values):
            res[result_index] = v
    return _single_or_tuple([_wrap(r, dt) for r, dt in zip(results, dts)])


# ---------------------------------------------------------------------------------------
# select_and_scatter
# ---------------------------------------------------------------------------------------


@primitive(
    "select_and_scatter",
    quantized_params=("operand", "source", "init_value"),
    body_params=("select", "scatter"),
)
def select_and_scatter(
    operand,
    source,
    init_value,
    window_dimensions=None,
    window_strides=None,
    padding=None,
    *,
    select,
    scatter,
):
    """stablehlo.select_and_scatter: in each window of ``operand`` pick one element with
    ``select``, and combine ``source``'s value for that window into the result there
    with ``scatter``; the result starts at ``init_value`` everywhere.

    Within a window the elements are visited in row-major order; the first is the
    pick, and a later one replaces it when ``select(pick, candidate)`` is false (so
    with ``compare(a, b, "GE")`` the first maximum wins ties). Padding is never picked.
    Each result position combines the source values aimed at it in ascending window
    order, from the init value (overlapping windows accumulate). ``source`` has one
    element per window (C2). Defaults: window 1, strides 1, padding 0 (no dilations).
    ``select`` and ``scatter`` are required keywords. Max-pooling's gradient is
    ``select_and_scatter(x, g, 0, ..., select=GE-compare, scatter=xo.add)``.

    >>> x = xo.tensor([[1, 5], [2, 5], [3, 6], [4, 4]])
    >>> src = xo.tensor([[5, 6], [7, 8]])
    >>> xo.select_and_scatter(x, src, 0, [3, 1], [2, 1], [[0, 1], [0, 0]],
    ...                       select=lambda a, b: xo.compare(a, b, "GE"), scatter=xo.add)
    ... # [[0, 0], [0, 0], [5, 14], [7, 0]]
    xo.tensor([[ 0,  0],
               [ 0,  0],
               [ 5, 14],
               [ 7,  0]], i64[4,2])
    """
    op = "select_and_scatter"
    x, src, init, (wd, ws, pad), direction = select_and_scatter_checks(
        operand, source, init_value, window_dimensions, window_strides, padding, select, scatter
    )
    nwin = list(src.shape)
    rank = x.ndim
    geometry = _plan(op, x.shape, wd, ws, [1] * rank, [1] * rank, pad)

    name = binary_op_name(scatter)
    plan = _kernel_plan(x._dtype, name) if name else None
    if direction in KR.SELECT_CODES and plan is not None and x._dtype.kind != "bool":
        if geometry.canon is not None:
            code = KR.SELECT_CODES[direction]
            return _select_and_scatter_fast(x, src, init, geometry, code, *plan)
    _check_select(op, select, init)
    (dt,) = _body_types(op, "C10", scatter, [init], [x], what="scatter")
    sel = _select_generic(x, geometry.tables, nwin, select)
    return _scatter_generic(x.shape, _promote(src, dt), _promote(init, dt), sel, scatter, dt)


@select_and_scatter.defvjp
def _select_and_scatter_vjp(
    g, out, operand, source, init_value, window_dimensions, window_strides, padding, select, scatter
):
    """With the add scatter (max pooling's gradient) the result is init + a linear
    scatter of source: source gets g gathered at each window's selected position
    ("select and gather": the same running select, in xops ops), init_value gets sum(g)
    (every result position starts from it once), and the operand gets zeros (the
    selection is piecewise constant). Other scatter bodies have no rule."""
    op = "select_and_scatter"
    x, src = operands(op, operand, source, names=["operand", "source"])
    (init,) = _inits(op, "I3", [init_value], [x], name="init_value")
    if (_needs(source) or _needs(init_value)) and binary_op_name(scatter) != "add":
        raise SpecError(
            op,
            "grad",
            f"no gradient for the scatter body {describe(scatter)}: "
            f"only add (max pooling's gradient) is differentiable",
        )
    rank = x.ndim
    # (the window attributes are kept parsed by the op: lists of ints, padding pairs)
    geo = _Geometry(x.shape, window_dimensions, window_strides, [1] * rank, [1] * rank, padding)
    go = _zeros_on(x.shape, x._dtype, x) if _needs(operand) else None
    gs = _select_and_gather(g, x, init, geo, select) if _needs(source) else None
    gi = _sum(g) if _needs(init_value) else None
    return go, gs, gi, None, None, None, None, None


def _select_and_gather(g, x, init, geo, select_fn):
    """Per window, g at the operand position ``select_fn`` picks (the forward's running
    select over the window positions in row-major order; padding never picked; a window
    with no operand element gets 0)."""
    op = "select_and_scatter"
    dt = g._dtype
    zeros = _zeros_on(geo.out, dt, g)
    if math.prod(geo.out) == 0:
        return zeros
    positions = geo.positions()
    with no_grad():
        xp = geo.padded(x, _on(init, x))
        valid = geo.padded(
            _M.broadcast_in_dim(_const_on(True, "i1", x), [], list(x.shape)),
            _const_on(False, "i1", x),
        )
        pick = geo.slot(xp, positions[0])
        arg = _bcast(_const_on(-1, "i64", x), geo.out)
        for k, w in enumerate(positions):
            v = geo.slot(xp, w)
            (keep,) = outputs(op, "C9", "select", select_fn(pick, v), 1)
            replace = _E.and_(
                geo.slot(valid, w),
                _E.or_(_E.compare(arg, -1, "EQ"), _E.not_(_bcast(keep, geo.out))),
            )
            pick = _E.select(replace, v, pick)
            arg = _E.select(replace, k, arg)
    gp = geo.padded(g, _const_on(0, dt, g))
    gs = None
    for k, w in enumerate(positions):
        term = _E.select(_E.compare(arg, k, "EQ"), geo.slot(gp, w), zeros)
        gs = term if gs is None else _E.add(gs, term)
    return gs


def _const_on(value, dt, like):
    """The 0-d constant ``value`` of element type ``dt`` on ``like``'s device."""
    return _on(_M.constant(value, dt), like)


def _check_select(op, select, init):
    (out,) = outputs(op, "C9", "select", select(init, init), 1)
    check(
        out._dtype.kind == "bool" and out.ndim == 0,
        op,
        "C9",
        lambda: f"select must map two 0-d {init._dtype.name} values to a 0-d i1, got {tstr(out)}",
    )


def _covering(table, n):
    """c[p] = [first, last + 1): the windows whose elements include index p along one
    dim, from its (window, window-index) table ([0, 0) where none does)."""
    w, o = np.nonzero(table >= 0)
    p = table[w, o]
    first = np.full(n, np.iinfo(np.int64).max, np.int64)
    last = np.full(n, -1, np.int64)
    np.minimum.at(first, p, o)
    np.maximum.at(last, p, o)
    first = np.where(last < 0, 0, first)
    return _contig(np.stack([first, last + 1], 1))


def _select_and_scatter_fast(x, src, init, geometry, sel_code, kdt, code):
    """Recognised select and scatter: pick per window (output-parallel), then each
    result row gathers the source values of the windows that picked in it
    (owner-computes); both kernels in xops.kernels.windows. Windows that tile the last
    two dims without overlap (max pooling's gradient) take one fused pass instead."""
    tables, in4, out4 = geometry.canon
    dt = x._dtype
    if math.prod(out4) == 0 or x.size == 0:
        return _wrap(_full(x.shape, init), dt)
    iv = _kernel_scalar(init, kdt)
    tiles = geometry.tiles
    if tiles is not None:  # windows do not overlap: one fused pass
        a, perm = _tile_planes(x, kdt, in4)
        sv = compute(src)
        if perm is not None:  # the source's planes in the operand's order
            sv = np.transpose(sv, perm)
        s = _readonly(_contig(sv, kdt)).reshape(-1, out4[2], out4[3])
        out = _pool.empty(a.shape, kdt)
        KW.SELECT_SCATTER_TILES[sel_code, code](out.size, a, s, out, *tiles, iv)
        return _from_kernel(_unplanes(out, x.shape, perm), dt)
    a = _to_kernel(x, kdt).reshape(-1, in4[3])
    s = _to_kernel(src, kdt).reshape(-1, out4[3])
    sel = np.empty((math.prod(out4[:3]), out4[3]), np.int64)
    KW.SELECT_WINDOWS4[sel_code](
        sel.size * math.prod(t.shape[0] for t in tables),
        a,
        tuple(in4),
        sel,
        tuple(out4),
        *tables,
        iv,
    )
    cover = geometry.cover()
    out = _pool.empty(math.prod(in4), kdt)
    planes = in4[0] * in4[1]  # tasks: whole planes if there are many, else row blocks
    rows = in4[2] if planes >= 64 else builtins.max(1, -(-in4[2] * planes // 64))
    KW.SCATTER_SELECTED4[code](
        out.size, s, _readonly(sel), tuple(out4), out, tuple(in4), *cover, iv, rows
    )
    return _from_kernel(out.reshape(x.shape), dt)


def _select_generic(x, tables, nwin, select):
    """Any select body, vectorised: a running pick over all windows at once, one
    select call per window position (row-major). Returns, per window, the flat operand
    index picked, or -1 for a window with no operand element."""
    op = "select_and_scatter"
    flat_stride = [math.prod(x.shape[d + 1 :]) for d in range(x.ndim)]
    fill = x._value.reshape(-1)[0] if x.size else np.zeros((), x._dtype.np)
    ext = _extended(x._value, fill)
    pick = np.empty(nwin, x._dtype.np)
    pick[...] = fill
    best = np.full(nwin, -1, np.int64)
    i1 = as_dtype("i1")
    for w_index in np.ndindex(*[t.shape[0] for t in tables]):
        vals = _gather_window(ext, tables, w_index)
        cols = [t[w] for t, w in zip(tables, w_index)]
        valid = np.ones(nwin, bool)
        flat = np.zeros(nwin, np.int64)
        for d, c in enumerate(cols):
            shape = [1] * len(nwin)
            shape[d] = -1
            valid &= (c >= 0).reshape(shape)
            flat = flat + (np.maximum(c, 0) * flat_stride[d]).reshape(shape)
        (keep,) = call(
            op, "C9", "select", select, _tensors([pick, vals], [x._dtype] * 2), [i1], nwin
        )
        replace = valid & ((best < 0) | ~keep)
        pick = np.where(replace, vals, pick)
        best = np.where(replace, flat, best)
    return best


def _scatter_generic(shape, src, init, sel, scatter, dt):
    """Any scatter body, vectorised: source values are grouped by the position they
    picked (a stable sort keeps ascending window order inside a group); round k combines
    every group's k-th value into its position, one scatter call per round."""
    out = _full(math.prod(shape), init)
    sel = sel.reshape(-1)
    vals = src._value.reshape(-1)
    chosen = np.flatnonzero(sel >= 0)
    if chosen.size:
        order = chosen[np.argsort(sel[chosen], kind="stable")]
        targets = sel[order]
        starts = np.r_[0, np.flatnonzero(np.diff(targets)) + 1]
        rank = np.arange(targets.size) - np.repeat(starts, np.diff(np.r_[starts, targets.size]))
        for k in range(int(rank.max()) + 1):
            m = rank == k
            t, v = targets[m], vals[order[m]]
            (out[t],) = call(
                "select_and_scatter",
                "C10",
                "scatter",
                scatter,
                _tensors([out[t], v], [dt, dt]),
                [dt],
                t.shape,
            )
    return _wrap(out.reshape(shape), dt)


def select_and_scatter_reference(*args, **kwargs):
    """The spec's select_and_scatter, index by index (the test oracle; takes
    select_and_scatter's arguments): for each source index, the running select over
    its window's operand elements (padding skipped); then each result index folds, from
    the init value, the source values of the windows that selected it, in ascending
    source index order."""
    a = bound_arguments(select_and_scatter, args, kwargs)
    x, src, init, window, _ = _select_and_scatter_args(*a.values())
    window_dimensions, window_strides, padding = window
    select, scatter = a["select"], a["scatter"]
    (dt,) = _body_types("select_and_scatter", "C10", scatter, [init], [x], what="scatter")
    selected_index = {}
    for source_index in np.ndindex(*src.shape):
        pick = None
        for w in np.ndindex(*window_dimensions):
            operand_index = builtins.tuple(
                s * st + i - p[0] for s, st, i, p in zip(source_index, window_strides, w, padding)
            )
            if not all(0 <= j < n for j, n in zip(operand_index, x.shape)):
                continue  # padding is never a candidate
            candidate = _wrap(np.array(x._value[operand_index]), x._dtype)
            if pick is None or not bool(select(pick[0], candidate)):
                pick = (candidate, operand_index)
        if pick is not None:
            selected_index[source_index] = pick[1]
    result = np.empty(x.shape, dt.np)
    init_converted = _promote(init, dt)
    source_converted = _promote(src, dt)
    for result_index in np.ndindex(*x.shape):
        acc = init_converted
        for source_index in np.ndindex(*src.shape):  # ascending source index order
            if selected_index.get(source_index) == result_index:
                value = _wrap(np.array(source_converted._value[source_index]), dt)
                (acc,) = outputs("select_and_scatter", "C10", "scatter", scatter(acc, value), 1)
        result[result_index] = acc._value
    return _wrap(result, dt)
