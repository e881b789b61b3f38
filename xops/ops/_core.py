"""Plumbing shared by every op: operand conversion, type checks, compute domain.

Operands may be Tensors, NumPy arrays or Python scalars. Python scalars are *weak*:
they take the element type of the op's first tensor operand (as in JAX), so
``xo.add(x_bf16, 1)`` stays bf16. NumPy arrays and NumPy scalars keep their own type.
"""

import contextvars
import inspect
import math
import numbers

import numpy as np

from ..dtypes import all_dtypes, as_dtype, from_compute, int_to_float, to_compute
from ..errors import SpecError, check
from ..kernels import elementwise as K
from ..kernels import pool as _pool
from ..registry import _BY_NAME as _OPS
from ..tensor import Tensor, _default_dtype, _wrap, typestr

__all__ = [
    "as_tensor",
    "operands",
    "check",
    "SpecError",
    "typestr",
    "tstr",
    "result",
    "compute",
    "kinds_str",
    "attr_ints",
    "attr_int",
    "check_arity",
]

_PY_SCALARS = (bool, int, float, complex)


def tstr(t):
    """A tensor's spec-style type for messages: ``f32[2,3]``."""
    return typestr(t._dtype, t._value.shape)


def as_tensor(x, dtype=None, op="tensor", name="operand"):
    """``x`` as a Tensor. A Python scalar becomes a 0-d tensor of ``dtype`` (or of its
    default type); a mismatch that would lose information is a SpecError."""
    if type(x) is Tensor:
        return x
    if isinstance(x, Tensor):
        return x
    try:
        if isinstance(x, _PY_SCALARS) and not isinstance(x, np.generic):
            dt = as_dtype(dtype, op) if dtype is not None else _default_dtype(x)
            return _wrap(_weak_scalar(op, name, x, dt), dt)
        if isinstance(x, (np.ndarray, np.generic)):
            dt = as_dtype(x.dtype, op)
            return _wrap(np.array(x, copy=True), dt)
        if isinstance(x, (list, tuple)):
            from ..tensor import tensor

            return tensor(x, dtype)
    except SpecError as e:
        if e.op == op and e.label:
            raise
        # (tensor construction or a dtype lookup refused it: say which op and operand)
        raise SpecError(op, e.label or input_label(op, name), f"{name}: {_message(e)}") from None
    raise SpecError(
        op,
        input_label(op, name),
        f"{name} must be a Tensor, NumPy array or Python scalar, got {type(x).__name__}",
    )


def input_label(op, name):
    """The label of input ``name`` of op ``op`` for errors about its Python-level type:
    the spec's Inputs-table label I<k>, k its position in the public function's
    signature (``"operand #1"`` / ``"inputs[2]"`` name the k-th operand / the sequence)."""
    base = name.split("[")[0].split(" #")[0].strip()
    if " #" in name:
        k = name.split(" #")[1]
        if k.isdigit():
            return f"I{int(k) + 1}"
    d = _OPS.get(op) or _OPS.get(op + "_")  # (the registry: the ops sit above this module)
    fn = d.fn if d is not None else None
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return "I1"
    return f"I{params.index(base) + 1}" if base in params else "I1"


def _message(e):
    """A SpecError's message without its "op (label): " prefix."""
    text = str(e)
    prefix = f"{e.op} ({e.label}): " if e.label else f"{e.op}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


