"""``python -m benchmarks --device cuda`` rows on CUDA tensors (benchmarks/gpu.py), on
their tiny shapes: each xops CUDA result checked against the same xops call on the CPU
(PyTorch CUDA is the reference only on a GPU), so the GPU harness cannot rot without a
GPU. No timing is asserted."""

import pytest

import xops as xo
from benchmarks import gpu, workloads
from cuda_support import needs_cuda

pytestmark = needs_cuda


@pytest.mark.parametrize("name", ["gemm_2048_f32", "add_16M_f32", "reduce_sum_16M_f32"])
def test_gpu_rows_run_and_agree_with_the_cpu(name, monkeypatch):
    from numba import cuda

    monkeypatch.setattr(workloads, "SMOKE", True)
    r = next(r for r in gpu.ROWS if r.name == name)
    results, note = gpu.run_row(r, xo, None, 1, 0.1, cuda.synchronize)
    assert note == "" and results["xops"]["ok"] is True, (note, results)
    assert results["xops"]["median"] > 0 and len(results["xops"]["times"]) == 1
    assert gpu._derived(r, "xops", results["xops"], results, 100.0)


def test_gpu_copy_row_times_a_device_copy(monkeypatch):
    from numba import cuda

    monkeypatch.setattr(workloads, "SMOKE", True)
    r = next(r for r in gpu.ROWS if r.name == "copy_16M_f32")
    fns = r.make(xo, None, "cuda")
    out = fns["numba_copy"]()
    src = r.make(xo, None, "cpu")["numba_copy"]()
    assert (out.copy_to_host() == src).all()
    results, note = gpu.run_row(r, xo, None, 1, 0.1, cuda.synchronize)
    assert set(results) == {"numba_copy"} and note == ""
