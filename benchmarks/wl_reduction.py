"""reduce workloads: sum and max over either axis of a 4096x4096 matrix (recognised
bodies: the Numba kernels), a reduce whose body is a user's helper function computing
the same sum (the spelling a recognised body does not cover), and a generic logaddexp
body (the vectorised tree that calls a Python body on whole arrays).

Users call ``xo.reduce(x, init, dims, body)``; ``xo.add`` / ``xo.maximum`` are the
built-in spellings of the body, ``lambda a, b: my_add(a, b)`` (a helper that calls
``xo.add``) the helper spelling (issue 15: within 1.2x of the built-in one).
"""

import numpy as np

from .workloads import _frameworks, _rng, dim, gbs, workload

N = 4096


def _reduce(kind, axis):
    name = f"reduce_{kind}_4096_ax{axis}"
    body_name, np_name, torch_name = {
        "sum": ("add", "sum", "sum"),
        "max": ("maximum", "max", "amax"),
    }[kind]

    @workload(
        name,
        f"xo.reduce({body_name}) over axis {axis} of ({N}, {N}) f32",
        rtol=1e-4,
        derived=gbs(N * N * 4),
    )
    def make(be):
        n = dim(N, 24)
        x = _rng().standard_normal((n, n), dtype=np.float32)
        xo, t, jax = be["xops"], be.get("torch"), be.get("jax")
        body = getattr(xo, body_name)
        init = 0.0 if kind == "sum" else float("-inf")
        jax_fn = None
        if jax is not None:
            lax_body = jax.lax.add if kind == "sum" else jax.lax.max

            def jax_fn(a):
                return jax.lax.reduce(a, np.float32(init), lax_body, (axis,))

        return _frameworks(
            be,
            [x],
            lambda a: getattr(a, np_name)(axis=axis),
            lambda a: xo.reduce(a, init, [axis], body),
            t and (lambda a: getattr(a, torch_name)(dim=axis)),
            jax_fn,
        )

    return make


for _kind in ("sum", "max"):
    for _axis in (0, 1):
        _reduce(_kind, _axis)


def _wide():
    """(1024, 4096) f32: the generic-body rows' operand, reduced over its last axis."""
    return _rng().standard_normal((dim(1024, 8), dim(4096, 40)), dtype=np.float32)


_WIDE_BYTES = gbs(1024 * 4096 * 4)


@workload(
    "reduce_sum_helper_body",
    "xo.reduce over the last axis of (1024, 4096) f32 with the body "
    "`lambda a, b: my_add(a, b)` (a helper calling xo.add); xops_builtin: body=xo.add",
    rtol=1e-4,
    derived=_WIDE_BYTES,
)
def _reduce_helper(be):
    x, xo, t = _wide(), be["xops"], be.get("torch")

    def my_add(a, b):
        return xo.add(a, b)

    fns = _frameworks(
        be,
        [x],
        lambda a: a.sum(axis=-1),
        lambda a: xo.reduce(a, 0.0, [1], lambda p, q: my_add(p, q)),
        t and (lambda a: a.sum(dim=-1)),
    )
    tx = xo.tensor(x)
    fns["xops_builtin"] = lambda: xo.reduce(tx, 0.0, [1], xo.add)
    return fns


@workload(
    "reduce_generic_logaddexp",
    "xo.reduce with a generic logaddexp body over the last axis of (1024, 4096) f32 "
    "(torch: logsumexp)",
    rtol=1e-4,
    derived=_WIDE_BYTES,
)
def _reduce_logaddexp(be):
    x, xo, t, jax = _wide(), be["xops"], be.get("torch"), be.get("jax")

    def logaddexp(a, b):  # not a recognised body: the generic, vectorised tree
        hi = xo.maximum(a, b)
        return xo.add(hi, xo.log_plus_one(xo.exponential(xo.negate(xo.abs(xo.subtract(a, b))))))

    def jax_fn(a):
        return jax.lax.reduce(a, np.float32(-np.inf), jax.numpy.logaddexp, (1,))

    return _frameworks(
        be,
        [x],
        lambda a: np.logaddexp.reduce(a, axis=-1),
        lambda a: xo.reduce(a, float("-inf"), [1], logaddexp),
        t and (lambda a: t.logsumexp(a, dim=-1)),
        jax and jax_fn,
    )
