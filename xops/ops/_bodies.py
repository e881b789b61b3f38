"""Bodies: the regions reduce, reduce_window, select_and_scatter, scatter, sort (the
comparator), map (the computation) and all_reduce take, in one place -- what a body is,
and the checks every op makes on it.

**What a body is.** Any Python callable over xops ops (a spec body maps 0-d values; xops
calls it on whole arrays, so it must be built from elementwise ops). Some bodies are
known to be one elementwise op, so that the op can run a specialised kernel instead of
calling the body; a body says what it is in one of three ways:

* a :class:`Body` tagged at construction: ``Body.builtin("add")``, ``Body.compare("GE")``
  (a comparator or select direction), ``Body.overwrite()`` (``lambda a, b: b``), or
  ``Body.traced(fn, name)`` (a region the StableHLO executor runs: never recognised);
* an xops op function itself (``xo.add``, ``xo.maximum``): known by identity;
* a user's ``lambda``/``def`` whose bytecode is exactly one call of a known xops
  function on its parameters, in order, and nothing else: ``lambda a, b: xo.add(a, b)``,
  ``lambda a, b: xo.compare(a, b, "GE")``, ``def f(x, y): return maximum(x, y)``, or
  ``lambda a, b: b``. The function called is resolved through the body's globals, its
  closure cells and attribute reads *on modules only*, and must be the very function
  object of a known op, or a helper function that is itself such a body (one call, its
  parameters passed through: ``lambda a, b: my_add(a, b)`` with
  ``def my_add(x, y): return xo.add(x, y)``; up to 8 helpers deep). Answers are
  remembered per code object, globals and closure cells, and re-read when a name the
  body resolved is rebound. Recognition reads the code, never calls the body on sample
  values: a body that merely agrees with ``add`` on some inputs is never taken for it.
  Anything else runs on the generic, vectorised path.

**Checks** (each op passes its own labels): :func:`check_arity` (the region's arity),
:func:`outputs` (how many values come back; a Python number becomes a 0-d tensor of its
default type, as a returned constant would), :func:`result_types` (one call on 0-d
values: 0-d results of promotable element types, spec ``is_promotable``) and
:func:`call` (a call on whole arrays: elementwise results of the body's types).
"""

import builtins
import dis
import inspect
import types

import numpy as np

from ..autodiff.local import closure_error, describe
from ..tensor import Tensor
from . import elementwise as _E
from ._core import SpecError, as_tensor, check, check_arity, tstr

__all__ = [
    "Body",
    "BINARY_OPS",
    "DIRECTIONS",
    "binary_op_name",
    "compare_call",
    "comparison_direction",
    "is_overwrite",
    "check_arity",
    "outputs",
    "result_types",
    "call",
    "is_promotable",
    "trace_program",
    "describe",
    "checked_results",
    "closure_error",
]

# spec name -> attribute name in xops (the elementwise binary ops a body may be)
BINARY_OPS = {
    "add": "add",
    "multiply": "multiply",
    "maximum": "maximum",
    "minimum": "minimum",
    "and": "and_",
    "or": "or_",
    "xor": "xor",
    "subtract": "subtract",
}
DIRECTIONS = ("EQ", "NE", "GE", "GT", "LE", "LT")


