"""Reductions: stablehlo.reduce and stablehlo.map (XLA Reduce, Map), and what they share
with the window ops of :mod:`xops.ops.windows` (reduce_window, select_and_scatter): this
docstring describes all four.

**Bodies** are ordinary Python callables over xops ops. reduce and reduce_window call
``body(acc_0, ..., acc_{N-1}, x_0, ..., x_{N-1})`` and take N values back (a Tensor, or
a tuple for N > 1); select_and_scatter's ``select(a, b)`` returns i1 and
``scatter(a, b)`` one value; map's ``computation(x_0, ..., x_{N-1})`` one value.

**Two paths.** A body recognised by :mod:`xops.ops._bodies` (``xo.add``, ``xo.multiply``,
``xo.maximum``, ``xo.minimum``, ``xo.and_``, ``xo.or_``, and for select
``lambda a, b: xo.compare(a, b, "GE")`` with GE/GT/LE/LT, either the function itself or a
lambda/def calling it once on its parameters in order, directly or through helper
functions that do the same) runs a Numba kernel
(``xops.kernels.reduction``, ``xops.kernels.windows``) on one input. Any other body
runs *vectorised*: it is called on whole arrays, never once per element, so it must be
built from elementwise ops (as a spec body is: it maps 0-d values):

* reduce: a pairwise tree over the reduced elements (about log2(n) body calls);
* reduce_window: one body call per window position, on all windows at once;
* select_and_scatter: one select call per window position (a running select over all
  windows at once), then one scatter call per "round" of windows that picked the same
  position;
* map: one call on the whole inputs.

**Schedules.** The spec leaves reduce's schedule implementation-defined: any binary
tree whose in-order traversal is the inputs in ascending index order, with the init
values inserted any number of times. xops uses the init value exactly once, leftmost
(``body(init, tree)``, as the reference interpreter does), so a non-identity init
counts once per output; the generic path's trees always keep the elements in order,
so an associative body gives the same result as a left fold even if it is not
commutative. A body of elementwise float ops on one float32/float64 input (add,
subtract, multiply, divide, maximum, minimum, negate, abs, exponential, log_plus_one,
sqrt; Python numbers and other tensors as constants) runs that tree compiled: it is
traced once per call into a program (:func:`xops.ops._bodies.trace_program`) that one
Numba kernel runs, and used only once probe rows gave the generic path's bits (per
program and type). The kernels of the recognised bodies fold rows of float
add/multiply as another in-order tree (passes of balanced trees of 8 neighbours, see
:mod:`xops.kernels.reduction`), the other ops in 32 fixed lanes (their results do not
depend on the order). Float add/multiply results therefore depend on the schedule: the
kernels, the generic path and the reference may round differently; every other result
is exact. No result depends on the thread count or the CPU's SIMD width.

**Element types.** Every type works on the generic path. The kernels compute narrow
floats (bf16, f16, f8/f6/f4) in float32 and round *once* at the end, as XLA's CPU
backend does for reductions (so a bf16 sum accumulates in f32), and integers in 64
bits wrapped once to the type's width (the same result as wrapping every step); i1
add/multiply are or/and (computed on 0/1 in 64 bits). Complex types always take the
generic path. A body may use a wider element type than its inputs (C6
``is_promotable``: same kind, at least as many bits): the element types the body
returns for the init values decide the types it computes in, the inputs are converted
to them (``xo.convert``), and the results have those types (C8).

**Gradients.** All four ops are tape primitives (:mod:`xops.autodiff`); the rules sit
below the ops (the window ops' in :mod:`xops.ops.windows`) and are written with xops
ops, so they record under create_graph and higher orders work. The conventions:

* reduce, add: g broadcast back over the reduced dims; the init value (combined once
  per output) gets sum(g).
* reduce, maximum/minimum: g is split *evenly* among the elements equal to the result
  (-0 and +0 tie), as ``jax.lax.reduce_max``; the init value gets g only where it is
  the result and no element is (elements win ties with it; JAX has no init gradient);
  a NaN result sends nothing back.
* Every other body (multiply, subtract, variadic bodies such as argmax, any body of
  differentiable elementwise ops), and map's computation: the rule re-runs the generic
  computation (reduce's pairwise tree, reduce_window's fold over window positions,
  map's one call) with recording on and walks back through the body's own ops. So
  multiply is exact with zeros at every order (as JAX, which differentiates a
  product tree), and an argmax-style body sends g one-hot to the element it selects.
  A body op without a rule raises a SpecError naming the body and that op.
* A body that closes over a tensor requiring a gradient (not an operand) cannot get
  one through these rules: a SpecError says so rather than dropping it. (map with no
  operand needing a gradient records its computation as is, so closures work there.)
"""

import builtins
import math

import numpy as np

from ..autodiff.helpers import broadcast_to as _bcast, needs as _needs, sum as _sum
from ..autodiff.helpers import _on, zeros as _zeros
from ..autodiff.local import local_vjp
from ..autodiff.tape import is_grad_enabled, keep, no_grad, primitive
from ..dtypes import as_dtype, to_compute, wrap_int
from ..kernels import reduction as KR
from ..limits import config as _limits_config
from ..tensor import Tensor, _wrap
from . import conversion as _C
from . import elementwise as _E
from . import movement as _M
from ._bodies import binary_op_name, call, checked_results, outputs, result_types
from ._bodies import trace_program
from ._core import _fast_scalar, as_tensor, attr_ints, check, check_arity, compute, operands
from ._core import fast_grad_of, result, tstr

__all__ = ["reduce", "map"]

