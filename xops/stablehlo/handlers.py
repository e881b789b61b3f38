"""The op table: ``OPS = {"stablehlo.add": handler, ...}``, one handler per op of the
StableHLO spec (plus ``func``, ``check``, ``interpreter`` and a few ``chlo`` ops).

A handler ``handler(ctx, op, args)`` maps the op's MLIR attributes to the keyword
arguments of the public ``xo.<name>`` function and calls it (see :func:`call_xo`); it
returns one value, or a list/tuple for several results. ``xo.<name>`` is looked up at
call time, so an op that another part of xops has not landed yet raises
:class:`OpNotImplemented` until it does, and works from then on. Keyword arguments are
passed under the spec's names; attributes an ``xo`` function does not take are dropped
when they hold their default (None, [], False, "DEFAULT" precision) and are an error
otherwise.

Bodies: a region that is exactly one binary op on its two arguments
(``stablehlo.add %a, %b``) or one ``stablehlo.compare DIR, %a, %b`` is passed as that
xops function (``xo.add``, ``lambda a, b: xo.compare(a, b, "GE")``), which xops
recognises for its fast kernels and gradient rules; any other region becomes a callable
that interprets it.
"""

import functools
import inspect

import numpy as np

import xops as xo
from .. import registry
from ..errors import SpecError
from ..ops._bodies import Body
from ..tensor import Tensor
from .checks import CHECK_OPS, CUSTOM_CALL_TARGETS
from .exceptions import OpNotImplemented, Unsupported
from .ir import DenseAttr, StructAttr, SymbolRef, TensorType, TupleType
from .literals import constant_tensor
from .table import ELEMENTWISE, OPS, TARGETS, TERMINATORS, XO_NAMES
from .table import register as _register

__all__ = ["OPS", "ELEMENTWISE", "TERMINATORS", "call_xo", "XO_NAMES"]


# ---------------------------------------------------------------------------------------
# Calling xo.* by name
# ---------------------------------------------------------------------------------------


def xo_function(name, op_name=None):
    fn = getattr(xo, name, None)
    if fn is None or not callable(fn) or isinstance(fn, type):
        raise OpNotImplemented(name, op_name)
    return fn


@functools.cache
def _signature(fn):
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _default_like(v):
    if v is None or v is False:
        return True
    if isinstance(v, (list, tuple)) and (
        not v or all(isinstance(x, str) and x == "DEFAULT" for x in v)
    ):
        return True
    return False


def call_xo(name, op_name, *args, optional=None, **kwargs):
    """``xo.<name>(*args, **kwargs, **optional)``. ``optional`` keywords are passed only
    when the function takes them; required ones it does not take are an error unless
    they hold a default value."""
    fn = xo_function(name, op_name)
    sig = _signature(fn)
    use = {}
    optional = {k: v for k, v in (optional or {}).items() if v is not None}
    every = dict(kwargs)
    every.update({k: v for k, v in optional.items() if k not in every})
    if sig is None or any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        use = {k: v for k, v in kwargs.items()}
        if optional and sig is not None:
            use.update(optional)
    else:
        params = sig.parameters
        for k, v in every.items():
            if k in params and params[k].kind is not params[k].VAR_POSITIONAL:
                use[k] = v
            elif k in kwargs and not _default_like(v):
                raise SpecError(
                    op_name or name, "", f"xo.{name}{sig} has no parameter {k!r} for {k}={v!r}"
                )
    try:
        return fn(*args, **use)
    except TypeError as e:
        if sig is not None and (
            "argument" in str(e) and ("positional" in str(e) or "keyword" in str(e))
        ):
            raise SpecError(
                op_name or name,
                "",
                f"calling xo.{name}{sig} with {len(args)} operand(s) and {sorted(use)}: {e}",
            ) from None
        raise


# ---------------------------------------------------------------------------------------
# Attribute helpers
# ---------------------------------------------------------------------------------------


def _listed(v):
    """An integer attribute's value as Python numbers: a ``dense<...>`` attribute or a
    tensor becomes a (nested) list; other values stay as they are."""
    if isinstance(v, DenseAttr):
        v = v.ints()
    if isinstance(v, Tensor):
        v = v.tolist()
    return v


def ints(v, what="attribute"):
    """A list of Python ints from ``[1, 2]``, ``array<i64: 1, 2>`` or ``dense<[1, 2]>``."""
    if v is None:
        return None
    v = _listed(v)
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return [int(v)]
    return [int(x) for x in v]


