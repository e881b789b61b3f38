"""The process context: which process of the StableHLO process grid the caller is, and
the transport that moves values between processes.

The spec runs a program on a grid of ``num_replicas x num_partitions`` processes, each
with a ``process_id = (replica_id, partition_id)``. Every collective op asks
:func:`current` for the caller's context and hands it the values to exchange. Three
contexts exist:

* :class:`SingleProcess` — the default: a 1 x 1 grid (a collective over the process
  itself is the identity; ``replica_id()`` is 0);
* the in-process grid of :func:`xops.distributed.run_parallel` — one Python thread per
  process, a rendezvous per collective (``xops/distributed/grid.py``);
* MPI — every rank of ``mpiexec -n N`` is one process (``xops/distributed/mpi.py``).

A transport implements :meth:`Context.exchange` (every member of a process group gets
every member's values, in group order) plus channels and host queues; the MPI one also
overrides the bulk operations (all-reduce, all-gather, all-to-all, broadcast, permute)
with MPI's own. The flattened id of a process is ``replica_id * num_partitions +
partition_id`` (the spec's ``flattened_ids``); under MPI it is the rank.
"""

import collections
import os
import threading

from ..errors import SpecError

__all__ = [
    "CollectiveError",
    "CollectiveTimeout",
    "Context",
    "SingleProcess",
    "current",
    "default_timeout",
    "set_default_timeout",
]


class CollectiveError(SpecError):
    """A collective or a channel could not complete: a process failed, or the processes
    disagree (different replica groups, shapes or element types)."""


class CollectiveTimeout(CollectiveError, TimeoutError):
    """A collective, ``recv`` or ``infeed`` waited longer than the deadline for a process
    that never came (the message says which processes arrived and which did not)."""


_TIMEOUT = [float(os.environ.get("XOPS_COLLECTIVE_TIMEOUT", "60"))]


def default_timeout():
    """Seconds a collective waits for the other processes before it raises
    :class:`CollectiveTimeout` (default 60; environment ``XOPS_COLLECTIVE_TIMEOUT``)."""
    return _TIMEOUT[0]


def set_default_timeout(seconds):
    """Set the deadline of :func:`default_timeout` for contexts created afterwards."""
    seconds = float(seconds)
    if not seconds > 0:
        raise ValueError(f"set_default_timeout: seconds must be > 0, got {seconds}")
    _TIMEOUT[0] = seconds


def types_of(arrays):
    """(shape, NumPy dtype) per array: what every member of a group must agree on."""
    return tuple((a.shape, a.dtype) for a in arrays)


def check_agreement(op, what, group, headers):
    """Raise the same CollectiveError on every member when the members' headers
    (op signature, operand types) differ: each member sees every header."""
    first = headers[0]
    for pid, h in zip(group, headers):
        if h != first:
            raise CollectiveError(
                op,
                "process grid",
                f"the processes of group {list(group)} disagree: process "
                f"{group[0]} has {_describe(first)} but process {pid} has "
                f"{_describe(h)} ({what})",
            )


def _describe(header):
    key, types = header
    ts = ", ".join(f"{dt}{list(shape)}" for shape, dt in types)
    return f"{key} on [{ts}]"


