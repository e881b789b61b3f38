"""Where the main job's start-up goes: every Numba compile (or cache load) it triggers,
timed per kernel, cold (an empty ``NUMBA_CACHE_DIR``) and warm (the same cache again).

    python -m benchmarks.coldstart                 # cold then warm, ranked tables
    python -m benchmarks.coldstart --epochs 1 --top 40

Each run is a fresh process that wraps ``numba``'s ``Dispatcher.compile`` (called once per
new signature of a kernel: it loads from the cache or compiles) with a timer, imports
xops, and runs ``xops.examples.train_digits.main``. Time is *exclusive*: a kernel that
compiles a non-inlined helper on the way is not charged for the helper's compile (the
helper's line names the kernel it was compiled for). The first kernel of a process also
carries Numba's own start-up (its target context and LLVM: ~0.5 s idle, 2-3 s loaded).
The report: import time, total compile time and cache-load time, the rest (training
proper), then the costliest kernels and the total per kernel file, with serial and
``_parallel`` variants apart (``parallel=True`` variants compile more slowly).

Every figure is the process's CPU time (``time.process_time``: Numba compiles in the
calling thread, and the main job runs no parallel kernel), with wall seconds beside the
totals: on a shared machine the wall figures grow with the load (at load ~10 on 2
cores, 8-10x the CPU seconds), the CPU figures hardly move, so rankings and
before/after comparisons read the CPU column.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time


def _install_timer(records):
    from numba.core import dispatcher

    original = dispatcher.Dispatcher.compile
    nested, nested_cpu = [0.0], [0.0]  # inner compiles' wall / CPU seconds, per level
    callers = [""]

    def compile(self, sig):
        hits = sum(self._cache_hits.values())
        known = len(self.overloads)
        nested.append(0.0)
        nested_cpu.append(0.0)
        callers.append(self.py_func.__qualname__)
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return original(self, sig)
        finally:
            total = time.perf_counter() - t0
            cpu = time.process_time() - c0
            inner, inner_cpu = nested.pop(), nested_cpu.pop()
            nested[-1] += total
            nested_cpu[-1] += cpu
            callers.pop()
            if len(self.overloads) > known:  # a new signature: loaded or compiled
                code = self.py_func.__code__
                records.append(
                    {
                        "file": os.path.relpath(code.co_filename, os.getcwd()),
                        "kernel": self.py_func.__qualname__,
                        "sig": str(sig),
                        "wall": total - inner,
                        "seconds": cpu - inner_cpu,  # CPU: see the module docstring
                        "cache_hit": sum(self._cache_hits.values()) > hits,
                        "caller": callers[-1],  # the kernel whose compile needed this one
                    }
                )

    dispatcher.Dispatcher.compile = compile


def child(epochs):
    """Runs in the fresh process: JSON with the phases and the per-kernel records."""
    records = []
    t0 = time.process_time()
    import numba  # noqa: F401  (before the timer: its own import is not a compile)

    t_numba = time.process_time()
    _install_timer(records)
    import xops  # noqa: F401
    from xops.examples import train_digits

    t_import = time.process_time()
    args = ["--no-progress"] + (["--epochs", str(epochs)] if epochs else [])
    train_digits.main(args)
    t_end = time.process_time()
    return {
        "numba_import_s": t_numba - t0,
        "import_s": t_import - t_numba,
        "run_s": t_end - t_import,
        "cpu_s": t_end,  # the whole process's, interpreter start-up included
        "records": records,
    }


def _run(cache, epochs):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    cmd = [sys.executable, "-m", "benchmarks.coldstart", "--child"]
    cmd += ["--epochs", str(epochs)] if epochs else []
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode:
        raise SystemExit(f"the main job failed:\n{out.stderr[-3000:]}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    data["wall_s"] = wall
    return data


def report(label, data, top):
    recs = data["records"]
    compiled = [r for r in recs if not r["cache_hit"]]
    loaded = [r for r in recs if r["cache_hit"]]
    t_comp = sum(r["seconds"] for r in compiled)
    t_load = sum(r["seconds"] for r in loaded)
    w_comp = sum(r.get("wall", 0.0) for r in compiled)
    rest = data["run_s"] - t_comp - t_load
    print(
        f"== {label}: wall {data['wall_s']:.1f} s; CPU {data.get('cpu_s', float('nan')):.1f} s"
        f" = interpreter start + numba import {data['numba_import_s']:.2f} s + xops import "
        f"{data['import_s']:.2f} s + main job {data['run_s']:.1f} s\n   main job (CPU): "
        f"compiling {t_comp:.1f} s ({len(compiled)} signatures; {w_comp:.1f} s wall), "
        f"loading from the cache {t_load:.2f} s ({len(loaded)}), the rest (training, "
        f"evaluation, data) {rest:.1f} s"
    )
    if not recs:
        return
    by_file = collections.defaultdict(lambda: [0.0, 0.0, 0, 0])
    for r in recs:
        slot = by_file[r["file"]]
        par = r["kernel"].endswith("_parallel")
        slot[1 if par else 0] += r["seconds"]
        slot[3 if par else 2] += 1
    print(f"   per file ({'compile' if compiled else 'load'}, CPU), serial | parallel variants:")
    for f, (ser, par, ns, np_) in sorted(by_file.items(), key=lambda kv: -sum(kv[1][:2])):
        print(
            f"     {ser + par:7.2f} s  {f}  ({ser:.2f} s in {ns} serial, "
            f"{par:.2f} s in {np_} parallel)"
        )
    print(f"   top {top} signatures (CPU):")
    for r in sorted(recs, key=lambda r: -r["seconds"])[:top]:
        via = f" (for {r['caller']})" if r["caller"] else ""
        print(f"     {r['seconds']:6.2f} s  {r['file']}:{r['kernel']}{via}  {r['sig'][:70]}")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.coldstart")
    p.add_argument("--epochs", type=int, default=0, help="epochs of the main job (0: its default)")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--json", default=None, help="also write both runs' records here")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.epochs)))
        return 0
    with tempfile.TemporaryDirectory(prefix="xops-numba-cache-") as cache:
        cold = _run(cache, args.epochs)
        warm = _run(cache, args.epochs)
    report("cold (empty NUMBA_CACHE_DIR)", cold, args.top)
    print()
    report("warm (the same cache)", warm, min(args.top, 10))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cold": cold, "warm": warm}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
