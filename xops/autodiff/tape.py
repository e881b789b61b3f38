"""The tape engine: record, then walk back in topological order and accumulate.

Recording. A differentiable op is a ``@primitive``; when grad mode is on and one of its
tensor arguments requires a gradient, the call leaves a :class:`Node` on each float or
complex output: the op's name, its gradient rule, the arguments it was called with and
its outputs. Nothing else is stored; there is no global tape object.

Backward. From the root, collect nodes depth-first, then walk them in reverse
topological order: each node's rule maps the cotangents of its outputs to cotangents
of its arguments, which accumulate (with ``xo.add``) per tensor. Leaves receive
``.grad`` (accumulating across calls, as in PyTorch); the functional API returns the
cotangents of its inputs instead. Rules run under ``no_grad`` unless a graph of the
backward pass is wanted (``create_graph=True``, nested ``xo.grad``).

Rules. ``rule(cotangent, out, *args)`` gets the cotangent of the output (a tuple of
them, zeros filled in, for ops with several outputs), the output(s), and the op's
arguments bound to its parameters in signature order (defaults applied). It returns
one entry per parameter — a cotangent Tensor, None (no gradient), or a list of them
for a parameter that takes a sequence of tensors; a shorter tuple means None for the
rest.
"""

import bisect
import functools
import inspect
import os
import sys
import threading
import weakref

import numpy as np

from .. import registry as _registry
from ..errors import SpecError
from ..limits import config as _config
from ..registry import op as _op  # ops by name, at call time: they sit above the tape
from ..tensor import Tensor, _leaves, _wrap
from ..ops._core import binder as _binder
from . import boundary as _boundary
from .helpers import ones_like as _ones_like, zeros_like as _zeros_like

__all__ = [
    "primitive",
    "keep",
    "no_grad",
    "enable_grad",
    "is_grad_enabled",
    "backward",
    "grad",
    "value_and_grad",
    "vjp",
]


class _Mode(threading.local):
    enabled = True
    kept = None  # while a recorded op runs: op name -> its canonical attributes


_mode = _Mode()


def is_grad_enabled():
    """Whether ops record on the tape now (False inside ``xo.no_grad()``)."""
    return _mode.enabled


class no_grad:
    """Context manager (and decorator): ops run inside record nothing."""

    _value = False

    def __enter__(self):
        self._prev = _mode.enabled
        _mode.enabled = self._value
        return self

    def __exit__(self, *exc):
        _mode.enabled = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)

        return wrapped


class enable_grad(no_grad):
    """Context manager: turn recording back on inside a ``no_grad`` block."""

    _value = True


class _Held:
    """A differentiable output as its node holds it: weakly. The output holds the node
    (``_node``), so a strong reference back would make every recorded graph a reference
    cycle, freed by the cyclic GC only, generations later: a training loop's graphs then
    piled up between collections and fragmented the heap (issue 15, the RSS slope). The
    value stays, for a stand-in when the rule needs an output nothing holds any more
    (an unused result of a multi-output op)."""

    __slots__ = ("ref", "value", "dtype")

    def __init__(self, t):
        self.ref, self.value, self.dtype = weakref.ref(t), t._value, t._dtype

    def get(self, node):
        t = self.ref()
        if t is None:  # gone: a stand-in with the value and history it had
            t = _wrap(self.value, self.dtype)
            t.requires_grad, t._node = True, node
            self.ref = weakref.ref(t)
        return t