def pairs(v):
    """``dense<[[lo, hi], ...]>`` / ``[[lo, hi], ...]`` as a list of [lo, hi]."""
    if v is None:
        return None
    return [[int(a), int(b)] for a, b in _listed(v)]


def read(attrs, **readers):
    """``{name: reader(attrs[name])}`` for each named attribute (a reader gets None for an
    absent one): the keyword arguments of an ``xo`` call, read the same way for every op."""
    return {name: reader(attrs.get(name)) for name, reader in readers.items()}


def int_list(v):
    """A list of ints that defaults to empty."""
    return [] if v is None else ints(v)


def one_or_list(xs):
    """A variadic op's operands as xo takes them: the tensor itself when there is one."""
    return xs if len(xs) > 1 else xs[0]


def bools(v):
    if v is None:
        return None
    if isinstance(v, DenseAttr):
        v = v.ints()
    return [bool(x) for x in v]


def enum(v):
    if v is None:
        return None
    return str(v)


def to_int(v):
    if v is None:
        return None
    if isinstance(v, DenseAttr):
        v = v.ints()
    return int(v)


def tensor_ints(t, what):
    """The values of a 1-D integer tensor operand (dynamic_* shapes) as Python ints."""
    if not isinstance(t, Tensor) or not t.dtype.is_int or t.ndim > 1:
        raise SpecError("stablehlo", "", f"{what} must be a 1-D integer tensor, got {t!r}")
    return [int(x) for x in np.asarray(t).reshape(-1).tolist()]


def precision(op):
    p = op.attrs.get("precision_config")
    return [enum(x) for x in p] if p else None


def preferred(ctx, lhs, i=0):
    """The result element type when it differs from the operands' (for
    ``preferred_element_type``)."""
    t = ctx.op.result_types[i] if ctx.op.result_types else None
    if isinstance(t, TensorType) and isinstance(t.elem, xo.DType) and t.elem is not lhs.dtype:
        return t.elem
    return None


# ---------------------------------------------------------------------------------------
# Bodies
# ---------------------------------------------------------------------------------------

_BINARY_BODIES = {
    "stablehlo.add": "add",
    "stablehlo.multiply": "multiply",
    "stablehlo.maximum": "maximum",
    "stablehlo.minimum": "minimum",
    "stablehlo.and": "and_",
    "stablehlo.or": "or_",
    "stablehlo.xor": "xor",
    "stablehlo.subtract": "subtract",
}

# One tagged body per direction: xops sees what it is without reading any code.
_COMPARE_BODIES = {d: Body.compare(d) for d in ("EQ", "NE", "GE", "GT", "LE", "LT")}


def known_body(region):
    """The built-in body a region is, if it is one binary op (the xops function itself,
    known to xops by identity) or one compare without a compare_type (a tagged
    ``Body.compare``) on its two block arguments in order. None otherwise."""
    if len(region.blocks) != 1:
        return None
    b = region.entry
    if len(b.args) != 2 or len(b.ops) != 2:
        return None
    op, ret = b.ops
    if ret.name not in TERMINATORS or ret.operands != op.results or len(op.results) != 1:
        return None
    if op.operands != [b.args[0][0], b.args[1][0]]:
        return None
    if op.name in _BINARY_BODIES:
        return getattr(xo, _BINARY_BODIES[op.name], None)
    if op.name == "stablehlo.compare" and op.attrs.get("compare_type") is None:
        return _COMPARE_BODIES.get(enum(op.attrs.get("comparison_direction")))
    return None


def body_of(ctx, i=0, vectorised=True, operands=()):
    """Region ``i`` as the callable an xops op takes: the xops function itself for a
    known body, else the interpreted region. Bodies over narrow floats (bf16, f16, f8)
    are always interpreted: each application then rounds to the element type, as the
    spec's body does (and XLA: JAX's bf16 cumsum expects it), where xops' own kernels
    would accumulate in float32 and round once."""
    region = ctx.op.regions[i] if i < len(ctx.op.regions) else None
    if region is None:
        raise SpecError(ctx.op.name, "", f"missing region #{i}")
    fn = known_body(region) if ctx.interp.trace_file is None and not _narrow(operands) else None
    return fn if fn is not None else ctx.region(i, vectorised)


def _narrow(values):
    return any(
        isinstance(a, Tensor) and a.dtype.kind == "float" and a.dtype.is_narrow for a in values
    )


