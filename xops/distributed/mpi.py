"""MPI transport (mpi4py): under ``mpiexec -n N`` every rank is one process of the grid.

Rank ``k`` is the process with flattened id ``k``: ``(k // num_partitions,
k % num_partitions)``. How each collective maps onto MPI:

* a process group -> a communicator from ``COMM_WORLD.Split`` (cached per set of process
  groups, so a training loop splits once);
* every collective checks in: a non-blocking ``Iallgather`` over all ranks of a digest
  of its signature (process groups, op attributes, operand types), polled against the
  deadline: a rank that never comes gives :class:`CollectiveTimeout`, ranks that
  disagree (different replica groups, shapes or element types) all raise the same
  :class:`CollectiveError`. The first call of a signature moves its payload only after
  the check-in; a repeated one posts payload and check-in together, the payload on a
  communicator of that signature's own (see :meth:`MPIContext._run`: one
  synchronisation per call, still no hang and no wrong result when the ranks disagree).
  Payloads use the non-blocking calls (``Iallreduce``, ...), polled against the deadline;
* ``all_reduce`` with an add/max/min body on an MPI-native element type -> ``Iallreduce``
  (MPI's reduction order; exact for integers, max and min; for floats see
  :func:`set_deterministic`); any other body -> ``Iallgather`` and the spec's fold in
  group order, identical on every rank;
* ``all_gather`` -> ``Iallgather``, ``all_to_all`` -> ``Ialltoall``,
  ``collective_broadcast`` -> ``Ibcast`` (raw bytes: any element type);
* ``collective_permute`` -> point-to-point sends and receives, the receive polled
  against the deadline;
* ``send`` / ``recv`` -> point-to-point messages on a duplicated communicator, tag =
  channel id, routed by :func:`connect` (an unknown channel id is an error).
"""

import hashlib
import os
import pickle
import sys
import time

import numpy as np

from ..errors import SpecError
from ..kernels.pool import empty as _empty
from .context import (
    CollectiveError,
    CollectiveTimeout,
    Context,
    add_launcher,
    check_agreement,
    current,
    set_process_context,
    types_of,
)

__all__ = ["MPIContext", "connect", "init", "launched_by_mpi", "set_deterministic"]