class Node:
    """One recorded op call: its outputs' cotangents flow back through ``rule``."""

    __slots__ = ("op", "rule", "args", "_outputs", "_flat", "multi", "epoch", "where", "inputs")

    def __init__(self, op, rule, args, outputs, multi):
        self.op, self.rule, self.args, self.multi = op, rule, args, multi
        if type(outputs) is Tensor:  # (the common case: no walk over the outputs)
            held = _hold(outputs)
            self._flat = [held]  # per output, in _leaves order: a _Held, or the Tensor
            self._outputs = held
        else:
            self._flat = []
            self._outputs = _restructure(outputs, self._hold_output)
        self.where = _user_frame()  # (file, line) that called the op: for error messages
        self.epoch = _assignments.epoch  # see "Assignment" below: the version check

    def _hold_output(self, t):
        held = _hold(t)
        self._flat.append(held)
        return held

    @property
    def outputs(self):
        """The op's result (a Tensor or a tuple of them), as the rule gets it."""
        out = self._outputs
        if type(out) is _Held:
            return out.get(self)
        if type(out) is Tensor:
            return out
        return _restructure(out, lambda h: h.get(self), _Held)

    @property
    def flat(self):
        """The output Tensors, in _leaves order."""
        return [h.get(self) if type(h) is _Held else h for h in self._flat]

    def __repr__(self):
        return f"<Node {self.op}>"

    def parents(self):
        return [t for t in self.inputs if t.requires_grad]


def _hold(t):
    """How a node keeps output ``t``: weakly when it is differentiable (it refers back
    to the node), else as it is (it never refers to the node)."""
    return _Held(t) if _differentiable(t) else t


_PLAIN, _GRAD, _QUANTIZED = 0, 1, 2


def _wants_grad(args, kwargs):
    """How :func:`primitive` runs a call, from one scan of its tensor arguments:
    ``_QUANTIZED`` when one is quantized, else ``_GRAD`` when one requires a gradient,
    else ``_PLAIN`` (0: the path that records nothing)."""
    found = _PLAIN
    for a in (*args, *kwargs.values()) if kwargs else args:
        if isinstance(a, Tensor):
            if a._dtype.quantized:
                return _QUANTIZED
            if a.requires_grad:
                found = _GRAD
        elif isinstance(a, (list, tuple)) and a and type(a[0]) is not int:
            # (lists of Python ints are attributes: skipped without a walk)
            for t in _leaves(a):
                if t._dtype.quantized:
                    return _QUANTIZED
                if t.requires_grad:
                    found = _GRAD
    return found


# Set by xops.ops.quantization: runs an op on quantized operands (dequantize -> op ->
# quantize, or the op on the storage values for data movement), as the spec says.
quantized_dispatch = None


def _differentiable(t):
    return isinstance(t, Tensor) and t._dtype.kind in ("float", "complex")


