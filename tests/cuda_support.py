"""What the CUDA test modules (``tests/test_cuda*.py``) share.

Without a GPU, ``tests/test_cuda.py::test_cuda_modules_under_the_simulator`` re-runs every
``tests/test_cuda*.py`` module in one subprocess under numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1`` must be set before numba is imported, and flipping it in this
process would change numba's state for every other test module); in this process their
tests skip. With a GPU (or the simulator already on) they run directly. Shapes are tiny:
the simulator runs a Python thread per CUDA thread (about 3,500 threads a second here), so
keep each launch near 1k threads.
"""

import os

import numpy as np
import pytest

import xops as xo
from xops import device as _device

INNER = os.environ.get("XOPS_CUDA_INNER") == "1"  # this process is the simulator re-run
SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def _usable():
    try:
        return _device.cuda_available()
    except Exception:
        return False


HERE = _usable()  # CUDA tensors can be made in this process (a GPU or the simulator)

needs_cuda = pytest.mark.skipif(
    not HERE,
    reason="no CUDA device in this process (a GPU, or numba's simulator under "
    "NUMBA_ENABLE_CUDASIM=1); tests/test_cuda.py re-runs these tests under the simulator",
)


def cu(data, dtype=None):
    """``xo.tensor(data, dtype)`` on the CUDA device."""
    return xo.tensor(data, dtype, device="cuda")


def same(dev, ref, rtol=1e-6):
    """CUDA result ``dev`` equals CPU result ``ref``: same type and shape; bit for bit for
    integer and boolean types, within ``rtol`` for float math."""
    assert dev.device == "cuda:0" and ref.device == "cpu"
    a, b = dev.numpy(), ref.numpy()
    assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
    if dev.dtype.kind in ("float", "complex"):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=0)
    else:
        np.testing.assert_array_equal(a, b)
