"""Quantization: uniform_quantize, uniform_dequantize, and every other op on quantized
tensors (StableHLO spec, "Quantized element types" and "Quantization computations").

A quantized tensor holds storage integers (see :mod:`xops.qtype`). When any op receives
one, :func:`xops.autodiff.tape.primitive` hands the call to :func:`dispatch`, which runs
it the way the spec defines it for that op:

* **dequantize -> op -> quantize** (``dequantize_op_quantize``): arithmetic ops (add,
  tanh, dot_general, convolution, batch norm, ...). The result takes the element type of
  the op's first quantized operand (clamp: ``operand``; select: ``on_true``); for any
  other result type call :func:`dequantize_op_quantize` with it, as the spec writes it.
* **compare** dequantizes both sides and compares the real values
  (``dequantize_compare``); **select** picks between the dequantized branches and
  quantizes (``dequantize_select_quantize``).
* **data movement** (reshape, transpose, slice, pad, gather, concatenate, ...) moves
  the storage integers untouched; a per-axis type follows its dimension (transpose,
  broadcast_in_dim and reshape map it, the spec's C-rules; elsewhere it must stay put).
* **bodies** (reduce, reduce_window, scatter, select_and_scatter, sort, map): the body
  sees quantized values of the operands' types, as in the spec, so each application of
  ``add`` requantizes. The op itself runs on the dequantized values, which is exact
  because ``quantize(dequantize(i)) == i`` for every storage value of the type (checked
  once per type; a type where it fails is refused with a clear error).

Ops with no quantized form in the spec (convert, integer and bitwise ops, fft, ...) raise
a SpecError that says to dequantize first. Quantized tensors carry no gradients.
"""

import inspect
from collections.abc import Set

import numpy as np

from ..autodiff import tape
from ..autodiff.tape import primitive
from .. import registry
from ..dtypes import as_dtype, from_compute
from ..qtype import QuantizedType, is_quantized
from ..tensor import Tensor, _wrap
from ._core import SpecError, as_tensor, check, check_arity, tstr

__all__ = [
    "uniform_quantize",
    "uniform_dequantize",
    "dequantize_op_quantize",
    "QuantizedType",
    "is_quantized",
]


# ---------------------------------------------------------------------------------------
# stablehlo.uniform_quantize / stablehlo.uniform_dequantize
# ---------------------------------------------------------------------------------------


def _quantized_result_type(op, dtype):
    try:
        dt = as_dtype(dtype)
    except (TypeError, ValueError) as e:
        raise SpecError(op, "I2", f"result element type: {e}") from None
    check(
        dt.quantized,
        op,
        "I2",
        lambda: (
            f"the result element type must be a quantized type (xo.QuantizedType), got {dt.name}"
        ),
    )
    return dt


@primitive("uniform_quantize", quantized="native")
def uniform_quantize(operand, dtype):
    """stablehlo.uniform_quantize: real values -> the quantized type ``dtype``, or a
    quantized tensor -> another quantized type (dequantize, then quantize).

    ``dtype`` is a :class:`xops.QuantizedType` or its ``!quant.uniform<...>`` text.
    quantize(x) = clamp(storage_min, round_nearest_even(x / scale) + zero_point,
    storage_max), with x / scale rounded in the expressed type, NaN -> zero_point.

    >>> q = "!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>"
    >>> xo.uniform_quantize(xo.tensor([4.0, 15.0]), q).numpy()     # spec example
    array([10, 10], dtype=int8)
    """
    op = "uniform_quantize"
    qt = _quantized_result_type(op, dtype)
    x = as_tensor(operand, qt.expressed_type, op, "operand")
    if x._dtype.quantized:
        check(
            x._dtype.expressed_type is qt.expressed_type,
            op,
            "C2",
            lambda: (
                f"expressed_type(result) = expressed_type(operand) is required, got "
                f"{x._dtype.name} -> {qt.name}"
            ),
        )
        values = x._dtype.dequantize(x._value)
    else:
        check(
            x._dtype is qt.expressed_type,
            op,
            "C2",
            lambda: (
                f"expressed_type(result) = element_type(operand) is required, got "
                f"{tstr(x)} -> {qt.name}"
            ),
        )
        values = x._value
    qt.check_shape(op, x.shape)
    return _wrap(qt.quantize(values), qt)