# ---------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------

# Handlers register into the table the executor reads (xops/stablehlo/table.py); the
# data-movement ops (.movement), collectives, chlo ops and custom_call targets register
# from their own modules.


def _simple(pyname):
    def handler(ctx, op, args):
        return call_xo(pyname, op.name, *args)

    handler.__name__ = f"run_{pyname}"
    return handler


# The spec's elementwise ops run as xo.<op>(*operands) (their declaration in the op
# registry says elementwise=True); those with attributes (compare, convert,
# reduce_precision) register their own handler below, replacing this one.
for _d in registry.ops():
    if _d.elementwise and _d.spec == "stablehlo":
        _register(f"stablehlo.{_d.name}", _simple(_d.public), [_d.public], elementwise=True)
_register("chlo.erf", _simple("erf"), ["erf"], elementwise=True)
_register("chlo.tan", _simple("tan"), ["tan"], elementwise=True)


def _compare(ctx, op, args):
    kw = read(op.attrs, comparison_direction=enum, compare_type=enum)
    return call_xo("compare", op.name, *args, **kw)


_register("stablehlo.compare", _compare, ["compare"], elementwise=True)


def _constant(ctx, op, args):
    v = op.attrs.get("value")
    if not isinstance(v, DenseAttr):
        raise Unsupported(
            f"stablehlo.constant with a {type(v).__name__} value ({v}) is not supported"
        )
    t = op.result_types[0] if op.result_types else v.type
    return call_xo("constant", op.name, constant_tensor(v, t))


_register("stablehlo.constant", _constant, ["constant"])
_register("chlo.constant", _constant, ["constant"])


def _convert(ctx, op, args):
    return call_xo("convert", op.name, args[0], ctx.result_dtype())


def _bitcast_convert(ctx, op, args):
    return call_xo("bitcast_convert", op.name, args[0], ctx.result_dtype())


_register("stablehlo.convert", _convert, ["convert"], elementwise=True)
_register("stablehlo.bitcast_convert", _bitcast_convert, ["bitcast_convert"])


def _precisions(ctx, op, lhs):
    return dict(precision_config=precision(op), preferred_element_type=preferred(ctx, lhs))


_DOT_DIMENSIONS = {  # lhs_batching_dimensions, ..., rhs_contracting_dimensions
    f"{side}_{kind}_dimensions": int_list
    for side in ("lhs", "rhs")
    for kind in ("batching", "contracting")
}


def _dot_general(ctx, op, args):
    dn = op.attrs.get("dot_dimension_numbers") or StructAttr("dot", {})
    kw = read(dn.fields, **_DOT_DIMENSIONS)
    # ``algorithm`` is not passed: it asks a compiler for a precision/speed trade-off;
    # xops computes at the operand/result element types, the spec's reference.
    return call_xo("dot_general", op.name, args[0], args[1], **kw, **_precisions(ctx, op, args[0]))


def _dot(ctx, op, args):
    return call_xo("dot", op.name, args[0], args[1], **_precisions(ctx, op, args[0]))


_register("stablehlo.dot_general", _dot_general, ["dot_general"])
_register("stablehlo.dot", _dot, ["dot"])


def _conv_dims(op):
    dn = op.attrs.get("dimension_numbers")
    if dn is None:
        return None
    if isinstance(dn, StructAttr):
        return {
            k: (ints(v) if isinstance(v, (list, DenseAttr)) else to_int(v))
            for k, v in dn.fields.items()
        }
    return dn


def _conv_kwargs(ctx, op, lhs, padding):
    kw = read(
        op.attrs,
        window_strides=ints,
        lhs_dilation=ints,
        rhs_dilation=ints,
        window_reversal=bools,
        feature_group_count=lambda v: 1 if v is None else to_int(v),
        batch_group_count=lambda v: 1 if v is None else to_int(v),
    )
    return dict(kw, padding=padding, dimension_numbers=_conv_dims(op), **_precisions(ctx, op, lhs))


def _convolution(ctx, op, args):
    kw = _conv_kwargs(ctx, op, args[0], pairs(op.attrs.get("padding")))
    return call_xo("convolution", op.name, args[0], args[1], **kw)


def _dynamic_conv(ctx, op, args):
    pad = [[int(a), int(b)] for a, b in np.asarray(args[2]).reshape(-1, 2).tolist()]
    kw = _conv_kwargs(ctx, op, args[0], pad)
    return call_xo("convolution", op.name, args[0], args[1], **kw)


