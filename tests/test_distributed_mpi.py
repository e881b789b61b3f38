"""The MPI transport under ``mpiexec -n 2`` (the mpich wheel's launcher): every collective
against the values of the in-process grid, bad input (an error on every rank, a
timeout, never a hang), and data-parallel training equal to the single-process run.

Each test launches ``mpiexec -n 2 python -m mpi4py ...`` in a subprocess with a timeout
(``-m mpi4py`` turns an uncaught exception into MPI_Abort, so a failing rank cannot
leave the other waiting). Skipped with the reason when mpiexec or mpi4py is missing.
"""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _mpiexec():
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


MPIEXEC = _mpiexec()
try:
    import mpi4py  # noqa: F401
except ImportError:  # pragma: no cover
    MPIEXEC = None
if MPIEXEC is None:
    pytest.skip(
        "MPI tests need mpiexec and mpi4py: pip install 'xops[mpi]'", allow_module_level=True
    )


def mpirun(args, timeout=120, env=None, cwd=None):
    e = dict(
        os.environ,
        NUMBA_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        XOPS_COLLECTIVE_TIMEOUT="30",
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    e.update(env or {})
    return subprocess.run(
        [MPIEXEC, "-n", "2", sys.executable, "-m", "mpi4py", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=e,
        cwd=cwd,
        check=False,
    )


def _script(tmp_path, body):
    """A program for both ranks; ``report(text)`` appends a line to rank<r>.txt (the two
    ranks' stdout would interleave)."""
    path = tmp_path / "prog.py"
    path.write_text(
        "import numpy as np\nimport xops as xo\nimport xops.distributed as d\n"
        "t = xo.tensor\nr = d.rank()\nassert d.world_size() == 2\n"
        f"def report(text):\n"
        f"    with open({str(tmp_path)!r} + f'/rank{{r}}.txt', 'a') as f:\n"
        f"        f.write(str(text) + '\\n')\n" + textwrap.dedent(body)
    )
    return str(path)


def _reports(tmp_path):
    return [
        (tmp_path / f"rank{r}.txt").read_text() if (tmp_path / f"rank{r}.txt").exists() else ""
        for r in (0, 1)
    ]


def test_every_collective_under_mpi(tmp_path):
    prog = _script(
        tmp_path,
        """
        x = t(np.arange(4, dtype=np.float32) + 10 * r)
        eq = np.testing.assert_array_equal
        eq(xo.all_reduce(x, [[0, 1]], computation=xo.add), [10, 12, 14, 16])
        eq(xo.all_reduce(x, computation=xo.maximum), [10, 11, 12, 13])
        eq(xo.all_reduce(t([3, 4]) * (r + 2), computation=lambda a, b: xo.subtract(a, b)),
           [-3, -4])                                   # general body: the spec's fold
        bf = xo.all_reduce(xo.convert(x, "bf16"), computation=xo.add)
        assert bf.type == "bf16[4]"
        eq(xo.all_gather(x, 0, [[1, 0]]), np.r_[np.arange(4) + 10, np.arange(4)])
        eq(xo.all_to_all(t(np.arange(4).reshape(2, 2) + 10 * r), 1, 0, 2),
           [[r], [2 + r], [10 + r], [12 + r]])
        eq(xo.reduce_scatter(x, 0, computation=xo.add), [10, 12] if r == 0 else [14, 16])
        eq(xo.collective_broadcast(x, [[1, 0]]), np.arange(4) + 10)
        eq(xo.collective_permute(x, [[0, 1]]), [0, 0, 0, 0] if r == 0 else np.arange(4))
        eq(xo.cross_replica_sum(t(1.5)), 3.0)
        assert int(xo.replica_id()) == r and int(xo.partition_id()) == 0
        d.connect(5, 0, 1)
        if r == 0:
            xo.send([x, t(7)], xo.after_all(), 5)
        else:
            a, b, tok = xo.recv(xo.after_all(), 5)
            eq(a, np.arange(4)); assert b.type == "i64[]" and int(b) == 7
        g = xo.grad(lambda v: xo.reduce(xo.multiply(v, xo.all_reduce(v, computation=xo.add)),
                                        0.0, [0], xo.add))(x)
        eq(g, xo.all_reduce(x, computation=xo.add) * 2)   # own term + the others' terms
        d.barrier()
        d.init(num_partitions=2)            # the same 2 ranks as 1 replica x 2 partitions
        assert int(xo.partition_id()) == r and int(xo.replica_id()) == 0
        eq(xo.all_to_all(t(np.arange(4).reshape(2, 2) + 10 * r), 1, 0, 2, [[0, 1]], 1),
           [[r], [2 + r], [10 + r], [12 + r]])          # channel_id > 0: cross_partition
        eq(xo.all_reduce(t([r + 1]), [[0, 1]], 1, True, xo.add), [3])   # flattened ids
        report("ok")
    """,
    )
    p = mpirun([prog])
    assert p.returncode == 0, p.stdout + p.stderr
    assert _reports(tmp_path) == ["ok\n", "ok\n"]


def test_bad_input_is_an_error_on_every_rank(tmp_path):
    prog = _script(
        tmp_path,
        """
        try:
            xo.all_reduce(t(np.ones(2 + r)), computation=xo.add)   # shapes differ
        except d.CollectiveError as e:
            report(f"shapes: {e}")
        try:
            xo.all_gather(t(np.ones(2)), 0, [[0, 1]] if r == 0 else [[1, 0]])  # groups differ
        except d.CollectiveError as e:
            report(f"groups: {e}")
        try:
            xo.send(t(1.0), xo.after_all(), 42)
        except xo.SpecError as e:
            report(f"channel: {e}")
        d.barrier()
    """,
    )
    p = mpirun([prog])
    assert p.returncode == 0, p.stdout + p.stderr
    for out in _reports(tmp_path):
        assert (
            "shapes: all_reduce (process grid): the processes of group [(0, 0), (1, 0)] "
            "disagree" in out
        )
        assert "groups: all_gather (process grid): the ranks disagree on the process groups" in out
        assert "channel: send (channel_id): channel 42 has no route" in out


def test_ranks_that_disagree_on_a_repeated_call_all_raise_and_stay_in_step(tmp_path):
    # a repeated signature posts its payload together with the check-in (the fast
    # path); when the ranks then differ, every rank must still raise the labelled error
    # (no hang, no result made of mismatched payloads), and later calls must be right
    prog = _script(
        tmp_path,
        """
        eq = np.testing.assert_array_equal
        a = lambda: xo.all_reduce(t(np.arange(4.0, dtype=np.float32) + r), computation=xo.add)
        b = lambda: xo.all_reduce(t(np.arange(3.0, dtype=np.float32) + r),
                                  computation=xo.maximum)
        for _ in range(2):               # both signatures known on both ranks
            eq(a(), [1, 3, 5, 7]); eq(b(), [1, 2, 3])
        assert len(d.current()._repeats) == 2   # (a and b take all_reduce's repeated path)
        for mine in ((a, b), (b, a), (a, "new"), ("new", a)):
            try:
                f = mine[r]
                f() if f != "new" else xo.all_reduce(t(np.ones(5, np.int32)),
                                                     computation=xo.add)
                report("no error")
            except d.CollectiveError as e:
                report("disagree" if "all_reduce (process grid): the processes of group "
                       "[(0, 0), (1, 0)] disagree" in str(e) else f"wrong error {e}")
            eq(a(), [1, 3, 5, 7]); eq(b(), [1, 2, 3]); eq(a(), [1, 3, 5, 7])
        eq(xo.all_gather(t([r, r]), 0), [0, 0, 1, 1])
        eq(xo.all_gather(t([r, r]), 0), [0, 0, 1, 1])
        try:                              # a known all_gather against a known all_reduce
            a() if r == 0 else xo.all_gather(t([r, r]), 0)
            report("no error")
        except d.CollectiveError as e:
            report("disagree" if "disagree" in str(e) else f"wrong error {e}")
        eq(a(), [1, 3, 5, 7]); eq(xo.all_gather(t([r, r]), 0), [0, 0, 1, 1])
        d.set_deterministic(r == 1)       # a gather-and-fold against an MPI Iallreduce
        try:
            a()
            report("no error")
        except d.CollectiveError as e:
            report("disagree" if "disagree" in str(e) else f"wrong error {e}")
        d.set_deterministic(False)
        eq(a(), [1, 3, 5, 7])
        report("ok")
    """,
    )
    p = mpirun([prog])
    assert p.returncode == 0, p.stdout + p.stderr
    assert _reports(tmp_path) == ["disagree\n" * 6 + "ok\n"] * 2


def test_a_repeated_all_reduce_reuses_a_result_buffer_only_when_nothing_holds_it(tmp_path):
    # a repeated all_reduce of one array writes into one of two buffers of its own
    # (mpi._Repeat), reused once nothing refers to it: results that are held, views of
    # them, buffer exports and a payload MPI may still use are never written over
    prog = _script(
        tmp_path,
        """
        eq = np.testing.assert_array_equal
        x = lambda k: t(np.full(5, k + r, np.float32))
        f = lambda v: xo.all_reduce(v, computation=xo.add)
        held = [f(x(k)) for k in range(6)]              # all held: every one its own
        for k, y in enumerate(held):
            eq(y, np.full(5, 2 * k + 1))
        rep = [v for v in d.current()._repeats.values() if v.shape == (5,)]
        assert len(rep) == 1 and len(rep[0].spare) == 2, rep
        spare = [s.ctypes.data for s in rep[0].spare]
        assert [np.asarray(y).ctypes.data for y in held[1:3]] == spare  # (the first: pool)
        view = np.asarray(held[1])[1:3]                  # a view outlives its tensor
        mv = memoryview(np.asarray(held[2]))             # and a buffer export
        del held, y
        prev = None
        for k in range(10, 16):                          # y = f(x) in a loop
            y = f(x(k))
            eq(y, np.full(5, 2 * k + 1))
            if prev is not None:
                eq(prev, np.full(5, 2 * k - 1))
            prev = y
        eq(view, [3, 3]); eq(np.asarray(mv), np.full(5, 5))
        del view, mv
        y = prev = None
        addrs = {np.asarray(f(x(k))).ctypes.data for k in range(4)}  # dropped at once
        assert addrs == {spare[0]}, (addrs, spare)
        held = f(x(1))
        eq(f(x(2)), np.full(5, 5)); eq(held, np.full(5, 3))
        n = 3 << 19                                      # 6 MiB: kept 2 MiB-aligned
        big = lambda k: t(np.arange(n, dtype=np.float32).reshape(3, -1) + k + r)
        want = lambda k: 2 * np.arange(n, dtype=np.float32).reshape(3, -1) + 2 * k + 1
        ys = [f(big(k)) for k in range(4)]
        for k, y in enumerate(ys):
            eq(y, want(k))
        rep = [v for v in d.current()._repeats.values() if v.shape == (3, n // 3)]
        assert [s.ctypes.data % (1 << 21) for s in rep[0].spare] == [0, 0]
        row = np.asarray(ys[1])[2]                       # a view of a kept buffer
        del ys, y
        for k in range(5, 9):
            eq(f(big(k)), want(k))
        eq(row, want(1)[2])
        g = xo.grad(lambda v: xo.reduce(xo.multiply(v, f(v)), 0.0, [0], xo.add))
        for k in range(3):                               # under the tape too
            eq(g(x(k)), 2 * f(x(k)))
        report("ok")
    """,
    )
    p = mpirun([prog])
    assert p.returncode == 0, p.stdout + p.stderr
    assert _reports(tmp_path) == ["ok\n", "ok\n"]


def test_a_repeated_call_that_a_rank_never_joins_is_a_timeout(tmp_path):
    prog = _script(
        tmp_path,
        """
        import os
        for _ in range(3):                                # known: the repeated path
            xo.all_reduce(t([1.0, 2.0]), computation=xo.add)
        if r == 0:
            try:
                xo.all_reduce(t([1.0, 2.0]), computation=xo.add)
            except d.CollectiveTimeout as e:
                print("timeout:", e, flush=True)
            try:
                xo.all_reduce(t([1.0, 2.0]), computation=xo.add)
            except d.CollectiveError as e:
                print("then:", e, flush=True)
            os._exit(3)
    """,
    )
    p = mpirun([prog], env={"XOPS_COLLECTIVE_TIMEOUT": "2"})
    assert (
        "timeout: all_reduce (timeout): rank 0 (process (0, 0)) waited 2 s for every "
        "rank to reach all_reduce" in p.stdout
    ), p.stdout + p.stderr
    assert "then: all_reduce (process grid): an earlier collective failed" in p.stdout, (
        p.stdout + p.stderr
    )


def test_a_rank_that_never_joins_is_a_timeout_not_a_hang(tmp_path):
    prog = _script(
        tmp_path,
        """
        import os, sys
        if r == 0:
            try:
                xo.all_reduce(t(1.0), computation=xo.add)
            except d.CollectiveTimeout as e:
                print("timeout:", e, flush=True)
            try:      # its check-in is still pending: no later collective may run
                xo.all_gather(t([1.0]), 0)
            except d.CollectiveError as e:
                print("then:", e, flush=True)
            os._exit(3)   # a collective is still pending: leave without MPI_Finalize
    """,
    )
    p = mpirun([prog], env={"XOPS_COLLECTIVE_TIMEOUT": "2"})  # (the default limit: loaded CI)
    assert (
        "timeout: all_reduce (timeout): rank 0 (process (0, 0)) waited 2 s for every "
        "rank to reach all_reduce" in p.stdout
    ), p.stdout + p.stderr
    assert (
        "then: all_gather (process grid): an earlier collective failed (rank 0 timed "
        "out in all_reduce waiting for every rank to reach all_reduce over process "
        "groups [[(0, 0), (1, 0)]]): its MPI operation is still pending" in p.stdout
    ), p.stdout + p.stderr


def test_a_wait_tests_in_bursts_and_keeps_its_deadline(tmp_path):
    # the wait loop under every MPI collective: it returns at the first test that passes
    # (whether that falls inside a burst of tests or at a burst's edge), and a test that
    # never passes is a CollectiveTimeout at the deadline, after which no collective runs
    prog = _script(
        tmp_path,
        """
        import time
        from xops.distributed import mpi
        ctx = d.current()
        calls = []
        def ready_at(n):
            def test():
                calls.append(1)
                return len(calls) >= n
            return test
        for n in (1, 2, mpi._BURST, mpi._BURST + 1, 3 * mpi._BURST + 5):
            calls.clear()
            ctx._poll(ready_at(n), "probe", "nothing")
            report(f"{n}: {len(calls)}")
        ctx.timeout = 0.3
        t0 = time.monotonic()
        try:
            ctx._poll(lambda: False, "probe", lambda: "a test that never passes")
        except d.CollectiveTimeout as e:
            waited = time.monotonic() - t0
            report(f"{0.3 <= waited < 5} {e}")
        try:
            xo.all_gather(t([1.0]), 0)
        except d.CollectiveError as e:
            report("an earlier collective failed" in str(e))
    """,
    )
    p = mpirun([prog])
    assert p.returncode == 0, p.stdout + p.stderr
    b = 64
    counts = "".join(f"{n}: {n}\n" for n in (1, 2, b, b + 1, 3 * b + 5))
    assert _reports(tmp_path) == [
        counts + f"True probe (timeout): rank {r} (process ({r}, 0)) waited 0.3 s for a test "
        "that never passes: a rank never came — do all ranks call the same collectives "
        "with the same replica groups?\nTrue\n"
        for r in (0, 1)
    ]


def test_data_parallel_training_matches_one_process(tmp_path):
    from xops import nn
    from xops.examples import train_digits

    w1, w2 = tmp_path / "w1.npz", tmp_path / "w2.npz"
    args = ["--seed", "0", "--epochs", "1", "--limit", "300", "--no-progress"]
    one = train_digits.train(
        epochs=1, seed=0, limit=300, progress=False, save=str(w1), log=lambda *a: None
    )
    p = mpirun(["-m", "xops.examples.train_digits", *args, "--save", str(w2)], timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("test accuracy") == 2  # rank 0 prints (epoch + final line)
    assert f"test accuracy {100 * one['accuracy']:.2f}%" in p.stdout
    a, b = nn.load(w1), nn.load(w2)
    assert list(a) == list(b)
    for k in a:
        np.testing.assert_allclose(
            np.asarray(b[k], np.float64),
            np.asarray(a[k], np.float64),
            rtol=1e-3,
            atol=1e-5,
            err_msg=k,
        )
