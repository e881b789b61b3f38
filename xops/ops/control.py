"""Control flow with Python callables as the spec's regions: stablehlo.while, if and
case, XLA's Conditional (both forms) and Call, and stablehlo.custom_call over a
registry of Python targets.

A region is any Python callable built from xops ops. Loops and branches run eagerly:
``while_`` calls ``cond`` and ``body`` once per iteration, ``if_`` / ``case`` call
*only* the branch taken (the others never run, so their side effects never happen).
Because the regions call public xops ops, every op they run records itself on the
autodiff tape: gradients flow through the iterations and the branch actually taken,
and these functions are not primitives themselves.

Checks: the loop-carried types are fixed (while C1-C3: every ``body`` result has its
operand's element type and shape, ``cond`` returns a 0-d i1 tensor). For if/case the
spec's "all branches return the same types" (C2/C3) cannot be verified without running
the branches not taken, which the spec's semantics forbid observing; xops checks the
taken branch's results (tensors or tokens) and its arity (no parameters: C1/C2).
"""

import builtins
import inspect

import numpy as np

from ..tensor import Tensor
from ..registry import declare
from ._core import SpecError, as_tensor, check, tstr
from .misc import Token

__all__ = ["while_", "if_", "case", "conditional", "call", "custom_call", "register_custom_call"]


def _value(op, label, name, v):
    """A region value: a Tensor or a Token (NumPy arrays and Python scalars -> Tensors)."""
    if isinstance(v, (Tensor, Token)):
        return v
    if isinstance(v, (np.ndarray, np.generic, bool, int, float, complex)):
        return as_tensor(v, op=op, name=name)
    raise SpecError(op, label, f"{name} must be a tensor or a token, got {type(v).__name__}")


def _type(v):
    return "token" if isinstance(v, Token) else tstr(v)


def _same_type(u, v):
    if isinstance(u, Token) or isinstance(v, Token):
        return isinstance(u, Token) and isinstance(v, Token)
    return u._dtype is v._dtype and u.shape == v.shape


def _results(op, label, what, out):
    """A region's return value as a list of values (a tuple or list is variadic)."""
    vals = list(out) if isinstance(out, (builtins.tuple, list)) else [out]
    return [_value(op, label, f"{what} result #{i}", v) for i, v in enumerate(vals)]


def _pred(op, label, name, v, kind):
    """A 0-d i1 (kind 'bool') or si32 (kind 'si32') tensor's Python value; Python bools
    and ints (and NumPy scalars) are accepted for convenience."""
    if kind == "bool" and isinstance(v, (bool, np.bool_)):
        return bool(v)
    if kind == "si32" and isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    if not isinstance(v, Tensor):
        raise SpecError(
            op,
            label,
            f"{name} must be a 0-d {'i1' if kind == 'bool' else 'si32'} "
            f"tensor, got {type(v).__name__}",
        )
    want = "i1" if kind == "bool" else "i32"
    check(
        v.ndim == 0 and v._dtype.name == want,
        op,
        label,
        lambda: f"{name} must be a 0-d {'i1' if kind == 'bool' else 'si32'} tensor, got {tstr(v)}",
    )
    return bool(v._value) if kind == "bool" else int(v._value)


def _arity_ok(fn, n):
    """Whether ``fn`` can be called with n positional arguments (True if unknowable)."""
    try:
        inspect.signature(fn).bind(*([None] * n))
    except TypeError:
        return False
    except ValueError:  # no signature (some builtins): let the call decide
        return True
    return True


def _callable(op, label, name, fn, n):
    check(callable(fn), op, label, lambda: f"{name} must be callable, got {type(fn).__name__}")
    check(
        _arity_ok(fn, n),
        op,
        label,
        lambda: (
            f"{name} must take {n} argument{'s' if n != 1 else ''}"
            f"{' (branches capture outer values instead)' if n == 0 else ''}"
        ),
    )


def _single_or_tuple(vals, variadic):
    return builtins.tuple(vals) if variadic else vals[0]


# ---------------------------------------------------------------------------------------
# while
# ---------------------------------------------------------------------------------------