class Body:
    """A body that carries what it is. ``kind`` is ``"builtin"`` (``op`` one of
    :data:`BINARY_OPS`, ``"compare"`` with ``direction`` and ``compare_type``, or
    ``"overwrite"``) or ``"traced"`` (a StableHLO region: ``fn`` runs it). Calling a Body
    calls ``fn``; ``inspect.signature`` sees ``fn``'s signature."""

    __slots__ = ("kind", "op", "direction", "compare_type", "fn", "__name__", "__qualname__")

    def __init__(self, kind, fn, name, op=None, direction=None, compare_type=None):
        self.kind, self.fn, self.op = kind, fn, op
        self.direction, self.compare_type = direction, compare_type
        self.__name__ = self.__qualname__ = name

    @classmethod
    def builtin(cls, op):
        """The elementwise binary op ``op`` (a key of :data:`BINARY_OPS`) as a body."""
        if op not in BINARY_OPS:
            raise ValueError(f"Body.builtin: {op!r} is not one of {sorted(BINARY_OPS)}")
        return cls("builtin", getattr(_E, BINARY_OPS[op]), op, op=op)

    @classmethod
    def compare(cls, direction, compare_type=None):
        """``lambda a, b: xo.compare(a, b, direction, compare_type)`` as a body."""
        direction = str(direction).upper()
        if direction not in DIRECTIONS:
            raise ValueError(
                f"Body.compare: direction must be one of {DIRECTIONS}, got {direction!r}"
            )

        def compare(a, b):
            return _E.compare(a, b, direction, compare_type)

        return cls(
            "builtin",
            compare,
            f"compare_{direction}",
            op="compare",
            direction=direction,
            compare_type=compare_type,
        )

    @classmethod
    def overwrite(cls):
        """``lambda a, b: b`` (scatter's overwrite) as a body."""

        def overwrite(a, b):
            return b

        return cls("builtin", overwrite, "overwrite", op="overwrite")

    @classmethod
    def traced(cls, fn, name):
        """A region the StableHLO executor runs with ``fn``: opaque to recognition."""
        return cls("traced", fn, name)

    def __call__(self, *args):
        return self.fn(*args)

    @property
    def __signature__(self):
        return inspect.signature(self.fn)

    def __repr__(self):
        what = self.op if self.kind == "builtin" else self.kind
        if self.direction:
            what = f"{what} {self.direction}"
        return f"<body {self.__name__} ({what})>"


# ---------------------------------------------------------------------------------------
# Recognition
# ---------------------------------------------------------------------------------------


_KNOWN = {}


def _known_functions():
    """Function object -> spec name, for the ops a user's body may call."""
    if not _KNOWN:
        _KNOWN.update({getattr(_E, attr): spec for spec, attr in BINARY_OPS.items()})
        _KNOWN[_E.compare] = "compare"
    return _KNOWN


# instructions that do not change what a one-call body computes
_NEUTRAL = {
    "RESUME",
    "NOP",
    "CACHE",
    "PRECALL",
    "PUSH_NULL",
    "COPY_FREE_VARS",
    "EXTENDED_ARG",
    "MAKE_CELL",
}
# *args / **kwargs / generator / coroutine code flags
_ODD_FLAGS = 0x04 | 0x08 | 0x20 | 0x80 | 0x100 | 0x200


def _plain(fn, nparams=2):
    """The code of ``fn`` if it is a plain Python function of ``nparams`` positional
    parameters (no defaults used, no *args/**kwargs, not a generator), else None."""
    if not isinstance(fn, types.FunctionType):
        return None
    code = fn.__code__
    if (
        code.co_argcount != nparams
        or code.co_kwonlyargcount
        or code.co_posonlyargcount > nparams
        or code.co_flags & _ODD_FLAGS
    ):
        return None
    return code


def _plain_two(fn):
    return _plain(fn, 2)


_HELPER_DEPTH = 8  # helper functions followed inside one another, at most
_MISSING = object()


def _global(fn, name, deps):
    """``name`` as ``fn``'s code reads it (its globals, then builtins), noted in deps."""
    g = fn.__globals__
    obj = g.get(name, _MISSING)
    if obj is _MISSING:
        obj = getattr(builtins, name, _MISSING)
    if obj is not _MISSING:
        deps.append(("g", g, name, obj))
    return obj


def _substitute(arg, outer):
    """A helper's argument description in terms of its caller's (``outer``: the caller's
    descriptions of the helper's parameters)."""
    return outer[arg[1]] if arg[0] == "param" else arg