def _weak_scalar(op, name, x, dt):
    """A Python scalar converted to element type ``dt`` (0-d holder array)."""
    if dt.kind == "bool":
        ok = isinstance(x, bool) or (isinstance(x, int) and x in (0, 1))
    elif dt.kind in ("si", "ui"):
        ok = isinstance(x, (bool, int)) and dt.min <= x <= dt.max
        if isinstance(x, int) and not ok and not isinstance(x, bool):
            raise SpecError(
                op,
                input_label(op, name),
                f"Python int {x} for {name} is out of range for {dt.name} [{dt.min}, {dt.max}]",
            )
    elif dt.kind == "float":
        ok = isinstance(x, (bool, int, float))
    else:
        ok = isinstance(x, numbers.Number)
    if not ok:
        raise SpecError(
            op,
            input_label(op, name),
            f"Python {type(x).__name__} {x!r} for "
            f"{name} cannot take "
            f"the element type {dt.name} of the other operands; convert "
            f"explicitly with xo.convert",
        )
    if dt.kind == "float" and isinstance(x, int):
        if -(2**53) <= x <= 2**53:
            x = float(x)  # exact: rounding it below is the one rounding of the int
        elif -(2**63) <= x < 2**63:
            return int_to_float(np.array(x, np.int64), dt).reshape(())  # one rounding
    if dt.kind == "float" and dt.is_narrow:
        return from_compute(np.array(x, np.float64), dt)
    if dt.kind in ("float", "complex"):
        with np.errstate(over="ignore"):  # a too large value rounds to inf (IEEE)
            return np.array(complex(x) if dt.kind == "complex" else x, dt.np)
    if dt.kind in ("si", "ui"):
        return np.array(int(x), np.int64 if dt.kind == "si" else np.uint64).astype(dt.np)
    return np.array(x, dt.np)


def operands(op, *xs, names=None):
    """Convert an op's operands; Python scalars take the first tensor operand's type."""
    dt = None
    for x in xs:
        if isinstance(x, Tensor):
            dt = x._dtype
            break
        if isinstance(x, (np.ndarray, np.generic)):
            dt = as_dtype(x.dtype)
            break
    names = names or [f"operand #{i}" for i in range(len(xs))]
    return [as_tensor(x, dt, op, n) for x, n in zip(xs, names)]


def kinds_str(kinds):
    words = {
        "bool": "boolean (i1)",
        "si": "signed integer",
        "ui": "unsigned integer",
        "float": "floating-point",
        "complex": "complex",
    }
    return ", ".join(words[k] for k in kinds)


def compute(t):
    """The tensor's data in its compute dtype (see xops.dtypes)."""
    return to_compute(t._value, t._dtype)


def result(arr, dt):
    """A new Tensor of element type ``dt`` from a compute-domain array."""
    arr = np.asarray(arr)
    return _wrap(from_compute(arr, dt), dt)


def broadcast_view(v, shape):
    """``np.broadcast_to(v, shape)`` (a read-only view, stride 0 on the broadcast dims)
    for an array ``v`` of ``shape``'s rank whose dims are 1 or the result's: built
    straight from ``v``'s buffer where ``v`` is C-contiguous and not empty (0.7 against
    2.5 us a call; the step's bias, reduce-rule and fill broadcasts), else by
    ``np.broadcast_to``. The view keeps ``v``'s memory alive as any view does."""
    if v.size and v.flags.c_contiguous:
        strides = tuple(0 if n == 1 else s for n, s in zip(v.shape, v.strides))
        r = np.ndarray(shape, v.dtype, v, 0, strides)
        r.flags.writeable = False
        return r
    return np.broadcast_to(v, shape)


def attr_ints(op, label, name, value, length=None):
    """A list of Python ints from an attribute given as a sequence, array or Tensor."""
    if type(value) in (list, tuple) and all(type(v) is int for v in value):
        out = list(value)  # the common spelling: no NumPy round trip
    else:
        if isinstance(value, Tensor):
            value = value._value
        try:
            arr = np.asarray(value)
            if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
                raise TypeError
            out = [int(v) for v in arr.reshape(-1)]
        except (TypeError, ValueError, OverflowError):
            raise SpecError(
                op, label, f"{name} must be a 1-D sequence of integers, got {value!r:.80}"
            ) from None
    if any(v >= _SI64_END or v < -_SI64_END for v in out):
        raise SpecError(
            op, label, f"{name} entries must fit si64 (the attribute's type in the spec), got {out}"
        )
    if length is not None and len(out) != length:
        raise SpecError(op, label, f"{name} must have {length} entries, got {len(out)}: {out}")
    return out


