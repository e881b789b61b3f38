"""dot_general workloads (matmul and batched matmul)."""

import numpy as np

from .workloads import _frameworks, _rng, dim, gflops, workload


@workload(
    "matmul_1024",
    "xo.dot_general 1024x1024 @ 1024x1024 f32 (issue 15: >= 95% of NumPy's BLAS GFLOP/s)",
    rtol=1e-4,
    derived=gflops(2 * 1024**3),
)
def _matmul(be):
    rng = _rng()
    a, b = (rng.standard_normal(dim((1024, 1024), (8, 8)), dtype=np.float32) for _ in range(2))
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
    "xo.dot_general (64,128,128) x (64,128,128) f32, batch dim 0",
    rtol=1e-4,
    derived=gflops(2 * 64 * 128**3),
)
def _batched(be):
    rng = _rng()
    a, b = (rng.standard_normal(dim((64, 128, 128), (2, 4, 4)), dtype=np.float32) for _ in range(2))
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