_register("stablehlo.convolution", _convolution, ["convolution"])
_register("stablehlo.dynamic_conv", _dynamic_conv, ["convolution"])


def _split_variadic(args, groups):
    n = len(args) // groups
    return [list(args[i * n : (i + 1) * n]) for i in range(groups)]


def _reduce(ctx, op, args):
    inputs, inits = _split_variadic(args, 2)
    if "applies" in op.attrs:
        name = op.attrs["applies"]
        body = getattr(xo, _BINARY_BODIES.get(name, ""), None)
        if body is None:
            raise Unsupported(f"stablehlo.reduce ... applies {name} is not supported")
    else:
        body = body_of(ctx, 0, operands=args)
    dims = ints(op.attrs.get("dimensions"))
    if _narrow(args) and all(isinstance(a, Tensor) for a in args):
        return _fold_in_order(inputs, inits, dims, body)
    return call_xo("reduce", op.name, one_or_list(inputs), one_or_list(inits), dims, body)


def _fold_in_order(inputs, inits, dims, body):
    """reduce over narrow floats (bf16, f16, f8): the body applied to the elements in
    index order, one step at a time, each step rounding to the element type, as XLA
    and the reference interpreter do (xops' reduce kernels add in float32 and round
    once, or fold in a tree). The spec leaves the order to the implementation."""
    x0 = inputs[0]
    if any(not 0 <= d < x0.ndim for d in dims) or len(set(dims)) != len(dims):
        reduce_ins = (one_or_list(inputs), one_or_list(inits), dims, body)
        return call_xo("reduce", "stablehlo.reduce", *reduce_ins)  # its errors
    keep = [d for d in range(x0.ndim) if d not in dims]
    out_shape = [x0.shape[d] for d in keep]
    k = int(np.prod([x0.shape[d] for d in dims], dtype=np.int64))
    flat = [xo.reshape(xo.transpose(x, keep + sorted(dims)), out_shape + [k]) for x in inputs]
    acc = [xo.broadcast_in_dim(i, [], out_shape) for i in inits]
    n = len(out_shape)
    for j in range(k):
        cols = [
            xo.reshape(xo.slice(x, [0] * n + [j], out_shape + [j + 1], [1] * (n + 1)), out_shape)
            for x in flat
        ]
        res = body(*acc, *cols)
        acc = list(res) if isinstance(res, (tuple, list)) else [res]
    return acc[0] if len(acc) == 1 else acc


_WINDOW = dict(window_dimensions=ints, window_strides=ints, padding=pairs)


def _reduce_window(ctx, op, args):
    inputs, inits = _split_variadic(args, 2)
    kw = read(op.attrs, **_WINDOW, base_dilations=ints, window_dilations=ints)
    body = body_of(ctx, 0, operands=args)
    return call_xo(
        "reduce_window", op.name, one_or_list(inputs), one_or_list(inits), **kw, body=body
    )


def _select_and_scatter(ctx, op, args):
    bodies = dict(select=body_of(ctx, 0), scatter=body_of(ctx, 1, operands=args))
    return call_xo("select_and_scatter", op.name, *args, **read(op.attrs, **_WINDOW), **bodies)


def _map(ctx, op, args):
    return call_xo("map", op.name, list(args), ints(op.attrs.get("dimensions")), body_of(ctx, 0))


_register("stablehlo.reduce", _reduce, ["reduce"])
_register("stablehlo.reduce_window", _reduce_window, ["reduce_window"])
_register("stablehlo.select_and_scatter", _select_and_scatter, ["select_and_scatter"])
_register("stablehlo.map", _map, ["map"])


def _sort(ctx, op, args):
    a = op.attrs
    out = call_xo(
        "sort",
        op.name,
        list(args),
        optional=dict(
            dimension=to_int(a.get("dimension", -1)), is_stable=bool(a.get("is_stable", False))
        ),
        comparator=body_of(ctx, 0),
    )
    return _variadic_results(op, out)


_register("stablehlo.sort", _sort, ["sort"])


def _while(ctx, op, args):
    out = call_xo("while_", op.name, list(args), cond=ctx.region(0), body=ctx.region(1))
    return _variadic_results(op, out)


def _if(ctx, op, args):
    out = call_xo("if_", op.name, args[0], true_branch=ctx.region(0), false_branch=ctx.region(1))
    return _variadic_results(op, out)


