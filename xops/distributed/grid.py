"""The in-process process grid: ``run_parallel(fn, args)`` runs ``fn`` once per process of
a ``num_replicas x num_partitions`` grid, one Python thread each.

Every collective is a rendezvous: the members of a process group deposit their values in
a slot keyed by (group, the member's count of collectives over that group), wait until
every member has deposited, and read them all. The wait has a deadline: a process that
never comes (a different replica group, a missing call, a failed thread) makes the
others raise :class:`CollectiveTimeout` naming who arrived, who did not and where the
missing ones are waiting — never a hang. When one process raises, the others stop
waiting at once and ``run_parallel`` re-raises the first error.

Channels (``send``/``recv``) are grid-wide FIFO queues keyed by channel id; host
transfers go through the same queues (the host relays them), as the StableHLO
interpreter does. Threads share the GIL, so the grid is for semantics, tests, teaching
and the StableHLO runner, not for speed: MPI is the transport that scales.
"""

import collections
import threading
import time

from ..errors import SpecError
from .context import (
    CollectiveError,
    CollectiveTimeout,
    Context,
    check_agreement,
    default_timeout,
    set_thread_context,
    types_of,
)

__all__ = ["GridProcess", "run_parallel"]


class _Grid:
    def __init__(self, num_replicas, num_partitions, timeout):
        self.num_replicas, self.num_partitions = num_replicas, num_partitions
        self.timeout = timeout
        self.cond = threading.Condition()
        self.slots = {}
        self.channels = collections.defaultdict(collections.deque)
        self.waiting = {}  # pid -> what it waits for (for timeout messages)
        self.in_slot = {}  # pid -> (slot key, its group, what) of the rendezvous it waits in
        self.failed = None  # (pid, exception) of the first process that raised
        self.finished = set()
        self.host_infeed = None  # one shared host queue (StableHLO interpreter style)

    def abort(self, pid, exc):
        with self.cond:
            if self.failed is None:
                self.failed = (pid, exc)
            self.cond.notify_all()

    def done(self, pid):
        with self.cond:
            self.finished.add(pid)
            self.cond.notify_all()

    def _wait(self, pid, op, what, ready, missing):
        """Wait (holding ``cond``) until ``ready()``; raise on a failure elsewhere or at
        the deadline. ``missing()`` lists the processes still awaited."""
        deadline = time.monotonic() + self.timeout
        self.waiting[pid] = what
        try:
            while not ready():
                if self.failed is not None and self.failed[0] != pid:
                    fpid, exc = self.failed
                    raise CollectiveError(
                        op,
                        "process grid",
                        f"process {pid} stopped waiting for "
                        f"{what}: process {fpid} failed with "
                        f"{type(exc).__name__}: {exc}",
                    )
                self._deadlock(pid, op, what, missing())
                gone = [q for q in missing() if q in self.finished]
                left = deadline - time.monotonic()
                if gone or left <= 0:
                    raise CollectiveTimeout(
                        op, "timeout", self._timeout_message(pid, what, missing(), gone)
                    )
                self.cond.wait(left)
        finally:
            self.waiting.pop(pid, None)

    def _timeout_message(self, pid, what, missing, gone):
        if gone:
            head = (
                f"process {pid} waits for {what}, but process"
                f"{'es' if len(gone) > 1 else ''} {', '.join(map(str, gone))} "
                f"finished without joining it"
            )
        else:
            head = f"process {pid} waited {self.timeout:g} s for {what}"
        where = "; ".join(
            f"{q} is waiting for {self.waiting[q]}" if q in self.waiting else f"{q} never arrived"
            for q in missing
            if q not in gone
        )
        return (
            head
            + (f" ({where})" if where else "")
            + " — do all processes call the same collectives with the same replica groups?"
        )

    def _deadlock(self, pid, op, what, missing):
        """Raise when a process this one waits for waits, in another rendezvous, for this
        one: a cycle that no arrival can break (different replica groups, or collectives
        called in different orders)."""
        mine = self.in_slot.get(pid)
        for q in missing:
            theirs = self.in_slot.get(q)
            if theirs is None or mine is None or theirs[0] == mine[0]:
                continue
            slot = self.slots.get(theirs[0])
            if pid in theirs[1] and slot is not None and pid not in slot["data"]:
                raise CollectiveError(
                    op,
                    "process grid",
                    f"process {pid} waits for {what} "
                    f"while process {q} waits for "
                    f"{theirs[2]}: the processes "
                    f"disagree on the replica groups "
                    f"or on the order of collectives",
                )

    def exchange(self, pid, op, key, group, payload, seq):
        slot_key = (group, seq)
        what = f"{op} #{seq} over group {list(group)}"
        with self.cond:
            slot = self.slots.setdefault(slot_key, {"data": {}, "left": len(group)})
            slot["data"][pid] = payload
            self.cond.notify_all()
            data = slot["data"]
            self.in_slot[pid] = (slot_key, group, what)
            try:
                self._wait(
                    pid,
                    op,
                    what,
                    lambda: len(data) == len(group),
                    lambda: [q for q in group if q not in data],
                )
            finally:
                self.in_slot.pop(pid, None)
            out = [data[q] for q in group]
            slot["left"] -= 1
            if slot["left"] == 0:
                del self.slots[slot_key]
        return out

    def send(self, channel_id, payload):
        with self.cond:
            self.channels[channel_id].append(payload)
            self.cond.notify_all()

    def recv(self, pid, op, channel_id):
        with self.cond:
            q = self.channels[channel_id]
            others = [
                (r, p)
                for r in range(self.num_replicas)
                for p in range(self.num_partitions)
                if (r, p) != pid
            ]
            self._wait(
                pid,
                op,
                f"a value on channel {channel_id}",
                lambda: bool(q),
                lambda: [o for o in others if o not in self.finished] or others,
            )
            return q.popleft()