def _call_of_known_op(fn, nparams=2, depth=0, deps=None):
    """(spec name, positional args, keyword args) if the user's ``fn`` is one call of a
    known op, each parameter given as ("param", i) and constants as ("const", v); else
    None. The call may go through helper functions that are themselves exactly one call
    (``lambda a, b: my_add(a, b)`` with ``def my_add(x, y): return xo.add(x, y)``),
    followed up to _HELPER_DEPTH deep. Reads the bytecode (user callables only: tagged
    bodies say what they are); ``deps`` collects what the answer depends on (the
    globals, closure cells and module attributes read), for :func:`_recognised`."""
    deps = [] if deps is None else deps
    known = _known_functions()
    try:
        if fn in known:  # the op function itself: its parameters in order
            return known[fn], [("param", i) for i in range(nparams)], {}
    except TypeError:  # unhashable callable
        return None
    code = _plain(fn, nparams)
    if code is None:
        return None
    params = code.co_varnames[:nparams]
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    stack = []
    kwnames = ()
    calls = 0
    for ins in dis.get_instructions(fn):
        name = ins.opname
        if name in _NEUTRAL:
            continue
        if name == "LOAD_GLOBAL":
            obj = _global(fn, ins.argval, deps)
            if obj is _MISSING:
                return None
            stack.append(("obj", obj))
        elif name == "LOAD_DEREF":
            cell = cells.get(ins.argval)
            if cell is None:
                return None
            try:
                stack.append(("obj", cell.cell_contents))
            except ValueError:  # empty cell
                return None
            deps.append(("c", cell, None, cell.cell_contents))
        elif name in ("LOAD_ATTR", "LOAD_METHOD"):
            if not stack or stack[-1][0] != "obj" or not isinstance(stack[-1][1], types.ModuleType):
                return None  # attribute reads on modules only: no properties run
            mod = stack.pop()[1]
            obj = getattr(mod, ins.argval, _MISSING)
            if obj is _MISSING:
                return None
            deps.append(("a", mod, ins.argval, obj))
            stack.append(("obj", obj))
        elif name in ("LOAD_FAST", "LOAD_FAST_BORROW"):  # (3.14: _BORROW)
            if ins.argval not in params:
                return None
            stack.append(("param", params.index(ins.argval)))
        elif name in ("LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW_LOAD_FAST_BORROW"):  # 3.13+
            for v in ins.argval:
                if v not in params:
                    return None
                stack.append(("param", params.index(v)))
        elif name == "LOAD_CONST":
            stack.append(("const", ins.argval))
        elif name == "KW_NAMES":  # 3.11/3.12: names live in co_consts
            kwnames = code.co_consts[ins.arg]
        elif name in ("CALL", "CALL_KW"):
            if name == "CALL_KW":  # 3.13+: the names tuple is on the stack
                if not stack or stack[-1][0] != "const":
                    return None
                kwnames = stack.pop()[1]
            n = ins.arg
            if calls or len(stack) != n + 1:
                return None
            callee, args = stack[0], stack[1:]
            if callee[0] != "obj":
                return None
            try:
                spec = known.get(callee[1])
            except TypeError:
                return None
            npos = n - len(kwnames)
            if spec is None:  # a helper: one call of a known op on its parameters
                if kwnames or depth >= _HELPER_DEPTH:
                    return None
                deps.append(("a", callee[1], "__code__", getattr(callee[1], "__code__", None)))
                inner = _call_of_known_op(callee[1], n, depth + 1, deps)
                if inner is None:
                    return None
                spec, ipos, ikw = inner
                pos = [_substitute(a, args) for a in ipos]
                kw = {k: _substitute(a, args) for k, a in ikw.items()}
            else:
                pos, kw = args[:npos], dict(zip(kwnames, args[npos:]))
            stack = [("call", spec, pos, kw)]
            kwnames = ()
            calls += 1
        elif name == "RETURN_VALUE":
            if calls != 1 or len(stack) != 1 or stack[0][0] != "call":
                return None
            _, spec, pos, kw = stack[0]
            return spec, pos, kw
        else:
            return None
    return None


# recognition results by (code, globals, closure cells): the answer and what it read
_SEEN = {}
_SEEN_MAX = 512


