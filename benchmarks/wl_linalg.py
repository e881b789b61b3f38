"""dot_general workloads (matmul and batched matmul)."""

import numpy as np

from .workloads import _frameworks, _rng, workload


def gflops(flop):
    return lambda s: f"{flop / s / 1e9:.1f} GFLOP/s"


@workload(
    "matmul_1024", "dot_general 1024x1024 @ 1024x1024 f32", rtol=1e-4, derived=gflops(2 * 1024**3)
)
def _matmul(be):
    rng = _rng()
    a, b = (rng.standard_normal((1024, 1024), dtype=np.float32) for _ in range(2))
    xo, t, jax = be["xops"], be.get("torch"), be.get("jax")
    return _frameworks(
        be,
        [a, b],
        np.matmul,
        lambda x, y: xo.dot_general(
            x, y, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]
        ),
        t and t.matmul,
        jax and (lambda x, y: jax.lax.dot(x, y)),
    )


@workload(
    "batched_dot",
    "dot_general (64,128,128) x (64,128,128) f32, batch dim 0",
    rtol=1e-4,
    derived=gflops(2 * 64 * 128**3),
)
def _batched(be):
    rng = _rng()
    a, b = (rng.standard_normal((64, 128, 128), dtype=np.float32) for _ in range(2))
    xo, t, jax = be["xops"], be.get("torch"), be.get("jax")
    dn = (((2,), (1,)), ((0,), (0,)))
    return _frameworks(
        be,
        [a, b],
        np.matmul,
        lambda x, y: xo.dot_general(x, y, [0], [0], [2], [1]),
        t and t.bmm,
        jax and (lambda x, y: jax.lax.dot_general(x, y, dn)),
    )
