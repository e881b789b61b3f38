"""MPI transport (mpi4py): under ``mpiexec -n N`` every rank is one process of the grid.

Rank ``k`` is the process with flattened id ``k``: ``(k // num_partitions,
k % num_partitions)``. How each collective maps onto MPI:

* a process group -> a communicator from ``COMM_WORLD.Split`` (cached per set of process
  groups, so a training loop splits once);
* every collective first agrees on a header (op, attributes, operand types) with a
  non-blocking ``Iallgather`` polled against the deadline: a rank that never comes gives
  :class:`CollectiveTimeout`, ranks that disagree (different replica groups, shapes or
  element types) all raise the same :class:`CollectiveError`. Only then does the payload
  move, with the blocking call, which cannot hang any more since every rank is there;
* ``all_reduce`` with an add/max/min body on an MPI-native element type -> ``Allreduce``
  (MPI's reduction order; exact for integers, max and min; for floats see
  :func:`set_deterministic`); any other body -> ``Allgather`` and the spec's fold in
  group order, identical on every rank;
* ``all_gather`` -> ``Allgather``, ``all_to_all`` -> ``Alltoall``,
  ``collective_broadcast`` -> ``Bcast`` (raw bytes: any element type);
* ``collective_permute`` -> point-to-point sends and receives, the receive polled
  against the deadline;
* ``send`` / ``recv`` -> point-to-point messages on a duplicated communicator, tag =
  channel id, routed by :func:`connect` (an unknown channel id is an error).
"""
import hashlib
import os
import pickle
import time

import numpy as np

from ..errors import SpecError
from ..kernels.pool import empty as _empty
from .context import (
    CollectiveError,
    CollectiveTimeout,
    Context,
    check_agreement,
    set_process_context,
    types_of,
)

__all__ = ["MPIContext", "connect", "init", "launched_by_mpi", "set_deterministic"]

_NATIVE = {np.dtype(t) for t in ("f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8",
                                  "c8", "c16")}
_DETERMINISTIC = [False]
_BLOCKING_BYTES = 1 << 16  # payloads from this size on move with blocking calls
_SPIN_S = 2e-3  # a wait spins this long before it starts to sleep


def set_deterministic(flag=True):
    """``True``: float ``all_reduce`` with an add body folds in the spec's group order on
    every rank (bit-identical to the in-process grid and to any rank count's fold), at
    the price of an ``Allgather``; ``False`` (default): MPI's ``Allreduce``, whose
    summation order is MPI's own (fixed for a given library and rank count)."""
    _DETERMINISTIC[0] = bool(flag)


def launched_by_mpi():
    """Whether this process was started by ``mpiexec``/``srun`` with more than one rank
    (from the launcher's environment; MPI itself is not initialised here)."""
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS",
                "SLURM_NTASKS"):
        v = os.environ.get(var)
        if v and v.isdigit() and int(v) > 1 and (var != "SLURM_NTASKS" or
                                                  "PMI_RANK" in os.environ or
                                                  "PMIX_RANK" in os.environ):
            return True
    return False


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:  # pragma: no cover - depends on the install
        raise SpecError("distributed", "", f"MPI needs mpi4py and an MPI library: pip install "
                                           f"'xops[mpi]' ({e})") from None
    return MPI


def _bytes(a):
    """A C-contiguous uint8 view of ``a`` (any element type travels as raw bytes)."""
    a = np.asarray(a, order="C")
    return a.reshape(-1).view(np.uint8) if a.size else np.zeros(0, np.uint8)


def _from_bytes(buf, like):
    return buf.view(like.dtype).reshape(like.shape) if like.size else np.empty(like.shape,
                                                                              like.dtype)