def primitive(name, **declaration):
    """Decorator: make op ``fn`` (spec name ``name``) record itself on the tape, and
    declare it in :mod:`xops.registry` (``declaration``: the keywords of
    :class:`xops.registry.OpDef`, e.g. ``quantized="dequantize"``).

    Attach its gradient rule right below the op with ``@op.defvjp``. An op whose rule is
    missing still runs; asking for a gradient through it raises a SpecError naming it.

    Devices: the op's CPU implementation is ``fn``; once a tensor lives on another
    device (:func:`xops.registry.use_device`), every call picks the kernel registered for
    its operands' device in the op's ``kernels`` slot, or raises a SpecError naming the op
    and the device (no hidden copy to the host).

    Dispatch fast path: ``op._fast`` (set by e.g. :func:`xops.ops._core.fast_binary`) is
    tried first on calls with positional arguments only while no debug flag is set (and
    on keyword calls too, as ``fast(args, kwargs)``, where ``op._fast_kwargs`` is set:
    ops whose attributes are keyword-only, such as reduce_window's body). It
    returns the result for argument signatures it has validated (no argument requires a
    gradient or is quantized, element types and shapes the op accepts, computed exactly
    as the op's body would), and None for everything else, which then takes the full
    path below: every check, every error message unchanged. ``op._fast_grad`` (optional,
    tried only where ``op._fast`` is set) is the same path for calls in which an argument
    requires a gradient: it returns ``(result, kept)`` (``kept``: the attributes the op's
    body would :func:`keep`, or None) or None, and the call is recorded as the full path
    records it (or not at all inside ``no_grad`` and gradient rules).
    """

    def decorate(fn):
        bind = _binder(inspect.signature(fn))

        @functools.wraps(fn)
        def op(*args, **kwargs):
            fast = op._fast  # see deffast: validated signatures skip the op's checks
            if fast is not None and (not kwargs or op._fast_kwargs) and not _config.check_finite:
                out = fast(args, kwargs) if kwargs else fast(args)
                if out is not None:
                    return out
                fast = op._fast_grad  # (an argument may require a gradient)
                if fast is None:
                    done = None
                else:
                    done = fast(args, kwargs) if kwargs else fast(args)
                if done is not None:
                    if not _mode.enabled:
                        return done[0]
                    return _record(name, op._vjp, bind(args, kwargs, done[1]), done[0])
            impl = fn
            if _registry.devices_in_use:  # a tensor lives off the CPU: that device's kernel
                impl = _registry.kernel(op, args, kwargs)
            wants = _wants_grad(args, kwargs)
            if not wants:
                out = impl(*args, **kwargs)
            elif wants == _QUANTIZED and quantized_dispatch is not None:
                out = quantized_dispatch(name, op, impl, args, kwargs)
            elif not _mode.enabled:
                out = impl(*args, **kwargs)
            else:
                _mode.enabled = False  # the op's own implementation records nothing
                _mode.kept = kept = {}  # filled by keep(): the op's parsed attributes
                try:
                    out = impl(*args, **kwargs)
                finally:
                    _mode.enabled = True
                    _mode.kept = None
                out = _record(name, op._vjp, bind(args, kwargs, kept.get(name)), out)
            if _config.check_finite:  # xops.config.debug_nans: off = this one flag test
                _check_finite(name, out, args, kwargs)
            return out

        op._vjp = None
        op._fast = None
        op._fast_grad = None
        op._fast_kwargs = False  # whether the fast paths take keyword calls: f(args, kwargs)
        op.op_name = name
        op.kernels = {"cpu": fn}  # device kind -> implementation (the device seam)
        _registry.register(name, op, primitive=True, **declaration)  # see xops.registry

        def defvjp(rule):
            op._vjp = rule
            return rule

        op.defvjp = defvjp
        return op

    return decorate


def keep(op, **attributes):
    """Called by op ``op`` once it has parsed its attributes: if the call is being
    recorded, its tape node stores these canonical values (same parameter names) in place
    of the arguments as given, so the gradient rule reads them without parsing again.
    The first call for ``op`` wins (an op that calls itself inside keeps the outer call's)."""
    kept = _mode.kept
    if kept is not None and op not in kept:
        kept[op] = attributes