_ROW_CHUNK = 1 << 15  # reduce: longer rows are folded in chunks, then the chunks


# ---------------------------------------------------------------------------------------
# Shared helpers: operands, init values, bodies, element types
# ---------------------------------------------------------------------------------------


def _is_array(v):
    return isinstance(v, (Tensor, np.ndarray, np.generic))


def _variadic(op, inputs, name="inputs"):
    """A list of Tensors from one operand or a sequence of operands. A list or tuple is
    variadic when it is empty or all its items are Tensors or NumPy arrays; anything
    else (nested Python lists) is one operand."""
    if isinstance(inputs, (list, tuple)) and (not inputs or all(_is_array(v) for v in inputs)):
        items = list(inputs)
    else:
        items = [inputs]
    return operands(op, *items, names=[f"{name}[{i}]" for i in range(len(items))]) if items else []


def _inits(op, label_0d, init_values, xs, name="init_values"):
    """init_values as 0-d Tensors; a Python scalar takes its input's element type."""
    items = list(init_values) if isinstance(init_values, (list, tuple)) else [init_values]
    out = []
    for i, v in enumerate(items):
        dt = xs[i]._dtype if i < len(xs) else None
        t = as_tensor(v, dt, op, f"{name}[{i}]")
        check(t.ndim == 0, op, label_0d, lambda: f"{name}[{i}] must be a 0-d tensor, got {tstr(t)}")
        out.append(t)
    return out


def _types(ts):
    return ", ".join(tstr(t) for t in ts)


def _promote(t, dt):
    """t converted to the body's element type dt (spec: to_destination_type)."""
    if t._dtype is dt:
        return t
    from .conversion import convert

    return convert(t, dt)


def _body_types(op, label, body, inits, xs, what="body"):
    """The element types E_i the body computes in: those it returns for the init values
    (one call on 0-d values). Each must be promotable from its input's type (C6/C13)."""
    return result_types(op, label, what, body, inits + inits, xs)


def _promoted(ts, dts):
    """Each tensor of ts converted to the body's element type (spec: to_destination_type)."""
    return [_promote(t, dt) for t, dt in zip(ts, dts)]


def _check_shapes(op, labels, xs):
    """map / sort: at least one input (labels[0]), all of one shape (labels[1])."""
    check(len(xs) > 0, op, labels[0], "inputs must not be empty")
    check(
        all(x.shape == xs[0].shape for x in xs),
        op,
        labels[1],
        lambda: f"inputs must have one shape, got {_types(xs)}",
    )


def _check_inputs(op, labels, xs, inits):
    """reduce / reduce_window: as many inputs as init values, at least one (labels[0]);
    the inputs of one shape (labels[1]); the init values of their element types
    (labels[2])."""
    n = len(xs)
    check(
        0 < n == len(inits),
        op,
        labels[0],
        lambda: (
            f"inputs and init_values must be as many and at least one, got {n} "
            f"inputs and {len(inits)} init_values"
        ),
    )
    check(
        all(x.shape == xs[0].shape for x in xs),
        op,
        labels[1],
        lambda: f"inputs must have the same shape, got {_types(xs)}",
    )
    check(
        all(x._dtype is i._dtype for x, i in zip(xs, inits)),
        op,
        labels[2],
        lambda: (
            f"init_values must have the inputs' element types, got inputs "
            f"{_types(xs)} and init_values {_types(inits)}"
        ),
    )
    return n


def _contig(a, dtype=None):
    """A C-contiguous array of a's values (a itself if it already is one); unlike
    np.ascontiguousarray it keeps 0-d arrays 0-d."""
    a = np.asarray(a)
    if dtype is not None and a.dtype != dtype:
        return a.astype(dtype, order="C")
    return a if a.flags.c_contiguous else a.copy(order="C")


def _tensors(arrays, dtypes):
    return [_wrap(_contig(a), dt) for a, dt in zip(arrays, dtypes)]


def _full(shape, t):
    """A new holder array of ``shape`` filled with the 0-d tensor t's value."""
    out = np.empty(shape, t._dtype.np)
    out[...] = t._value
    return out


def _single_or_tuple(ts):
    return ts[0] if len(ts) == 1 else builtins.tuple(ts)


# -- kernel element types ----------------------------------------------------------------

_FLOAT_OPS = ("add", "multiply", "maximum", "minimum")
_BOOL_OP = dict(add="or", multiply="and", maximum="or", minimum="and", **{"and": "and", "or": "or"})


def _kernel_plan(dt, op_name):
    """(kernel dtype, op code) for a recognised body on element type dt, or None where
    no kernel applies (complex types, and/or on floats: the generic path then calls the
    body, which raises its own error where the type is wrong)."""
    if op_name not in KR.OP_CODES:
        return None
    if dt.kind == "float":
        if op_name not in _FLOAT_OPS:
            return None
        return np.dtype(np.float64 if dt.np == np.float64 else np.float32), KR.OP_CODES[op_name]
    if dt.kind in ("si", "ui"):
        wide = np.uint64 if dt.kind == "ui" and dt.bits == 64 else np.int64
        return np.dtype(wide), KR.OP_CODES[op_name]
    if dt.kind == "bool":  # as 0/1 in int64: i1 add/maximum are or, multiply/minimum and
        return np.dtype(np.int64), KR.OP_CODES[_BOOL_OP[op_name]]
    return None


def _readonly(a):
    """A read-only view: kernel inputs are always read-only (a tensor's data is), so
    each kernel compiles one specialisation, not one per writeable flag."""
    if not a.flags.writeable:  # (a tensor's own data already is)
        return a
    v = a.view()
    v.setflags(False)
    return v