_SI64_END = 1 << 63


def attr_sized_ints(op, labels, name, value, n, size_text, default=1):
    """``n`` ints (``default`` each when the attribute is absent), each > 0 when ``labels``
    = (parse, size, positive) has a positive label; ``size_text`` says what ``n`` is."""
    label_in, label_size, label_pos = labels
    if value is None:
        return [default] * n
    vals = attr_ints(op, label_in, name, value)
    check(
        len(vals) == n,
        op,
        label_size,
        lambda: f"{name} must have {size_text} = {n} entries, got {len(vals)}: {vals}",
    )
    if label_pos:
        check(
            all(v > 0 for v in vals), op, label_pos, lambda: f"{name} must be positive, got {vals}"
        )
    return vals


def attr_pairs(op, label_in, label_shape, name, value, n, size_text):
    """``n`` (low, high) int pairs ((0, 0) each when the attribute is absent), checked to
    have shape [n, 2]; ``size_text`` says what ``n`` is."""
    if value is None:
        return [(0, 0)] * n
    if isinstance(value, Tensor):
        value = value._value
    try:
        arr = np.asarray(value)
        if arr.dtype == object or (arr.size and arr.dtype.kind not in "iu"):
            raise TypeError
    except (TypeError, ValueError):
        raise SpecError(
            op, label_in, f"{name} must be (low, high) pairs of integers, got {value!r:.80}"
        ) from None
    if arr.size == 0:
        arr = arr.reshape(-1, 2)
    check(
        arr.shape == (n, 2),
        op,
        label_shape,
        lambda: (
            f"{name} must have shape [{size_text}, 2] = [{n}, 2], "
            f"got {list(arr.shape)}: {arr.tolist()}"
        ),
    )
    return [(int(lo), int(hi)) for lo, hi in arr]


def check_arity(op, label, what, fn, n):
    """A body/computation/comparator must be callable with n positional arguments (the
    check the spec's region types make); unknowable signatures (builtins) pass."""
    check(callable(fn), op, label, lambda: f"{what} must be callable, got {type(fn).__name__}")
    try:
        inspect.signature(fn).bind(*range(n))
    except TypeError:
        raise SpecError(
            op,
            label,
            f"{what} must take {n} argument{'s' if n != 1 else ''}, "
            f"got a callable with signature "
            f"{inspect.signature(fn)}",
        ) from None
    except ValueError:
        pass


def attr_int(op, label, name, value):
    if isinstance(value, Tensor):
        value = value._value
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, (int, np.integer))
        and not (isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu")
    ):
        raise SpecError(op, label, f"{name} must be an integer, got {value!r}")
    value = int(value)
    if not -_SI64_END <= value < _SI64_END:
        raise SpecError(
            op, label, f"{name} must fit si64 (the attribute's type in the spec), got {value}"
        )
    return value


def attr_bool(op, label, name, value):
    """A boolean attribute (an i1 in the spec) as a Python bool."""
    check(
        isinstance(value, (bool, np.bool_)),
        op,
        label,
        lambda: f"{name} must be a bool (an i1 attribute), got {value!r}",
    )
    return bool(value)


def check_kind(op, label, name, t, kinds, what=None):
    """Tensor ``t`` (operand ``name``) must have an element type of one of ``kinds``
    (``what`` names them in the message; default :func:`kinds_str`)."""
    check(
        t._dtype.kind in kinds,
        op,
        label,
        lambda: f"{name} must be a tensor of {what or kinds_str(kinds)} type, got {tstr(t)}",
    )