def _case(ctx, op, args):
    out = call_xo(
        "case", op.name, args[0], branches=[ctx.region(i) for i in range(len(op.regions))]
    )
    return _variadic_results(op, out)


def _variadic_results(op, out):
    """Results of an op with a variadic result list: xops returns a tuple (or one
    value); a single result that is not tuple-typed is unwrapped."""
    if (
        isinstance(out, tuple)
        and len(op.results) == 1
        and len(out) == 1
        and not isinstance(op.result_types[0] if op.result_types else None, TupleType)
    ):
        return out[0]
    if len(op.results) == 0:
        return []
    return out


def _function(ctx, name, vectorised=False):
    """Function ``@name`` of the current module as a Python callable (one result as
    is, several as a tuple). ``vectorised``: for xops functions that call it on whole
    arrays, as they call region bodies (a sort comparator)."""

    def computation(*operands):
        if vectorised:
            shapes = [a.shape for a in operands if isinstance(a, Tensor)]
            batch = max(shapes, key=len) if shapes else ()
            outs = ctx.interp.call_symbol(
                ctx.module, name, list(operands), ctx.depth + 1, True, batch
            )
        else:
            outs = ctx.call(name, list(operands))
        return outs[0] if len(outs) == 1 else tuple(outs)

    computation.__name__ = computation.__qualname__ = name.replace(".", "_")
    return computation


def _call(ctx, op, args):
    """func.call through ``xo.call`` (XLA Call) when xops has it, else directly."""
    callee = op.attrs.get("callee")
    name = callee.name if isinstance(callee, SymbolRef) else str(callee)
    if getattr(xo, "call", None) is None:
        return _results(op, ctx.call(name, list(args)))
    out = call_xo("call", op.name, _function(ctx, name), *args)
    return _results(op, out if isinstance(out, tuple) else [out])


def _composite(ctx, op, args):
    dec = op.attrs.get("decomposition")
    if not isinstance(dec, SymbolRef):
        raise SpecError(op.name, "", f"needs decomposition = @function, got {dec!r}")
    return _results(op, ctx.call(dec.name, list(args)))


def _results(op, outs):
    """A sequence of results as a handler's return value (one value for one result,
    unless that result is itself a tuple-typed value)."""
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    if len(op.results) == 1 and len(outs) == 1:
        return outs[0]
    return outs


_register("stablehlo.while", _while, ["while_"])
_register("stablehlo.if", _if, ["if_"])
_register("stablehlo.case", _case, ["case"])
_register("func.call", _call, ["call"])
_register("call", _call, ["call"])
_register("stablehlo.composite", _composite)


def _batch_norm(name):
    def handler(ctx, op, args):
        a = op.attrs
        return call_xo(name, op.name, *args, a.get("epsilon"), to_int(a.get("feature_index")))

    return handler


for _n in ("batch_norm_grad", "batch_norm_inference", "batch_norm_training"):
    _register(f"stablehlo.{_n}", _batch_norm(_n), [_n])


def _cholesky(ctx, op, args):
    return call_xo("cholesky", op.name, args[0], lower=bool(op.attrs.get("lower", False)))


def _triangular_solve(ctx, op, args):
    kw = read(op.attrs, left_side=bool, lower=bool, unit_diagonal=bool, transpose_a=enum)
    return call_xo("triangular_solve", op.name, *args, **kw)


def _fft(ctx, op, args):
    a = op.attrs
    return call_xo("fft", op.name, args[0], enum(a.get("fft_type")), ints(a.get("fft_length")))


def _rng(ctx, op, args):
    shape = tensor_ints(args[2], "shape")
    return call_xo("rng", op.name, args[0], args[1], shape, **read(op.attrs, rng_distribution=enum))


def _rng_bit_generator(ctx, op, args):
    return call_xo(
        "rng_bit_generator",
        op.name,
        enum(op.attrs.get("rng_algorithm")),
        args[0],
        optional=dict(shape=ctx.result_shape(1), dtype=ctx.result_dtype(1)),
    )


def _reduce_precision(ctx, op, args):
    kw = read(op.attrs, exponent_bits=to_int, mantissa_bits=to_int)
    return call_xo("reduce_precision", op.name, args[0], **kw)


