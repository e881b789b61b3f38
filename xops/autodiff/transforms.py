"""JAX's other differentiation transforms on the tape: ``jvp``, ``jacrev``, ``jacfwd``,
``hessian`` and ``stop_gradient`` (``xo.jvp`` ...), built on :func:`xops.vjp`.

There is no separate forward mode: ``jvp`` transposes the vjp, which is linear in its
cotangent u, so the gradient in u of <vjp(u), tangents> (the bilinear pairing sum(a * b)
of ``jax.vjp``) is J tangents; the vjp runs with its work recorded on the tape for that.
``jacrev`` takes one vjp per output element (one-hot cotangents), ``jacfwd`` one jvp per
input element; both give out.shape + in.shape Jacobians as JAX's, and they nest
(``hessian`` is ``jacfwd(jacrev(f))``). Outputs: a tensor or a tuple / list of tensors.
"""

from ..tensor import Tensor
from . import tape as _tape
from .helpers import zeros_like as _zeros_like

__all__ = ["jvp", "jacrev", "jacfwd", "hessian", "stop_gradient"]


def _ops():
    from ..registry import op

    return op


def _leaves_of(tree):
    return _tape._flatten(tree)


def _pair(a, b):
    """sum(a * b) over all elements (a one-element tensor), on the tape."""
    op = _ops()
    prod = op.multiply(a, b) if a._dtype is b._dtype else op.multiply(a, op.convert(b, a._dtype))
    return op.reduce(prod, 0, list(range(prod.ndim)), op.add) if prod.ndim else prod


def jvp(f, primals, tangents):
    """``(f(*primals), J tangents)`` as ``jax.jvp``: ``primals`` and ``tangents`` are
    tuples of the same structure (tensors, arrays or numbers)."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    out, vjp_fn = _tape._vjp(f, primals, True)
    outs = _leaves_of(out)
    with _tape.enable_grad():
        us = []
        for o in outs:
            u = _zeros_like(o).detach() if isinstance(o, Tensor) else o
            u.requires_grad = True
            us.append(u)
        it = iter(us)
        cts = vjp_fn(_tape._map(out, lambda o: next(it)))
        total = None
        for c, t in zip(_leaves_of(cts), _leaves_of(_tape._map(tangents, _as_tensor, (Tensor,)))):
            term = _pair(c, _as_tensor(t))
            total = term if total is None else _ops().add(total, term)
    if total is None or not total.requires_grad:
        tang = [_zeros_like(o) for o in outs]
    else:
        grads, _ = _tape._backprop([total], [_tape._ones_like(total)], _tape.is_grad_enabled())
        tang = [grads.get(id(u), None) for u in us]
        tang = [g if g is not None else _zeros_like(o) for g, o in zip(tang, outs)]
    it = iter(tang)
    primal_out = _tape._map(out, lambda o: o.detach() if not _tape.is_grad_enabled() else o)
    return primal_out, _tape._map(out, lambda o: next(it))


def _as_tensor(x):
    from ..tensor import tensor

    return x if isinstance(x, Tensor) else tensor(x)


def _one_hot(like, k):
    import numpy as np

    from ..tensor import _wrap

    v = np.zeros(like.size, like._dtype.np)
    v[k] = 1
    return _wrap(v.reshape(like.shape), like._dtype)


def _stack(parts, lead, tail):
    """The tensors ``parts`` (each of shape ``tail``) as one of shape lead + tail."""
    op = _ops()
    flat = [op.reshape(p, [1] + list(tail)) for p in parts]
    whole = flat[0] if len(flat) == 1 else op.concatenate(flat, 0)
    return op.reshape(whole, list(lead) + list(tail))


def _select(args, nums, f):
    def inner(*diff):
        call = list(args)
        for i, d in zip(nums, diff):
            call[i] = d
        return f(*call)

    return inner


def jacrev(f, argnums=0, has_aux=False):
    """The Jacobian of ``f`` by reverse mode (one vjp per output element), as
    ``jax.jacrev``: for each output, out.shape + in.shape per argument of ``argnums``."""
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)

    def jac(*args):
        out, fn = _tape.vjp(_select(args, nums, f), *[_as_tensor(args[i]) for i in nums])
        value, aux = (out[0], out[1]) if has_aux else (out, None)
        outs = _leaves_of(value)
        ins = [_as_tensor(args[i]) for i in nums]
        per_out = []
        for j, o in enumerate(outs):
            rows = []
            for k in range(o.size):
                cot = [_zeros_like(p) if q != j else _one_hot(o, k) for q, p in enumerate(outs)]
                it = iter(cot)
                ct = _tape._map(value, lambda _: next(it))
                rows.append(fn((ct, _tape._map(aux, _zeros_like)) if has_aux else ct))
            per_arg = tuple(
                _stack([r[a] for r in rows], o.shape, x.shape) if rows else _empty(o, x)
                for a, x in enumerate(ins)
            )
            per_out.append(per_arg[0] if single else per_arg)
        result = per_out[0] if isinstance(value, Tensor) else type(value)(per_out)
        return (result, aux) if has_aux else result

    return jac


def _empty(o, x):
    import numpy as np

    from ..tensor import _wrap

    return _wrap(np.zeros(tuple(o.shape) + tuple(x.shape), x._dtype.np), x._dtype)


def jacfwd(f, argnums=0, has_aux=False):
    """The Jacobian of ``f`` by forward mode (one jvp per input element), as
    ``jax.jacfwd``: out.shape + in.shape per argument of ``argnums``."""
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)

    def jac(*args):
        ins = [_as_tensor(args[i]) for i in nums]
        aux = None
        cols_per_arg = []
        out = None
        for a, x in enumerate(ins):
            cols = []
            for k in range(x.size):
                tangents = tuple(
                    _one_hot(y, k) if b == a else _zeros_like(y) for b, y in enumerate(ins)
                )
                out, tang = jvp(_select(args, nums, f), tuple(ins), tangents)
                if has_aux:
                    out, aux = out
                    tang = tang[0]
                cols.append(_leaves_of(tang))
            cols_per_arg.append(cols)
        if out is None:  # (no input element: evaluate once for the output's structure)
            out = _select(args, nums, f)(*ins)
            out, aux = (out[0], out[1]) if has_aux else (out, None)
        outs = _leaves_of(out)
        per_out = []
        for j, o in enumerate(outs):
            per_arg = []
            for a, x in enumerate(ins):
                cols = [c[j] for c in cols_per_arg[a]]
                if not cols:
                    per_arg.append(_empty(o, x))
                    continue
                st = _stack(cols, x.shape, o.shape)  # in.shape + out.shape
                perm = list(range(x.ndim, x.ndim + o.ndim)) + list(range(x.ndim))
                per_arg.append(_ops().transpose(st, perm))
            per_out.append(per_arg[0] if single else tuple(per_arg))
        result = per_out[0] if isinstance(out, Tensor) else type(out)(per_out)
        return (result, aux) if has_aux else result

    return jac


def hessian(f, argnums=0):
    """The Hessian of scalar-valued ``f``: ``jacfwd(jacrev(f))``, as ``jax.hessian``."""
    return jacfwd(jacrev(f, argnums), argnums)


def stop_gradient(x):
    """``x`` (a tensor or a pytree of them) with no gradient flowing back through it."""
    return _tape._map(x, lambda t: t.detach())
