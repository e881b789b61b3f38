"""Time xops against NumPy, PyTorch (CPU) and JAX (eager and jit) in one process.

    python -m benchmarks                 # every workload, full sampling
    python -m benchmarks --quick         # fewer, shorter samples
    python -m benchmarks --only add      # workloads whose name contains "add"
    python -m benchmarks --markdown out.md

Method: backends are interleaved within each round (the order rotates), each sample
runs the workload back to back for at least ``--sample-ms`` and records the time per
call, after one untimed call. The table gives the median, the minimum, and the
median's ratio to NumPy's median (``x_numpy``, lower is faster for xops) and to the
fastest backend (``x_best``). PyTorch and JAX are used when installed and skipped
otherwise. Every backend's result is checked against NumPy's before timing.
"""

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

from .workloads import WORKLOADS, load_all


def _load_backends():
    backends = {"numpy": np, "xops": None, "torch": None, "jax": None}
    import xops

    backends["xops"] = xops
    try:
        import torch

        backends["torch"] = torch
    except ImportError:
        pass
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


def run_workload(w, backends, samples, sample_ms):
    fns = w.make(backends)
    ref = fns["numpy"]()
    rows = {}
    for name, fn in fns.items():
        t0 = time.perf_counter()
        out = fn()
        first = time.perf_counter() - t0
        ok = _check(out, ref, w.rtol)
        rows[name] = {"first": first, "ok": ok, "times": [], "inner": 1}
    order = list(fns)
    for r in range(samples):
        rot = order[r % len(order) :] + order[: r % len(order)]
        for name in rot:
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


def _table(w, rows):
    lines = [f"== {w.name}  [{w.desc}]"]
    lines.append(
        f"   {'backend':10s} {'median':>11s} {'min':>11s} {'x_numpy':>8s} {'x_best':>7s}"
        f" {'derived':>14s} {'first call':>11s}  check"
    )
    for name, row in rows.items():
        derived = w.derived(row["median"]) if w.derived else ""
        lines.append(
            f"   {name:10s} {_fmt_time(row['median']):>11s} {_fmt_time(row['min']):>11s} "
            f"{row['x_numpy']:8.2f} {row['x_best']:7.2f} {derived:>14s} "
            f"{_fmt_time(row['first']):>11s}  {'ok' if row['ok'] else 'MISMATCH'}"
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


def machine_line(backends):
    parts = [
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical cores",
        f"python {platform.python_version()}",
        f"numpy {np.__version__}",
    ]
    import numba

    parts.append(f"numba {numba.__version__} ({numba.get_num_threads()} threads)")
    for name in ("torch", "jax"):
        if backends.get(name) is not None:
            parts.append(f"{name} {backends[name].__version__}")
        else:
            parts.append(f"{name} not installed")
    return "; ".join(parts)


def _isolated(selected, samples, sample_ms, markdown):
    """One child process per workload; their tables are printed as they come."""
    import subprocess
    import tempfile

    rc = 0
    parts = []
    for w in selected:
        with tempfile.NamedTemporaryFile("r", suffix=".md") as md:
            cmd = [
                sys.executable,
                "-m",
                "benchmarks",
                "--only",
                w.name,
                "--exact",
                "--samples",
                str(samples),
                "--sample-ms",
                str(sample_ms),
                "--markdown",
                md.name,
            ]
            out = subprocess.run(cmd, capture_output=True, text=True)
            lines = out.stdout.splitlines()
            if not parts:
                print("\n".join(lines[:3]) + "\n(each workload in its own process)\n")
            print("\n".join(lines[4:]), flush=True)
            if out.returncode:
                print(out.stderr[-2000:], file=sys.stderr)
                rc = 1
            table = md.read().splitlines()
            parts.append(table[2:] if parts else table)
    if markdown:
        with open(markdown, "w") as f:
            f.write("\n".join(line for part in parts for line in part) + "\n")
    return rc


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
    p.add_argument("--markdown", default=None, help="also write a markdown table here")
    args = p.parse_args(argv)
    samples = args.samples or (5 if args.quick else 15)
    sample_ms = args.sample_ms or (20 if args.quick else 100)
    load_all()
    selected = [
        w for w in WORKLOADS if (w.name == args.only if args.exact else args.only in w.name)
    ]
    if args.list:
        print("\n".join(w.name for w in selected))
        return 0
    if args.isolate:
        return _isolated(selected, samples, sample_ms, args.markdown)
    backends = _load_backends()
    print(f"xops benchmarks  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"machine: {machine_line(backends)}")
    print(
        f"method: median of {samples} samples, each >= {sample_ms:g} ms of back-to-back calls; "
        f"backends interleaved (rotated) per round; x_numpy = median / numpy's median\n"
    )
    results = []
    for w in selected:
        t0 = time.perf_counter()
        rows = run_workload(w, backends, samples, sample_ms)
        print(_table(w, rows) + f"\n   ({time.perf_counter() - t0:.1f} s)\n", flush=True)
        results.append((w, rows))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(f"machine: {machine_line(backends)}\n\n{_markdown(results)}\n")
    if any(not row["ok"] for _, rows in results for row in rows.values()):
        print("some backend disagreed with NumPy (see MISMATCH above)", file=sys.stderr)
        return 1
    return 0
