"""Distributed workloads.

Registered with the harness (one process): ``all_reduce_1M_grid2``, an ``xo.all_reduce``
of 1M f32 on the in-process grid of 2 replicas (two threads and a rendezvous) against
NumPy's ``a + b``: the cost of the grid's machinery.

The MPI figures need two processes, so they run on their own::

    python -m benchmarks.wl_distributed            # launches mpiexec -n 2 itself

* ``all_reduce`` of 1M f32 across 2 ranks (``xo.all_reduce`` with ``xo.add``: check-in
  + ``Iallreduce``, overlapped on repeated calls) against raw mpi4py reading the same
  buffer (the tensor's memory) into a fixed result buffer: the blocking ``Allreduce`` and
  ``Iallreduce`` tested in a loop; and the blocking ``Allreduce`` into a result buffer
  that starts on a 2 MiB boundary (transparent huge pages, as xops' repeated calls
  write into: the like-for-like baseline). Blocks of 5 calls of one variant (4 timed: a
  training loop's repeated call), the variants in a shuffled order, 120 rounds: median
  (and min) of 480 calls each, the slower rank's time per call;
* one data-parallel training step of the digits CNN (global batch 32, 16 per rank:
  forward, backward with synchronised batch norm and one gradient ``all_reduce``, Adam)
  beside the same step in one process on the whole batch of 32.
"""

import os
import statistics
import subprocess
import sys
import time

import numpy as np

from .workloads import dim, gbs, workload

N = 1 << 20


@workload(
    "all_reduce_1M_grid2",
    "all_reduce add of (1048576,) f32 on the in-process grid of 2 replicas (threads), NumPy: a + b",
    derived=gbs(3 * 4 * N),
)
def _grid(be):
    xo = be["xops"]
    from xops.distributed import run_parallel

    rng = np.random.default_rng(0)
    n = dim(N, 64)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    ta, tb = xo.tensor(a), xo.tensor(b)

    def grid():
        return run_parallel(lambda x: xo.all_reduce(x, computation=xo.add), [[ta], [tb]])[0][0]

    return {"numpy": lambda: a + b, "xops": grid}


def _median_ms(times):
    return 1e3 * statistics.median(times)


def _rank_part(rounds):
    """Runs in each MPI rank; rank 0 prints the table rows."""
    from mpi4py import MPI

    import xops as xo
    import xops.distributed as dist

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    tx = xo.tensor(np.random.default_rng(rank).standard_normal(N, dtype=np.float32))
    x = np.asarray(tx)  # the tensor's own memory: both sides read the same buffer
    out = np.empty_like(x)
    raw = np.empty(x.nbytes + (1 << 21), np.uint8)  # (NumPy asks for huge pages)
    skip = -raw.ctypes.data % (1 << 21)
    huge = raw[skip : skip + x.nbytes].view(x.dtype)
    ref = xo.all_reduce(tx, computation=xo.add)  # warm: the split, the check-in
    comm.Allreduce(x, out, op=MPI.SUM)
    assert np.array_equal(np.asarray(ref), out)

    def blocking():
        comm.Allreduce(x, out, op=MPI.SUM)

    def blocking_huge():
        comm.Allreduce(x, huge, op=MPI.SUM)

    def polled():  # the non-blocking form, tested in a loop
        req = comm.Iallreduce(x, out, op=MPI.SUM)
        while not req.Test():
            pass

    def ours():
        xo.all_reduce(tx, computation=xo.add)

    fns = {"raw": blocking, "polled": polled, "xops": ours, "huge": blocking_huge}
    times = {k: [] for k in fns}
    order = np.random.default_rng(0)  # the same shuffled order on both ranks
    for _ in range(rounds):  # a block of 5 calls per variant; the first is not timed
        for k in order.permutation(list(fns)):
            for j in range(5):
                comm.Barrier()
                t0 = time.perf_counter()
                fns[k]()
                dt = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
                if j:
                    times[k].append(dt)
    ours_t = times["xops"]
    step_dp = _train_steps(xo, dist, rounds=10)
    if rank == 0:
        o, omin = _median_ms(ours_t), 1e3 * min(ours_t)
        for k, what in (
            ("raw", "Allreduce"),
            ("polled", "Iallreduce + Test loop"),
            ("huge", "Allreduce into huge pages"),
        ):
            r, rmin = _median_ms(times[k]), 1e3 * min(times[k])
            print(
                f"| all_reduce 1M f32, 2 ranks (median; min) | mpi4py {what} {r:.3f} ms; "
                f"{rmin:.3f} ms | xo.all_reduce {o:.3f} ms; {omin:.3f} ms | {o / r:.2f}x; "
                f"{omin / rmin:.2f}x |"
            )
        print(f"| digits CNN step, batch 32 | 2 ranks (16 each): {step_dp:.2f} ms |", flush=True)


def _train_steps(xo, dist, rounds):
    """Median ms of one training step (global batch 32) under the current context."""
    from xops import optim
    from xops.examples import train_digits

    F = xo.nn.functional
    x_train, y_train, _, _ = train_digits.load_data()
    xo.random_seed(0)
    net = dist.DataParallel(train_digits.build_model())
    opt = optim.Adam(net.parameters(), lr=0.01)
    times = []
    for i in range(rounds + 2):
        idx = np.arange(32 * i, 32 * (i + 1)) % len(x_train)
        dist.barrier()
        t0 = time.perf_counter()
        xb, yb = net.shard(x_train[idx]), net.shard(y_train[idx])
        loss = net.mean(F.softmax_cross_entropy(net(xb), yb, reduction="none"))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i >= 2:  # two warm-up steps (kernel compilation, the splits)
            times.append(time.perf_counter() - t0)
    return _median_ms(times)


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    rounds = 120
    if args and args[0] == "--rank-part":
        _rank_part(int(args[1]) if len(args) > 1 else rounds)
        return 0
    if args and args[0] == "--single":
        import xops as xo
        import xops.distributed as dist

        single = _train_steps(xo, dist, rounds=max(5, rounds // 4))
        print(f"| digits CNN step, batch 32 | 1 process: {single:.2f} ms |", flush=True)
        return 0
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    # one Numba/BLAS thread per process in both runs (2 ranks x 1 thread on 2 cores)
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    print("| workload | baseline | xops | ratio |\n|---|---|---|---|", flush=True)
    me = [sys.executable, "-m", "benchmarks.wl_distributed"]
    p = subprocess.run([*me, "--single"], env=env, timeout=600, check=False)
    q = subprocess.run(
        [
            mpiexec,
            "-n",
            "2",
            sys.executable,
            "-m",
            "mpi4py",
            "-m",
            "benchmarks.wl_distributed",
            "--rank-part",
        ],
        env=env,
        timeout=600,
        check=False,
    )
    return p.returncode or q.returncode


if __name__ == "__main__":
    sys.exit(main())
