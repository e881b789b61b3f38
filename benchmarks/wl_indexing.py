"""Indexing workloads: gather rows, scatter-add rows, sort.

StableHLO ops are values: scatter returns a *new* array, so every backend here pays for
a copy of the 64 MiB operand (NumPy: ``np.add.at`` on a copy; PyTorch: the out-of-place
``index_add``; JAX: ``.at[].add`` outside jit copies too). ``scatter_add_rows_inplace``
times the same update without the copy where a backend can do that (NumPy and PyTorch
in place), as the floor a value-semantics op cannot reach. xops takes its results (and
index temporaries) from its buffer pool (xops/kernels/pool.py): in these loops, which drop
each result a call later, the 64 MiB buffer of the call before last is recycled instead
of fresh memory being faulted in; NumPy, PyTorch and JAX allocate fresh memory.

``scatter_add_rows`` also times ``xops_helper``: the update computation written as
``lambda a, b: my_add(a, b)`` with a helper calling ``xo.add`` (issue 15: within 1.2x of
``update_computation=xo.add``). In ``scatter_add_rows_inplace`` xops runs the loop a
user writes to accumulate, ``acc = xo.scatter(acc, ...)``: the previous value's only
reference is dropped as the new one is bound.
"""

import numpy as np

from .workloads import _rng, dim, gbs, workload

N_ROWS, WIDTH, N_IDX = 1 << 20, 16, 100_000


def _rows_data():
    rng = _rng()
    rows, width, n_idx = dim((N_ROWS, WIDTH, N_IDX), (64, 4, 20))
    x = rng.standard_normal((rows, width), dtype=np.float32)
    idx = rng.integers(0, rows, n_idx).astype(np.int32)
    upd = rng.standard_normal((n_idx, width), dtype=np.float32)
    return x, idx, upd


def _scatter_add(xo, body):
    def run(operand, indices, updates):
        return xo.scatter(
            operand,
            indices,
            updates,
            update_window_dims=[1],
            inserted_window_dims=[0],
            scatter_dims_to_operand_dims=[0],
            index_vector_dim=1,
            update_computation=body,
        )

    return run


def _jax_fns(be, fn, *arrays):
    jax = be.get("jax")
    if jax is None:
        return {}
    import jax.numpy as jnp

    js = [jnp.asarray(a) for a in arrays]
    jitted = jax.jit(fn)
    return {"jax": lambda: fn(*js), "jax_jit": lambda: jitted(*js)}


@workload(
    "gather_rows",
    f"gather {N_IDX} rows of ({N_ROWS},{WIDTH}) f32, i32 indices",
    derived=gbs(2 * N_IDX * WIDTH * 4),
)
def _gather(be):
    x, idx, _ = _rows_data()
    xo, torch = be["xops"], be.get("torch")
    fns = {"numpy": lambda: np.take(x, idx, axis=0)}
    tx, ti = xo.tensor(x), xo.tensor(idx)
    fns["xops"] = lambda: xo.gather(
        tx,
        ti,
        offset_dims=[1],
        collapsed_slice_dims=[0],
        start_index_map=[0],
        index_vector_dim=1,
        slice_sizes=[1, x.shape[1]],
    )
    if torch is not None:
        px, pi = torch.from_numpy(x), torch.from_numpy(idx.astype(np.int64))
        fns["torch"] = lambda: torch.index_select(px, 0, pi)
    fns.update(_jax_fns(be, lambda a, i: a[i], x, idx))
    return fns


def _np_scatter_add(x, idx, upd):
    out = x.copy()
    np.add.at(out, idx, upd)
    return out


@workload(
    "scatter_add_rows",
    f"scatter-add {N_IDX} rows into ({N_ROWS},{WIDTH}) f32 "
    f"(new result array: includes the 64 MiB copy)",
    rtol=1e-4,
)
def _scatter(be):
    x, idx, upd = _rows_data()
    xo, torch = be["xops"], be.get("torch")
    fns = {"numpy": lambda: _np_scatter_add(x, idx, upd)}
    tx, ti, tu = xo.tensor(x), xo.tensor(idx), xo.tensor(upd)
    builtin = _scatter_add(xo, xo.add)

    def my_add(a, b):
        return xo.add(a, b)

    helper = _scatter_add(xo, lambda a, b: my_add(a, b))
    fns["xops"] = lambda: builtin(tx, ti, tu)
    fns["xops_helper"] = lambda: helper(tx, ti, tu)
    if torch is not None:
        px, pi, pu = (
            torch.from_numpy(x),
            torch.from_numpy(idx.astype(np.int64)),
            torch.from_numpy(upd),
        )
        fns["torch"] = lambda: px.index_add(0, pi, pu)
    fns.update(_jax_fns(be, lambda a, i, u: a.at[i].add(u), x, idx, upd))
    return fns


@workload(
    "scatter_add_rows_inplace",
    f"the same {N_IDX}-row update in place where possible "
    f"(NumPy add.at, torch and xops index_add_; xops_scatter: acc = xo.scatter(acc, ...)); "
    f"values not compared (the in-place buffers accumulate)",
    unchecked=("numpy", "xops", "xops_scatter", "torch"),
)
def _scatter_inplace(be):
    x, idx, upd = _rows_data()
    xo, torch = be["xops"], be.get("torch")
    buf = x.copy()
    fns = {"numpy": lambda: (np.add.at(buf, idx, upd), buf)[1]}
    ti, tu = xo.tensor(idx), xo.tensor(upd)
    acc = [xo.tensor(x)]
    scatter = _scatter_add(xo, xo.add)

    def accumulate():
        acc[0] = scatter(acc[0], ti, tu)
        return acc[0]

    own = xo.tensor(x.copy())  # (nothing else holds its buffer: updated in place)
    fns["xops"] = lambda: own.index_add_(0, ti, tu)
    fns["xops_scatter"] = accumulate
    if torch is not None:
        px, pi, pu = (
            torch.from_numpy(x.copy()),
            torch.from_numpy(idx.astype(np.int64)),
            torch.from_numpy(upd),
        )
        fns["torch"] = lambda: px.index_add_(0, pi, pu)
    return fns


@workload("sort_1M", "sort (1048576,) f32 ascending", derived=gbs(2 * 4 * (1 << 20)))
def _sort(be):
    x = _rng().standard_normal(dim(1 << 20, 64), dtype=np.float32)
    xo, torch = be["xops"], be.get("torch")
    fns = {"numpy": lambda: np.sort(x)}
    tx = xo.tensor(x)
    fns["xops"] = lambda: xo.sort(tx, 0, comparator=lambda a, b: xo.compare(a, b, "LT"))
    if torch is not None:
        px = torch.from_numpy(x)
        fns["torch"] = lambda: torch.sort(px)[0]
    jax = be.get("jax")
    if jax is not None:
        fns.update(_jax_fns(be, lambda a: jax.lax.sort(a), x))
    return fns