def _to_kernel(t, kdt):
    """t's values as a read-only C-contiguous array of kernel dtype kdt."""
    return _readonly(_contig(compute(t), kdt))


def _kernel_scalar(t, kdt):
    """A 0-d tensor's value as a NumPy scalar of kernel dtype kdt."""
    return _kernel_value(t._value, t._dtype, kdt)


def _kernel_value(v, dt, kdt):
    """The 0-d holder array v (element type dt) as a NumPy scalar of kernel dtype kdt."""
    if type(v) is np.ndarray and v.dtype == kdt:  # (f32, f64: the common case)
        return v[()]
    return kdt.type(np.asarray(to_compute(v, dt)).reshape(()).astype(kdt)[()])


def _from_kernel(a, dt):
    """A kernel-dtype array back to a Tensor of element type dt (one rounding/wrap)."""
    if dt.kind == "bool":
        return _wrap(a != 0, dt)
    if dt.kind in ("si", "ui"):
        return result(wrap_int(a, dt), dt)
    return result(a, dt)


def _compute_dtype(dt):
    """The element type the kernels compute dt in (f32 for narrow floats, i64/ui64 for
    integers, dt itself otherwise): used where a fast body cannot take a kernel."""
    if dt.kind == "float" and dt.is_narrow:
        return as_dtype("f32")
    if dt.kind == "si" or (dt.kind == "ui" and dt.bits < 64):
        return as_dtype("i64")
    return dt


def _widen(t, dt):
    """t in the compute element type dt (exact: values only get more room)."""
    if t._dtype is dt:
        return t
    return _wrap(np.asarray(compute(t)).astype(dt.np), dt)


def _narrow(t, dt):
    """Back from _compute_dtype: one rounding (floats) or wrap (integers)."""
    if t._dtype is dt:
        return t
    if dt.kind in ("si", "ui"):
        return result(wrap_int(t._value, dt), dt)
    return result(t._value, dt)


# ---------------------------------------------------------------------------------------
# Gradient-rule helpers. Rules are written with xops ops only, so that under
# create_graph / nested xo.grad they are recorded too (second and higher order); _needs,
# _zeros, _bcast and _sum are xops.autodiff.helpers' (windows.py imports them here).
# ---------------------------------------------------------------------------------------


def _pack(arg, cts, inits=False):
    """Cotangents in the structure of argument ``arg``: a list for a sequence of operands
    (see :func:`_variadic`; for init values, as :func:`_inits`, any list or tuple), the
    one cotangent otherwise."""
    if isinstance(arg, (list, tuple)) and (inits or not arg or all(_is_array(v) for v in arg)):
        return list(cts)
    return cts[0] if cts else None


def _zero_entries(cts, ts):
    """None entries of cts (for tensors that require a gradient) as zeros."""
    return [(_zeros(t.shape, t._dtype) if c is None and _needs(t) else c) for c, t in zip(cts, ts)]


def _body_dtypes(op, label, body, inits, xs):
    """_body_types without recording (the rules call it under create_graph)."""
    with no_grad():
        return _body_types(op, label, body, inits, xs)


def _body_call(op, label, what, body, args, shape, dtypes=None):
    """A body called on whole tensors inside a composite: its results as a list, 0-d
    results broadcast to ``shape`` (as the forward path does). With ``dtypes`` (a
    forward path in xops ops: a CUDA kernel's generic bodies), checked as the forward
    path checks them (:func:`xops.ops._bodies.checked_results`)."""
    if dtypes is not None:
        outs = checked_results(op, label, what, body, args, dtypes, shape)
    else:
        n = len(args) // 2 if what == "body" else 1
        outs = outputs(op, label, what, body(*args), n)
    return [_bcast(o, shape) for o in outs]


# ---------------------------------------------------------------------------------------
# reduce
# ---------------------------------------------------------------------------------------


@primitive("reduce", quantized_params=("inputs", "init_values"), body_params=("body",))
def reduce(inputs, init_values, dimensions, body):
    """stablehlo.reduce: reduce ``inputs`` along ``dimensions`` with ``body``.

    ``inputs``/``init_values``: one tensor and one 0-d init value, or sequences of N.
    ``body(acc_0..acc_{N-1}, x_0..x_{N-1})`` returns N values. ``dimensions`` are
    unique (C5) and may come in any order: results keep the other dims in order (C7).
    An empty reduced extent gives the init values. Returns a Tensor for one input and
    a tuple for several. See the module docstring for the schedule and element types.

    >>> xo.reduce(xo.tensor([[0, 1, 2, 3, 4, 5]]), 0, [1], xo.add)   # [15]
    xo.tensor([15], i64[1])
    >>> # argmax as a variadic reduce, ties to the lowest index:
    >>> def argmax(av, ai, bv, bi):
    ...     pick_a = xo.or_(xo.compare(av, bv, "GT"),
    ...                     xo.and_(xo.compare(av, bv, "EQ"), xo.compare(ai, bi, "LT")))
    ...     return xo.select(pick_a, av, bv), xo.select(pick_a, ai, bi)
    >>> v = xo.tensor([3.0, 7.0, 7.0])
    >>> xo.reduce([v, xo.iota(0, [3], "i64")], [float("-inf"), 0], [0], argmax)   # (7, 1)
    (xo.tensor(7., f32[]), xo.tensor(1, i64[]))
    """
    op = "reduce"
    xs, inits, dims = reduce_checks(inputs, init_values, dimensions, body)
    keep(op, dimensions=dims)

    name = binary_op_name(body) if len(xs) == 1 else None
    plan = _kernel_plan(xs[0]._dtype, name) if name else None
    if plan is not None:
        return _reduce_fast(xs[0], inits[0], dims, *plan)
    dts = _body_types(op, "C6", body, inits, xs)
    xs, inits = _promoted(xs, dts), _promoted(inits, dts)
    if len(xs) == 1:
        out = _reduce_compiled(xs[0], inits[0], dims, body)
        if out is not None:
            return out
    return _single_or_tuple(_reduce_generic(xs, inits, dims, body, dts))