def _restructure(x, fn, kind=Tensor):
    """``x`` with every Tensor t (at any depth of tuples/lists) replaced by fn(t) (every
    instance of ``kind``)."""
    if isinstance(x, kind):
        return fn(x)
    if isinstance(x, (list, tuple)):
        items = [_restructure(v, fn, kind) for v in x]
        if hasattr(x, "_fields"):  # a named tuple (ConvDimensionNumbers): fields by position
            return type(x)(*items)
        return type(x)(items)
    return x


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_frame():
    """(file, line) of the innermost caller outside the xops package (where the user
    called the op), for messages; None if there is none."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE):
        f = f.f_back
    return None if f is None else (f.f_code.co_filename, f.f_lineno)


def _check_finite(name, out, args, kwargs):
    """The NaN/Inf check of xops.config.debug_nans / debug_infs (on only when asked)."""
    from ..dtypes import to_compute
    from ..limits import NonFiniteError, config

    for i, o in enumerate(_leaves(out)):
        if o._dtype.kind not in ("float", "complex") or o._dtype.quantized:
            continue
        v = to_compute(o._value, o._dtype)
        bad = [
            w
            for w, hit in (
                ("NaN", config.debug_nans and np.isnan(v).any()),
                ("inf", config.debug_infs and np.isinf(v).any()),
            )
            if hit
        ]
        if bad:
            ins = [t.type for t in _leaves(list(args) + list(kwargs.values()))]
            raise NonFiniteError(
                name,
                "debug_nans",
                f"result #{i} ({o.type}) holds "
                f"{' and '.join(bad)} (operands: "
                f"{', '.join(ins) or 'none'})",
            )


def _record(name, rule, args, out):
    if isinstance(out, Tensor):  # one output (the common case): no walks over outputs
        if not _differentiable(out):
            return out  # integer / boolean results carry no gradient
        inputs = _leaves(args)
        if any(t is out for t in inputs):  # never its own parent (see fresh)
            out = _wrap(out._value, out._dtype)
        node = Node(name, rule, args, out, False)
        node.inputs = inputs  # the argument Tensors, walked once
        out.requires_grad = True
        out._node = node
        return out
    if not any(_differentiable(o) for o in _leaves(out)):
        return out  # integer / boolean results carry no gradient
    leaves = _leaves(args)
    inputs = {id(t) for t in leaves}
    seen = set()

    def fresh(t):
        # an output that *is* an input (or repeats another output) gets a new Tensor
        # sharing its data, so a node never becomes its own parent
        if id(t) in inputs or id(t) in seen:
            t = _wrap(t._value, t._dtype)
        seen.add(id(t))
        return t

    outs = _restructure(out, fresh)
    node = Node(name, rule, args, outs, isinstance(out, tuple))
    node.inputs = leaves
    for o in node.flat:
        if _differentiable(o):
            o.requires_grad = True
            o._node = node
    return outs


# ---------------------------------------------------------------------------------------
# The backward walk
# ---------------------------------------------------------------------------------------


def _topological(roots):
    """Nodes reachable from ``roots``, each after every node that consumes its outputs
    (iterative DFS: deep graphs such as long while_ loops must not hit the recursion limit)."""
    order, seen = [], set()
    stack = [(t._node, False) for t in roots if t._node is not None]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        if node.epoch != _assignments.epoch:  # something was assigned since it ran
            _fix_versions(node)
        for p in node.inputs:  # (node.parents(), inlined)
            if p.requires_grad:
                up = p._node
                if up is not None and id(up) not in seen:
                    stack.append((up, False))
    return order[::-1]  # consumers first


def _accumulate(grads, keep, t, g):
    if g is None:
        return
    if not isinstance(g, Tensor):
        raise SpecError(
            "backward", "", f"a gradient rule returned {type(g).__name__}, not a Tensor"
        )
    if g.shape != t.shape or g._dtype is not t._dtype:
        raise SpecError(
            "backward", "", f"a gradient rule returned {g.type} for an operand of type {t.type}"
        )
    k = id(t)
    if k in grads:
        grads[k] = _op.add(grads[k], g)
    else:
        grads[k] = g
        keep[k] = t


def _run_rule(node, cts, flat=None):
    """Apply the node's rule to the cotangents of its (flattened) outputs (``flat``:
    ``node.flat`` where the caller has it)."""
    if node.rule is None:
        raise SpecError(
            node.op,
            "grad",
            f"no gradient rule for {node.op}: it is not "
            f"differentiable in xops (see docs/autodiff.md)",
        )
    try:
        if node.multi:
            filled = iter(
                [
                    c if c is not None else (_zeros_like(o) if _differentiable(o) else None)
                    for c, o in zip(cts, node.flat if flat is None else flat)
                ]
            )
            outputs = node.outputs
            res = node.rule(_restructure(outputs, lambda t: next(filled)), outputs, *node.args)
        else:
            res = node.rule(cts[0], node.outputs, *node.args)
    except Exception as e:
        _name_node(e, node)
        raise
    if not isinstance(res, (tuple, list)):
        res = (res,)
    return res


def _name_node(e, node):
    """Say in ``e`` which recorded op's gradient failed and where that op was called:
    ``... [in the gradient of dot_general, recorded at train.py:12]``."""
    where = f", recorded at {node.where[0]}:{node.where[1]}" if node.where else ""
    note = f"in the gradient of {node.op}{where}"
    if isinstance(e, SpecError) and e.args and note not in str(e.args[0]):
        e.args = (f"{e.args[0]} [{note}]",) + e.args[1:]
    elif not isinstance(e, SpecError) and hasattr(e, "add_note"):
        e.add_note(note)


def _pairs(arg, g):
    """(tensor, cotangent) pairs of an argument and the rule's entry for it, at any depth."""
    if g is None:
        return
    if isinstance(arg, Tensor):
        yield arg, g
    elif isinstance(arg, (list, tuple)) and isinstance(g, (list, tuple)):
        for a, ga in zip(arg, g):
            yield from _pairs(a, ga)