def _still(dep):
    kind, where, name, obj = dep
    try:
        if kind == "g":
            now = where.get(name, _MISSING)
            if now is _MISSING:
                now = getattr(builtins, name, _MISSING)
        elif kind == "c":
            now = where.cell_contents
        else:
            now = getattr(where, name, _MISSING)
    except ValueError:  # a cell emptied since
        return False
    return now is obj


def _recognised(fn, nparams=2):
    """:func:`_call_of_known_op` of ``fn``, remembered per code object, globals and
    closure cells, and re-used while every name it read still refers to the same
    object (so a lambda written inside a loop is read once, and rebinding a global the
    body calls is noticed)."""
    if isinstance(fn, types.FunctionType) and fn not in _known_functions():
        cells = fn.__closure__ or ()
        key = (fn.__code__, id(fn.__globals__), tuple(map(id, cells)), nparams)
        hit = _SEEN.get(key)
        if (
            hit is not None
            and hit[1] is fn.__globals__
            and all(a is b for a, b in zip(hit[2], cells))
            and all(_still(d) for d in hit[3])
        ):
            return hit[0]
        deps = []
        answer = _call_of_known_op(fn, nparams, deps=deps)
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.clear()
        _SEEN[key] = (answer, fn.__globals__, cells, deps)  # (keeps the ids' objects alive)
        return answer
    return _call_of_known_op(fn, nparams)


def binary_op_name(fn):
    """The spec name of the elementwise binary op ``fn`` is (``"add"``, ``"multiply"``,
    ``"maximum"``, ``"minimum"``, ``"and"``, ``"or"``, ``"xor"``, ``"subtract"``): a
    ``Body.builtin``, the xops function itself, or a lambda/def that calls it once on its
    two parameters in order and returns the result. None otherwise.

    >>> binary_op_name(xo.add), binary_op_name(lambda a, b: xo.maximum(a, b))
    ('add', 'maximum')
    """
    if isinstance(fn, Body):
        return fn.op if fn.op in BINARY_OPS else None
    call = _recognised(fn)
    if call is None:
        return None
    spec, pos, kw = call
    if spec == "compare" or kw or pos != [("param", 0), ("param", 1)]:
        return None
    return spec


def compare_call(fn, nparams=2):
    """``(direction, compare_type)`` if ``fn`` takes ``nparams`` parameters and is
    ``xo.compare(p0, p1, DIR[, compare_type])`` on its first two (the others unused;
    direction and compare_type positional or by keyword, compare_type None when not
    given), or a ``Body.compare`` (two parameters), else None. Used for select bodies
    (nparams=2) and sort comparators (nparams=2n). Swapped parameters are not
    recognised."""
    if isinstance(fn, Body):
        return (fn.direction, fn.compare_type) if fn.op == "compare" and nparams == 2 else None
    if nparams != 2:
        if not isinstance(fn, types.FunctionType) or fn.__code__.co_argcount != nparams:
            return None
    call = _recognised(fn, nparams)
    if call is None:
        return None
    spec, pos, kw = call
    if spec != "compare" or pos[:2] != [("param", 0), ("param", 1)]:
        return None
    rest = pos[2:]
    names = ["comparison_direction", "compare_type"]
    if len(rest) > 2 or any(k not in names[len(rest) :] for k in kw):
        return None
    given = dict(zip(names, rest))
    given.update(kw)
    vals = {}
    for k, v in given.items():
        if v[0] != "const" or not (v[1] is None or isinstance(v[1], str)):
            return None
        vals[k] = v[1].upper() if isinstance(v[1], str) else None
    direction = vals.get("comparison_direction")
    if direction not in DIRECTIONS:
        return None
    return direction, vals.get("compare_type")


def comparison_direction(fn):
    """``"GE"``, ``"GT"``, ``"LE"``, ``"LT"``, ``"EQ"`` or ``"NE"`` if ``fn`` is
    ``lambda a, b: xo.compare(a, b, DIR)`` (or ``Body.compare(DIR)``) with the element
    type's default comparison (no compare_type, or None), else None."""
    call = compare_call(fn)
    if call is None or call[1] is not None:
        return None
    return call[0]


