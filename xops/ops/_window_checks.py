"""The window ops' constraint checks (stablehlo.reduce_window and
stablehlo.select_and_scatter, :mod:`xops.ops.windows`): the operands, the window
attributes (parsed to lists of ints and (low, high) pairs), the bodies; each labelled
with its constraint. Checked signatures are remembered (``_CHECKED``), so that a
pooling layer's calls, one signature every step, parse their attributes once.
"""

import builtins

from ..autodiff.tape import keep
from ..limits import check_nbytes
from ..limits import config as _limits_config
from ._bodies import comparison_direction
from ._core import check, check_arity, operands, tstr
from ._window_geometry import _padding_attr, _result_shape, _window_attr
from .reduction import _check_inputs, _inits, _variadic


def reduce_window_checks(inputs, init_values, *attributes):
    """reduce_window's constraint checks, from the operands' types and shapes and the
    attributes (no element is read; ``attributes``: the op's, in signature order, body
    last): (inputs, init_values, the parsed window attributes as _reduce_window_args
    gives them, the result shape). Keeps the parsed attributes for the gradient rule.
    The CPU op and its CUDA kernel (xops.kernels.cuda.windows) start here. A signature
    that passed once reuses its parsed attributes and result shape (_CHECKED)."""
    op = "reduce_window"
    *window_attrs, body = attributes
    xs, inits = _reduce_window_operands(inputs, init_values)
    key, hit = remembered_window(xs[0].shape, [x._dtype for x in xs], window_attrs)
    if hit is not None:
        _check_body(op, body)
        window = [list(a) for a in hit[1]]
        out_shape = list(hit[2])
    else:
        window = _reduce_window_attrs(xs[0].ndim, window_attrs)
        _check_body(op, body)
        out_shape = _result_shape(xs[0].shape, *window)
        for x in xs:
            check_nbytes(op, out_shape, x._dtype)
        if key is not None and len(_CHECKED) < _CHECKED_MAX:
            # (holds the types: their ids stay valid)
            _CHECKED[key] = (
                builtins.tuple(x._dtype for x in xs),
                builtins.tuple(builtins.tuple(a) for a in window),
                builtins.tuple(out_shape),
            )
    wd, ws, bd, wdl, pad = window
    keep(
        op,
        window_dimensions=wd,
        window_strides=ws,
        base_dilations=bd,
        window_dilations=wdl,
        padding=pad,
    )
    return xs, inits, window, out_shape


# Validated signatures (dot_general's pattern, xops/ops/linalg.py): the window checks
# read only the operands' shapes and element types and the attributes, so a signature
# that passed them once passes again, and its parsed attributes and result shape are
# reused (a pooling layer calls with one signature every step). Only the common
# spellings are keyed (each attribute None or a list/tuple of ints, padding of int
# pairs); anything else, and every call that fails a check, runs the checks. The
# operands, the init values and the bodies are checked on every call.
_CHECKED = {}
_CHECKED_MAX = 1024


def _signature(op, shape, *rest):
    """The _CHECKED key of a call, or None when an attribute (the last of ``rest``) is
    spelled otherwise than as None or a list/tuple of ints or of int pairs."""
    attrs = []
    for a in rest[-1]:
        if a is not None:
            if type(a) not in (list, tuple):
                return None
            items = []
            for v in a:
                if type(v) is int:
                    items.append(v)
                elif type(v) in (list, tuple) and len(v) == 2 and all(type(e) is int for e in v):
                    items.append((v[0], v[1]))
                else:
                    return None
            a = builtins.tuple(items)
        attrs.append(a)
    return (op, shape, *rest[:-1], builtins.tuple(attrs))


def remembered_window(shape, dtypes, window_attrs):
    """``(key, hit)``: a reduce_window call's _CHECKED key (None for a spelling that is
    not keyed) and what that signature remembered, ``(element types, parsed window
    attributes, result shape)``, where it passed the checks with operands of ``dtypes``,
    else None. The size limit is part of the key: a result that passed under one limit
    is checked again under another. reduce_window's checks and its dispatch fast path
    (xops.ops.windows) both look signatures up here."""
    key = _signature("reduce_window", shape, len(dtypes), _limits_config._max_bytes, window_attrs)
    hit = _CHECKED.get(key) if key is not None else None
    if hit is None or any(d is not h for d, h in zip(dtypes, hit[0])):
        return key, None
    return key, hit


def _check_body(op, body):
    check(callable(body), op, "C13", lambda: f"body must be callable, got {body!r}")


def _reduce_window_args(inputs, init_values, *attributes):
    """reduce_window's operands and checked attributes (``attributes``: the op's, in
    signature order, body last): (inputs, init_values, [window_dimensions,
    window_strides, base_dilations, window_dilations, padding pairs]), lists of ints.
    The op and its reference parse here."""
    *window_attrs, body = attributes
    xs, inits = _reduce_window_operands(inputs, init_values)
    window = _reduce_window_attrs(xs[0].ndim, window_attrs)
    _check_body("reduce_window", body)
    return xs, inits, window


def _reduce_window_operands(inputs, init_values):
    """reduce_window's inputs and init values, checked (I1, I2, C1-C3)."""
    op = "reduce_window"
    xs = _variadic(op, inputs)
    inits = _inits(op, "I2", init_values, xs)
    _check_inputs(op, ("C1", "C2", "C3"), xs, inits)
    return xs, inits