def reduce_checks(inputs, init_values, dimensions, body):
    """reduce's constraints (I2, I3, C1-C6), reading only types and shapes: the inputs
    and init values as lists of tensors and the parsed dimensions, ``(xs, inits, dims)``
    (the body's result types are checked where it runs)."""
    op = "reduce"
    xs = _variadic(op, inputs)
    inits = _inits(op, "I2", init_values, xs)
    _check_inputs(op, ("C3", "C1", "C2"), xs, inits)
    dims = attr_ints(op, "I3", "dimensions", dimensions)
    rank = xs[0].ndim
    check(
        all(0 <= d < rank for d in dims),
        op,
        "C4",
        lambda: f"dimensions {dims} must be in [0, {rank}) for inputs {_types(xs)}",
    )
    check(len(set(dims)) == len(dims), op, "C5", lambda: f"dimensions {dims} must be unique")
    check(callable(body), op, "C6", lambda: f"body must be callable, got {body!r}")
    return xs, inits, dims


# reduce's dispatch fast path (xops.autodiff.tape.primitive): signatures that passed the
# checks once -> their kernel plans. A signature is what the checks and plans read: the
# element type, shape, init value kind, dimensions and body op (no values: none is read).
_SIGNATURES = {}
_SIGNATURES_MAX = 4096
_FAST_TYPES = set()  # ids of the registered element types the kernels take as held
_BODY_OPS = {}  # the xops op functions that are recognised bodies -> their names


def _fast_reduce(args, grad=False):
    """``reduce(x, init, dims, body)`` for one plain CPU Tensor x (no gradient unless
    ``grad``, an element type held as computed), a recognised body and a validated
    signature: the same kernels as the full path without re-checking; None for anything
    else (the full path then runs every check). A new signature is checked here by
    reduce_checks itself (its errors unchanged) before it is remembered."""
    if len(args) != 4:
        return None
    x, init, dims, body = args
    if type(x) is not Tensor or type(dims) not in (list, tuple) or (x.requires_grad and not grad):
        return None
    dt = x._dtype
    if type(init) is Tensor:
        if init._dtype is not dt or (init.requires_grad and not grad):
            return None
        iv = init._value
        ikind = iv.shape if type(iv) is np.ndarray else None
    else:
        iv = _fast_scalar(init, dt)
        ikind = type(init)
    try:
        name = _BODY_OPS.get(body)
    except TypeError:  # an unhashable callable
        return None
    if iv is None or ikind is None or type(x._value) is not np.ndarray:
        return None
    for d in dims:  # (True == 1 and 1.0 == 1: the key alone would not tell them apart)
        if type(d) is not int:
            return None
    if name is None:
        name = binary_op_name(body)  # (remembered by _bodies, rebinding noticed)
        if name is None:
            return None
    key = (id(dt), x._value.shape, ikind, tuple(dims), name)
    sig = _SIGNATURES.get(key)
    if sig is None:
        if not _FAST_TYPES:
            _fast_setup()
        if id(dt) not in _FAST_TYPES:
            return None
        _, _, dl = reduce_checks(x, init, dims, body)  # (raises as the full path would)
        kernel_plan = _kernel_plan(dt, name)
        sig = (_fold_plan(x._value.shape, tuple(dl)), *kernel_plan) if kernel_plan else ()
        if len(_SIGNATURES) >= _SIGNATURES_MAX:
            _SIGNATURES.clear()
        _SIGNATURES[key] = sig
    return _run_fold(x, iv, *sig) if sig else None


def _fast_setup():
    from ..dtypes import all_dtypes

    _FAST_TYPES.update(
        id(d)
        for d in all_dtypes()
        if d.kind in ("float", "si", "ui", "bool") and d.compute == d.np and not d.quantized
    )
    ops = (_E.add, _E.multiply, _E.maximum, _E.minimum, _E.and_, _E.or_)
    _BODY_OPS.update({fn: binary_op_name(fn) for fn in ops})


reduce._fast = _fast_reduce
# (the dimensions the body keeps for the rule: a list of ints)
reduce._fast_grad = fast_grad_of(_fast_reduce, lambda args: {"dimensions": list(args[2])})


