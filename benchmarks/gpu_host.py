"""``python -m benchmarks.gpu_host``: the host side of the GPU training step, without a GPU.

On a GPU the digits training step is host-bound (about 0.3 ms of device time against
several ms of Python: docs/gpu.md, "Host cost per op"). This runs the GPU benchmark's
step (``benchmarks/gpu.py``: the digits CNN, batch 32, forward, backward, Adam) on numba's
CUDA simulator with every kernel launch replaced by a no-op, so what it times is xops's
own host code: dispatch, checks, launch planning, the tape, the layers, the optimizer.
It prints the step's host time (minimum and median over rounds), the launches per step
by kernel, and the host time per step of each op's kernel function.

    python -m benchmarks.gpu_host [--steps 50] [--rounds 7]

What it leaves out: the launches themselves (on an H100 VM 13-38 us each, the driver's
``cuLaunchKernel`` 6-7 us of that) and the device allocations (6-10 us each), which are
numba's simulator code here; and the simulator's own array views cost more than a GPU's.
The launch count is printed so that those costs can be added. Results are garbage (no
kernel runs): only the host path is measured.
"""

import argparse
import collections
import os
import statistics
import time


def time_kernel_functions(registry, spent, calls, prefix=""):
    """Wrap every op's CUDA kernel function so that its host time and calls add up in
    ``spent`` / ``calls`` (keys ``prefix + op name``); returns ``[(op, kernel)]`` to put
    back."""
    wrapped = []
    for f in [d.fn for d in registry._DEFS] + list(registry._CORES.values()):
        impl = getattr(f, "kernels", {}).get("cuda")
        if impl is None:
            continue

        def timed(*a, _impl=impl, _name=prefix + f.op_name, **kw):
            t = time.perf_counter()
            try:
                return _impl(*a, **kw)
            finally:
                spent[_name] += time.perf_counter() - t
                calls[_name] += 1

        wrapped.append((f, impl))
        f.kernels["cuda"] = timed
    return wrapped


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=50, help="steps per round")
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # (before numba is imported)
    import numpy as np
    from numba.cuda.simulator import kernel as simulated

    import xops as xo
    from xops import registry

    from . import gpu

    launches = collections.Counter()

    def launch(self, config):
        name = self.fn.__name__

        def run(*a):
            launches[name] += 1

        return run

    simulated.FakeCUDAKernel.__getitem__ = launch  # every launch a no-op from here on
    step = gpu._train(xo, None, "cuda")["xops"]
    for _ in range(3):
        step()
    launches.clear()
    step()
    counted = dict(launches)
    times = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        times.append((time.perf_counter() - t0) / args.steps)
    spent, calls = collections.Counter(), collections.Counter()
    time_kernel_functions(registry, spent, calls)
    for _ in range(args.steps):
        step()
    n = args.steps
    print(
        f"digits step (batch 32) host time, launches stubbed: min {min(times) * 1e3:.3f} ms, "
        f"median {statistics.median(times) * 1e3:.3f} ms ({args.rounds} rounds of {n} steps)"
    )
    print(f"launches per step: {sum(counted.values())}  " + ", ".join(
        f"{k} {v}" for k, v in sorted(counted.items(), key=lambda kv: -kv[1])
    ))  # fmt: skip
    print(f"in the ops' CUDA kernel functions: {sum(spent.values()) / n * 1e3:.3f} ms per step")
    for name, t in spent.most_common():
        print(f"  {name:26s} {t / n * 1e6:8.1f} us/step  {calls[name] / n:4.1f} calls")
    return np.asarray(times)


if __name__ == "__main__":
    main()
