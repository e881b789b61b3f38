"""``python -m benchmarks.gpu_diag``: where the digits training step's time goes on a GPU.

The GPU benchmark (``benchmarks/gpu.py``) times the step against PyTorch; this says why it
takes what it takes (issue 17: the step is host-bound). On a real GPU, unprofiled:

* the step's wall time per step, xops and PyTorch interleaved (rounds of ``--steps``
  steps between device syncs), and its host-only enqueue time (no sync inside);
* every launch of xops's fast launch path during the step, per kernel: count per step and
  host time each (the fast path's own Python, cuda.core's ``launch`` and the driver);
* the device allocations per step and their host time;
* the host time of each op's CUDA kernel function per step (launches and allocations
  included);
* with ``--micro``, the launch path in a loop of one kernel: xops's fast launch,
  cuda.core's ``launch`` with ready parameters, ``cuLaunchKernel`` through cuda.bindings
  with a prepacked parameter buffer, numba's own launch, and PyTorch's 1K add.

    python -m benchmarks.gpu_diag [--steps 100] [--rounds 7] [--micro]

It needs a GPU with numba-cuda (and PyTorch CUDA for the PyTorch lines); without one it
exits with one line saying why. ``python -m benchmarks.gpu_host`` measures the host code
without a GPU (launches stubbed on the simulator).
"""

import argparse
import collections
import ctypes
import statistics
import struct
import sys
import time

import numpy as np


def _per_call(fn, sync, n):
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t = (time.perf_counter() - t0) / n
    sync()
    return t


