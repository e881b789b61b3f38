"""stablehlo.fft: forward and inverse discrete Fourier transforms over the 1-3 trailing
dimensions, complex-to-complex (FFT, IFFT), real-to-complex (RFFT) and
complex-to-real (IRFFT).

Runs on SciPy's pocketfft (``scipy.fft``, imported on first use so ``import xops``
stays fast), which computes in single precision for complex<f32>/f32 operands and in
double precision for complex<f64>/f64, as XLA's CPU backend (DUCC, the same FFT
library lineage) does. Batched transforms run on all cores; each 1-D transform is
computed by one thread, so results do not depend on the thread count.
"""

import numpy as np

from ..autodiff.tape import keep, primitive
from ..dtypes import as_dtype
from ..tensor import _wrap
from ._core import SpecError, check, operands, tstr
from .movement import _shape_attr, broadcast_in_dim, constant, pad

__all__ = ["fft"]

_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")
_COMPLEX_OF = {"f32": "c64", "f64": "c128"}
_REAL_OF = {"c64": "f32", "c128": "f64"}
_PARALLEL_SIZE = 1 << 16  # batched transforms of at least this many elements use all cores


def _fft_type(op, fft_type):
    t = str(fft_type).upper()
    if t not in _TYPES:
        raise SpecError(op, "I2", f"fft_type must be one of {', '.join(_TYPES)}, got {fft_type!r}")
    return t