@declare("while")
def while_(operand, cond, body):
    """stablehlo.while: ``state = operand; while cond(*state): state = body(*state)``.

    ``operand`` is one value or a tuple/list of values (tensors and tokens); the
    result is one value or a tuple of values accordingly. ``cond`` returns a 0-d i1
    tensor (C1; a Python bool is accepted too); ``body`` returns as many values as
    there are operands, each of its operand's type (C2), so the results have the
    operands' types (C3). ``cond`` is tested before every iteration: zero iterations
    return the operands unchanged.

    >>> i, s = xo.while_((xo.tensor(1), xo.tensor(0)),
    ...                  lambda i, s: xo.compare(i, 10, "LT"),
    ...                  lambda i, s: (xo.add(i, 1), xo.add(s, 1)))   # (10, 9)
    """
    op = "while"
    variadic = isinstance(operand, (builtins.tuple, list))
    state = [
        _value(op, "I1", f"operand[{i}]", v)
        for i, v in enumerate(operand if variadic else [operand])
    ]
    n = len(state)
    _callable(op, "C1", "cond", cond, n)
    _callable(op, "C2", "body", body, n)
    while True:
        c = cond(*state)
        if isinstance(c, (bool, np.bool_)):
            keep_going = bool(c)
        else:
            check(
                isinstance(c, Tensor) and c.ndim == 0 and c._dtype.name == "i1",
                op,
                "C1",
                lambda: (
                    f"cond must return a 0-d i1 tensor, got "
                    f"{tstr(c) if isinstance(c, Tensor) else type(c).__name__}"
                ),
            )
            keep_going = bool(c._value)
        if not keep_going:
            return _single_or_tuple(state, variadic)
        new = _results(op, "C2", "body", body(*state))
        check(
            len(new) == n,
            op,
            "C2",
            lambda: (
                f"body must return {n} value{'s' if n != 1 else ''} (one per operand), "
                f"got {len(new)}"
            ),
        )
        for i, (u, v) in enumerate(zip(state, new)):
            check(
                _same_type(u, v),
                op,
                "C2",
                lambda: (
                    f"body result #{i} must keep the loop-carried type {_type(u)}, got {_type(v)}"
                ),
            )
        state = new


# ---------------------------------------------------------------------------------------
# if, case
# ---------------------------------------------------------------------------------------


def _run_branch(op, label, name, fn, args=()):
    out = fn(*args)
    variadic = isinstance(out, (builtins.tuple, list))
    vals = _results(op, label, name, out)
    return _single_or_tuple(vals, variadic)


@declare("if")
def if_(pred, true_branch, false_branch):
    """stablehlo.if: ``true_branch()`` if ``pred`` else ``false_branch()``; only the
    branch taken runs. Branches take no arguments (C1): they read outer values from
    their closure, and return one value or a tuple of values (tensors or tokens), of
    the same types for both branches (C2; see the module docstring).

    >>> x = xo.tensor(3.0)
    >>> xo.if_(xo.compare(x, 0.0, "GT"), lambda: xo.sqrt(x), lambda: xo.negate(x))   # 1.732
    xo.tensor(1.7320508, f32[])
    """
    op = "if"
    p = _pred(op, "I1", "pred", pred, "bool")
    _callable(op, "C1", "true_branch", true_branch, 0)
    _callable(op, "C1", "false_branch", false_branch, 0)
    if p:
        return _run_branch(op, "C3", "true_branch", true_branch)
    return _run_branch(op, "C3", "false_branch", false_branch)


@declare("case")
def case(index, branches):
    """stablehlo.case: ``branches[index]()``, or the last branch when ``index`` is out
    of range (< 0 or >= len(branches)); only that branch runs. ``index`` is a 0-d si32
    tensor (I1; a Python int is accepted), ``branches`` a non-empty sequence (C1) of
    callables without parameters (C2) returning values of the same types (C3).

    >>> xo.case(xo.tensor(-1, "i32"), [lambda: xo.tensor([0, 0]), lambda: xo.tensor([1, 1])])
    ... # [1, 1]: out of range -> last branch (spec example)
    xo.tensor([1, 1], i64[2])
    """
    op = "case"
    i = _pred(op, "I1", "index", index, "si32")
    fns = list(branches) if isinstance(branches, (builtins.tuple, list)) else None
    check(
        fns is not None,
        op,
        "I2",
        lambda: f"branches must be a sequence of callables, got {type(branches).__name__}",
    )
    check(len(fns) > 0, op, "C1", "branches must not be empty")
    for k, fn in enumerate(fns):
        _callable(op, "C2", f"branches[{k}]", fn, 0)
    k = i if 0 <= i < len(fns) else len(fns) - 1
    return _run_branch(op, "C4", f"branches[{k}]", fns[k])


