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
import functools
import inspect
import threading

import numpy as np

from ..errors import SpecError
from ..tensor import Tensor, _wrap

__all__ = ["primitive", "no_grad", "enable_grad", "is_grad_enabled", "backward", "grad",
           "value_and_grad", "vjp"]


class _Mode(threading.local):
    enabled = True


_mode = _Mode()


def is_grad_enabled():
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


class Node:
    """One recorded op call: its outputs' cotangents flow back through ``rule``."""

    __slots__ = ("op", "rule", "args", "outputs", "flat", "multi")

    def __init__(self, op, rule, args, outputs, multi):
        self.op, self.rule, self.args, self.outputs, self.multi = op, rule, args, outputs, multi
        self.flat = _leaves(outputs)

    def __repr__(self):
        return f"<Node {self.op}>"

    def parents(self):
        return [t for t in _leaves(self.args) if t.requires_grad]


def _leaves(x):
    """The Tensors in a (nested) tuple/list, in order."""
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _leaves(v)]
    return []


def _wants_grad(args, kwargs):
    """True when a tensor argument requires a gradient *or is quantized*: both leave the
    fast path of :func:`primitive` (one scan of the arguments serves both)."""
    for a in args:
        if isinstance(a, Tensor):
            if a.requires_grad or a._dtype.quantized:
                return True
        elif isinstance(a, (list, tuple)) and a and type(a[0]) is not int:
            # (lists of Python ints are attributes: skipped without a walk)
            if any(t.requires_grad or t._dtype.quantized for t in _leaves(a)):
                return True
    for a in kwargs.values():
        if isinstance(a, Tensor):
            if a.requires_grad or a._dtype.quantized:
                return True
        elif isinstance(a, (list, tuple)) and any(t.requires_grad or t._dtype.quantized
                                                  for t in _leaves(a)):
            return True
    return False


def _any_quantized(args, kwargs):
    return any(t._dtype.quantized for t in _leaves(list(args) + list(kwargs.values())))


# Set by xops.ops.quantization: runs an op on quantized operands (dequantize -> op ->
# quantize, or the op on the storage values for data movement), as the spec says.
quantized_dispatch = None


def _differentiable(t):
    return isinstance(t, Tensor) and t._dtype.kind in ("float", "complex")


def primitive(name):
    """Decorator: make op ``fn`` (spec name ``name``) record itself on the tape.

    Attach its gradient rule right below the op with ``@op.defvjp``. An op whose rule is
    missing still runs; asking for a gradient through it raises a SpecError naming it.
    """
    def decorate(fn):
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def op(*args, **kwargs):
            if not _wants_grad(args, kwargs):
                return fn(*args, **kwargs)
            if quantized_dispatch is not None and _any_quantized(args, kwargs):
                return quantized_dispatch(name, op, fn, args, kwargs)
            if not _mode.enabled:
                return fn(*args, **kwargs)
            _mode.enabled = False  # the op's own implementation records nothing
            try:
                out = fn(*args, **kwargs)
            finally:
                _mode.enabled = True
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            return _record(name, op._vjp, tuple(bound.arguments.values()), out)

        op._vjp = None
        op.op_name = name

        def defvjp(rule):
            op._vjp = rule
            return rule
        op.defvjp = defvjp
        return op
    return decorate


def _restructure(x, fn):
    """``x`` with every Tensor t (at any depth of tuples/lists) replaced by fn(t)."""
    if isinstance(x, Tensor):
        return fn(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_restructure(v, fn) for v in x)
    return x


def _record(name, rule, args, out):
    if not any(_differentiable(o) for o in _leaves(out)):
        return out  # integer / boolean results carry no gradient
    inputs = {id(t) for t in _leaves(args)}
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
        for p in node.parents():
            if p._node is not None and id(p._node) not in seen:
                stack.append((p._node, False))
    return order[::-1]  # consumers first


def _zeros_like(t):
    from ..ops.movement import constant
    from ..ops.movement import broadcast_in_dim
    return broadcast_in_dim(constant(0, t._dtype), [], t.shape)