@primitive("uniform_dequantize", quantized="native")
def uniform_dequantize(operand):
    """stablehlo.uniform_dequantize: a quantized tensor -> its real values
    ``(storage - zero_point) * scale`` in the expressed type (C2), same shape (C1).

    >>> q = xo.tensor([10, 10], "!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>")
    >>> xo.uniform_dequantize(q).tolist()                            # spec example
    [4.0, 15.0]
    """
    op = "uniform_dequantize"
    x = as_tensor(operand, None, op, "operand")
    check(
        x._dtype.quantized, op, "I1", lambda: f"operand must be a quantized tensor, got {tstr(x)}"
    )
    qt = x._dtype
    return _wrap(qt.dequantize(x._value), qt.expressed_type)


def dequantize_op_quantize(op, *inputs_and_output_type):
    """The spec's ``dequantize_op_quantize(op, *inputs, output_type)``: dequantize the
    quantized inputs, apply ``op`` (any callable over xops ops), quantize the result to
    ``output_type`` (one type, or a tuple of types for an op with several results;
    None leaves that result a float tensor).

    >>> a = xo.uniform_quantize(xo.tensor([1.0, 2.0]), "!quant.uniform<i8:f32, 0.1:-30>")
    >>> b = xo.uniform_quantize(xo.tensor([3.0, 4.0]), "!quant.uniform<i8:f32, 0.5:-20>")
    >>> xo.dequantize_op_quantize(xo.add, a, b, b.dtype).numpy()     # conformance example
    array([-12,  -8], dtype=int8)
    """
    name = "dequantize_op_quantize"
    if not inputs_and_output_type:
        raise SpecError(name, "I2", "the output type is missing")
    *inputs, output_type = inputs_and_output_type
    check_arity(name, "I1", "op", op, len(inputs))
    result = op(*[_dequantized(x) for x in inputs])
    if isinstance(result, (tuple, list)):
        types = (
            output_type if isinstance(output_type, (tuple, list)) else [output_type] * len(result)
        )
        if len(types) != len(result):
            raise SpecError(name, "I2", f"{len(result)} results but {len(types)} output types")
        return type(result)(_requantized(r, t) for r, t in zip(result, types))
    return _requantized(result, output_type)


def _dequantized(x):
    """Quantized tensors (also inside lists/tuples) -> their real values."""
    return tape._restructure(x, lambda t: uniform_dequantize(t) if t._dtype.quantized else t)


def _requantized(r, qt):
    if qt is None or not isinstance(r, Tensor) or not r._dtype.is_float:
        return r
    return uniform_quantize(r, qt)


def run_quantized(name, fn, values, result_types):
    """Run op ``name`` of a program that declares its result types (the StableHLO
    executor's entry). When the spec computes ``name`` as ``dequantize_op_quantize``
    and a value or a result type is quantized, ``fn`` gets ``values`` dequantized and
    each result is quantized to its entry of ``result_types`` (None leaves it real; with
    one entry, ``fn`` returns the one result); otherwise this is ``fn(values)``.
    ``result_types``: per result, its quantized element type or None."""
    if name not in DEQUANTIZE_OP_QUANTIZE or not (
        any(t is not None for t in result_types)
        or any(isinstance(v, Tensor) and v._dtype.quantized for v in values)
    ):
        return fn(values)
    out = fn([_dequantized(v) for v in values])
    if len(result_types) == 1:
        return _requantized(out, result_types[0])
    outs = list(out) if isinstance(out, (list, tuple)) else [] if out is None else [out]
    return [_requantized(o, t) for o, t in zip(outs, result_types)]