@declare("conditional", spec="xla")
def conditional(branch_index, *args):
    """XLA Conditional, in either form; the computation chosen gets its one operand.

    * ``conditional(pred, true_operand, true_computation, false_operand,
      false_computation)``: ``pred`` a 0-d i1 (PRED) tensor;
      ``true_computation(true_operand)`` if pred, else ``false_computation(false_operand)``.
    * ``conditional(branch_index, branch_computations, branch_operands)``:
      ``branch_index`` a 0-d si32 tensor; runs
      ``branch_computations[b](branch_operands[b])``, with N-1 (the last one) for an index
      out of [0, N).

    Only the chosen computation runs. A computation takes exactly one parameter (which
    may be a tuple of values). xops labels: I1 selector type, I2 the sequences, I3 arity.

    >>> xo.conditional(xo.tensor(True), xo.tensor(2.0), xo.sqrt, xo.tensor(3.0), xo.negate)
    ... # 1.414
    xo.tensor(1.4142135, f32[])
    """
    op = "conditional"
    is_pred = isinstance(branch_index, (bool, np.bool_)) or (
        isinstance(branch_index, Tensor) and branch_index._dtype.name == "i1"
    )
    if is_pred:
        check(
            len(args) == 4,
            op,
            "I2",
            lambda: (
                f"the pred form takes (pred, true_operand, true_computation, "
                f"false_operand, false_computation), got {1 + len(args)} arguments"
            ),
        )
        p = _pred(op, "I1", "pred", branch_index, "bool")
        t_op, t_fn, f_op, f_fn = args
        _callable(op, "I3", "true_computation", t_fn, 1)
        _callable(op, "I3", "false_computation", f_fn, 1)
        if p:
            return _run_branch(op, "I3", "true_computation", t_fn, (t_op,))
        return _run_branch(op, "I3", "false_computation", f_fn, (f_op,))
    check(
        len(args) == 2,
        op,
        "I2",
        lambda: (
            f"the branch_index form takes (branch_index, branch_computations, "
            f"branch_operands), got {1 + len(args)} arguments"
        ),
    )
    b = _pred(op, "I1", "branch_index", branch_index, "si32")
    fns, opnds = args
    check(
        isinstance(fns, (builtins.tuple, list))
        and isinstance(opnds, (builtins.tuple, list))
        and len(fns) == len(opnds)
        and len(fns) > 0,
        op,
        "I2",
        lambda: (
            "branch_computations and branch_operands must be non-empty sequences of the same length"
        ),
    )
    for k, fn in enumerate(fns):
        _callable(op, "I3", f"branch_computations[{k}]", fn, 1)
    k = b if 0 <= b < len(fns) else len(fns) - 1
    return _run_branch(op, "I3", f"branch_computations[{k}]", fns[k], (opnds[k],))


# ---------------------------------------------------------------------------------------
# call, custom_call
# ---------------------------------------------------------------------------------------


@declare("call", spec="xla")
def call(computation, *operands):
    """XLA Call (StableHLO: func.call): ``computation(*operands)``. The number of
    operands must match the computation's parameters (xops label I2).

    >>> xo.call(lambda x: xo.add(x, 2), xo.tensor(1))   # 3 (conformance call.mlir)
    xo.tensor(3, i64[])
    """
    op = "call"
    check(
        callable(computation),
        op,
        "I1",
        lambda: f"computation must be callable, got {type(computation).__name__}",
    )
    check(
        _arity_ok(computation, len(operands)),
        op,
        "I2",
        lambda: (
            f"computation cannot take {len(operands)} argument{'s' if len(operands) != 1 else ''}"
        ),
    )
    return computation(*operands)


_CUSTOM_CALLS = {}
_CUSTOM_CALL_ATTRS = ("has_side_effect", "backend_config", "api_version", "called_computations")


