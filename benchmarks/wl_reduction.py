"""reduce, reduce_window and select_and_scatter workloads: a recognised-body reduce, max
pooling and its gradient (the Numba kernels), and a generic-body reduce (the vectorised
tree that calls a Python body on whole arrays)."""

import numpy as np

from .workloads import _frameworks, _rng, gbs, workload

_POOL = (64, 32, 32, 32)  # NCHW, 2x2 windows, stride 2


@workload(
    "reduce_sum_4096",
    "reduce add over the last axis of (4096, 4096) f32",
    rtol=1e-4,
    derived=gbs(4096 * 4096 * 4),
)
def _reduce_sum(be):
    x = _rng().standard_normal((4096, 4096), dtype=np.float32)
    xo, t, jax = be["xops"], be.get("torch"), be.get("jax")
    return _frameworks(
        be,
        [x],
        lambda a: a.sum(axis=-1),
        lambda a: xo.reduce(a, 0.0, [1], xo.add),
        t and (lambda a: a.sum(dim=-1)),
        jax and (lambda a: jax.lax.reduce(a, np.float32(0), jax.lax.add, (1,))),
    )


def _np_max_pool(a):
    n, c, h, w = a.shape
    return a.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


@workload(
    "reduce_window_maxpool",
    "reduce_window max 2x2 stride 2, (64,32,32,32) f32 NCHW",
    derived=gbs(np.prod(_POOL) * 4 * 5 // 4),
)
def _max_pool(be):
    x = _rng().standard_normal(_POOL, dtype=np.float32)
    xo, t, jax = be["xops"], be.get("torch"), be.get("jax")
    win = [1, 1, 2, 2]
    return _frameworks(
        be,
        [x],
        _np_max_pool,
        lambda a: xo.reduce_window(a, float("-inf"), win, win, body=xo.maximum),
        t and (lambda a: t.nn.functional.max_pool2d(a, 2, 2)),
        jax
        and (
            lambda a: jax.lax.reduce_window(
                a, -np.inf, jax.lax.max, tuple(win), tuple(win), "VALID"
            )
        ),
    )


def _np_max_pool_grad(a, g):
    """The straightforward NumPy max-pool gradient: each window's elements last, first
    maximum (np.argmax), a one-hot mask times the incoming gradient, back to NCHW."""
    n, c, h, w = a.shape
    win = a.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5)
    win = win.reshape(n, c, h // 2, w // 2, 4)
    onehot = np.argmax(win, axis=-1)[..., None] == np.arange(4)
    out = (onehot * g[..., None]).reshape(n, c, h // 2, w // 2, 2, 2)
    return out.transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h, w)


@workload(
    "select_and_scatter_maxpool_grad",
    "select_and_scatter GE/add 2x2 stride 2 (max-pool gradient), (64,32,32,32) f32",
    derived=gbs(np.prod(_POOL) * 4 * 9 // 4),
)
def _max_pool_grad(be):
    rng = _rng()
    x = rng.standard_normal(_POOL, dtype=np.float32)
    g = rng.standard_normal((64, 32, 16, 16), dtype=np.float32)
    xo, t, jax = be["xops"], be.get("torch"), be.get("jax")
    win = [1, 1, 2, 2]

    def xops_fn(a, b):
        return xo.select_and_scatter(
            a, b, 0.0, win, win, select=lambda p, q: xo.compare(p, q, "GE"), scatter=xo.add
        )

    def torch_fn(a, b):  # forward with indices + backward: the same work as the op
        _, idx = t.ops.aten.max_pool2d_with_indices(a, [2, 2], [2, 2])
        return t.ops.aten.max_pool2d_with_indices_backward(
            b, a, [2, 2], [2, 2], [0, 0], [1, 1], False, idx
        )

    def jax_fn(a, b):
        pool = lambda v: jax.lax.reduce_window(
            v, -np.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"
        )
        return jax.vjp(pool, a)[1](b)[0]

    return _frameworks(be, [x, g], _np_max_pool_grad, xops_fn, t and torch_fn, jax and jax_fn)


@workload(
    "reduce_generic_logaddexp",
    "reduce with a generic logaddexp body over the last axis of (1024, 4096) f32",
    rtol=1e-4,
    derived=gbs(1024 * 4096 * 4),
)
def _reduce_logaddexp(be):
    x = _rng().standard_normal((1024, 4096), dtype=np.float32)
    xo, t, jax = be["xops"], be.get("torch"), be.get("jax")

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