# ---------------------------------------------------------------------------------------
# Ops on quantized operands
# ---------------------------------------------------------------------------------------

# How each op treats quantized operands is part of its declaration (``@primitive(...,
# quantized=...)``, see xops.registry.QUANTIZED); these read it.


def _declared(name):
    d = registry._BY_NAME.get(name)
    return (None, (), ()) if d is None else (d.quantized, d.quantized_params, d.body_params)


class _DequantizeOpQuantize(Set):
    """The ops declared ``quantized="dequantize"`` (a live view of the registry)."""

    def __contains__(self, name):
        return _declared(name)[0] == "dequantize"

    def __iter__(self):
        return iter([d.name for d in registry.ops() if d.quantized == "dequantize"])

    def __len__(self):
        return sum(1 for _ in self)


# dequantize_op_quantize in the spec (and tan, XLA's dot); the result type is that of
# the first quantized operand, or of the op's declared ``result_type_from`` parameter.
DEQUANTIZE_OP_QUANTIZE = _DequantizeOpQuantize()

_SIGNATURES = {}


def dispatch(name, op, fn, args, kwargs):
    """Run primitive ``name`` (public function ``op``, implementation ``fn``) on
    arguments of which at least one is a quantized tensor."""
    how = _declared(name)[0]
    if how == "native":
        return fn(*args, **kwargs)
    sig = _SIGNATURES.get(name)
    if sig is None:
        sig = _SIGNATURES[name] = inspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    if how == "dequantize":
        return _arithmetic(name, op, bound)
    if how == "storage":
        return _movement(name, op, bound)
    if how == "bodies":
        return _bodies(name, op, bound)
    qt = next(t._dtype for t in tape._leaves(list(bound.arguments.values())) if t._dtype.quantized)
    raise SpecError(
        name,
        "I1",
        f"has no quantized form in the spec, got an operand of type "
        f"{qt.name}; dequantize it first (xo.uniform_dequantize)",
    )


def _quantized_args(bound):
    return [
        (k, t) for k, v in bound.arguments.items() for t in tape._leaves(v) if t._dtype.quantized
    ]


def _arithmetic(name, op, bound):
    qargs = _quantized_args(bound)
    if name not in _CONTRACTIONS:
        _check_all_quantized(name, bound)
    want = registry.get(name).result_type_from
    qt = next((t._dtype for k, t in qargs if k == want), qargs[0][1]._dtype)
    values = {k: _dequantized(v) for k, v in bound.arguments.items()}
    if name in _CONTRACTIONS:
        qt = _contraction_type(name, bound, qt)
        values["preferred_element_type"] = None
    if name == "top_k":  # its values are the operand's own: they must requantize exactly
        _check_round_trip(name, qt)
    result = _run(op, bound, values)
    if name == "compare":
        return result  # dequantize_compare: a boolean result
    if isinstance(result, tuple):
        # batch norm: each result takes the type of the first quantized input of its shape
        by_shape = {}
        for _, t in qargs:
            by_shape.setdefault(t.shape, t._dtype)
        if name == "top_k":
            return (_requantized(result[0], qt), result[1])
        return tuple(_requantized(r, by_shape.get(r.shape, qt)) for r in result)
    return _requantized(result, qt)


def _check_all_quantized(name, bound):
    """(C1) baseline_type(...) of the data operands are equal: beside a quantized operand
    every tensor operand is quantized (select's pred aside). Contractions take hybrid
    operands and check them in _contraction_type."""
    for k, v in bound.arguments.items():
        if k == "pred":
            continue
        items = [v] if isinstance(v, (np.ndarray, np.generic)) else tape._leaves(v)
        for t in items:
            if isinstance(t, (np.ndarray, np.generic)) or not t._dtype.quantized:
                what = (
                    tstr(t)
                    if not isinstance(t, (np.ndarray, np.generic))
                    else f"a NumPy {np.asarray(t).dtype} array"
                )
                raise SpecError(
                    name,
                    "C1",
                    f"quantized and non-quantized operands do not mix "
                    f"(their baseline types differ): {k} is {what}; "
                    f"quantize it (xo.uniform_quantize) or dequantize "
                    f"the others",
                )