_NATIVE = {
    np.dtype(t) for t in ("f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "c8", "c16")
}
_DETERMINISTIC = [False]
_SPIN_S = 2e-3  # a wait spins this long (a payload's: plus 1 ns per byte) before it sleeps
_BURST = 64  # tests between two looks at the clock (and yields) in a wait: see _poll
_SPARE_BYTES = 1 << 28  # result buffers that a context's repeated all_reduces keep (see
# _Repeat), in all; beyond that they come from the pool
_KNOWN_MAX = 128  # signatures a context makes known (each holds a communicator; a
# dropped one's stays unusable, so this counts them too); further ones always check in first


def set_deterministic(flag=True):
    """``True``: float ``all_reduce`` with an add body folds in the spec's group order on
    every rank (bit-identical to the in-process grid and to any rank count's fold), at
    the price of an ``Allgather``; ``False`` (default): MPI's ``Allreduce``, whose
    summation order is MPI's own (fixed for a given library and rank count)."""
    _DETERMINISTIC[0] = bool(flag)


def launched_by_mpi():
    """Whether this process was started by ``mpiexec``/``srun`` with more than one rank
    (from the launcher's environment; MPI itself is not initialised here)."""
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS"):
        v = os.environ.get(var)
        if (
            v
            and v.isdigit()
            and int(v) > 1
            and (var != "SLURM_NTASKS" or "PMI_RANK" in os.environ or "PMIX_RANK" in os.environ)
        ):
            return True
    return False


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:  # pragma: no cover - depends on the install
        raise SpecError(
            "distributed", "", f"MPI needs mpi4py and an MPI library: pip install 'xops[mpi]' ({e})"
        ) from None
    return MPI


def _bytes(a):
    """A C-contiguous uint8 view of ``a`` (any element type travels as raw bytes)."""
    a = np.asarray(a, order="C")
    return a.reshape(-1).view(np.uint8) if a.size else np.zeros(0, np.uint8)


def _from_bytes(buf, like):
    return (
        buf.view(like.dtype).reshape(like.shape) if like.size else np.empty(like.shape, like.dtype)
    )


class _Signature:
    """A collective signature every rank checked in with once: its digest, this rank's
    group communicator and group, and a communicator of its own (a ``Dup`` of the group's)
    that carries this signature's payloads and nothing else. ``known`` turns false when a
    disagreement drops it (see :meth:`MPIContext._disagreement`)."""

    __slots__ = ("comm", "digest", "everyone", "group", "header", "known", "sub")

    def __init__(self, digest, header, sub, group, comm, size):
        self.digest, self.header, self.sub, self.group, self.comm = digest, header, sub, group, comm
        self.everyone = digest.tobytes() * size  # the check-in's result when all agree
        self.known = True


def _first_free(arrays, alone):
    """The first of ``arrays`` (a list) that nothing but the list refers to (its reference
    count here is ``alone``), or None."""
    for a in arrays:
        if sys.getrefcount(a) == alone:
            return a
    return None


def _alone():
    """The reference count that :func:`_first_free` sees for an array only its list holds
    (what this interpreter counts in that function: the list, the loop variable, the
    argument), found by running it; None where reference counts cannot tell
    (no ``sys.getrefcount``, or a build without the GIL): then nothing is reused."""
    if not hasattr(sys, "getrefcount") or not getattr(sys, "_is_gil_enabled", lambda: True)():
        return None
    for alone in range(1, 8):
        if _first_free([np.empty(0)], alone) is not None:
            return alone
    return None


_ALONE = _alone()


class _Repeat:
    """An ``all_reduce`` of one array by an MPI reduction whose signature every rank
    knows: what a repeated call needs (:meth:`MPIContext.all_reduce`), and its result
    buffers.

    Result buffers: a repeated call's result is a view of one of (at most) two arrays
    kept here (:func:`_huge_empty`: each is where its memory's views lead, so every view
    of it, and every buffer export, holds a reference to it), handed out again once
    nothing but this object refers to it (its reference count, as
    :mod:`xops.kernels.pool` judges a lease by its life). That is the pool's recycling
    (no page faults for a training loop's repeated call) at a few lookups instead of
    the pool's hand-out and return, which cost 40-50 us per call once a 4 MiB
    collective has evicted the caches (measured in one process after streaming
    24 MiB; this: ~5 us), and in huge pages. Two:
    ``y = all_reduce(x)`` in a loop holds the last result while the next is made. The
    context's ``kept`` (a one-item list) counts the bytes its repeats keep: at most
    ``_SPARE_BYTES``, beyond which results come from the pool."""

    __slots__ = ("dtype", "groups", "kept", "mop", "nbytes", "shape", "sig", "spare", "spin")

    def __init__(self, groups, sig, mop, a, kept):
        self.groups, self.sig, self.mop, self.kept = groups, sig, mop, kept
        self.shape, self.dtype, self.nbytes = a.shape, a.dtype, a.nbytes
        self.spin = _SPIN_S + a.nbytes * 1e-9  # (a payload's wait: see _poll)
        self.spare = []

    def result(self):
        """A writable C-contiguous array for the next result (arbitrary contents): a
        fresh view of a kept buffer (the op layer makes it read-only, not the buffer)."""
        keep = _first_free(self.spare, _ALONE)
        if keep is None:
            if not (_ALONE and len(self.spare) < 2 and self.kept[0] + self.nbytes <= _SPARE_BYTES):
                return _empty(self.shape, self.dtype)
            keep = _huge_empty(self.shape, self.dtype, self.nbytes)
            self.kept[0] += _held(keep)
            self.spare.append(keep)
        return keep.view()


_HUGE = 1 << 21  # a transparent huge page (x86-64, arm64 with 4 KiB pages)


def _held(a):
    """Bytes of memory that the array ``a`` from :func:`_huge_empty` keeps."""
    return a.base.raw.nbytes if isinstance(a.base, _Aligned) else a.nbytes


def _huge_empty(shape, dtype, nbytes):
    """``np.empty(shape, dtype)`` that starts on a 2 MiB boundary when it is that large,
    so that the kernel can back it with transparent huge pages (NumPy asks for them on
    allocations of 4 MiB and more): MPI's reduction into a 4 MiB result measured 8-25%
    faster in huge pages than in 4 KiB ones (TLB misses; a VM's are dearer). Costs up
    to 2 MiB more memory. The array's base is an :class:`_Aligned` (no array), so every
    view of it refers to the array itself, as to one that owns its memory."""
    if nbytes < _HUGE:
        return np.empty(shape, dtype)
    raw = np.empty(nbytes + _HUGE, np.uint8)
    skip = -raw.ctypes.data % _HUGE
    return np.asarray(_Aligned(raw, raw.ctypes.data + skip, shape, dtype))


class _Aligned:
    """Exports ``shape`` x ``dtype`` at ``address`` inside ``raw`` (which it keeps)."""

    __slots__ = ("__array_interface__", "raw")

    def __init__(self, raw, address, shape, dtype):
        self.raw = raw
        self.__array_interface__ = {
            "shape": tuple(shape),
            "typestr": np.dtype(dtype).str,
            "version": 3,
            "data": (address, False),
        }


class MPIContext(Context):
    transport = "mpi"

    def __init__(self, comm=None, num_partitions=1, timeout=None):
        MPI = _mpi()
        self.MPI = MPI
        self.comm = comm if comm is not None else MPI.COMM_WORLD
        size, rank = self.comm.Get_size(), self.comm.Get_rank()
        if num_partitions < 1 or size % num_partitions:
            raise SpecError(
                "distributed",
                "",
                f"num_partitions={num_partitions} must divide the number of ranks {size}",
            )
        super().__init__(
            size // num_partitions,
            num_partitions,
            rank // num_partitions,
            rank % num_partitions,
            timeout,
        )
        self.rank, self.size = rank, size
        self._channels = self.comm.Dup()  # send/recv: tags are channel ids
        self._p2p = self.comm.Dup()  # collective_permute
        self._checkin = self.comm.Dup()  # every collective's check-in, and nothing else
        self._got = np.zeros(size, np.int64)  # the check-in's receive buffer
        self._splits = {}
        self._known = {}  # header -> _Signature: signatures every rank checked in with
        self._digests = {}  # digest -> header, for the signatures in _known
        self._orphans = []  # payloads posted on a dropped signature's communicator
        self._reductions = {}  # all_reduce: (key, body, mode, dtypes) -> (MPI op or None, key)
        self._repeats = {}  # all_reduce of one array by MPI: (key, body, mode, dtype,
        # shape) -> _Repeat
        self._kept = [0]  # bytes of result buffers the _Repeats keep
        self._made = 0  # signatures made known (dropped ones included)
        self._broken = None  # why no collective may run any more (a timeout)
        self._routes = {}
        self._permutes = 0

    # -- waiting ----------------------------------------------------------------------
    def _poll(self, test, op, what, spin=_SPIN_S):
        """Call ``test()`` until it is true; CollectiveTimeout at the deadline (``what``:
        what it waits for, a string or a function that makes one).

        It tests in bursts of ``_BURST`` (MPI makes progress inside Test: a large
        message moves in steps that each side takes there), and between bursts looks at
        the clock and, for the first ``spin`` seconds, yields the core (so a rank that
        shares its core with the one it waits for lets it run); after that it sleeps up
        to 0.2 ms between bursts. That is the shape of MPICH's own blocking wait (it
        yields every 1000 polls). A yield after *every* test (as before) made each test
        a point where the scheduler could hand the core to another process; never
        yielding measured 5x faster than MPICH's blocking ``Allreduce`` in some loaded
        runs and 3x slower in others (both ranks on one core). A timeout leaves an MPI
        operation pending that the other ranks may still match
        later, so it also ends this context's collectives (see :meth:`_run`)."""
        if test():
            return
        start = time.monotonic()
        deadline = start + self.timeout
        pause = 0.0
        burst = range(_BURST)
        while True:
            for _ in burst:
                if test():
                    return
            now = time.monotonic()
            if now > deadline:
                what = what() if callable(what) else what
                self._broken = f"rank {self.rank} timed out in {op} waiting for {what}"
                raise CollectiveTimeout(
                    op,
                    "timeout",
                    f"rank {self.rank} (process "
                    f"{self.process_id}) waited {self.timeout:g} s for "
                    f"{what}: a rank never came — do all ranks call the "
                    f"same collectives with the same replica groups?",
                )
            if now - start < spin:
                os.sched_yield()
            else:
                pause = min(2e-4, pause * 2 or 1e-5)
                time.sleep(pause)

    # -- the check-in -------------------------------------------------------------------
    def _run(self, op, key, groups, arrays, payload=None, nbytes=0):
        """One collective: every rank checks in, then ``payload(comm)`` posts this rank's
        non-blocking payload calls on ``comm`` (a communicator of this rank's group) and
        returns their requests, which are waited for against the deadline. Returns
        (communicator of this rank's group or None when it is in no group, the group).

        The check-in is one non-blocking ``Iallgather`` over all ranks, on a communicator
        of its own, of a digest of (process groups, op attributes, operand types). Any
        difference anywhere makes *every* rank raise the same error (so no rank goes on to
        a call the others never make); a rank that never comes is a timeout.

        The first time a signature is seen, the payload is posted only after the
        check-in has shown that every rank makes the same call. Every rank then knows the
        signature (the ranks' tables of known signatures change identically, since every
        rank sees every digest), and the payloads of a known signature travel on a
        communicator that only that signature uses. A repeated call therefore posts its
        payload *together with* its check-in: one synchronisation instead of two. When
        the check-in agrees, every rank has posted the same payload already, so MPI's
        own wait finishes it (in C: the call is known to complete; polling it from
        Python measured up to 1.4x MPI's blocking call on a loaded machine). It stays
        safe when the ranks disagree only on a later call: payloads of different
        signatures are on different communicators, so MPI never matches one with
        another (no wrong result); the check-in shows the difference to every rank,
        which raise the same error, drop the signatures involved (their communicators,
        where an unmatched payload now waits forever, are never used again) and stay in
        step for the next call."""
        self._usable(op)
        header = self._header(key, groups, arrays)

        def what():
            return f"every rank to reach {op} over process groups {[list(g) for g in groups]}"

        sig = self._known.get(header)
        spin = _SPIN_S + nbytes * 1e-9  # (a payload's wait: see _poll)
        if sig is not None:  # known: payload and check-in at once
            reqs = payload(sig.comm) if payload is not None and sig.comm is not None else ()
            self._finish_known(op, groups, sig, reqs, payload, spin)
            return sig.sub, sig.group
        reqs = ()
        try:
            sub, group, reqs = self._first(op, header, groups, payload, what)
            if reqs:
                Testall = self.MPI.Request.Testall
                test = reqs[0].Test if len(reqs) == 1 else lambda: Testall(reqs)
                self._poll(test, op, lambda: f"the other members of the group to finish {op}", spin)
        except CollectiveTimeout:
            self._orphans.append((reqs, payload))  # pending: keep their buffers alive
            raise
        return sub, group

    def _finish_known(self, op, groups, sig, reqs, keep, spin):
        """The rest of a repeated call of the known signature ``sig`` whose payload
        requests ``reqs`` (on ``sig.comm``) are posted: the check-in, then MPI's wait for
        the payload. ``keep``: what keeps the payload's buffers alive should MPI still
        use them after an error."""
        got = self._got
        try:
            self._poll(
                self._checkin.Iallgather(sig.digest, got).Test,
                op,
                lambda: f"every rank to reach {op} over process groups {[list(g) for g in groups]}",
                spin,
            )
        except CollectiveTimeout:
            self._orphans.append((reqs, keep))  # pending: keep their buffers alive
            raise
        if got.tobytes() != sig.everyone:
            self._orphans.append((reqs, keep))  # (MPI may still use them)
            self._disagreement(op, groups, sig.header, got)
        if reqs:  # every rank posted the same payload before its check-in: it completes,
            # so MPI's own wait (in C, no deadline needed) finishes it
            self.MPI.Request.Waitall(reqs)

    def _first(self, op, header, groups, payload, what):
        """The check-in of a signature this context does not know yet; then the payload."""
        got = self._got
        digest = np.frombuffer(hashlib.sha256(repr(header).encode()).digest()[:8], np.int64)
        self._poll(self._checkin.Iallgather(digest, got).Test, op, what)
        if np.any(got != got[0]):
            self._disagreement(op, groups, header, got)
        sub, group = self._split(header[0], groups)
        own = sub
        if self._made < _KNOWN_MAX:  # (the same decision on every rank)
            self._made += 1
            own = sub.Dup() if sub is not None else None
            self._known[header] = _Signature(digest, header, sub, group, own, self.size)
            self._digests[int(digest[0])] = header
        return sub, group, payload(own) if payload is not None and own is not None else ()

    def _header(self, key, groups, arrays):
        """What every rank checks in with: (process groups as flattened ids, the op's key
        with its attributes, operand types)."""
        return (tuple(tuple(self.flat(p) for p in g) for g in groups), key, types_of(arrays))

    def _usable(self, op):
        if self._broken is not None:
            raise CollectiveError(
                op,
                "process grid",
                f"an earlier collective failed "
                f"({self._broken}): its MPI operation "
                f"is still pending, so the ranks are "
                f"out of step and no collective can "
                f"run safely any more (restart the "
                f"job)",
            )

    def _split(self, gkey, groups):
        """(communicator of this rank's group or None, the group), cached per set of
        groups (``COMM_WORLD.Split``: a training loop splits once)."""
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

    def _disagreement(self, op, groups, header, digests):
        """Every rank saw the same differing ``digests``: forget the known signatures
        among them, then raise the error (the same on every rank)."""
        for d in set(digests.tolist()):
            h = self._digests.pop(d, None)
            sig = self._known.pop(h, None) if h is not None else None
            if sig is not None:
                sig.known = False  # (and out of all_reduce's table of repeats)
        gkey = header[0]
        headers = self.comm.allgather(header)
        for rank, h in enumerate(headers):
            if h[0] != gkey:
                raise CollectiveError(
                    op,
                    "process grid",
                    f"the ranks disagree on the process "
                    f"groups: rank {self.rank} has "
                    f"{[list(g) for g in groups]}, rank "
                    f"{rank} has {[list(g) for g in h[0]]}"
                    f" (flattened ids)",
                )
        for g in groups:  # the first group whose members disagree, seen from every rank
            members = [headers[self.flat(p)][1:] for p in g]
            check_agreement(op, "operand types and attributes", tuple(g), members)
        raise CollectiveError(op, "process grid", "the ranks disagree on the collective")

    def _group_run(self, op, key, groups, arrays, payload, nbytes):
        if not any(self.process_id in g for g in groups):
            self._run(op, key, groups, arrays)  # (check in, so no rank waits for this one)
            raise CollectiveError(
                op, "process grid", f"process {self.process_id} is in no process group of {groups}"
            )
        return self._run(op, key, groups, arrays, payload, nbytes)

    # -- the bulk operations ------------------------------------------------------------
    def exchange(self, op, key, groups, arrays):
        srcs = [_bytes(a) for a in arrays]
        n = len(self.my_group(op, groups)) if any(self.process_id in g for g in groups) else 0
        bufs = [_empty((n * s.size,), np.uint8) for s in srcs]

        def payload(comm):
            return [comm.Iallgather(s, b) for s, b in zip(srcs, bufs)]

        self._group_run(op, key, groups, arrays, payload, sum(b.nbytes for b in bufs))
        return [
            [
                _from_bytes(b[j * s.size : (j + 1) * s.size], a)
                for s, b, a in zip(srcs, bufs, arrays)
            ]
            for j in range(n)
        ]

    def all_gather(self, op, key, groups, arrays):
        return self.exchange(op, key, groups, arrays)

    def all_reduce(self, op, key, groups, arrays, fold, native=None):
        if len(arrays) == 1 and self._broken is None:  # a repeated call: the least work
            a = arrays[0]
            rep = self._repeats.get((key, native, _DETERMINISTIC[0], a.dtype, a.shape))
            if rep is not None and rep.sig.known and (rep.groups is groups or rep.groups == groups):
                a = np.asarray(a, order="C")
                out = rep.result()
                req = rep.sig.comm.Iallreduce(a, out, op=rep.mop)
                self._finish_known(op, groups, rep.sig, (req,), (a, out), rep.spin)
                return [out]
        how = (key, native, _DETERMINISTIC[0], *[a.dtype for a in arrays])
        plan = self._reductions.get(how)
        if plan is None:
            ok = (
                native is not None
                and all(a.dtype in _NATIVE for a in arrays)
                and not (native != "sum" and any(a.dtype.kind == "c" for a in arrays))
                and not (_DETERMINISTIC[0] and any(a.dtype.kind in "fc" for a in arrays))
            )
            mops = {"sum": self.MPI.SUM, "max": self.MPI.MAX, "min": self.MPI.MIN}
            # (the payload's kind is part of the signature: a rank that folds instead,
            # e.g. after set_deterministic on it alone, is a disagreement, not a
            # mismatched call)
            plan = (mops[native], f"{key} by MPI {native}") if ok else (None, key)
            if len(self._reductions) >= 256:
                self._reductions.clear()
            self._reductions[how] = plan
        mop, key = plan
        if mop is None:
            return fold(self.exchange(op, key, groups, arrays))
        srcs = [np.asarray(a, order="C") for a in arrays]
        outs = [_empty(a.shape, a.dtype) for a in srcs]  # (recycled memory: no page faults)

        def payload(comm):
            return [comm.Iallreduce(a, r, op=mop) for a, r in zip(srcs, outs)]

        nbytes = sum(a.nbytes for a in srcs)
        self._group_run(op, key, groups, arrays, payload, nbytes)
        if len(srcs) == 1:  # the signature is known now: the next call takes the path above
            sig = self._known.get(self._header(key, groups, arrays))
            if sig is not None and sig.comm is not None:
                if len(self._repeats) >= 256:
                    self._repeats.clear()
                    self._kept[0] = 0  # (what they kept lives on only where it is used)
                a = srcs[0]
                k = (how[0], native, how[2], a.dtype, a.shape)
                old = self._repeats.get(k)
                if old is not None:  # (its signature was dropped, then checked in again)
                    self._kept[0] -= sum(_held(a) for a in old.spare)
                self._repeats[k] = _Repeat(groups, sig, mop, a, self._kept)
        return outs

    def all_to_all(self, op, key, groups, parts):
        flat = [a for p in parts for a in p]
        n, m = len(parts), len(parts[0])
        sends = [np.concatenate([_bytes(parts[j][i]) for j in range(n)]) for i in range(m)]
        recvs = [_empty(s.shape, np.uint8) for s in sends]

        def payload(comm):
            return [comm.Ialltoall(s, r) for s, r in zip(sends, recvs)]

        self._group_run(op, key, groups, flat, payload, sum(s.nbytes for s in sends))
        out = [[None] * m for _ in range(n)]
        for i in range(m):
            size = sends[i].size // n
            for j in range(n):
                out[j][i] = _from_bytes(recvs[i][j * size : (j + 1) * size], parts[0][i])
        return out

    def broadcast(self, op, key, groups, arrays, root=0):
        bufs = [_bytes(a).copy() for a in arrays]

        def payload(comm):
            return [comm.Ibcast(b, root=root) for b in bufs]

        sub, _ = self._run(op, key, groups, arrays, payload, sum(b.nbytes for b in bufs))
        if sub is None:  # (every rank takes part in the check-in)
            return None
        return [_from_bytes(b, a) for b, a in zip(bufs, arrays)]

    def permute(self, op, key, target, source, arrays):
        self._usable(op)
        self._permutes += 1
        tag = self._permutes % 30000
        header = (key, types_of(arrays))
        req = None
        if target is not None:
            req = self._p2p.isend(
                (header, [np.asarray(a, order="C") for a in arrays]),
                dest=self.flat(target),
                tag=tag,
            )
        got = None
        if source is not None:
            src = self.flat(source)
            self._poll(
                lambda: self._p2p.Iprobe(source=src, tag=tag),
                op,
                f"process {source} (rank {src}) to send its {op} operand",
            )
            h, got = self._p2p.recv(source=src, tag=tag)
            check_agreement(
                op, "operand types and attributes", (self.process_id, source), [header, h]
            )
        if req is not None:
            self._poll(req.Test, op, f"process {target} to receive its {op} operand")
        return got

    # -- channels -----------------------------------------------------------------------
    def connect(self, channel_id, source, target):
        self._routes[int(channel_id)] = (self.flat(source), self.flat(target))

    def _route(self, op, channel_id, sending):
        """(source rank, target rank) of the channel, of which this rank must be the
        source when ``sending``, else the target."""
        r = self._routes.get(int(channel_id))
        if r is None:
            raise SpecError(
                op,
                "channel_id",
                f"channel {channel_id} has no route on rank "
                f"{self.rank}: call xops.distributed.connect("
                f"{channel_id}, source=(r, p), target=(r, p)) on "
                f"every rank first",
            )
        src, dst = r
        if (src if sending else dst) != self.rank:
            raise SpecError(
                op,
                "channel_id",
                f"channel {channel_id} goes from rank {src} to "
                f"rank {dst}; rank {self.rank} cannot {'send' if sending else 'receive'} on it",
            )
        return r

    def send(self, op, channel_id, arrays):
        src, dst = self._route(op, channel_id, sending=True)
        self._channels.send(pickle.dumps(list(arrays), 5), dest=dst, tag=int(channel_id))

    def recv(self, op, channel_id):
        src, dst = self._route(op, channel_id, sending=False)
        self._poll(
            lambda: self._channels.Iprobe(source=src, tag=int(channel_id)),
            op,
            f"a value on channel {channel_id} from rank {src}",
        )
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
    ctx = current()
    if not isinstance(ctx, MPIContext):
        return

    def pid(x):
        return divmod(int(x), ctx.num_partitions) if isinstance(x, (int, np.integer)) else tuple(x)

    ctx.connect(channel_id, pid(source), pid(target))


add_launcher(launched_by_mpi, init)  # current() starts MPI on first use