def _micro(S, cuda, torch, sync):
    """The launch path in a loop of one kernel (us per launch)."""

    def add_one(out, n, x):
        i = cuda.grid(1)
        if i < n:
            out[i] = x[i] + 1.0

    k = S.jit(add_one)
    a, b = (S.device_empty((1024,), np.dtype(np.float32)) for _ in range(2))
    k[4, 256](a, 1024, b)
    k[4, 256](a, 1024, b)  # (the second launch makes the fast path's plan)
    sync()
    n = 20000
    rows = [("xops fast launch", lambda: k[4, 256](a, 1024, b))]
    rows.append(("numba's own launch", lambda: k.dispatcher[4, 256](a, 1024, b)))
    plan = next(iter(k._plans.values()), None)
    if plan:
        cu_kernel, convs = plan
        params = []
        for conv, v in zip(convs, (a, 1024, b)):
            conv(v, params)
        config, stream = S._launch_config(4, 256), S._default_stream()
        rows.append(
            (
                "cuda.core launch, parameters ready",
                lambda: S._core.launch(stream, config, cu_kernel, *params),
            )
        )
        try:
            from cuda.bindings import driver

            values = [int(getattr(p, "value", p)) for p in params]
            buf = ctypes.create_string_buffer(8 * len(values))
            base = ctypes.addressof(buf)
            ptrs = (ctypes.c_void_p * len(values))(*[base + 8 * i for i in range(len(values))])
            handle = getattr(cu_kernel, "handle", None) or cu_kernel._handle
            f, s0, fmt = driver.CUfunction(int(handle)), driver.CUstream(0), f"{len(values)}q"

            def packed():
                struct.pack_into(fmt, buf, 0, *values)
                driver.cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, s0, ctypes.addressof(ptrs), 0)

            rows.append(("cuLaunchKernel, prepacked buffer", packed))
        except Exception as e:  # (cuda.bindings missing or changed)
            print(f"  (no cuda.bindings launch: {type(e).__name__}: {e})")
    rows.append(("device_empty 1K f32", lambda: S.device_empty((1024,), np.dtype(np.float32))))
    if torch is not None:
        t = torch.ones(1024, device="cuda")
        rows.append(("torch add 1K", lambda: torch.add(t, t)))
        rows.append(("torch empty 1K", lambda: torch.empty(1024, device="cuda")))
    print("launch path, in a loop of one kernel:")
    for name, fn in rows:
        print(f"  {name:36s} {_per_call(fn, sync, n) * 1e6:7.2f} us")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--micro", action="store_true", help="also the launch path in a loop")
    args = p.parse_args(argv)
    try:
        from numba import config, cuda

        ok = not config.ENABLE_CUDASIM and cuda.is_available()
        why = "the CUDA simulator is on" if config.ENABLE_CUDASIM else "no CUDA GPU"
    except Exception as e:  # (no numba-cuda)
        ok, why = False, f"{type(e).__name__}: {e}"
    if not ok:
        print(f"gpu_diag: needs a real GPU: {why}")
        return 2
    try:
        import torch

        torch = torch if torch.cuda.is_available() else None
    except ImportError:
        torch = None
    import xops as xo
    from xops.kernels.cuda import _storage as S

    from . import gpu

    xo.tensor([1.0], device="cuda")  # (the context, with xops's caching allocator)
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False

    def sync():
        cuda.synchronize()
        if torch is not None:
            torch.cuda.synchronize()

    if args.micro:
        _micro(S, cuda, torch, sync)
    fns = gpu._train(xo, torch, "cuda")
    steps = {"xops": fns["xops"]}
    if "torch" in fns:
        steps["torch"] = fns["torch"]
    for _ in range(20):
        for fn in steps.values():
            fn()
    sync()
    walls = collections.defaultdict(list)
    hosts = collections.defaultdict(list)
    for _ in range(args.rounds):
        for name, fn in steps.items():
            walls[name].append(_per_call(fn, sync, args.steps))
            sync()
            t0 = time.perf_counter()
            for _ in range(30):
                fn()
            hosts[name].append((time.perf_counter() - t0) / 30)
            sync()
    for name in steps:
        w, h = walls[name], hosts[name]
        med_w, med_h = statistics.median(w) * 1e3, statistics.median(h) * 1e3
        print(
            f"{name:5s} step wall: min {min(w) * 1e3:.3f} ms, median {med_w:.3f} ms; "
            f"host-only enqueue median {med_h:.3f} ms"
        )
    if "torch" in steps:
        ratio = statistics.median(walls["xops"]) / statistics.median(walls["torch"])
        print(f"xops / torch (medians): {ratio:.2f}")
    # the step's launches, allocations and kernel functions, one wrapped run
    spent, count, kinds = collections.Counter(), collections.Counter(), {}
    plain_call = S._Launch.__call__

    def launch(self, *a):
        t0 = time.perf_counter()
        try:
            return plain_call(self, *a)
        finally:
            name = self.kernel.dispatcher.py_func.__name__
            spent["launch " + name] += time.perf_counter() - t0
            count["launch " + name] += 1
            try:
                fast = bool(self.kernel._plans.get(tuple(map(S._signature, a))))
            except Exception:
                fast = False
            kinds[name] = "fast" if fast else "numba"

    empty = S._state["empty"]

    def allocate(shape, dt):
        t0 = time.perf_counter()
        try:
            return empty(shape, dt)
        finally:
            spent["alloc"] += time.perf_counter() - t0
            count["alloc"] += 1

    from xops import registry

    from .gpu_host import time_kernel_functions

    wrapped = time_kernel_functions(registry, spent, count, prefix="op ")
    S._Launch.__call__, S._state["empty"] = launch, allocate
    n = args.steps
    try:
        w = _per_call(steps["xops"], sync, n)
    finally:
        S._Launch.__call__, S._state["empty"] = plain_call, empty
        for f, impl in wrapped:
            f.kernels["cuda"] = impl
    launches = {k: v for k, v in count.items() if k.startswith("launch ")}
    total = sum(launches.values()) / n
    each = sum(spent[k] for k in launches) / max(sum(launches.values()), 1)
    alloc = spent["alloc"] / max(count["alloc"], 1)
    print(
        f"wrapped step {w * 1e3:.3f} ms: {total:.0f} launches per step, {each * 1e6:.1f} us "
        f"each; {count['alloc'] / n:.0f} allocations, {alloc * 1e6:.1f} us each"
    )
    for k, v in sorted(spent.items(), key=lambda kv: -kv[1]):
        if k == "alloc":
            continue
        extra = f" ({kinds[k[7:]]})" if k.startswith("launch ") else ""
        print(f"  {k:34s} {v / n * 1e6:8.1f} us/step {count[k] / n:5.1f} calls "
              f"{v / count[k] * 1e6:7.1f} us each{extra}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