def bound_arguments(fn, args, kwargs):
    """The values of ``fn(*args, **kwargs)``'s parameters in signature order, defaults
    applied (as the tape binds an op's arguments, :func:`binder`), by name: a reference
    implementation takes exactly its op's arguments this way, so the spec's parameter
    list stays in one place, the op's signature."""
    known = _SIGNATURES.get(fn)
    if known is None:  # (inspect.signature costs more than the binding: once per function)
        sig = inspect.signature(fn)
        known = _SIGNATURES[fn] = (tuple(sig.parameters), binder(sig))
    names, bind = known
    return dict(zip(names, bind(args, kwargs, None)))


_SIGNATURES = {}  # function -> (parameter names, its binder): a fixed set of functions


def binder(sig):
    """``bind(args, kwargs, kept)``: the call's arguments bound to the op's parameters in
    signature order, defaults applied, ``kept`` (canonical attributes, see :func:`keep`)
    in place of the arguments as given: what the tape node stores. Plain signatures (no
    ``*args``, ``**kwargs`` or positional-only parameters) bind by position from
    precomputed names and defaults; anything else, or a call the fast way cannot bind
    (a missing or unknown argument), goes through ``inspect`` (its errors unchanged)."""
    params = list(sig.parameters.values())
    names = [p.name for p in params]
    defaults = [p.default for p in params]
    index = {n: i for i, n in enumerate(names)}
    kinds = [p.kind for p in params]
    plain = all(k in (_POS_OR_KW, _KW_ONLY) for k in kinds)
    positional = kinds.count(_POS_OR_KW)  # (keyword-only ones come after these)
    empty = _EMPTY

    def slow(args, kwargs, kept):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        if kept:
            bound.arguments.update(kept)
        return tuple(bound.arguments.values())

    def bind(args, kwargs, kept):
        n = len(args)
        if not plain or n > positional:
            return slow(args, kwargs, kept)
        values = [*args, *defaults[n:]]
        for changes, fresh_only in ((kwargs, True), (kept, False)):
            for k, v in changes.items() if changes else ():
                i = index.get(k)
                if i is None or (fresh_only and i < n):
                    return slow(args, kwargs, kept)
                values[i] = v
        if any(v is empty for v in values):  # (identity: `in` would compare tensors)
            return slow(args, kwargs, kept)
        return tuple(values)

    return bind


_EMPTY = inspect.Parameter.empty
_POS_OR_KW, _KW_ONLY = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY


# ---------------------------------------------------------------------------------------
# Dispatch fast path (see xops.autodiff.tape.primitive)
# ---------------------------------------------------------------------------------------

try:  # np.errstate(all="ignore") without its per-call object and keyword handling
    from numpy._core.umath import _extobj_contextvar as _ERRCTX
    from numpy._core.umath import _make_extobj

    # all four conditions ignored: the error callback is then never called, and the
    # buffer size only matters to casting loops, which the fast path never runs
    _IGNORE = _make_extobj(all="ignore")
    # a context holding only that error state: entering it for one call (Context.run)
    # costs a quarter of setting and resetting the variable in the caller's context
    _QUIET = contextvars.Context()
    _QUIET.run(_ERRCTX.set, _IGNORE)
    _quiet_run = _QUIET.run
except ImportError:  # another NumPy layout: the public context manager
    _ERRCTX = None

    def _quiet_run(fn, *args):
        with np.errstate(all="ignore"):
            return fn(*args)


class _Quiet:
    """``np.errstate(all="ignore")`` as a context manager that sets NumPy's error-state
    variable to the prebuilt ignore-all state and resets it on exit (0.3 us a block
    where the public one, which builds its state per block, costs ~1 us): the spec
    defines NaN/inf results, so xops's NumPy calls warn nothing. Nests, and a copied
    context (a helper thread's) carries it, as the public one."""

    __slots__ = ("_token",)

    def __enter__(self):
        self._token = _ERRCTX.set(_IGNORE)
        return self

    def __exit__(self, *exc):
        _ERRCTX.reset(self._token)
        return False