def register_custom_call(name, fn=None):
    """Register ``fn`` as the target ``name`` of :func:`xops.custom_call` (a later
    registration under the same name replaces the earlier one). Usable as a decorator:
    ``@xo.register_custom_call("my_op")``.

    ``fn`` gets the call's inputs as positional arguments, plus those of
    ``has_side_effect``, ``backend_config``, ``api_version``, ``called_computations``
    it names as keyword parameters (all of them if it takes ``**kwargs``).
    """
    if not isinstance(name, str) or not name:
        raise SpecError(
            "register_custom_call", "I1", f"name must be a non-empty string, got {name!r}"
        )
    if fn is None:
        return lambda f: register_custom_call(name, f)
    if not callable(fn):
        raise SpecError(
            "register_custom_call", "I2", f"fn must be callable, got {type(fn).__name__}"
        )
    _CUSTOM_CALLS[name] = fn
    return fn


def _wanted_attrs(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return _CUSTOM_CALL_ATTRS
    names = {
        p.name
        for p in params
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    }
    return builtins.tuple(a for a in _CUSTOM_CALL_ATTRS if a in names)


def _is_computation_ref(c):
    """A function name, a symbol reference (an object with a string ``name``) or a
    callable."""
    return isinstance(c, str) or callable(c) or isinstance(getattr(c, "name", None), str)


@declare("custom_call")
def custom_call(
    call_target_name,
    *inputs,
    has_side_effect=False,
    backend_config="",
    api_version=1,
    called_computations=(),
):
    """stablehlo.custom_call: run the target registered under ``call_target_name``
    (:func:`xops.register_custom_call`) on ``inputs`` and return what it returns.

    ``has_side_effect`` (i1), ``backend_config`` (string), ``api_version`` (si32;
    1 = API_VERSION_ORIGINAL, MLIR's default) and ``called_computations`` (names or
    callables) are the spec's implementation-defined metadata (I3-I6); they are
    checked for type and handed to the target if it asks for them (None stands for
    the default of an attribute left out). An eager call always
    runs, so ``has_side_effect`` changes nothing here. An unknown target is an error.

    >>> xo.register_custom_call("twice", lambda x: xo.add(x, x))
    <function <lambda> at ...>
    >>> xo.custom_call("twice", xo.tensor(2.0))   # 4.0
    xo.tensor(4., f32[])
    """
    op = "custom_call"
    # None stands for an attribute left out (the StableHLO runner passes what it parsed)
    has_side_effect = False if has_side_effect is None else has_side_effect
    backend_config = "" if backend_config is None else backend_config
    api_version = 1 if api_version is None else api_version
    called_computations = () if called_computations is None else called_computations
    check(
        isinstance(call_target_name, str),
        op,
        "I2",
        lambda: f"call_target_name must be a string, got {call_target_name!r}",
    )
    check(
        isinstance(has_side_effect, (bool, np.bool_)),
        op,
        "I3",
        lambda: f"has_side_effect must be a bool, got {has_side_effect!r}",
    )
    check(
        isinstance(backend_config, (str, bytes, dict)),
        op,
        "I4",
        lambda: (
            f"backend_config must be a string (or a dict, as newer versions allow), "
            f"got {type(backend_config).__name__}"
        ),
    )
    check(
        isinstance(api_version, (int, np.integer))
        and not isinstance(api_version, bool)
        and -(2**31) <= api_version < 2**31,
        op,
        "I5",
        lambda: f"api_version must be an si32 integer, got {api_version!r}",
    )
    cc = (
        list(called_computations)
        if isinstance(called_computations, (builtins.tuple, list))
        else None
    )
    check(
        cc is not None and all(_is_computation_ref(c) for c in cc),
        op,
        "I6",
        lambda: (
            f"called_computations must be a sequence of names or callables, got "
            f"{called_computations!r}"
        ),
    )
    fn = _CUSTOM_CALLS.get(call_target_name)
    if fn is None:
        known = ", ".join(sorted(_CUSTOM_CALLS)) or "none"
        raise SpecError(
            op,
            "I2",
            f"no custom call target named {call_target_name!r} is "
            f"registered (xo.register_custom_call(name, fn) adds one; "
            f"registered: {known})",
        )
    values = dict(
        has_side_effect=bool(has_side_effect),
        backend_config=backend_config,
        api_version=int(api_version),
        called_computations=builtins.tuple(cc),
    )
    kwargs = {k: values[k] for k in _wanted_attrs(fn)}
    return fn(*inputs, **kwargs)
