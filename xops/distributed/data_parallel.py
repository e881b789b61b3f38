"""Data-parallel training over the replicas of the process grid, without ceremony.

    net = xo.distributed.DataParallel(build_model())        # same weights everywhere
    xb, yb = net.shard(x[idx]), net.shard(y[idx])           # this rank's part of the batch
    loss = net.mean(F.cross_entropy(net(xb), yb, reduction="none"))   # the global mean

and then the usual ``opt.zero_grad(); loss.backward(); opt.step()``. What it does:

* at construction, every parameter and buffer is broadcast from process 0, and every
  batch-norm layer becomes a :class:`SyncBatchNorm` (batch statistics over the whole
  global batch, through ``all_reduce``, gradients included);
* ``net(x)`` passes the parameters through one tape node that is the identity going
  forward and one ``all_reduce(add)`` of *all* gradients (flattened into one buffer)
  going backward: after ``loss.backward()`` every rank holds the gradient of the global
  loss, so identical optimizer steps keep identical weights;
* ``net.mean(per_item)`` is the mean over the global batch, weighted by each rank's
  count (uneven last batches are right); its gradient is the local share 1/N_global.

With one process (no ``mpiexec``, no grid) ``DataParallel`` changes nothing: ``shard``
returns the whole batch, ``mean`` is the plain mean and the model runs as is.
"""

import numpy as np

from ..autodiff.tape import is_grad_enabled, no_grad, primitive
from ..tensor import Tensor, _wrap, tensor
from .context import current

__all__ = ["DataParallel", "SyncBatchNorm", "global_mean"]


def _everyone():
    ctx = current()
    return ctx, [list(range(ctx.num_processes))]


def _all_sum(x):
    """all_reduce(add) of ``x`` over every process of the grid (flattened ids)."""
    from ..ops.collectives import all_reduce
    from ..ops.elementwise import add

    _ctx, groups = _everyone()
    return all_reduce(x, groups, 1, True, add)


# ---------------------------------------------------------------------------------------
# The global mean
# ---------------------------------------------------------------------------------------


@primitive("global_mean")
def _global_mean(values, count):
    from ..nn.functional import sum as _sum
    from ..ops.elementwise import divide

    total = _all_sum(_sum(values))
    return divide(total, float(count) if values.dtype.kind == "float" else count)


@_global_mean.defvjp
def _global_mean_vjp(g, out, values, count):
    from ..ops.elementwise import divide
    from ..ops.movement import broadcast_in_dim

    return (broadcast_in_dim(divide(g, float(count)), [], values.shape),)


def global_mean(values):
    """The mean of ``values`` over every process's elements (each process passes its own
    part; an empty part is fine). The result is the same on every process; its gradient
    is each process's share, 1 / (total count), so that summing the gradients over the
    processes gives the gradient of the global mean.

    >>> run_parallel(lambda v: xops.distributed.global_mean(v),
    ...              [[xo.tensor([1.0, 2.0])], [xo.tensor([6.0])]])   # each: 3.0
    [[xo.tensor(3., f32[])], [xo.tensor(3., f32[])]]
    """
    from ..nn.functional import mean

    ctx = current()
    if ctx.num_processes == 1:
        return mean(values)
    with no_grad():
        n = int(_all_sum(tensor(np.array(values.size, np.int64))).item())
    return _global_mean(values, n)


# ---------------------------------------------------------------------------------------
# Synchronised batch norm
# ---------------------------------------------------------------------------------------