@primitive("fft")
def fft(operand, fft_type, fft_length):
    """stablehlo.fft: the DFT of ``operand`` over its last ``len(fft_length)`` dims
    (1 to 3, C3); the leading dims are batch dims.

    * ``"FFT"``: complex -> complex, unnormalised forward transform.
    * ``"IFFT"``: complex -> complex inverse, normalised by 1/N (N = prod(fft_length)).
    * ``"RFFT"``: f32/f64 -> complex<f32>/complex<f64> forward transform; the last dim
      shrinks to ``fft_length[-1] // 2 + 1`` (the rest is Hermitian-redundant; C5).
    * ``"IRFFT"``: complex -> real inverse of RFFT; the last dim grows to
      ``fft_length[-1]``. The imaginary parts of the DC bin (and of the Nyquist bin for
      even lengths) cannot come from a real signal and are ignored.

    Types pair f32 <-> complex<f32> and f64 <-> complex<f64> (C2); the real side's
    trailing dims equal ``fft_length`` (C4), and the complex side's last dim is
    ``fft_length[-1] // 2 + 1`` for RFFT/IRFFT (C5). For FFT/IFFT the spec's C4/C5 say
    nothing about fft_length (the result keeps the operand's shape); xops requires it to
    equal the trailing dims there too (label C4): a transform length that differs from
    the data it transforms has no meaning in the spec.

    >>> xo.fft(xo.tensor([1, 0, 0, 0], "c64"), "FFT", [4])   # [1, 1, 1, 1] (spec example)
    xo.tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], c64[4])
    """
    op = "fft"
    (x,) = operands(op, operand, names=["operand"])
    t = _fft_type(op, fft_type)
    lengths = _shape_attr(op, "I3", "fft_length", fft_length)
    check(
        1 <= len(lengths) <= 3,
        op,
        "C3",
        lambda: f"fft_length must have 1 to 3 entries, got {lengths}",
    )
    keep(op, fft_type=t, fft_length=lengths)
    L = len(lengths)
    check(
        L <= x.ndim,
        op,
        "C1",
        lambda: f"size(fft_length)={L} must be <= rank(operand), got {tstr(x)}",
    )
    name = x._dtype.name
    if t == "RFFT":
        check(
            name in _COMPLEX_OF,
            op,
            "C2",
            lambda: (
                f"RFFT needs an f32 or f64 operand (complex<f32>/complex<f64> result), "
                f"got {tstr(x)}"
            ),
        )
        out_dt = as_dtype(_COMPLEX_OF[name])
    else:
        check(
            name in _REAL_OF,
            op,
            "C2",
            lambda: f"{t} needs a complex<f32> or complex<f64> operand, got {tstr(x)}",
        )
        out_dt = as_dtype(_REAL_OF[name]) if t == "IRFFT" else x._dtype
    trailing = list(x.shape[x.ndim - L :])
    if t == "IRFFT":
        check(
            trailing[:-1] == lengths[:-1],
            op,
            "C4",
            lambda: (
                f"the result's trailing dims must equal fft_length={lengths}: operand "
                f"{tstr(x)} has {trailing[:-1]} before its last dim"
            ),
        )
        want = 0 if lengths[-1] == 0 else lengths[-1] // 2 + 1
        check(
            trailing[-1] == want,
            op,
            "C5",
            lambda: (
                f"IRFFT with fft_length[-1]={lengths[-1]} needs the operand's last dim "
                f"to be {want}, got {tstr(x)}"
            ),
        )
        out_shape = x.shape[:-1] + (lengths[-1],)
    else:
        check(
            trailing == lengths,
            op,
            "C4",
            lambda: f"the operand's trailing dims must equal fft_length={lengths}, got {tstr(x)}",
        )
        out_shape = x.shape
        if t == "RFFT" and lengths[-1] != 0:
            out_shape = x.shape[:-1] + (lengths[-1] // 2 + 1,)
    return _wrap(_fft_impl(x._value, t, lengths, out_shape, out_dt), out_dt)


def _fft_impl(v, t, lengths, out_shape, out_dt):
    if 0 in v.shape or 0 in out_shape:  # pocketfft rejects empty transforms
        return np.zeros(out_shape, out_dt.np)
    import scipy.fft as sfft

    axes = tuple(range(v.ndim - len(lengths), v.ndim))
    workers = -1 if v.size >= _PARALLEL_SIZE and v.size > int(np.prod(lengths)) else None
    fn = {"FFT": sfft.fftn, "IFFT": sfft.ifftn, "RFFT": sfft.rfftn, "IRFFT": sfft.irfftn}[t]
    out = fn(v, s=lengths, axes=axes, workers=workers)
    return np.ascontiguousarray(out, dtype=out_dt.np).reshape(out_shape)


# ---------------------------------------------------------------------------------------
# Gradient (JAX's convention for complex cotangents, as every xops rule)
# ---------------------------------------------------------------------------------------


def _conj(t):
    from .elementwise import complex, imag, negate, real

    return complex(real(t), negate(imag(t)))


def _hermitian_weights(t, lengths, dtype):
    """The RFFT bin weights along the last dim, broadcast to t's shape: 1 for the DC
    bin (and the Nyquist bin of an even length), 2 for the bins that stand for a
    conjugate pair."""
    n, m = lengths[-1], t.shape[-1]
    w = np.full(m, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return broadcast_in_dim(constant(w.astype(as_dtype(dtype).np)), [t.ndim - 1], t.shape)


@fft.defvjp
def _fft_vjp(g, out, operand, fft_type, fft_length):
    from .elementwise import multiply, real

    t, lengths = fft_type, fft_length  # (kept parsed by the op)
    if t in ("FFT", "IFFT"):  # the DFT matrix is symmetric: each is its own transpose
        return (fft(g, t, lengths),)
    if t == "RFFT":  # transpose of "FFT, keep the first n//2+1 bins", on a real input
        r = g.ndim
        high = [0] * (r - 1) + [lengths[-1] - g.shape[-1]]
        full = pad(g, 0, [0] * r, high, [0] * r)
        return (real(fft(full, "FFT", lengths)),)
    # IRFFT: the RFFT of the cotangent, Hermitian bin weights, 1/N, conjugated
    y = fft(g, "RFFT", lengths)
    w = _hermitian_weights(y, lengths, y.dtype)
    return (_conj(multiply(multiply(y, w), 1.0 / float(np.prod(lengths)))),)
