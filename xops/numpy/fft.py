"""``xops.numpy.fft``: the array API standard's FFT extension (2024.12), on the spec's
``fft`` op (FFT, IFFT, RFFT, IRFFT over the 1 to 3 trailing dims): the transformed axes
are moved to the end, padded or trimmed to the requested lengths, transformed in groups
of at most three and moved back, so every function is differentiable."""

import numpy as np

from ..errors import SpecError
from ..ops import elementwise as E
from ..ops import fft as F
from ..ops import movement as M
from ..ops._core import tstr
from . import _dtypes as D
from ._base import array, axis1, from_numpy, to
from ._manipulation import moveaxis, roll

_NORMS = ("backward", "ortho", "forward")


def _complex(x, op):
    x = array(x, op)
    if x._dtype.kind != "complex":
        x = to(
            x, D.complex_of(D.float_of(x._dtype)) if x._dtype.kind == "float" else D.default_complex
        )
    return x


def _real(x, op):
    x = array(x, op)
    if x._dtype.kind == "complex":
        raise SpecError(op, "", f"needs a real array, got {tstr(x)}")
    return to(x, D.float_of(x._dtype))


def _resize(x, ax, n):
    """Trim or zero-pad axis ``ax`` to length ``n``."""
    m = x.shape[ax]
    if n == m:
        return x
    if n < m:
        limit = list(x.shape)
        limit[ax] = n
        return M.slice(x, [0] * x.ndim, limit)
    hi = [0] * x.ndim
    hi[ax] = n - m
    return M.pad(x, 0, [0] * x.ndim, hi, [0] * x.ndim)


def _scale(x, n, norm, inverse, op):
    if norm not in _NORMS:
        raise SpecError(op, "", f"norm must be one of {_NORMS}, got {norm!r}")
    # the spec's IFFT/IRFFT already divide by n ("backward")
    if norm == "backward":
        f = 1.0
    elif norm == "ortho":
        f = float(np.sqrt(n)) if inverse else 1.0 / float(np.sqrt(n))
    else:
        f = float(n) if inverse else 1.0 / n
    return x if f == 1.0 or n == 0 else E.multiply(x, f)


def _axes_lengths(x, s, axes, op, last_default=None):
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    axes = [axis1(op, a, x.ndim) for a in axes]
    if len(set(axes)) != len(axes):
        raise SpecError(op, "", f"repeated axes {axes}")
    if s is None:
        s = [x.shape[a] for a in axes]
        if last_default is not None and axes:
            s[-1] = last_default(x.shape[axes[-1]])
    s = [int(v) for v in s]
    if len(s) != len(axes):
        raise SpecError(op, "", f"s and axes must have as many entries, got {s} and {axes}")
    for i, a in enumerate(axes):  # -1: the input's length (the last one of an irfft: 2(m-1))
        if s[i] == -1:
            last = last_default is not None and i == len(axes) - 1
            s[i] = last_default(x.shape[a]) if last else x.shape[a]
    if len(s) != len(axes):
        raise SpecError(op, "", f"s and axes must have as many entries, got {s} and {axes}")
    if any(v < 1 for v in s):
        raise SpecError(op, "", f"transform lengths must be >= 1, got {s}")
    return axes, s


def _c2c(x, axes, lengths, kind):
    """FFT or IFFT over ``axes`` (to the given lengths), groups of three trailing dims."""
    for start in range(0, len(axes), 3):
        ax, ln = axes[start : start + 3], lengths[start : start + 3]
        for a, n in zip(ax, ln):
            x = _resize(x, a, n)
        k = len(ax)
        dst = tuple(range(x.ndim - k, x.ndim))
        y = moveaxis(x, tuple(ax), dst)
        y = F.fft(y, kind, list(ln))
        x = moveaxis(y, dst, tuple(ax))
    return x


def _prod(s):
    return int(np.prod(s)) if s else 1


def fft(x, /, *, n=None, axis=-1, norm="backward"):
    x = _complex(x, "fft")
    axes, s = _axes_lengths(x, None if n is None else [n], [axis], "fft")
    return _scale(_c2c(x, axes, s, "FFT"), _prod(s), norm, False, "fft")


def ifft(x, /, *, n=None, axis=-1, norm="backward"):
    x = _complex(x, "ifft")
    axes, s = _axes_lengths(x, None if n is None else [n], [axis], "ifft")
    return _scale(_c2c(x, axes, s, "IFFT"), _prod(s), norm, True, "ifft")


