"""Rows measured on whole processes rather than on interleaved calls (issue 15).

* ``cold_start``: the README's main job, ``python -m xops.examples.train_digits``, in a
  fresh process with an empty Numba cache (``NUMBA_CACHE_DIR`` pointed at a new
  directory: every kernel compiles), then again with that cache (warm): wall seconds of
  each (targets: <= 8 s cold, <= 3 s warm on 2 cores). ``--quick`` trains 1 epoch.
* ``peak_rss``: one process per backend (xops, torch, jax eager) running 100 steps of the
  digits-size CNN (``benchmarks/wl_training.py``, batch 32, xops in ``xo.nn``), reporting
  its peak resident set (``VmHWM``: see :func:`_peak_mb` for why not ``ru_maxrss``;
  target: xops <= torch); and xops over 1,000 steps
  with its resident set sampled every 10 steps: the least-squares slope after the first
  100 steps, in MB per 100 steps (flat: no leak). The 1,000-step run goes first, so the
  100-step xops process finds its kernels in the cache (compiling would add LLVM's
  memory to the peak). ``--quick``: 20 and 200 steps.

Each row's figures go into the run's results as ``{"kind": "process", "unit": ...,
"backends": {name: {"median": value}}}`` so benchmarks/targets.py reads them like the rest.

    python -m benchmarks --only cold_start          # the row alone (also: peak_rss)
    python -m benchmarks.process_rows --rss xops --steps 100   # one child, JSON out
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROWS = ("cold_start", "peak_rss")
MAIN_JOB = ["-m", "xops.examples.train_digits", "--no-progress"]


def _wall(args, env):
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode:
        raise RuntimeError(f"{' '.join(args)} failed:\n{out.stderr[-2000:]}")
    return wall, out.stdout


def cold_start(quick=False):
    args = MAIN_JOB + (["--epochs", "1"] if quick else [])
    with tempfile.TemporaryDirectory(prefix="xops-numba-cache-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        cold, _ = _wall(args, env)
        warm, stdout = _wall(args, env)
    last = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    print(
        f"== cold_start  [python {' '.join(args)}; empty NUMBA_CACHE_DIR, then the same cache]\n"
        f"   cold {cold:.1f} s   warm {warm:.1f} s   ({last})\n",
        flush=True,
    )
    return {"xops_cold": cold, "xops_warm": warm}, "s"


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb():
    """The process's peak resident set: ``VmHWM`` of /proc/self/status. (Linux's
    ``ru_maxrss`` carries the launcher's resident set over fork + exec -- the parent's
    mm high-water mark is folded into the child's at exec -- so a child started from a
    harness holding torch and jax reports at least the harness's size.)"""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _step_fn(backend, batch):
    """The digits-size CNN training step of benchmarks/wl_training.py for one backend,
    importing only that backend."""
    from . import wl_training as T

    params, x, y = T._init(batch)
    if backend == "xops":
        import xops
        import xops.nn  # noqa: F401
        import xops.optim  # noqa: F401

        return T._xops_step(xops, params, x, y)
    if backend == "torch":
        import torch

        return T._torch_step(torch, params, x, y)
    import jax

    jax.config.update("jax_platforms", "cpu")
    return T._jax_steps(jax, params, x, y)[0]


def rss_child(backend, steps, every=0, batch=32):
    """Runs in the child: ``steps`` steps, then one JSON line (peak MB, samples)."""
    step = _step_fn(backend, batch)
    samples = []
    for i in range(steps):
        step()
        if every and (i + 1) % every == 0:
            samples.append((i + 1, _rss_mb()))
    return {"backend": backend, "steps": steps, "peak_mb": _peak_mb(), "samples": samples}


def _slope(samples, skip):
    """Least-squares slope of RSS (MB) per 100 steps over the samples after ``skip``."""
    pts = [(s, mb) for s, mb in samples if s > skip]
    if len(pts) < 2:
        return float("nan")
    n = len(pts)
    ms = sum(s for s, _ in pts) / n
    mm = sum(mb for _, mb in pts) / n
    var = sum((s - ms) ** 2 for s, _ in pts)
    return 100 * sum((s - ms) * (mb - mm) for s, mb in pts) / var


def _child(backend, steps, every=0):
    args = ["-m", "benchmarks.process_rows", "--rss", backend, "--steps", str(steps)]
    _, stdout = _wall(args + ["--every", str(every)], dict(os.environ))
    return json.loads(stdout.strip().splitlines()[-1])


def peak_rss(quick=False):
    steps, long = (20, 200) if quick else (100, 1000)
    flat = _child("xops", long, every=10)
    slope = _slope(flat["samples"], skip=long // 10)
    peaks = {}
    for backend in ("xops", "torch", "jax"):
        try:
            peaks[backend] = _child(backend, steps)["peak_mb"]
        except (RuntimeError, ValueError) as e:  # backend not installed / failed
            print(f"   peak_rss: {backend} skipped ({str(e).splitlines()[-1]})", file=sys.stderr)
    first, last = flat["samples"][long // 10 // 10 - 1][1], flat["samples"][-1][1]
    cells = "   ".join(f"{k} {v:.0f} MB" for k, v in peaks.items())
    print(
        f"== peak_rss  [peak RSS (VmHWM) after {steps} steps of the digits CNN (batch 32), "
        f"one process per backend; xops RSS over {long} steps]\n   {cells}\n"
        f"   xops RSS {first:.0f} MB at step {long // 10}, {last:.0f} MB at step {long}: "
        f"slope {slope:+.2f} MB per 100 steps\n",
        flush=True,
    )
    return {**peaks, "xops_slope": slope}, "MB"


def run(names, quick=False):
    """The selected rows' results, keyed like the workloads' (see the module docstring)."""
    out = {}
    for name in names:
        try:
            values, unit = {"cold_start": cold_start, "peak_rss": peak_rss}[name](quick)
        except (RuntimeError, OSError, ValueError, IndexError) as e:  # keep the run's tables
            print(f"== {name}: failed: {e}", file=sys.stderr)
            continue
        out[name] = {
            "kind": "process",
            "unit": unit,
            "backends": {k: {"median": v} for k, v in values.items()},
        }
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.process_rows")
    p.add_argument("--rss", choices=("xops", "torch", "jax"), required=True)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--every", type=int, default=0, help="sample the RSS every N steps")
    args = p.parse_args(argv)
    print(json.dumps(rss_child(args.rss, args.steps, args.every)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