@reduce.defvjp
def _reduce_vjp(g, out, inputs, init_values, dimensions, body):
    """add: g broadcast back over the reduced dims; the init value (combined once per
    output) gets sum(g). maximum/minimum: g split evenly among the elements equal to the
    result (as jax.lax.reduce_max); the init value gets g where it is the result and no
    element is (elements win ties with it); a NaN result sends nothing back. Any other
    body (multiply included, variadic bodies such as argmax): the vjp of the pairwise
    tree the generic path computes, re-run on the tape (exact for multiply with zeros,
    one-hot at the element a select-based body picks)."""
    op = "reduce"
    plain = type(inputs) is Tensor and type(init_values) in (float, int)
    xs = [inputs] if plain else _variadic(op, inputs)
    dims = dimensions  # (kept parsed by the op: a list of ints)
    name = binary_op_name(body) if len(xs) == 1 else None
    direct = name == "add" or (name in ("maximum", "minimum") and xs[0]._dtype.kind == "float")
    # (one operand and a Python init, as the op validated them, for the rules below: no
    # Tensor of the init to make, it needs no cotangent)
    inits = [init_values] if plain and direct else _inits(op, "I2", init_values, xs)
    x, init = xs[0], inits[0]
    if direct:
        kept = [d for d in range(x.ndim) if d not in dims]
        if name == "add":
            gx = _M.broadcast_in_dim(g, kept, x.shape) if _needs(x) else None
            gi = _sum(g) if _needs(init) else None
        else:
            gx, gi = _reduce_minmax_vjp(g, out, x, init, dims, kept)
        return _pack(inputs, [gx]), _pack(init_values, [gi], True), None, None
    gs = list(g) if len(xs) > 1 else [g]
    inits = [_on(i, x) for i in inits]  # (a CUDA call's weak scalars: on x's device)
    dts = _body_dtypes(op, "C6", body, inits, xs)
    n = len(xs)

    def tree(*ts):
        return _reduce_tree(ts[:n], ts[n:], dims, body, dts)

    cts = local_vjp(op, body, tree, xs + inits, gs)
    return _pack(inputs, cts[:n]), _pack(init_values, cts[n:], True), None, None


def _reduce_minmax_vjp(g, out, x, init, dims, kept):
    if not _needs(init):
        gx = _reduce_minmax_host(g, out, x, dims)
        if gx is not None:
            return gx, None
    dt = x._dtype
    at = _E.compare(x, _M.broadcast_in_dim(out, kept, x.shape), "EQ")
    count = _C.convert(_sum(_C.convert(at, "i64"), dims), dt)  # exact in i64
    gx = gi = None
    if _needs(x):
        share = _E.divide(g, _E.maximum(count, 1))  # (count >= 1 where it is used)
        gx = _E.select(at, _M.broadcast_in_dim(share, kept, x.shape), _zeros(x.shape, dt))
    if _needs(init):
        none = _E.compare(count, 0, "EQ")
        is_init = _E.and_(none, _E.compare(out, _bcast(init, out.shape), "EQ"))
        gi = _sum(_E.select(is_init, g, _zeros(out.shape, dt)))
    return gx, gi


_HOST_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _reduce_minmax_host(g, out, x, dims):
    """The operand cotangent of ``_reduce_minmax_vjp`` (g split evenly among the
    elements equal to the result, nothing where the result is NaN) in NumPy, for f32 /
    f64 host arrays outside ``create_graph``: the same operations in the same element
    type (the count exact in int64, converted once, divided once), so the same bits,
    without ten op dispatches. None where it does not apply (x needs no cotangent:
    None too, the caller's answer)."""
    if not _needs(x):
        return None
    xv, ov, gv = x._value, out._value, g._value
    if (
        is_grad_enabled()
        or _limits_config.check_finite
        or type(xv) is not np.ndarray
        or type(ov) is not np.ndarray
        or type(gv) is not np.ndarray
        or xv.dtype not in _HOST_FLOATS
        or g._dtype is not x._dtype
        or out._dtype is not x._dtype
        or gv.shape != ov.shape
    ):
        return None
    lifted = [1 if d in dims else n for d, n in enumerate(x.shape)]
    at = xv == ov.reshape(lifted)  # (NaN equals nothing, silently: a NaN result sends nothing)
    count = np.add.reduce(at, axis=builtins.tuple(dims), keepdims=True, dtype=np.int64)
    share = gv.reshape(lifted) / np.maximum(count, 1).astype(xv.dtype)
    return _wrap(np.where(at, share, xv.dtype.type(0)), x._dtype)


def _reduce_tree(xs, inits, dims, body, dts, checked=False):
    """_reduce_generic written with xops ops (so it records, and runs on any device):
    the same pairwise tree, the odd element out of each level waiting at the right end,
    the init value combined once, leftmost. Returns the list of results. ``checked``:
    the body's results are checked as the forward path checks them (the CUDA kernel's
    generic bodies run this tree as their forward path)."""
    op = "reduce"
    want = dts if checked else None
    xs = _promoted(xs, dts)
    inits = _promoted(inits, dts)
    kept, out_shape, r, m = _reduce_sizes(xs[0].shape, dims)
    if r == 0 or m == 0:
        return [_bcast(i, out_shape) for i in inits]
    rank = xs[0].ndim
    perm = sorted(dims) + kept
    level = [
        _M.reshape(_M.transpose(x, perm) if perm != list(range(rank)) else x, [r, m]) for x in xs
    ]
    waiting = []
    while r > 1:
        h = r // 2
        if r % 2:
            waiting.append([_M.reshape(_M.slice(v, [r - 1, 0], [r, m]), [m]) for v in level])
        left = [_M.slice(v, [0, 0], [2 * h, m], [2, 1]) for v in level]
        right = [_M.slice(v, [1, 0], [2 * h, m], [2, 1]) for v in level]
        level = _body_call(op, "C6", "body", body, left + right, [h, m], want)
        r = h
    acc = [_M.reshape(v, [m]) for v in level]
    for right in reversed(waiting):
        acc = _body_call(op, "C6", "body", body, acc + right, [m], want)
    starts = [_bcast(i, [m]) for i in inits]
    acc = _body_call(op, "C6", "body", body, starts + acc, [m], want)
    return [_M.reshape(a, out_shape) for a in acc]