def fftn(x, /, *, s=None, axes=None, norm="backward"):
    x = _complex(x, "fftn")
    axes, s = _axes_lengths(x, s, axes, "fftn")
    return _scale(_c2c(x, axes, s, "FFT"), _prod(s), norm, False, "fftn")


def ifftn(x, /, *, s=None, axes=None, norm="backward"):
    x = _complex(x, "ifftn")
    axes, s = _axes_lengths(x, s, axes, "ifftn")
    return _scale(_c2c(x, axes, s, "IFFT"), _prod(s), norm, True, "ifftn")


def _rfft_last(x, ax, n):
    x = _resize(x, ax, n)
    y = moveaxis(x, ax, -1)
    return moveaxis(F.fft(y, "RFFT", [n]), -1, ax)


def _irfft_last(x, ax, n):
    m = n // 2 + 1
    x = _resize(x, ax, m)
    y = moveaxis(x, ax, -1)
    return moveaxis(F.fft(y, "IRFFT", [n]), -1, ax)


def rfft(x, /, *, n=None, axis=-1, norm="backward"):
    x = _real(x, "rfft")
    axes, s = _axes_lengths(x, None if n is None else [n], [axis], "rfft")
    return _scale(_rfft_last(x, axes[0], s[0]), s[0], norm, False, "rfft")


def irfft(x, /, *, n=None, axis=-1, norm="backward"):
    x = _complex(x, "irfft")
    axes, s = _axes_lengths(
        x, None if n is None else [n], [axis], "irfft", last_default=lambda m: 2 * (m - 1)
    )
    return _scale(_irfft_last(x, axes[0], s[0]), s[0], norm, True, "irfft")


def rfftn(x, /, *, s=None, axes=None, norm="backward"):
    x = _real(x, "rfftn")
    axes, s = _axes_lengths(x, s, axes, "rfftn")
    y = _rfft_last(x, axes[-1], s[-1])
    y = _c2c(y, axes[:-1], s[:-1], "FFT")
    return _scale(y, _prod(s), norm, False, "rfftn")


def irfftn(x, /, *, s=None, axes=None, norm="backward"):
    x = _complex(x, "irfftn")
    axes, s = _axes_lengths(x, s, axes, "irfftn", last_default=lambda m: 2 * (m - 1))
    y = _c2c(x, axes[:-1], s[:-1], "IFFT")
    y = _irfft_last(y, axes[-1], s[-1])
    return _scale(y, _prod(s), norm, True, "irfftn")


def _conj(x):
    return E.complex(E.real(x), E.negate(E.imag(x)))


def hfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The FFT of a Hermitian-symmetric signal given by its first half (real result)."""
    x = _complex(x, "hfft")
    axes, s = _axes_lengths(
        x, None if n is None else [n], [axis], "hfft", last_default=lambda m: 2 * (m - 1)
    )
    out = _irfft_last(_conj(x), axes[0], s[0])  # = conj-FFT / n
    inv = {"backward": "forward", "forward": "backward", "ortho": "ortho"}.get(norm, norm)
    return _scale(out, s[0], inv, True, "hfft")


def ihfft(x, /, *, n=None, axis=-1, norm="backward"):
    x = _real(x, "ihfft")
    axes, s = _axes_lengths(x, None if n is None else [n], [axis], "ihfft")
    out = _conj(_rfft_last(x, axes[0], s[0]))
    inv = {"backward": "forward", "forward": "backward", "ortho": "ortho"}.get(norm, norm)
    return _scale(out, s[0], inv, False, "ihfft")


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    from ..device import as_device

    as_device(device, "fftfreq")
    dt = D.default_float if dtype is None else D.as_dtype(dtype, "fftfreq")
    return from_numpy(np.fft.fftfreq(n, d), dt)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    from ..device import as_device

    as_device(device, "rfftfreq")
    dt = D.default_float if dtype is None else D.as_dtype(dtype, "rfftfreq")
    return from_numpy(np.fft.rfftfreq(n, d), dt)


def _shift(x, axes, op, sign):
    x = array(x, op)
    axes = (
        tuple(range(x.ndim))
        if axes is None
        else ((axes,) if isinstance(axes, int) else tuple(axes))
    )
    shifts = tuple(sign * (x.shape[axis1(op, a, x.ndim)] // 2) for a in axes)
    return roll(x, shifts, axis=axes) if axes else x


def fftshift(x, /, *, axes=None):
    return _shift(x, axes, "fftshift", 1)


def ifftshift(x, /, *, axes=None):
    return _shift(x, axes, "ifftshift", -1)


__all__ = [
    "fft",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfftn",
    "rfft",
    "rfftfreq",
    "rfftn",
]
