"""The benchmark harness in smoke mode: every workload of ``python -m benchmarks`` runs
once on tiny shapes, every backend's result checked against the NumPy reference (the
same check the timed runs make), so the harness cannot rot. No timing is asserted.

PyTorch and JAX run where installed (JAX eager only: ``jax_jit`` compiles a program
per workload, seconds in all, and shares its function with the eager row). Also checked:
issue 15's targets table (ratios, verdicts, "not run"), the CPU line's vector ISA, the
RSS slope fit, and the process rows' child (a few training steps, its peak RSS).
"""

import json
import math
import os

import numpy as np
import pytest

from benchmarks import process_rows, run, targets, workloads
import xops

workloads.load_all()
NAMES = [w.name for w in workloads.WORKLOADS]


@pytest.fixture(scope="module")
def backends():
    be = run._load_backends()
    return be


@pytest.fixture(autouse=True)
def smoke(monkeypatch):
    monkeypatch.setattr(workloads, "SMOKE", True)


def test_every_issue_15_workload_is_registered():
    needed = {w for _, w, *_ in targets.CHECKS} - set(process_rows.ROWS)
    assert needed <= set(NAMES), sorted(needed - set(NAMES))


@pytest.mark.parametrize("name", NAMES)
def test_workload_runs_and_agrees(name, backends):
    w = next(w for w in workloads.WORKLOADS if w.name == name)
    fns = w.make(backends)
    fns.pop("jax_jit", None)
    assert "numpy" in fns and "xops" in fns
    ref = fns["numpy"]()
    for backend, fn in fns.items():
        out = fn()
        if backend not in w.unchecked:
            assert run._check(out, ref, w.rtol), f"{name}: {backend} disagrees with NumPy"
    if w.derived is not None:
        assert w.derived(1e-3)


def test_checks_name_backends_their_workload_makes(backends):
    """Every backend a target divides by is one its workload times."""
    made = {}
    for _, w, num, den, *_ in targets.CHECKS:
        if w in process_rows.ROWS:
            continue
        if w not in made:
            wl = next(x for x in workloads.WORKLOADS if x.name == w)
            made[w] = set(wl.make(backends))
        for b in (num, den):
            if b in ("torch", "jax") and backends.get(b) is None:
                continue
            assert b in made[w], f"{w} has no backend {b}"


def _result(**medians):
    return {"backends": {k: {"median": v} for k, v in medians.items()}}


def test_targets_ratios_and_verdicts():
    results = {
        "add_1M": _result(xops=1.0, torch=2.0),
        "exp_1M": _result(xops=3.0, torch=2.0),
        "matmul_1024": _result(numpy=0.96, xops=1.0),
        "cold_start": _result(xops_cold=9.0, xops_warm=2.5),
    }
    rows = {
        what: (measured, verdict) for _, what, _, measured, verdict in targets.evaluate(results)
    }
    assert rows["add_1M: xops / torch"] == ("0.50", "met")
    assert rows["exp_1M: xops / torch"] == ("1.50", "NOT MET")
    assert rows["matmul_1024: numpy / xops"] == ("0.96", "met")  # >= 0.95 of BLAS
    assert rows["cold_start: xops_cold"] == ("9.00", "NOT MET")
    assert rows["cold_start: xops_warm"] == ("2.50", "met")
    assert rows["tanh_16M: xops / torch"] == ("not run", "-")
    table = targets.targets_markdown(results)
    assert f"3 met, 2 not met, {len(targets.CHECKS) - 5} not run" in table
    assert "tanh_16M" not in table and "| exp_1M: xops / torch | <= 1x | 1.50 | NOT MET |" in table
    summary = targets.summary_markdown(results)
    assert "| add_1M |" in summary and "| 0.50 |" in summary


def test_targets_cli_reads_a_run(tmp_path, capsys):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"machine": "m", "results": {"add_1M": _result(xops=1, torch=1)}}))
    assert targets.main([str(path)]) == 0
    assert "add_1M: xops / torch | <= 1x | 1.00 | met" in capsys.readouterr().out


