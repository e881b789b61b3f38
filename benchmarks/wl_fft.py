"""FFT workloads: one long complex64 transform, and a batch of short ones.

xops runs SciPy's pocketfft in single precision; NumPy (2.x) runs its own pocketfft,
also in single precision for complex64; PyTorch runs pocketfft (MKL where built with
it); JAX runs XLA's CPU FFT (DUCC).
"""

import numpy as np

from .workloads import _frameworks, _rng, dim, workload


def gflops_fft(n, batch=1):
    # the customary 5 N log2 N flop count of a complex radix-2 FFT
    return lambda s: f"{5 * n * np.log2(n) * batch / s / 1e9:.2f} GFLOP/s"


def _complex(shape):
    rng = _rng()
    return (
        rng.standard_normal(shape, dtype=np.float32)
        + 1j * rng.standard_normal(shape, dtype=np.float32)
    ).astype(np.complex64)


def _make(be, x, lengths):
    xo, t, jax = be["xops"], be.get("torch"), be.get("jax")
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    return _frameworks(
        be,
        [x],
        lambda v: np.fft.fftn(v, axes=axes),
        lambda v: xo.fft(v, "FFT", lengths),
        t and (lambda v: t.fft.fftn(v, dim=axes)),
        jax and (lambda v: jax.lax.fft(v, jax.lax.FftType.FFT, tuple(lengths))),
    )


@workload("fft_1M_c64", "fft FFT (1048576,) complex64", rtol=1e-3, derived=gflops_fft(1 << 20))
def _fft_1m(be):
    n = dim(1 << 20, 64)
    return _make(be, _complex(n), [n])


@workload(
    "fft_batch_c64",
    "fft FFT (1024, 1024) complex64 over the last dim (batch 1024)",
    rtol=1e-3,
    derived=gflops_fft(1024, 1024),
)
def _fft_batch(be):
    n = dim(1024, 16)
    return _make(be, _complex((n, n)), [n])