def _backprop(roots, cotangents, create_graph):
    """Cotangents of every tensor reachable from ``roots`` (dict id -> Tensor), plus a
    dict id -> Tensor keeping those tensors alive."""
    grads, keep = {}, {}
    for r, c in zip(roots, cotangents):
        _accumulate(grads, keep, r, c)
    with enable_grad() if create_graph else no_grad():
        for node in _topological(roots):
            flat = node.flat
            cts = [grads.get(id(o)) for o in flat]
            if all(c is None for c in cts):
                continue
            if node.epoch != _assignments.epoch:  # something was assigned since it ran
                _check_versions(node, flat)
            for arg, g in zip(node.args, _run_rule(node, cts, flat)):
                if g is None:
                    continue
                if type(arg) is Tensor:  # (the common case: no walk)
                    if arg.requires_grad:
                        _accumulate(grads, keep, arg, g)
                    continue
                for a, ga in _pairs(arg, g):
                    if a.requires_grad:
                        _accumulate(grads, keep, a, ga)
    return grads, keep


def backward(tensor, gradient=None, create_graph=False):
    """Accumulate d(tensor)/d(leaf) into ``.grad`` of every leaf that requires a gradient.

    ``gradient`` is the cotangent of ``tensor`` (default: ones, only for one-element
    tensors, as in PyTorch).
    """
    if not tensor.requires_grad:
        raise SpecError(
            "backward",
            "",
            "this tensor does not require a gradient: no op "
            "on its way had an input with requires_grad=True",
        )
    if gradient is None:
        if tensor.size != 1:
            raise SpecError(
                "backward",
                "",
                f"gradient can be left out only for one-element tensors, got {tensor.type}",
            )
        gradient = _ones_like(tensor)
    else:  # arrays, lists and numbers too (xops.autodiff.boundary)
        gradient = _boundary.as_cotangent(gradient, tensor, "backward")
    grads, keep = _backprop([tensor], [gradient], create_graph)
    add = _op.add
    for k, t in keep.items():
        if t._node is None and t.requires_grad:  # a leaf
            g = grads[k] if create_graph else _wrap(grads[k]._value, grads[k]._dtype)
            t.grad = g if t.grad is None else add(t.grad, g)


# ---------------------------------------------------------------------------------------
# Functional API
# ---------------------------------------------------------------------------------------


def _flatten(tree):
    if isinstance(tree, Tensor):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [x for v in tree for x in _flatten(v)]
    if isinstance(tree, dict):
        return [x for k in sorted(tree) for x in _flatten(tree[k])]
    return []


def _map(tree, fn, leaves=(Tensor,)):
    if isinstance(tree, leaves):
        return fn(tree)
    if isinstance(tree, (list, tuple)):
        return type(tree)(_map(v, fn, leaves) for v in tree)
    if isinstance(tree, dict):
        return {k: _map(v, fn, leaves) for k, v in tree.items()}
    return tree