def test_cpu_line_names_the_vector_isa():
    line = run.cpu_line()
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        flags = ""
    if " avx512f" in flags:
        assert "AVX-512" in line
    elif " avx2" in flags:
        assert "AVX2" in line and "AVX-512" not in line
    assert "logical cores" in line


def test_rss_slope_is_least_squares_per_100_steps():
    samples = [(s, 100 + 0.03 * s) for s in range(10, 1001, 10)]
    assert math.isclose(process_rows._slope(samples, skip=100), 3.0)
    assert process_rows._slope([(s, 50.0) for s in range(10, 301, 10)], skip=100) == 0
    assert math.isnan(process_rows._slope([(10, 1.0)], skip=0))


def test_rss_child_runs_training_steps():
    out = process_rows.rss_child("xops", steps=3, every=1, batch=4)
    assert out["steps"] == 3 and [s for s, _ in out["samples"]] == [1, 2, 3]
    assert out["peak_mb"] > 10 and min(mb for _, mb in out["samples"]) > 10
    # the peak is this process's own high-water mark: never below what is resident now
    assert process_rows._peak_mb() >= process_rows._rss_mb() - 0.5


def test_run_results_dict_and_unchecked_baselines(backends):
    w = next(w for w in workloads.WORKLOADS if w.name == "divide_i32_1M")
    rows = run.run_workload(w, {"xops": backends["xops"], "numpy": np}, samples=1, sample_ms=0.1)
    assert rows["np_ufunc"]["ok"] is None and rows["xops"]["ok"] is True
    data = run._results_dict([(w, rows)])
    assert set(data["divide_i32_1M"]["backends"]) == {"numpy", "xops", "np_ufunc"}


def test_each_sample_waits_for_the_pools_to_settle(backends, monkeypatch):
    """--settle-ms: a pause before every sample (and none by default, as in smoke runs)."""
    w = next(w for w in workloads.WORKLOADS if w.name == "divide_i32_1M")
    pauses = []
    monkeypatch.setattr(run.time, "sleep", pauses.append)
    be = {"xops": backends["xops"], "numpy": np}
    run.run_workload(w, be, samples=2, sample_ms=0.1)
    assert pauses == []
    rows = run.run_workload(w, be, samples=2, sample_ms=0.1, settle_ms=30)
    assert pauses == [0.03] * (2 * len(rows))


