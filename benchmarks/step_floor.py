"""Where the digits training step's time goes: the per-op floor (batch 1, where the
kernels cost next to nothing and the step is dispatch, the tape and the gradient rules)
against the full batch, for xops (``xo.nn`` and spec ops) and PyTorch eager, each step
function of ``benchmarks/wl_training.py`` called in a loop.

    python -m benchmarks.step_floor                  # batches 1 and 32, 300 steps each
    python -m benchmarks.step_floor --batches 1 32 64 --steps 500

Medians and minima of the per-step wall times. Each backend runs in its own process, one
after the other (xops' two step styles interleaved round by round in theirs): Numba's and
PyTorch's OpenMP thread pools in one process contend for the 2 cores (each pool's threads
spin after a parallel region), which slowed both, PyTorch's b32 step 30% (4.9 against
3.8 ms; session 23). The host's speed drifts: compare within one run. The batch-1 figure
is the floor the issue 15 step targets run into: a step of about 30 ops and 15-27
gradient rules costs that much whatever the kernels do (see benchmarks/README.md,
session 19).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from . import wl_training as W


def _steps(batch, backend):
    """{name: step function} of ``backend``'s step styles at ``batch`` ("xops": the
    ``xo.nn`` and the spec-op steps; "torch": PyTorch's, empty where it is missing)."""
    params, x, y = W._init(batch)
    if backend == "xops":
        import xops as xo

        return {
            "xops nn": W._xops_step(xo, params, x, y),
            "xops spec": W._xops_spec_step(xo, params, x, y),
        }
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(2)
    return {"torch": W._torch_step(torch, params, x, y)}


def _time(step, n):
    ts = np.empty(n)
    for i in range(n):
        t = time.perf_counter()
        step()
        ts[i] = time.perf_counter() - t
    return ts


def _run_backend(backend, batch, steps, rounds):
    """{name: per-step seconds} of ``backend`` at ``batch``, in this process."""
    fns = _steps(batch, backend)
    for step in fns.values():  # compile and warm up
        for _ in range(20):
            step()
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, step in fns.items():
            times[name].append(_time(step, steps // rounds))
    return {name: np.concatenate(parts).tolist() for name, parts in times.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--backend", choices=["xops", "torch"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.backend:  # (a child: one backend, JSON on stdout)
        out = {b: _run_backend(args.backend, b, args.steps, args.rounds) for b in args.batches}
        print(json.dumps(out))
        return
    results = {}
    for backend in ("xops", "torch"):
        cmd = [sys.executable, "-m", "benchmarks.step_floor", "--backend", backend]
        cmd += ["--batches", *map(str, args.batches), "--steps", str(args.steps)]
        cmd += ["--rounds", str(args.rounds)]
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=root)
        results[backend] = json.loads(done.stdout.strip().splitlines()[-1])
    for batch in args.batches:
        print(f"batch {batch}:")
        for backend in results.values():
            for name, ts in backend[str(batch)].items():
                ts = np.asarray(ts) * 1e3
                print(f"  {name:10s} median {np.median(ts):7.3f} ms   min {ts.min():7.3f} ms")


if __name__ == "__main__":
    main()