def _as_input(x):
    """A primal as a differentiable input. A primal already on a tape (inside an outer
    transform) is used as is, so the outer transform sees through the inner one."""
    from ..ops._core import as_tensor

    t = as_tensor(x) if not isinstance(x, Tensor) else x
    if not _differentiable(t):
        raise SpecError(
            "grad",
            "",
            f"cannot differentiate with respect to a {t.type} "
            f"input: only float and complex tensors have gradients",
        )
    if t.requires_grad:
        return t
    t = _wrap(t._value, t._dtype)
    t.requires_grad = True
    return t


def vjp(f, *primals):
    """``(out, vjp_fn)``: ``vjp_fn(cotangent)`` returns the cotangents of the primals
    (pytrees of tensors in, pytrees out, as ``jax.vjp``). Primals and cotangents may be
    arrays, numbers and nested lists too (see :mod:`xops.autodiff.boundary`)."""
    return _vjp(f, primals, False)


def _vjp(f, primals, graph):
    """:func:`vjp`; ``graph``: ``vjp_fn`` records its work on the tape even where no
    primal is on one (so that it can be differentiated in its cotangent: xops.jvp)."""
    nested = graph or any(isinstance(t, Tensor) and t.requires_grad for t in _flatten(primals))
    xs = tuple(
        _boundary.map_primals(p, lambda x: _as_input(_boundary.as_primal(x))) for p in primals
    )
    with enable_grad(), _boundary.watch_escapes() as escaped:
        out = f(*xs)
    outs = _flatten(out)

    def vjp_fn(cotangent):
        cts = _cotangents(cotangent, out, outs)
        live = [(o, c) for o, c in zip(outs, cts) if o.requires_grad]
        grads, _ = _backprop([o for o, _ in live], [c for _, c in live], create_graph=nested)
        missing = [(i, t) for i, t in enumerate(_flatten(xs)) if id(t) not in grads]
        _boundary.check_connected(missing, escaped.tensors)
        return _map(xs, lambda t: grads.get(id(t)) if id(t) in grads else _zeros_like(t))

    return out, vjp_fn


def _cotangents(cotangent, out, outs):
    """The cotangent of each output tensor (in _flatten order), converted."""
    pairs = []

    def walk(c, o):
        if isinstance(o, Tensor):
            pairs.append((c, o))
        elif isinstance(o, (list, tuple)) and isinstance(c, (list, tuple)) and len(c) == len(o):
            for ci, oi in zip(c, o):
                walk(ci, oi)
        elif isinstance(o, dict) and isinstance(c, dict) and sorted(c) == sorted(o):
            for k in sorted(o):
                walk(c[k], o[k])
        elif _flatten(o):
            raise ValueError

    try:
        walk(cotangent, out)
    except ValueError:  # another structure with as many tensors (as before)
        cts = _flatten(cotangent)
        if len(cts) != len(outs):
            raise SpecError(
                "vjp", "", f"the cotangent has {len(cts)} tensors for {len(outs)} outputs"
            ) from None
        pairs = list(zip(cts, outs))
    return [_boundary.as_cotangent(c, o, "vjp") for c, o in pairs]


def value_and_grad(f, argnums=0, has_aux=False):
    """``f``'s value and its gradient with respect to argument(s) ``argnums``
    (an int or a tuple of ints), as ``jax.value_and_grad``. ``f`` returns a one-element
    tensor, or ``(value, aux)`` with ``has_aux=True``."""
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)

    def wrapped(*args):
        args = list(args)

        def inner(*diff):
            call = list(args)
            for i, d in zip(nums, diff):
                call[i] = d
            return f(*call)

        out, fn = vjp(inner, *[args[i] for i in nums])
        value, aux = (out[0], out[1]) if has_aux else (out, None)
        if not isinstance(value, Tensor) or value.size != 1:
            raise SpecError(
                "grad",
                "",
                f"f must return a one-element tensor, got "
                f"{getattr(value, 'type', type(value).__name__)}",
            )
        cts = fn((_ones_like(value), _map(aux, _zeros_like)) if has_aux else _ones_like(value))
        g = cts[0] if single else tuple(cts)
        return ((value, aux), g) if has_aux else (value, g)

    return wrapped