def _reduce_window_attrs(rank, window_attrs):
    """reduce_window's window attributes (window_dimensions, window_strides,
    base_dilations, window_dilations, padding), checked against the rank (I3-I7,
    C4-C12) and parsed: lists of ints and of (low, high) pairs."""
    op = "reduce_window"
    window_dimensions, window_strides, base_dilations, window_dilations, padding = window_attrs
    check(window_dimensions is not None, op, "C4", "window_dimensions is required")
    return [
        _window_attr(op, "I3", "C4", "C5", "window_dimensions", window_dimensions, rank, 1),
        _window_attr(op, "I4", "C6", "C7", "window_strides", window_strides, rank, 1),
        _window_attr(op, "I5", "C8", "C9", "base_dilations", base_dilations, rank, 1),
        _window_attr(op, "I6", "C10", "C11", "window_dilations", window_dilations, rank, 1),
        _padding_attr(op, "I7", "C12", padding, rank),
    ]


def select_and_scatter_checks(operand, source, init_value, *attributes):
    """select_and_scatter's constraint checks, from the operands' types and shapes and
    the attributes (no element is read): what _select_and_scatter_args returns. Keeps
    the parsed attributes for the gradient rule. The CPU op and its CUDA kernel
    (xops.kernels.cuda.windows) start here. A signature that passed once reuses its
    parsed attributes (_CHECKED)."""
    op = "select_and_scatter"
    window_dimensions, window_strides, padding, select, scatter = attributes
    x, src, init = _select_and_scatter_operands(operand, source, init_value)
    window_attrs = (window_dimensions, window_strides, padding)
    key = _signature(op, x.shape, src.shape, window_attrs)
    hit = _CHECKED.get(key) if key is not None else None
    if hit is not None:
        wd, ws, pad = [list(a) for a in hit]
    else:
        wd, ws, pad = _select_and_scatter_attrs(x, src, window_attrs)
        if key is not None and len(_CHECKED) < _CHECKED_MAX:
            _CHECKED[key] = (builtins.tuple(wd), builtins.tuple(ws), builtins.tuple(pad))
    direction = _select_and_scatter_bodies(select, scatter)
    keep(op, window_dimensions=wd, window_strides=ws, padding=pad)
    return x, src, init, [wd, ws, pad], direction


def _select_and_scatter_args(operand, source, init_value, *attributes):
    """select_and_scatter's operands and checked attributes (``attributes``: the op's,
    in signature order): (operand, source, init_value, [window_dimensions,
    window_strides, padding pairs], the select's comparison direction or None). The op
    and its reference parse here."""
    window_dimensions, window_strides, padding, select, scatter = attributes
    x, src, init = _select_and_scatter_operands(operand, source, init_value)
    window = _select_and_scatter_attrs(x, src, (window_dimensions, window_strides, padding))
    return x, src, init, window, _select_and_scatter_bodies(select, scatter)


def _select_and_scatter_operands(operand, source, init_value):
    """select_and_scatter's operand, source and init value, checked (I1-I3, C1, C3)."""
    op = "select_and_scatter"
    x, src = operands(op, operand, source, names=["operand", "source"])
    (init,) = _inits(op, "I3", [init_value], [x], name="init_value")
    check(
        x._dtype is src._dtype,
        op,
        "C1",
        lambda: (
            f"source must have the operand's element type, got operand {tstr(x)} "
            f"and source {tstr(src)}"
        ),
    )
    check(
        init._dtype is x._dtype,
        op,
        "C3",
        lambda: (
            f"init_value must have the operand's element type, got {tstr(init)} "
            f"for operand {tstr(x)}"
        ),
    )
    return x, src, init


def _select_and_scatter_attrs(x, src, window_attrs):
    """select_and_scatter's window attributes (window_dimensions, window_strides,
    padding), checked against the operand's rank (I4-I6, C4-C8) and parsed, and the
    source's shape against the number of windows (C2): [wd, ws, padding pairs]."""
    op = "select_and_scatter"
    window_dimensions, window_strides, padding = window_attrs
    rank = x.ndim
    wd = _window_attr(op, "I4", "C4", "C5", "window_dimensions", window_dimensions, rank, 1)
    ws = _window_attr(op, "I5", "C6", "C7", "window_strides", window_strides, rank, 1)
    pad = _padding_attr(op, "I6", "C8", padding, rank)
    nwin = _result_shape(x.shape, wd, ws, [1] * rank, [1] * rank, pad)
    check(
        list(src.shape) == nwin,
        op,
        "C2",
        lambda: f"source must have one element per window, shape {nwin}, got {tstr(src)}",
    )
    return [wd, ws, pad]


def _select_and_scatter_bodies(select, scatter):
    """The select's comparison direction (None unless it is a recognised compare), after
    checking that select takes two parameters (C9) and scatter is callable (C10)."""
    op = "select_and_scatter"
    direction = comparison_direction(select)
    if direction is None:  # (a recognised select is a plain two-parameter function)
        check_arity(op, "C9", "select", select, 2)
    check(callable(scatter), op, "C10", lambda: f"scatter must be callable, got {scatter!r}")
    return direction