def quiet():
    """A context manager in which NumPy warns about no floating-point condition, as
    ``np.errstate(all="ignore")`` (see :class:`_Quiet`)."""
    return _Quiet() if _ERRCTX is not None else np.errstate(all="ignore")


def _quiet_call(fn, *args):
    """``fn(*args)`` (a ufunc on arrays of one type) under ``np.errstate(all="ignore")``
    (the spec defines NaN/inf results), at a fraction of the context manager's cost."""
    try:
        return _quiet_run(fn, *args)
    except RuntimeError:
        if _ERRCTX is None:
            raise
    # the quiet context is entered already: by another thread (a ufunc on large arrays
    # lets go of the GIL), or the ufunc raised a RuntimeError itself (it will again)
    token = _ERRCTX.set(_IGNORE)
    try:
        return fn(*args)
    finally:
        _ERRCTX.reset(token)


# weak Python scalars the fast path converts: the conversion is exact for these ranges
# (as_tensor's own rules give the same value), larger ones take the full path
_FAST_INT = {"float": 1 << 24, "si": 127, "ui": 127}
# operands from this many elements go through binary_map (two pieces, or a broadcast one
# row by row); below, the plain ufunc call
_MAPPED = min(K.SPLIT_THRESHOLD, 1 << 16)
_new_tensor = Tensor.__new__


def _fast_scalar(s, dt):
    """Weak Python scalar ``s`` as a 0-d array of non-narrow type ``dt``, or None where
    the full path must decide (a type mismatch, a rounding, a range error)."""
    ts = type(s)
    if ts is float:
        if dt.kind != "float":
            return None
        # (not >: NaN passes too; |s| <= 3e38 cannot overflow float32 when converted)
        # (infinities are exact in every float type: -inf, a max's init value, passes)
        return None if 3.0e38 < abs(s) < math.inf else np.array(s, dt.np)
    if ts is int:
        lim = _FAST_INT.get(dt.kind)
        if lim is None or not (-lim <= s <= lim) or (s < 0 and dt.kind == "ui"):
            return None
        return np.array(s, dt.np)
    return None


def fast_binary(op, ufunc, kinds):
    """Give the ``@primitive`` binary elementwise ``op`` a dispatch fast path for the
    calls its body answers with ``ufunc`` on the holder arrays: two plain Tensors of one
    non-narrow element type of ``kinds`` and one shape (or one such Tensor and a weak
    Python scalar exactly representable in its type), no gradient required. Any other
    call returns None and runs the op's full path (all checks, same errors).

    The element types the path takes are validated once, here: the table holds the ids
    of the registered types (never collected, so ids stay theirs) of the op's kinds that
    are held as computed; quantized and narrow types are not in it. A call then costs
    one dict lookup, an identity test of the two types and a shape comparison. Integer
    ufuncs on arrays raise no floating-point warnings, so only float/complex calls pay
    for the quiet error state. Large operands go through :func:`binary_map` (two pieces, or
    a broadcast operand row by row). ``op._fast_grad`` takes the same calls where an
    operand requires a gradient (the op's rule reads the operands as given: nothing
    kept)."""
    types = [d for d in all_dtypes() if d.kind in kinds and d.compute == d.np]
    # type id -> whether it computes in floating point (then runs in the quiet error state)
    table = {id(d): d.kind in ("float", "complex") for d in types}
    lookup, split = table.get, _MAPPED
    # (closure cells: no global lookups on the path)
    tensor, ndarray, new, quiet_run = Tensor, np.ndarray, _new_tensor, _quiet_run

    def fast(args, grad=False):
        try:
            x, y = args
        except ValueError:
            return None
        if type(x) is tensor:
            dt = x._dtype
            quiet = lookup(id(dt))
            if quiet is None or (x.requires_grad and not grad):
                return None
            if type(y) is tensor:
                if y._dtype is not dt or (y.requires_grad and not grad):
                    return None
                a, b = x._value, y._value
                if a.shape != b.shape:
                    return None
            else:
                a, b = x._value, _fast_scalar(y, dt)
                if b is None:
                    return None
            large = a.size >= split
        elif type(y) is tensor:
            dt = y._dtype
            quiet = lookup(id(dt))
            if quiet is None or (y.requires_grad and not grad):
                return None
            a, b = _fast_scalar(x, dt), y._value
            if a is None:
                return None
            large = b.size >= split
        else:
            return None
        if large:  # (binary_map: a pooled result, two pieces, or a broadcast row by row)
            r = _quiet_call(binary_map, ufunc, a, b) if quiet else binary_map(ufunc, a, b)
        elif not quiet:
            r = ufunc(a, b)
        else:
            try:  # _quiet_call, inlined (a call costs ~0.1 us)
                r = quiet_run(ufunc, a, b)
            except RuntimeError:
                r = _quiet_call(ufunc, a, b)
        # _wrap, inlined (its call and its device-array test cost ~0.1 us of ~1.1)
        if type(r) is not ndarray:
            r = np.asarray(r)  # (a NumPy scalar for 0-d operands: the tensor holds 0-d)
        r.setflags(False)
        t = new(tensor)
        t._value = r
        t._dtype = dt
        t.requires_grad = False
        t.grad = None
        t._node = None
        return t

    op._fast = fast
    op._fast_grad = fast_grad_of(fast)
    return fast