def grad(f, argnums=0, has_aux=False):
    """The gradient of scalar-valued ``f`` with respect to argument(s) ``argnums``;
    nests (``xo.grad(xo.grad(f))``) for higher orders."""
    vg = value_and_grad(f, argnums, has_aux)

    def wrapped(*args):
        (value, g) = vg(*args)
        return (g, value[1]) if has_aux else g

    return wrapped


# ---------------------------------------------------------------------------------------
# Assignment: versions and rebinding (``t[idx] = v``, ``xo.nn.assign_``)
# ---------------------------------------------------------------------------------------
# Tensors are immutable values, but a Tensor *object* can be rebound to a new buffer.
# A node keeps the objects it was called with, so its rule would read the new value:
# a silently wrong gradient. Every rebinding therefore advances a global epoch and
# records it for the tensor; a node remembers the epoch it was recorded in, and the
# backward walk looks at a node's tensors only when the epoch moved since (one int
# comparison per node otherwise). A rebinding done while recording keeps the previous
# value and history in a separate Tensor (``old`` in :func:`rebind`): a node that used
# the tensor before is pointed at that one (its rule then reads the value it saw, and
# the cotangent flows into the old history), which is the true gradient. Where no such
# Tensor exists (``no_grad`` assignments, ``assign_``, or it was freed because nothing
# on the tape held it), backward raises, as PyTorch does.


class _Assignments:
    epoch = 0  # bumped by every rebinding


_assignments = _Assignments()
# id(Tensor) -> its _History; keyed by identity (a WeakKeyDictionary would compare
# tensors with ==, which is elementwise)
_assigned = {}
_assign_lock = threading.Lock()
_KEEP = 32  # a history longer than this drops its oldest assignments with no held value


class _History:
    """The rebindings of one Tensor object: ``epochs`` (ascending) and ``previous``
    (a weak reference to the Tensor holding the value before each, or None) of the
    recent ones, and ``dropped`` older ones, the last of them at epoch ``floor``.

    An assignment whose previous value is gone (``assign_`` and ``no_grad`` rebindings
    keep none) can only make a node older than it raise, so a prefix of such
    assignments is counted, not kept: a parameter updated every step holds a bounded
    record instead of one entry per step (a slow leak over long training runs)."""

    __slots__ = ("ref", "epochs", "previous", "dropped", "floor")

    def __init__(self, ref):
        self.ref, self.epochs, self.previous, self.dropped, self.floor = ref, [], [], 0, 0

    def last(self):
        return self.epochs[-1] if self.epochs else self.floor

    def count(self):
        return self.dropped + len(self.epochs)

    def add(self, epoch, previous):
        self.epochs.append(epoch)
        self.previous.append(previous)
        if len(self.epochs) > _KEEP:
            k = 0
            for r in self.previous:
                if r is not None and r() is not None:
                    break
                k += 1
            k = min(k, len(self.epochs) - 1)  # (the newest stays: last() reads it)
            if k:
                self.dropped, self.floor = self.dropped + k, self.epochs[k - 1]
                del self.epochs[:k], self.previous[:k]

    def held_after(self, epoch):
        """The Tensor holding the value this one had at ``epoch`` (None where it is
        gone or was never kept), for an epoch before last()."""
        if epoch < self.floor:  # the first assignment after it was dropped: none held
            return None
        ref = self.previous[bisect.bisect_right(self.epochs, epoch)]
        return ref() if ref is not None else None

    def saved(self, epoch):
        """The version at ``epoch``, as text: "at version 3", or "before version 992"
        where the assignments after it were dropped."""
        if epoch < self.floor:
            return f"before version {self.dropped}"
        return f"at version {self.dropped + bisect.bisect_right(self.epochs, epoch)}"


def _forget(ref, key):
    entry = _assigned.get(key)
    if entry is not None and entry.ref is ref:
        del _assigned[key]