_CONTRACTIONS = {
    "dot_general": ("C14", "C15", "C16", "C17"),
    "dot": ("C14", "C15", "C16", "C17"),
    "convolution": ("C28", "C29", "C30", "C31"),
}


def _contraction_type(name, bound, default):
    """The quantized checks of dot_general (C14-C17) and convolution (C28-C32); the
    result type is preferred_element_type when given, else lhs's."""
    a = bound.arguments
    # (a NumPy array or Python scalar beside a quantized operand: checked as a tensor)
    lhs, rhs = (as_tensor(a[k], None, a.get("op", name), k) for k in ("lhs", "rhs"))
    pref = a.get("preferred_element_type")
    out = default if pref is None else as_dtype(pref, name, "C12")
    both, storage, expressed, last = _CONTRACTIONS[name]
    op = a.get("op", name)
    for what, t in (("lhs", lhs), ("rhs", rhs), ("result", out)):
        dt = getattr(t, "_dtype", t)
        check(
            isinstance(dt, QuantizedType),
            op,
            both,
            lambda: f"lhs, rhs and result must all be quantized, got {what} of type {dt.name}",
        )
    lt, rt = lhs._dtype, rhs._dtype
    check(
        lt.storage_type is rt.storage_type,
        op,
        storage,
        lambda: f"storage_type(lhs) = storage_type(rhs) is required, got {lt.name} and {rt.name}",
    )
    check(
        lt.expressed_type is rt.expressed_type is out.expressed_type,
        op,
        expressed,
        lambda: (
            f"lhs, rhs and result need one expressed type, got {lt.name}, {rt.name} and {out.name}"
        ),
    )
    if name == "convolution":
        check(
            rt.is_per_axis or not out.is_per_axis,
            op,
            last,
            lambda: f"a per-tensor rhs needs a per-tensor result, got {out.name}",
        )
        if rt.is_per_axis or out.is_per_axis:
            from .convolution import _dimension_numbers

            dn = _dimension_numbers(op, a.get("dimension_numbers"), rhs.ndim)
            for label, t, d, what in (
                ("C32", rt, dn.kernel_output_feature_dimension, "rhs's kernel output"),
                ("C33", out, dn.output_feature_dimension, "the result's output"),
            ):
                check(
                    not t.is_per_axis or t.quantization_dimension == d,
                    op,
                    label,
                    lambda: (
                        f"a per-axis type must be quantized along {what} feature "
                        f"dimension {d}, got {t.name}"
                    ),
                )
    else:
        check(
            all(z == 0 for z in rt.zero_points),
            op,
            last,
            lambda: f"zero_points(rhs) = 0 is required, got {rt.name}",
        )
    return out


def _run(op, bound, values):
    """Call ``op`` with the bound arguments replaced by ``values`` (same parameters)."""
    args, kwargs, gap = [], {}, False
    for p in bound.signature.parameters.values():
        if p.name not in values:
            gap = True  # (a default): later parameters go by keyword
            continue
        v = values[p.name]
        if p.kind is p.VAR_POSITIONAL:
            args.extend(v)
        elif p.kind is p.VAR_KEYWORD:
            kwargs.update(v)
        elif p.kind is p.KEYWORD_ONLY or gap:
            kwargs[p.name] = v
        else:
            args.append(v)
    return op(*args, **kwargs)


def _one_type(name, label, tensors):
    types = {t._dtype for t in tensors}
    if len(types) != 1:
        raise SpecError(
            name,
            label,
            "quantized operands must share one element type, got "
            + ", ".join(sorted(t.name for t in types)),
        )
    return types.pop()