def is_overwrite(fn):
    """True if ``fn`` is ``Body.overwrite()``, or ``lambda a, b: b`` (a def returning its
    second parameter and doing nothing else), read from its bytecode."""
    if isinstance(fn, Body):
        return fn.op == "overwrite"
    code = _plain_two(fn)
    if code is None:
        return False
    ins = [i for i in dis.get_instructions(fn) if i.opname not in _NEUTRAL]
    return (
        len(ins) == 2
        and ins[0].opname in ("LOAD_FAST", "LOAD_FAST_BORROW")
        and ins[0].argval == code.co_varnames[1]
        and ins[1].opname == "RETURN_VALUE"
    )


# ---------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------


def is_promotable(x, y):
    """The spec's is_promotable(x, y) on element types: same kind (i1; integer, signed or
    unsigned; float; complex) and bitwidth(x) <= bitwidth(y)."""

    def kind(dt):
        return "int" if dt.kind in ("si", "ui") else dt.kind

    return kind(x) == kind(y) and x.bits <= y.bits


def outputs(op, label, what, value, n):
    """A body's return value as a list of n Tensors (a Python number becomes a 0-d
    tensor of its default element type)."""
    vals = list(value) if isinstance(value, (tuple, list)) else [value]
    check(
        len(vals) == n,
        op,
        label,
        lambda: f"{what} must return {n} value{'s' if n != 1 else ''}, got {len(vals)}",
    )
    out = []
    for v in vals:
        if not isinstance(v, Tensor):
            try:
                v = as_tensor(v, None, op, f"{what} result")
            except SpecError:
                raise SpecError(
                    op, label, f"{what} must return tensors, got {type(v).__name__}"
                ) from None
        out.append(v)
    return out


def result_types(op, label, what, body, args, xs):
    """The element types E_i the body computes in: those it returns for the 0-d values
    ``args`` (one call, one result per tensor of ``xs``). Each must be 0-d and
    promotable from its input's type (reduce C6, reduce_window C13, select_and_scatter
    C10, scatter C15)."""
    check_arity(op, label, what, body, len(args))
    outs = outputs(op, label, what, body(*args), len(xs))
    for i, (o, x) in enumerate(zip(outs, xs)):
        check(
            o.ndim == 0,
            op,
            label,
            lambda: (
                f"{what} must map 0-d values to 0-d values, got {tstr(o)} from "
                f"{', '.join(tstr(a) for a in args)}"
            ),
        )
        check(
            is_promotable(x._dtype, o._dtype),
            op,
            label,
            lambda: (
                f"{what} result #{i} has element type {o._dtype.name}, which "
                f"{x._dtype.name} inputs cannot be promoted to"
            ),
        )
    return [o._dtype for o in outs]


def checked_results(op, label, what, body, args, dtypes, shape):
    """Call a body on whole tensors (``args``, of ``shape``; on any device) and check
    that its results are elementwise of ``dtypes``: the result tensors, each of
    ``shape`` or 0-d (not broadcast)."""
    outs = outputs(op, label, what, body(*args), len(dtypes))
    for i, (o, dt) in enumerate(zip(outs, dtypes)):
        if o.requires_grad:  # (recording is on only when no operand needs a gradient)
            closure_error(op, body, what)
        check(
            o._dtype is dt,
            op,
            label,
            lambda: f"{what} result #{i} must keep element type {dt.name}, got {tstr(o)}",
        )
        if tuple(o.shape) != tuple(shape):
            check(
                o.ndim == 0,
                op,
                label,
                lambda: (
                    f"{what} must be elementwise: called on shape {list(shape)} it "
                    f"returned {tstr(o)}"
                ),
            )
    return outs


def call(op, label, what, body, args, dtypes, shape):
    """Call a body on whole arrays (``args``: Tensors of ``shape``); check that its
    results are elementwise of ``dtypes`` (:func:`checked_results`) and return them as
    holder arrays of ``shape`` (a 0-d result broadcast)."""
    vals = []
    for o in checked_results(op, label, what, body, args, dtypes, shape):
        v = o._value
        vals.append(v if v.shape == tuple(shape) else np.broadcast_to(v, shape))
    return vals