def _reduce_sizes(shape, dims):
    """(kept dims, result shape, reduced count r, result count m) of reducing ``shape``
    over ``dims``."""
    kept = [d for d in range(len(shape)) if d not in dims]
    out_shape = [shape[d] for d in kept]
    return kept, out_shape, math.prod(shape[d] for d in dims), math.prod(out_shape)


def _classes(shape, dims):
    """``shape`` as runs of reduced / kept dims, size-1 dims ignored: [[reduced?, size]]."""
    classes = []
    for d, size in enumerate(shape):
        if size == 1:
            continue
        red = d in dims
        if classes and classes[-1][0] == red:
            classes[-1][1] *= size
        else:
            classes.append([red, size])
    return classes


def _reduce_layout(shape, dims):
    """(O, R, I) such that the input viewed as (O, R, I) reduces over R with no copy,
    or None where the reduced dims are not one block once size-1 dims are ignored."""
    classes = _classes(shape, dims)
    flags = [c[0] for c in classes]
    if flags.count(True) > 1:
        return None
    if True not in flags:
        return math.prod(c[1] for c in classes), 1, 1
    k = flags.index(True)
    o = math.prod(c[1] for c in classes[:k])
    i = math.prod(c[1] for c in classes[k + 1 :])
    return o, classes[k][1], i


_SPLIT_ROW = 64  # _split_layout: the shortest inner block folded in place (the tree's)


def _split_layout(shape, dims):
    """(A, C, I) where the input is reduced over an outer and an inner block with one
    kept block between, (A, C, I) as such (a per-channel sum of (N, C, H, W) over N, H,
    W: a bias's or a batch norm's gradient), and the inner block holds at least
    _SPLIT_ROW elements; else None."""
    classes = _classes(shape, dims)
    if [c[0] for c in classes] != [True, False, True] or classes[2][1] < _SPLIT_ROW:
        return None
    return tuple(c[1] for c in classes)


_PLANS = {}  # (shape, dims) -> _fold_plan's answer (a function of those two only)
_PLANS_MAX = 4096