_VARIADIC = ("inputs", "init_values", "updates")  # the data parameters that take lists


def _data_tensors(name, bound, params):
    """The tensors of the data parameters; each must be quantized."""
    out = []
    for p in params:
        v = bound.arguments.get(p)
        if isinstance(v, (list, tuple)) and p not in _VARIADIC:
            # one operand given as a list of quantized tensors: the op would run on their
            # storage stacked by tensor() (into i64) and label it with the quantized type
            raise SpecError(
                name,
                "quantized",
                f"{p} must be one quantized tensor, got a "
                f"{type(v).__name__} of {len(v)} values (stack "
                f"tensors with xo.concatenate)",
            )
        if not (
            isinstance(v, Tensor)
            or isinstance(v, (list, tuple))
            and all(isinstance(t, Tensor) for t in v)
        ):
            raise SpecError(
                name,
                "quantized",
                f"{p} must be a quantized tensor like the other "
                f"data operands (a Python number has no quantized "
                f"meaning), got {v!r:.80}",
            )
        for t in tape._leaves(v):
            if not t._dtype.quantized:
                raise SpecError(
                    name,
                    "quantized",
                    f"{p} must have the quantized element type of "
                    f"the other data operands, got {tstr(t)}",
                )
            out.append(t)
    return out


def _check_no_other_quantized(name, bound, params):
    for k, v in bound.arguments.items():
        if k not in params and any(t._dtype.quantized for t in tape._leaves(v)):
            raise SpecError(name, "quantized", f"{k} must not be quantized")


def _storage(x):
    """Quantized tensors (also inside lists/tuples) -> their storage integers."""
    return tape._restructure(
        x, lambda t: _wrap(t._value, t._dtype.storage_type) if t._dtype.quantized else t
    )


def _movement(name, op, bound):
    params = _declared(name)[1]
    _check_no_other_quantized(name, bound, params)
    qt = _one_type(name, "C1", _data_tensors(name, bound, params))
    values = {k: (_storage(v) if k in params else v) for k, v in bound.arguments.items()}
    if name == "bitcast_convert":
        return _bitcast(op, bound, values)
    out = _run(op, bound, values)
    if name == "get_dimension_size":
        return out
    rt = _moved_type(name, qt, bound, out.shape)
    rt.check_shape(name, out.shape)
    return _wrap(out._value, rt)


def _bitcast(op, bound, values):
    """bitcast_convert: C1 is on storage types (E = storage_type for quantized types)."""
    dst = as_dtype(values["dtype"], op, "I2")
    values["dtype"] = dst.storage_type if dst.quantized else dst
    out = _run(op, bound, values)
    if dst.quantized:
        dst.check_shape("bitcast_convert", out.shape)
        return _wrap(out._value, dst)
    return out


def _moved_type(name, qt, bound, out_shape):
    """The result's quantized type: per-axis types follow their dimension."""
    d = qt.quantization_dimension
    if d is None:
        return qt
    a = bound.arguments
    in_shape = tape._leaves(a.get("operand", a.get("inputs")))[0].shape
    if name == "transpose":
        return qt.replace(quantization_dimension=[int(p) for p in a["permutation"]].index(d))
    if name == "broadcast_in_dim":
        r = int(list(a["broadcast_dimensions"])[d])
        if in_shape[d] == 1 and out_shape[r] != 1:  # C6: one scale serves every slice
            return qt.replace(
                quantization_dimension=r,
                scales=qt.scales * out_shape[r],
                zero_points=qt.zero_points * out_shape[r],
            )
        return qt.replace(quantization_dimension=r)
    if name == "broadcast":
        return qt.replace(quantization_dimension=d + len(list(a["broadcast_sizes"])))
    if name in ("reshape", "collapse"):
        before, size = int(np.prod(in_shape[:d])), in_shape[d]
        for r in range(len(out_shape)):
            if int(np.prod(out_shape[:r])) == before and out_shape[r] == size:
                return qt.replace(quantization_dimension=r)
        raise SpecError(
            name,
            "C3",
            f"a per-axis quantized operand needs its quantization "
            f"dimension {d} (size {size}) kept whole, got "
            f"{list(in_shape)} -> {list(out_shape)}",
        )
    return qt