# ---------------------------------------------------------------------------------------
# Body programs: a two-operand body of elementwise float ops as a list of instructions
# ---------------------------------------------------------------------------------------


def _trace_once(body, dt, values, ops):
    """One recorded call of ``body`` on 0-d tensors of ``values``: its result as
    (instructions, constants, result register) (see :func:`trace_program`), or None."""
    from ..autodiff.tape import enable_grad
    from ..tensor import _wrap

    args = [_wrap(np.array(v, dt.np), dt) for v in values]
    for a in args:
        a.requires_grad = True  # (leaves: every op on them records its node)
    try:
        with enable_grad():
            out = body(*args)
    except Exception:  # the real call reports it (with its own message) on the generic path
        return None
    if isinstance(out, (tuple, list)):
        if len(out) != 1:
            return None
        (out,) = out
    if not isinstance(out, Tensor):
        return None
    regs = {id(a): k for k, a in enumerate(args)}
    consts, code = [], []

    def const(v):
        bits = np.array(v, dt.np).tobytes()
        for k, c in enumerate(consts):
            if c.tobytes() == bits:
                return len(args) + k
        consts.append(np.array(v, dt.np))
        return len(args) + len(consts) - 1

    def emit(t):  # -> register of tensor t (its node's inputs first), or None
        if id(t) in regs:
            return regs[id(t)]
        if t.ndim != 0 or t._dtype is not dt:
            return None
        node = t._node
        if node is None:  # not derived from the operands by a recorded op: a constant,
            # unless it needs a gradient (the generic path reports that closure)
            return None if t.requires_grad else const(t._value)
        op = ops.get(node.op)
        if op is None or node.multi or len(node.args) < op[1]:
            return None
        operands = []
        for a in node.args[: op[1]]:
            if isinstance(a, Tensor):
                reg = emit(a)
            elif isinstance(a, (int, float)) and not isinstance(a, bool):
                reg = const(a)  # a Python number: a weak operand of the body's type
            else:
                return None
            if reg is None:
                return None
            operands.append(reg)
        if any(a is not None for a in node.args[op[1] :]):
            return None  # (attributes, e.g. a result accuracy: not covered)
        code.append((op[0], operands[0], operands[-1]))  # (unary: a, a)
        regs[id(t)] = ("tmp", len(code) - 1)
        return regs[id(t)]

    try:
        res = emit(out)
    except RecursionError:  # (a body thousands of ops deep)
        return None
    if res is None:
        return None
    base = len(args) + len(consts)  # temporaries after the operands and constants

    def reg(r):
        return base + r[1] if isinstance(r, tuple) else r

    prog = np.array(
        [(c[0], base + k, reg(c[1]), reg(c[2])) for k, c in enumerate(code)], np.int64
    ).reshape(len(code), 4)
    return prog, np.array(consts, dt.np).reshape(len(consts)), reg(res)


def trace_program(body, dt, ops):
    """The two-operand ``body`` on element type ``dt`` as a program of the elementwise
    float ops ``ops`` (spec name -> (opcode, operand count)), or None when it is not
    one: ``(instructions, constants, result register)``, instructions as rows (opcode,
    destination, operand, operand) over registers 0 and 1 (the body's operands), the
    constants, then one register per instruction.

    The body is called on 0-d tensors that require a gradient, and its recorded ops are
    read back from the tape. Anything not derived from the operands by a recorded op is
    a constant: the body is traced on two pairs of values, and must give the same
    program and constants both times (a value computed from the operands through ops
    that do not record -- integer or boolean ones -- would differ between them)."""
    first = _trace_once(body, dt, (0.75, -1.5), ops)
    if first is None:
        return None
    second = _trace_once(body, dt, (-2.25, 3.0), ops)
    if second is None or first[2] != second[2] or not np.array_equal(first[0], second[0]):
        return None
    if first[1].tobytes() != second[1].tobytes():
        return None
    return first