def fast_grad_of(fast, kept=None):
    """``op._fast_grad`` (see xops.autodiff.tape.primitive) of the dispatch fast path
    ``fast(args, grad)``: the same calls where an operand requires a gradient, answered
    as (result, ``kept(args)``: the attributes the op's body would keep for its rule, or
    None where it keeps none), or None."""

    def fast_grad(args):
        out = fast(args, True)
        if out is None:
            return None
        return out, None if kept is None else kept(args)

    return fast_grad


def binary_map(ufunc, a, b):
    """``ufunc(a, b)`` for operands of one type, each of the result's shape or 0-d
    (a weak scalar): a C-contiguous operand and one broadcast along its trailing dims
    (a bias) are computed row by row (``K.rows_binary``); C-contiguous ones into a
    result from the buffer pool (no page faults: a training step's maps of a few MiB
    otherwise fault in fresh memory, depending on what glibc returned to the OS), from
    ``K.SPLIT_THRESHOLD`` elements in two pieces on two threads (``K.split_ufunc``);
    the same bits either way (each element is its own), into a result of that type;
    anything else is the plain call."""
    full = a if a.ndim else b
    contiguous = a.flags.c_contiguous and b.flags.c_contiguous
    if not contiguous and a.ndim and b.ndim:
        r = K.rows_binary(ufunc, a, b)  # (a full operand and a broadcast one: a bias)
        if r is not None:
            return r
    if not contiguous or a.dtype != b.dtype or (a.ndim and b.ndim and a.shape != b.shape):
        return ufunc(a, b)
    key = (ufunc, a.dtype)
    out = _RESULT_TYPES.get(key)
    if out is None:  # (divide: integers give float64)
        out = _RESULT_TYPES[key] = ufunc.resolve_dtypes((a.dtype, a.dtype, None))[-1]
    res = _pool.empty(full.shape, out)
    n = full.size
    if n >= K.PARALLEL_MAP_THRESHOLD and a.ndim and b.ndim and out == a.dtype:
        kern = K.FULL_BINARY.get(ufunc) if out.char in "fd" else None
        if kern is not None:  # (float32 / float64: both threads, NumPy's bits)
            kern(n, a.reshape(-1), b.reshape(-1), res.reshape(-1))
            return res
    if K.split_now(n):
        return K.split_ufunc(ufunc, a, b, res)
    return ufunc(a, b, out=res)


_RESULT_TYPES = {}  # (ufunc, operand type) -> result type (resolving costs ~0.6 us)
