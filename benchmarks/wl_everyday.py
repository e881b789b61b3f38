"""Everyday-layer workloads: operators, ``xops.numpy`` functions, Tensor methods and
NumPy-style indexing, called the way users write them.

The dispatch rows carry an extra ``xops_spec`` row: the same computation through the
strict spec function (``xo.add`` / ``xo.reduce``), so the cost of the everyday layer on
top of the spec layer reads off one table (target: at most 1.2x ``xops_spec``).
"""

import numpy as np

from .workloads import _rng, dim, gbs, per_op, workload

N_INDEX_ROWS, INDEX_WIDTH, N_INDICES = 1 << 20, 16, 100_000
N_MASK = 1 << 20


def _xnp(be):
    import importlib

    return importlib.import_module("xops.numpy")


def _tiny_pair(be):
    a = np.ones(1, np.float32)
    xo, torch, jax = be["xops"], be.get("torch"), be.get("jax")
    fns = {}
    ta, tb = xo.tensor(a), xo.tensor(a)
    pa = pb = ja = jb = None
    if torch is not None:
        pa, pb = torch.from_numpy(a.copy()), torch.from_numpy(a.copy())
    if jax is not None:
        import jax.numpy as jnp

        ja, jb = jnp.asarray(a), jnp.asarray(a)
    return a, fns, (ta, tb), (pa, pb), (ja, jb)


@workload("dispatch_operator_add", "a + b, (1,) f32 operands: operator dispatch", derived=per_op)
def _operator_add(be):
    a, fns, (ta, tb), (pa, pb), (ja, jb) = _tiny_pair(be)
    xo = be["xops"]
    fns["numpy"] = lambda: a + a
    fns["xops"] = lambda: ta + tb
    fns["xops_spec"] = lambda: xo.add(ta, tb)
    if pa is not None:
        fns["torch"] = lambda: pa + pb
    if ja is not None:
        fns["jax"] = lambda: ja + jb
    return fns


@workload("dispatch_xnp_add", "xnp.add(a, b), (1,) f32 operands", derived=per_op)
def _xnp_add(be):
    a, fns, (ta, tb), (pa, pb), (ja, jb) = _tiny_pair(be)
    xo, xnp, torch = be["xops"], _xnp(be), be.get("torch")
    fns["numpy"] = lambda: np.add(a, a)
    fns["xops"] = lambda: xnp.add(ta, tb)
    fns["xops_spec"] = lambda: xo.add(ta, tb)
    if pa is not None:
        fns["torch"] = lambda: torch.add(pa, pb)
    if ja is not None:
        import jax.numpy as jnp

        fns["jax"] = lambda: jnp.add(ja, jb)
    return fns


@workload("dispatch_sum_method", "a.sum(), (1,) f32: method dispatch", derived=per_op)
def _sum_method(be):
    a, fns, (ta, _), (pa, _), (ja, _) = _tiny_pair(be)
    xo = be["xops"]
    zero = xo.tensor(0.0)
    fns["numpy"] = lambda: a.sum()
    fns["xops"] = lambda: ta.sum()
    fns["xops_spec"] = lambda: xo.reduce(ta, zero, [0], xo.add)
    if pa is not None:
        fns["torch"] = lambda: pa.sum()
    if ja is not None:
        fns["jax"] = lambda: ja.sum()
    return fns


def _index_data():
    rng = _rng()
    rows, width, n_idx = dim((N_INDEX_ROWS, INDEX_WIDTH, N_INDICES), (64, 4, 20))
    x = rng.standard_normal((rows, width), dtype=np.float32)
    idx = rng.integers(0, rows, n_idx)
    return x, idx


@workload(
    "index_int_array",
    f"x[idx]: {N_INDICES} int64 indices into ({N_INDEX_ROWS},{INDEX_WIDTH}) f32",
    derived=gbs(2 * N_INDICES * INDEX_WIDTH * 4),
)
def _index_int(be):
    x, idx = _index_data()
    xo, torch, jax = be["xops"], be.get("torch"), be.get("jax")
    tx, ti = xo.tensor(x), xo.tensor(idx)
    fns = {"numpy": lambda: x[idx], "xops": lambda: tx[ti]}
    if torch is not None:
        px, pi = torch.from_numpy(x), torch.from_numpy(idx)
        fns["torch"] = lambda: px[pi]
    if jax is not None:
        import jax.numpy as jnp

        jx, ji = jnp.asarray(x), jnp.asarray(idx)
        fns["jax"] = lambda: jx[ji]
    return fns


@workload(
    "index_bool_mask",
    f"x[mask]: boolean mask over {N_MASK} f32 (about half true)",
    derived=gbs(N_MASK * 5),
)
def _index_mask(be):
    x = _rng().standard_normal(dim(N_MASK, 64), dtype=np.float32)
    mask = x > 0
    xo, torch, jax = be["xops"], be.get("torch"), be.get("jax")
    tx, tm = xo.tensor(x), xo.tensor(mask)
    fns = {"numpy": lambda: x[mask], "xops": lambda: tx[tm]}
    if torch is not None:
        px, pm = torch.from_numpy(x), torch.from_numpy(mask)
        fns["torch"] = lambda: px[pm]
    if jax is not None:
        import jax.numpy as jnp

        jx, jm = jnp.asarray(x), jnp.asarray(mask)
        fns["jax"] = lambda: jx[jm]
    return fns
