"""Local differentiation of a body: the vjp of a small composite that calls a user's (or
a StableHLO region's) Python body, walked on the tape and stopped at its own inputs.

reduce, reduce_window and map differentiate bodies that have no rule of their own this
way: the op's computation is re-run with recording on, so the body's own ops leave
nodes, and the engine walks back through them (:func:`local_vjp`). The walk is *local*:
each primal that needs a cotangent is replaced by a stand-in whose node is hidden during
the walk, so it stops there instead of running on into the graph that produced the
primals. Under create_graph the stand-ins are :func:`alias` nodes of the primals (the
identity primitive), so the recorded backward ops reach the primals and higher orders
work.
"""

from ..errors import SpecError
from ..tensor import Tensor, _wrap
from .helpers import is_diff, needs, zeros_like
from .tape import _backprop, enable_grad, is_grad_enabled, primitive

__all__ = ["alias", "local_vjp", "describe", "closure_error"]


@primitive("alias", spec=None)
def alias(x):
    """The same value as a new tensor on the tape (identity rule); see local_vjp."""
    return _wrap(x._value, x._dtype)


@alias.defvjp
def _alias_vjp(g, out, x):
    return (g,)


def describe(fn):
    """A body's name for messages: its qualified name, else its type's name."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return name or type(fn).__name__


def closure_error(op, body, what="body"):
    """Raise: ``body`` closed over a tensor that requires a gradient (not an operand)."""
    raise SpecError(
        op,
        "grad",
        f"the {what} {describe(body)} uses a tensor that requires a "
        f"gradient but is not an operand of {op} (a closure): {op} "
        f"cannot send it a gradient; make it an operand, or detach it",
    )


def _needs(p):
    return needs(p) and is_diff(p)


def local_vjp(op, body, fn, primals, cotangents, what="body"):
    """The vjp of a composite ``fn(*primals) -> list of Tensors`` (written with xops ops,
    calling the op's Python ``body`` on whole arrays) for the output cotangents
    ``cotangents`` (None for an output that gets none): one cotangent or None per primal
    (zeros for a differentiable primal that requires a gradient but gets none).

    ``op`` and ``what`` ("body", "computation") name the op and the body in errors: a
    body op without a rule, or a body that closes over a tensor requiring a gradient,
    is a SpecError labelled ``grad``."""
    create = is_grad_enabled()
    stands = []
    for p in primals:
        if _needs(p):
            if create:
                s = alias(p)
            else:
                s = _wrap(p._value, p._dtype)
                s.requires_grad = True
        else:
            s = None
        stands.append(s)
    args = [p if s is None else s for p, s in zip(primals, stands)]
    hidden = [(s, s._node) for s in stands if s is not None]
    try:
        with enable_grad():
            outs = fn(*args)
        live = [
            (o, c)
            for o, c in zip(outs, cotangents)
            if c is not None and isinstance(o, Tensor) and o.requires_grad
        ]
        for s, _ in hidden:
            s._node = None
        grads, keep = _backprop([o for o, _ in live], [c for _, c in live], create)
        # the walk stops at the stand-ins; a leaf it reaches beyond them is a tensor the
        # body closed over, which the op's rule has no way to send a cotangent to
        ids = {id(s) for s in stands if s is not None}
        if any(t._node is None and k not in ids for k, t in keep.items()):
            closure_error(op, body, what)
    except SpecError as e:
        if e.op == op and e.label == "grad":
            raise
        raise SpecError(
            op,
            "grad",
            f"no gradient for the body {describe(body)}: {e} "
            f"(use add/multiply/maximum/minimum or a body of "
            f"differentiable elementwise ops)",
        ) from e
    finally:
        for s, n in hidden:
            s._node = n
    out = []
    for p, s in zip(primals, stands):
        if s is None:
            out.append(None)
        else:
            c = grads.get(id(s))
            out.append(c if c is not None else zeros_like(p))
    return out
