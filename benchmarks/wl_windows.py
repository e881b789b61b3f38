"""Max pooling: reduce_window (forward) and select_and_scatter (its gradient), 2x2
windows, stride 2, on (64, 32, 32, 32) f32 NCHW, each in the spellings users write.

Forward bodies: ``body=xo.maximum`` (built-in, the ``xops`` row), ``lambda a, b:
xo.maximum(a, b)`` (``xops_lambda``), ``lambda a, b: my_max(a, b)`` with a helper that
calls ``xo.maximum`` (``xops_helper``).

Backward comparators: ``select=lambda a, b: xo.compare(a, b, "GE")`` (the documented
spelling, the ``xops`` row), the pullback of the forward max pool from ``xo.vjp``
(``xops_builtin``: the select the gradient rule builds itself), and ``lambda a, b:
my_ge(a, b)`` with a helper that calls ``xo.compare`` (``xops_helper``). Issue 15: every
spelling <= 1.0x PyTorch, the helper spelling within 1.2x of the built-in.
"""

import numpy as np

from .workloads import _frameworks, _rng, dim, gbs, workload

_POOL = (64, 32, 32, 32)  # NCHW, 2x2 windows, stride 2
_WIN = [1, 1, 2, 2]


def _shape():
    return dim(_POOL, (2, 3, 8, 8))


def _np_max_pool(a):
    n, c, h, w = a.shape
    return a.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


@workload(
    "reduce_window_maxpool",
    "xo.reduce_window max 2x2 stride 2, (64,32,32,32) f32 NCHW; body xo.maximum / lambda / helper",
    derived=gbs(np.prod(_POOL) * 4 * 5 // 4),
)
def _max_pool(be):
    x = _rng().standard_normal(_shape(), dtype=np.float32)
    xo, t, jax = be["xops"], be.get("torch"), be.get("jax")

    def my_max(a, b):
        return xo.maximum(a, b)

    def pool(body):
        return lambda a: xo.reduce_window(a, float("-inf"), _WIN, _WIN, body=body)

    fns = _frameworks(
        be,
        [x],
        _np_max_pool,
        pool(xo.maximum),
        t and (lambda a: t.nn.functional.max_pool2d(a, 2, 2)),
        jax
        and (
            lambda a: jax.lax.reduce_window(
                a, -np.inf, jax.lax.max, tuple(_WIN), tuple(_WIN), "VALID"
            )
        ),
    )
    tx = xo.tensor(x)
    lam, helper = pool(lambda a, b: xo.maximum(a, b)), pool(lambda a, b: my_max(a, b))
    fns["xops_lambda"] = lambda: lam(tx)
    fns["xops_helper"] = lambda: helper(tx)
    return fns


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
    "xo.select_and_scatter GE/add 2x2 stride 2 (max-pool gradient), (64,32,32,32) f32; "
    "select: compare lambda / vjp's built-in / helper",
    derived=gbs(np.prod(_POOL) * 4 * 9 // 4),
)
def _max_pool_grad(be):
    rng = _rng()
    shape = _shape()
    x = rng.standard_normal(shape, dtype=np.float32)
    g = rng.standard_normal(shape[:2] + (shape[2] // 2, shape[3] // 2), dtype=np.float32)
    xo, t, jax = be["xops"], be.get("torch"), be.get("jax")

    def my_ge(a, b):
        return xo.compare(a, b, "GE")

    def sas(select):
        return lambda a, b: xo.select_and_scatter(
            a, b, 0.0, _WIN, _WIN, select=select, scatter=xo.add
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

    fns = _frameworks(
        be,
        [x, g],
        _np_max_pool_grad,
        sas(lambda a, b: xo.compare(a, b, "GE")),
        t and torch_fn,
        jax and jax_fn,
    )
    tx, tg = xo.tensor(x), xo.tensor(g)
    _, pullback = xo.vjp(
        lambda a: xo.reduce_window(a, float("-inf"), _WIN, _WIN, body=xo.maximum), tx
    )
    helper = sas(lambda a, b: my_ge(a, b))
    fns["xops_builtin"] = lambda: pullback(tg)[0]
    fns["xops_helper"] = lambda: helper(tx, tg)
    return fns
