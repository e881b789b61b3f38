"""Start-up costs kept off the first kernel call: Numba's BLAS probe (``import
scipy.linalg.cython_blas``, all of scipy.linalg) is answered without importing it
(xops.kernels.config._skip_blas_probe), and Numba's own BLAS functions still work."""

import subprocess
import sys

_CHILD = """
import sys
import numpy as np
import xops as xo

x = xo.tensor(np.arange(4096, dtype=np.float32))
y = xo.select(x > 100.0, x, -x)  # 4096 elements: the select_bits kernel
assert y.numpy()[5] == -5.0 and y.numpy()[200] == 200.0
assert "scipy.linalg" not in sys.modules, "the first kernel imported scipy.linalg"

import numba
from numba.np import arraymath, linalg

assert arraymath._HAVE_BLAS  # the probe's answer: BLAS is there
assert linalg.ensure_blas.__module__ == "numba.np.linalg"  # Numba's own probe is back


@numba.njit
def products(a, b):
    return np.dot(a, b), np.vdot(a, b), np.linalg.det(np.outer(a, b) + np.eye(3))


got = products(np.arange(3.0), np.ones(3))
assert got[0] == 3.0 and got[1] == 3.0 and abs(got[2] - 4.0) < 1e-12, got
assert "scipy.linalg" in sys.modules  # imported where a kernel first uses BLAS
print("ok")
"""


def test_first_kernel_does_not_import_scipy_linalg():
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")