class GridProcess(Context):
    """One process (thread) of the in-process grid."""

    transport = "grid"

    def __init__(self, grid, replica_id, partition_id):
        super().__init__(
            grid.num_replicas, grid.num_partitions, replica_id, partition_id, grid.timeout
        )
        self._grid = grid
        self._seq = collections.Counter()

    def exchange(self, op, key, groups, arrays):
        group = self.my_group(op, groups)
        self._seq[group] += 1
        header = (key, types_of(arrays))
        got = self._grid.exchange(
            self.process_id, op, key, group, (header, list(arrays)), self._seq[group]
        )
        check_agreement(op, "operand types and attributes", group, [h for h, _ in got])
        return [a for _, a in got]

    def permute(self, op, key, target, source, arrays):
        # a rendezvous over the pair sets would serialise chains; a channel per
        # (op count, sender) keeps it point to point
        self._seq[("permute",)] += 1
        n = self._seq[("permute",)]
        if target is not None:
            self._grid.send(
                ("permute", n, self.process_id, target), ((key, types_of(arrays)), list(arrays))
            )
        if source is None:
            return None
        header, got = self._grid.recv(self.process_id, op, ("permute", n, source, self.process_id))
        mine = (key, types_of(arrays))
        check_agreement(
            op, "operand types and attributes", (self.process_id, source), [mine, header]
        )
        return got

    def send(self, op, channel_id, arrays):
        self._grid.send(channel_id, list(arrays))

    def recv(self, op, channel_id):
        return self._grid.recv(self.process_id, op, channel_id)

    def pop_infeed(self, op):
        if self.infeed:
            return self.infeed.popleft()
        shared = self._grid.host_infeed
        with self._grid.cond:
            if shared:
                return shared.popleft()
        raise CollectiveError(
            op,
            "infeed queue",
            f"the infeed queue of process "
            f"{self.process_id} is empty (fill it with "
            f"run_parallel(..., infeed=...))",
        )