def _accumulate(grads, keep, t, g):
    from ..ops.elementwise import add
    if g is None:
        return
    if not isinstance(g, Tensor):
        raise SpecError("backward", "", f"a gradient rule returned {type(g).__name__}, not a Tensor")
    if g.shape != t.shape or g._dtype is not t._dtype:
        raise SpecError("backward", "", f"a gradient rule returned {g.type} for an operand of "
                                        f"type {t.type}")
    k = id(t)
    if k in grads:
        grads[k] = add(grads[k], g)
    else:
        grads[k] = g
        keep[k] = t


def _run_rule(node, cts):
    """Apply the node's rule to the cotangents of its (flattened) outputs."""
    if node.rule is None:
        raise SpecError(node.op, "grad", f"no gradient rule for {node.op}: it is not "
                                         f"differentiable in xops (see docs/autodiff.md)")
    if node.multi:
        filled = iter([c if c is not None else (_zeros_like(o) if _differentiable(o) else None)
                       for c, o in zip(cts, node.flat)])
        res = node.rule(_restructure(node.outputs, lambda t: next(filled)), node.outputs, *node.args)
    else:
        res = node.rule(cts[0], node.outputs, *node.args)
    if not isinstance(res, (tuple, list)):
        res = (res,)
    return res


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
    with (enable_grad() if create_graph else no_grad()):
        for node in _topological(roots):
            cts = [grads.get(id(o)) for o in node.flat]
            if all(c is None for c in cts):
                continue
            for arg, g in zip(node.args, _run_rule(node, cts)):
                for a, ga in _pairs(arg, g):
                    if a.requires_grad:
                        _accumulate(grads, keep, a, ga)
    return grads, keep


def _ones_like(t):
    from ..ops.movement import broadcast_in_dim, constant
    return broadcast_in_dim(constant(1, t._dtype), [], t.shape)


def backward(tensor, gradient=None, create_graph=False):
    """Accumulate d(tensor)/d(leaf) into ``.grad`` of every leaf that requires a gradient.

    ``gradient`` is the cotangent of ``tensor`` (default: ones, only for one-element
    tensors, as in PyTorch).
    """
    if not tensor.requires_grad:
        raise SpecError("backward", "", "this tensor does not require a gradient: no op "
                                        "on its way had an input with requires_grad=True")
    if gradient is None:
        if tensor.size != 1:
            raise SpecError("backward", "", f"gradient can be left out only for one-element "
                                            f"tensors, got {tensor.type}")
        gradient = _ones_like(tensor)
    grads, keep = _backprop([tensor], [gradient], create_graph)
    from ..ops.elementwise import add
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


_PRIMAL_LEAVES = (Tensor, np.ndarray, np.generic, float, int, complex)


def _as_input(x):
    """A primal as a differentiable input. A primal already on a tape (inside an outer
    transform) is used as is, so the outer transform sees through the inner one."""
    from ..ops._core import as_tensor
    t = as_tensor(x) if not isinstance(x, Tensor) else x
    if not _differentiable(t):
        raise SpecError("grad", "", f"cannot differentiate with respect to a {t.type} "
                                    f"input: only float and complex tensors have gradients")
    if t.requires_grad:
        return t
    t = _wrap(t._value, t._dtype)
    t.requires_grad = True
    return t


def vjp(f, *primals):
    """``(out, vjp_fn)``: ``vjp_fn(cotangent)`` returns the cotangents of the primals
    (pytrees of tensors in, pytrees out, as ``jax.vjp``)."""
    nested = any(isinstance(t, Tensor) and t.requires_grad for t in _flatten(primals))
    xs = _map(primals, _as_input, _PRIMAL_LEAVES)
    with enable_grad():
        out = f(*xs)
    outs = _flatten(out)
    inputs = _flatten(xs)

    def vjp_fn(cotangent):
        cts = _flatten(cotangent)
        if len(cts) != len(outs):
            raise SpecError("vjp", "", f"the cotangent has {len(cts)} tensors for {len(outs)} outputs")
        live = [(o, c) for o, c in zip(outs, cts) if o.requires_grad]
        grads, _ = _backprop([o for o, _ in live], [c for _, c in live], create_graph=nested)
        return _map(xs, lambda t: grads.get(id(t)) if id(t) in grads else _zeros_like(t))
    return out, vjp_fn


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
            raise SpecError("grad", "", f"f must return a one-element tensor, got "
                                        f"{getattr(value, 'type', type(value).__name__)}")
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
