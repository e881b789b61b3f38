"""Distributed execution: the StableHLO process grid on threads or on MPI.

* :func:`run_parallel` — an in-process grid of replicas x partitions (one thread per
  process, a rendezvous per collective, a deadline on every wait);
* under ``mpiexec -n N`` (mpi4py + an MPI library: ``pip install 'xops[mpi]'``) every
  rank is one process of the grid, detected on first use (or :func:`init` explicitly);
* :class:`DataParallel` — data-parallel training over the replicas in three lines.

The collective ops themselves are ``xo.all_reduce``, ``xo.all_gather``, ... (see
``xops/ops/collectives.py`` and docs/distributed.md).
"""

from .context import (
    CollectiveError,
    CollectiveTimeout,
    current,
    default_timeout,
    set_default_timeout,
)
from .data_parallel import DataParallel, SyncBatchNorm, global_mean
from .grid import run_parallel
from .mpi import connect, init, launched_by_mpi, set_deterministic

__all__ = [
    "CollectiveError",
    "CollectiveTimeout",
    "DataParallel",
    "SyncBatchNorm",
    "barrier",
    "connect",
    "current",
    "default_timeout",
    "get_outfeed",
    "global_mean",
    "init",
    "is_main",
    "launched_by_mpi",
    "put_infeed",
    "rank",
    "run_parallel",
    "set_default_timeout",
    "set_deterministic",
    "world_size",
]


def rank():
    """The caller's flattened process id (the MPI rank under MPI; 0 alone)."""
    ctx = current()
    return ctx.flat(ctx.process_id)


def world_size():
    """The number of processes of the caller's grid."""
    return current().num_processes


def is_main():
    """Whether the caller is process (0, 0): the one that prints and saves."""
    return rank() == 0


def barrier():
    """Wait until every process of the grid gets here (an all_reduce of nothing)."""
    import numpy as np

    from ..ops.collectives import all_reduce
    from ..ops.elementwise import add
    from ..tensor import tensor

    all_reduce(tensor(np.zeros(0, np.int32)), [list(range(world_size()))], 1, True, add)


def put_infeed(*values):
    """Append one infeed entry (the values one ``xo.infeed`` returns) to the caller's
    host infeed queue."""
    current().infeed.append(tuple(values))


def get_outfeed():
    """Pop the oldest entry (a tuple of tensors) of the caller's outfeed queue, or None
    when it is empty."""
    q = current().outfeed
    return q.popleft() if q else None