def run_parallel(
    fn,
    args=None,
    *,
    num_replicas=None,
    num_partitions=None,
    timeout=None,
    infeed=None,
    outfeed=None,
):
    """Run ``fn`` once per process of an in-process StableHLO process grid, one thread
    each, and return the results as a ``num_replicas x num_partitions`` nested list.

    ``fn`` is one callable for every process (SPMD) or a nested list of callables (one
    per process, MPMD, as the interpreter's ``programs``). ``args[r][p]`` is the tuple of
    positional arguments of process ``(r, p)`` (``args`` may be left out: no arguments;
    a flat list means one partition per replica). Inside ``fn``, collective ops
    (``xo.all_reduce``, ...) and ``xo.replica_id()`` / ``xo.partition_id()`` see the
    calling process.

    ``timeout``: seconds any collective waits for the other processes (default
    :func:`xops.distributed.default_timeout`). ``infeed``: a dict ``{(r, p): [values,
    ...]}`` of per-process host queues, or a list (one host queue all processes pop
    from); each value is what one ``xo.infeed`` returns (a tensor or a tuple of them).
    ``outfeed``: a dict that receives ``{(r, p): [values, ...]}``, what each process wrote
    with ``xo.outfeed``.

    >>> run_parallel(lambda x: xo.all_reduce(x, [[0, 1]], computation=xo.add),
    ...              [[xo.tensor([1, 2])], [xo.tensor([3, 4])]])
    [[xo.tensor([4, 6], i64[2])], [xo.tensor([4, 6], i64[2])]]
    """
    fns = fn if isinstance(fn, (list, tuple)) else None
    if args is None:
        if fns is None:
            r = num_replicas or 1
            p = num_partitions or 1
            args = [[() for _ in range(p)] for _ in range(r)]
        else:
            args = [[() for _ in row] for row in fns]
    args = [
        list(row)
        if isinstance(row, (list, tuple)) and row and all(isinstance(c, (list, tuple)) for c in row)
        else [row]
        for row in args
    ]
    rows = len(args)
    cols = len(args[0]) if rows else 0
    if rows == 0 or cols == 0 or any(len(row) != cols for row in args):
        raise SpecError(
            "run_parallel",
            "",
            f"args must be a non-empty num_replicas x "
            f"num_partitions grid, got row lengths "
            f"{[len(row) for row in args]}",
        )
    if (num_replicas is not None and num_replicas != rows) or (
        num_partitions is not None and num_partitions != cols
    ):
        raise SpecError(
            "run_parallel",
            "",
            f"args form a {rows}x{cols} grid but "
            f"num_replicas={num_replicas}, "
            f"num_partitions={num_partitions}",
        )
    if fns is not None:
        fns = [list(row) for row in fns]
        if len(fns) != rows or any(len(row) != cols for row in fns):
            raise SpecError(
                "run_parallel", "", f"fn must be one callable or a {rows}x{cols} grid of callables"
            )
    grid = _Grid(rows, cols, default_timeout() if timeout is None else float(timeout))
    procs = [[GridProcess(grid, r, p) for p in range(cols)] for r in range(rows)]
    if isinstance(infeed, dict):
        for (r, p), values in infeed.items():
            procs[r][p].infeed.extend(values)
    elif infeed is not None:
        grid.host_infeed = collections.deque(infeed)
    results = [[None] * cols for _ in range(rows)]
    errors = []

    def body(r, p):
        ctx = procs[r][p]
        set_thread_context(ctx)
        try:
            f = fns[r][p] if fns is not None else fn
            a = args[r][p]
            results[r][p] = f(*(a if isinstance(a, (list, tuple)) else (a,)))
        except BaseException as e:  # noqa: BLE001  (re-raised in the caller's thread)
            errors.append((time.monotonic(), (r, p), e))
            grid.abort((r, p), e)
        finally:
            grid.done((r, p))
            set_thread_context(None)

    threads = [
        threading.Thread(target=body, args=(r, p), name=f"xops-process-{r}-{p}", daemon=True)
        for r in range(rows)
        for p in range(cols)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if outfeed is not None:
        for r in range(rows):
            for p in range(cols):
                outfeed[(r, p)] = list(procs[r][p].outfeed)
    if errors:
        # the first error in time is the cause; the others are its consequences
        errors.sort(
            key=lambda e: (
                isinstance(e[2], CollectiveError) and "stopped waiting" in str(e[2]),
                e[0],
            )
        )
        raise errors[0][2]
    return results
