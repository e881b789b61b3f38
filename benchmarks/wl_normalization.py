"""Batch-normalization workloads: training forward (batch_norm_training) and backward
(batch_norm_grad) on a (64, 32, 32, 32) f32 NCHW activation, feature_index 1.

"numpy" is the straightforward vectorised version of the spec's formulas; JAX has no
batch-norm op, so its version is the same formulas in jax.numpy (eager and jit).
Every backend returns the normalized output (forward) or (grad_operand, grad_scale,
grad_offset) (backward). "derived" counts the minimum memory traffic: x read and
output written (forward); x and grad_output read and grad_operand written (backward).
"""

import numpy as np

from .workloads import _rng, dim, gbs, workload

SHAPE = (64, 32, 32, 32)
EPS = 1e-5
AXES = (0, 2, 3)
NBYTES = int(np.prod(SHAPE)) * 4


def _bc(v):
    return v[None, :, None, None]


def _np_fwd(x, scale, offset):
    mean = x.mean(axis=AXES)
    centered = x - _bc(mean)
    var = (centered * centered).mean(axis=AXES)
    return centered / np.sqrt(_bc(var) + EPS) * _bc(scale) + _bc(offset)


def _np_bwd(x, g, scale, mean, var):
    n = x.size // x.shape[1]
    inv_std = 1 / np.sqrt(var + EPS)
    xhat = (x - _bc(mean)) * _bc(inv_std)
    grad_offset = g.sum(axis=AXES)
    grad_scale = (g * xhat).sum(axis=AXES)
    grad_operand = _bc(scale * inv_std) * (g - _bc(grad_offset / n) - xhat * _bc(grad_scale / n))
    return grad_operand, grad_scale, grad_offset


def _jax_fns(jnp):
    def bc(v):
        return v[None, :, None, None]

    def fwd(x, scale, offset):
        mean = jnp.mean(x, axis=AXES)
        centered = x - bc(mean)
        var = jnp.mean(centered * centered, axis=AXES)
        return centered / jnp.sqrt(bc(var) + EPS) * bc(scale) + bc(offset)

    def bwd(x, g, scale, mean, var):
        n = x.size // x.shape[1]
        inv_std = 1 / jnp.sqrt(var + EPS)
        xhat = (x - bc(mean)) * bc(inv_std)
        grad_offset = jnp.sum(g, axis=AXES)
        grad_scale = jnp.sum(g * xhat, axis=AXES)
        grad_operand = bc(scale * inv_std) * (g - bc(grad_offset / n) - xhat * bc(grad_scale / n))
        return grad_operand, grad_scale, grad_offset

    return fwd, bwd


def _inputs():
    rng = _rng()
    shape = dim(SHAPE, (2, 3, 4, 4))
    x = (1.0 + 2.0 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)
    g = rng.standard_normal(shape, dtype=np.float32)
    scale = rng.uniform(0.5, 2.0, shape[1]).astype(np.float32)
    offset = rng.standard_normal(shape[1], dtype=np.float32)
    return x, g, scale, offset


def _add_jax(fns, be, fn, arrays):
    jax = be.get("jax")
    if jax is None:
        return
    import jax.numpy as jnp

    js = [jnp.asarray(a) for a in arrays]
    f = fn(jnp)
    fns["jax"] = lambda: f(*js)
    jitted = jax.jit(f)
    fns["jax_jit"] = lambda: jitted(*js)


@workload(
    "batchnorm_fwd",
    "xo.batch_norm_training (64,32,32,32) f32 NCHW, feature_index 1",
    rtol=1e-4,
    derived=gbs(2 * NBYTES),
)
def _fwd(be):
    x, _, scale, offset = _inputs()
    xo, torch = be["xops"], be.get("torch")
    fns = {"numpy": lambda: _np_fwd(x, scale, offset)}
    X, S, B = xo.tensor(x), xo.tensor(scale), xo.tensor(offset)
    fns["xops"] = lambda: xo.batch_norm_training(X, S, B, EPS, 1)[0]
    if torch is not None:
        tx, ts, to = (torch.from_numpy(a.copy()) for a in (x, scale, offset))
        F = torch.nn.functional
        fns["torch"] = lambda: F.batch_norm(tx, None, None, ts, to, training=True, eps=EPS)
    _add_jax(fns, be, lambda jnp: _jax_fns(jnp)[0], [x, scale, offset])
    return fns


@workload(
    "batchnorm_bwd",
    "xo.batch_norm_grad (64,32,32,32) f32 NCHW -> dx, dscale, doffset",
    rtol=1e-4,
    derived=gbs(3 * NBYTES),
)
def _bwd(be):
    x, g, scale, _ = _inputs()
    mean = x.mean(axis=AXES, dtype=np.float64).astype(np.float32)
    var = x.var(axis=AXES, dtype=np.float64).astype(np.float32)
    xo, torch = be["xops"], be.get("torch")
    fns = {"numpy": lambda: _np_bwd(x, g, scale, mean, var)}
    X, G, S, M, V = (xo.tensor(a) for a in (x, g, scale, mean, var))
    fns["xops"] = lambda: xo.batch_norm_grad(X, S, M, V, G, EPS, 1)
    if torch is not None:
        tx, tg, ts, tm = (torch.from_numpy(a.copy()) for a in (x, g, scale, mean))
        t_invstd = torch.from_numpy((1 / np.sqrt(var.astype(np.float64) + EPS)).astype(np.float32))
        bwd = torch.ops.aten.native_batch_norm_backward
        fns["torch"] = lambda: bwd(
            tg, tx, ts, None, None, tm, t_invstd, True, EPS, [True, True, True]
        )
    _add_jax(fns, be, lambda jnp: _jax_fns(jnp)[1], [x, g, scale, mean, var])
    return fns