def _entry(t):
    entry = _assigned.get(id(t))
    return entry if entry is not None and entry.ref() is t else None


def bump_version(t, previous=None):
    """Record that Tensor object ``t`` is being rebound to a new value (its version + 1);
    ``previous``: a Tensor that holds the value (and history) ``t`` had until now."""
    with _assign_lock:
        _assignments.epoch += 1
        entry = _entry(t)
        if entry is None:
            entry = _History(weakref.ref(t, functools.partial(_forget, key=id(t))))
            _assigned[id(t)] = entry
        entry.add(_assignments.epoch, weakref.ref(previous) if previous is not None else None)


def version(t):
    """How many times Tensor object ``t`` was rebound (PyTorch's ``t._version``)."""
    entry = _entry(t)
    return entry.count() if entry is not None else 0


def _fix_versions(node):
    """Point the node's arguments that were rebound after it ran at the Tensors holding
    the values it saw (where they still exist); _check_versions raises for the rest."""

    def swap(a):
        entry = _entry(a)
        if entry is None or entry.last() <= node.epoch:
            return a
        held = entry.held_after(node.epoch)
        return a if held is None else held

    def stale(a):  # rebound after the node ran (swap leaves every other argument)
        entry = _entry(a)
        return entry is not None and entry.last() > node.epoch

    if any(stale(a) for a in node.inputs):
        node.args = _restructure(node.args, swap)
        node.inputs = _leaves(node.args)


def _check_versions(node, flat=None):
    for t in node.inputs + (node.flat if flat is None else flat):
        entry = _entry(t)
        if entry is not None and entry.last() > node.epoch:
            raise SpecError(
                "backward",
                "",
                f"one of the tensors needed for gradient "
                f"computation has been modified by an assignment: "
                f"{node.op} saved {t.type} {entry.saved(node.epoch)}, now "
                f"version {entry.count()}. Compute the gradient "
                f"before assigning (t[...] = v, assign_), or use "
                f"t.at[...].set(v), which returns a new tensor",
            )


def _replace_output(node, old, new):
    for h in node._flat:  # (only differentiable outputs are ever rebound)
        if type(h) is _Held and h.ref() is old:
            h.ref, h.value, h.dtype = weakref.ref(new), new._value, new._dtype


def rebind(t, make, op="setitem"):
    """Rebind Tensor object ``t`` to ``make(old)``, where ``old`` is a separate Tensor
    holding ``t``'s current value (and, while recording, its place on the tape).

    As PyTorch's in-place ops: a leaf that requires a gradient cannot be assigned to
    while gradients are recorded (under ``no_grad`` it can: its value changes, it stays
    a leaf); an op output that is on the tape is assigned to by recording the update
    (``make``'s ops) on top of its history, so gradients flow through both. Nodes that
    used ``t`` before are pointed at ``old`` by the backward walk (see above); after a
    ``no_grad`` assignment they make backward raise instead.
    """
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(t).__name__}")
    recording = _mode.enabled
    if recording and t.requires_grad and t._node is None:
        raise SpecError(
            op,
            "",
            f"a leaf tensor that requires a gradient ({t.type}) cannot "
            f"be assigned to in place while gradients are recorded; use "
            f"t.at[...].set(v) (a new tensor), or assign under "
            f"xo.no_grad()",
        )
    if not recording:  # nothing is recorded: only the value (and the version) changes
        bump_version(t)
        new = make(_wrap(t._value, t._dtype))
        t._value, t._dtype = new._value, new._dtype
        return t
    old = _wrap(t._value, t._dtype)
    if t._node is not None:  # t's history now belongs to `old`
        old.requires_grad, old._node = True, t._node
        _replace_output(t._node, t, old)
    bump_version(t, old)  # before make(): its own node must not count as stale
    new = make(old)
    t._value, t._dtype = new._value, new._dtype
    t._node = new._node
    t.requires_grad = new.requires_grad
    if new._node is not None:
        _replace_output(new._node, new, t)
    return t