class MPIContext(Context):
    transport = "mpi"

    def __init__(self, comm=None, num_partitions=1, timeout=None):
        MPI = _mpi()
        self.MPI = MPI
        self.comm = comm if comm is not None else MPI.COMM_WORLD
        size, rank = self.comm.Get_size(), self.comm.Get_rank()
        if num_partitions < 1 or size % num_partitions:
            raise SpecError("distributed", "", f"num_partitions={num_partitions} must divide "
                                               f"the number of ranks {size}")
        super().__init__(size // num_partitions, num_partitions, rank // num_partitions,
                         rank % num_partitions, timeout)
        self.rank, self.size = rank, size
        self._channels = self.comm.Dup()   # send/recv: tags are channel ids
        self._p2p = self.comm.Dup()        # collective_permute
        self._splits = {}
        self._routes = {}
        self._permutes = 0

    # -- waiting ----------------------------------------------------------------------
    def _poll(self, test, op, what):
        """Call ``test()`` until it is true; CollectiveTimeout at the deadline.

        For the first ``_SPIN_S`` it spins, yielding the core between tests (MPI makes
        progress inside Test; a rank that slept would wait a whole scheduler time slice
        to get its core back on a loaded machine); after that it sleeps up to 0.2 ms
        between tests, leaving the core to the rank it waits for."""
        start = time.monotonic()
        deadline = start + self.timeout
        pause = 0.0
        while not test():
            now = time.monotonic()
            if now > deadline:
                raise CollectiveTimeout(op, "timeout", f"rank {self.rank} (process "
                                        f"{self.process_id}) waited {self.timeout:g} s for "
                                        f"{what}: a rank never came — do all ranks call the "
                                        f"same collectives with the same replica groups?")
            if now - start < _SPIN_S:
                os.sched_yield()
            else:
                pause = min(2e-4, pause * 2 or 1e-5)
                time.sleep(pause)

    def _wait(self, req, op, what):
        self._poll(req.Test, op, what)

    def _call(self, opname, sub, name, nbytes, *args, **kwargs):
        """The payload call ``sub.<name>``, after the check-in (every rank is there).
        Small payloads use the non-blocking form, polled with short sleeps: a blocking
        MPI call busy-waits, which on a shared or oversubscribed machine takes the core
        from the rank it waits for. Large ones use the blocking call (MPI moves them
        faster when it drives its progress engine without pauses)."""
        if nbytes >= _BLOCKING_BYTES:
            getattr(sub, name)(*args, **kwargs)
        else:
            self._wait(getattr(sub, "I" + name[0].lower() + name[1:])(*args, **kwargs),
                       opname, f"the other members of the group to finish {opname}")

    # -- groups -------------------------------------------------------------------------
    def _agree(self, op, key, groups, arrays):
        """Every rank checks in for this collective: one Iallgather over all ranks of a
        digest of (process groups, op attributes, operand types), polled against the
        deadline. Any difference anywhere makes *every* rank raise the same error (so no
        rank goes on to a call the others never make). Returns (communicator of this
        rank's group or None, the group), the split cached per set of groups."""
        gkey = tuple(tuple(self.flat(p) for p in g) for g in groups)
        header = (gkey, key, types_of(arrays))
        digest = np.frombuffer(hashlib.sha256(repr(header).encode()).digest()[:8], np.int64)
        got = np.zeros(self.size, np.int64)
        self._wait(self.comm.Iallgather(digest, got), op,
                   f"every rank to reach {op} over process groups {[list(g) for g in groups]}")
        if np.any(got != got[0]):
            self._disagreement(op, groups, gkey, self.comm.allgather(header))
        hit = self._splits.get(gkey)
        if hit is None:
            color, index, group = self.MPI.UNDEFINED, 0, None
            for i, g in enumerate(groups):
                if self.process_id in g:
                    color, index, group = i, list(g).index(self.process_id), tuple(g)
            sub = self.comm.Split(color, index)
            hit = (sub if sub != self.MPI.COMM_NULL else None, group)
            self._splits[gkey] = hit
        return hit

    def _disagreement(self, op, groups, gkey, headers):
        for rank, h in enumerate(headers):
            if h[0] != gkey:
                raise CollectiveError(op, "process grid", f"the ranks disagree on the process "
                                                          f"groups: rank {self.rank} has "
                                                          f"{[list(g) for g in groups]}, rank "
                                                          f"{rank} has {[list(g) for g in h[0]]}"
                                                          f" (flattened ids)")
        for g in groups:  # the first group whose members disagree, seen from every rank
            members = [headers[self.flat(p)][1:] for p in g]
            check_agreement(op, "operand types and attributes", tuple(g), members)
        raise CollectiveError(op, "process grid", "the ranks disagree on the collective")

    def _group_comm(self, op, key, groups, arrays):
        sub, group = self._agree(op, key, groups, arrays)
        if sub is None:
            raise CollectiveError(op, "process grid", f"process {self.process_id} is in no "
                                                      f"process group of {groups}")
        return sub, group

    # -- the bulk operations ------------------------------------------------------------
    def exchange(self, op, key, groups, arrays):
        sub, _group = self._group_comm(op, key, groups, arrays)
        n = sub.Get_size()
        out = [[None] * len(arrays) for _ in range(n)]
        for i, a in enumerate(arrays):
            src = _bytes(a)
            buf = _empty((n * src.size,), np.uint8)
            self._call(op, sub, "Allgather", src.nbytes, src, buf)
            for j in range(n):
                out[j][i] = _from_bytes(buf[j * src.size:(j + 1) * src.size], a)
        return out

    def all_gather(self, op, key, groups, arrays):
        return self.exchange(op, key, groups, arrays)

    def all_reduce(self, op, key, groups, arrays, fold, native=None):
        ok = native is not None and all(a.dtype in _NATIVE for a in arrays) and \
            not (native != "sum" and any(a.dtype.kind == "c" for a in arrays)) and \
            not (_DETERMINISTIC[0] and any(a.dtype.kind in "fc" for a in arrays))
        if not ok:
            return fold(self.exchange(op, key, groups, arrays))
        sub, _ = self._group_comm(op, key, groups, arrays)
        mop = {"sum": self.MPI.SUM, "max": self.MPI.MAX, "min": self.MPI.MIN}[native]
        out = []
        for a in arrays:
            a = np.asarray(a, order="C")
            r = _empty(a.shape, a.dtype)  # (recycled memory: no page faults)
            self._call(op, sub, "Allreduce", a.nbytes, a, r, op=mop)
            out.append(r)
        return out

    def all_to_all(self, op, key, groups, parts):
        flat = [a for p in parts for a in p]
        sub, _group = self._group_comm(op, key, groups, flat)
        n, m = len(parts), len(parts[0])
        out = [[None] * m for _ in range(n)]
        for i in range(m):
            send = np.concatenate([_bytes(parts[j][i]) for j in range(n)])
            recv = _empty(send.shape, np.uint8)
            self._call(op, sub, "Alltoall", send.nbytes, send, recv)
            size = send.size // n
            for j in range(n):
                out[j][i] = _from_bytes(recv[j * size:(j + 1) * size], parts[0][i])
        return out

    def broadcast(self, op, key, groups, arrays, root=0):
        sub, _ = self._agree(op, key, groups, arrays)  # (every rank takes part)
        if sub is None:
            return None
        out = []
        for a in arrays:
            buf = _bytes(a).copy()
            self._call(op, sub, "Bcast", buf.nbytes, buf, root=root)
            out.append(_from_bytes(buf, a))
        return out

    def permute(self, op, key, target, source, arrays):
        self._permutes += 1
        tag = self._permutes % 30000
        header = (key, types_of(arrays))
        req = None
        if target is not None:
            req = self._p2p.isend((header, [np.asarray(a, order="C") for a in arrays]),
                                  dest=self.flat(target), tag=tag)
        got = None
        if source is not None:
            src = self.flat(source)
            self._poll(lambda: self._p2p.Iprobe(source=src, tag=tag), op,
                       f"process {source} (rank {src}) to send its {op} operand")
            h, got = self._p2p.recv(source=src, tag=tag)
            check_agreement(op, "operand types and attributes", (self.process_id, source),
                            [header, h])
        if req is not None:
            self._poll(req.Test, op, f"process {target} to receive its {op} operand")
        return got

    # -- channels -----------------------------------------------------------------------
    def connect(self, channel_id, source, target):
        self._routes[int(channel_id)] = (self.flat(source), self.flat(target))

    def _route(self, op, channel_id):
        r = self._routes.get(int(channel_id))
        if r is None:
            raise SpecError(op, "channel_id", f"channel {channel_id} has no route on rank "
                                              f"{self.rank}: call xops.distributed.connect("
                                              f"{channel_id}, source=(r, p), target=(r, p)) on "
                                              f"every rank first")
        return r

    def send(self, op, channel_id, arrays):
        src, dst = self._route(op, channel_id)
        if src != self.rank:
            raise SpecError(op, "channel_id", f"channel {channel_id} goes from rank {src} to "
                                              f"rank {dst}; rank {self.rank} cannot send on it")
        self._channels.send(pickle.dumps(list(arrays), 5), dest=dst, tag=int(channel_id))

    def recv(self, op, channel_id):
        src, dst = self._route(op, channel_id)
        if dst != self.rank:
            raise SpecError(op, "channel_id", f"channel {channel_id} goes from rank {src} to "
                                              f"rank {dst}; rank {self.rank} cannot receive on "
                                              f"it")
        self._poll(lambda: self._channels.Iprobe(source=src, tag=int(channel_id)), op,
                   f"a value on channel {channel_id} from rank {src}")
        return pickle.loads(self._channels.recv(source=src, tag=int(channel_id)))



def init(num_partitions=1, timeout=None, comm=None):
    """Make this process's context the MPI one (``COMM_WORLD``, or ``comm``): rank k is
    process (k // num_partitions, k % num_partitions). Called automatically on the first
    collective when the process was started by ``mpiexec`` with more than one rank.
    Returns the context."""
    ctx = MPIContext(comm, num_partitions, timeout)
    set_process_context(ctx)
    return ctx


def connect(channel_id, source, target):
    """Route channel ``channel_id`` from process ``source`` to process ``target`` (each a
    ``(replica_id, partition_id)`` pair or a flattened id) for ``send`` / ``recv`` under
    MPI. Call it on every rank with the same arguments. The in-process grid needs no
    routes (its channels are grid-wide queues)."""
    from .context import current
    ctx = current()
    if not isinstance(ctx, MPIContext):
        return
    def pid(x):
        return divmod(int(x), ctx.num_partitions) if isinstance(x, (int, np.integer)) \
            else tuple(x)
    ctx.connect(channel_id, pid(source), pid(target))