_register("stablehlo.cholesky", _cholesky, ["cholesky"])
_register("stablehlo.triangular_solve", _triangular_solve, ["triangular_solve"])
_register("stablehlo.fft", _fft, ["fft"])
_register("stablehlo.rng", _rng, ["rng"])
_register("stablehlo.rng_bit_generator", _rng_bit_generator, ["rng_bit_generator"])
_register("stablehlo.reduce_precision", _reduce_precision, ["reduce_precision"], elementwise=True)


def _tuple(ctx, op, args):
    return call_xo("tuple", op.name, *args)


def _get_tuple_element(ctx, op, args):
    return call_xo("get_tuple_element", op.name, args[0], to_int(op.attrs.get("index")))


def _optimization_barrier(ctx, op, args):
    return _results(op, call_xo("optimization_barrier", op.name, *args))


def _after_all(ctx, op, args):
    return call_xo("after_all", op.name, *args)


def _create_token(ctx, op, args):
    return call_xo("create_token", op.name)


_register("stablehlo.tuple", _tuple, ["tuple"])
_register("stablehlo.get_tuple_element", _get_tuple_element, ["get_tuple_element"])
_register("stablehlo.optimization_barrier", _optimization_barrier, ["optimization_barrier"])
_register("stablehlo.after_all", _after_all, ["after_all"])
_register("stablehlo.create_token", _create_token, ["create_token"])


def _custom_call(ctx, op, args):
    target = op.attrs.get("call_target_name")
    target = target.name if isinstance(target, SymbolRef) else str(target)
    if target in CUSTOM_CALL_TARGETS:
        return CUSTOM_CALL_TARGETS[target](ctx, op, args)
    if target in CHECK_OPS:
        return CHECK_OPS[target](ctx, op, args)
    if target in TARGETS:
        return TARGETS[target](ctx, op, args)
    a = op.attrs
    called = [
        _function(ctx, c.name) if isinstance(c, SymbolRef) else c
        for c in (a.get("called_computations") or [])
    ]
    out = call_xo(
        "custom_call",
        op.name,
        target,
        *args,
        optional=dict(
            has_side_effect=a.get("has_side_effect"),
            backend_config=a.get("backend_config"),
            api_version=_api_version(a.get("api_version")),
            called_computations=called or None,
            result_types=list(op.result_types),
        ),
    )
    return _variadic_results(op, out)


_API_VERSIONS = {
    "API_VERSION_UNSPECIFIED": 0,
    "API_VERSION_ORIGINAL": 1,
    "API_VERSION_STATUS_RETURNING": 2,
    "API_VERSION_STATUS_RETURNING_UNIFIED": 3,
    "API_VERSION_TYPED_FFI": 4,
}


def _api_version(v):
    """``api_version = 2 : i32`` or ``#stablehlo<custom_call_api_version ...>``."""
    if isinstance(v, str):
        return _API_VERSIONS.get(str(v), v)
    return to_int(v)


_register("stablehlo.custom_call", _custom_call, ["custom_call"])


# -- collectives, channels, host I/O and interpreter.run_parallel: .collectives ---------
# -- chlo decompositions: .chlo; custom_call targets (ApproxTopK, LAPACK): .targets -----


def _uniform_quantize(ctx, op, args):
    return call_xo("uniform_quantize", op.name, args[0], ctx.result_dtype())


def _uniform_dequantize(ctx, op, args):
    return call_xo("uniform_dequantize", op.name, args[0])


_register("stablehlo.uniform_quantize", _uniform_quantize, ["uniform_quantize"])
_register("stablehlo.uniform_dequantize", _uniform_dequantize, ["uniform_dequantize"])


for _name, _h in CHECK_OPS.items():
    _register(_name, _h)


def _legacy(ctx, op, args):
    raise Unsupported(f"{op.name} is not part of the StableHLO spec xops implements")


for _n in (
    "einsum",
    "unary_einsum",
    "torch_index_select",
    "compute_reshape_shape",
    "cstr_reshapable",
    "trace",
):
    _register(f"stablehlo.{_n}", _legacy)


# The spec's op set, for coverage checks (asserted once every handler module has
# registered, in xops/stablehlo/__init__.py): every op the registry declares from the
# StableHLO spec, plus the spec's dynamic_* variants, which the runner composes from them.
SPEC_OPS = sorted(
    {d.name for d in registry.ops() if d.spec == "stablehlo"}
    | {n.partition(".")[2] for n in OPS if n.startswith("stablehlo.dynamic_")}
)