class Context:
    """One process of a grid. Subclasses implement ``exchange``, ``send`` and ``recv``."""

    transport = "base"

    def __init__(self, num_replicas, num_partitions, replica_id, partition_id, timeout=None):
        self.num_replicas, self.num_partitions = int(num_replicas), int(num_partitions)
        self.replica_id, self.partition_id = int(replica_id), int(partition_id)
        self.timeout = default_timeout() if timeout is None else float(timeout)
        self.infeed = collections.deque()  # the host fills it, infeed pops from it
        self.outfeed = collections.deque()  # outfeed appends, the host drains it
        # what an op derived from its attributes on this grid (process groups, the
        # signature's key), by attributes: a repeated collective skips deriving it again
        self.memo = {}

    # -- the grid ---------------------------------------------------------------------
    @property
    def process_id(self):
        return (self.replica_id, self.partition_id)

    @property
    def num_processes(self):
        return self.num_replicas * self.num_partitions

    def flat(self, pid):
        """The flattened id (MPI rank) of process ``pid = (replica_id, partition_id)``."""
        return pid[0] * self.num_partitions + pid[1]

    def __repr__(self):
        return (
            f"<{type(self).__name__} process {self.process_id} of "
            f"{self.num_replicas}x{self.num_partitions}>"
        )

    # -- transport primitives ---------------------------------------------------------
    def my_group(self, op, groups):
        """The process group (a tuple of process ids) of ``groups`` holding this process."""
        for g in groups:
            if self.process_id in g:
                return tuple(g)
        raise CollectiveError(
            op,
            "process grid",
            f"process {self.process_id} is in no process group of {[list(g) for g in groups]}",
        )

    def exchange(self, op, key, groups, arrays):
        """Every member's ``arrays`` (a list of NumPy arrays), in the order of this
        process's group of ``groups`` (all process groups of the op), after checking that
        all members call the same op (``key``) on the same types."""
        raise NotImplementedError

    def send(self, op, channel_id, arrays):
        raise NotImplementedError

    def recv(self, op, channel_id):
        raise NotImplementedError

    # -- bulk operations (generic versions over exchange; MPI overrides them) -----------
    def all_gather(self, op, key, groups, arrays):
        return self.exchange(op, key, groups, arrays)

    def all_reduce(self, op, key, groups, arrays, fold, native=None):
        """``fold(list of members' arrays) -> arrays``: the spec's left-to-right fold.
        ``native`` ("sum", "max", "min") lets a transport use its own reduction."""
        return fold(self.exchange(op, key, groups, arrays))

    def all_to_all(self, op, key, groups, parts):
        """``parts[j]``: the list of arrays for member j; returns what each member sent
        to this one, in group order."""
        me = self.my_group(op, groups).index(self.process_id)
        got = self.exchange(op, key, groups, [a for p in parts for a in p])
        n = len(parts[0])
        return [member[me * n : (me + 1) * n] for member in got]

    def broadcast(self, op, key, groups, arrays, root=0):
        """The root member's arrays; None for a process in no group."""
        if not any(self.process_id in g for g in groups):
            return None
        return self.exchange(op, key, groups, arrays)[root]

    def permute(self, op, key, target, source, arrays):
        """Send ``arrays`` to process ``target`` (or nobody: None) and return what process
        ``source`` sent (None when nobody sends here)."""
        raise NotImplementedError

    def pop_infeed(self, op):
        if not self.infeed:
            raise CollectiveError(
                op,
                "infeed queue",
                f"the infeed queue of process "
                f"{self.process_id} is empty (fill it "
                f"with xops.distributed.put_infeed)",
            )
        return self.infeed.popleft()


class SingleProcess(Context):
    """The 1 x 1 grid: the process talks only to itself (channels and host queues are
    local FIFOs)."""

    transport = "single"

    def __init__(self, timeout=None):
        super().__init__(1, 1, 0, 0, timeout)
        self._channels = collections.defaultdict(collections.deque)

    def exchange(self, op, key, groups, arrays):
        self.my_group(op, groups)
        return [list(arrays)]

    def permute(self, op, key, target, source, arrays):
        return list(arrays) if source is not None else None

    def send(self, op, channel_id, arrays):
        self._channels[channel_id].append(list(arrays))

    def recv(self, op, channel_id):
        q = self._channels.get(channel_id)
        if not q:
            raise CollectiveError(
                op,
                "channel",
                f"nothing was sent on channel {channel_id} "
                f"(a single process: only its own sends "
                f"arrive)",
            )
        return q.popleft()


class _Local(threading.local):
    ctx = None


_local = _Local()
_process = [None]  # the process-wide context (MPI), used by threads without their own
_single = SingleProcess()


def current():
    """The calling thread's process context: the in-process grid's process for a thread
    of :func:`run_parallel`, else the MPI context when running under MPI
    (:func:`xops.distributed.init`, called on first use when ``mpiexec`` started this
    process with several ranks), else the 1 x 1 single-process grid."""
    ctx = _local.ctx or _process[0]
    if ctx is not None:
        return ctx
    if _auto[0] is None and _launchers:
        _auto[0] = False
        for detect, start in _launchers:
            if detect():
                _auto[0] = True
                return start()
    return _single


_auto = [None]  # whether a launch by mpiexec/srun was detected (checked once)
_launchers = []  # (detect, start) of the transports that start on first use


def add_launcher(detect, start):
    """Register a transport that starts itself on the first collective: ``detect()``
    says whether this process was launched for it, ``start()`` makes and installs its
    context and returns it (``xops/distributed/mpi.py`` registers MPI's, so that this
    module needs no import of it)."""
    _launchers.append((detect, start))


def set_thread_context(ctx):
    _local.ctx = ctx


def set_process_context(ctx):
    _process[0] = ctx