def test_cuda_rows_list_and_a_clear_error_without_a_gpu(capsys):
    from benchmarks import gpu
    from xops import device

    names = [r.name for r in gpu.ROWS]
    assert {t[0] for t in gpu.TARGETS} | {"copy_16M_f32"} <= set(names)
    assert run.main(["--device", "cuda", "--list", "--only", "conv"]) == 0
    assert capsys.readouterr().out.split() == [n for n in names if "conv" in n]
    if not device.cuda_available():
        assert run.main(["--device", "cuda", "--quick"]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "'cuda:0' is not available" in err


def test_cuda_targets_and_row_notes():
    from benchmarks import gpu

    n = 1 << 24
    merged = {
        "gemm_2048_f32": _result(xops=2.0, torch=1.0),
        "copy_16M_f32": _result(numba_copy=2 * 4 * n / 1e12, torch=1.0),  # 1000 GB/s
        "add_16M_f32": _result(xops=3 * 4 * n / 0.9e12),  # 900 GB/s
        "exp_16M_f32": _result(xops=2 * 4 * n / 0.5e12),
    }
    rows = {r[0]: r[3:] for r in gpu.evaluate(merged)}
    assert rows["gemm_2048_f32"] == ("0.50", "met")
    assert rows["add_16M_f32"] == ("0.90", "met") and rows["exp_16M_f32"] == ("0.50", "NOT MET")
    assert rows["train_digits_step_b32"] == ("not run", "-")

    def missing():
        raise xops.SpecError("convolution", "device", "has no cuda kernel yet; ...")

    row = gpu.Row("r", "d", lambda xo, torch, dev: {"xops": missing, "torch": lambda: 1.0})
    results, note = gpu.run_row(row, xops, None, 1, 0.1, lambda: None)
    assert note == "no cuda kernel: convolution" and set(results) == {"torch"}
    row = gpu.Row("r", "d", lambda xo, torch, dev: {"xops": gpu._raises(ValueError("no to()"))})
    assert gpu.run_row(row, xops, None, 1, 0.1, lambda: None) == (
        {},
        "not available: ValueError: no to()",
    )


def test_gpu_host_harness_counts_the_steps_launches():
    """``python -m benchmarks.gpu_host`` (the GPU step's host time on the simulator, launches
    stubbed) runs in its own process and reports the launches per step by kernel."""
    pytest.importorskip("numba.cuda")
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_host", "--steps", "2", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith("digits step (batch 32) host time")
    launches = dict(kv.rsplit(" ", 1) for kv in lines[1].split("  ", 1)[1].split(", "))
    assert int(lines[1].split()[3]) == sum(map(int, launches.values()))
    assert launches["conv2"] == "5" and launches["adam_many8_float32"] == "1"
    assert any(line.split()[0] == "convolution" for line in lines[3:])


def test_gpu_diag_without_a_gpu_says_why_in_one_line():
    """``python -m benchmarks.gpu_diag`` (the GPU step's launches, allocations and kernel
    functions: real-GPU runs only) exits with one line and status 2 without a GPU."""
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")  # (no GPU here: the simulator's case)
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_diag"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stdout.strip() == "gpu_diag: needs a real GPU: the CUDA simulator is on"


def test_step_floor_times_every_step_style(capsys):
    """``python -m benchmarks.step_floor`` (the training step at batch 1, the per-op
    floor, against a full batch): one line per step style and batch."""
    from benchmarks import step_floor

    step_floor.main(["--batches", "1", "2", "--steps", "2", "--rounds", "1"])
    out = capsys.readouterr().out
    assert out.count("batch ") == 2
    assert out.count("xops nn ") == 2 and out.count("xops spec ") == 2
    for line in out.splitlines()[1:3]:
        median, low = (
            float(v) for v in line.split("median")[1].replace("min", "").split(" ms")[:2]
        )
        assert 0 < low <= median


def test_cpu_line_names_an_isa_the_environment_sets(monkeypatch):
    for var in ("ATEN_CPU_CAPABILITY", "NPY_DISABLE_CPU_FEATURES", "XLA_FLAGS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    monkeypatch.setenv("NUMBA_CPU_FEATURES", "+avx2,-avx512f,+fma")
    assert run.cpu_line().endswith(", ISA set by the environment: Numba without AVX-512")
    monkeypatch.setenv("NUMBA_CPU_FEATURES", "+avx2,+avx512f")
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_max_isa=AVX2 --xla_foo")
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    assert run.cpu_line().endswith(", ISA set by the environment: PyTorch avx2, XLA AVX2")
    monkeypatch.delenv("NUMBA_CPU_FEATURES")
    monkeypatch.delenv("XLA_FLAGS")
    monkeypatch.delenv("ATEN_CPU_CAPABILITY")
    assert "ISA set" not in run.cpu_line()


def test_avx2_environment_turns_off_every_avx512_feature():
    env = run.avx2_environment()
    features = env["NUMBA_CPU_FEATURES"].split(",")
    assert "-avx512f" in features
    assert not [f for f in features if f.startswith("+avx512")]
    assert env["NPY_DISABLE_CPU_FEATURES"] == "X86_V4" and env["ATEN_CPU_CAPABILITY"] == "avx2"
    assert "--xla_cpu_max_isa=AVX2" in env["XLA_FLAGS"].split()