def _fold_plan(shape, dims):
    """How the fold kernels reduce a C-contiguous array of ``shape`` over ``dims``:
    ``(out_shape, empty, perm, swap, layout, steps, split)``. ``empty``: the result is
    the init value (nothing to reduce, or nothing to reduce to); ``split``: (A, C, I)
    where the reduced dims are an outer and an inner block around a kept one
    (:func:`_split_layout`), folded in place in two steps: each (a, c) row of I elements
    as a row, then the A row results of each c left to right from the init value (the
    init, then each row's tree in order: a tree the spec allows, with no copy of the
    input; the plan's other fields are then unused: None, ()), else None; ``perm``: a
    transpose gathering
    the reduced dims last (one copy) where they are not one block, else None; ``swap``:
    (O, R, I) with few columns I, copied as (O, I, R) (rows are faster; the copy keeps
    each row in order), else None; ``layout``: (O, R, I) the kernels view the array as,
    reduced over R; ``steps``: the kernel calls, each (chunk, result columns: None for
    the last call, which combines the init value in)."""
    key = (shape, dims)
    plan = _PLANS.get(key)
    if plan is not None:
        return plan
    dl = list(dims)
    kept, out_shape, r, m = _reduce_sizes(shape, dl)
    perm, swap, layout, steps, split = None, None, None, (), None
    if r and m:
        layout = _reduce_layout(shape, set(dl))
        split = None if layout is not None else _split_layout(shape, set(dl))
        if layout is None and split is None:  # reduced dims apart: gather them last
            perm = kept + sorted(dl)  # (one copy, in order)
            layout = (m, r, 1)
    if layout is not None:
        o, r, i = layout
        if 1 < i < 8:
            swap, layout = layout, (o * i, r, 1)
        elif i > 1:
            steps = ((i if o >= 16 else builtins.max(1024, -(-i // 8)), None),)
        if layout[2] == 1:
            # rows: longer than _ROW_CHUNK, they fold chunk by chunk (in parallel), then
            # the chunk results in order (a tree the spec allows)
            nc = -(-r // _ROW_CHUNK)
            steps = ((_ROW_CHUNK, None),) if nc == 1 else ((_ROW_CHUNK, nc), (nc, None))
    plan = (out_shape, not (r and m), perm, swap, layout, steps, split)
    if len(_PLANS) >= _PLANS_MAX:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


def _reduce_fast(x, init, dims, kdt, code):
    """One input, recognised body: the fold kernels (xops.kernels.reduction)."""
    return _run_fold(x, init._value, _fold_plan(x.shape, tuple(dims)), kdt, code)


def _run_fold(x, init, plan, kdt, code):
    """The fold kernels' result for ``x`` along ``plan`` (:func:`_fold_plan`), with the
    init value given as the holder array ``init`` (0-d, x's element type)."""
    dt = x._dtype
    out_shape, empty, perm, swap, layout, steps, split = plan
    if empty:
        return _wrap(_full(out_shape, _wrap(init, dt)), dt)
    iv = _kernel_value(init, dt, kdt)
    a = _to_kernel(x, kdt)
    if split is not None:
        n_a, n_c, n_i = split
        rows = np.empty((n_a * n_c, 1), kdt)
        KR.fold(code, a.size, a.reshape(n_a * n_c, n_i, 1), rows, iv, False, n_i)
        out = np.empty((1, n_c), kdt)
        KR.fold(code, rows.size, _readonly(rows.reshape(1, n_a, n_c)), out, iv, True, n_c)
        return _from_kernel(out.reshape(out_shape), dt)
    if perm is not None:
        a = _readonly(_contig(a.transpose(perm)))
    if swap is not None:
        a = _readonly(_contig(a.reshape(swap).transpose(0, 2, 1)))
    o, r, i = layout
    a = a.reshape(o, r, i)
    if i > 1:
        out = np.empty((o, i), kdt)
        KR.fold(code, a.size, a, out, iv, True, steps[0][0])
        return _from_kernel(out.reshape(out_shape), dt)
    out = np.empty((o, 1), kdt)
    if len(steps) == 1:
        KR.fold(code, a.size, a, out, iv, True, steps[0][0])
    else:
        (chunk, nc), (last, _) = steps
        part = np.empty((o, nc), kdt)
        KR.fold(code, a.size, a, part, iv, False, chunk)
        KR.fold(code, part.size, _readonly(part.reshape(o, nc, 1)), out, iv, True, last)
    return _from_kernel(out.reshape(out_shape), dt)


def _reduce_generic(xs, inits, dims, body, dts):
    """Any body, vectorised: the reduced elements of each output are paired neighbour
    by neighbour (level by level, one body call per level on all outputs at once), an
    odd element out waits at the right end of its level; the init value is combined in
    once, leftmost. Every tree keeps the elements in ascending order (spec schedule)."""
    op = "reduce"
    kept, out_shape, r, m = _reduce_sizes(xs[0].shape, dims)
    if r == 0 or m == 0:
        return [_wrap(_full(out_shape, i), dt) for i, dt in zip(inits, dts)]
    # each level as (a, r, b): reduced dims trailing (a = m, b = 1) need no transpose,
    # otherwise they go first (a = 1, b = m)
    rank = xs[0].ndim
    if kept + sorted(dims) == list(range(rank)):
        perm, a, b = list(range(rank)), m, 1
    else:
        perm, a, b = sorted(dims) + kept, 1, m
    level = [_contig(x._value.transpose(perm)).reshape(a, r, b) for x in xs]
    waiting = []  # odd elements out, left to right = deepest level first
    while r > 1:
        h = r // 2
        if r % 2:
            waiting.append([v[:, r - 1].reshape(m) for v in level])
        pairs = [v[:, : 2 * h].reshape(a, h, 2, b) for v in level]
        level = call(
            op,
            "C6",
            "body",
            body,
            _tensors([p[:, :, 0] for p in pairs] + [p[:, :, 1] for p in pairs], dts * 2),
            dts,
            (a, h, b),
        )
        r = h
    acc = [v[:, 0].reshape(m) for v in level]
    for right in reversed(waiting):
        acc = call(op, "C6", "body", body, _tensors(acc + right, dts * 2), dts, (m,))
    acc = call(
        op, "C6", "body", body, _tensors([_full((m,), i) for i in inits] + acc, dts * 2), dts, (m,)
    )
    return [_wrap(_contig(v).reshape(out_shape), dt) for v, dt in zip(acc, dts)]


_COMPILE_MIN = 1 << 12  # reduce: smaller inputs run the generic path (same results)
_VERIFIED = {}  # (program, constants, result register, type) -> whether it is exact
_PROBE = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -3e38, 88.5, -104.0, 1.0])


def _program_fold(x2, init, program):
    """The compiled body's tree over the rows of the 2-D array x2 (see
    xops.kernels.reduction.program_fold)."""
    prog, consts, res = program
    out = np.empty(x2.shape[0], x2.dtype)
    KR.program_fold(_readonly(_contig(x2)), out, init, prog, consts, res)
    return out


def _verified(program, body, dt):
    """Whether the compiled body gives, bit for bit (any NaN for NaN), what the generic
    path gives on probe rows: random values, and rows with zeros of both signs,
    infinities, NaN, tiny and huge values. Checked once per program and type: the ops'
    own loops may differ by CPU (NumPy picks SIMD loops for log1p, exp on some CPUs),
    and then the body stays on the generic path."""
    prog, consts, res = program
    key = (prog.tobytes(), consts.tobytes(), res, dt.name)
    if key not in _VERIFIED:
        rng = np.random.default_rng(0)
        rows = [rng.standard_normal((48, 37)) * 10.0 ** rng.integers(-3, 4, (48, 1))]
        rows.append(rng.permutation(np.tile(_PROBE, 24)).reshape(24, 10))
        ok = True
        try:
            for probe in rows:
                x = _wrap(probe.astype(dt.np), dt)
                for init in (0.0, float("-inf"), 1.5):
                    i = _wrap(np.array(init, dt.np), dt)
                    (want,) = _reduce_generic([x], [i], [1], body, [dt])
                    got = _program_fold(x._value, init, program)
                    w = want._value
                    same = (got.view(np.uint8) == w.view(np.uint8)).reshape(got.shape + (-1,))
                    ok = ok and bool(np.all(same.all(axis=-1) | (np.isnan(got) & np.isnan(w))))
        except Exception:  # e.g. xops.config.debug_nans on the probe's NaN: not this time
            return False
        _VERIFIED[key] = ok
    return _VERIFIED[key]


def _reduce_compiled(x, init, dims, body):
    """One input of float32 or float64 (the body's type), a body of the elementwise ops
    xops.kernels.reduction.PROGRAM_OPS: the generic path's tree, run by one compiled
    kernel with the body as a program (xops.ops._bodies.trace_program) instead of one
    body call per level on whole arrays -- the same results, bit for bit (checked once
    per program by :func:`_verified`). None where that does not apply."""
    dt = x._dtype
    if dt.kind != "float" or dt.np not in (np.float32, np.float64) or dt.quantized:
        return None
    kept, out_shape, r, m = _reduce_sizes(x.shape, dims)
    if r * m < _COMPILE_MIN or r == 0:
        return None
    program = trace_program(body, dt, KR.PROGRAM_OPS)
    if program is None or not _verified(program, body, dt):
        return None
    a = np.asarray(compute(x)).transpose(kept + sorted(dims)).reshape(m, r)
    out = _program_fold(a, np.asarray(init._value).item(), program)
    return _wrap(out.reshape(out_shape), dt)


def reduce_reference(inputs, init_values, dimensions, body):
    """The spec's reduce, index by index (the test oracle): for each result index, the
    input slice with ':' at ``dimensions``, folded left to right from the init values
    by calling ``body`` on 0-d tensors. Same arguments and results as :func:`reduce`."""
    xs = _variadic("reduce", inputs)
    inits = _inits("reduce", "I2", init_values, xs)
    dims = [int(d) for d in dimensions]
    dts = _body_types("reduce", "C6", body, inits, xs)
    xs = _promoted(xs, dts)
    init_values_converted = _promoted(inits, dts)
    rank = xs[0].ndim
    kept = [d for d in range(rank) if d not in dims]
    results = [np.empty([xs[0].shape[d] for d in kept], dt.np) for dt in dts]
    for result_index in np.ndindex(*results[0].shape):
        index = [builtins.slice(None)] * rank
        for d, j in zip(kept, result_index):
            index[d] = j
        input_slices = [x._value[builtins.tuple(index)] for x in xs]
        values = _fold_reference("reduce", "C6", body, init_values_converted, input_slices, dts)
        for res, v in zip(results, values):
            res[result_index] = v
    return _single_or_tuple([_wrap(r, dt) for r, dt in zip(results, dts)])


def _fold_reference(op, label, body, acc, arrays, dts):
    """The references' fold: the 0-d tensors ``acc`` combined with the elements of the
    holder arrays ``arrays`` (one shape) in row-major order, ``body`` called on 0-d
    tensors; the results' values."""
    for index in np.ndindex(*arrays[0].shape):
        elements = [_wrap(np.array(a[index]), dt) for a, dt in zip(arrays, dts)]
        acc = outputs(op, label, "body", body(*acc, *elements), len(arrays))
    return [a._value for a in acc]


# ---------------------------------------------------------------------------------------
# map
# ---------------------------------------------------------------------------------------


@primitive("map", quantized_params=("inputs",), body_params=("computation",))
def map(inputs, dimensions, computation):
    """stablehlo.map: ``result[i] = computation(inputs...[i])`` for every index i.

    ``dimensions`` must be all dimensions in order (C3; the spec keeps the attribute
    for compatibility, #487). ``computation`` maps 0-d values of the inputs' element
    types (which may differ) to one 0-d value of any element type (C4); xops calls it
    once on the whole inputs, so it must be built from elementwise ops.

    >>> xo.map([xo.tensor([[0, 1], [2, 3]]), xo.tensor([[4, 5], [6, 7]])], [0, 1],
    ...        xo.multiply)   # [[0, 5], [12, 21]]
    xo.tensor([[ 0,  5],
               [12, 21]], i64[2,2])
    """
    op = "map"
    xs = map_checks(inputs, dimensions, computation)
    (out,) = outputs(op, "C4", "computation", computation(*xs), 1)
    if out.shape != xs[0].shape:
        check(
            out.ndim == 0,
            op,
            "C4",
            lambda: f"computation must be elementwise: on {_types(xs)} it returned {tstr(out)}",
        )
        out = (
            _M.broadcast_in_dim(out, [], list(xs[0].shape))
            if out.requires_grad
            else _wrap(_full(xs[0].shape, out), out._dtype)
        )  # (recorded: a closure's gradient)
    return out


def map_checks(inputs, dimensions, computation):
    """map's checks (the CUDA kernel runs them too): the input tensors."""
    op = "map"
    xs = _variadic(op, inputs)
    _check_shapes(op, ("C2", "C1"), xs)
    dims = attr_ints(op, "I2", "dimensions", dimensions)
    check(
        dims == list(range(xs[0].ndim)),
        op,
        "C3",
        lambda: f"dimensions must be {list(range(xs[0].ndim))} (all dims in order), got {dims}",
    )
    check_arity(op, "C4", "computation", computation, len(xs))
    return xs


@map.defvjp
def _map_vjp(g, out, inputs, dimensions, computation):
    """The vjp of the computation itself: it is re-run on the whole inputs with
    recording on, and the engine walks back through its own ops."""
    op = "map"
    xs = _variadic(op, inputs)

    def apply(*ts):
        (o,) = outputs(op, "C4", "computation", computation(*ts), 1)
        return [_bcast(o, ts[0].shape)]

    return _pack(inputs, local_vjp(op, computation, apply, xs, [g], "computation")), None, None


def map_reference(inputs, dimensions, computation):
    """The spec's map, index by index (the test oracle)."""
    xs = _variadic("map", inputs)
    values = {}
    for index in np.ndindex(*xs[0].shape):
        args = [_wrap(np.array(x._value[index]), x._dtype) for x in xs]
        (values[index],) = outputs("map", "C4", "computation", computation(*args), 1)
    dt = (
        values[next(iter(values))]._dtype
        if values
        else outputs(
            "map",
            "C4",
            "computation",
            computation(*[_wrap(np.zeros((), x._dtype.np), x._dtype) for x in xs]),
            1,
        )[0]._dtype
    )
    out = np.empty(xs[0].shape, dt.np)
    for index, v in values.items():
        out[index] = v._value
    return _wrap(out, dt)
