"""Where the digits training step's time goes: the per-op floor (batch 1, where the
kernels cost next to nothing and the step is dispatch, the tape and the gradient rules)
against the full batch, for xops (``xo.nn`` and spec ops) and PyTorch eager, each step
function of ``benchmarks/wl_training.py`` called in a loop.

    python -m benchmarks.step_floor                  # batches 1 and 32, 300 steps each
    python -m benchmarks.step_floor --batches 1 32 64 --steps 500

Medians and minima of the per-step wall times, the backends interleaved round by round
(the host's speed drifts: compare within one run). The batch-1 figure is the floor the
issue 15 step targets run into: a step of about 30 ops and 15-27 gradient rules costs
that much whatever the kernels do (see benchmarks/README.md, session 19).
"""

import argparse
import time

import numpy as np

from . import wl_training as W


def _steps(batch):
    """{name: step function} of the step styles at ``batch`` (PyTorch's where it is
    installed)."""
    import xops as xo

    params, x, y = W._init(batch)
    steps = {
        "xops nn": W._xops_step(xo, params, x, y),
        "xops spec": W._xops_spec_step(xo, params, x, y),
    }
    try:
        import torch
    except ImportError:
        return steps
    torch.set_num_threads(2)
    steps["torch"] = W._torch_step(torch, params, x, y)
    return steps


def _time(step, n):
    ts = np.empty(n)
    for i in range(n):
        t = time.perf_counter()
        step()
        ts[i] = time.perf_counter() - t
    return ts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    for batch in args.batches:
        steps = _steps(batch)
        for step in steps.values():  # compile and warm up
            for _ in range(20):
                step()
        times = {name: [] for name in steps}
        for _ in range(args.rounds):
            for name, step in steps.items():
                times[name].append(_time(step, args.steps // args.rounds))
        print(f"batch {batch}:")
        for name, parts in times.items():
            ts = np.concatenate(parts) * 1e3
            print(f"  {name:10s} median {np.median(ts):7.3f} ms   min {ts.min():7.3f} ms")


if __name__ == "__main__":
    main()