def _sync_batch_norm(bn, x):
    """Batch norm of ``x`` with the statistics of the global batch (two all_reduces)."""
    from ..nn.functional import sum as _sum
    from ..nn.parameter import assign_
    from ..ops.elementwise import add, divide, multiply, rsqrt, subtract
    from ..ops.movement import broadcast_in_dim, concatenate
    from ..ops.movement import slice as slice_

    c = x.shape[1]
    axes = [a for a in range(x.ndim) if a != 1]
    if x.dtype.name in ("f32", "f64"):
        # one all_reduce for the per-channel sums and the element count (exact in f32
        # up to 2**24 values per channel)
        count = tensor(np.array([x.size // c], x.dtype.np))
        sums = _all_sum(concatenate([_sum(x, axes), count], 0))
        n = int(float(np.asarray(sums._value[c], np.float64)))
    else:  # (narrow floats cannot hold the count exactly)
        sums = _all_sum(_sum(x, axes))
        with no_grad():
            n = int(_all_sum(tensor(np.array(x.size // c, np.int64))).item())
    if n <= 1:
        raise ValueError(
            f"SyncBatchNorm: training needs more than one value per channel "
            f"over all processes, got {n}"
        )

    def per_channel(v):
        return broadcast_in_dim(v, [1], x.shape)

    mean = divide(slice_(sums, [0], [c], [1]), float(n))
    d = subtract(x, per_channel(mean))
    var = divide(_all_sum(_sum(multiply(d, d), axes)), float(n))
    out = multiply(d, per_channel(rsqrt(add(var, bn.eps))))
    if bn.weight is not None:
        out = add(multiply(out, per_channel(bn.weight)), per_channel(bn.bias))
    if bn.track_running_stats:
        assign_(bn.num_batches_tracked, tensor(int(bn.num_batches_tracked) + 1, "i64"))
        m = bn.momentum if bn.momentum is not None else 1.0 / int(bn.num_batches_tracked)
        with no_grad():
            assign_(
                bn.running_mean, add(multiply(bn.running_mean, 1 - m), multiply(mean.detach(), m))
            )
            unbiased = multiply(var.detach(), n / (n - 1))
            assign_(bn.running_var, add(multiply(bn.running_var, 1 - m), multiply(unbiased, m)))
    return out


class SyncBatchNorm:
    """Marker namespace: :meth:`convert` turns every batch-norm layer of a model into one
    whose training-mode statistics cover the global batch (eval mode is unchanged)."""

    @staticmethod
    def convert(model):
        from ..nn.modules import _BatchNorm

        for m in model.modules():
            if isinstance(m, _BatchNorm) and not getattr(m, "_synced", False):
                object.__setattr__(m, "_synced", True)
                object.__setattr__(m, "forward", _synced_forward(m, m.forward))
        return model


def _synced_forward(bn, plain):
    def forward(x):
        if bn.training and current().num_processes > 1:
            if x.ndim not in bn._ranks or x.shape[1] != bn.num_features:
                return plain(x)  # (its own error message)
            return _sync_batch_norm(bn, x)
        return plain(x)

    return forward


# ---------------------------------------------------------------------------------------
# Gradient synchronisation: identity forward, one all_reduce of all gradients backward
# ---------------------------------------------------------------------------------------


@primitive("sync_gradients")
def _sync_params(params):
    return tuple(_wrap(p._value, p._dtype) for p in params)


@_sync_params.defvjp
def _sync_params_vjp(g, out, params):
    """One all_reduce(add) over every process of all the cotangents, flattened into one
    buffer per element type (one MPI Allreduce per step for an f32 model)."""
    from ..ops.collectives import all_reduce
    from ..ops.elementwise import add

    _ctx, groups = _everyone()
    res = [None] * len(params)
    by_type = {}
    for i, c in enumerate(g):
        by_type.setdefault(c._dtype, []).append(i)
    for dt, idx in by_type.items():
        flat = np.concatenate([np.asarray(g[i]._value).reshape(-1) for i in idx])
        summed = all_reduce(_wrap(flat, dt), groups, 1, True, add)._value
        at = 0
        for i in idx:
            n = g[i].size
            res[i] = _wrap(summed[at : at + n].reshape(g[i].shape), dt)
            at += n
    return (res,)


class DataParallel:
    """Wrap ``module`` for data-parallel training over every process of the grid (MPI
    ranks under ``mpiexec``, or the threads of ``run_parallel``). See the module
    docstring; attribute access falls through to the wrapped module."""

    def __init__(self, module, broadcast=True):
        object.__setattr__(self, "module", module)
        ctx = current()
        object.__setattr__(self, "_n", ctx.num_processes)
        if self._n > 1:
            SyncBatchNorm.convert(module)
            if broadcast:
                self._broadcast_state()

    def _broadcast_state(self):
        from ..nn.parameter import assign_
        from ..ops.collectives import collective_broadcast

        replicas = [list(range(current().num_replicas))]
        # the live parameters and buffers (state_dict() gives detached snapshots, and
        # assigning to those would leave the model as it was)
        with no_grad():  # each partition's replicas take replica 0's values
            for _, t in sorted(self.module._state_items(), key=lambda kv: kv[0]):
                if isinstance(t, Tensor):
                    assign_(t, collective_broadcast(t, replicas))

    # -- data ------------------------------------------------------------------------
    def shard(self, batch):
        """This process's contiguous part of a global ``batch`` (split along axis 0 as
        evenly as possible, the first processes taking one more), as a Tensor."""
        if self._n == 1:
            return batch if isinstance(batch, Tensor) else tensor(np.asarray(batch))
        arr = np.asarray(batch)
        ctx = current()
        k = ctx.flat(ctx.process_id)
        n = arr.shape[0]
        lo = k * (n // self._n) + min(k, n % self._n)
        hi = lo + n // self._n + (1 if k < n % self._n else 0)
        return tensor(np.asarray(arr[lo:hi], order="C"))

    def mean(self, per_item):
        """The global mean of per-item values (see :func:`global_mean`)."""
        return global_mean(per_item)

    # -- the model ---------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        m = self.module
        if self._n == 1 or not is_grad_enabled() or not m.training:
            return m(*args, **kwargs)
        slots = [
            (owner, name, p)
            for owner in m.modules()
            for name in list(getattr(owner, "_param_names", ()))
            if isinstance(p := getattr(owner, name, None), Tensor) and p.requires_grad
        ]
        if not slots:
            return m(*args, **kwargs)
        synced = _sync_params([p for _, _, p in slots])
        try:
            for (owner, name, _), s in zip(slots, synced):
                object.__setattr__(owner, name, s)
            return m(*args, **kwargs)
        finally:
            for owner, name, p in slots:
                object.__setattr__(owner, name, p)

    def __getattr__(self, name):
        return getattr(self.module, name)

    def __repr__(self):
        return f"DataParallel({self.module!r}, processes={self._n})"
