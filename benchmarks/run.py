"""Time xops against NumPy, PyTorch (CPU) and JAX (eager and jit) in one process.

    python -m benchmarks                 # every workload, full sampling
    python -m benchmarks --quick         # fewer, shorter samples
    python -m benchmarks --only add      # workloads whose name contains "add"
    python -m benchmarks --markdown out.md --json out.json
    python -m benchmarks --isolate       # each workload in a fresh process, then the
                                         # summary and issue 15's targets table
    python -m benchmarks --avx2 --isolate  # every backend compiled for AVX2 (on AVX-512)

Method: backends are interleaved within each round (the order rotates), each sample
runs the workload back to back for at least ``--sample-ms`` and records the time per
call, after a pause of ``--settle-ms`` (thread pools left spinning by the backend before
go idle: see run_workload) and one untimed call. The table gives the median, the minimum, and the
median's ratio to NumPy's median (``x_numpy``, lower is faster for xops) and to the
fastest backend (``x_best``). PyTorch and JAX are used when installed and skipped
otherwise. Every backend's result is checked against NumPy's before timing (except the
workload's ``unchecked`` baselines). The process rows (``cold_start``, ``peak_rss``:
``benchmarks/process_rows.py``) run after the workloads; ``--only`` selects them too.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

from . import process_rows, targets
from .workloads import WORKLOADS, load_all


def _load_backends():
    """The backends, PyTorch imported before xops: its OpenMP runtime (libgomp, which
    Numba's omp layer then shares in this process) starts with PyTorch's own defaults,
    as in a process of its own (imported after xops, it took xops's settings: before
    session 15 OMP_WAIT_POLICY=PASSIVE, which slowed PyTorch's steps; see
    benchmarks/README.md "Session 15")."""
    backends = {"numpy": np, "xops": None, "torch": None, "jax": None}
    if os.environ.get("XOPS_BENCH_XOPS_FIRST"):  # (to measure the other order)
        import xops  # noqa: F401
    try:
        import torch

        backends["torch"] = torch
    except ImportError:
        pass
    import xops

    backends["xops"] = xops
    try:
        import jax

        jax.config.update("jax_platforms", "cpu")
        backends["jax"] = jax
    except ImportError:
        pass
    return backends


def _to_numpy(x):
    if isinstance(x, (tuple, list)):
        return [_to_numpy(v) for v in x]
    if hasattr(x, "block_until_ready"):
        x.block_until_ready()
    if hasattr(x, "detach"):
        x = x.detach()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def _check(got, want, rtol):
    got, want = _to_numpy(got), _to_numpy(want)
    if isinstance(want, list):
        return all(_check(g, w, rtol) for g, w in zip(got, want))
    got = np.asarray(got, np.float64 if np.asarray(want).dtype.kind != "c" else np.complex128)
    want = np.asarray(want, got.dtype)
    if got.shape != want.shape:
        return False
    return np.allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)


def _sample(fn, min_seconds, inner):
    """Seconds per call over a batch of ``inner`` calls; adapts ``inner`` upward."""
    while True:
        t0 = time.perf_counter()
        for _ in range(inner):
            out = fn()
        if hasattr(out, "block_until_ready"):
            out.block_until_ready()
        dt = time.perf_counter() - t0
        if dt >= min_seconds or inner >= 1 << 22:
            return dt / inner, inner
        inner = max(inner * 2, int(inner * min_seconds / max(dt, 1e-9) * 1.2))


def run_workload(w, backends, samples, sample_ms, settle_ms=0.0):
    """Every backend's figures for workload ``w``: a checked first call each, then
    ``samples`` rounds, the backends interleaved (the order rotates), each sample
    preceded by a pause of ``settle_ms`` and one untimed call. The pause lets thread
    pools that the previous backend left spinning go idle: OpenBLAS's workers spin for
    2^28 cycles (~0.1 s) after a threaded product (NumPy's einsum/dot), PyTorch's
    OpenMP threads likewise, and a sample taken meanwhile has one core instead of two
    (issue 15, conv_drhs_cifar_b64: xops after NumPy's einsum 3.1 ms min, after any
    other backend 1.6-1.8 ms, same process, loaded machine)."""
    fns = w.make(backends)
    ref = fns["numpy"]()
    rows = {}
    for name, fn in fns.items():
        t0 = time.perf_counter()
        out = fn()
        first = time.perf_counter() - t0
        ok = None if name in w.unchecked else _check(out, ref, w.rtol)
        rows[name] = {"first": first, "ok": ok, "times": [], "inner": 1}
    order = list(fns)
    for r in range(samples):
        rot = order[r % len(order) :] + order[: r % len(order)]
        for name in rot:
            if settle_ms:
                time.sleep(settle_ms / 1e3)
            fns[name]()
            t, rows[name]["inner"] = _sample(fns[name], sample_ms / 1e3, rows[name]["inner"])
            rows[name]["times"].append(t)
    for row in rows.values():
        row["median"] = statistics.median(row["times"])
        row["min"] = min(row["times"])
    best = min(row["median"] for row in rows.values())
    for row in rows.values():
        row["x_best"] = row["median"] / best
        row["x_numpy"] = row["median"] / rows["numpy"]["median"]
    return rows


def _fmt_time(s):
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    return f"{s * 1e3:.3f} ms"


def _verdict(ok):
    return "baseline" if ok is None else "ok" if ok else "MISMATCH"


def _table(w, rows):
    lines = [f"== {w.name}  [{w.desc}]"]
    lines.append(
        f"   {'backend':13s} {'median':>11s} {'min':>11s} {'x_numpy':>8s} {'x_best':>7s}"
        f" {'derived':>14s} {'first call':>11s}  check"
    )
    for name, row in rows.items():
        derived = w.derived(row["median"]) if w.derived else ""
        lines.append(
            f"   {name:13s} {_fmt_time(row['median']):>11s} {_fmt_time(row['min']):>11s} "
            f"{row['x_numpy']:8.2f} {row['x_best']:7.2f} {derived:>14s} "
            f"{_fmt_time(row['first']):>11s}  {_verdict(row['ok'])}"
        )
    return "\n".join(lines)


def _markdown(results):
    out = [
        "| workload | backend | median | x_numpy | x_best | derived |",
        "|---|---|---|---|---|---|",
    ]
    for w, rows in results:
        for name, row in rows.items():
            derived = w.derived(row["median"]) if w.derived else ""
            out.append(
                f"| {w.name} | {name} | {_fmt_time(row['median'])} | {row['x_numpy']:.2f} | "
                f"{row['x_best']:.2f} | {derived} |"
            )
    return "\n".join(out)


def cpu_line():
    """The CPU model and its widest vector ISA, from /proc/cpuinfo's flags (Linux)."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
                    break
    except OSError:
        pass
    isa = "no AVX"
    for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX")):
        if flag in flags:
            isa = name
            break
    extras = [
        f for f in ("fma", "avx512bw", "avx512vl", "avx512_bf16", "avx512_fp16") if f in flags
    ]
    detail = f" ({', '.join(extras)})" if extras else ""
    return f"{model}, {isa}{detail}, {os.cpu_count()} logical cores{compiled_for()}"


def compiled_for():
    """ ", ISA set by the environment: ..." where environment variables choose the vector
    ISA the backends compile or dispatch for (an AVX2 run on an AVX-512 machine: Numba's
    ``NUMBA_CPU_FEATURES`` with ``-avx512f``, PyTorch's ``ATEN_CPU_CAPABILITY``, NumPy's
    ``NPY_DISABLE_CPU_FEATURES``, XLA's ``--xla_cpu_max_isa``, ``OPENBLAS_CORETYPE``),
    else "": the CPU's flags alone would name the wider ISA."""
    env, parts = os.environ, []
    if "-avx512f" in env.get("NUMBA_CPU_FEATURES", "").split(","):
        parts.append("Numba without AVX-512")
    if env.get("ATEN_CPU_CAPABILITY"):
        parts.append(f"PyTorch {env['ATEN_CPU_CAPABILITY']}")
    if env.get("NPY_DISABLE_CPU_FEATURES"):
        parts.append(f"NumPy without {env['NPY_DISABLE_CPU_FEATURES']}")
    isa = [f for f in env.get("XLA_FLAGS", "").split() if f.startswith("--xla_cpu_max_isa")]
    if isa:
        parts.append(f"XLA {isa[0].partition('=')[2]}")
    if env.get("OPENBLAS_CORETYPE"):
        parts.append(f"OpenBLAS {env['OPENBLAS_CORETYPE']}")
    return f", ISA set by the environment: {', '.join(parts)}" if parts else ""


def avx2_environment():
    """The environment variables under which every backend compiles or dispatches for
    AVX2 on an AVX-512 machine (``--avx2``): Numba's host features with every AVX-512 /
    AMX / AVX10 feature off (``NUMBA_CPU_NAME`` alone keeps the host's features),
    PyTorch's and oneDNN's ISA caps, NumPy's dispatch without X86_V4 (its AVX-512
    loops), XLA's ISA cap and OpenBLAS's Haswell kernels."""
    import llvmlite.binding as llvm

    features = []
    for name, on in sorted(llvm.get_host_cpu_features().items()):
        wide = name.startswith(("avx512", "amx", "avx10")) or name == "evex512"
        features.append(("+" if on and not wide else "-") + name)
    return {
        "NUMBA_CPU_FEATURES": ",".join(features),
        "NUMBA_CPU_NAME": "haswell",
        "ATEN_CPU_CAPABILITY": "avx2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "NPY_DISABLE_CPU_FEATURES": "X86_V4",
        "XLA_FLAGS": (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_max_isa=AVX2").strip(),
        "OPENBLAS_CORETYPE": "Haswell",
    }


def machine_line(backends):
    parts = [cpu_line(), f"python {platform.python_version()}", f"numpy {np.__version__}"]
    import numba

    parts.append(f"numba {numba.__version__} ({numba.get_num_threads()} threads)")
    for name in ("torch", "jax"):
        if backends.get(name) is not None:
            parts.append(f"{name} {backends[name].__version__}")
        else:
            parts.append(f"{name} not installed")
    return "; ".join(parts)


def _results_dict(results):
    """``{workload: {"desc", "backends": {name: {median, min, first, ok}}}}``."""
    return {
        w.name: {
            "desc": w.desc,
            "backends": {
                name: {k: row[k] for k in ("median", "min", "first", "ok")}
                for name, row in rows.items()
            },
        }
        for w, rows in results
    }


def _write_json(path, machine, results):
    with open(path, "w") as f:
        json.dump({"machine": machine, "results": results}, f, indent=1)


def _isolated(selected, samples, sample_ms, settle_ms):
    """One child process per workload; their tables are printed as they come. Returns
    (rc, machine line, results dict)."""
    import tempfile

    rc, machine, merged = 0, "", {}
    for w in selected:
        with tempfile.NamedTemporaryFile("r", suffix=".json") as js:
            cmd = [
                sys.executable,
                "-m",
                "benchmarks",
                "--only",
                w.name,
                "--exact",
                "--no-process-rows",
                "--samples",
                str(samples),
                "--sample-ms",
                str(sample_ms),
                "--settle-ms",
                str(settle_ms),
                "--json",
                js.name,
            ]
            out = subprocess.run(cmd, capture_output=True, text=True)
            lines = out.stdout.splitlines()
            if not merged:
                print("\n".join(lines[:3]) + "\n(each workload in its own process)\n")
            print("\n".join(lines[4:]), flush=True)
            if out.returncode:
                print(out.stderr[-2000:], file=sys.stderr)
                rc = 1
            try:
                data = json.load(js)
            except ValueError:  # the child failed before writing
                continue
            machine = machine or data["machine"]
            merged.update(data["results"])
    return rc, machine, merged


def _finish(args, machine, merged, t_start):
    """The isolated run's end: the summary beside PyTorch and JAX, issue 15's targets."""
    summary = targets.summary_markdown(merged)
    table = targets.targets_markdown(merged)
    wall = time.perf_counter() - t_start
    print(f"\n## Summary (median per call)\n\n{summary}\n\n## Issue 15 targets\n\n{table}")
    print(f"\ntotal wall time {wall:.0f} s")
    if args.json:
        _write_json(args.json, machine, merged)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(
                f"machine: {machine}\n\n{summary}\n\n### Issue 15 targets\n\n{table}\n\n"
                f"(total wall time {wall:.0f} s)\n"
            )


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="5 samples of >= 20 ms")
    p.add_argument("--only", default="", help="run workloads whose name contains this")
    p.add_argument("--exact", action="store_true", help="--only must match a name exactly")
    p.add_argument("--list", action="store_true", help="print the workload names and exit")
    p.add_argument(
        "--isolate",
        action="store_true",
        help="run each workload in a fresh process (backends still interleave "
        "within it): thread pools of BLAS, Numba, PyTorch and XLA left "
        "spinning by earlier workloads otherwise distort later ones",
    )
    p.add_argument("--samples", type=int, default=None)
    p.add_argument("--sample-ms", type=float, default=None)
    p.add_argument(
        "--settle-ms",
        type=float,
        default=None,
        help="pause before each sample so that thread pools the previous backend left "
        "spinning go idle (default 120, 0 with --quick)",
    )
    p.add_argument("--markdown", default=None, help="also write a markdown table here")
    p.add_argument("--json", default=None, help="also write the figures here (JSON)")
    p.add_argument(
        "--device",
        default="cpu",
        choices=("cpu", "cuda"),
        help="cuda: the GPU rows, xops CUDA tensors beside PyTorch CUDA (benchmarks/gpu.py)",
    )
    p.add_argument(
        "--avx2",
        action="store_true",
        help="on an AVX-512 machine, run every backend compiled / dispatched for AVX2 "
        "(sets the variables of avx2_environment() and runs again; Numba compiles its "
        "kernels for those features once, into their own cache entries)",
    )
    p.add_argument(
        "--no-process-rows",
        action="store_true",
        help="skip the process rows (cold start, peak RSS) even if --only selects them",
    )
    args = p.parse_args(argv)
    if args.avx2:
        argv = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--avx2"]
        env = dict(os.environ, **avx2_environment())
        return subprocess.call([sys.executable, "-m", "benchmarks", *argv], env=env)
    if args.device == "cuda":
        from . import gpu

        return gpu.main(args)
    samples = args.samples or (5 if args.quick else 15)
    sample_ms = args.sample_ms or (20 if args.quick else 100)
    settle_ms = args.settle_ms if args.settle_ms is not None else (0 if args.quick else 120)
    load_all()

    def chosen(name):
        return name == args.only if args.exact else args.only in name

    selected = [w for w in WORKLOADS if chosen(w.name)]
    proc = [] if args.no_process_rows else [r for r in process_rows.ROWS if chosen(r)]
    if args.list:
        print("\n".join([w.name for w in selected] + proc))
        return 0
    t_start = time.perf_counter()
    if args.isolate:
        rc, machine, merged = _isolated(selected, samples, sample_ms, settle_ms)
        merged.update(process_rows.run(proc, args.quick))
        _finish(args, machine, merged, t_start)
        return rc
    backends = _load_backends()
    print(f"xops benchmarks  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"machine: {machine_line(backends)}")
    print(
        f"method: median of {samples} samples, each >= {sample_ms:g} ms of back-to-back calls "
        f"after a {settle_ms:g} ms pause; backends interleaved (rotated) per round; "
        f"x_numpy = median / numpy's median\n"
    )
    results = []
    for w in selected:
        t0 = time.perf_counter()
        rows = run_workload(w, backends, samples, sample_ms, settle_ms)
        print(_table(w, rows) + f"\n   ({time.perf_counter() - t0:.1f} s)\n", flush=True)
        results.append((w, rows))
    merged = _results_dict(results)
    merged.update(process_rows.run(proc, args.quick))
    if args.json:
        _write_json(args.json, machine_line(backends), merged)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(f"machine: {machine_line(backends)}\n\n{_markdown(results)}\n")
    if any(row["ok"] is False for _, rows in results for row in rows.values()):
        print("some backend disagreed with NumPy (see MISMATCH above)", file=sys.stderr)
        return 1
    return 0