# -- ops with bodies -----------------------------------------------------------------------

_EXACT = {}


def _check_round_trip(name, qt):
    """quantize(dequantize(i)) == i for every storage value i of ``qt``."""
    ok = _EXACT.get(qt)
    if ok is None:
        v = np.arange(qt.storage_min, qt.storage_max + 1, dtype=np.int64)
        check_type = qt
        if qt.is_per_axis:  # every value against every slice's scale and zero point
            if v.size * len(qt.scales) > 1 << 24:
                raise SpecError(
                    name,
                    "quantized",
                    f"{qt.name} has too many scales to check that "
                    f"its body can run on real values; dequantize "
                    f"first",
                )
            v = np.repeat(v[:, None], len(qt.scales), axis=1)
            check_type = qt.replace(quantization_dimension=1)
        s = from_compute(v.astype(qt.storage_type.compute), qt.storage_type)
        ok = bool(np.array_equal(check_type.quantize(check_type.dequantize(s)), s))
        _EXACT[qt] = ok
    if not ok:
        raise SpecError(
            name,
            "quantized",
            f"runs its body on real values, which needs "
            f"quantize(dequantize(i)) == i for every storage "
            f"value of {qt.name}; that fails for this type: "
            f"dequantize first",
        )


def _bodies(name, op, bound):
    _, data, bodies = _declared(name)
    _check_no_other_quantized(name, bound, data)
    for p in data:  # every data operand a quantized Tensor (NumPy data cannot be)
        v = bound.arguments.get(p)
        for t in v if isinstance(v, (list, tuple)) else [v]:
            if not (isinstance(t, Tensor) and t._dtype.quantized):
                what = tstr(t) if isinstance(t, Tensor) else type(t).__name__
                raise SpecError(
                    name,
                    "quantized",
                    f"quantized and non-quantized data operands do not mix, got {what} for {p}",
                )
    groups = [tape._leaves(bound.arguments.get(p)) for p in data]
    for t in (t for g in groups for t in g):
        _check_round_trip(name, t._dtype)
    values = {k: (_dequantized(v) if k in data else v) for k, v in bound.arguments.items()}
    for b, types in zip(bodies, _body_types(name, groups)):
        if values.get(b) is not None:
            values[b] = _quantized_body(values[b], types)
    out = _run(op, bound, values)
    results = _result_types(name, groups)
    if isinstance(out, (tuple, list)):
        return type(out)(_requantized(r, t) for r, t in zip(out, results))
    return _requantized(out, results[0])


def _body_types(name, groups):
    """Per body: the quantized type of each of its arguments, in order."""
    first = [t._dtype for t in groups[0]]
    if name in ("reduce", "reduce_window"):
        return [first + first]
    if name == "scatter":
        return [first + [t._dtype for t in groups[1]]]
    if name == "select_and_scatter":
        operand, source = groups[0][0]._dtype, groups[1][0]._dtype
        return [[operand, operand], [source, source]]
    if name == "sort":
        return [[t for t in first for _ in (0, 1)]]
    return [first]  # map


def _result_types(name, groups):
    if name == "select_and_scatter":
        return [groups[2][0]._dtype if groups[2] else groups[1][0]._dtype]
    return [t._dtype for t in groups[0]]


def _quantized_body(body, types):
    """The body as the op runs it on real values: its arguments are quantized to their
    types first, its quantized results dequantized after."""

    def on_real_values(*xs):
        qs = [
            uniform_quantize(x, t) if isinstance(x, Tensor) and x._dtype.is_float else x
            for x, t in zip(xs, types)
        ]
        return _dequantized(body(*qs))

    return on_real_values


tape.quantized_dispatch = dispatch
