"""Gradient checks against central finite differences, by random projections.

``check_grads(f, args)`` checks  <u, J v>  from finite differences of ``f`` against
<J^T u, v>  from xops' reverse mode, for a random output cotangent ``u`` and random
input directions ``v`` (float64; complex values pair bilinearly, Re sum(a * b), the
convention of ``jax.vjp``). ``order=2`` also checks the gradient of the
first-order vjp (a Hessian-vector product), which exercises the rules' own rules.
"""

import numpy as np

import xops as xo


def _randn_like(rng, t):
    a = np.asarray(t)
    if a.dtype.kind == "c":
        return (rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)).astype(a.dtype)
    return rng.standard_normal(a.shape).astype(a.dtype)


def _real_dot(a, b):
    """Re sum(a * b): the bilinear pairing under which jax.vjp's (and xops') cotangents
    are transposes (no conjugation: the vjp of z -> c z is u -> u c)."""
    return float(np.sum(np.real(np.asarray(a) * np.asarray(b))))


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _flat_dot(a, b):
    """sum(a * b) as one differentiable xops op (dot_general over the flattened values)."""
    return xo.dot_general(
        xo.reshape(a, [a.size]),
        xo.reshape(b, [b.size]),
        lhs_contracting_dimensions=[0],
        rhs_contracting_dimensions=[0],
    )


def _fd(f, args, dirs, eps):
    plus = _as_tuple(f(*[xo.tensor(np.asarray(a) + eps * d) for a, d in zip(args, dirs)]))
    minus = _as_tuple(f(*[xo.tensor(np.asarray(a) - eps * d) for a, d in zip(args, dirs)]))
    return [(np.asarray(p) - np.asarray(m)) / (2 * eps) for p, m in zip(plus, minus)]


def check_vjp(f, args, eps=1e-6, rtol=1e-5, atol=1e-7, seed=0):
    """One random projection: finite differences vs reverse mode (float64 args)."""
    rng = np.random.default_rng(seed)
    args = [np.asarray(a) for a in args]
    out, vjp_fn = xo.vjp(f, *[xo.tensor(a) for a in args])
    outs = _as_tuple(out)
    us = [_randn_like(rng, o) for o in outs]
    dirs = [_randn_like(rng, a) for a in args]
    cts = vjp_fn(
        tuple(xo.tensor(u) for u in us) if isinstance(out, (tuple, list)) else xo.tensor(us[0])
    )
    reverse = sum(_real_dot(c, d) for c, d in zip(cts, dirs))
    forward = sum(_real_dot(u, j) for u, j in zip(us, _fd(f, args, dirs, eps)))
    assert np.isclose(reverse, forward, rtol=rtol, atol=atol), (
        f"vjp {reverse!r} != finite differences {forward!r}"
    )
    return reverse, forward


def check_grads(f, args, order=1, eps=1e-6, rtol=1e-5, atol=1e-7, seed=0):
    """First-order check; with order=2 also the gradient of <u, f> 's gradient."""
    check_vjp(f, args, eps, rtol, atol, seed)
    if order >= 2:
        rng = np.random.default_rng(seed + 1)
        out = _as_tuple(f(*[xo.tensor(np.asarray(a)) for a in args]))
        us = [xo.tensor(_randn_like(rng, o)) for o in out]
        ws = [xo.tensor(_randn_like(rng, np.asarray(a))) for a in args]

        def first_order(*xs):
            """<w, J^T u>: a scalar whose gradient is a Hessian-vector product."""
            o, fn = xo.vjp(f, *xs)
            cts = fn(tuple(us) if isinstance(o, (tuple, list)) else us[0])
            total = None
            for c, w in zip(cts, ws):
                if c.dtype.is_complex:  # Re sum(c w) = re(c).re(w) - im(c).im(w)
                    term = xo.subtract(
                        _flat_dot(xo.real(c), xo.real(w)), _flat_dot(xo.imag(c), xo.imag(w))
                    )
                else:
                    term = _flat_dot(c, w)
                total = term if total is None else xo.add(total, term)
            return total

        check_vjp(first_order, args, eps, rtol * 10, atol * 10, seed + 2)
